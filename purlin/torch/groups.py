"""The torch process groups purlin runs over, and what it caches for each.

A group is known by its torch `group_name`, the string purlin's custom ops
carry (a ProcessGroup object cannot be an op argument). A group whose ranks
span several nodes is split into one intra-node group per node (where purlin
runs) and one inter-node group per local rank (where torch.distributed runs).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from purlin.coll.attributes import ReduceKind
from purlin.compile import CPU_ARCH, arch_of_device, compile_device_counts, compile_plan
from purlin.runtime.process import ProcessCommunicator

OPS = tuple(k.value for k in ReduceKind)
TORCH_OPS = {
    "sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
    "max": dist.ReduceOp.MAX, "and": dist.ReduceOp.BAND, "or": dist.ReduceOp.BOR, "xor": dist.ReduceOp.BXOR,
    "avg": dist.ReduceOp.AVG,
}

# torch 2.13 renames the single-tensor gather and scatter; older releases have the old names only.
all_gather_single = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
reduce_scatter_single = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


@dataclass
class Nodes:
    """A group over `count` nodes of `local` ranks each, ranks node-major."""

    count: int
    local: int
    intra: GroupState  # this rank's node: purlin
    inter: Any  # this rank's peers of the same local rank on the other nodes: torch.distributed


@dataclass
class GroupState:
    group: Any
    name: str
    rank: int
    world: int
    arch: str
    timeout_s: float
    nodes: Nodes | None = None
    plans: dict[tuple, ProcessCommunicator] = field(default_factory=dict)

    def communicator(self, device: torch.device, collective: str, dtype: str, op: str | None, count: int = 0,
                     counts: list | None = None, lowering: str = "", deterministic: bool = False,
                     in_place: bool = False) -> ProcessCommunicator:
        """The compiled collective, cached; its first call is collective over the group."""
        if op is not None and op not in OPS:
            raise ValueError(f"purlin.torch: unknown reduction {op!r}, expected one of {', '.join(OPS)}")
        key = (device.type, collective, dtype, op, count, repr(counts), lowering, deterministic, in_place)
        comm = self.plans.get(key)
        if comm is None:
            arch = self.arch if device.type == "cuda" else CPU_ARCH
            plan = compile_plan(collective, self.world, dtype, op, count, counts=counts, arch=arch,
                                lowering=lowering, deterministic=deterministic, in_place=in_place)
            comm = ProcessCommunicator(plan, group=self.group, timeout_s=self.timeout_s, name=collective,
                                       backend=device.type)
            self.plans[key] = comm
        return comm


    def counts_communicator(self, device: torch.device, collective: str, dtype: str, op: str | None,
                            input_elems: int, output_elems: int, lowering: str = "") -> ProcessCommunicator:
        """The device-counts kernel of `collective` over buffers of these sizes
        (every rank's alike), cached; its first call is collective over the group."""
        key = ("counts", device.index, collective, dtype, op, input_elems, output_elems, lowering)
        comm = self.plans.get(key)
        if comm is None:
            coll = compile_device_counts(collective, self.world, dtype, op, input_elems=input_elems,
                                         output_elems=output_elems, arch=self.arch, lowering=lowering)
            comm = ProcessCommunicator(coll, group=self.group, timeout_s=self.timeout_s, name=collective,
                                       backend="cuda")
            self.plans[key] = comm
        return comm


_groups: dict[str, GroupState] = {}
_default: list[str] = []


def init(group: Any = None, arch: str | None = None, timeout_s: float = 10.0,
         ranks_per_node: int | None = None) -> None:
    """Bind purlin to a torch.distributed process group (default: the world); the
    last group bound without `group=` in calls is the default one. Ranks per node
    come from `ranks_per_node`, else torchrun's LOCAL_WORLD_SIZE, else the whole
    group is one node. A group spanning nodes must be the world (init creates
    its node sub-groups, which every rank of the world takes part in)."""
    if not dist.is_initialized():
        raise RuntimeError("purlin.torch.init needs torch.distributed.init_process_group first")
    group = group or dist.group.WORLD
    if arch is None:
        arch = arch_of_device(torch.cuda.current_device()) if torch.cuda.is_available() else CPU_ARCH
    state = _state_of(group, arch, timeout_s)
    local = ranks_per_node or int(os.environ.get("LOCAL_WORLD_SIZE", "0")) or None
    if local is not None and local < dist.get_world_size():
        state.nodes = _split(group, local, arch, timeout_s)
    _groups[state.name] = state
    _default[:] = [state.name]


def _state_of(group: Any, arch: str, timeout_s: float) -> GroupState:
    return GroupState(group, group.group_name, dist.get_rank(group), dist.get_world_size(group), arch, timeout_s)


def _split(group: Any, local: int, arch: str, timeout_s: float) -> Nodes | None:
    """Nodes of `local` consecutive world ranks; None when `group` lies in one node."""
    world = dist.get_world_size()
    if world % local:
        raise ValueError(f"purlin.torch: {local} ranks per node do not divide the world's {world} ranks")
    ranks = dist.get_process_group_ranks(group)
    if len({r // local for r in ranks}) == 1:
        return None
    if group is not dist.group.WORLD:
        raise ValueError(f"purlin.torch: a group spanning nodes must be the world group (got ranks {ranks} "
                         f"with {local} ranks per node)")
    count = world // local
    intra, _ = dist.new_subgroups_by_enumeration([list(range(n * local, (n + 1) * local)) for n in range(count)])
    inter, _ = dist.new_subgroups_by_enumeration([list(range(i, world, local)) for i in range(local)])
    return Nodes(count, local, _state_of(intra, arch, timeout_s), inter)


def group_name(group: Any = None) -> str:
    """The name purlin's ops carry for `group` (default: the default group)."""
    if group is None:
        if not _default:
            raise RuntimeError("call purlin.torch.init() first")
        return _default[0]
    return group.group_name


def state(name: str) -> GroupState:
    try:
        return _groups[name]
    except KeyError:
        raise RuntimeError(f"purlin.torch: process group {name!r} is not bound; call purlin.torch.init(group) "
                           "first") from None
