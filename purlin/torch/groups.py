"""The torch process groups purlin runs over, and what it caches for each.

A group is known by its torch `group_name`, the string purlin's custom ops
carry (a ProcessGroup object cannot be an op argument). A group whose ranks
span several nodes is split into one intra-node group per node (where purlin
runs) and one inter-node group per local rank (where torch.distributed runs).
Reductions are named as purlin names them ("prod") or as torch does
("product", ReduceOp.PRODUCT).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from purlin.conversion.cost_model import THRESHOLDS
from purlin.dtypes import ReduceKind
from purlin.plan.model import BufKind
from purlin.runtime.process import ProcessCommunicator
from purlin.torch.cache import Communicators, RecentCalls, limits, lowered, made, release_plans, stats
from purlin.torch.board import CallBoard, CallMismatchError, group_store, header

if TYPE_CHECKING:
    from purlin.cuda.program import CudaProgram
    from purlin.plan import Plan
    from purlin.torch.mapped import GroupMemory

OPS = tuple(k.value for k in ReduceKind)
TORCH_OPS = {
    "sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
    "max": dist.ReduceOp.MAX, "and": dist.ReduceOp.BAND, "or": dist.ReduceOp.BOR, "xor": dist.ReduceOp.BXOR,
    "avg": dist.ReduceOp.AVG,
}

# torch's own names of its reductions (ReduceOp.PRODUCT is "product", as the functional collectives spell it).
_TORCH_SPELLING = {v.name.lower(): k for k, v in TORCH_OPS.items()}
_OF_TORCH = {v: k for k, v in TORCH_OPS.items()}


def op_name(op: Any) -> str:
    """purlin's name of the reduction `op`: a name of purlin's or torch's, or a torch ReduceOp."""
    if isinstance(op, str):
        name = _TORCH_SPELLING.get(op, op)
        if name in OPS:
            return name
        raise ValueError(f"purlin.torch: unknown reduction {op!r}, expected one of {', '.join(OPS)} (or torch's "
                         f"{', '.join(n for n in _TORCH_SPELLING if n not in OPS)}, or a torch.distributed.ReduceOp)")
    name = torch_op_name(op)
    if name is None:
        raise ValueError(f"purlin.torch: purlin has no reduction {getattr(op, 'op', op)}; it runs {', '.join(OPS)}")
    return name


def torch_op_name(op: Any) -> str | None:
    """purlin's name of a torch ReduceOp (or of its RedOpType), None where purlin has none (premul_sum)."""
    return _OF_TORCH.get(getattr(op, "op", op))


# torch 2.13 renames the single-tensor gather and scatter; older releases have the old names only.
all_gather_single = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
reduce_scatter_single = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


