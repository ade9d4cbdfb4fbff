"""Symmetric kernels with one rank per process: every rank's buffers in a
purlin.runtime.DeviceHeap (device memory every rank maps by CUDA IPC), read
and written in place by the peers. Checked against the numpy reference for
the four fixed collectives and a V form, their communicators sharing one
heap, over repeated calls and a CUDA-graph replay, and one communicator with
a heap of its own; the user's own tensors registered (DeviceHeap.register),
as buffers and through views; buffers at other heap offsets, or in another
registered tensor, on one rank fail every rank with BadBuffersError (not a
timeout); a buffer outside the heaps, a heap of another rank, a heap for a
kernel that takes none and tensors that cannot be registered are refused.
The ranks run on GPU rank % GPUs: on one GPU the processes take turns on it
(time slices), so calls are slow there but complete."""

from __future__ import annotations

from test_runtime_bindings import one_layout
from test_runtime_cuda import GPUS, make_case

import pytest
import torch
from process_group import run_group

from purlin import runtime
from purlin.compile import arch_of_device, compile_collective, compile_device_counts
from purlin.dtypes import numpy_dtype
from purlin.testing.cases import Case
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


def graph_of(comm, x, y) -> torch.cuda.CUDAGraph:
    """One call of `comm` captured in a CUDA graph."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, capture_error_mode="relaxed"):
        comm.run(x, y)
    return graph


def check_rank(case, args, rank: int, y, what: str) -> None:
    """Rank `rank`'s output `y` against the reference."""
    got = runtime.to_host(y, numpy_dtype(case.dtype))
    mismatch = compare([got], [case.expected(args)[rank]], case.dtype, case.op, case.contributions, 8.0, "%out")
    assert mismatch is None, f"rank {rank}: {what}: {mismatch}"


def in_place_collectives(rank: int, world: int) -> None:
    torch.cuda.set_device(rank % GPUS)
    shared = runtime.DeviceHeap(4 << 20, name="shared")
    # The last has a heap of its own (the communicator makes it).
    cases = [(name, size, THROUGHPUT, shared) for name, size in (("all_gather", 4096), ("all_reduce", 1 << 16),
                                                                 ("reduce_scatter", 8192), ("all_to_all", 4096),
                                                                 ("all_gather_v", 4096))]
    for name, size, lowering, heap in cases + [("all_reduce", 64, "", None)]:
        case = make_case(name, size, world)
        args = case.make_args(seed=3)
        _, comm = communicator(case, rank, lowering, heap=heap)
        x, y = filled(comm, args[0][rank]), filled(comm, args[1][rank])
        for _ in range(3):
            comm.run(x, y)
        graph_of(comm, x, y).replay()
        comm.synchronize()
        check_rank(case, args, rank, y, name)
        comm.close()
    shared.close()


def offsets_that_differ(rank: int, world: int) -> None:
    case = make_case("all_gather", 4096, world)
    args = case.make_args(seed=3)
    _, comm = communicator(case, rank, heap_bytes=1 << 20)
    if rank == 1:
        comm.alloc(64)  # every later buffer of rank 1 sits 256 bytes further on
    x, y = filled(comm, args[0][rank]), filled(comm, args[1][rank])
    comm.run(x, y)
    with pytest.raises(runtime.BadBuffersError, match=r"(?s)all_gather: rank \d's input is at offset (0|256) of heap "
                                                     r"(\d+), rank \d's at offset (256|0) of heap \2.*same heap, at "
                                                     r"the same offsets"):
        comm.synchronize()
    with pytest.raises(RuntimeError, match="failed earlier"):
        comm.run(x, y)
    # The record stays: close raises it again, and still releases the memory after the group's barrier.
    with pytest.raises(runtime.BadBuffersError):
        comm.close()


