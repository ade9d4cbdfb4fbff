"""Naming layouts: the pure semantic model behind the `coll` dialect.

A layout names slices of every rank's buffer. A collective with input layout I,
output layout O and a consume kind says: every output slice receives the input
slices carrying the same name, one of them (copy) or all combined (reduce).

This module is dialect-free so that the verifier, the lowering, the simulator
and the runtime share one definition of what a layout means.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Callable, Iterator, Sequence

Name = tuple[int, ...]

# The most ranks the tools handle: an NVLink domain of 576 GPUs. Per-rank
# compilation (compile_plan(..., rank=r)) and snac-verify's proof by rank
# classes keep their cost near linear in the world up to it; the runtimes'
# plan readers check the same bound (csrc/include/purlin/plan.h kMaxWorld,
# held equal by tests/python/plan/test_plan_abi.py).
MAX_WORLD = 576


def world_problem(world: int) -> str | None:
    """Why `world` is not a world size purlin handles, or None."""
    if world < 1:
        return f"world size must be at least 1, got {world}"
    if world > MAX_WORLD:
        return (
            f"world size {world} is more than the {MAX_WORLD} ranks purlin handles "
            "(the largest NVLink domain it compiles, verifies and runs for)"
        )
    return None


class LayoutError(Exception):
    """A layout, or a pair of layouts, breaks a semantic rule."""


class LayoutKind(StrEnum):
    """How a layout cuts rank r's buffer into slices and names them."""

    PACKED = "packed"  # one slice, named r
    SCATTERED = "scattered"  # slice i named i, one per rank
    ADDRESSED = "addressed"  # slice i named (r, i): what r sends to i
    TRANSPOSED = "transposed"  # slice i named (i, r): what i sent to r
    NAMED = "named"  # slices listed one by one, each with its name


@dataclass(frozen=True)
class Slice:
    rank: int
    offset: int
    size: int
    name: Name

    @property
    def end(self) -> int:
        return self.offset + self.size


def format_name(name: Name) -> str:
    return str(name[0]) if len(name) == 1 else "(" + ", ".join(map(str, name)) + ")"


