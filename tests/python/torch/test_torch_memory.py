"""purlin.torch.memory without a GPU: `empty` carving arenas every rank maps
(first fit, `free` giving blocks back), `register`, and a CUDA call whose
input and output lie there compiling the symmetric lowering over those heaps
(keyed by them, and named on the call board), against stand-ins for the
heaps, the call board and the C++ communicator; and on CPU ranks (gloo), the
same calls checked alike, running on ordinary tensors. GPU runs:
tests/python/torch/test_torch_memory_gpu.py."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from purlin.torch import groups, mapped, memory  # noqa: E402
from purlin.torch.board import CallMismatchError  # noqa: E402

FAKE_CUDA = torch.device("cuda", 0)


class FakeHeap:
    """A heap of `nbytes` at a made-up address, carved as DeviceHeap.alloc carves."""

    serials = iter(range(1, 1 << 20))
    bases = iter(range(1 << 40, 1 << 50, 1 << 32))

    def __init__(self, nbytes, group=None, device=None, rank=None, name="heap"):
        self.nbytes, self.device, self.name, self.used = nbytes, device, name, 0
        self.serial, self.base, self.tensor = next(self.serials), next(self.bases), None

    @classmethod
    def register(cls, tensor, group=None, rank=None, name="registered"):
        heap = cls(tensor.numel() * tensor.element_size(), name=name)
        heap.tensor, heap.used = tensor, heap.nbytes
        heap.base = tensor.data_ptr()
        return heap

    def handle(self):
        return self



class FakeTensor:
    """A CUDA tensor's address and size (bf16)."""

    def __init__(self, ptr, n):
        self.ptr, self.n, self.device, self.dtype = ptr, n, FAKE_CUDA, torch.bfloat16
        self.is_cuda, self.is_cpu = True, False

    def data_ptr(self):
        return self.ptr

    def numel(self):
        return self.n

    def element_size(self):
        return 2

    def view(self, size):
        self.size = size
        return self


class FakeBoard:
    def __init__(self):
        self.agreed, self.posted, self.refuse = [], [], None

    def agree(self, head):
        if self.refuse is not None and head[0].rstrip(b"\0") == self.refuse:
            raise CallMismatchError("rank 1 made another call")
        self.agreed.append(head)

    def post(self, head):
        self.posted.append(head)


class FakeCommunicator:
    made: list = []

    def __init__(self, plan, **kw):
        self.plan, self.kw, self.runs, self.world, self.backend = plan, kw, [], plan.world, kw["backend"]
        FakeCommunicator.made.append(self)

    def run_tensors(self, x, y):
        self.runs.append((x.data_ptr(), y.data_ptr()))


@pytest.fixture
def st(monkeypatch):
    monkeypatch.setattr(memory, "DeviceHeap", FakeHeap)
    monkeypatch.setattr(mapped, "device_view", lambda at, elems, dtype, device: FakeTensor(at, elems))
    monkeypatch.setattr(memory, "_device", lambda device: torch.device("cuda", 0))
    monkeypatch.setattr(memory.torch.cuda, "device", lambda d: _Device())
    monkeypatch.setattr(groups, "ProcessCommunicator", FakeCommunicator)
    FakeCommunicator.made = []
    state = groups.GroupState(None, "g", 0, 2, "sm_90", 10.0)
    state.board = FakeBoard()
    monkeypatch.setattr(state, "call_board", lambda: state.board)
    return state