def refused(rank: int, world: int) -> None:
    case = make_case("all_gather", 4096, world)
    args = case.make_args(seed=3)
    compiled, comm = communicator(case, rank)
    x = runtime.to_device(args[0][rank], comm.device)
    y = comm.alloc(case.buffer_sizes()[1])
    with pytest.raises(ValueError, match=r"all_gather: rank \d's input \(\d+ bytes\) is not in its heap of \d+ bytes"):
        comm.run(x, y)
    comm.close()
    heap = runtime.DeviceHeap(1 << 16, name="h")
    extents = [case.buffer_sizes()] * world
    spec = runtime.kernel_spec(compiled.cuda, [comm.device], extents)
    with pytest.raises(ValueError, match=r"ag: the heap is rank \d's of a world of \d on GPU \d, this communicator"):
        runtime._runtime.CudaProcessCommunicator(spec, (rank + 1) % world, comm.device, 1.0, "ag", [heap.handle()])
    with pytest.raises(ValueError, match="ag: the kernel has copy-engine steps .* lower it without mech=ce"):
        spec.stream = [0, -1]
        runtime._runtime.CudaProcessCommunicator(spec, rank, comm.device, 1.0, "ag", [heap.handle()])
    staged = compile_collective("all_gather", world, "bf16", None, 2048, arch=arch_of_device())
    assert not staged.plan.symmetric
    spec = runtime.kernel_spec(staged.cuda, [comm.device], extents)
    with pytest.raises(ValueError, match="ag: a heap is for a symmetric kernel"):
        runtime._runtime.CudaProcessCommunicator(spec, rank, comm.device, 1.0, "ag", [heap.handle()])
    heap.close()


