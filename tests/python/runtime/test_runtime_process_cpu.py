"""ProcessCommunicator on the CPU backend: one rank per process (forked
processes of a gloo process group), each rank's memory in
POSIX shared memory. The seven collectives against the numpy reference for
several calls in a row, every rank's bits equal where all get one result, a
rank that never calls (its peers time out, and its own late call stops at
once), and ranks built from different plans."""

from __future__ import annotations

import glob
import os
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from collective_cases import SMALL, make_case  # noqa: E402
from process_group import run_group  # noqa: E402

from purlin.coll.builder import COLLECTIVES  # noqa: E402
from purlin.compile import compile_plan  # noqa: E402
from purlin.runtime import CollectiveTimeout, ProcessCommunicator  # noqa: E402
from purlin.testing.data import compare, compare_ranks  # noqa: E402

pytestmark = pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                                reason="torch.distributed with gloo is unavailable")

CALLS = 3


def spawn(world: int, job, *args) -> None:
    # Forked, the workers start with torch and purlin already imported: that import is most of a spawn's time.
    run_group(world, "gloo", job, args, start_method="fork")


def _leaked() -> list[str]:
    """This process's shared memory names still linked."""
    return glob.glob(f"/dev/shm/purlin-{os.getpid()}-*")


def _run_cases(rank: int, jobs, backend) -> None:
    for case, words, tensors in jobs:
        comm = ProcessCommunicator(words, name=case.collective, timeout_s=30.0, backend=backend)
        assert comm.backend == "cpu"
        assert not _leaked(), "names stay linked after every rank has connected"
        for call in range(CALLS):
            args = case.make_args(call)
            expected = case.expected(args)
            own_in, own_out = args[0][rank].copy(), args[1][rank]
            if tensors:
                comm.run(torch.from_numpy(own_in), torch.from_numpy(own_out))
            else:
                comm.run(own_in, own_out)
            where = f"rank {rank} {case} call {call}"
            assert compare([own_out], [expected[rank]], case.dtype, case.op, case.contributions, 8.0,
                           "%out") is None, where
            assert np.array_equal(own_in.view(np.uint8), args[0][rank].view(np.uint8)), f"{where}: input changed"
            outputs: list = [None] * case.world
            dist.all_gather_object(outputs, own_out)
            assert compare_ranks(outputs, expected, "%out") is None, where
        assert comm.epoch() == CALLS * comm.plan.advance
        comm.close()


def cases(world: int, lowering: str = "", names=tuple(COLLECTIVES), tensors=("all_reduce",)):
    """(case, binary plan, whether it runs on torch tensors) per collective: f32 on tensors
    (torch.from_numpy has no bf16), bf16 otherwise."""
    out = []
    for name in names:
        dtype = "f32" if name in tensors else "bf16"
        case = make_case(name, world, dtype, count=37, seed=world)
        plan = compile_plan(name, world, dtype, case.op, case.count, counts=case.counts, lowering=lowering)
        out.append((case, plan.encode(), name in tensors))
    return out


# The throughput regime in small chunks goes round the slots several times a call.
@pytest.mark.parametrize("world, lowering", [(2, ""), (3, f"regime=throughput {SMALL}")],
                         ids=["world2", "world3-slots"])
def test_collectives_match_reference(world, lowering):
    spawn(world, _run_cases, cases(world, lowering), None)


def test_world_four_by_explicit_backend():
    spawn(4, _run_cases, cases(4, f"regime=throughput {SMALL}", names=("all_reduce", "all_to_all_v")), "cpu")