@dataclass(frozen=True)
class Layout:
    """A concrete layout for `world` ranks.

    `counts` is the per-slice element count: one int for the fixed forms, a
    list of `world` ints for packed/scattered V forms, a `world`x`world`
    matrix (row = sender) for addressed/transposed V forms, or None when the
    counts are dynamic and only known at run time (see `bind`).
    `slices_` holds the explicit slices of a named layout.
    """

    kind: LayoutKind
    world: int
    counts: int | tuple[int, ...] | tuple[tuple[int, ...], ...] | None = None
    slices_: tuple[Slice, ...] = ()
    variable: bool = False

    # -- construction -----------------------------------------------------

    @staticmethod
    def fixed(kind: LayoutKind, world: int, count: int) -> Layout:
        return Layout(kind, world, count)

    @staticmethod
    def vector(kind: LayoutKind, world: int, counts: Sequence | None) -> Layout:
        if counts is not None:
            if kind in (LayoutKind.ADDRESSED, LayoutKind.TRANSPOSED):
                counts = tuple(tuple(int(c) for c in row) for row in counts)
            else:
                counts = tuple(int(c) for c in counts)
        return Layout(kind, world, counts, variable=True)

    @staticmethod
    def named(world: int, slices: Sequence[Slice]) -> Layout:
        return Layout(LayoutKind.NAMED, world, None, tuple(slices))

    @property
    def is_dynamic(self) -> bool:
        return self.variable and self.counts is None

    @cached_property
    def matrix_counts(self) -> bool:
        return self.kind in (LayoutKind.ADDRESSED, LayoutKind.TRANSPOSED)

    def bind(self, counts: Sequence) -> Layout:
        """The concrete layout once dynamic counts are known."""
        if not self.is_dynamic:
            raise LayoutError("only a dynamic V layout can be bound to counts")
        bound = Layout.vector(self.kind, self.world, counts)
        bound.check()
        return bound

    def clamped(self, cap: int) -> Layout:
        """The same layout with every slice cut to at most `cap` elements
        (offsets of named slices kept), for checks whose cost grows with size."""
        if self.kind == LayoutKind.NAMED:
            return Layout.named(
                self.world,
                [Slice(s.rank, s.offset, min(s.size, cap), s.name) for s in self.slices_],
            )
        if self.is_dynamic:
            return self
        if not self.variable:
            assert isinstance(self.counts, int)
            return Layout.fixed(self.kind, self.world, min(self.counts, cap))
        if self.matrix_counts:
            rows = [[min(c, cap) for c in row] for row in self.counts]  # type: ignore[union-attr]
            return Layout.vector(self.kind, self.world, rows)
        return Layout.vector(self.kind, self.world, [min(c, cap) for c in self.counts])  # type: ignore[union-attr]

    # -- rules ------------------------------------------------------------

    def check(self) -> None:
        """Raise LayoutError when the layout itself is malformed."""
        w = self.world
        if why := world_problem(w):
            raise LayoutError(why)
        if self.kind == LayoutKind.NAMED:
            self._check_named()
            return
        if self.is_dynamic:
            return
        if not self.variable:
            assert isinstance(self.counts, int)
            if self.counts < 0:
                raise LayoutError(f"slice count must be non-negative, got {self.counts}")
            return
        counts = self.counts
        assert isinstance(counts, tuple)
        if len(counts) != w:
            raise LayoutError(
                f"expected {w} counts (one per rank), got {len(counts)}"
            )
        rows = counts if self.matrix_counts else (counts,)
        for i, row in enumerate(rows):
            if self.matrix_counts and (not isinstance(row, tuple) or len(row) != w):
                raise LayoutError(
                    f"row {i} of the count matrix must have {w} entries"
                )
            for c in row:
                if c < 0:
                    raise LayoutError(f"counts must be non-negative, got {c}")

    def _check_named(self) -> None:
        sizes: dict[Name, int] = {}
        by_rank: dict[int, list[Slice]] = {}
        for s in self.slices_:
            if not 0 <= s.rank < self.world:
                raise LayoutError(
                    f"slice {format_name(s.name)} is on rank {s.rank}, outside world {self.world}"
                )
            if s.offset < 0 or s.size < 0:
                raise LayoutError(
                    f"slice {format_name(s.name)} on rank {s.rank} has a negative offset or size"
                )
            if sizes.setdefault(s.name, s.size) != s.size:
                raise LayoutError(
                    f"slices named {format_name(s.name)} disagree in size: "
                    f"{sizes[s.name]} and {s.size}"
                )
            by_rank.setdefault(s.rank, []).append(s)
        for rank, slices in by_rank.items():
            # Empty slices overlap nothing; left in, they would hide an overlap
            # between their neighbours from the pairwise check.
            ordered = sorted((s for s in slices if s.size), key=lambda s: s.offset)
            for a, b in zip(ordered, ordered[1:]):
                if b.offset < a.end:
                    raise LayoutError(
                        f"slices {format_name(a.name)} [{a.offset}, {a.end}) and "
                        f"{format_name(b.name)} [{b.offset}, {b.end}) overlap on rank {rank}"
                    )

    # -- queries ----------------------------------------------------------
    # The fixed kinds answer in closed form, per rank or per name, from their
    # counts (prefix sums cached): nothing builds the world's W^2 slices. A
    # named layout's answers come from its listed slices.

    def _count(self, i: int, j: int = 0) -> int:
        if not self.variable:
            assert isinstance(self.counts, int)
            return self.counts
        if self.counts is None:
            raise LayoutError("dynamic layout: bind counts before asking for slices")
        if self.matrix_counts:
            return self.counts[i][j]  # type: ignore[index]
        return self.counts[i]  # type: ignore[return-value]

    def _memo(self, what: str) -> dict:
        return self.__dict__.setdefault("_memo_" + what, {})

    def _prefix(self, line: int | None, column: bool = False) -> tuple[int, ...]:
        """Offsets of the slices along one rank's buffer: of the counts
        (scattered), of row `line` (addressed) or of column `line` (transposed);
        W + 1 entries."""
        memo = self._memo("prefix")
        key = (line, column)
        found = memo.get(key)
        if found is None:
            w, at, out = self.world, 0, [0]
            for i in range(w):
                at += (self._count(i) if line is None else
                       self._count(i, line) if column else self._count(line, i))
                out.append(at)
            found = memo[key] = tuple(out)
        return found

    def _offset_on(self, rank: int, name: Name) -> int:
        """Offset of the slice named `name` on `rank`, one of its holders."""
        k = self.kind
        if k == LayoutKind.PACKED:
            return 0
        if k == LayoutKind.SCATTERED:
            return name[0] * self.counts if not self.variable else self._prefix(None)[name[0]]  # type: ignore[operator]
        if k == LayoutKind.ADDRESSED:
            return name[1] * self.counts if not self.variable else self._prefix(rank)[name[1]]  # type: ignore[operator]
        return name[0] * self.counts if not self.variable else self._prefix(rank, column=True)[name[0]]  # type: ignore[operator]

    def slices(self, rank: int) -> list[Slice]:
        """The named slices of `rank`'s buffer, in offset order."""
        memo = self._memo("slices")
        found = memo.get(rank)
        if found is None:
            found = memo[rank] = self._rank_slices(rank)
        return found

    def _rank_slices(self, rank: int) -> list[Slice]:
        k = self.kind
        if k == LayoutKind.NAMED:
            return self._named_index[0].get(rank, [])
        if k == LayoutKind.PACKED:
            return [Slice(rank, 0, self._count(rank), (rank,))]
        out: list[Slice] = []
        offset = 0
        for i, size in enumerate(self.line_sizes(rank)):
            name = (i,) if k == LayoutKind.SCATTERED else (rank, i) if k == LayoutKind.ADDRESSED else (i, rank)
            out.append(Slice(rank, offset, size, name))
            offset += size
        return out

    def line_sizes(self, rank: int) -> Sequence[int]:
        """The sizes of a fixed kind's slices on `rank`, in offset order."""
        k, w = self.kind, self.world
        assert k != LayoutKind.NAMED
        if k == LayoutKind.PACKED:
            return (self._count(rank),)
        if not self.variable:
            return (self.counts,) * w  # type: ignore[return-value]
        if self.counts is None:
            raise LayoutError("dynamic layout: bind counts before asking for slices")
        if k == LayoutKind.SCATTERED:
            return self.counts  # type: ignore[return-value]
        if k == LayoutKind.ADDRESSED:
            return self.counts[rank]  # type: ignore[return-value,index]
        return tuple(row[rank] for row in self.counts)  # type: ignore[union-attr,index]

    @cached_property
    def _named_index(self) -> tuple[dict[int, list[Slice]], dict[Name, list[Slice]]]:
        """A named layout's slices by rank (offset order) and by name (rank order)."""
        by_rank: dict[int, list[Slice]] = {}
        by_name: dict[Name, list[Slice]] = {}
        for s in self.slices_:
            by_rank.setdefault(s.rank, []).append(s)
            by_name.setdefault(s.name, []).append(s)
        for lst in by_rank.values():
            lst.sort(key=lambda s: s.offset)
        for lst in by_name.values():
            lst.sort(key=lambda s: (s.rank, s.offset))
        return by_rank, by_name

    def _is_name(self, name: Name) -> bool:
        w = self.world
        if self.kind in (LayoutKind.PACKED, LayoutKind.SCATTERED):
            return len(name) == 1 and 0 <= name[0] < w
        return len(name) == 2 and 0 <= name[0] < w and 0 <= name[1] < w

    def holders(self, name: Name) -> Sequence[int]:
        """The ranks holding a slice named `name`, in rank order."""
        k = self.kind
        if k == LayoutKind.NAMED:
            return [s.rank for s in self._named_index[1].get(name, ())]
        if not self._is_name(name):
            return ()
        if k == LayoutKind.SCATTERED:
            return range(self.world)
        return (name[0],) if k in (LayoutKind.PACKED, LayoutKind.ADDRESSED) else (name[1],)

    def holder_count(self, name: Name) -> int:
        return len(self.holders(name))

    def holds(self, rank: int, name: Name) -> bool:
        """Whether `rank` holds a slice named `name`."""
        if self.kind == LayoutKind.NAMED:
            return rank in self._named_holders.get(name, ())
        return rank in self.holders(name)

    @cached_property
    def _named_holders(self) -> dict[Name, set[int]]:
        return {name: {s.rank for s in found} for name, found in self._named_index[1].items()}

    def sole_names(self, rank: int) -> list[Name] | None:
        """The names only `rank` holds, when few and known without a scan, else None."""
        k, w = self.kind, self.world
        if k == LayoutKind.NAMED:
            return None
        if k == LayoutKind.SCATTERED:
            return [(i,) for i in range(w)] if w == 1 else []
        return self.owned_names(rank)  # each held by its owner alone

    def position(self, rank: int, name: Name) -> int:
        """Where the slice named `name` is among `rank`'s slices (a fixed
        kind's offset order is its name order)."""
        k = self.kind
        assert k != LayoutKind.NAMED
        return 0 if k == LayoutKind.PACKED else name[1] if k == LayoutKind.ADDRESSED else name[0]

    def name_size(self, name: Name) -> int | None:
        """Elements of the slices named `name`, None when there are none."""
        if self.kind == LayoutKind.NAMED:
            found = self._named_index[1].get(name)
            return found[0].size if found else None
        if not self._is_name(name):
            return None
        return self._count(*name)

    def slices_named(self, name: Name) -> list[Slice]:
        """The slices named `name`, in rank order."""
        if self.kind == LayoutKind.NAMED:
            return self._named_index[1].get(name, [])
        size = self.name_size(name)
        return [] if size is None else [Slice(r, self._offset_on(r, name), size, name) for r in self.holders(name)]

    def names(self) -> Iterator[Name]:
        """Every name, in order."""
        w, k = self.world, self.kind
        if k == LayoutKind.NAMED:
            return iter(sorted(self._named_index[1]))
        if k in (LayoutKind.PACKED, LayoutKind.SCATTERED):
            return ((i,) for i in range(w))
        return ((a, b) for a in range(w) for b in range(w))

    def name_count(self) -> int:
        if self.kind == LayoutKind.NAMED:
            return len(self._named_index[1])
        return self.world if self.kind in (LayoutKind.PACKED, LayoutKind.SCATTERED) else self.world**2

    def owned_names(self, rank: int) -> list[Name]:
        """The names `rank` owns (owner_layouts' rule: the k-th name's owner is
        its (k mod n)-th of n holders), in order."""
        k, w = self.kind, self.world
        if k == LayoutKind.NAMED:
            return self._named_owners[1].get(rank, [])
        if k in (LayoutKind.PACKED, LayoutKind.SCATTERED):
            # Name (i,) is the i-th; a scattered one's holders are all ranks.
            return [(rank,)]
        return [(rank, i) for i in range(w)] if k == LayoutKind.ADDRESSED else [(i, rank) for i in range(w)]

    def owner(self, name: Name) -> int:
        k = self.kind
        if k == LayoutKind.NAMED:
            return self._named_owners[0][name]
        if k == LayoutKind.TRANSPOSED:
            return name[1]
        return name[0]

    @cached_property
    def _named_owners(self) -> tuple[dict[Name, int], dict[int, list[Name]]]:
        owner: dict[Name, int] = {}
        owned: dict[int, list[Name]] = {}
        for i, name in enumerate(self.names()):
            holders = self.holders(name)
            owner[name] = holders[i % len(holders)]
            owned.setdefault(owner[name], []).append(name)
        return owner, owned

    def slice_sizes(self) -> Iterator[tuple[int, int]]:
        """(elements, how many slices) over every slice of every rank."""
        w, k = self.world, self.kind
        if k == LayoutKind.NAMED:
            return ((s.size, 1) for s in self.slices_)
        if not self.variable:
            assert isinstance(self.counts, int)
            return iter([(self.counts, w if k == LayoutKind.PACKED else w * w)])
        if k == LayoutKind.PACKED:
            return ((c, 1) for c in self.counts)  # type: ignore[union-attr]
        if k == LayoutKind.SCATTERED:
            return ((c, w) for c in self.counts)  # type: ignore[union-attr]
        return ((c, 1) for row in self.counts for c in row)  # type: ignore[union-attr]

    def extent(self, rank: int) -> int:
        """Elements of `rank`'s buffer the layout covers (its minimal size)."""
        k = self.kind
        if k == LayoutKind.NAMED:
            return max((s.end for s in self.slices(rank)), default=0)
        if k == LayoutKind.PACKED:
            return self._count(rank)
        if not self.variable:
            return self.world * self.counts  # type: ignore[operator]
        if k == LayoutKind.SCATTERED:
            return self._prefix(None)[-1]
        return self._prefix(rank, column=k == LayoutKind.TRANSPOSED)[-1]

    def max_extent(self) -> int:
        if self.kind == LayoutKind.NAMED:
            return max((s.end for s in self.slices_), default=0)
        if self.kind == LayoutKind.SCATTERED or not self.variable:
            return self.extent(0)  # the same on every rank
        return max(self.extent(r) for r in range(self.world))

    @cached_property
    def name_sizes(self) -> dict[Name, int]:
        if self.kind == LayoutKind.NAMED:
            return {name: found[0].size for name, found in self._named_index[1].items()}
        return {name: self._count(*name) for name in self.names()}


