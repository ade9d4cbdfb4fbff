"""CUDA tensors that every rank of a group maps, where purlin's collectives
move data in place (no staging), as NCCL's registered windows and torch's
symmetric memory do:

    x = pt.empty(4096, 1024, dtype=torch.bfloat16)   # collective: every rank alike
    pt.all_reduce(x)                                  # the peers read and write x in place

    pt.free(x)                                        # collective too: a later empty reuses the block
    pt.register(w)                                    # a tensor of the caller's, mapped by every rank

A collective on CUDA whose input and output both lie in such memory (the
same tensors, or views at the same offsets, on every rank) runs the
symmetric lowering; any other call stages through purlin's own memory as
before. `empty` carves arenas of ARENA_BYTES (larger for a larger tensor)
that purlin allocates, first fit (purlin.torch.mapped), and `free` gives a
block back; a registered tensor is mapped where it is. All three are
collective, checked on the group's call board (every rank makes the same
calls in the same order, so every rank's allocator hands out the same
offsets). Arenas and registrations stay mapped until the process exits, so
the peers' mappings of them stay valid.

On CPU ranks (cpu tensors, a gloo group) the same calls are checked alike
but map nothing: `empty` gives an ordinary tensor, `register` and `free`
leave theirs to torch, and the collectives stage through the communicators'
shared memory as for any cpu tensor, so code written for mapped memory runs
unchanged on CPU ranks.
"""

from __future__ import annotations

import math

import torch

from purlin.dtypes import DTYPE_BYTES
from purlin.runtime.heap import ALIGN, DeviceHeap
from purlin.torch.execute import dtype_name
from purlin.torch.groups import GroupState, group_name, state
from purlin.torch.mapped import GroupMemory

# Bytes of each arena `empty` carves (a tensor larger than this gets one of its own size).
ARENA_BYTES = 64 << 20


def empty(*size, dtype: torch.dtype | None = None, device=None, group=None) -> torch.Tensor:
    """An uninitialised tensor of `size` (ints or one tuple, as torch.empty
    takes) in memory every rank of `group` maps (see the module); collective.
    `device`: by default the current CUDA device, or the CPU where there is none."""
    dims = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)) else size
    return _empty(state(group_name(group)), dims, dtype or torch.get_default_dtype(), device)


def free(tensor: torch.Tensor, group=None) -> None:
    """Gives `tensor`, which `empty` returned, back to `group`'s memory for later
    `empty` calls to hand out (the tensor must not be used after); collective,
    in the same order on every rank, as `empty` is."""
    _free(state(group_name(group)), tensor)


def register(tensor: torch.Tensor, group=None) -> None:
    """Maps `tensor` (contiguous CUDA memory of torch's allocator) on every rank
    of `group` (see the module); collective."""
    _register(state(group_name(group)), tensor)


def _memory(st: GroupState) -> GroupMemory:
    if st.memory is None:
        st.memory = GroupMemory()
    return st.memory


def _device(device) -> torch.device:
    """The device `device` names: by default the current CUDA device, or the CPU where there is none."""
    if device is None:
        return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    d = torch.device(device)
    if d.type == "cuda" and d.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    if d.type not in ("cuda", "cpu"):
        raise ValueError(f"purlin.torch.empty: purlin's collectives run on cuda and cpu tensors, got device {d}")
    return d


def _empty(st: GroupState, size: tuple[int, ...], dtype: torch.dtype, device) -> torch.Tensor:
    """An uninitialised tensor of `size` in group `st`'s memory (see the module)."""
    if any(not isinstance(n, int) or n < 0 for n in size):
        raise ValueError(f"purlin.torch.empty: sizes must be non-negative ints, got {tuple(size)}")
    name = dtype_name(torch.empty(0, dtype=dtype))
    d = _device(device)
    elems = math.prod(size)
    st = st.nodes.intra if st.nodes is not None else st
    st.agree_call("empty", name, elems)
    if d.type == "cpu":
        return torch.empty(size, dtype=dtype)
    index = d.index
    mem = _memory(st)
    t = mem.carve(elems, name, index)
    if t is None:
        with torch.cuda.device(index):
            arena = DeviceHeap(max(ARENA_BYTES, elems * DTYPE_BYTES[name] + ALIGN), group=st.group, device=index,
                               rank=st.rank, name=f"purlin.torch {st.name} memory")
        mem.add(arena, arena=True)
        t = mem.carve(elems, name, index)
    return t.view(size)


def _free(st: GroupState, tensor: torch.Tensor) -> None:
    """Gives `tensor` (as purlin.torch.empty returned it) back to group `st`'s arenas."""
    st = st.nodes.intra if st.nodes is not None else st
    st.agree_call("free", dtype_name(tensor), tensor.numel())
    if tensor.device.type == "cpu":
        return
    if st.memory is None or not st.memory.free(tensor.data_ptr()):
        raise ValueError("purlin.torch.free takes a tensor purlin.torch.empty returned (not a view of one part way "
                         "in), not yet freed")


def _register(st: GroupState, tensor: torch.Tensor) -> None:
    """Maps `tensor` on every rank of group `st` (see the module)."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"purlin.torch.register takes a tensor, got {type(tensor).__name__}")
    st = st.nodes.intra if st.nodes is not None else st
    st.agree_call("register", dtype_name(tensor), tensor.numel())
    if tensor.device.type == "cpu":
        return
    heap = DeviceHeap.register(tensor, group=st.group, rank=st.rank, name=f"purlin.torch {st.name} registered")
    _memory(st).add(heap)

