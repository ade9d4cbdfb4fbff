"""purlin.torch on one GPU (several ranks in one purlin collective need
several GPUs, as processes sharing one GPU do not run concurrently): in one
nccl process, torch.compile with mode="reduce-overhead" captures purlin
operators in its CUDA graphs, and all_to_all_v_dev runs in a captured graph
with counts a kernel writes; two simulated nodes of one rank each (gloo
between them) run the hierarchical collectives on CUDA tensors. Skipped
without a GPU; run on the GPU machine with `pytest -m gpu`."""

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


def _purlin_backend_on_cuda(rank: int) -> None:
    import torch.distributed as dist

    import purlin.torch as pt
    from purlin.torch.groups import state

    pg = dist.new_group([0], backend="purlin")  # gloo and NCCL underneath, as torch makes them
    assert {d.type for d in pg._device_types} == {"cpu", "cuda"}
    x = torch.arange(8.0, device="cuda")
    dist.all_reduce(x, group=pg)
    dist.broadcast(x, 0, group=pg)  # NCCL's
    y = torch.empty(8, device="cuda")
    dist.all_gather_into_tensor(y, x, group=pg)
    assert torch.equal(y, torch.arange(8.0, device="cuda"))
    assert {k[0] for k in state(pg.group_name).plans} == {"cuda"}
    # Each bound to its regime's V kernel.
    assert {k[2] for k in state(pg.group_name).plans if k[1] == "regime"} == {"all_reduce_v", "all_gather_v"}
    # A call enqueued on a side stream; wait() makes the current stream wait for it.
    side = torch.cuda.Stream()
    big = torch.empty(1 << 24, device="cuda")
    with torch.cuda.stream(side):
        big.fill_(1.0)
        work = pt.all_reduce(big, group=pg, async_op=True)
    work.wait()
    assert big.sum().item() == 1 << 24
    assert work.get_future().wait()[0] is big and work.is_completed()


def _two_nodes_on_one_gpu(rank: int) -> None:
    import torch.distributed as dist

    import purlin.torch as pt
    from purlin.torch.groups import group_name, state

    torch.cuda.set_device(0)
    pt.init(ranks_per_node=1)
    st = state(group_name())
    assert (st.nodes.count, st.nodes.intra.world) == (2, 1)
    torch.manual_seed(rank)
    for n in (6, 7):
        x = torch.randint(-50, 50, (n,), dtype=torch.int32, device="cuda")
        ref = x.clone()
        dist.all_reduce(ref)
        assert torch.equal(pt.all_reduce(x.clone()), ref)
        g = pt.all_gather(torch.empty(2 * n, dtype=torch.int32, device="cuda"), x)
        parts = [torch.empty_like(x) for _ in range(2)]
        dist.all_gather(parts, x)
        assert torch.equal(g, torch.cat(parts))
        y = torch.arange(2 * n, dtype=torch.int32, device="cuda") + 100 * rank
        ref = torch.empty_like(y)
        dist.all_to_all_single(ref, y)
        assert torch.equal(pt.all_to_all(torch.empty_like(y), y), ref)
    counts = [[1, 2], [3, 0]]
    send = torch.full((sum(counts[rank]),), float(rank), device="cuda")
    recv = torch.empty(2, dtype=torch.int64, device="cuda")
    got = pt.all_to_all_v_dev(torch.full((8,), -1.0, device="cuda"), send, torch.tensor(counts[rank], device="cuda"),
                              recv)
    column = [counts[s][rank] for s in range(2)]
    assert recv.tolist() == column
    assert got.tolist() == [float(s) for s in range(2) for _ in range(column[s])] + [-1.0] * (8 - sum(column))
    assert {k[0] for k in st.nodes.intra.plans} == {"cuda"}


def _spawn(job, world: int = 1, backend: str = "nccl") -> None:
    os.environ.update({"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"})
    run_group(world, backend, job)


def test_reduce_overhead_captures_purlin_operators_in_cuda_graphs():
    _spawn(_reduce_overhead)


def test_device_counts_all_to_all_v_in_a_cuda_graph_through_torch():
    _spawn(_device_counts_in_a_graph)


def test_a_purlin_backend_group_runs_cuda_tensors_and_its_work_orders_streams():
    _spawn(_purlin_backend_on_cuda)


def test_hierarchical_collectives_on_cuda_tensors_over_two_simulated_nodes():
    _spawn(_two_nodes_on_one_gpu, world=2, backend="gloo")