@dataclass(frozen=True)
class OwnerSplit:
    """A reduction's destination layout split between its names' owners
    (Layout.owner: the k-th name's (k mod n)-th of n holders) and the other
    holders: `owned` keeps each name's slice on its owner, else every other
    holder's. What a composed reduction reduces to (owned) and copies on to
    (the rest); answers per rank and per name from `base`, as Layout's do."""

    base: Layout
    owned: bool

    world = property(lambda self: self.base.world)
    is_dynamic = property(lambda self: self.base.is_dynamic)
    variable = False

    def check(self) -> None:
        """Nothing: a part of a checked layout."""

    def _keeps(self, rank: int, name: Name) -> bool:
        return (self.base.owner(name) == rank) == self.owned

    def slices(self, rank: int) -> list[Slice]:
        base = self.base
        if self.owned and base.kind != LayoutKind.NAMED:
            # A fixed kind's owned names are few per rank, in offset order.
            return [Slice(rank, base._offset_on(rank, n), base._count(*n), n) for n in base.owned_names(rank)]
        return [s for s in base.slices(rank) if self._keeps(rank, s.name)]

    def holds(self, rank: int, name: Name) -> bool:
        return self.base.holds(rank, name) and self._keeps(rank, name)

    def sole_names(self, rank: int) -> list[Name] | None:
        """The names only `rank` holds, when few and known without a scan, else None."""
        if self.owned and self.base.kind != LayoutKind.NAMED:
            return [n for n in self.base.owned_names(rank) if self.holder_count(n) == 1]
        return None

    def holders(self, name: Name) -> Sequence[int]:
        holders = self.base.holders(name)
        if not holders:
            return ()
        owner = self.base.owner(name)
        return (owner,) if self.owned else [r for r in holders if r != owner]

    def holder_count(self, name: Name) -> int:
        n = self.base.holder_count(name)
        return min(n, 1) if self.owned else max(n - 1, 0)

    def name_size(self, name: Name) -> int | None:
        return self.base.name_size(name) if self.holder_count(name) else None

    def slices_named(self, name: Name) -> list[Slice]:
        base = self.base
        if self.owned and base.kind != LayoutKind.NAMED:
            size = base.name_size(name)
            if size is None:
                return []
            owner = base.owner(name)
            return [Slice(owner, base._offset_on(owner, name), size, name)]
        return [s for s in base.slices_named(name) if self._keeps(s.rank, name)]

    def names(self) -> Iterator[Name]:
        return (n for n in self.base.names() if self.holder_count(n))

    def name_count(self) -> int:
        return sum(1 for _ in self.names())

    def slice_sizes(self) -> Iterator[tuple[int, int]]:
        return ((self.base.name_size(n) or 0, self.holder_count(n)) for n in self.names())

    def extent(self, rank: int) -> int:
        return max((s.end for s in self.slices(rank)), default=0)

    def max_extent(self) -> int:
        return max((self.extent(r) for r in range(self.world)), default=0)

    @cached_property
    def name_sizes(self) -> dict[Name, int]:
        return {n: self.base.name_size(n) or 0 for n in self.names()}


