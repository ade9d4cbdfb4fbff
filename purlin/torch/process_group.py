"""purlin as a torch.distributed backend: a process group whose collectives
run on purlin, so that torch's own calls on it (torch.distributed.*, the
functional collectives, DTensor, torch.compile's graphs) go to purlin:

    pg = purlin.torch.route(group)               # every rank of the world calls it
    funcol.all_reduce(x, "sum", pg)              # purlin

    mesh = init_device_mesh("cpu", (4,), backend_override={0: "purlin"})
    pg = dist.new_group(ranks, backend="purlin")  # once purlin.torch is imported

purlin runs all_reduce (and its coalesced form), all_gather (into a tensor,
into lists, coalesced), reduce_scatter (from a tensor, from lists,
coalesced) and all_to_all (single with even splits, lists of one size) of
the tensors it moves (dense, a dtype and reduction it has). Everything else
(broadcast, reduce, gather, scatter, barrier, send/recv, uneven all_to_all,
strided tensors, what purlin has no reduction for) runs on the group
underneath, with its answers and its errors: route()'s group, or for a group
made with backend "purlin" one torch makes alike (gloo for CPU tensors, NCCL
for CUDA ones where torch has it). The underlying group's backends are
registered on this one, so torch's own dispatch of whatever is not defined
here reaches them too.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch.distributed import ProcessGroup

from purlin.dtypes import ReduceKind, check_reduce_dtype
from purlin.torch.execute import TORCH_NAMES, all_gather, all_reduce, all_to_all, reduce_scatter
from purlin.torch.groups import (
    GroupState,
    bind,
    default_arch,
    init,
    local_world_size,
    state,
    torch_op_name,
)
from purlin.torch.ops import not_differentiable
from purlin.torch.work import Work

BACKEND = "purlin"


class PurlinProcessGroup(ProcessGroup):
    """A process group over the ranks of `underlying`, running on purlin what
    purlin runs (over `purlin_state`; None where it cannot: a group spanning
    nodes not split by purlin.torch.init) and the rest on `underlying`."""

    def __init__(self, rank: int, size: int, underlying: ProcessGroup, purlin_state: GroupState | None) -> None:
        super().__init__(rank, size)
        self.underlying = underlying
        self.purlin_state = purlin_state
        self._name = self._desc = ""
        for device in underlying._device_types:
            backend = underlying._get_backend(device)
            self._register_backend(device, _backend_type(backend.name()), backend)
        self._set_default_backend(_backend_type(underlying._get_backend_name()))

    def getBackendName(self) -> str:
        return BACKEND

    def setGroupName(self, name: str) -> None:
        self._name = name
        if self.purlin_state is not None:
            self.purlin_state.name = self.purlin_state.name or name
            bind(name, self.purlin_state)

    def getGroupName(self) -> str:
        return self._name

    def setGroupDesc(self, desc: str) -> None:
        self._desc = desc

    def getGroupDesc(self) -> str:
        return self._desc

    def _runs(self, tensors, reduce_op: Any = None) -> str | bool:
        """Whether purlin runs these tensors (with this torch reduction, as purlin's name)."""
        if self.purlin_state is None or not _movable(tensors):
            return False
        return True if reduce_op is None else _purlin_op(reduce_op, tensors) or False

    def allreduce(self, tensors, opts):
        op = self._runs(tensors, opts.reduceOp)
        if not op:
            return self.underlying.allreduce(tensors, opts)
        for t in tensors:
            flat = t.view(-1)
            all_reduce(self.purlin_state, flat, flat, op, False, "")
        # As torch's dispatch of c10d::allreduce_ marks them (a tensor written here from C++, by a
        # functional collective, is its own new output, which never requires grad).
        not_differentiable("c10d::allreduce_", tensors)
        return Work(tensors)

    def allreduce_coalesced(self, tensors, opts):
        if not self._runs(tensors, opts.reduceOp):
            return self.underlying.allreduce_coalesced(tensors, opts)
        return self.allreduce(tensors, opts)

    def all_gather_single_coalesced(self, outputs, inputs, opts):
        w = self.size()
        if not (self._runs([*outputs, *inputs]) and _sized(outputs, inputs, w, 1)):
            return self.underlying.all_gather_single_coalesced(outputs, inputs, opts)
        for y, x in zip(outputs, inputs):
            all_gather(self.purlin_state, x.view(-1), y.view(-1), "")
        return Work(outputs)

    def all_gather_single(self, output, input, opts):
        if not (self._runs([output, input]) and _sized([output], [input], self.size(), 1)):
            return self.underlying.all_gather_single(output, input, opts)
        return self.all_gather_single_coalesced([output], [input], opts)

    def allgather(self, output_lists, inputs, opts):
        if not (self._runs([*inputs, *(t for ts in output_lists for t in ts)]) and _listed(output_lists, inputs,
                                                                                            self.size())):
            return self.underlying.allgather(output_lists, inputs, opts)
        for outs, x in zip(output_lists, inputs):
            flat = x.new_empty(self.size() * x.numel())
            all_gather(self.purlin_state, x.view(-1), flat, "")
            for o, part in zip(outs, flat.view(self.size(), -1)):
                o.view(-1).copy_(part)
        return Work([t for ts in output_lists for t in ts])

    def allgather_coalesced(self, output_lists, inputs, opts):
        # One list per rank of one tensor per input: transposed, allgather's lists.
        by_input = [list(ts) for ts in zip(*output_lists)]
        if not (len(output_lists) == self.size() and all(len(ts) == len(inputs) for ts in output_lists)
                and self._runs([*inputs, *(t for ts in by_input for t in ts)])
                and _listed(by_input, inputs, self.size())):
            return self.underlying.allgather_coalesced(output_lists, inputs, opts)
        return self.allgather(by_input, inputs, opts)

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts):
        op = self._runs([*outputs, *inputs], opts.reduceOp)
        if not (op and _sized(inputs, outputs, self.size(), 1)):
            return self.underlying.reduce_scatter_single_coalesced(outputs, inputs, opts)
        for y, x in zip(outputs, inputs):
            reduce_scatter(self.purlin_state, x.view(-1), y.view(-1), op, False, "")
        return Work(outputs)

    def reduce_scatter_single(self, output, input, opts):
        op = self._runs([output, input], opts.reduceOp)
        if not (op and _sized([input], [output], self.size(), 1)):
            return self.underlying.reduce_scatter_single(output, input, opts)
        return self.reduce_scatter_single_coalesced([output], [input], opts)

    def reduce_scatter(self, outputs, input_lists, opts):
        op = self._runs([*outputs, *(t for ts in input_lists for t in ts)], opts.reduceOp)
        if not (op and _listed(input_lists, outputs, self.size())):
            return self.underlying.reduce_scatter(outputs, input_lists, opts)
        for y, xs in zip(outputs, input_lists):
            reduce_scatter(self.purlin_state, torch.cat([x.view(-1) for x in xs]), y.view(-1), op, False, "")
        return Work(outputs)

    def all_to_all_single(self, output, input, output_splits, input_splits, opts):
        w = self.size()
        # Splits count rows of dimension 0; purlin runs them when every rank's are one size.
        even = all(t.dim() > 0 and t.shape[0] % w == 0 and (not s or list(s) == [t.shape[0] // w] * w)
                   for s, t in ((output_splits, output), (input_splits, input)))
        if not (even and self._runs([output, input]) and output.shape[0] == input.shape[0]
                and _sized([output], [input], 1, w)):
            return self.underlying.all_to_all_single(output, input, output_splits, input_splits, opts)
        all_to_all(self.purlin_state, input.view(-1), output.view(-1), "")
        return Work([output])

    def alltoall(self, outputs, inputs, opts):
        w = self.size()
        if not (self._runs([*outputs, *inputs]) and len(outputs) == len(inputs) == w
                and len({(t.shape, t.dtype, t.device) for t in [*outputs, *inputs]}) == 1):
            return self.underlying.alltoall(outputs, inputs, opts)
        y = inputs[0].new_empty(w * inputs[0].numel())
        all_to_all(self.purlin_state, torch.cat([x.view(-1) for x in inputs]), y, "")
        for o, part in zip(outputs, y.view(w, -1)):
            o.view(-1).copy_(part)
        return Work(outputs)

    # What purlin does not run, but torch's trampoline of a Python process group
    # would call on the underlying backend itself: it does so holding the GIL
    # (to look for a Python method first), so gloo's enqueue would wait for its
    # queue's lock with the GIL held, while a gloo worker that drops a finished
    # work under that lock waits for the GIL to free the work's tensors: a
    # deadlock. Through the underlying group's own bindings the GIL is released.
    def broadcast(self, tensors, opts):
        return self.underlying.broadcast(tensors, opts)

    def barrier(self, opts):
        return self.underlying.barrier(opts)

    def send(self, tensors, dst, tag):
        return self.underlying.send(tensors, dst, tag)

    def recv(self, tensors, src, tag):
        return self.underlying.recv(tensors, src, tag)

    # The names of torch releases before 2.13 (whose trampolines call these).
    _allgather_base = all_gather_single
    allgather_into_tensor_coalesced = all_gather_single_coalesced
    _reduce_scatter_base = reduce_scatter_single
    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced
    alltoall_base = all_to_all_single


def _backend_type(name: str) -> Any:
    return dist.Backend.backend_type_map.get(name.lower(), ProcessGroup.BackendType.CUSTOM)


def _purlin_op(reduce_op: Any, tensors) -> str | None:
    """The purlin reduction for torch's `reduce_op` over `tensors`, or None where
    purlin has none or refuses it for their dtype (avg of integers, prod of
    fp8): the group underneath answers those as it would alone."""
    op = torch_op_name(reduce_op)
    if op is None:
        return None
    if any(check_reduce_dtype(ReduceKind(op), TORCH_NAMES[t.dtype]) is not None for t in tensors):
        return None
    return op


def _movable(tensors) -> bool:
    """Tensors purlin moves: dense, contiguous, on CPU or CUDA, a dtype it has, not empty."""
    return all(t.is_contiguous() and t.device.type in ("cpu", "cuda") and t.dtype in TORCH_NAMES
               and t.numel() > 0 for t in tensors) and len({t.device for t in tensors}) <= 1 \
        and len({t.dtype for t in tensors}) <= 1


def _sized(big, small, times: int, parts: int) -> bool:
    """Pairs of tensors of which each `big` holds `times` x its `small` (divided into `parts`)."""
    return len(big) == len(small) and all(b.numel() == times * s.numel() and s.numel() % parts == 0
                                          for b, s in zip(big, small))


def _listed(lists, tensors, world: int) -> bool:
    """Lists of `world` tensors each shaped as its tensor."""
    return len(lists) == len(tensors) and all(len(ts) == world and all(t.shape == x.shape for t in ts)
                                              for ts, x in zip(lists, tensors))


_routed: list[Any] = []


def _create(opts, backend_options) -> PurlinProcessGroup:
    """torch's backend hook (register_backend with extended_api): the purlin group of a new_group."""
    rank, size = opts.group_rank, opts.group_size
    if _routed:
        underlying = _routed.pop()
        return PurlinProcessGroup(rank, size, underlying, state(underlying.group_name))
    underlying = _underlying(opts.store, rank, size, opts.timeout)
    local = local_world_size()
    ranks = list(opts.global_ranks_in_group) or range(size)  # none given for the world
    spans = local is not None and len({r // local for r in ranks}) > 1
    # Its waits as long as the group's own (torch's collectives on it wait opts.timeout).
    st = None if spans else GroupState(underlying, "", rank, size, default_arch(), opts.timeout.total_seconds(),
                                       store=dist.PrefixStore("purlin/", opts.store))
    return PurlinProcessGroup(rank, size, underlying, st)


def _underlying(store, rank: int, size: int, timeout) -> ProcessGroup:
    """The group a purlin group of its own runs the rest on, made as torch makes
    "cpu:gloo,cuda:nccl": gloo for CPU tensors, NCCL for CUDA ones where torch has it."""
    pg = ProcessGroup(store, rank, size)
    gloo = dist.ProcessGroupGloo(dist.PrefixStore("gloo/", store), rank, size, timeout)
    pg._register_backend(torch.device("cpu"), ProcessGroup.BackendType.GLOO, gloo)
    default = ProcessGroup.BackendType.GLOO
    if torch.cuda.is_available() and dist.is_nccl_available():
        options = dist.ProcessGroupNCCL.Options()
        options._timeout = timeout
        nccl = dist.ProcessGroupNCCL(dist.PrefixStore("nccl/", store), rank, size, options)
        default = ProcessGroup.BackendType.NCCL
        pg._register_backend(torch.device("cuda"), default, nccl)
    pg._set_default_backend(default)
    return pg


def register() -> None:
    """Makes "purlin" a torch.distributed backend (done on import)."""
    if BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["cpu", "cuda"])


def route(group: Any = None, **init_args) -> dist.ProcessGroup:
    """A purlin process group over `group`'s ranks (default: the world), running
    on purlin what it runs and the rest on `group`. Every rank of the world calls
    it, as for torch.distributed.new_group; `init_args` go to purlin.torch.init."""
    group = group or dist.group.WORLD
    ranks = dist.get_process_group_ranks(group)
    if dist.get_rank() in ranks:
        init(group, **init_args)
        _routed.append(group)
    return dist.new_group(ranks, backend=BACKEND)


register()
