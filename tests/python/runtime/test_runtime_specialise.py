"""Kernels with the ranks' tables compiled in (Communicator.specialise, and by
default for latency kernels of few ranks):
every collective, worlds 2-4 sharing GPU 0, the latency and a symmetric
throughput lowering, specialised between calls, match the numpy reference
and keep their epochs; a CUDA graph captured before replays after it, and
one captured after replays the specialised kernel. Kernels that cannot be
specialised (copy-engine steps; the cpu backend) are refused by name.
Skipped without a GPU and a CUDA build, but for the refusals on the cpu
backend."""

from __future__ import annotations

import numpy as np
import pytest
from test_runtime_cuda import GPUS, captured, check, communicator, make_case, on_devices

from purlin import runtime
from purlin.coll.builder import COLLECTIVES
from purlin.compile import compile_collective, compile_plan
from purlin.runtime.backend import SPECIALISED_REDUCE_MIN_BYTES, specialise

LOWERINGS = {"latency": "regime=latency", "symmetric": "regime=throughput symmetric=true ranks-per-device={world}"}


@pytest.mark.parametrize("world", [2, 3, 4])
@pytest.mark.parametrize("lowering", list(LOWERINGS))
@pytest.mark.parametrize("name", list(COLLECTIVES))
@pytest.mark.gpu
@pytest.mark.skipif(GPUS < 1, reason="needs the CUDA backend and a GPU")
def test_specialised_kernel_matches_reference(name, lowering, world):
    case = make_case(name, 3000, world)
    c = compile_collective(case.collective, world, case.dtype, case.op, case.count, counts=case.counts, arch="sm_90",
                           lowering=LOWERINGS[lowering].format(world=world))
    devices = [0] * world
    args = case.make_args(seed=9)
    comm = communicator(c, timeout_s=20.0, name=name, devices=devices, specialise=False)
    ins, outs = on_devices(args[0], devices), on_devices(args[1], devices)
    for _ in range(2):
        comm.run(ins, outs)
    comm.specialise()
    for _ in range(3):
        comm.run(ins, outs)
    comm.synchronize()
    check(case, outs, args, f"{lowering} specialised")
    assert {comm.epoch(r) for r in range(world)} == {5 * c.plan.advance}


@pytest.mark.parametrize("world", [2, 3, 4, 5, 6, 7])
@pytest.mark.parametrize("per_rank", [1, 2, 3])
@pytest.mark.parametrize("name", ["reduce_scatter", "all_reduce", "all_to_all"])
@pytest.mark.gpu
@pytest.mark.skipif(GPUS < 1, reason="needs the CUDA backend and a GPU")
def test_specialised_kernel_of_a_few_elements(name, per_rank, world):
    """A packet's data part-filled (1-3 bf16 elements a rank), symmetric as
    purlin-bench lowers ranks sharing a GPU: the specialised kernel equals the
    generic one; a reduction of fewer than 4 bytes a rank is refused (measured
    wrong once, not yet explained)."""
    case = make_case(name, 2 * per_rank * (world if name != "all_reduce" else 1), world)
    c = compile_collective(case.collective, world, case.dtype, case.op, case.count, arch="sm_90",
                           lowering=f"regime=latency symmetric=true ranks-per-device={world}")
    devices = [0] * world
    args = case.make_args(seed=5)
    comm = communicator(c, timeout_s=20.0, name=name, devices=devices, specialise=False)
    ins, outs = on_devices(args[0], devices), on_devices(args[1], devices)
    comm.run(ins, outs)
    comm.synchronize()
    check(case, outs, args, "generic")
    if case.op is not None and per_rank * 2 < SPECIALISED_REDUCE_MIN_BYTES:
        with pytest.raises(ValueError, match="reductions under 4 bytes were measured wrong specialised"):
            comm.specialise()
        return
    comm.specialise()
    for _ in range(3):
        # Fresh outputs each call, so that one the kernel left unwritten shows.
        outs = on_devices([np.full_like(o, np.nan) for o in args[1]], devices)
        comm.run(ins, outs)
        comm.synchronize()
        check(case, outs, args, "specialised")