def check_collective(inp: Layout | OwnerSplit, out: Layout | OwnerSplit, reduce: bool) -> None:
    """Raise LayoutError unless `out` can be produced from `inp`.

    Every output name needs input slices of that name and the same size; a
    copy needs exactly one source per name (which one would be ambiguous).
    Asks per name (name_size, holder_count), never for the world's slices.
    """
    if inp.world != out.world:
        raise LayoutError(
            f"input layout is for world {inp.world} but output layout for world {out.world}"
        )
    inp.check()
    out.check()
    if inp.is_dynamic or out.is_dynamic:
        return
    if (isinstance(inp, Layout) and isinstance(out, Layout) and _fixed_kinds_agree(inp, out)
            and (reduce or inp.kind != LayoutKind.SCATTERED or inp.world == 1)):
        return
    for name in out.names():
        size = out.name_size(name)
        have = inp.name_size(name)
        if have is None:
            raise LayoutError(
                f"output slice {format_name(name)} is not covered by any input slice"
            )
        if have != size:
            raise LayoutError(
                f"slice {format_name(name)} has {have} elements in the input "
                f"but {size} in the output"
            )
        if not reduce and inp.holder_count(name) > 1:
            ranks = ", ".join(str(r) for r in inp.holders(name))
            raise LayoutError(
                f"copy of slice {format_name(name)} is ambiguous: ranks {ranks} all hold it"
            )