# torch.device.type builds a string at each call: a cached call looks it up.
_DEVICE_TYPES: dict[torch.device, str] = {}


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
    # The group's communicators by call key (device type, collective, dtype, op, count, counts, ...), LRU-bounded.
    plans: Communicators = field(default_factory=Communicators)
    # The CPU calls made lately through regime kernels: header, communicator key, bound plan.
    calls: RecentCalls = field(default_factory=RecentCalls)
    board: CallBoard | None = None
    # The store its call board is set up through; None: the one torch made the group with.
    store: Any = None
    # Memory every rank maps (purlin.torch.empty, register), made on first use.
    memory: GroupMemory | None = None

    def call(self, x: torch.Tensor, y: torch.Tensor, collective: str, dtype: str, op: str | None, count: int = 0,
             counts: list | None = None, lowering: str = "", deterministic: bool = False,
             in_place: bool = False) -> None:
        """The compiled collective on this rank's `x` and `y`: on cuda, where both
        lie in memory every rank maps (purlin.torch.memory), its symmetric lowering."""
        heaps = self.memory.holding(x, y) if self.memory is not None and x.is_cuda else None
        self.run(self.communicator(x.device, collective, dtype, op, count, counts, lowering, deterministic, in_place,
                                   heaps), x, y)

    def communicator(self, device: torch.device, collective: str, dtype: str, op: str | None, count: int = 0,
                     counts: list | None = None, lowering: str = "", deterministic: bool = False,
                     in_place: bool = False, heaps: tuple | None = None) -> ProcessCommunicator:
        """The compiled collective, cached. On cpu every call first checks on the
        call board that every rank makes the same one (its run waits for them
        all anyway); on cuda a hit only posts, a miss (collective) checks.
        `heaps`: the heaps of the input and output (cuda), which make the
        lowering symmetric; ranks must name the same ones."""
        serials = tuple(h.serial for h in heaps) if heaps else ()
        kind = _DEVICE_TYPES.get(device) or _DEVICE_TYPES.setdefault(device, device.type)
        key = (kind, collective, dtype, op, count, repr(counts), lowering, deterministic, in_place, serials)
        comm = self.plans.hit(key)
        if comm is not None:
            if key[0] == "cpu":
                self._checked(self.board.check, comm.purlin_header)
            else:
                self.board.post(comm.purlin_header)
                if comm.purlin_hot:
                    self._warm(comm)
            return comm
        # The heaps are part of the call: ranks whose buffers lie elsewhere differ on the board.
        head = header(collective, dtype, op, count, key[5], lowering + "".join(f" heap={s}" for s in serials),
                      deterministic, in_place, key[0] == "cuda", key[0] == "cuda" and self.specialising())
        if key[0] == "cpu":
            self._checked(self.call_board().agree, head)
        else:
            self.call_board().agree(head)
        if op is not None and op not in OPS:
            raise ValueError(f"purlin.torch: unknown reduction {op!r}, expected one of {', '.join(OPS)}")
        # The compiler (xDSL, the pipeline) is imported on the first miss, not with purlin.torch.
        from purlin.compile import CPU_ARCH, compile_collective

        arch = self.arch if key[0] == "cuda" else CPU_ARCH

        def lower():
            # The plan and its CUDA program, generated only if the cuda backend launches it.
            return compile_collective(collective, self.world, dtype, op, count, counts=counts, arch=arch,
                                      lowering=lowering, deterministic=deterministic, in_place=in_place,
                                      symmetric=bool(heaps), verify_steps=False)

        compiled = lowered((self.world, arch, *key[1:-1], bool(heaps)), lower)
        return self._keep(key, head, compiled.plan, collective, key[0], compiled.cuda, heaps)

    def _warm(self, comm: ProcessCommunicator) -> None:
        """Counts a call of CUDA latency communicator `comm` towards loading its
        specialised kernel (purlin.torch.cache: limits.specialise_after)."""
        if comm.purlin_hot > 1:
            comm.purlin_hot -= 1
        elif not torch.cuda.is_current_stream_capturing():
            # Between calls only: a graph being captured would keep the kernel it holds.
            comm.purlin_hot = 0
            try:
                comm.specialise()
            except ValueError as e:
                warnings.warn(f"purlin.torch: {e}; it keeps its generic kernel", RuntimeWarning, stacklevel=6)

    def agree_call(self, kind: str, dtype: str, count: int) -> None:
        """A collective call that is not a collective (purlin.torch.memory's), checked
        on the call board: every rank must make the same one."""
        self._checked(self.call_board().agree, header(kind, dtype, None, count, repr(None), "", False, False, True))

    def agree(self, device: torch.device, collective: str, dtype: str, op: str | None) -> None:
        """A call that moves nothing (zero elements) still takes its turn on the call board on cpu."""
        if device.type == "cpu":
            self._checked(self.call_board().agree, header(collective, dtype, op, 0, repr(None), "", False, False,
                                                          False))

    def run(self, comm: ProcessCommunicator, x: torch.Tensor, y: torch.Tensor) -> None:
        """`comm` on this rank's tensors. On cpu a hit checked only the calls its
        peers had posted (its run waits for them anyway): a run that stops or times
        out because a peer made another call, or none, is that CallMismatchError."""
        try:
            comm.run_tensors(x, y)
        except Exception as e:
            why = self.board.explain(comm.purlin_header) if comm.backend == "cpu" and self.board else None
            if why is None:
                raise
            self._mismatched(why)
            raise why from e

    def _checked(self, check, head: tuple) -> None:
        try:
            check(head)
        except CallMismatchError as e:
            self._mismatched(e)
            raise

    def _mismatched(self, e: CallMismatchError) -> None:
        """After calls that differ (cpu): stops the peers that run one of them
        (they wait for this rank in it), then closes every communicator, which every
        rank of the call does, so that the next calls make them anew alike."""
        # Every one: a kernel's communicator runs the calls of every size it binds.
        cpu = [comm for comm in self.plans.values() if comm.backend == "cpu"]
        for comm in cpu:
            comm.stop()
        self.plans.release(cpu)

    def counts_communicator(self, device: torch.device, collective: str, dtype: str, op: str | None,
                            input_elems: int, output_elems: int, lowering: str = "") -> ProcessCommunicator:
        """The device-counts kernel of `collective` over buffers of these sizes
        (every rank's alike), cached; its first call is collective over the group."""
        key = ("counts", device.index, collective, dtype, op, input_elems, output_elems, lowering)
        comm = self.plans.hit(key)
        if comm is not None:
            self.board.post(comm.purlin_header)
            return comm
        head = header(f"{collective}_dev", dtype, op, input_elems, repr(output_elems), lowering, False, False, True)
        self.call_board().agree(head)

        def lower():
            from purlin.compile import compile_device_counts

            return compile_device_counts(collective, self.world, dtype, op, input_elems=input_elems,
                                         output_elems=output_elems, arch=self.arch, lowering=lowering)

        coll = lowered((self.world, self.arch, *key), lower)
        return self._keep(key, head, None, collective, "cuda", coll.cuda)

    def run_sized(self, called: tuple, collective: str, dtype: str, op: str | None, counts: list,
                  x: torch.Tensor, y: torch.Tensor, lowering: str = "", in_place: bool = False) -> bool:
        """Runs V collective `collective` of `counts` on `x` and `y` through the
        kernel of its regime (purlin.torch.regimes), bound to these counts; False
        where that is not how it runs (the caller compiles a plan of its own): on
        cpu no regime holds the counts, on cuda none does or they are the
        latency regime's while hot calls specialise (limits.specialise_after).
        `called` is the call as the call board names it: (collective, count);
        the counts follow from it but for the V forms. `in_place`: `x` is `y`,
        through a kernel lowered in place (all_reduce_v)."""
        cuda = x.is_cuda
        heaps = self.memory.holding(x, y) if cuda and self.memory is not None else None
        serials = tuple(h.serial for h in heaps) if heaps else ()
        call = (called, collective, dtype, op, lowering, serials,
                _flat(counts) if called[0].endswith("_v") else None, in_place)
        known = self.calls.hit(call)
        if known is not None and (comm := self.plans.hit(known[1])) is not None:
            # A call made lately: its header, communicator and bound plan are known.
            head, _, bound = known
            if cuda:
                self.board.post(head)
            else:
                self._checked(self.board.check, head)
            if comm.plan is not bound[0]:
                comm.rebind(*bound)
        else:
            found = self._sized(called, collective, dtype, op, counts, lowering, in_place, cuda, heaps)
            if found is None:
                return False
            head, comm, bound = found
            self.calls.keep(call, (head, self.plans.key_of(comm), bound))
        comm.purlin_header = head
        self.run(comm, x, y)
        return True

    def _sized(self, called: tuple, collective: str, dtype: str, op: str | None, counts: list, lowering: str,
               in_place: bool, cuda: bool, heaps: tuple | None) -> tuple | None:
        """(header, communicator bound to `counts`, that binding as rebind takes
        it) of run_sized's call, made or rebound; None where it does not run so."""
        serials = tuple(h.serial for h in heaps) if heaps else ()
        head = header(called[0], dtype, op, called[1], repr(counts) if called[0].endswith("_v") else repr(None),
                      lowering + "".join(f" heap={s}" for s in serials), False, in_place, cuda,
                      cuda and self.specialising())
        from purlin.torch.regimes import input_extent, options, regime

        extent = input_extent(collective, counts)
        kind = ("cuda" if cuda else "cpu", "regime", collective, dtype, op)
        # Checked before the compiler is imported or anything lowered or bound, so that ranks whose calls
        # differ learn it first.
        if cuda:
            rg = regime(collective, self.world, dtype, extent, self.arch)
            # A specialised kernel has one binding's tables compiled in: hot latency calls keep a lowering each.
            if rg is None or (rg.name == "latency" and self.specialising()):
                return None
            self.call_board().agree(head)
        elif any(k[:5] == kind and k[6:8] == (lowering, in_place) for k in self.plans):
            self._checked(self.board.check, head)
        else:
            self._checked(self.call_board().agree, head)
        from purlin.compile import CPU_ARCH

        arch = self.arch if cuda else CPU_ARCH
        if not cuda:
            rg = regime(collective, self.world, dtype, extent, arch)
            if rg is None:
                return None
        kernel_key = (*kind, rg.name, lowering, in_place, serials)

        def lower():
            from purlin.compile import compile_device_counts

            # Bound on the host at every call: never read on the device.
            return compile_device_counts(collective, self.world, dtype, op, input_elems=rg.input_elems,
                                         output_elems=rg.output_elems, arch=arch,
                                         lowering=options(lowering, rg, cuda, bool(heaps)), counts_on_host=True,
                                         in_place=in_place)

        kernel = lowered((self.world, arch, *kernel_key), lower)
        if cuda:
            from purlin.runtime.backend import binding_layout

            compiled = kernel.bind_collective(counts)
            plan, bound = compiled.plan, (compiled.plan, None, compiled.cuda)
            # Bindings of one layout (symmetric memory, each unit's consumers) share a communicator.
            key = (*kernel_key, binding_layout(compiled.cuda))
        else:
            from purlin.runtime.backend import _runtime

            plan = kernel.bind(counts)
            bound = (plan, _runtime.decode(plan.encode()))
            # Bindings of one layout (a chunk count: their epochs advance alike) share a communicator.
            key = (*kernel_key, plan.advance, tuple((b.kind, b.slots, b.elems) for b in plan.buffers),
                   tuple(sig.slots for sig in plan.signals))
        comm = self.plans.hit(key)
        if comm is None:
            if not cuda:
                # Made by every rank at once: each waits for the others' agreement first.
                self._checked(self.board.agree, head)
            comm = self._keep(key, head, plan, collective, kind[0], bound[2] if cuda else None, heaps, bound=True)
        else:
            comm.rebind(*bound)
        return head, comm, bound

    def _keep(self, key: tuple, head: tuple, plan: Plan | None, collective: str, backend: str,
              kernel: CudaProgram | None = None, heaps: tuple | None = None,
              bound: bool = False) -> ProcessCommunicator:
        """A communicator of `plan` and, on cuda, `kernel` (a device-counts kernel
        without a plan); a symmetric plan's buffers lie in `heaps`. `bound`: it
        runs the bindings of one kernel (rebind), so it never specialises."""
        comm = ProcessCommunicator(plan, rank=self.rank, group=self.group, timeout_s=self.timeout_s,
                                   name=collective, backend=backend, kernel=kernel,
                                   heap=list(dict.fromkeys(heaps)) if heaps else None)
        comm.purlin_header = head
        comm.purlin_hot = limits.specialise_after if not bound and self._specialisable(plan, kernel) else 0
        made()
        self.plans.keep(key, comm)
        return comm

    def specialising(self) -> bool:
        """Whether hot CUDA latency calls specialise at this world
        (limits.specialise_after): then each latency size is lowered on its own,
        not bound, so every rank must set it alike; the call board's headers
        say it, so ranks that differ get a CallMismatchError."""
        return limits.specialise_after > 0 and self.world <= THRESHOLDS[self.arch].specialise_max_world

    def _specialisable(self, plan: Plan | None, kernel: CudaProgram | None) -> bool:
        """Whether a communicator of `plan` and `kernel` is a CUDA latency one
        (packet windows) that runs faster specialised at this world."""
        return (kernel is not None and plan is not None and not kernel.device_counts
                and self.world <= THRESHOLDS[self.arch].specialise_max_world
                and any(b.kind == BufKind.PACKETS for b in plan.buffers))

    def call_board(self) -> CallBoard:
        """The group's call board, made on its first call (collective)."""
        if self.board is None:
            store = self.store if self.store is not None else group_store(self.group)
            self.board = CallBoard(store, self.rank, self.world, self.timeout_s, self.name)
        return self.board

    def release(self) -> None:
        """Closes every communicator this group keeps (on cuda, with the group: every rank calls it)."""
        self.plans.release()
        self.calls.clear()


