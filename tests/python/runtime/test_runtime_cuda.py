"""The seven collectives as compiled kernels on real GPUs, single process:
one GPU per rank where there are enough, and several ranks sharing one GPU
(each on its own stream) everywhere. Both regimes, 16 B to 1 GiB, worlds 2
to 8, 100 repeated calls, CUDA-graph capture and replay, and a planted
missing notify that times out. Skipped without a GPU and a CUDA build; run
on the GPU machine with `pytest -m gpu`."""

from __future__ import annotations

import numpy as np
import pytest

from purlin.atom import dialect as atom
from purlin.atom.generations import MAX_THREADS_PER_SM
from purlin.coll.builder import COLLECTIVES
from purlin.compile import Compiled, compile_collective
from purlin.compile.pipeline import entry_function, lower, pipeline_spec
from purlin.conversion.atom_to_plan import build_plan
from purlin.cuda.program import CudaProgram
from purlin.dtypes import numpy_dtype
from purlin.testing.cases import Case, counts_for
from purlin.testing.data import compare

runtime = pytest.importorskip("purlin.runtime")
torch = pytest.importorskip("torch")

GPUS = torch.cuda.device_count() if runtime.default_backend() == "cuda" else 0
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(GPUS < 1, reason="needs the CUDA backend and a GPU"),
]

WORLD = 2
# Where the ranks run: all on GPU 0, and one per GPU where there are two.
PLACEMENTS = {"shared": [0] * WORLD, **({"own": list(range(WORLD))} if GPUS >= WORLD else {})}

# Throughput roles of several ranks sharing a GPU must fit on it together:
# fewer blocks per role than the cost model's.
REGIMES = {
    "latency": "regime=latency",
    "throughput": "regime=throughput blocks=16",
    "throughput-small-chunks": "regime=throughput chunk-bytes=4096 slots=2 blocks=8",
    "composed": "regime=throughput strategy=composed blocks=16",
    # In place between the ranks' buffers, blocks sized for WORLD ranks on one GPU.
    "symmetric": f"regime=throughput symmetric=true ranks-per-device={WORLD}",
    "symmetric-chunked": f"regime=throughput symmetric=true chunk-bytes=4096 ranks-per-device={WORLD}",
    "symmetric-direct": f"regime=throughput symmetric=true strategy=direct ranks-per-device={WORLD}",
    # Copies by the copy engine between one-block signal kernels, on each rank's stream.
    "copy-engine": f"symmetric=true copy-engine=true ranks-per-device={WORLD}",
    "copy-engine-chunked": f"symmetric=true copy-engine=true chunk-bytes=4096 ranks-per-device={WORLD}",
}


def regimes(name: str) -> list[str]:
    base = ["latency", "throughput", "throughput-small-chunks", "symmetric", "symmetric-chunked"]
    if COLLECTIVES[name].reduces:
        return base + (["composed", "symmetric-direct"] if name == "all_reduce" else [])
    return base + ["copy-engine", "copy-engine-chunked"]