@pytest.mark.gpu
@pytest.mark.skipif(GPUS < 1, reason="needs the CUDA backend and a GPU")
def test_graphs_captured_before_and_after_specialise_replay():
    case = make_case("all_reduce", 256, 2)
    c = compile_collective("all_reduce", 2, case.dtype, case.op, case.count, arch="sm_90", lowering="regime=latency")
    devices = [0, 0]
    args = case.make_args(seed=4)
    comm = communicator(c, timeout_s=20.0, name="all_reduce", devices=devices, specialise=False)
    ins, outs = on_devices(args[0], devices), on_devices(args[1], devices)
    before = captured(comm, ins, outs)
    comm.specialise()
    after = captured(comm, ins, outs)
    for _ in range(20):
        before.replay()
        after.replay()
    comm.run(ins, outs)
    comm.synchronize()
    check(case, outs, args, "graphs around specialise")
    assert {comm.epoch(r) for r in range(2)} == {41 * c.plan.advance}


@pytest.mark.gpu
@pytest.mark.skipif(GPUS < 1, reason="needs the CUDA backend and a GPU")
def test_the_runtime_takes_a_specialised_kernel_for_each_local_rank():
    case = make_case("all_reduce", 256, 2)
    c = compile_collective("all_reduce", 2, case.dtype, case.op, case.count, arch="sm_90", lowering="regime=latency")
    comm = communicator(c, timeout_s=20.0, name="ar", devices=[0, 0], specialise=False)
    src, cubin = c.cuda.specialised(1, [0])
    with pytest.raises(ValueError, match=r"ar: specialise takes one kernel per local rank \(2\), got 1"):
        comm._impl.specialise([cubin], src.name)
    with pytest.raises(RuntimeError, match="ar: rank 0's specialised kernel: finding kernel nothing"):
        comm._impl.specialise([cubin, cubin], "nothing")
    assert not comm.specialised
    args = case.make_args(seed=2)
    ins, outs = on_devices(args[0], [0, 0]), on_devices(args[1], [0, 0])
    comm.run(ins, outs)
    comm.synchronize()
    check(case, outs, args, "after refused kernels")


@pytest.mark.gpu
@pytest.mark.skipif(GPUS < 1, reason="needs the CUDA backend and a GPU")
def test_copy_engine_kernels_are_not_specialised():
    case = make_case("all_gather", 3000, 2)
    c = compile_collective("all_gather", 2, case.dtype, None, case.count, arch="sm_90",
                           lowering="symmetric=true copy-engine=true ranks-per-device=2")
    comm = communicator(c, timeout_s=20.0, name="all_gather", devices=[0, 0])
    with pytest.raises(ValueError, match=r"all_gather: its kernel cannot be specialised: .*copy-engine steps"):
        comm.specialise()


@pytest.mark.parametrize("world, expected", [(2, True), (4, True), (5, False)])
@pytest.mark.gpu
@pytest.mark.skipif(GPUS < 1, reason="needs the CUDA backend and a GPU")
def test_a_communicator_of_a_latency_kernel_specialises_itself(world, expected):
    """Made with every rank: up to specialise_max_world ranks the tables are compiled in from the
    first call on; asked, never."""
    case = make_case("all_reduce", 4096, world)
    c = compile_collective("all_reduce", world, case.dtype, case.op, case.count, arch="sm_90",
                           symmetric=True, ranks_per_device=world)
    devices = [0] * world
    args = case.make_args(seed=3)
    for ask, want in ((None, expected), (False, False)):
        comm = communicator(c, timeout_s=20.0, name="all_reduce", devices=devices, specialise=ask)
        assert comm.specialised is want
        ins, outs = on_devices(args[0], devices), on_devices(args[1], devices)
        comm.run(ins, outs)
        comm.synchronize()
        check(case, outs, args, f"specialise={ask}")


def test_the_cpu_backend_has_no_kernel_to_specialise():
    comm = runtime.Communicator(compile_plan("all_reduce", 2, "f32", "sum", 16), "cpu", name="ar")
    with pytest.raises(ValueError, match="ar: specialise is the cuda backend's"):
        comm.specialise()