def _fixed_kinds_agree(a: Layout, b: Layout) -> bool:
    """Whether two layouts of the fixed kinds have the same names, each of
    the same size: the same arity (each kind names every rank, or every pair
    of ranks) and equal counts, compared whole."""
    if LayoutKind.NAMED in (a.kind, b.kind):
        return False
    single = (LayoutKind.PACKED, LayoutKind.SCATTERED)
    if (a.kind in single) != (b.kind in single):
        return False
    if not a.variable and not b.variable:
        return a.counts == b.counts
    if a.variable and b.variable:
        return a.counts == b.counts
    fixed, counts = (a, b.counts) if not a.variable else (b, a.counts)
    rows = counts if isinstance(counts[0], tuple) else (counts,)  # type: ignore[index]
    return all(c == fixed.counts for row in rows for c in row)  # type: ignore[union-attr]


def coalesced(src: Layout, dst: Layout) -> tuple[Layout, Layout] | None:
    """The same collective with fewer names, or None when no names merge.

    Name b joins name a when, in both layouts, b's slices sit on exactly the
    ranks that hold a's, each starting where a's ends: every output slice then
    still receives the same elements from the same ranks, and the protocol moves
    one unit where it moved two (an all_reduce's scattered names become one).
    """
    if src.is_dynamic or dst.is_dynamic or src.world != dst.world:
        return None
    kinds = {src.kind, dst.kind}
    if LayoutKind.PACKED in kinds or kinds == {LayoutKind.ADDRESSED, LayoutKind.TRANSPOSED}:
        # One slice a rank on one side; or a name's successor is (r, i + 1)
        # on one side and (r + 1, i) on the other: nothing merges.
        return None
    if kinds == {LayoutKind.SCATTERED} and _fixed_kinds_agree(src, dst):
        return _coalesced_scattered(src)

    def successors(layout: Layout) -> dict[Name, Name]:
        after: dict[Name, set] = {}
        for rank in range(layout.world):
            slices = [s for s in layout.slices(rank) if s.size]
            for a, b in zip(slices, slices[1:] + [None]):
                follower = b.name if b is not None and b.offset == a.end else None
                after.setdefault(a.name, set()).add(follower)
        holders = {n: {s.rank for s in layout.slices_named(n)} for n in layout.name_sizes}
        return {a: next(iter(f)) for a, f in after.items()
                if len(f) == 1 and None not in f and holders[a] == holders[next(iter(f))]}

    in_src, in_dst = successors(src), successors(dst)
    joins = {a: b for a, b in in_src.items() if in_dst.get(a) == b and a != b}
    if not joins:
        return None
    heads = [n for n in joins if n not in joins.values()]
    head_of: dict[Name, Name] = {}
    total: dict[Name, int] = {}
    for head in heads:
        name = head
        while name is not None:
            head_of[name] = head
            total[head] = total.get(head, 0) + src.name_sizes[name]
            name = joins.get(name)

    def rebuilt(layout: Layout) -> Layout:
        # A chain's head slice grows to the chain's size; its other members go.
        return Layout.named(layout.world, [
            Slice(s.rank, s.offset, total.get(s.name, s.size), s.name)
            for rank in range(layout.world) for s in layout.slices(rank)
            if head_of.get(s.name, s.name) == s.name
        ])

    return rebuilt(src), rebuilt(dst)


