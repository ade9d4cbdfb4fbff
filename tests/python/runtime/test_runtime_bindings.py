"""One communicator running several bindings of a V collective's counts
(compile_device_counts(counts_on_host=True), bind_collective per size,
Communicator.rebind): each binding's tables are uploaded once, calls switch
between bindings of one layout (a binding of another is refused), every call matches the reference, a CUDA graph captured under
one binding replays it after the communicator moved to another, and epochs
advance alike. Bindings of another kernel, and rebinding a specialised
kernel, are refused by name. Skipped without a GPU and a CUDA build."""

from __future__ import annotations

import numpy as np
import pytest
from test_runtime_cuda import GPUS, captured, on_devices

from purlin import runtime
from purlin.compile import compile_device_counts, placement_options
from purlin.runtime.backend import binding_layout, blocks_per_sm
from purlin.testing.cases import Case, counts_for
from purlin.testing.data import compare

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(GPUS < 1, reason="needs the CUDA backend and a GPU")]

CAPACITY = 1 << 16


def op_of(collective: str) -> str | None:
    return "sum" if collective == "reduce_scatter_v" else None


def lowered(collective: str, world: int):
    out = CAPACITY if collective == "reduce_scatter_v" else CAPACITY * world
    return compile_device_counts(collective, world, "bf16", op_of(collective), input_elems=CAPACITY,
                                 output_elems=out, arch="sm_90", counts_on_host=True,
                                 lowering=placement_options("regime=throughput", True, world,
                                                            runtime._runtime.cuda_device_sms(0)))


def one_layout(dc, collective: str, world: int, totals=(123, 5000, 40000), n: int = 3) -> list[tuple[list, object]]:
    """`n` counts of different shapes whose bindings one communicator runs
    (backend.binding_layout and the tables' words alike), from the layout most
    of the candidates share: counts of uneven shapes lay out the arrival
    counters otherwise, and such a binding is refused."""
    groups: dict[tuple, list] = {}
    for seed in range(6):
        for total in totals:
            counts = counts_for(collective, world, total, seed=seed)
            bound = dc.bind_collective(counts)
            groups.setdefault((binding_layout(bound.cuda), bound.cuda.tables.words), []).append((counts, bound))
    best = max(groups.values(), key=len)
    assert len(best) >= n, f"{collective} world {world}: no layout holds {n} of the candidate counts"
    return best[:n]


def buffers(case: Case, plan, seed: int, devices: list[int]) -> tuple[list, list, list]:
    """The case's arguments, and its inputs and outputs on the GPUs at the plan's extents."""
    args = case.make_args(seed=seed)
    ins = [np.concatenate([a, np.zeros(max(0, plan.input_extent(r) - a.size), a.dtype)])
           for r, a in enumerate(args[0])]
    outs = [np.concatenate([o, np.full(max(0, plan.output_extent(r) - o.size), np.nan, o.dtype)])
            for r, o in enumerate(args[1])]
    return args, on_devices(ins, devices), on_devices(outs, devices)


def check(case: Case, args, outs: list, what: str) -> None:
    got = [runtime.to_host(o, args[1][0].dtype)[:a.size] for o, a in zip(outs, args[1])]
    mismatch = compare(got, case.expected(args), case.dtype, case.op, case.contributions, 8.0, "%out")
    assert mismatch is None, f"{case.collective} {what}: {mismatch}"


@pytest.mark.parametrize("world", [2, 3, 4])
@pytest.mark.parametrize("collective", ["all_gather_v", "reduce_scatter_v", "all_to_all_v"])
def test_calls_switch_between_bindings(collective, world):
    dc = lowered(collective, world)
    devices = [0] * world
    counts, bound = zip(*one_layout(dc, collective, world))
    comm = runtime.Communicator(bound[0].plan, "cuda", devices=devices, kernel=bound[0].cuda, name=collective,
                                timeout_s=20.0)
    calls = 0
    for k in (0, 1, 2, 1, 0):
        comm.rebind(bound[k].plan, bound[k].cuda)
        case = Case(collective, world, "bf16", op_of(collective), counts=counts[k])
        args, ins, outs = buffers(case, bound[k].plan, k, devices)
        for _ in range(2):
            comm.run(ins, outs)
        calls += 2
        comm.synchronize()
        check(case, args, outs, f"binding {k}")
    assert {comm.epoch(r) for r in range(world)} == {calls * bound[0].plan.advance}


def test_a_graph_keeps_its_binding():
    collective, world, devices = "all_gather_v", 2, [0, 0]
    dc = lowered(collective, world)
    # Both ranks send in both (a rank sending nothing in one would be another layout, refused).
    small_counts, large_counts = [300, 200], [9000, 5000]
    small, large = dc.bind_collective(small_counts), dc.bind_collective(large_counts)
    comm = runtime.Communicator(small.plan, "cuda", devices=devices, kernel=small.cuda, name=collective,
                                timeout_s=20.0)
    small_case = Case(collective, world, "bf16", None, counts=small_counts)
    args, ins, outs = buffers(small_case, small.plan, 1, devices)
    graph = captured(comm, ins, outs)
    comm.rebind(large.plan, large.cuda)
    large_case = Case(collective, world, "bf16", None, counts=large_counts)
    large_args, large_ins, large_outs = buffers(large_case, large.plan, 2, devices)
    comm.run(large_ins, large_outs)
    for _ in range(3):
        graph.replay()
    comm.synchronize()
    check(small_case, args, outs, "graph of the first binding")
    check(large_case, large_args, large_outs, "second binding")


def test_a_binding_needing_more_shared_memory_is_refused():
    """The runtime refuses a binding whose tables need more shared memory a
    block than the kernel was checked with (what add_binding passes it)."""
    dc = lowered("all_gather_v", 2)
    first = dc.bind_collective([100, 200])
    comm = runtime.Communicator(first.plan, "cuda", devices=[0, 0], kernel=first.cuda, name="ag")
    src = first.cuda.source(blocks_per_sm(first.cuda, [0, 0]))
    checked = src.smem + 8 * first.cuda.tables.words
    tables = [t.tolist() for t in first.cuda.tables.ranks]
    with pytest.raises(ValueError, match=rf"ag: the binding's tables need {checked + 8} bytes of shared memory a "
                                         rf"block, the kernel was checked with {checked}"):
        comm._impl.add_binding(tables, [200, 400], [600, 600], checked + 8)


def test_foreign_and_specialised_bindings_are_refused():
    dc = lowered("all_gather_v", 2)
    first = dc.bind_collective([100, 200])
    comm = runtime.Communicator(first.plan, "cuda", devices=[0, 0], kernel=first.cuda, name="ag")
    other = lowered("all_gather_v", 2).bind_collective([100, 200])
    with pytest.raises(ValueError, match="ag: a binding is the communicator's own kernel with other counts"):
        comm.rebind(other.plan, other.cuda)
    second = dc.bind_collective([50, 60])
    comm.rebind(second.plan, second.cuda)
    with pytest.raises(ValueError, match="ag: the kernel runs several bindings of its counts"):
        comm.specialise()
    fresh = runtime.Communicator(first.plan, "cuda", devices=[0, 0], kernel=first.cuda, name="ag")
    fresh.specialise()
    again = dc.bind_collective([7, 8])
    with pytest.raises(ValueError, match="ag: the kernel has its tables compiled in"):
        fresh.rebind(again.plan, again.cuda)
