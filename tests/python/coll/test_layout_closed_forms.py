"""The fixed layout kinds and the owner split answer per rank and per name in
closed form; each answer is checked here against the same layout written out
slice by slice (a named layout, which enumerates), over every world 1..12 with
fixed counts, odd counts and counts with zeros."""

from __future__ import annotations

import random
from itertools import product

import pytest

from purlin.coll.layouts import Layout, LayoutError, LayoutKind, OwnerSplit, Slice, check_collective, coalesced
from purlin.snac.protocol import PhasePlan, owner_layouts

KINDS = (LayoutKind.PACKED, LayoutKind.SCATTERED, LayoutKind.ADDRESSED, LayoutKind.TRANSPOSED)
WORLDS = range(1, 13)


def by_definition(kind: LayoutKind, w: int, count) -> list[Slice]:
    """Every slice of every rank, from the kinds' definitions (DESIGN.md)."""
    def c(i, j=None):
        if isinstance(count, int):
            return count
        return count[i] if j is None else count[i][j]

    out = []
    for r in range(w):
        if kind == LayoutKind.PACKED:
            out.append(Slice(r, 0, c(r), (r,)))
            continue
        at = 0
        for i in range(w):
            if kind == LayoutKind.SCATTERED:
                size, name = c(i), (i,)
            elif kind == LayoutKind.ADDRESSED:
                size, name = c(r, i), (r, i)
            else:
                size, name = c(i, r), (i, r)
            out.append(Slice(r, at, size, name))
            at += size
    return out


def layouts(w: int, seed: int = 0):
    """(closed form, enumerated) pairs of each kind: fixed, odd and zero-holding V counts."""
    rng = random.Random(w * 31 + seed)
    for kind in KINDS:
        matrix = kind in (LayoutKind.ADDRESSED, LayoutKind.TRANSPOSED)
        for counts in (3, 0, "odd", "zeros"):
            if isinstance(counts, int):
                layout = Layout.fixed(kind, w, counts)
                flat = counts
            else:
                pick = (lambda: rng.choice([1, 3, 5, 7])) if counts == "odd" else (lambda: rng.choice([0, 0, 2, 5]))
                flat = [[pick() for _ in range(w)] for _ in range(w)] if matrix else [pick() for _ in range(w)]
                layout = Layout.vector(kind, w, flat)
                flat = layout.counts
            yield layout, Layout.named(w, by_definition(kind, w, flat))


@pytest.mark.parametrize("w", WORLDS)
def test_queries_equal_the_enumerated_layout(w):
    for closed, listed in layouts(w):
        assert closed.name_sizes == listed.name_sizes
        assert list(closed.names()) == list(listed.names()) == sorted(listed.name_sizes)
        assert closed.name_count() == len(listed.name_sizes)
        assert closed.max_extent() == listed.max_extent()
        assert sorted(s for s, n in closed.slice_sizes() for _ in range(n)) == \
            sorted(s for s, n in listed.slice_sizes() for _ in range(n))
        for r in range(w):
            assert closed.slices(r) == listed.slices(r)
            assert closed.extent(r) == listed.extent(r)
            assert closed.owned_names(r) == listed.owned_names(r)
            sole = closed.sole_names(r)
            assert sole == [n for n in listed.names() if list(listed.holders(n)) == [r]]
            for pos, s in enumerate(closed.slices(r)):
                assert closed.position(r, s.name) == pos
        for name in listed.name_sizes:
            assert closed.slices_named(name) == listed.slices_named(name)
            assert list(closed.holders(name)) == list(listed.holders(name))
            assert closed.name_size(name) == listed.name_size(name)
            assert closed.owner(name) == listed.owner(name)
            for r in range(w):
                assert closed.holds(r, name) == listed.holds(r, name)
        for missing in ((w,), (0, w), (0, 0, 0)):
            assert closed.slices_named(missing) == [] and closed.name_size(missing) is None


def enumerated_owner_split(dst: Layout) -> tuple[Layout, Layout]:
    """The owner rule by its definition: the k-th name's owner is its (k mod n)-th holder."""
    owned, rest = [], []
    for k, name in enumerate(sorted(dst.name_sizes)):
        dests = sorted(dst.slices_named(name), key=lambda s: s.rank)
        owner = dests[k % len(dests)]
        owned.append(owner)
        rest += [d for d in dests if d.rank != owner.rank]
    return Layout.named(dst.world, owned), Layout.named(dst.world, rest)


