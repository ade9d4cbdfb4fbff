"""purlin collectives on torch tensors, one process per GPU (torchrun).

    import purlin.torch as pt
    pt.init()                       # after torch.distributed.init_process_group
    pt.all_reduce(x)                # instead of torch.distributed.all_reduce(x)

Each call runs on the current CUDA stream and is capturable in CUDA graphs.
The V collectives take each rank's tensors at that rank's own size and run on
them directly, with no scratch copies.
Plans are compiled once per (collective, sizes, dtype, op, world, generation,
lowering) and cached with their symmetric memory; the first call with a new
shape is collective (every rank must make it), later ones cost no compilation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from purlin.coll.dialect import DTYPES, ReduceKind
from purlin.compile import arch_of_device, compile_plan
from purlin.runtime.process import ProcessCommunicator

# Every purlin dtype this torch build has.
_DTYPES = {getattr(torch, d.array_name): d.name for d in DTYPES if hasattr(torch, d.array_name)}
_OPS = tuple(k.value for k in ReduceKind)


@dataclass
class _State:
    group: Any
    rank: int
    world: int
    arch: str
    timeout_s: float
    plans: dict[tuple, ProcessCommunicator] = field(default_factory=dict)


_state: _State | None = None


def init(group: Any = None, arch: str | None = None, timeout_s: float = 10.0) -> None:
    """Bind purlin to a torch.distributed process group (default: the world)."""
    global _state
    if not dist.is_initialized():
        raise RuntimeError("purlin.torch.init needs torch.distributed.init_process_group first")
    group = group or dist.group.WORLD
    _state = _State(group, dist.get_rank(group), dist.get_world_size(group),
                    arch or arch_of_device(torch.cuda.current_device()), timeout_s)


def _current() -> _State:
    if _state is None:
        raise RuntimeError("call purlin.torch.init() first")
    return _state


def _dtype(t: torch.Tensor) -> str:
    try:
        return _DTYPES[t.dtype]
    except KeyError:
        raise TypeError(f"purlin does not move {t.dtype}; use one of {', '.join(map(str, _DTYPES))}") from None


def _communicator(collective: str, dtype: str, op: str | None, count: int = 0,
                  counts: Sequence | None = None, lowering: str = "",
                  deterministic: bool = False, in_place: bool = False) -> ProcessCommunicator:
    st = _current()
    if op is not None and op not in _OPS:
        raise ValueError(f"unknown reduction {op!r}, expected one of {', '.join(_OPS)}")
    key = (collective, dtype, op, count, repr(counts), lowering, deterministic, in_place)
    comm = st.plans.get(key)
    if comm is None:
        plan = compile_plan(collective, st.world, dtype, op, count, counts=counts, arch=st.arch,
                            lowering=lowering, deterministic=deterministic, in_place=in_place)
        comm = ProcessCommunicator(plan, group=st.group, timeout_s=st.timeout_s, name=collective)
        st.plans[key] = comm
    return comm


def _flat(t: torch.Tensor, what: str) -> torch.Tensor:
    if not t.is_cuda or not t.is_contiguous():
        raise ValueError(f"{what} must be a contiguous CUDA tensor")
    return t.view(-1)


def all_reduce(tensor: torch.Tensor, op: str = "sum", *, out: torch.Tensor | None = None,
               deterministic: bool = False, lowering: str = "") -> torch.Tensor:
    """Like torch.distributed.all_reduce: in place (lowered in place: each slice
    is staged before it is overwritten), or into `out`."""
    x = _flat(tensor, "tensor")
    y = x if out is None else _flat(out, "out")
    _check(y.numel() == x.numel() and y.dtype == x.dtype, "out must have the tensor's size and dtype")
    in_place = y.data_ptr() == x.data_ptr()
    _communicator("all_reduce", _dtype(x), op, x.numel(), lowering=lowering, deterministic=deterministic,
                  in_place=in_place).run(x, y)
    return tensor if out is None else out


def all_gather(output: torch.Tensor, input: torch.Tensor, *, lowering: str = "") -> torch.Tensor:
    """Like torch.distributed.all_gather_into_tensor."""
    x, y = _flat(input, "input"), _flat(output, "output")
    _check(y.numel() == _current().world * x.numel(), "output must hold world x input elements")
    _communicator("all_gather", _dtype(x), None, x.numel(), lowering=lowering).run(x, y)
    return output


def reduce_scatter(output: torch.Tensor, input: torch.Tensor, op: str = "sum", *,
                   deterministic: bool = False, lowering: str = "") -> torch.Tensor:
    """Like torch.distributed.reduce_scatter_tensor."""
    x, y = _flat(input, "input"), _flat(output, "output")
    _check(x.numel() == _current().world * y.numel(), "input must hold world x output elements")
    _communicator("reduce_scatter", _dtype(x), op, y.numel(), lowering=lowering,
                  deterministic=deterministic).run(x, y)
    return output


def all_to_all(output: torch.Tensor, input: torch.Tensor, *, lowering: str = "") -> torch.Tensor:
    """Like torch.distributed.all_to_all_single with equal splits."""
    x, y = _flat(input, "input"), _flat(output, "output")
    w = _current().world
    _check(x.numel() == y.numel() and x.numel() % w == 0,
           f"input and output must have the same size, divisible by world {w}")
    _communicator("all_to_all", _dtype(x), None, x.numel() // w, lowering=lowering).run(x, y)
    return output


def all_gather_v(output: torch.Tensor, input: torch.Tensor, counts: Sequence[int], *,
                 lowering: str = "") -> torch.Tensor:
    """Rank r contributes counts[r] elements; output holds them in rank order."""
    x, y = _flat(input, "input"), _flat(output, "output")
    comm = _communicator("all_gather_v", _dtype(x), None, counts=list(counts), lowering=lowering)
    rank = _current().rank
    _check_size(x, counts[rank], f"input of rank {rank}", f"counts[{rank}]")
    _check_size(y, sum(counts), "output", "sum(counts)")
    comm.run(x, y)
    return output


def reduce_scatter_v(output: torch.Tensor, input: torch.Tensor, counts: Sequence[int],
                     op: str = "sum", *, lowering: str = "") -> torch.Tensor:
    """Rank r receives the reduction of slice r (counts[r] elements) of every input."""
    x, y = _flat(input, "input"), _flat(output, "output")
    comm = _communicator("reduce_scatter_v", _dtype(x), op, counts=list(counts), lowering=lowering)
    rank = _current().rank
    _check_size(x, sum(counts), "input", "sum(counts)")
    _check_size(y, counts[rank], f"output of rank {rank}", f"counts[{rank}]")
    comm.run(x, y)
    return output


def all_to_all_v(output: torch.Tensor, input: torch.Tensor, counts: Sequence[Sequence[int]], *,
                 lowering: str = "") -> torch.Tensor:
    """counts[s][d] elements go from rank s to rank d, packed in rank order on both sides."""
    x, y = _flat(input, "input"), _flat(output, "output")
    comm = _communicator("all_to_all_v", _dtype(x), None, counts=[list(r) for r in counts],
                         lowering=lowering)
    rank = _current().rank
    _check_size(x, sum(counts[rank]), f"input of rank {rank}", f"sum(counts[{rank}])")
    _check_size(y, sum(row[rank] for row in counts), f"output of rank {rank}", f"column {rank} of counts summed")
    comm.run(x, y)
    return output


def _check_size(t: torch.Tensor, need: int, what: str, rule: str) -> None:
    """A rank's tensor of a V collective holds at least what this rank moves (its plan extent)."""
    _check(t.numel() >= need, f"{what} must hold {rule} = {need} elements, it has {t.numel()}")


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(f"purlin.torch: {message}")
