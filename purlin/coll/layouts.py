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
from typing import Callable, Sequence

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

    @property
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

    def _count(self, i: int, j: int = 0) -> int:
        if not self.variable:
            assert isinstance(self.counts, int)
            return self.counts
        if self.counts is None:
            raise LayoutError("dynamic layout: bind counts before asking for slices")
        if self.matrix_counts:
            return self.counts[i][j]  # type: ignore[index]
        return self.counts[i]  # type: ignore[return-value]

    def slices(self, rank: int) -> list[Slice]:
        """The named slices of `rank`'s buffer, in offset order."""
        return self._all_slices[rank]

    @cached_property
    def _all_slices(self) -> list[list[Slice]]:
        w = self.world
        out: list[list[Slice]] = [[] for _ in range(w)]
        if self.kind == LayoutKind.NAMED:
            for s in self.slices_:
                out[s.rank].append(s)
            for lst in out:
                lst.sort(key=lambda s: s.offset)
            return out
        for rank in range(w):
            if self.kind == LayoutKind.PACKED:
                out[rank].append(Slice(rank, 0, self._count(rank), (rank,)))
                continue
            offset = 0
            for i in range(w):
                if self.kind == LayoutKind.SCATTERED:
                    size, name = self._count(i), (i,)
                elif self.kind == LayoutKind.ADDRESSED:
                    size, name = self._count(rank, i), (rank, i)
                else:
                    size, name = self._count(i, rank), (i, rank)
                out[rank].append(Slice(rank, offset, size, name))
                offset += size
        return out

    def extent(self, rank: int) -> int:
        """Elements of `rank`'s buffer the layout covers (its minimal size)."""
        return max((s.end for s in self.slices(rank)), default=0)

    def max_extent(self) -> int:
        return max((self.extent(r) for r in range(self.world)), default=0)

    @cached_property
    def name_sizes(self) -> dict[Name, int]:
        sizes: dict[Name, int] = {}
        for rank in range(self.world):
            for s in self.slices(rank):
                sizes[s.name] = s.size
        return sizes

    def slices_named(self, name: Name) -> list[Slice]:
        return self._by_name.get(name, [])

    @cached_property
    def _by_name(self) -> dict[Name, list[Slice]]:
        by: dict[Name, list[Slice]] = {}
        for rank in range(self.world):
            for s in self.slices(rank):
                by.setdefault(s.name, []).append(s)
        return by


def check_collective(inp: Layout, out: Layout, reduce: bool) -> None:
    """Raise LayoutError unless `out` can be produced from `inp`.

    Every output name needs input slices of that name and the same size; a
    copy needs exactly one source per name (which one would be ambiguous).
    """
    if inp.world != out.world:
        raise LayoutError(
            f"input layout is for world {inp.world} but output layout for world {out.world}"
        )
    inp.check()
    out.check()
    if inp.is_dynamic or out.is_dynamic:
        return
    for name, size in out.name_sizes.items():
        sources = inp.slices_named(name)
        if not sources:
            raise LayoutError(
                f"output slice {format_name(name)} is not covered by any input slice"
            )
        if sources[0].size != size:
            raise LayoutError(
                f"slice {format_name(name)} has {sources[0].size} elements in the input "
                f"but {size} in the output"
            )
        if not reduce and len(sources) > 1:
            ranks = ", ".join(str(s.rank) for s in sources)
            raise LayoutError(
                f"copy of slice {format_name(name)} is ambiguous: ranks {ranks} all hold it"
            )


def coalesced(src: Layout, dst: Layout) -> tuple[Layout, Layout] | None:
    """The same collective with fewer names, or None when no names merge.

    Name b joins name a when, in both layouts, b's slices sit on exactly the
    ranks that hold a's, each starting where a's ends: every output slice then
    still receives the same elements from the same ranks, and the protocol moves
    one unit where it moved two (an all_reduce's scattered names become one).
    """
    if src.is_dynamic or dst.is_dynamic or src.world != dst.world:
        return None

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
