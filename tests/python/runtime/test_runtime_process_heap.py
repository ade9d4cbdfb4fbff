"""Symmetric kernels with one rank per process: every rank's buffers in its
purlin heap (ProcessCommunicator.alloc, device memory shared by CUDA IPC),
read and written in place by the peers. Checked against the numpy reference
for the four fixed collectives and a V form, over repeated calls and a
CUDA-graph replay; buffers at other heap offsets on one rank fail every rank
with BadBuffersError (not a timeout), and a buffer outside the heap is
refused at run. The ranks run on GPU rank % GPUs: on one GPU the processes
take turns on it (time slices), so calls are slow there but complete."""

from __future__ import annotations

from test_runtime_cuda import GPUS, make_case

import pytest
import torch
from process_group import run_group

from purlin import runtime
from purlin.compile import arch_of_device, compile_collective
from purlin.dtypes import numpy_dtype
from purlin.testing.data import compare

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(GPUS < 1, reason="needs the CUDA backend and a GPU")]

NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


# Pushes and pulls into the peers' buffers (the cost model picks staging or
# packets at these sizes, which only the last case keeps).
THROUGHPUT = "regime=throughput"


def communicator(case, rank: int, lowering: str = THROUGHPUT, **options):
    torch.cuda.set_device(rank % GPUS)
    compiled = compile_collective(case.collective, case.world, case.dtype, case.op, case.count, counts=case.counts,
                                  arch=arch_of_device(), symmetric=True, lowering=lowering)
    assert compiled.plan.symmetric
    return compiled, runtime.ProcessCommunicator(compiled.plan, backend="cuda", timeout_s=30.0, name=case.collective,
                                                 kernel=compiled.cuda, **options)


def filled(comm, array):
    """`array` in a fresh buffer of `comm`'s heap."""
    buf = comm.alloc(array.size)
    buf.copy_(runtime.to_device(array, comm.device))
    return buf


def in_place_collectives(rank: int, world: int) -> None:
    for name, size, lowering in (("all_gather", 4096, THROUGHPUT), ("all_reduce", 1 << 16, THROUGHPUT),
                                 ("reduce_scatter", 8192, THROUGHPUT), ("all_to_all", 4096, THROUGHPUT),
                                 ("all_gather_v", 4096, THROUGHPUT), ("all_reduce", 64, "")):
        case = make_case(name, size, world)
        args = case.make_args(seed=3)
        _, comm = communicator(case, rank, lowering)
        x, y = filled(comm, args[0][rank]), filled(comm, args[1][rank])
        for _ in range(3):
            comm.run(x, y)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode="relaxed"):
            comm.run(x, y)
        graph.replay()
        comm.synchronize()
        got = runtime.to_host(y, numpy_dtype(case.dtype))
        mismatch = compare([got], [case.expected(args)[rank]], case.dtype, case.op, case.contributions, 8.0, "%out")
        assert mismatch is None, f"rank {rank}: {name}: {mismatch}"
        comm.close()


def offsets_that_differ(rank: int, world: int) -> None:
    case = make_case("all_gather", 4096, world)
    args = case.make_args(seed=3)
    _, comm = communicator(case, rank, heap_bytes=1 << 20)
    if rank == 1:
        comm.alloc(64)  # every later buffer of rank 1 sits 128 bytes further on
    x, y = filled(comm, args[0][rank]), filled(comm, args[1][rank])
    comm.run(x, y)
    with pytest.raises(runtime.BadBuffersError, match=r"(?s)all_gather: rank \d's input is at offset (0|128) of its "
                                                     r"heap, rank \d's at (128|0).*same offsets of their heaps"):
        comm.synchronize()
    with pytest.raises(RuntimeError, match="failed earlier"):
        comm.run(x, y)
    # The record stays: close raises it again, and still releases the memory after the group's barrier.
    with pytest.raises(runtime.BadBuffersError):
        comm.close()


def buffers_outside_the_heap(rank: int, world: int) -> None:
    case = make_case("all_gather", 4096, world)
    args = case.make_args(seed=3)
    _, comm = communicator(case, rank)
    x = runtime.to_device(args[0][rank], comm.device)
    y = comm.alloc(case.buffer_sizes()[1])
    with pytest.raises(ValueError, match=r"all_gather: rank \d's input \(\d+ bytes\) is not in its heap of \d+ bytes"):
        comm.run(x, y)
    comm.close()


@pytest.mark.parametrize("world", [2])
@pytest.mark.parametrize("job", [in_place_collectives, offsets_that_differ, buffers_outside_the_heap])
def test_symmetric_process_ranks(job, world, monkeypatch):
    for k, v in NO_MULTICAST.items():
        monkeypatch.setenv(k, v)
    run_group(world, "gloo", job, (world,))