def _failures(rank: int, plans) -> None:
    # Rank 2 brings another plan: every rank refuses, none waits for the others.
    mixed = plans[1] if rank == 2 else plans[0]
    with pytest.raises(ValueError, match="plan differs from that of rank.s. "):
        ProcessCommunicator(mixed, name="all_reduce", timeout_s=0.5)
    assert not _leaked()
    # Rank 2 never calls. Rank 0 times out first; rank 1, which would wait 60 s, stops as soon as
    # rank 0 flags its timeout.
    comm = ProcessCommunicator(plans[0], name="all_reduce", timeout_s=0.5 if rank == 0 else 60.0)
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    if rank == 0:
        # The timeout names what was awaited: a signal or packet, its value and the epoch.
        with pytest.raises(CollectiveTimeout, match=r"all_reduce: rank 0 role \d+ .* timed out after 0.5 s: .* "
                           r"awaited >= \d+ \(epoch 0\)") as e:
            comm.run(x, y)
        assert isinstance(e.value, TimeoutError)
    elif rank == 1:
        start = time.monotonic()
        # Stopped while waiting ("rank 1 role .. stopped: ..."), or at the start where it came late.
        with pytest.raises(CollectiveTimeout, match=r"all_reduce: .*rank 0's call timed out"):
            comm.run(x, y)
        assert time.monotonic() - start < 30
    dist.barrier()
    if rank == 2:
        with pytest.raises(CollectiveTimeout, match=r"all_reduce: rank \d's call timed out before this call"):
            comm.run(x, y)
    comm.close()
    with pytest.raises(RuntimeError, match="all_reduce: the communicator is closed"):
        comm.run(x, y)


def test_timeout_and_plan_mismatch():
    plans = [compile_plan("all_reduce", 3, "f32", "sum", n).encode() for n in (64, 128)]
    spawn(3, _failures, plans)


# -- one rank in this process: the checks before any call ---------------------------


ONE = compile_plan("all_reduce", 1, "f32", "sum", 8)


def test_a_rank_alone_runs_and_counts_epochs(group_of_one):
    comm = ProcessCommunicator(ONE, name="ar")
    x, y = np.arange(8, dtype=np.float32), np.zeros(10, np.float32)
    comm.run(x, y)
    comm.run(torch.from_numpy(x), torch.from_numpy(y))
    assert np.array_equal(y[:8], x) and comm.epoch() == 2 * ONE.advance
    comm.close()


@pytest.mark.parametrize("input,error,match", [
    (np.zeros(8), TypeError, r"ar: input of rank 0 has dtype float64, the plan is f32 \(float32\)"),
    (np.zeros(16, np.float32)[::2], ValueError, "input of rank 0 is not C-contiguous"),
    (np.zeros(7, np.float32), ValueError, "input of rank 0 has 7 elements, the plan needs at least 8 for rank 0"),
    (torch.zeros(8, dtype=torch.float64), TypeError, r"has dtype torch.float64, the plan is f32 \(torch.float32\)"),
    (torch.zeros(8, 2)[:, 0], ValueError, "input of rank 0 is not contiguous"),
    ([0.0] * 8, TypeError, "input of rank 0 is a list, the cpu backend takes numpy arrays or CPU torch tensors"),
], ids=["dtype", "strided", "small", "tensor-dtype", "tensor-strided", "list"])
def test_run_refuses_bad_buffers(group_of_one, input, error, match):
    comm = ProcessCommunicator(ONE, name="ar")
    with pytest.raises(error, match=match):
        comm.run(input, np.zeros(8, np.float32))
    comm.close()


def test_run_refuses_a_read_only_output_and_a_stream(group_of_one):
    comm = ProcessCommunicator(ONE, name="ar")
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    y.flags.writeable = False
    with pytest.raises(ValueError, match="ar: output of rank 0 is read-only"):
        comm.run(x, y)
    with pytest.raises(ValueError, match="the cpu backend runs on no stream"):
        comm.run(x, x.copy(), stream=0)
    comm.close()


def test_run_tensors_checks_each_overlap_and_keeps_refusing_a_wrong_one(group_of_one):
    """An eager caller's overlap is checked in full once per offset: one the
    protocol allows runs every time, a wrong one raises every time, also
    after calls whose buffers were apart."""
    from purlin.runtime.aliasing import AliasingError

    comm = ProcessCommunicator(ONE, name="ar")
    buf = torch.arange(16, dtype=torch.float32)
    comm.run_tensors(buf[:8], torch.zeros(8))
    for _ in range(2):
        with pytest.raises(AliasingError, match="rank 0's input and output overlap"):
            comm.run_tensors(buf[:8], buf[4:12])
        # One rank's reduction writes only what it reads itself: right in place.
        comm.run_tensors(buf[:8], buf[:8])
        assert torch.equal(buf, torch.arange(16, dtype=torch.float32))
    comm.close()
    # all_gather into the output whose own slice is the input: that copy is skipped.
    gather = ProcessCommunicator(compile_plan("all_gather", 1, "f32", None, 8), name="ag")
    for _ in range(2):
        gather.run_tensors(buf[:8], buf[:8])
        assert torch.equal(buf, torch.arange(16, dtype=torch.float32))
    gather.close()


