"""purlin.torch.empty, free and register on CUDA, one rank per process (a gloo group
for the exchanges; the ranks share GPU rank % GPUs, taking turns on one):
collectives whose buffers lie in that memory run the symmetric lowering in
place, equal to the reference, also replayed from a CUDA graph; a rank whose
buffer lies outside it makes a call its peers do not, which fails every rank
with CallMismatchError. Skipped without a GPU."""

from __future__ import annotations

import pytest
import torch
from process_group import run_group

from purlin.runtime import default_backend

GPUS = torch.cuda.device_count() if default_backend() == "cuda" else 0
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(GPUS < 1, reason="needs the CUDA backend and a GPU")]

NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def _symmetric_kept() -> list[bool]:
    from purlin.torch.groups import kept

    return [comm.plan.symmetric for st in kept() for comm in st.plans.values()]


def _in_place(rank: int, world: int) -> None:
    import purlin.torch as pt

    torch.cuda.set_device(rank % GPUS)
    pt.init(timeout_s=60.0)
    n = 1 << 16  # 128 KiB of bf16: the throughput regime, moved in place between the ranks' tensors
    x = pt.empty(n, dtype=torch.bfloat16)
    base = torch.arange(n, device="cuda", dtype=torch.float32) % 61
    x.copy_(base + rank)
    pt.all_reduce(x)
    want = (world * base + sum(range(world))).to(torch.bfloat16)
    torch.testing.assert_close(x, want, rtol=0, atol=0)
    # Freed, its block is the next one empty hands out, and reduces again through the same communicator.
    at = x.data_ptr()
    pt.free(x)
    x = pt.empty(n, dtype=torch.bfloat16)
    assert x.data_ptr() == at
    x.copy_(base + rank)
    pt.all_reduce(x)
    torch.testing.assert_close(x, want, rtol=0, atol=0)
    gathered = pt.empty(world, 4096, dtype=torch.float32)
    part = pt.empty(4096, dtype=torch.float32)
    part.fill_(rank + 1)
    pt.all_gather(gathered, part)
    ranks = torch.arange(1, world + 1, device="cuda", dtype=torch.float32)
    assert torch.equal(gathered, ranks[:, None].expand(-1, 4096))
    # A tensor of torch's allocator, registered, reduced in place and from a graph.
    w = torch.full((8192,), float(rank), device="cuda")
    pt.register(w)
    graph = torch.cuda.CUDAGraph()
    pt.all_reduce(w)  # compiled and connected before the capture
    with torch.cuda.graph(graph, capture_error_mode="relaxed"):
        pt.all_reduce(w)
    graph.replay()
    torch.cuda.synchronize()
    # The eager call leaves the ranks' sum, world * (world - 1) / 2; the replay multiplies it by world.
    assert torch.equal(w, torch.full_like(w, world * world * (world - 1) / 2))
    assert all(_symmetric_kept()) and len(_symmetric_kept()) == 3


def _elsewhere(rank: int, world: int) -> None:
    import purlin.torch as pt

    torch.cuda.set_device(rank % GPUS)
    pt.init(timeout_s=60.0)
    x = pt.empty(1 << 16, dtype=torch.bfloat16)
    mine = x if rank else torch.empty_like(x)
    with pytest.raises(pt.CallMismatchError):
        pt.all_reduce(mine)


@pytest.mark.parametrize("job", [_in_place, _elsewhere])
def test_purlin_torch_memory(job, monkeypatch):
    for k, v in NO_MULTICAST.items():
        monkeypatch.setenv(k, v)
    run_group(2, "gloo", job, (2,))