def registered_tensors(rank: int, world: int) -> None:
    """The user's own tensors (torch's allocator) registered: each its own heap, or
    one tensor whose views are the buffers."""
    torch.cuda.set_device(rank % GPUS)
    for name, size in (("all_reduce", 1 << 16), ("all_gather", 4096), ("reduce_scatter", 8192)):
        case = make_case(name, size, world)
        args = case.make_args(seed=5)
        n_in, n_out = case.buffer_sizes()
        x = runtime.to_device(args[0][rank], torch.cuda.current_device())
        y = torch.empty_like(runtime.to_device(args[1][rank], torch.cuda.current_device()))
        # Both buffers as views of one registered tensor, at the same offsets on every rank.
        # The kernel's buffers start 16-byte aligned: the output's view starts at the next such offset.
        step = 16 // x.element_size()
        at = 128 + -(-n_in // step) * step
        whole = torch.zeros(at + n_out, dtype=x.dtype, device=x.device)
        heaps = [runtime.DeviceHeap.register(x, name="x"), runtime.DeviceHeap.register(y, name="y"),
                 runtime.DeviceHeap.register(whole, name="whole")]
        serials = [None] * world
        torch.distributed.all_gather_object(serials, [h.serial for h in heaps])
        assert all(s == serials[0] for s in serials) and len(set(serials[0])) == 3, serials
        _, comm = communicator(case, rank, heap=heaps)
        wx, wy = whole[128:128 + n_in], whole[at:]
        wx.copy_(x)
        for inp, out in ((x, y), (wx, wy)):
            for _ in range(2):
                comm.run(inp, out)
            graph_of(comm, inp, out).replay()
            comm.synchronize()
            check_rank(case, args, rank, out, f"{name} registered")
        with pytest.raises(ValueError, match=r"no heap to allocate from: .* its heaps are registered tensors"):
            comm.alloc(16)
        comm.close()
        for h in heaps:
            h.close()


def registered_elsewhere(rank: int, world: int) -> None:
    """Rank 1's input in another registered tensor than its peers': every rank fails, naming both heaps."""
    torch.cuda.set_device(rank % GPUS)
    case = make_case("all_gather", 4096, world)
    args = case.make_args(seed=3)
    a = runtime.to_device(args[0][rank], torch.cuda.current_device())
    b = a.clone()
    y = torch.empty(case.buffer_sizes()[1], dtype=a.dtype, device=a.device)
    heaps = [runtime.DeviceHeap.register(t, name=n) for t, n in ((a, "a"), (b, "b"), (y, "y"))]
    _, comm = communicator(case, rank, heap=heaps)
    comm.run(b if rank == 1 else a, y)
    a_serial, b_serial = heaps[0].serial, heaps[1].serial
    with pytest.raises(runtime.BadBuffersError, match=rf"(?s)input is at offset 0 of heap ({a_serial}|{b_serial}), "
                                                      rf"rank \d's at offset 0 of heap ({b_serial}|{a_serial})"):
        comm.synchronize()
    with pytest.raises(runtime.BadBuffersError):
        comm.close()


def registered_refused(rank: int, world: int) -> None:
    torch.cuda.set_device(rank % GPUS)
    dev = torch.cuda.current_device()
    with pytest.raises(TypeError, match="r: register takes a CUDA tensor, got one on cpu"):
        runtime.DeviceHeap.register(torch.zeros(16), name="r")
    with pytest.raises(ValueError, match="r: register takes a contiguous tensor"):
        runtime.DeviceHeap.register(torch.zeros(16, 16, device=dev).t(), name="r")
    # Every rank fails where one rank's tensor has another size, each naming why.
    with pytest.raises(ValueError, match=r"uneven: the ranks could not map each other's registered memory: rank \d: "
                                         r"uneven: handle \d is a heap of \d+ bytes"):
        runtime.DeviceHeap.register(torch.zeros(64 + 32 * (rank == 1), device=dev), name="uneven")
    case = make_case("all_gather", 4096, world)
    x = torch.zeros(case.buffer_sizes()[0], dtype=torch.bfloat16, device=dev)
    xs = runtime.DeviceHeap.register(x, name="x")
    _, comm = communicator(case, rank, heap=[xs])
    with pytest.raises(ValueError, match=r"all_gather: rank \d's output \(\d+ bytes\) is not in its heap of \d+ "
                                         r"bytes: a symmetric kernel's buffers come from a heap or registered memory"):
        comm.run(x, torch.zeros(case.buffer_sizes()[1], dtype=x.dtype, device=dev))
    comm.close()
    xs.close()


def specialised_ranks(rank: int, world: int) -> None:
    """Rank 0 alone has its tables compiled in, after three calls (its peers keep the generic kernel: the
    protocol is the same); a graph captured before, replayed after, and calls after, match the reference."""
    torch.cuda.set_device(rank % GPUS)
    for name, size, lowering in (("all_reduce", 64, "regime=latency"), ("all_gather", 4096, THROUGHPUT)):
        case = make_case(name, size, world)
        args = case.make_args(seed=11)
        _, comm = communicator(case, rank, lowering)
        x, y = filled(comm, args[0][rank]), filled(comm, args[1][rank])
        for _ in range(3):
            comm.run(x, y)
        graph = graph_of(comm, x, y)
        comm.synchronize()
        if rank == 0:
            comm.specialise()
        for _ in range(3):
            comm.run(x, y)
        graph.replay()
        comm.run(x, y)
        comm.synchronize()
        assert comm.epoch() == 8 * comm.plan.advance  # 3 + 3 + 1 calls and one replay
        check_rank(case, args, rank, y, f"{name} specialised")
        comm.close()


def rebound_sizes(rank: int, world: int) -> None:
    """One communicator of an all_to_all_v lowered with its counts on the host runs three bindings of
    one layout in turn over buffers of its heap, each call matching the reference, a graph of the first binding
    replayed after the others."""
    torch.cuda.set_device(rank % GPUS)
    capacity = 1 << 14
    dc = compile_device_counts("all_to_all_v", world, "bf16", None, input_elems=capacity,
                               output_elems=capacity * world, arch=arch_of_device(), counts_on_host=True,
                               lowering="regime=throughput symmetric=true")
    counts, bound = zip(*one_layout(dc, "all_to_all_v", world, totals=(31, 700, 9000)))
    comm = runtime.ProcessCommunicator(bound[0].plan, backend="cuda", timeout_s=30.0, name="all_to_all_v",
                                       kernel=bound[0].cuda, heap_bytes=4 * capacity * (world + 1))
    x, y = comm.alloc(capacity), comm.alloc(capacity * world)
    graph = None
    for k in (0, 1, 2, 0):
        comm.rebind(bound[k].plan, kernel=bound[k].cuda)
        case = Case("all_to_all_v", world, "bf16", None, counts=counts[k])
        args = case.make_args(seed=k)
        x[:args[0][rank].size].copy_(runtime.to_device(args[0][rank], comm.device))
        y.fill_(float("nan"))
        comm.run(x, y)
        if graph is None:
            graph = graph_of(comm, x, y)
        comm.synchronize()
        check_rank(case, args, rank, y[:args[1][rank].size], f"binding {k}")
    graph.replay()
    comm.synchronize()
    check_rank(case, args, rank, y[:args[1][rank].size], "graph of the first binding")
    comm.close()


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("job", [in_place_collectives, offsets_that_differ, refused, registered_tensors,
                                 registered_elsewhere, registered_refused, specialised_ranks, rebound_sizes])
def test_symmetric_process_ranks(job, world, monkeypatch):
    for k, v in NO_MULTICAST.items():
        monkeypatch.setenv(k, v)
    run_group(world, "gloo", job, (world,))
