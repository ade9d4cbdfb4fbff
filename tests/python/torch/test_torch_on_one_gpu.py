"""purlin.torch on one GPU, in one nccl process (world 1: the CUDA path of
the operators end to end; several ranks need several GPUs, as processes
sharing one GPU do not run concurrently): torch.compile with
mode="reduce-overhead" captures purlin operators in its CUDA graphs, and
all_to_all_v_dev runs in a captured graph with counts a kernel writes.
Skipped without a GPU; run on the GPU machine with `pytest -m gpu`."""

from __future__ import annotations

import os

import pytest
import torch
from process_group import run_group

from purlin.runtime import default_backend

GPUS = torch.cuda.device_count() if default_backend() == "cuda" else 0
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(GPUS < 1, reason="needs the CUDA backend and a GPU")]


def _step(x: torch.Tensor) -> torch.Tensor:
    import purlin.torch as pt

    y = torch.relu(x) * 2
    pt.all_reduce(y)  # in place, on an intermediate
    return pt.functional.all_gather(y + 1)


def _reduce_overhead(rank: int) -> None:
    from torch._dynamo.utils import counters

    import purlin.torch as pt

    pt.init()
    x = torch.randn(256, device="cuda")
    compiled = torch.compile(_step, mode="reduce-overhead", fullgraph=True)
    for _ in range(6):
        torch.testing.assert_close(compiled(x).clone().view(-1), torch.relu(x) * 2 + 1)
    assert not counters["inductor"]["cudagraph_skips"], dict(counters["inductor"])


def _device_counts_in_a_graph(rank: int) -> None:
    import purlin.torch as pt

    pt.init()
    send = torch.randn(4096, device="cuda")
    out, recv = torch.zeros(4096, device="cuda"), torch.zeros(1, dtype=torch.int64, device="cuda")
    step = torch.zeros(1, dtype=torch.int64, device="cuda")
    counts = torch.zeros(1, dtype=torch.int64, device="cuda")
    pt.all_to_all_v_dev(out, send, counts, recv)  # compiles outside the capture
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        counts.copy_((step * 97) % 4097)  # a kernel decides the count
        pt.all_to_all_v_dev(out, send, counts, recv)
        step.add_(1)
    for _ in range(100):
        graph.replay()
    torch.cuda.synchronize()
    n = 99 * 97 % 4097
    assert step.item() == 100 and recv.item() == n
    assert torch.equal(out[:n], send[:n])


def _spawn(job) -> None:
    os.environ.update({"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"})
    run_group(1, "nccl", job)


def test_reduce_overhead_captures_purlin_operators_in_cuda_graphs():
    _spawn(_reduce_overhead)


def test_device_counts_all_to_all_v_in_a_cuda_graph_through_torch():
    _spawn(_device_counts_in_a_graph)
