"""Collectives on row-major tensors as naming layouts over group-local ranks.

A collective along a tensor dimension moves boxes (parts of a tensor cut
along that dimension); a box is a set of runs of consecutive elements in
both the tensor it leaves and the one it enters. Each run becomes one named
slice, so gathering or scattering along a non-leading dimension is a strided
named layout, not a transpose. Along the leading dimension (or with nothing
before it) a box is one run and the layouts are the classic ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

import numpy as np

from purlin.coll.layouts import Layout, Slice


def box_offsets(shape: Sequence[int], start: Sequence[int], size: Sequence[int]) -> np.ndarray:
    """Flat offsets, in the box's own row-major order, of the box of `size`
    at `start` in a row-major tensor of `shape`."""
    index = np.arange(prod(shape), dtype=np.int64).reshape(tuple(shape))
    return index[tuple(slice(a, a + n) for a, n in zip(start, size))].reshape(-1)


def matched_runs(src: np.ndarray, dst: np.ndarray) -> list[tuple[int, int, int]]:
    """(src offset, dst offset, length) of the longest runs along which both
    offset lists step by one."""
    if src.size == 0:
        return []
    breaks = np.flatnonzero((np.diff(src) != 1) | (np.diff(dst) != 1)) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [src.size]])
    return [(int(src[a]), int(dst[a]), int(b - a)) for a, b in zip(starts, ends)]


def _along(shape: Sequence[int], dim: int, at: int, n: int) -> tuple[list[int], list[int]]:
    start = [0] * len(shape)
    size = list(shape)
    start[dim], size[dim] = at, n
    return start, size


def gather(shape: Sequence[int], dim: int, group: int) -> tuple[Layout, Layout]:
    """all_gather along `dim` of an input of `shape`: rank l's input lands at
    block l of the output along `dim`, on every rank."""
    out_shape = list(shape)
    out_shape[dim] *= group
    whole = box_offsets(shape, [0] * len(shape), shape)
    ins, outs = [], []
    for l in range(group):
        dst = box_offsets(out_shape, *_along(shape, dim, l * shape[dim], shape[dim]))
        for k, (so, do, n) in enumerate(matched_runs(whole, dst)):
            ins.append(Slice(l, so, n, (l, k)))
            outs += [Slice(r, do, n, (l, k)) for r in range(group)]
    return Layout.named(group, ins), Layout.named(group, outs)


def scatter(shape: Sequence[int], dim: int, group: int) -> tuple[Layout, Layout]:
    """reduce_scatter along `dim` of an input of `shape` (divisible by the
    group): block j along `dim` of every rank's input, reduced, is rank j's
    output."""
    part = shape[dim] // group
    out_shape = list(shape)
    out_shape[dim] = part
    whole = box_offsets(out_shape, [0] * len(shape), out_shape)
    ins, outs = [], []
    for j in range(group):
        src = box_offsets(shape, *_along(shape, dim, j * part, part))
        for k, (so, do, n) in enumerate(matched_runs(src, whole)):
            ins += [Slice(r, so, n, (j, k)) for r in range(group)]
            outs.append(Slice(j, do, n, (j, k)))
    return Layout.named(group, ins), Layout.named(group, outs)


def slice_own(shape: Sequence[int], dim: int, group: int) -> tuple[Layout, Layout]:
    """Each rank keeps block l (its group-local rank) along `dim`."""
    inp, out = scatter(shape, dim, group)
    return (Layout.named(group, [s for s in inp.slices_ if s.rank == s.name[0]]), out)


def all_to_all(shape: Sequence[int], split: int, concat: int, group: int) -> tuple[Layout, Layout]:
    """Block j along `split` of rank i's input goes to rank j, where it is
    block i along `concat` of the output."""
    part_shape = list(shape)
    part_shape[split] //= group
    out_shape = list(part_shape)
    out_shape[concat] *= group
    ins, outs = [], []
    for i in range(group):
        for j in range(group):
            src = box_offsets(shape, *_along(part_shape, split, j * part_shape[split], part_shape[split]))
            dst = box_offsets(out_shape, *_along(part_shape, concat, i * part_shape[concat], part_shape[concat]))
            for k, (so, do, n) in enumerate(matched_runs(src, dst)):
                ins.append(Slice(i, so, n, (i, j, k)))
                outs.append(Slice(j, do, n, (i, j, k)))
    return Layout.named(group, ins), Layout.named(group, outs)


def permute(pairs: Sequence[tuple[int, int]], group: int, elems: int) -> tuple[Layout, Layout]:
    """Rank s's whole buffer to rank t for every (s, t); ranks nobody sends
    to keep their output."""
    sources = sorted({s for s, _ in pairs})
    ins = [Slice(s, 0, elems, (s,)) for s in sources]
    outs = [Slice(t, 0, elems, (s,)) for s, t in pairs]
    return Layout.named(group, ins), Layout.named(group, outs)


def broadcast(group: int, elems: int) -> tuple[Layout, Layout]:
    """Group-local rank 0's buffer to every rank of the group."""
    return (Layout.named(group, [Slice(0, 0, elems, (0,))]),
            Layout.named(group, [Slice(r, 0, elems, (0,)) for r in range(group)]))


def leading(shape: Sequence[int], dim: int) -> bool:
    """Whether blocks along `dim` are contiguous (nothing before `dim`)."""
    return prod(shape[:dim]) == 1