def test_unknown_backend(group_of_one):
    with pytest.raises(ValueError, match="ar: unknown backend 'tpu', expected one of cpu, cuda"):
        ProcessCommunicator(ONE, name="ar", backend="tpu")


def test_rebind_runs_another_binding_and_refuses_another_layout(group_of_one):
    from purlin.compile import compile_device_counts

    kernel = compile_device_counts("all_gather_v", 1, "f32", input_elems=64, output_elems=64)
    comm = ProcessCommunicator(kernel.bind([32]), name="agv")
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    comm.run(x, y)
    assert np.array_equal(y[:32], x[:32]) and not y[32:].any()
    comm.rebind(kernel.bind([48]))
    comm.run(x, y)
    assert np.array_equal(y[:48], x[:48]) and not y[48:].any()
    with pytest.raises(ValueError, match="agv: the new plan's memory is not laid out as the current one's"):
        comm.rebind(compile_plan("all_gather", 1, "f32", None, 48, lowering="regime=throughput chunk-bytes=64"))
    comm.run(x, y)  # the refused plan left the bound one in place
    comm.close()
    with pytest.raises(RuntimeError, match="agv: the communicator is closed"):
        comm.rebind(kernel.bind([16]))


def test_a_symmetric_plan_takes_buffers_of_the_shared_heap(group_of_one):
    # Its peers read and write the buffers in place: they must be where they can map them.
    plan = compile_plan("all_gather", 1, "f32", None, 1 << 10, symmetric=True)
    assert plan.symmetric
    comm = ProcessCommunicator(plan, name="ag")
    x, y = comm.alloc(1 << 10), comm.alloc(1 << 10)
    x[:] = np.arange(1 << 10)
    with pytest.raises(ValueError, match="ag: rank 0's input is not in its shared heap: the plan is symmetric"):
        comm.run(x.copy(), y)
    comm.run(x, y)
    assert np.array_equal(y, x)
    with pytest.raises(ValueError, match="ag: rank 0's shared heap of 8192 bytes has 0 left, 4 asked for"):
        comm.alloc(1)
    comm.close()


def _run_symmetric(rank: int, jobs) -> None:
    for case, words in jobs:
        comm = ProcessCommunicator(words, name=case.collective, timeout_s=30.0)
        n_in, n_out = case.buffer_sizes()
        own_in, own_out = comm.alloc(n_in), comm.alloc(n_out)
        for call in range(CALLS):
            args = case.make_args(call)
            expected = case.expected(args)
            own_in[:], own_out[:] = args[0][rank], args[1][rank]
            comm.run(own_in, own_out)
            assert compare([own_out], [expected[rank]], case.dtype, case.op, case.contributions, 8.0,
                           "%out") is None, f"rank {rank} {case} call {call}"
            assert np.array_equal(own_in.view(np.uint8), args[0][rank].view(np.uint8)), "input changed"
        comm.close()


@pytest.mark.parametrize("lowering", ["regime=throughput symmetric=true",
                                      "regime=throughput symmetric=true chunk-bytes=16"])
def test_symmetric_collectives_in_place_across_processes(lowering):
    # Each rank's buffers in its shared heap; its peers pull from and push into them.
    jobs = []
    for name in COLLECTIVES:
        case = make_case(name, 3, "bf16", count=37, seed=3)
        plan = compile_plan(name, 3, "bf16", case.op, case.count, counts=case.counts, lowering=lowering)
        assert plan.symmetric
        jobs.append((case, plan.encode()))
    spawn(3, _run_symmetric, jobs)