def make_case(name: str, per_rank_bytes: int, world: int = WORLD, dtype: str = "bf16") -> Case:
    info = COLLECTIVES[name]
    op = "sum" if info.reduces else None
    elems = max(per_rank_bytes // numpy_dtype(dtype).itemsize, 1)
    if info.variable:
        return Case(name, world, dtype, op, counts=counts_for(name, world, elems, seed=1))
    count = elems // world if name in ("reduce_scatter", "all_to_all") else elems
    return Case(name, world, dtype, op, max(count, 1))


def lowered_kernel(case: Case, lowering: str) -> atom.KernelOp:
    func = entry_function(lower(case.build_module(), pipeline_spec("atom", lowering=lowering, arch="sm_90", verify=False)))
    (kernel,) = [op for op in func.body.ops if isinstance(op, atom.KernelOp)]
    return kernel


def compiled(kernel: atom.KernelOp) -> Compiled:
    """The plan of `kernel` and its CUDA program."""
    return Compiled(build_plan(kernel), CudaProgram(kernel))


def lowered(case: Case, lowering: str) -> Compiled:
    """The plan of `case` in `lowering` and its CUDA program."""
    return compiled(lowered_kernel(case, lowering))


def communicator(c: Compiled, **options) -> runtime.Communicator:
    """A CUDA communicator of `c`'s plan launching its kernel."""
    return runtime.Communicator(c.plan, "cuda", kernel=c.cuda, **options)


def without_notifies(kernel: atom.KernelOp) -> atom.KernelOp:
    """`kernel` with every atom.notify erased: no producer ever signals."""
    for op in [op for op in kernel.walk() if isinstance(op, atom.NotifyOp)]:
        op.detach()
        op.erase()
    return kernel


def large_args(case: Case) -> list[list[np.ndarray]]:
    """Inputs whose sums are exact in bf16, tiled from a short pattern (fast at 1 GiB)."""
    dtype = numpy_dtype(case.dtype)
    n_in, n_out = case.buffer_sizes()
    inputs = []
    for r in range(case.world):
        pattern = ((np.arange(16) * 7 + r * 3) % 16 - 8).astype(np.float32) * 0.5
        inputs.append(np.resize(pattern.astype(dtype), n_in))
    outputs = [np.full(n_out, np.nan, dtype) for _ in range(case.world)]
    return [inputs, outputs]


def on_devices(arrays: list[np.ndarray], devices: list[int]) -> list:
    return [runtime.to_device(a, d) for a, d in zip(arrays, devices)]


def check(case: Case, outs: list, args, lowering: str) -> None:
    got = [runtime.to_host(o, args[1][0].dtype) for o in outs]
    mismatch = compare(got, case.expected(args), case.dtype, case.op, case.contributions, 8.0, "%out")
    assert mismatch is None, f"{case.collective} {lowering}: {mismatch}"


def run_compiled(case: Case, c: Compiled, args, devices: list[int], calls: int, lowering: str
                 ) -> runtime.Communicator:
    """`calls` calls of `c` with the ranks of `case` on `devices`, the last one's results checked."""
    comm = communicator(c, timeout_s=20.0, name=case.collective, devices=devices)
    ins, outs = on_devices(args[0], devices), on_devices(args[1], devices)
    for _ in range(calls):
        comm.run(ins, outs)
    comm.synchronize()
    check(case, outs, args, lowering)
    return comm


def run_case(case: Case, lowering: str, devices: list[int], calls: int = 1, large: bool = False) -> None:
    c = lowered(case, lowering)
    comm = run_compiled(case, c, large_args(case) if large else case.make_args(seed=7), devices, calls, lowering)
    assert {comm.epoch(r) for r in range(case.world)} == {calls * c.plan.advance}


SIZES = [16, 4096, 1 << 20, 16 << 20]


@pytest.mark.parametrize("placement", list(PLACEMENTS))
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s}B")
@pytest.mark.parametrize(
    "name,regime", [(n, g) for n in COLLECTIVES for g in regimes(n)], ids=lambda v: str(v)
)
def test_collective_matches_reference(name, regime, size, placement):
    if regime == "latency" and size > 1 << 20:
        pytest.skip("packets are for small payloads")
    case, lowering, devices = make_case(name, size), REGIMES[regime], PLACEMENTS[placement]
    c = lowered(case, lowering)
    if len(set(devices)) < len(devices) and c.cuda.blocks_per_sm(WORLD, sms(0)) * c.cuda.threads > MAX_THREADS_PER_SM:
        # A grid sized for a GPU a rank (the latency regime's from 1 MiB): refused, then lowered for the sharing.
        with pytest.raises(ValueError, match=f"{WORLD} ranks share GPU 0.*ranks-per-device={WORLD}"):
            communicator(c, name=name, devices=devices)
        lowering += f" ranks-per-device={WORLD}"
    run_case(case, lowering, devices, large=size >= 1 << 20)