def _coalesced_scattered(layout: Layout) -> tuple[Layout, Layout] | None:
    """coalesced() of a scattered layout onto itself, in closed form: its
    non-empty names follow one another on every rank, so they merge into the
    first; empty ones stay as they are."""
    w = layout.world
    sizes = [layout._count(i) for i in range(w)]
    full = [i for i in range(w) if sizes[i]]
    if len(full) < 2:
        return None
    offsets = layout._prefix(None) if layout.variable else [i * sizes[0] for i in range(w + 1)]
    total = sum(sizes)
    per_rank = [(i, offsets[i], sizes[i]) for i in range(w) if not sizes[i] or i == full[0]]
    merged = Layout.named(w, [
        Slice(r, offset, total if i == full[0] else 0, (i,)) for r in range(w) for i, offset, _ in per_rank
    ])
    return merged, merged


def merged_scattered(layout: Layout) -> Layout:
    """A scattered layout (bound) as one name: its slices follow one another
    from offset 0 on every rank, so onto itself they move as one slice of
    their total, named as the first, whatever the counts (zeros included):
    an all_reduce_v's exchange, as all_reduce's coalesces."""
    if layout.kind != LayoutKind.SCATTERED or layout.is_dynamic:
        raise LayoutError(f"only a bound scattered layout merges into one name, not {layout.kind}")
    total = sum(layout._count(i) for i in range(layout.world))
    return Layout.named(layout.world, [Slice(r, 0, total, (0,)) for r in range(layout.world)])


