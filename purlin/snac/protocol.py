"""The exchange plan: what each rank stages, waits for and consumes.

A SNAC program is rank-generic: its ops say "stage my unit u", "wait for my
group g". This module answers, for a concrete world and layouts, which bytes
unit u and group g are and which peers they involve. The lowering, the
simulator, `snac-verify` and the runtime all call it, so the protocol has one
definition.

Vocabulary:
- A *phase* moves slices from a source layout (on the input, or on the output
  of an earlier phase) to a destination layout, by copy or N-to-1 reduce.
- A *unit* is one chunk of one named slice that a producer makes visible to
  remote consumers (staged or pushed as packets). Producer s numbers its
  units u = 0, 1, ...; unit u is announced with flag epoch + u + 1.
- A *group* is one chunk of one destination slice on a consumer, with its
  sources in the order they are reduced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from purlin.coll.layouts import Layout, LayoutKind, Name, OwnerSplit


@dataclass(frozen=True)
class Source:
    rank: int
    offset: int  # element offset of the chunk in the source rank's buffer
    unit: int | None  # unit index on that rank, None when read locally


@dataclass(frozen=True)
class Unit:
    producer: int
    index: int
    name: Name
    lo: int  # chunk range inside the named slice
    hi: int
    src_offset: int
    consumers: tuple[int, ...]

    @property
    def size(self) -> int:
        return self.hi - self.lo


@dataclass(frozen=True)
class Group:
    consumer: int
    index: int
    name: Name
    lo: int
    hi: int
    dst_offset: int
    sources: tuple[Source, ...]

    @property
    def size(self) -> int:
        return self.hi - self.lo

    @cached_property
    def remote(self) -> tuple[Source, ...]:
        return tuple(s for s in self.sources if s.unit is not None)


class PerRank(Sequence):
    """Every rank's records of one kind, each rank's built the first time it
    is asked for: one rank's plan, or its kernel tables, needs its own records
    and those of the ranks it talks to, not the whole world's."""

    def __init__(self, world: int, build: Callable[[int], tuple]):
        self._world, self._build = world, build
        self._built: dict[int, tuple] = {}

    def __len__(self) -> int:
        return self._world

    def __getitem__(self, rank):  # type: ignore[override]
        if type(rank) is int and (found := self._built.get(rank)) is not None:
            return found  # the verifier and the plan builder ask at every step
        if isinstance(rank, slice):
            return [self[r] for r in range(self._world)[rank]]
        if not -self._world <= rank < self._world:
            raise IndexError(f"rank {rank} is outside world {self._world}")
        rank %= self._world
        found = self._built.get(rank)
        if found is None:
            found = self._built[rank] = self._build(rank)
        return found

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PerRank) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class PhasePlan:
    """Units and groups of one phase, for every rank: `units[r]` and
    `groups[r]` are built for rank r when first asked for."""

    world: int
    src: Layout
    dst: Layout
    reduce: bool
    chunk: int  # elements per unit; 0 means one unit per slice
    # Forwarding phases make a unit of every source slice, read or not, so
    # unit g is the reducer's group g.
    keep_unread: bool = False
    # Make every contribution a unit, the consumer's own included: staged so
    # that all of a group's sources sit in symmetric memory (what multimem
    # reads), or pushed by its producer with the others.
    stage_local: bool = False
    # A slice of 0 elements still makes a unit (and a group), one flag-only
    # packet: every pair of ranks the layouts connect exchanges a flag every
    # call, whatever the counts (what lets a latency phase of dynamic counts
    # drop its per-call handshake, coll_to_snac._mutual).
    empty_units: bool = False
    units: Sequence[tuple[Unit, ...]] = field(init=False)
    groups: Sequence[tuple[Group, ...]] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "units", PerRank(self.world, lambda r: rank_units(self, r)))
        object.__setattr__(self, "groups", PerRank(self.world, lambda r: rank_groups(self, r)))

    # -- counts and unit indices without building other ranks' records ----
    # A unit's index on its producer is how many chunks the producer's earlier
    # slices (in name order) make, less those of slices nobody reads. For the
    # fixed kinds both come in closed form: a slice's position is its name's
    # index, and the unread ones are among the names the destination layout
    # gives one rank alone (Layout.sole_names). Otherwise each rank's slices
    # are counted once, with integers only.

    def _chunk_count(self, size: int) -> int:
        if size == 0:
            return int(self.empty_units)
        return 1 if self.chunk <= 0 else -(-size // self.chunk)

    def chunks_of(self, size: int) -> list[tuple[int, int]]:
        """[lo, hi) of each unit (or group) a slice of `size` elements makes."""
        return _chunks(size, self.chunk) or ([(0, 0)] if self.empty_units else [])

    @cached_property
    def _closed_form(self) -> bool:
        src, dst = self.src, self.dst
        base = dst.base if isinstance(dst, OwnerSplit) else dst
        if not isinstance(src, Layout) or src.kind == LayoutKind.NAMED or src.is_dynamic:
            return False
        if isinstance(dst, OwnerSplit) and not dst.owned:
            return False
        single = (LayoutKind.PACKED, LayoutKind.SCATTERED)
        return base.kind != LayoutKind.NAMED and (src.kind in single) == (base.kind in single)

    def _chunks_before(self, rank: int, pos: int) -> int:
        """Chunks of `rank`'s first `pos` source slices, in closed form."""
        src = self.src
        assert isinstance(src, Layout)
        if not src.variable:
            return pos * self._chunk_count(src.counts)  # type: ignore[arg-type]
        memo = self.__dict__.setdefault("_chunk_prefix", {})
        line = None if src.kind == LayoutKind.SCATTERED else rank
        found = memo.get(line)
        if found is None:
            found, at = [0], 0
            for s in src.slices(rank):
                at += self._chunk_count(s.size)
                found.append(at)
            memo[line] = found
        return found[pos]

    def _unread(self, rank: int) -> list[tuple[int, int]]:
        """(position, chunks) of `rank`'s source slices that no rank reads, closed form."""
        memo = self.__dict__.setdefault("_unread_memo", {})
        found = memo.get(rank)
        if found is None:
            found = []
            if not (self.keep_unread or self.stage_local):
                src = self.src
                assert isinstance(src, Layout)
                sole = self.dst.sole_names(rank)
                assert sole is not None
                found = sorted((src.position(rank, n), self._chunk_count(src.name_size(n) or 0))
                               for n in sole if src.holds(rank, n))
            memo[rank] = found
        return found

    def _read_by_some(self, rank: int, name: Name) -> bool:
        if self.keep_unread:
            return True
        n = self.dst.holder_count(name)
        return n > 1 or (n == 1 and (self.stage_local or not self.dst.holds(rank, name)))

    def _unit_table(self, rank: int) -> tuple[dict[Name, int], int]:
        """Counted: the first unit index of each of `rank`'s unit-making slices, and their units."""
        memo = self.__dict__.setdefault("_unit_tables", {})
        found = memo.get(rank)
        if found is None:
            first, at = {}, 0
            for sl in sorted(self.src.slices(rank), key=lambda s: s.name):
                if self._read_by_some(rank, sl.name):
                    first[sl.name] = at
                    at += self._chunk_count(sl.size)
            found = memo[rank] = (first, at)
        return found

    def _first_unit(self, rank: int, name: Name) -> int:
        if not self._closed_form:
            return self._unit_table(rank)[0][name]
        pos = self.src.position(rank, name)  # type: ignore[union-attr]
        return self._chunks_before(rank, pos) - sum(c for p, c in self._unread(rank) if p < pos)

    def unit_count(self, rank: int) -> int:
        """How many units `rank` produces."""
        if not self._closed_form:
            return self._unit_table(rank)[1]
        src = self.src
        assert isinstance(src, Layout)
        slices = 1 if src.kind == LayoutKind.PACKED else self.world
        return self._chunks_before(rank, slices) - sum(c for _, c in self._unread(rank))

    def group_count(self, rank: int) -> int:
        """How many groups `rank` consumes: its destination slices' chunks (an
        owner split's from its base's, less or only those of the owned names)."""
        dst = self.dst
        if isinstance(dst, OwnerSplit) and dst.base.kind != LayoutKind.NAMED:
            base = dst.base
            owned = sum(self._chunk_count(base.name_size(n) or 0) for n in base.owned_names(rank))
            return owned if dst.owned else self._line_chunks(base, rank) - owned
        if isinstance(dst, Layout) and dst.kind != LayoutKind.NAMED:
            return self._line_chunks(dst, rank)
        return sum(self._chunk_count(s.size) for s in dst.slices(rank))

    def _line_chunks(self, layout: Layout, rank: int) -> int:
        """Chunks of a fixed kind's slices on `rank` (the same on every rank
        but for packed and the count matrices' lines)."""
        if not layout.variable:
            per = 1 if layout.kind == LayoutKind.PACKED else self.world
            return per * self._chunk_count(layout.counts)  # type: ignore[arg-type]
        memo = self.__dict__.setdefault("_line_chunk_memo", {})
        key = (id(layout), None if layout.kind == LayoutKind.SCATTERED else rank)
        found = memo.get(key)
        if found is None:
            found = memo[key] = sum(self._chunk_count(c) for c in layout.line_sizes(rank))
        return found

    @cached_property
    def max_units(self) -> int:
        return max((self.unit_count(r) for r in range(self.world)), default=0)

    @cached_property
    def max_groups(self) -> int:
        return max((self.group_count(r) for r in range(self.world)), default=0)

    @cached_property
    def max_unit_elems(self) -> int:
        """The largest unit: the largest source slice someone reads, cut to a chunk."""
        cap = max((size for size, n in self.src.slice_sizes() if n), default=0)
        if self.chunk > 0:
            cap = min(cap, self.chunk)
        best = 0
        for r in range(self.world):
            for sl in self.src.slices(r):
                if min(sl.size, cap) > best and self._read_by_some(r, sl.name):
                    best = min(sl.size, cap)
                    if best == cap:
                        return best
        return best

    def unit_index(self, rank: int, name: Name, lo: int) -> int:
        """The index of the unit of `rank` that carries elements [lo, ...) of `name`."""
        return self._first_unit(rank, name) + (lo // self.chunk if self.chunk > 0 else 0)

    @cached_property
    def destinations(self) -> PerRank:
        """Per producer, per unit: the (consumer, output offset) of every group
        that reads it, in consumer order: where a direct push writes the unit."""
        return PerRank(self.world, self._destinations_of)

    def _destinations_of(self, rank: int) -> tuple[tuple[tuple[int, int], ...], ...]:
        return tuple(
            tuple((d, g.dst_offset) for d in u.consumers for g in self._groups_reading(d, u.name, u.lo)
                  if any(s.rank == rank and s.unit == u.index for s in g.sources))
            for u in self.units[rank])

    def _groups_reading(self, rank: int, name: Name, lo: int) -> list[Group]:
        """`rank`'s groups of chunk [lo, ...) of `name`, in group order."""
        cache = self.__dict__.setdefault("_groups_by_chunk", {})
        found = cache.get(rank)
        if found is None:
            found = cache[rank] = {}
            for g in self.groups[rank]:
                found.setdefault((g.name, g.lo), []).append(g)
        return found.get((name, lo), [])

    def senders(self, rank: int) -> tuple[int, ...]:
        """The other ranks whose units `rank` consumes."""
        return tuple(sorted({s.rank for g in self.groups[rank] for s in g.remote} - {rank}))

    def receivers(self, rank: int) -> tuple[int, ...]:
        """The other ranks that consume units of `rank`."""
        return tuple(sorted({d for u in self.units[rank] for d in u.consumers} - {rank}))

    def staged_groups(self, rank: int) -> int:
        """How many of `rank`'s groups read staging: groups [0, n) wait for
        units, groups [n, len) read only the rank's own buffers."""
        return sum(1 for g in self.groups[rank] if g.remote)

    def unit_elems(self, rank: int) -> int:
        return sum(u.size for u in self.units[rank])

    def window_offsets(self, rank: int, align: int) -> list[int]:
        """Where each unit of `rank` lands in its region of a consumer's packet
        window: packed in unit order, each starting on a packet boundary."""
        offsets, at = [], 0
        for u in self.units[rank]:
            offsets.append(at)
            at += _packed(u.size, align)
        return offsets

    def window_elems(self, align: int) -> int:
        """Elements a packet window needs per source rank."""
        return max((sum(_packed(u.size, align) for u in us) for us in self.units), default=0)


# What a phase may ask for before anything is expanded (the plan, the tables
# and the simulator grow with it): units or groups of all ranks together.
MAX_PHASE_RECORDS = 1 << 20


def records(layout: Layout | OwnerSplit, chunk: int, empty_units: bool = False) -> int:
    """How many units (or groups) the slices of `layout` make, every rank's
    together, cut into chunks of `chunk` elements (0: one per slice), an empty
    slice one with `empty_units`."""
    return sum(n * (int(empty_units) if size == 0 else 1 if chunk <= 0 else -(-size // chunk))
               for size, n in layout.slice_sizes())


# A window packet: 8 data bytes and the 8-byte flag that publishes them, one
# 16-byte store (abi.h's kPacketDataBytes and kPacketBytes).
PACKET_DATA_BYTES = 8
PACKET_BYTES = 16


def packet_elems(itemsize: int) -> int:
    """Elements of one packet's 8 data bytes."""
    return PACKET_DATA_BYTES // itemsize


def _packed(size: int, align: int) -> int:
    """Elements a unit of `size` takes in a window: whole packets, at least
    one (an empty unit's packet carries its flag alone)."""
    return -(-max(size, 1) // align) * align


def _chunks(size: int, chunk: int) -> list[tuple[int, int]]:
    """The chunking rule: [lo, hi) of each unit a slice of `size` elements is
    cut into from 0, `chunk` elements each but the last (chunk 0: the whole
    slice; an empty slice has none). Its C++ is counts_tables.h's chunks,
    chunk_step and chunk_at (tests/python/cuda/test_chunks.py holds them equal)."""
    if size == 0:
        return []
    step = chunk if chunk > 0 else size
    return [(lo, min(lo + step, size)) for lo in range(0, size, step)]


def rank_units(plan: PhasePlan, rank: int) -> tuple[Unit, ...]:
    """The units `rank` produces: a chunk of each of its source slices that
    some rank reads from symmetric memory (every destination of its name, the
    rank itself only with stage_local), in name order."""
    mine: list[Unit] = []
    # Every rank reading a name, found once per name (most ranks' units ask for it).
    readers = plan.__dict__.setdefault("_readers_memo", {})
    for sl in sorted(plan.src.slices(rank), key=lambda s: s.name):
        every = readers.get(sl.name)
        if every is None:
            every = readers[sl.name] = tuple(dict.fromkeys(plan.dst.holders(sl.name)))
        who = every if plan.stage_local or rank not in every else tuple(d for d in every if d != rank)
        if not who and not plan.keep_unread:
            continue
        for lo, hi in plan.chunks_of(sl.size):
            mine.append(Unit(rank, len(mine), sl.name, lo, hi, sl.offset + lo, tuple(who)))
    return tuple(mine)


def rank_groups(plan: PhasePlan, rank: int) -> tuple[Group, ...]:
    """The groups `rank` consumes: a chunk of each of its destination slices,
    in name order, those that read staging first (PhasePlan.staged_groups)."""
    # A chunk's sources, found for its first consumer and shared by the
    # others (most read the same ones, their own, if any, in place): the
    # sources, their ranks, and the rank whose own source they read in place.
    memo = plan.__dict__.setdefault("_sources_memo", {})
    remote: list[tuple] = []
    local: list[tuple] = []  # groups of the rank's own sources alone
    for d in sorted(plan.dst.slices(rank), key=lambda s: s.name):
        for lo, hi in plan.chunks_of(d.size):
            found = memo.get((d.name, lo))
            if found is None:
                # Every rank reduces in rank order, so all get the same bits.
                srcs = tuple(
                    Source(s.rank, s.offset + lo,
                           None if s.rank == rank and not plan.stage_local else plan.unit_index(s.rank, d.name, lo))
                    for s in plan.src.slices_named(d.name))
                owners = frozenset(s.rank for s in srcs)
                memo[(d.name, lo)] = (srcs, owners, rank if rank in owners and not plan.stage_local else -1)
            else:
                srcs, owners, in_place = found
                if in_place != rank and (in_place >= 0 or (rank in owners and not plan.stage_local)):
                    srcs = tuple(Source(s.rank, s.offset, None) if s.rank == rank and not plan.stage_local
                                 else Source(s.rank, s.offset, plan.unit_index(s.rank, d.name, lo))
                                 if s.unit is None else s for s in srcs)
                    if rank not in owners:  # every source a unit: what the next consumers read
                        memo[(d.name, lo)] = (srcs, owners, -1)
            (remote if any(s.unit is not None for s in srcs) else local).append((d.name, lo, hi, d.offset + lo, srcs))
    # The local-only groups after the others can run in a role of their own.
    return tuple(Group(rank, i, name, lo, hi, offset, srcs)
                 for i, (name, lo, hi, offset, srcs) in enumerate(remote + local))


def owner_layouts(dst: Layout) -> tuple[OwnerSplit, OwnerSplit]:
    """Split a reduction into reduce-to-owner then copy-from-owner.

    The owner of the k-th name (in name order) is its (k mod n)-th
    destination, which for all_reduce makes rank i own slice i. Returns the
    owners' slices (where phase A reduces, and where phase B reads) and the
    other destinations (where phase B copies to), answered per rank and per
    name (coll.layouts.OwnerSplit).
    """
    return OwnerSplit(dst, True), OwnerSplit(dst, False)


def route_layouts(src: Layout, dst: Layout, route: str | None) -> tuple[Layout | OwnerSplit, Layout | OwnerSplit]:
    """The layouts a phase moves between. A composed reduction's phases keep
    the collective's own layouts in the IR (compact at any world size) and
    name a route: "to_owner" reduces every name at its owner, "from_owner"
    copies the owners' results (in the output) to the other destinations."""
    if route is None:
        return src, dst
    owned, rest = owner_layouts(dst)
    if route == "to_owner":
        return src, owned
    if route == "from_owner":
        return owned, rest
    raise ValueError(f"unknown route {route!r}")
