"""purlin.torch on CUDA: all_gather, reduce_scatter, all_to_all, all_reduce
and the V forms run their V kernel (all_reduce: all_reduce_v) lowered once
per regime, each size a binding of it chosen at the call
(purlin.torch.regimes), in the latency regime and the throughput one. Ranks
are gloo processes sharing GPU rank % GPUs. Every result equals the
reference, all_reduce in place too (odd sizes: slices off vector
alignment); the sweep of sizes lowers one kernel per collective and regime
(and all_reduce's in place), its tensors of torch's allocator (staged) or of
pt.empty (in place between the ranks' buffers); a graph captured at one size
replays its own binding after calls of others. Skipped without a GPU."""

from __future__ import annotations

import pytest
import torch
from process_group import run_group

from purlin.runtime import default_backend

GPUS = torch.cuda.device_count() if default_backend() == "cuda" else 0
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(GPUS < 1, reason="needs the CUDA backend and a GPU")]

NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
# Elements of f32 a rank, odd ones among them: from one element through the latency regime (64 KiB a
# rank's input) into the throughput one.
SIZES = (1, 5, 300, 4099, 16411, 65536, 100003)


def _seeded(n: int, rank: int, salt: int) -> torch.Tensor:
    return ((torch.arange(n, device="cuda", dtype=torch.float32) * 7 + 13 * rank + salt) % 97)


def _sweep(rank: int, world: int, in_place: bool) -> None:
    import purlin.torch as pt
    from purlin.compile import arch_of_device
    from purlin.torch.regimes import regime

    torch.cuda.set_device(rank % GPUS)
    pt.init(timeout_s=60.0)
    alloc = pt.empty if in_place else (lambda *shape: torch.empty(*shape, device="cuda"))
    arch = arch_of_device(torch.cuda.current_device())
    kernels = set()

    def kernel(collective: str, extent: int, *how) -> None:
        kernels.add((collective, regime(collective, world, "f32", extent, arch).name, *how))

    lowered = pt.cache_stats()["lowerings"]
    for salt, n in enumerate(SIZES):
        x = alloc(n)
        x.copy_(_seeded(n, rank, salt))
        y = alloc(world * n)
        pt.all_gather(y, x)
        torch.testing.assert_close(y, torch.cat([_seeded(n, r, salt) for r in range(world)]), rtol=0, atol=0)
        kernel("all_gather_v", n)

        x = alloc(world * n)
        x.copy_(_seeded(world * n, rank, salt))
        y = alloc(n)
        pt.reduce_scatter(y, x)
        whole = sum(_seeded(world * n, r, salt) for r in range(world))
        torch.testing.assert_close(y, whole[rank * n:(rank + 1) * n], rtol=0, atol=0)
        kernel("reduce_scatter_v", world * n)

        y = alloc(world * n)
        pt.all_to_all(y, x)
        torch.testing.assert_close(y, torch.cat([_seeded(world * n, r, salt)[rank * n:(rank + 1) * n]
                                                 for r in range(world)]), rtol=0, atol=0)
        kernel("all_to_all_v", world * n)

        y = alloc(world * n)
        pt.all_reduce(x, out=y)
        torch.testing.assert_close(y, whole, rtol=0, atol=0)
        kernel("all_reduce_v", world * n, "apart")
        pt.all_reduce(x)
        torch.testing.assert_close(x, whole, rtol=0, atol=0)
        kernel("all_reduce_v", world * n, "in place")

        counts = [n + 3 * r for r in range(world)]
        # pt.empty is collective (every rank the same size): each rank sends the first counts[rank].
        x = alloc(max(counts))[:counts[rank]]
        x.copy_(_seeded(counts[rank], rank, salt))
        y = alloc(sum(counts))
        pt.all_gather_v(y, x, counts)
        torch.testing.assert_close(y, torch.cat([_seeded(c, r, salt) for r, c in enumerate(counts)]), rtol=0, atol=0)
        kernel("all_gather_v", max(counts))
    # One V kernel per collective and regime for every size (all_gather and all_gather_v share theirs).
    assert pt.cache_stats()["lowerings"] - lowered == len(kernels), sorted(kernels)


def _graph_keeps_its_binding(rank: int, world: int) -> None:
    import purlin.torch as pt

    torch.cuda.set_device(rank % GPUS)
    pt.init(timeout_s=60.0)
    small, large = SIZES[0], SIZES[2]
    x = _seeded(small, rank, 0)
    y = torch.empty(world * small, device="cuda")
    pt.all_gather(y, x)  # bound and uploaded before the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, capture_error_mode="relaxed"):
        pt.all_gather(y, x)
    big = _seeded(large, rank, 1)
    out = torch.empty(world * large, device="cuda")
    pt.all_gather(out, big)
    torch.testing.assert_close(out, torch.cat([_seeded(large, r, 1) for r in range(world)]), rtol=0, atol=0)
    y.zero_()
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.cat([_seeded(small, r, 0) for r in range(world)]), rtol=0, atol=0)


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("in_place", [False, True], ids=["staged", "in-place"])
def test_sizes_bind_one_kernel_per_collective(world, in_place, monkeypatch):
    for k, v in NO_MULTICAST.items():
        monkeypatch.setenv(k, v)
    run_group(world, "gloo", _sweep, (world, in_place))


def test_a_graph_keeps_its_binding(monkeypatch):
    for k, v in NO_MULTICAST.items():
        monkeypatch.setenv(k, v)
    run_group(2, "gloo", _graph_keeps_its_binding, (2,))
