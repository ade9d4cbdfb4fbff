"""coalesced(): names that travel together merge, and nothing else changes."""

import random

import pytest

from purlin.coll.layouts import Layout, LayoutKind, Slice, coalesced

K = LayoutKind


def contributions(src: Layout, dst: Layout) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """Every output element (rank, offset) -> the input elements (rank, offset) it receives."""
    got = {}
    for name, size in dst.name_sizes.items():
        for d in dst.slices_named(name):
            for i in range(size):
                got[(d.rank, d.offset + i)] = sorted((s.rank, s.offset + i) for s in src.slices_named(name))
    return got


def test_all_reduce_names_become_one():
    s = Layout.fixed(K.SCATTERED, 4, 5)
    src, dst = coalesced(s, s)
    assert list(src.name_sizes) == [(0,)] and src.name_sizes[(0,)] == 20
    assert [(x.rank, x.offset, x.size) for x in dst.slices_] == [(r, 0, 20) for r in range(4)]
    assert contributions(src, dst) == contributions(s, s)


@pytest.mark.parametrize("src, dst", [
    (Layout.fixed(K.SCATTERED, 4, 5), Layout.fixed(K.PACKED, 4, 5)),       # reduce_scatter
    (Layout.fixed(K.PACKED, 4, 5), Layout.fixed(K.SCATTERED, 4, 5)),       # all_gather
    (Layout.fixed(K.ADDRESSED, 3, 2), Layout.fixed(K.TRANSPOSED, 3, 2)),   # all_to_all
    (Layout.fixed(K.SCATTERED, 3, 0), Layout.fixed(K.SCATTERED, 3, 0)),    # nothing to move
    (Layout.vector(K.SCATTERED, 2, None), Layout.vector(K.SCATTERED, 2, None)),  # dynamic
])
def test_nothing_merges(src, dst):
    assert coalesced(src, dst) is None


def test_a_name_on_other_ranks_stays_apart():
    # 0 and 1 sit side by side everywhere; 2 follows 1 on rank 1 only.
    src = Layout.named(2, [Slice(0, 0, 3, (0,)), Slice(0, 3, 2, (1,)), Slice(1, 0, 3, (0,)),
                           Slice(1, 3, 2, (1,)), Slice(1, 5, 4, (2,))])
    dst = Layout.named(2, [Slice(0, 0, 3, (0,)), Slice(0, 3, 2, (1,)), Slice(0, 5, 4, (2,)),
                           Slice(1, 0, 3, (0,)), Slice(1, 3, 2, (1,))])
    new_src, new_dst = coalesced(src, dst)
    assert new_src.name_sizes == {(0,): 5, (2,): 4} and new_dst.name_sizes == {(0,): 5, (2,): 4}
    assert contributions(new_src, new_dst) == contributions(src, dst)


def test_a_gap_keeps_names_apart():
    src = Layout.named(2, [Slice(r, 0, 2, (0,)) for r in range(2)] + [Slice(r, 3, 2, (1,)) for r in range(2)])
    assert coalesced(src, src) is None


@pytest.mark.parametrize("seed", range(60))
def test_random_named_layouts_keep_their_meaning(seed):
    rng = random.Random(seed)
    world, names = rng.randint(1, 4), rng.randint(1, 6)
    sizes = [rng.randint(0, 3) for _ in range(names)]

    def layout(holders):
        slices = []
        for rank in range(world):
            at = 0
            order = list(range(names)) if rng.random() < 0.9 else rng.sample(range(names), names)
            for n in order:
                if rank in holders[n]:
                    at += rng.random() < 0.1  # sometimes a gap
                    slices.append(Slice(rank, at, sizes[n], (n,)))
                    at += sizes[n]
        return Layout.named(world, slices)

    holders = [set(range(world)) if rng.random() < 0.5 else set(rng.sample(range(world), rng.randint(1, world)))
               for _ in range(names)]
    src = layout(holders)
    dst = layout([set(range(world)) if rng.random() < 0.5 else h for h in holders])
    merged = coalesced(src, dst)
    if merged is None:
        return
    new_src, new_dst = merged
    new_src.check()
    new_dst.check()
    assert len(new_src.name_sizes) < len(src.name_sizes)
    assert contributions(new_src, new_dst) == contributions(src, dst)
