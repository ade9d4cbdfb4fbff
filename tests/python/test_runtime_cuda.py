"""The seven collectives on real GPUs (single process, one GPU per rank):
both regimes, 16 B to 1 GiB, 100 repeated calls, CUDA-graph capture and
replay, and a planted missing notify that times out. Skipped without two GPUs
and a CUDA build; run on the GPU machine with `pytest -m gpu`."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from purlin import plan as P
from purlin.dialects import atom
from purlin.plan_builder import build_plan
from purlin.sim.atom_level import atom_passes
from purlin.sim.collectives import COLLECTIVES, Case, counts_for
from purlin.sim.dtypes import compare, numpy_dtype
from purlin.sim.ir import entry_function, lower

runtime = pytest.importorskip("purlin.runtime")
torch = pytest.importorskip("torch")

WORLD = 2
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        runtime.default_backend() != "cuda" or torch.cuda.device_count() < WORLD,
        reason=f"needs the CUDA backend and {WORLD} GPUs",
    ),
]

REGIMES = {
    "latency": "regime=latency",
    "throughput": "regime=throughput",
    "throughput-small-chunks": "regime=throughput chunk-bytes=4096 slots=2",
    "composed": "regime=throughput strategy=composed",
}


def regimes(name: str) -> list[str]:
    base = ["latency", "throughput", "throughput-small-chunks"]
    return base + (["composed"] if name == "all_reduce" else [])


def make_case(name: str, per_rank_bytes: int, dtype: str = "bf16") -> Case:
    info = COLLECTIVES[name]
    op = "sum" if info.reduces else None
    elems = max(per_rank_bytes // 2 if dtype in ("bf16", "f16") else per_rank_bytes // 4, 1)
    if info.variable:
        return Case(name, WORLD, dtype, op, counts=counts_for(name, WORLD, elems, seed=1))
    count = elems // WORLD if name in ("reduce_scatter", "all_to_all") else elems
    return Case(name, WORLD, dtype, op, max(count, 1))


def lowered(case: Case, lowering: str):
    func = entry_function(lower(case.build_module(), atom_passes({"arch": "sm_90", "lowering": lowering})))
    (kernel,) = [op for op in func.body.ops if isinstance(op, atom.KernelOp)]
    return build_plan(kernel)


def large_args(case: Case) -> list[list[np.ndarray]]:
    """Inputs whose sums are exact in bf16, tiled from a short pattern (fast at 1 GiB)."""
    dtype = numpy_dtype(case.dtype)
    n_in, n_out = case.buffer_sizes()
    inputs = []
    for r in range(WORLD):
        pattern = ((np.arange(16) * 7 + r * 3) % 16 - 8).astype(np.float32) * 0.5
        inputs.append(np.resize(pattern.astype(dtype), n_in))
    outputs = [np.full(n_out, np.nan, dtype) for _ in range(WORLD)]
    return [inputs, outputs]


def run_case(case: Case, lowering: str, calls: int = 1, large: bool = False) -> None:
    plan = lowered(case, lowering)
    args = large_args(case) if large else case.make_args(seed=7)
    expected = case.expected(args)
    comm = runtime.Communicator(plan, "cuda", timeout_s=20.0, name=case.collective)
    ins = [runtime.to_device(a, r) for r, a in enumerate(args[0])]
    outs = [runtime.to_device(a, r) for r, a in enumerate(args[1])]
    for _ in range(calls):
        comm.run(ins, outs)
    comm.synchronize()
    got = [runtime.to_host(o, args[1][0].dtype) for o in outs]
    mismatch = compare(got, expected, case.dtype, case.op, case.contributions, 8.0, "%out")
    assert mismatch is None, f"{case.collective} {lowering}: {mismatch}"
    assert comm.epoch(0) == comm.epoch(1) == calls * plan.advance


SIZES = [16, 4096, 1 << 20, 64 << 20]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s}B")
@pytest.mark.parametrize(
    "name,regime", [(n, g) for n in COLLECTIVES for g in regimes(n)], ids=lambda v: str(v)
)
def test_collective_matches_reference(name, regime, size):
    if regime == "latency" and size > 1 << 20:
        pytest.skip("packets are for small payloads")
    run_case(make_case(name, size), REGIMES[regime], large=size >= 1 << 20)


@pytest.mark.parametrize("name", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"])
def test_one_gibibyte(name):
    run_case(make_case(name, 1 << 30), REGIMES["throughput"], large=True)


@pytest.mark.parametrize("name,regime", [("all_reduce", "latency"), ("all_reduce", "composed"),
                                         ("all_gather_v", "throughput-small-chunks"),
                                         ("all_to_all", "latency")])
def test_hundred_repeated_calls(name, regime):
    run_case(make_case(name, 8192), REGIMES[regime], calls=100)


@pytest.mark.parametrize("regime", ["latency", "throughput-small-chunks", "composed"])
def test_cuda_graph_capture_and_replay(regime):
    case = make_case("all_reduce", 1 << 16)
    plan = lowered(case, REGIMES[regime])
    args = case.make_args(seed=3)
    expected = case.expected(args)
    comm = runtime.Communicator(plan, "cuda", timeout_s=20.0, name="all_reduce")
    ins = [runtime.to_device(a, r) for r, a in enumerate(args[0])]
    outs = [runtime.to_device(a, r) for r, a in enumerate(args[1])]
    streams = [torch.cuda.Stream(device=r) for r in range(WORLD)]
    graphs = [torch.cuda.CUDAGraph() for _ in range(WORLD)]
    with contextlib.ExitStack() as stack:
        for s in streams:
            stack.enter_context(torch.cuda.stream(s))
        for r in range(WORLD):
            with torch.cuda.device(r):
                graphs[r].capture_begin(capture_error_mode="relaxed")
        comm.run(ins, outs)
        for r in range(WORLD):
            with torch.cuda.device(r):
                graphs[r].capture_end()
    replays = 50
    for _ in range(replays):
        for g in graphs:
            g.replay()
    comm.synchronize()
    got = [runtime.to_host(o, args[1][0].dtype) for o in outs]
    assert compare(got, expected, case.dtype, case.op, case.contributions, 8.0, "%out") is None
    # Epochs live on the device: every replay advanced them.
    assert comm.epoch(0) == comm.epoch(1) == replays * plan.advance


def test_missing_notify_times_out_naming_rank_and_epoch():
    case = make_case("all_gather", 4096)
    plan = lowered(case, REGIMES["throughput"])
    # Rank 0's producer never signals: rank 1's consumer waits forever.
    plan.programs[0][0] = [i for i in plan.programs[0][0] if i.op != P.Op.SIGNAL]
    comm = runtime.Communicator(plan, "cuda", timeout_s=0.5, name="all_gather")
    args = case.make_args(seed=0)
    ins = [runtime.to_device(a, r) for r, a in enumerate(args[0])]
    outs = [runtime.to_device(a, r) for r, a in enumerate(args[1])]
    comm.run(ins, outs)
    with pytest.raises(runtime.CollectiveTimeout, match=r"all_gather: rank 1 .* timed out .*\(epoch 0\)"):
        comm.synchronize()


def test_plan_for_another_generation_is_refused():
    case = make_case("all_gather", 4096)
    func = entry_function(lower(case.build_module(), atom_passes({"arch": "sm_100"})))
    (kernel,) = [op for op in func.body.ops if isinstance(op, atom.KernelOp)]
    with pytest.raises(Exception, match="sm_100|generation|compute capability"):
        runtime.Communicator(build_plan(kernel), "cuda", name="all_gather")


def test_arrays_on_the_wrong_device_are_refused():
    case = make_case("all_gather", 4096)
    comm = runtime.Communicator(lowered(case, REGIMES["throughput"]), "cuda", name="all_gather")
    args = case.make_args(seed=0)
    ins = [runtime.to_device(a, 0) for a in args[0]]
    outs = [runtime.to_device(a, r) for r, a in enumerate(args[1])]
    with pytest.raises(ValueError, match="rank 1 runs on cuda:1"):
        comm.run(ins, outs)


# Byte offsets past 16-byte alignment at which the V collectives' second
# slices start (fp8 also at odd bytes): copies and reductions peel a head,
# then shift sources into the destination's alignment.
MISALIGNED = {"bf16": (2, 6, 10, 14), "f32": (4, 8, 12), "fp8e4m3": (1, 6, 11, 14)}


def misaligned_case(name: str, dtype: str, op: str | None, offset: int) -> Case:
    """A V collective of a few MiB whose second slices start `offset` bytes past alignment."""
    elem = numpy_dtype(dtype).itemsize
    base, k = (2 << 20) // elem, offset // elem
    if COLLECTIVES[name].matrix:
        # Sender s's block for rank 1 starts at counts[s][0]; receiver d's
        # block from rank 1 at counts[0][d]: unlike offsets on both sides.
        counts = ((base + k, base + 3 * k + 1), (base + 5 * k, base + 1))
    else:
        counts = (base + k, base - k + 3)
    return Case(name, WORLD, dtype, op, counts=counts)


@pytest.mark.parametrize(
    "name,op",
    [("all_gather_v", None), ("reduce_scatter_v", "sum"), ("reduce_scatter_v", "max"), ("all_to_all_v", None)],
    ids=lambda v: str(v),
)
@pytest.mark.parametrize(
    "dtype,offset", [(d, o) for d, offsets in MISALIGNED.items() for o in offsets], ids=lambda v: str(v)
)
def test_misaligned_slices_match_reference_exactly(name, op, dtype, offset):
    case = misaligned_case(name, dtype, op, offset)
    plan = lowered(case, REGIMES["throughput"])
    # Sums of these inputs are exact in f32 and in the dtype, so every result is exact.
    args = case.make_args(seed=11)
    expected = case.expected(args)
    comm = runtime.Communicator(plan, "cuda", timeout_s=20.0, name=case.collective)
    ins = [runtime.to_device(a, r) for r, a in enumerate(args[0])]
    outs = [runtime.to_device(a, r) for r, a in enumerate(args[1])]
    comm.run(ins, outs)
    comm.synchronize()
    got = [runtime.to_host(o, args[1][0].dtype) for o in outs]
    # One contribution: no tolerance (copies compare bits, reductions values).
    mismatch = compare(got, expected, case.dtype, case.op, 1, 1.0, "%out")
    assert mismatch is None, f"{case.collective} {dtype} at byte offset {offset}: {mismatch}"
