"""purlin.torch's hot-call policy: a CUDA latency communicator called
`specialise_after` times loads its kernel with this rank's tables compiled in,
never while a graph is being captured, and only at the worlds where that was
measured faster. On the CPU: which communicators qualify (real lowerings) and
the counting; on a GPU (ranks of gloo processes sharing GPU rank % GPUs): one
rank specialised, its peer not, graphs captured before and during the count
replayed after, every result equal to the reference."""

from __future__ import annotations

import pytest
import torch
from process_group import run_group

import purlin.torch as pt
from purlin.compile import compile_collective
from purlin.conversion.cost_model import THRESHOLDS
from purlin.runtime import default_backend
from purlin.torch.cache import limits
from purlin.torch.groups import GroupState

GPUS = torch.cuda.device_count() if default_backend() == "cuda" else 0
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def _state(world: int) -> GroupState:
    return GroupState(group=None, name="g", rank=0, world=world, arch="sm_90", timeout_s=1.0)


@pytest.mark.parametrize("world, count, want", [
    (2, 64, True),  # 256 B a rank: packets
    (THRESHOLDS["sm_90"].specialise_max_world, 1024, True),
    (THRESHOLDS["sm_90"].specialise_max_world + 1, 64, False),  # measured slower there
    (2, 1 << 20, False),  # 4 MiB: staged throughput, no packet windows
])
def test_which_communicators_specialise(world, count, want):
    c = compile_collective("all_reduce", world, "f32", "sum", count, arch="sm_90", verify_steps=False)
    st = _state(world)
    assert st._specialisable(c.plan, c.cuda) is want
    # The CPU backend's communicators have no kernel.
    assert not st._specialisable(c.plan, None)


class _Comm:
    def __init__(self, hot: int, fails: bool = False):
        self.purlin_hot, self.fails, self.loaded = hot, fails, 0

    def specialise(self) -> None:
        if self.fails:
            raise ValueError("c: its kernel cannot be specialised: why")
        self.loaded += 1


def test_counts_calls_and_waits_out_a_capture(monkeypatch):
    capturing = [False]
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: capturing[0])
    st, comm = _state(2), _Comm(3)
    st._warm(comm)
    st._warm(comm)
    assert (comm.purlin_hot, comm.loaded) == (1, 0)
    capturing[0] = True
    st._warm(comm)
    st._warm(comm)
    assert (comm.purlin_hot, comm.loaded) == (1, 0)
    capturing[0] = False
    st._warm(comm)
    assert (comm.purlin_hot, comm.loaded) == (0, 1)


def test_a_kernel_that_cannot_be_specialised_warns_and_keeps_its_own(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    comm = _Comm(1, fails=True)
    with pytest.warns(RuntimeWarning, match="cannot be specialised: why; it keeps its generic kernel"):
        _state(2)._warm(comm)
    assert comm.purlin_hot == 0


@pytest.mark.parametrize("bad", [-1, 1.5, True, "8"])
def test_set_specialise_after_takes_a_count(bad):
    with pytest.raises(ValueError, match=r"set_specialise_after: calls must be an integer >= 0"):
        pt.set_specialise_after(bad)


def test_specialising_decides_the_latency_lowering_and_is_in_the_call_header(monkeypatch):
    from purlin.torch.board import FLAGS, header

    top = THRESHOLDS["sm_90"].specialise_max_world
    monkeypatch.setattr(limits, "specialise_after", 4)
    assert _state(2).specialising() and _state(top).specialising()
    assert not _state(top + 1).specialising()  # measured slower there: latency sizes stay bound
    monkeypatch.setattr(limits, "specialise_after", 0)
    assert not _state(2).specialising()
    # Ranks that differ lower a latency call differently: their headers differ, so the call board says so.
    on, off = (header("all_gather", "f32", None, 8, repr(None), "", False, False, True, s) for s in (True, False))
    assert on != off and FLAGS[-1] == "specialising"


def test_set_specialise_after_sets_the_limit():
    before = limits.specialise_after
    try:
        pt.set_specialise_after(0)
        assert limits.specialise_after == 0
    finally:
        pt.set_specialise_after(before)


def _hot_calls(rank: int, world: int) -> None:
    from purlin.torch.groups import kept

    torch.cuda.set_device(rank % GPUS)
    pt.init(timeout_s=60.0)
    # Every rank opts in (it decides how latency calls are lowered); rank 0 alone specialises within
    # these calls (after its fourth), rank 1 not: the protocol is the same.
    pt.set_specialise_after(4 if rank == 0 else 1 << 20)
    base = torch.arange(64, device="cuda", dtype=torch.float32)
    want = world * base + sum(range(world))
    x = torch.empty(64, device="cuda")

    def called() -> None:
        x.copy_(base + rank)
        pt.all_reduce(x)
        torch.testing.assert_close(x, want, rtol=0, atol=0)

    called()  # lowered: counts 4 from here
    called()
    called()
    (comm,) = [c for st in kept() for c in st.plans.values()]
    graphs = [torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()]
    for graph in graphs:  # the count reaches its end inside the second capture: put off
        with torch.cuda.graph(graph, capture_error_mode="relaxed"):
            pt.all_reduce(x)
    assert not comm.specialised
    called()
    assert comm.specialised is (rank == 0)
    for graph in graphs:
        x.copy_(base + rank)
        graph.replay()
        torch.testing.assert_close(x, want, rtol=0, atol=0)
    for _ in range(3):
        called()


@pytest.mark.gpu
@pytest.mark.skipif(GPUS < 1, reason="needs the CUDA backend and a GPU")
@pytest.mark.parametrize("world", [2, 3])
def test_hot_calls_specialise_on_gpu(world, monkeypatch):
    for k, v in NO_MULTICAST.items():
        monkeypatch.setenv(k, v)
    run_group(world, "gloo", _hot_calls, (world,))