class _Device:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def test_empty_carves_arenas_every_rank_asks_for_alike(st):
    a = memory._empty(st, (4, 8), torch.bfloat16, None)
    b = memory._empty(st, (3,), torch.bfloat16, None)
    (arena,) = st.memory.heaps
    assert arena.nbytes == memory.ARENA_BYTES and (a.ptr, b.ptr) == (arena.base, arena.base + 256)
    assert a.size == (4, 8)
    # Larger than an arena: one of its own size.
    big = memory._empty(st, (memory.ARENA_BYTES // 2 + 1,), torch.bfloat16, None)
    assert len(st.memory.heaps) == 2 and st.memory.heaps[1].nbytes == memory.ARENA_BYTES + 2 + 256
    assert big.ptr == st.memory.heaps[1].base
    # Each asked on the board, so ranks that ask for other sizes fail together.
    assert [(h[0].rstrip(b"\0"), h[3]) for h in st.board.agreed] == [(b"empty", 32), (b"empty", 3),
                                                                     (b"empty", memory.ARENA_BYTES // 2 + 1)]
    st.board.refuse = b"empty"
    with pytest.raises(CallMismatchError):
        memory._empty(st, (8,), torch.bfloat16, None)
    with pytest.raises(ValueError, match=r"purlin.torch.empty: sizes must be non-negative ints, got \(2, -1\)"):
        memory._empty(st, (2, -1), torch.bfloat16, None)
    with pytest.raises(TypeError, match="purlin does not move torch.complex64"):
        memory._empty(st, (2,), torch.complex64, None)


def test_free_blocks_are_reused_first_fit_and_merged(st):
    blocks = [memory._empty(st, (128,), torch.float32, None) for _ in range(4)]  # 512 bytes each
    (arena,) = st.memory.heaps
    assert [t.ptr - arena.base for t in blocks] == [0, 512, 1024, 1536]
    memory._free(st, blocks[1])
    memory._free(st, blocks[2])
    # The two freed neighbours merged: 1 KiB at 512, taken first fit before the arena's tail.
    again = memory._empty(st, (256,), torch.float32, None)
    assert again.ptr - arena.base == 512
    small = memory._empty(st, (1,), torch.float32, None)
    assert small.ptr - arena.base == 2048  # a block takes 256 bytes at least
    memory._free(st, blocks[0])
    with pytest.raises(ValueError, match="purlin.torch.free takes a tensor purlin.torch.empty returned"):
        memory._free(st, blocks[0])  # freed already
    with pytest.raises(ValueError, match="purlin.torch.free takes a tensor purlin.torch.empty returned"):
        memory._free(st, FakeTensor(arena.base + 8, 4))
    half = memory._empty(st, (2,), torch.float16, None)
    assert half.ptr == arena.base
    assert [h[0].rstrip(b"\0") for h in st.board.agreed].count(b"free") == 5
    # A whole arena given back is one block again.
    for t in (again, small, blocks[3], half):
        memory._free(st, t)
    assert st.memory._free[arena.serial] == [(0, arena.nbytes)]


def test_calls_in_mapped_memory_lower_symmetric_over_their_heaps(st):
    x = memory._empty(st, (4096,), torch.bfloat16, None)
    y = memory._empty(st, (4096,), torch.bfloat16, None)
    plain = FakeTensor(0x1000, 4096)
    mine = torch.empty(4096, dtype=torch.bfloat16, device="meta")  # address 0: the heap stand-in maps it there
    memory._register(st, mine)
    (arena, registered) = st.memory.heaps
    assert st.memory.holding(x, y) == (arena, arena)
    assert st.memory.holding(x, mine) == (arena, registered)
    assert st.memory.holding(x, plain) is None
    # A span running past its heap's end is not in it.
    assert st.memory.holding(FakeTensor(arena.base + arena.nbytes - 2, 2)) is None

    st.call(x, y, "all_reduce", "bf16", "sum", 4096)
    st.call(x, x, "all_reduce", "bf16", "sum", 4096, in_place=True)
    st.call(x, mine, "all_reduce", "bf16", "sum", 4096)
    st.call(x, plain, "all_reduce", "bf16", "sum", 4096)
    sym, in_place, both, staged = FakeCommunicator.made
    assert sym.plan.symmetric and in_place.plan.symmetric and both.plan.symmetric and not staged.plan.symmetric
    assert sym.kw["heap"] == [arena] and both.kw["heap"] == [arena, registered] and staged.kw["heap"] is None
    # The heaps are named on the board: a rank whose buffers lie elsewhere makes another call.
    assert len(set(st.board.agreed[-4:])) == 4 and st.board.agreed[-4][5] != st.board.agreed[-1][5]
    assert st.board.agreed[-4][5] != st.board.agreed[-2][5]
    # Hits: the same heaps find the same communicator, other heaps another.
    st.call(x, y, "all_reduce", "bf16", "sum", 4096)
    assert len(FakeCommunicator.made) == 4 and sym.runs == [(x.ptr, y.ptr)] * 2 and st.board.posted
    # One lowering serves any heaps: the symmetric plan is lowered once.
    assert sym.plan is both.plan


def test_devices_are_cuda_or_cpu():
    assert memory._device("cpu") == torch.device("cpu")
    assert memory._device(None).type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="purlin.torch.empty: purlin's collectives run on cuda and cpu tensors, "
                                         "got device meta"):
        memory._device("meta")


def test_register_takes_tensors(st):
    with pytest.raises(TypeError, match="purlin.torch.register takes a tensor, got list"):
        memory._register(st, [1, 2])


def _on_cpu_ranks(rank: int) -> None:
    import torch.distributed as dist

    import purlin.torch as pt

    pt.init()
    x = pt.empty(2, 500, dtype=torch.float32, device="cpu")
    assert x.shape == (2, 500) and x.device.type == "cpu"
    x.copy_(torch.arange(1000.0).view(2, 500) * (rank + 1))
    want = x.clone()
    dist.all_reduce(want)
    pt.register(x)
    pt.all_reduce(x)
    assert torch.equal(x, want)
    pt.free(x)
    with pytest.raises(pt.CallMismatchError):
        pt.empty(8 + rank, device="cpu")


def test_the_calls_run_on_cpu_ranks():
    from process_group import fork_gloo

    fork_gloo(2, _on_cpu_ranks)


def test_a_call_lowers_without_the_step_checks(st, monkeypatch):
    import purlin.compile

    asked = []
    real = purlin.compile.compile_collective

    def recording(*args, **kwargs):
        asked.append(kwargs.get("verify_steps", True))
        return real(*args, **kwargs)

    monkeypatch.setattr(purlin.compile, "compile_collective", recording)
    x = FakeTensor(0x2000, 3 * 1000)
    st.call(x, x, "all_reduce", "bf16", "sum", 3 * 1000, in_place=True)
    # Lowered at run time, size by size: the module is verified once, not after every pass.
    assert asked == [False]