# How long a rank waits for its peers within a purlin call on a group whose backends name no timeout.
TIMEOUT_S = 10.0

_groups: dict[str, GroupState] = {}
_default: list[str] = []


def init(group: Any = None, arch: str | None = None, timeout_s: float | None = None,
         ranks_per_node: int | None = None) -> None:
    """Bind purlin to a torch.distributed process group (default: the world); the
    last group bound without `group=` in calls is the default one. Ranks per node
    come from `ranks_per_node`, else torchrun's LOCAL_WORLD_SIZE, else the whole
    group is one node. A rank waits `timeout_s` for its peers in a purlin call
    (default: the group's own timeout, as long as torch's collectives on it
    wait). A group spanning nodes must be the world (init creates its node
    sub-groups, which every rank of the world takes part in). A purlin
    process group (pt.route, backend "purlin") was bound when it was made: init
    only makes it the default; one spanning nodes (the world of backend
    "purlin" under torchrun) is split here, and its collectives run so too."""
    if not dist.is_initialized():
        raise RuntimeError("purlin.torch.init needs torch.distributed.init_process_group first")
    group = group or dist.group.WORLD
    state = getattr(group, "purlin_state", None)
    if state is not None and (arch is not None or ranks_per_node is not None or timeout_s is not None):
        raise ValueError(f"purlin.torch.init: process group {group.group_name!r} is purlin's, bound when it was "
                         "made; give arch, ranks_per_node and timeout_s to purlin.torch.route instead")
    if state is None:
        timeout_s = group_timeout(group) if timeout_s is None else timeout_s
        state = _state_of(group, arch or default_arch(), timeout_s)
        local = ranks_per_node or local_world_size()
        if local is not None and local < dist.get_world_size():
            state.nodes = _split(group, local, state.arch, timeout_s)
        if hasattr(group, "purlin_state"):
            group.purlin_state = state
        _groups[state.name] = state
    _default[:] = [group.group_name]