def sms(device: int) -> int:
    return runtime._runtime.cuda_device_sms(device)


@pytest.mark.parametrize("world", [4, 8])
@pytest.mark.parametrize("regime", ["latency", "throughput", "symmetric"])
@pytest.mark.parametrize("name", list(COLLECTIVES))
def test_worlds_sharing_one_gpu(name, regime, world):
    lowering = {"latency": REGIMES["latency"], "throughput": "regime=throughput blocks=4",
                "symmetric": f"regime=throughput symmetric=true ranks-per-device={world}"}[regime]
    run_case(make_case(name, 4096, world), lowering, [0] * world, calls=3)


def placed(case: Case, symmetric: bool) -> Compiled:
    """`case` compiled in the cost model's own lowering for all its ranks on GPU 0."""
    return compile_collective(case.collective, case.world, case.dtype, case.op, case.count, case.counts,
                              arch="sm_90", symmetric=symmetric, ranks_per_device=case.world,
                              sms=sms(0))


# The cost model's lowering knows how many ranks share the GPU: it always fits.
# 256 KiB and 300006 B (odd slices): packets with every block the ranks' share
# allows, or the direct all_reduce, past latency_max_bytes; 1 MiB: packets
# where a rank writes at most the bounds' packet bytes, else, as 2000006 B (odd
# slices), one block an SM of that share; 16 MiB: two.
@pytest.mark.parametrize("size", [1 << 18, 300_006, 1 << 20, 2_000_006, 16 << 20], ids=lambda s: f"{s}B")
@pytest.mark.parametrize("world", range(2, 9))
@pytest.mark.parametrize("name", list(COLLECTIVES))
def test_default_lowering_runs_at_every_world_on_one_gpu(name, world, size):
    case = make_case(name, size, world)
    c = placed(case, symmetric=True)
    assert c.plan.symmetric
    run_compiled(case, c, large_args(case), [0] * world, 2, "default")


# Pushes that load whole rounds of eight chunks a thread (atom.push `loads`),
# then the rest in rounds of four: 4 MiB a rank, and 4112 bytes more (a tail
# round; slots still 16-byte aligned, as whole rounds need); all_gather_v at
# uneven counts, 4102 bytes more (its one unit lies at offset 0).
@pytest.mark.parametrize("name, world, size", [
    *[("all_gather", w, size) for w in (2, 4, 8) for size in (4 << 20, (4 << 20) + 4112)],
    *[("all_gather_v", 2, size) for size in (4 << 20, (4 << 20) + 4102)]])
def test_pushes_in_whole_rounds_match_reference(name, world, size):
    case = make_case(name, size, world)
    c = placed(case, symmetric=True)
    assert [op.loads.value.data for op in c.cuda.kernel.walk() if isinstance(op, atom.PushOp)] == [8]
    run_compiled(case, c, large_args(case), [0] * world, 2, "whole rounds")


# Latency sizes whose slices lie off 8-byte alignment (odd worlds; fp8 at odd
# bytes) in the default lowering: packets loaded and stored in pieces at
# both ends, a thread's input word read ahead only where it is whole, many
# rounds of a block's threads at 64 KiB. Three calls: the packets' flags
# alternate.
@pytest.mark.parametrize("size", [16, 1022, 65534], ids=lambda s: f"{s}B")
@pytest.mark.parametrize("world", [3, 5, 6, 7])
@pytest.mark.parametrize("dtype", ["bf16", "fp8e4m3"])
@pytest.mark.parametrize("name", ["all_gather", "reduce_scatter", "all_to_all"])
def test_latency_slices_off_alignment_match_reference(name, dtype, world, size):
    case = make_case(name, size, world, dtype)
    c = placed(case, symmetric=True)
    assert c.cuda.kernel.regime.data.value == "latency"
    run_compiled(case, c, case.make_args(seed=5), [0] * world, 3, "default")


