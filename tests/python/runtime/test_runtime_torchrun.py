"""The seven collectives through ProcessCommunicator, one process per GPU as
under torchrun (torch.multiprocessing spawn, an nccl process group): both
regimes against torch.distributed (the V forms against the numpy reference),
repeated calls, CUDA-graph replay, a planted missing notify that times out,
and the checks on exchanged handles. Skipped without two GPUs (processes
sharing one GPU do not run concurrently) and a CUDA build; run on the GPU
machine with `pytest -m gpu`."""

from __future__ import annotations

import contextlib
import os

# The single-process tests' skips (no torch, no CUDA build, fewer than two
# GPUs), marks, cases and lowerings; spawned workers import this module by
# name too (spawn hands them the parent's sys.path). First: it skips without torch.
from test_runtime_cuda import GPUS, REGIMES, WORLD, compiled, lowered, lowered_kernel, make_case, without_notifies

import pytest
import torch
from process_group import run_group

from purlin import runtime
from purlin.coll.builder import COLLECTIVES
from purlin.dtypes import numpy_dtype
from purlin.testing.data import compare

# NVLink multicast is off on the lent machines: NCCL, torch symmetric memory
# and NVSHMEM must not try it. Workers inherit these before importing torch.
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(GPUS < WORLD, reason=f"needs the CUDA backend and {WORLD} GPUs")]


def spawn(job, *args) -> None:
    """Runs job(rank, *args) in WORLD processes of one nccl process group."""
    saved = {k: os.environ.get(k) for k in NO_MULTICAST}
    os.environ.update(NO_MULTICAST)
    try:
        run_group(WORLD, "nccl", job, args)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def torch_result(case, inp):
    """What torch.distributed computes for a fixed-size collective (sum) on this rank's input."""
    import torch.distributed as dist

    out = torch.empty(case.buffer_sizes()[1], dtype=inp.dtype, device=inp.device)
    if case.collective == "all_reduce":
        out.copy_(inp)
        dist.all_reduce(out)
    elif case.collective == "all_gather":
        dist.all_gather_into_tensor(out, inp)
    elif case.collective == "reduce_scatter":
        dist.reduce_scatter_tensor(out, inp)
    else:
        dist.all_to_all_single(out, inp)
    return runtime.to_host(out, numpy_dtype(case.dtype))


def check_case(rank: int, name: str, regime: str, size: int, calls: int = 1, graph_replays: int = 0) -> None:
    case = make_case(name, size)
    c = lowered(case, REGIMES[regime])
    args = case.make_args(seed=7)  # the same on every rank
    comm = runtime.ProcessCommunicator(c.plan, timeout_s=20.0, name=name, kernel=c.cuda)
    assert (comm.rank, comm.world) == (rank, WORLD)
    inp = runtime.to_device(args[0][rank], rank)
    out = runtime.to_device(args[1][rank], rank)
    if graph_replays:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode="relaxed"):
            comm.run(inp, out)  # on the capture stream, torch's current one
        for _ in range(graph_replays):
            graph.replay()
    for _ in range(calls):
        comm.run(inp, out)
    comm.synchronize()
    # Epochs live on the device: every call and replay advanced them.
    assert comm.epoch() == (calls + graph_replays) * c.plan.advance
    got = runtime.to_host(out, numpy_dtype(case.dtype))
    expected = case.expected(args)[rank] if COLLECTIVES[name].variable else torch_result(case, inp)
    mismatch = compare([got], [expected], case.dtype, case.op, case.contributions, 8.0, "%out")
    assert mismatch is None, f"rank {rank}: {name} {regime} {size} B: {mismatch}"
    comm.close()


def all_collectives(rank: int) -> None:
    for name in COLLECTIVES:
        for regime, size in [("latency", 64), ("latency", 4096), ("throughput", 4096),
                             ("throughput", 1 << 20), ("throughput-small-chunks", 1 << 16)]:
            check_case(rank, name, regime, size)
    check_case(rank, "all_reduce", "composed", 1 << 16)


def repeated_and_replayed(rank: int) -> None:
    check_case(rank, "all_reduce", "latency", 8192, calls=100)
    check_case(rank, "all_to_all_v", "throughput-small-chunks", 8192, calls=20)
    check_case(rank, "all_reduce", "throughput-small-chunks", 1 << 16, calls=1, graph_replays=50)


def missing_notify(rank: int) -> None:
    case = make_case("all_gather", 4096)
    args = case.make_args(seed=0)
    # No rank ever signals, so each waits until its deadline.
    c = compiled(without_notifies(lowered_kernel(case, REGIMES["throughput"])))
    comm = runtime.ProcessCommunicator(c.plan, timeout_s=0.5, name="all_gather", kernel=c.cuda)
    comm.run(runtime.to_device(args[0][rank], rank), runtime.to_device(args[1][rank], rank))
    with pytest.raises(runtime.CollectiveTimeout,
                       match=rf"all_gather: rank {rank} \(GPU {rank}\) timed out .*'atom.wait_ready' .*\(epoch 0\)"):
        comm.synchronize()
    with contextlib.suppress(runtime.CollectiveTimeout):
        comm.close()


def test_seven_collectives_match_torch_distributed():
    spawn(all_collectives)


def test_repeated_calls_and_cuda_graph_replay():
    spawn(repeated_and_replayed)


def test_missing_notify_times_out_naming_rank_and_epoch():
    spawn(missing_notify)


def test_exchanged_handles_are_checked():
    """connect's checks come before any handle is opened: one process can hold both ranks."""
    plan = lowered(make_case("all_gather", 4096), REGIMES["throughput"])
    other = lowered(make_case("all_gather", 8192), REGIMES["throughput"])
    specs = {id(c): runtime.kernel_spec(c.cuda, list(range(WORLD)),
                                        [(c.plan.input_extent(r), c.plan.output_extent(r)) for r in range(WORLD)])
             for c in (plan, other)}
    new = lambda p, rank: runtime._runtime.CudaProcessCommunicator(specs[id(p)], rank, rank, 1.0, "ag")  # noqa: E731
    ranks = [new(plan, r) for r in range(WORLD)]
    h0, h1 = (c.ipc_handle() for c in ranks)
    c0 = ranks[0]
    wrong_world = bytearray(h1)
    wrong_world[20:24] = (4).to_bytes(4, "little")  # IpcBlob.world
    stranger = new(plan, 0).ipc_handle()
    cases = [
        ([h0], "one handle per rank"),
        ([h0, b"junk"], "handle 1 is not a purlin IPC handle"),
        ([h0, bytes(wrong_world)], "handle 1 is from a communicator of world 4"),
        ([h1, h0], "handle 0 is rank 1's; handles go in rank order"),
        ([h0, new(other, 1).ipc_handle()], "handle 1 is for another kernel"),
        ([stranger, h1], "handle 0 is not this communicator's own"),
    ]
    for handles, match in cases:
        with pytest.raises(ValueError, match=match):
            c0.connect(handles)
    with pytest.raises(RuntimeError, match="not connected"):
        c0.run(0, 0, 0)