def default_arch() -> str:
    """The generation of the current GPU, else the CPU backend."""
    from purlin.compile import CPU_ARCH, arch_of_device

    return arch_of_device(torch.cuda.current_device()) if torch.cuda.is_available() else CPU_ARCH


def group_timeout(group: Any) -> float:
    """The timeout of `group`'s backends in seconds (the longest, where several
    name one), TIMEOUT_S where none does: how long torch's own collectives on
    that group wait for a late peer before they fail."""
    named = [options._timeout.total_seconds() for device in group._device_types
             if (options := getattr(group._get_backend(device), "options", None)) is not None
             and hasattr(options, "_timeout")]
    return max(named, default=TIMEOUT_S)


def _flat(counts: list) -> tuple:
    return tuple(c for row in counts for c in row) if counts and isinstance(counts[0], list) else tuple(counts)


def local_world_size() -> int | None:
    """torchrun's ranks per node, None where it does not say."""
    return int(os.environ.get("LOCAL_WORLD_SIZE", "0")) or None


def bind(name: str, st: GroupState) -> None:
    """Calls naming group `name` run on `st` (a purlin process group's own name)."""
    _groups[name] = st


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
    # Under a default group of backend "purlin" the node groups are purlin's too, already bound.
    return Nodes(count, local, getattr(intra, "purlin_state", None) or _state_of(intra, arch, timeout_s), inter)