@pytest.mark.parametrize("world", [3, 5, 8])
@pytest.mark.parametrize("name", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all_v"])
def test_staged_default_lowering_fits_ranks_sharing_one_gpu(name, world):
    case = make_case(name, 1 << 20, world)
    c = placed(case, symmetric=False)
    assert not c.plan.symmetric
    run_compiled(case, c, large_args(case), [0] * world, 1, "staged default")


@pytest.mark.parametrize("regime", ["throughput", "symmetric"])
@pytest.mark.parametrize("name", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"])
def test_one_gibibyte(name, regime):
    run_case(make_case(name, 1 << 30), REGIMES[regime], PLACEMENTS["shared"], large=True)


@pytest.mark.parametrize("name,regime", [("all_reduce", "latency"), ("all_reduce", "composed"),
                                         ("all_gather_v", "throughput-small-chunks"),
                                         ("all_to_all", "latency"), ("reduce_scatter", "throughput"),
                                         ("all_reduce", "symmetric"), ("all_to_all", "symmetric-chunked"),
                                         ("reduce_scatter_v", "symmetric")])
def test_hundred_repeated_calls(name, regime):
    run_case(make_case(name, 8192), REGIMES[regime], PLACEMENTS["shared"], calls=100)


def test_symmetric_kernels_in_one_process_per_rank_need_a_heap():
    case = make_case("all_gather", 4096)
    spec = runtime.kernel_spec(lowered(case, REGIMES["symmetric"]).cuda, [0], [case.buffer_sizes()] * WORLD)
    assert spec.symmetric
    with pytest.raises(ValueError, match="reads and writes the peers' buffers in place .*give it a DeviceHeap"):
        runtime._runtime.CudaProcessCommunicator(spec, 0, 0, 1.0, "all_gather")


def captured(comm: runtime.Communicator, ins: list, outs: list) -> torch.cuda.CUDAGraph:
    """One call of `comm`, every rank on GPU 0, captured in a CUDA graph."""
    stream = torch.cuda.Stream(device=0)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.device(0), torch.cuda.stream(stream):
        # Every rank is given the capturing stream: the later ones are forked
        # onto their own streams and joined back, inside the graph.
        with torch.cuda.graph(graph, stream=stream):
            comm.run(ins, outs)
    return graph


@pytest.mark.parametrize("regime", ["latency", "throughput-small-chunks", "composed", "symmetric"])
def test_cuda_graph_capture_and_replay(regime):
    case = make_case("all_reduce", 1 << 16)
    devices = PLACEMENTS["shared"]
    c = lowered(case, REGIMES[regime])
    args = case.make_args(seed=3)
    comm = communicator(c, timeout_s=20.0, name="all_reduce", devices=devices)
    ins, outs = on_devices(args[0], devices), on_devices(args[1], devices)
    graph = captured(comm, ins, outs)
    replays = 50
    for _ in range(replays):
        graph.replay()
    comm.synchronize()
    check(case, outs, args, regime)
    # Epochs live on the device: every replay advanced them.
    assert {comm.epoch(r) for r in range(WORLD)} == {replays * c.plan.advance}


@pytest.mark.parametrize("world", [3, 8])
@pytest.mark.parametrize("name", ["all_gather", "all_to_all_v"])
def test_copy_engine_steps_replay_in_cuda_graphs(name, world):
    """A stream role captured in a graph: its copies (cudaMemcpyAsync) and
    signal kernels replay in order on every rank's stream, the epochs kept on
    the device advancing with each replay; eager calls continue them."""
    case = make_case(name, 3000, world)
    devices = [0] * world
    c = lowered(case, f"symmetric=true copy-engine=true ranks-per-device={world}")
    assert c.cuda.source().stream == (0, -1, 1)
    args = case.make_args(seed=5)
    comm = communicator(c, timeout_s=20.0, name=name, devices=devices)
    ins, outs = on_devices(args[0], devices), on_devices(args[1], devices)
    graph = captured(comm, ins, outs)
    for _ in range(30):
        graph.replay()
    comm.synchronize()
    check(case, outs, args, "copy-engine in a graph")
    for o in outs:
        o.fill_(float("nan"))
    comm.run(ins, outs)
    comm.synchronize()
    check(case, outs, args, "copy-engine after replays")
    assert {comm.epoch(r) for r in range(world)} == {31 * c.plan.advance}


@pytest.mark.parametrize("name", ["all_to_all", "all_to_all_v"])
def test_cost_model_copy_engine_from_128_mib(name):
    """Ranks sharing a GPU: the default lowering of a 128 MiB all_to_all is
    the copy engine's (cost_model.py), and it matches the reference."""
    case = make_case(name, 128 << 20)
    devices = [0] * WORLD
    c = lowered(case, f"symmetric=true ranks-per-device={WORLD}")
    assert c.cuda.source().stream, "the cost model kept the SMs"
    args = large_args(case)
    comm = communicator(c, name=name, devices=devices)
    outs = on_devices(args[1], devices)
    comm.run(on_devices(args[0], devices), outs)
    comm.synchronize()
    check(case, outs, args, "the cost model's copy engine")


@pytest.mark.parametrize("lowering", ["regime=latency", "regime=throughput blocks=8 chunk-bytes=4096 slots=2",
                                      "regime=throughput strategy=composed blocks=8 chunk-bytes=4096 slots=2",
                                      f"regime=throughput strategy=composed symmetric=true ranks-per-device={WORLD}"])
def test_in_place_forms(lowering):
    devices, n = PLACEMENTS["shared"], 4096
    vals = lambda r, k: ((torch.arange(k, device="cuda:0") * 7 + r * 5) % 9 - 4).float()  # noqa: E731
    # all_reduce lowered in place, three calls on the same buffers.
    comm = communicator(compile_collective("all_reduce", WORLD, "f32", "sum", n, lowering=lowering, in_place=True),
                        name="all_reduce", devices=devices)
    bufs = [vals(r, n) for r in range(WORLD)]
    expected = sum(bufs)
    for _ in range(3):
        comm.run(bufs, bufs)
        comm.synchronize()
        assert all(torch.equal(b, expected) for b in bufs)
        expected = expected * WORLD
    # all_gather into the rank's own output slice; reduce_scatter into its own input slice.
    k, lowering = n // WORLD, lowering.replace("strategy=composed ", "")
    gather = communicator(compile_collective("all_gather", WORLD, "f32", None, k, lowering=lowering),
                          name="all_gather", devices=devices)
    outs = [torch.cat([vals(s, k) if s == r else torch.full((k,), float("nan"), device="cuda:0")
                       for s in range(WORLD)]) for r in range(WORLD)]
    gather.run([o[r * k:(r + 1) * k] for r, o in enumerate(outs)], outs)
    gather.synchronize()
    assert all(torch.equal(o, torch.cat([vals(s, k) for s in range(WORLD)])) for o in outs)
    scatter = communicator(compile_collective("reduce_scatter", WORLD, "f32", "sum", k, lowering=lowering),
                           name="reduce_scatter", devices=devices)
    ins = [vals(r, n) for r in range(WORLD)]
    total = sum(ins)
    scatter.run(ins, [x[r * k:(r + 1) * k] for r, x in enumerate(ins)])
    scatter.synchronize()
    assert all(torch.equal(x[r * k:(r + 1) * k], total[r * k:(r + 1) * k]) for r, x in enumerate(ins))


@pytest.mark.parametrize("regime", ["throughput", "copy-engine"])
def test_missing_notify_times_out_naming_rank_site_and_epoch(regime):
    case = make_case("all_gather", 4096)
    # No producer ever signals: every consumer waits forever.
    kernel = without_notifies(lowered_kernel(case, REGIMES[regime]))
    comm = communicator(compiled(kernel), timeout_s=0.5, name="all_gather", devices=PLACEMENTS["shared"])
    args = case.make_args(seed=0)
    ins, outs = on_devices(args[0], PLACEMENTS["shared"]), on_devices(args[1], PLACEMENTS["shared"])
    comm.run(ins, outs)
    with pytest.raises(runtime.CollectiveTimeout,
                       match=r"all_gather: rank \d \(GPU 0\) timed out after 0.5 s in block \d+ at "
                             r"'atom.wait_ready' @exchange .*\(epoch 0\)"):
        comm.synchronize()
    with pytest.raises(RuntimeError, match="failed earlier .a wait timed out"):
        comm.run(ins, outs)


def test_cupy_arrays_are_device_buffers_too():
    cupy = pytest.importorskip("cupy")
    case = make_case("all_reduce", 4096, dtype="f32")
    devices = PLACEMENTS["shared"]
    comm = communicator(lowered(case, REGIMES["latency"]), name="all_reduce", devices=devices)
    args = case.make_args(seed=5)
    with cupy.cuda.Device(0):
        ins = [cupy.asarray(a) for a in args[0]]
        outs = [cupy.asarray(a) for a in args[1]]
        comm.run(ins, outs, [cupy.cuda.get_current_stream().ptr] * case.world)
        comm.synchronize()
        got = [o.get() for o in outs]
    assert compare(got, case.expected(args), case.dtype, case.op, case.contributions, 8.0, "%out") is None


def test_grids_that_do_not_fit_one_gpu_are_refused():
    # Eight ranks of the cost model's throughput kernel (64 blocks per role) on one GPU.
    case = make_case("all_reduce", 1 << 20, world=8)
    c = lowered(case, "regime=throughput")
    with pytest.raises(Exception, match="co-resident|threads an SM holds"):
        communicator(c, name="all_reduce", devices=[0] * 8)


def test_kernel_for_another_generation_is_refused():
    case = make_case("all_gather", 4096)
    func = entry_function(lower(case.build_module(), pipeline_spec("atom", arch="sm_100", verify=False)))
    (kernel,) = [op for op in func.body.ops if isinstance(op, atom.KernelOp)]
    with pytest.raises(Exception, match="sm_100"):
        communicator(compiled(kernel), name="all_gather", devices=PLACEMENTS["shared"])


@pytest.mark.skipif(GPUS < WORLD, reason="needs two GPUs")
def test_arrays_on_the_wrong_device_are_refused():
    case = make_case("all_gather", 4096)
    comm = communicator(lowered(case, REGIMES["throughput"]), name="all_gather")
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


@pytest.mark.parametrize("regime", ["throughput", "latency", "symmetric"])
@pytest.mark.parametrize(
    "name,op",
    [("all_gather_v", None), ("reduce_scatter_v", "sum"), ("reduce_scatter_v", "max"), ("all_to_all_v", None)],
    ids=lambda v: str(v),
)
@pytest.mark.parametrize(
    "dtype,offset", [(d, o) for d, offsets in MISALIGNED.items() for o in offsets], ids=lambda v: str(v)
)
def test_misaligned_slices_match_reference_exactly(name, op, dtype, offset, regime):
    case = misaligned_case(name, dtype, op, offset)
    if regime == "latency":
        # Packets: a few KiB per rank, slices still off alignment.
        elem = numpy_dtype(dtype).itemsize
        k = offset // elem
        counts = (((512 + k, 512 + 3 * k + 1), (512 + 5 * k, 513)) if COLLECTIVES[name].matrix
                  else (512 + k, 512 - k + 3))
        case = Case(name, WORLD, dtype, op, counts=counts)
    devices = PLACEMENTS["shared"]
    c = lowered(case, REGIMES[regime])
    # Sums of these inputs are exact in f32 and in the dtype, so every result is exact.
    args = case.make_args(seed=11)
    expected = case.expected(args)
    comm = communicator(c, timeout_s=20.0, name=case.collective, devices=devices)
    ins, outs = on_devices(args[0], devices), on_devices(args[1], devices)
    comm.run(ins, outs)
    comm.synchronize()
    got = [runtime.to_host(o, args[1][0].dtype) for o in outs]
    # One contribution: no tolerance (copies compare bits, reductions values).
    mismatch = compare(got, expected, case.dtype, case.op, 1, 1.0, "%out")
    assert mismatch is None, f"{case.collective} {dtype} at byte offset {offset}: {mismatch}"


@pytest.mark.parametrize("name,nbytes", [("all_gather", 3072), ("all_reduce", 4096), ("reduce_scatter_v", 6000)])
def test_purlin_run_places_ranks_on_devices(name, nbytes, capsys):
    from purlin.tools.run import main

    op = ["--op", "sum"] if "reduce" in name else []
    assert main(["--collective", name, "--world", "3", "--bytes", str(nbytes), "--dtype", "bf16", *op,
                 "--backend", "cuda", "--devices", "0,0,0"]) == 0, capsys.readouterr()
    assert "result=match" in capsys.readouterr().out


@pytest.mark.parametrize("programmatic", [None, False])
@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("name", ["all_reduce", "all_gather", "reduce_scatter"])
def test_programmatic_launch_waits_for_the_work_ahead(name, world, programmatic):
    """On sm_90 a latency kernel (one block a rank, so two grids of every rank fit) launches as a
    programmatic dependent unless told not to: it may start while the kernel ahead of it on the
    rank's stream runs. Each call's input is written by the kernel just ahead of it and its output
    copied out by the kernel just after: every call must see its own input and leave its own result."""
    case = make_case(name, 4096, world)
    comm = communicator(lowered(case, REGIMES["latency"]), timeout_s=20.0, name=name, devices=[0] * world,
                        programmatic=programmatic)
    assert comm.programmatic == (programmatic is None and torch.cuda.get_device_capability(0)[0] >= 9)
    n_in, n_out = case.buffer_sizes()
    dtype = numpy_dtype(case.dtype)
    calls = 40
    streams = [torch.cuda.Stream(0) for _ in range(world)]
    base = torch.arange(n_in, device="cuda:0").remainder(5).to(torch.bfloat16)
    ins = [torch.empty(n_in, dtype=torch.bfloat16, device="cuda:0") for _ in range(world)]
    outs = [torch.empty(n_out, dtype=torch.bfloat16, device="cuda:0") for _ in range(world)]
    kept = [torch.empty(calls, n_out, dtype=torch.bfloat16, device="cuda:0") for _ in range(world)]
    torch.cuda.synchronize()
    for k in range(calls):
        for r, s in enumerate(streams):
            with torch.cuda.stream(s):
                torch.add(base, k + r, out=ins[r])
        comm.run(ins, outs, streams)
        for r, s in enumerate(streams):
            with torch.cuda.stream(s):
                kept[r][k].copy_(outs[r])
    torch.cuda.synchronize()
    base_np = base.float().cpu().numpy()
    for k in range(calls):
        args = [[(base_np + k + r).astype(dtype) for r in range(world)], [np.zeros(n_out, dtype)] * world]
        got = [kept[r][k].float().cpu().numpy().astype(dtype) for r in range(world)]
        assert compare(got, case.expected(args), case.dtype, case.op, case.contributions, 8.0, "%out") is None, k



def test_programmatic_is_refused_to_a_stream_program():
    # Copy-engine steps are several kernels and copies: they launch in stream order.
    case = make_case("all_gather", 4096)
    c = lowered(case, REGIMES["copy-engine"])
    with pytest.raises(ValueError, match="all_gather: programmatic=True, but its calls cannot launch as programmatic"):
        communicator(c, name="all_gather", devices=PLACEMENTS["shared"], programmatic=True)
    assert not communicator(c, name="all_gather", devices=PLACEMENTS["shared"]).programmatic
