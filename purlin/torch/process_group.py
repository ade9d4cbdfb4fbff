"""A torch.distributed process group whose collectives run on purlin, so that
torch's own calls on it (torch.distributed.all_reduce, the functional
collectives _c10d_functional.all_reduce, all_gather_into_tensor,
reduce_scatter_tensor, all_to_all_single, as DTensor and torch.compile emit
them) go to purlin:

    pg = purlin.torch.route(group)      # every rank of the world calls it
    funcol.all_reduce(x, "sum", pg)     # purlin

What purlin does not run (other collectives, ops it has no reduction for,
uneven all_to_all splits, p2p) goes to `group` itself.
"""

from __future__ import annotations

from typing import Any

import torch.distributed as dist
from torch.futures import Future

from purlin.coll.attributes import ReduceKind, check_reduce_dtype
from purlin.torch.execute import TORCH_NAMES, all_gather, all_reduce, all_to_all, reduce_scatter
from purlin.torch.groups import TORCH_OPS, init, state

BACKEND = "purlin"
_OPS_OF = {v: k for k, v in TORCH_OPS.items()}


class _Done(dist._Work):
    """purlin's work is ordered on the caller's stream when the call returns."""

    def __init__(self, result: Any) -> None:
        super().__init__()
        self._future: Future = Future()
        self._future.set_result(result)

    def wait(self, timeout: Any = None) -> bool:
        return True

    def get_future(self) -> Future:
        return self._future


class PurlinProcessGroup(dist.ProcessGroup):
    def __init__(self, rank: int, size: int, fallback: Any) -> None:
        super().__init__(rank, size)
        self.fallback = fallback
        self._name = self._desc = ""

    def getBackendName(self) -> str:
        return BACKEND

    def setGroupName(self, name: str) -> None:
        self._name = name

    def getGroupName(self) -> str:
        return self._name

    def setGroupDesc(self, desc: str) -> None:
        self._desc = desc

    def getGroupDesc(self) -> str:
        return self._desc

    def _state(self):
        return state(self.fallback.group_name)

    def allreduce(self, tensors, opts):
        op = _purlin_op(opts.reduceOp, tensors)
        if op is None or not _runnable(tensors):
            return self.fallback.allreduce(tensors, opts)
        for t in tensors:
            flat = t.view(-1)
            all_reduce(self._state(), flat, flat, op, False, "")
        return _Done(tensors)

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts):
        if not _runnable([*outputs, *inputs]):
            return self.fallback.allgather_into_tensor_coalesced(outputs, inputs, opts)
        for y, x in zip(outputs, inputs):
            all_gather(self._state(), x.view(-1), y.view(-1), "")
        return _Done(outputs)

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts):
        op = _purlin_op(opts.reduceOp, inputs)
        if op is None or not _runnable([*outputs, *inputs]):
            return self.fallback.reduce_scatter_tensor_coalesced(outputs, inputs, opts)
        for y, x in zip(outputs, inputs):
            reduce_scatter(self._state(), x.view(-1), y.view(-1), op, False, "")
        return _Done(outputs)

    def alltoall_base(self, output, input, output_splits, input_splits, opts):
        w = self.size()
        even = all(not s or len(set(s)) == 1 and sum(s) == t.numel() and len(s) == w
                   for s, t in ((output_splits, output), (input_splits, input)))
        if not (even and _runnable([output, input]) and input.numel() % w == 0 and self._state().nodes is None):
            return self.fallback.alltoall_base(output, input, output_splits, input_splits, opts)
        all_to_all(self._state(), input.view(-1), output.view(-1), "")
        return _Done([output])

    # Everything else is the fallback group's.
    def broadcast(self, tensors, opts):
        return self.fallback.broadcast(tensors, opts)

    def barrier(self, opts):
        return self.fallback.barrier(opts)

    def allgather(self, outputs, inputs, opts):
        return self.fallback.allgather(outputs, inputs, opts)

    def reduce_scatter(self, outputs, inputs, opts):
        return self.fallback.reduce_scatter(outputs, inputs, opts)

    def allreduce_coalesced(self, tensors, opts):
        return self.fallback.allreduce_coalesced(tensors, opts)

    def send(self, tensors, dst, tag):
        return self.fallback.send(tensors, dst, tag)

    def recv(self, tensors, src, tag):
        return self.fallback.recv(tensors, src, tag)


def _reduce_op(op: Any) -> Any:
    """opts.reduceOp is a ReduceOp object; the table holds its RedOpType."""
    return getattr(op, "op", op)


def _purlin_op(reduce_op: Any, tensors) -> str | None:
    """The purlin reduction for torch's `reduce_op` over `tensors`, or None where
    purlin has none or refuses it for their dtype (avg of integers, prod of
    fp8): the group underneath answers those as it would alone."""
    op = _OPS_OF.get(_reduce_op(reduce_op))
    if op is None:
        return None
    names = [TORCH_NAMES.get(t.dtype) for t in tensors]
    if any(n is None or check_reduce_dtype(ReduceKind(op), n) is not None for n in names):
        return None
    return op


def _runnable(tensors) -> bool:
    """Tensors purlin can move: dense, one device type, a dtype it has."""
    return all(t.is_contiguous() and t.device.type in ("cpu", "cuda") and t.dtype in TORCH_NAMES
               and t.numel() > 0 for t in tensors)


_fallbacks: list[Any] = []


def _create(store, rank: int, size: int, timeout) -> PurlinProcessGroup:
    return PurlinProcessGroup(rank, size, _fallbacks.pop())


def route(group: Any = None, **init_args) -> dist.ProcessGroup:
    """A process group over `group`'s ranks (default: the world) whose collectives
    run on purlin, registered with torch like any other. Every rank of the world
    calls it, as for torch.distributed.new_group; `init_args` go to purlin.torch.init."""
    group = group or dist.group.WORLD
    if BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, _create, devices=["cpu", "cuda"])
    ranks = dist.get_process_group_ranks(group)
    member = dist.get_rank() in ranks
    if member:
        init(group, **init_args)
        _fallbacks.append(group)
    return dist.new_group(ranks, backend=BACKEND)