class _Runtime:
    """A stand-in runtime communicator: records the kernel it is told to load."""

    def specialise(self, cubins: list[bytes], name: str) -> None:
        self.loaded = name
        self.cubins = cubins


@pytest.mark.parametrize("ranks", [range(3), [2], [0, 2]])
def test_each_rank_gets_a_kernel_of_its_own_tables(ranks, monkeypatch):
    """One kernel per rank launched, with that rank's tables alone compiled in:
    no kernel carries another rank's body."""
    from purlin.runtime import backend

    bps = 2
    monkeypatch.setattr(backend, "blocks_per_sm", lambda kernel, devices, name: bps)  # no GPU to ask
    c = compile_collective("all_to_all", 3, "bf16", None, 30, arch="sm_90",
                           lowering="regime=latency symmetric=true ranks-per-device=3")
    impl = _Runtime()
    specialise(impl, c.cuda, c.plan, [0] * len(ranks), ranks, "a2a")
    assert impl.cubins == [c.cuda.specialised(bps, [r])[1] for r in ranks]
    assert len(set(impl.cubins)) == len(ranks)
    source = c.cuda.specialised(bps, [ranks[0]])[0]
    assert impl.loaded == source.name
    assert source.text.count("    case ") == 1


@pytest.mark.parametrize("name, world, count", [("reduce_scatter", 5, 1), ("reduce_scatter", 2, 1),
                                                ("all_reduce", 2, 1)])
def test_reductions_under_a_word_are_not_specialised(name, world, count):
    c = compile_collective(name, world, "bf16", "sum", count, arch="sm_90",
                           lowering=f"regime=latency symmetric=true ranks-per-device={world}")
    impl = _Runtime()
    with pytest.raises(ValueError, match=rf"{name}: its kernel is not specialised: it reduces 2 bytes a rank, and "
                                         r"reductions under 4 bytes were measured wrong specialised"):
        specialise(impl, c.cuda, c.plan, [0] * world, range(world), name)
    assert not hasattr(impl, "loaded")


@pytest.mark.parametrize("name, world, count, lowering, expected", [
    ("all_reduce", 2, 8, "", True),  # 16 B: latency
    ("all_gather", 4, 512, "", True),
    ("reduce_scatter", 4, 2, "", True),  # 4 bytes reduced a rank
    ("reduce_scatter", 4, 1, "", False),  # 2 bytes: refused (measured wrong)
    ("all_to_all", 5, 8, "", False),  # beyond specialise_max_world: slower there
    ("all_reduce", 2, 8, "regime=throughput", False),
])
def test_communicators_specialise_latency_kernels_of_few_ranks_by_default(name, world, count, lowering, expected):
    from purlin.conversion.cost_model import THRESHOLDS
    from purlin.runtime.backend import specialises_by_default

    assert THRESHOLDS["sm_90"].specialise_max_world == 4
    c = compile_collective(name, world, "bf16", "sum" if "reduce" in name else None, count, arch="sm_90",
                           lowering=lowering)
    assert specialises_by_default(c.cuda, c.plan) is expected


def test_kernels_bound_on_the_host_keep_their_tables_loaded():
    """A V kernel's bindings change its tables from call to call: never specialised by default."""
    from purlin.compile import compile_device_counts
    from purlin.runtime.backend import specialises_by_default

    dc = compile_device_counts("all_gather_v", 2, "bf16", None, input_elems=64, output_elems=128, arch="sm_90",
                               counts_on_host=True, lowering="regime=latency")
    bound = dc.bind_collective([5, 7])
    assert bound.cuda.kernel.regime.data.value == "latency"
    assert not specialises_by_default(bound.cuda, bound.plan)


def test_the_cpu_backend_takes_no_specialise():
    c = compile_collective("all_reduce", 2, "f32", "sum", 4)
    with pytest.raises(ValueError, match="specialise is the cuda backend's"):
        runtime.Communicator(c.plan, "cpu", specialise=True)