# -- sub-groups -----------------------------------------------------------------

Groups = tuple[tuple[int, ...], ...]


def groups_problem(groups: Sequence[Sequence[int]], world: int) -> str | None:
    """Why `groups` are not sub-groups of a world of `world` ranks, or None.

    Each group is a non-empty list of distinct ranks of the world, in the
    order that numbers them (position = group-local rank); no rank is in two
    groups. Ranks in no group take no part.
    """
    if not groups:
        return "groups must list at least one group"
    seen: dict[int, int] = {}
    for g, group in enumerate(groups):
        if not group:
            return f"group {g} is empty"
        for r in group:
            if not 0 <= r < world:
                return f"group {g} names rank {r}, outside world {world}"
            if r in seen:
                where = "twice" if seen[r] == g else f"in groups {seen[r]} and {g}"
                return f"groups overlap: rank {r} is {where}"
            seen[r] = g
    return None


def embed(local: Callable[[int], Layout], groups: Sequence[Sequence[int]], world: int) -> Layout:
    """The layout over `world` ranks of one collective per group: group g runs
    `local(len(group))` over its group-local ranks, its local rank l being
    global rank groups[g][l]; names are prefixed with g, so groups never mix."""
    slices: list[Slice] = []
    for g, group in enumerate(groups):
        layout = local(len(group))
        for l, rank in enumerate(group):
            slices += [Slice(rank, s.offset, s.size, (g, *s.name)) for s in layout.slices(l)]
    return Layout.named(world, slices)