def group_name(group: Any = None) -> str:
    """The name purlin's ops carry for `group` (default: the default group)."""
    if group is None:
        if not _default:
            raise RuntimeError("call purlin.torch.init() first")
        return _default[0]
    return group.group_name


def kept() -> list[GroupState]:
    """Every group state purlin.torch holds (node groups included), once each."""
    seen: dict[int, GroupState] = {}
    for st in _groups.values():
        for s in (st, st.nodes.intra if st.nodes else None):
            if s is not None:
                seen[id(s)] = s
    return list(seen.values())


def cache_stats() -> dict[str, int]:
    """What purlin.torch lowered, made and closed since the process started, and what it keeps now."""
    return stats(kept())


def release(group: Any = None) -> None:
    """Closes the communicators purlin keeps for `group` (default: every group)
    and forgets the lowered plans; the next call of each shape compiles again.
    Every rank of the group calls it (on cuda a close waits for the group)."""
    if group is None:
        for st in kept():
            st.release()
    else:
        st = getattr(group, "purlin_state", None) or state(group_name(group))
        st.release()
        if st.nodes is not None:
            st.nodes.intra.release()
    release_plans()


def state(name: str) -> GroupState:
    try:
        return _groups[name]
    except KeyError:
        raise RuntimeError(f"purlin.torch: process group {name!r} is not bound; call purlin.torch.init(group) "
                           "first") from None