@pytest.mark.parametrize("w", WORLDS)
def test_owner_split_equals_the_enumerated_one(w):
    for closed, listed in layouts(w):
        for part, want in zip(owner_layouts(closed), enumerated_owner_split(listed)):
            assert isinstance(part, OwnerSplit)
            assert part.name_sizes == want.name_sizes
            assert list(part.names()) == list(want.names())
            assert part.max_extent() == want.max_extent()
            assert sorted(s for s, n in part.slice_sizes() for _ in range(n)) == \
                sorted(s for s, n in want.slice_sizes() for _ in range(n))
            for r in range(w):
                assert part.slices(r) == want.slices(r)
                if (sole := part.sole_names(r)) is not None:
                    assert sole == [n for n in want.names() if list(want.holders(n)) == [r]]
            for name in closed.name_sizes:
                assert part.slices_named(name) == want.slices_named(name)
                assert list(part.holders(name)) == list(want.holders(name))
                assert part.holder_count(name) == len(want.slices_named(name))
                assert part.name_size(name) == want.name_size(name)
                for r in range(w):
                    assert part.holds(r, name) == want.holds(r, name)


def verdict(inp, out, reduce: bool) -> str | None:
    try:
        check_collective(inp, out, reduce)
    except LayoutError as e:
        return str(e)
    return None


@pytest.mark.parametrize("w", [1, 2, 3, 5, 8])
def test_check_collective_equals_the_enumerated_check(w):
    pairs = list(layouts(w, seed=1))
    for (ci, li), (co, lo), reduce in product(pairs, pairs, (False, True)):
        assert verdict(ci, co, reduce) == verdict(li, lo, reduce), (ci, co, reduce)
    for (closed, listed), reduce in product(pairs, (False, True)):
        for c_part, l_part in zip(owner_layouts(closed), enumerated_owner_split(listed)):
            assert verdict(closed, c_part, reduce) == verdict(listed, l_part, reduce)
            assert verdict(c_part, c_part, reduce) == verdict(l_part, l_part, reduce)


@pytest.mark.parametrize("w", WORLDS)
def test_coalesced_equals_the_enumerated_merge(w):
    pairs = list(layouts(w, seed=2))
    for (ci, li), (co, lo) in product(pairs, pairs):
        got, want = coalesced(ci, co), coalesced(li, lo)
        if want is None:
            assert got is None
        else:
            assert got is not None
            for g, x in zip(got, want):
                assert [g.slices(r) for r in range(w)] == [x.slices(r) for r in range(w)]


def phase_pairs(w: int):
    """(closed form, enumerated) (src, dst) pairs of the phases the lowering makes."""
    for (cs, ls), (cd, ld) in product(layouts(w, seed=3), repeat=2):
        if verdict(ls, ld, True) is None:
            yield (cs, cd), (ls, ld)
            for c_part, l_part in zip(owner_layouts(cd), enumerated_owner_split(ld)):
                yield (cs, c_part), (ls, l_part)
                yield (c_part, c_part), (l_part, l_part)


@pytest.mark.parametrize("w", [1, 2, 3, 4, 7, 9])
def test_phase_counts_equal_the_enumerated_phase(w):
    for (cs, cd), (ls, ld) in phase_pairs(w):
        for chunk, keep_unread, stage_local, empty in product((0, 2, 5), (False, True), (False, True), (False, True)):
            closed = PhasePlan(w, cs, cd, True, chunk, keep_unread=keep_unread, stage_local=stage_local,
                               empty_units=empty)
            listed = PhasePlan(w, ls, ld, True, chunk, keep_unread=keep_unread, stage_local=stage_local,
                               empty_units=empty)
            for r in range(w):
                assert closed.units[r] == listed.units[r]
                assert closed.groups[r] == listed.groups[r]
                assert closed.unit_count(r) == len(listed.units[r])
                assert closed.group_count(r) == len(listed.groups[r])
            assert closed.max_units == max(len(u) for u in listed.units)
            assert closed.max_groups == max(len(g) for g in listed.groups)
            assert closed.max_unit_elems == max((u.size for us in listed.units for u in us), default=0)
