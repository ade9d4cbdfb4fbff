"""Process groups of the ML IRs purlin imports, as lists of global ranks.

StableHLO runs replicas x partitions processes, process id
replica * partitions + partition (the rank), and splits them into groups by
one of four strategies (its spec, "Collective ops"); a mesh of named axes
gives the groups by axes instead. MLIR's `shard` dialect groups the devices
of a grid along `grid_axes`. In every group the order of the list is the
group-local rank. Dialect-free, so that the importers and the numpy
reference of the imported semantics share it.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from math import prod


class GroupingError(ValueError):
    """Groups that do not fit the process grid."""


class Strategy(StrEnum):
    CROSS_REPLICA = "cross_replica"
    CROSS_PARTITION = "cross_partition"
    CROSS_REPLICA_AND_PARTITION = "cross_replica_and_partition"
    FLATTENED_IDS = "flattened_ids"


def reduction_strategy(channel_id: int, use_global_device_ids: bool) -> Strategy:
    """The strategy of all_reduce, all_gather and reduce_scatter."""
    if use_global_device_ids:
        if channel_id <= 0:
            raise GroupingError("use_global_device_ids needs a channel_handle with handle > 0")
        return Strategy.FLATTENED_IDS
    return Strategy.CROSS_REPLICA if channel_id <= 0 else Strategy.CROSS_REPLICA_AND_PARTITION


def exchange_strategy(channel_id: int) -> Strategy:
    """The strategy of all_to_all, collective_permute and collective_broadcast."""
    return Strategy.CROSS_REPLICA if channel_id <= 0 else Strategy.CROSS_PARTITION


def _rows(rows: Sequence[Sequence[int]], bound: int, what: str) -> list[list[int]]:
    """Rows without their -1 padding (ragged groups), each id in [0, bound) once."""
    out, seen = [], set()
    for row in rows:
        ids = [int(i) for i in row if i != -1]
        for i in ids:
            if not 0 <= i < bound:
                raise GroupingError(f"{what} {i} is outside [0, {bound})")
            if i in seen:
                raise GroupingError(f"{what} {i} is in more than one group")
            seen.add(i)
        out.append(ids)
    return out


def stablehlo_groups(strategy: Strategy, rows: Sequence[Sequence[int]], replicas: int,
                     partitions: int) -> list[list[int]]:
    """The process groups (lists of ranks) of `rows` (replica_groups, -1
    padded when ragged; empty: one group of all) under `strategy`."""
    r_ids, p_ids = range(replicas), range(partitions)
    if strategy == Strategy.FLATTENED_IDS:
        if not rows:
            raise GroupingError("flattened ids need replica_groups")
        return _rows(rows, replicas * partitions, "process id")
    if strategy == Strategy.CROSS_PARTITION:
        parts = _rows(rows, partitions, "partition id") if rows else [list(p_ids)]
        return [[r * partitions + p for p in group] for group in parts for r in r_ids]
    reps = _rows(rows, replicas, "replica id") if rows else [list(r_ids)]
    if strategy == Strategy.CROSS_REPLICA:
        return [[r * partitions + p for r in group] for group in reps for p in p_ids]
    # Partition-major within a group: each partition's replicas of the group in
    # turn, as StableHLO's spec and interpreter order them (openxla/stablehlo#1933).
    return [[r * partitions + p for p in p_ids for r in group] for group in reps]


def permute_groups(strategy: Strategy, replicas: int, partitions: int) -> list[list[int]]:
    """The groups a collective_permute's pairs are local to: each partition's
    replicas (cross_replica), or each replica's partitions."""
    if strategy == Strategy.CROSS_PARTITION:
        return [[r * partitions + p for p in range(partitions)] for r in range(replicas)]
    return [[r * partitions + p for r in range(replicas)] for p in range(partitions)]


def axes_groups(sizes: Sequence[int], members: Sequence[tuple[int, int, int]]) -> list[list[int]]:
    """Groups of the devices of a row-major grid of axis `sizes`: one group
    per position on what `members` leave free, its ranks running over the
    members in order (the first the most significant). A member is
    (axis, pre, size): the sub-axis of `size` after `pre` (index along the
    axis = (major * size + sub) * minor_count + minor), or (axis, 1, n)
    for a whole axis of size n."""
    for axis, pre, size in members:
        n = sizes[axis]
        if pre < 1 or size < 1 or n % (pre * size):
            raise GroupingError(f"sub-axis ({pre}){size} does not divide axis {axis} of size {n}")
    groups: dict[tuple, list[tuple[int, int]]] = {}
    for device in range(prod(sizes)):
        coords, rest = [], device
        for n in reversed(sizes):
            coords.append(rest % n)
            rest //= n
        coords.reverse()
        key = list(coords)
        local = 0
        for axis, pre, size in members:
            minor = sizes[axis] // (pre * size)
            sub = coords[axis] // minor % size
            local = local * size + sub
            key[axis] -= sub * minor
        groups.setdefault(tuple(key), []).append((local, device))
    return [[d for _, d in sorted(g)] for _, g in sorted(groups.items())]


def check_mesh_axes(axes: Sequence[tuple[str, int]], refs: Sequence[tuple[str, int, int]],
                    world: int) -> list[list[int]]:
    """The groups of a mesh (`axes`: (name, size)) along `refs` ((name, pre,
    size), pre 0 for a whole axis) for `world` processes."""
    names = [n for n, _ in axes]
    sizes = [s for _, s in axes]
    if prod(sizes) != world:
        raise GroupingError(f"the mesh has {prod(sizes)} devices but the program runs {world} processes")
    members = []
    for name, pre, size in refs:
        if name not in names:
            raise GroupingError(f"axis '{name}' is not an axis of the mesh ({', '.join(names)})")
        axis = names.index(name)
        members.append((axis, 1, sizes[axis]) if pre == 0 else (axis, pre, size))
    return axes_groups(sizes, members)


def grid_groups(shape: Sequence[int], grid_axes: Sequence[int]) -> list[list[int]]:
    """`shard` groups: the devices of a grid varying along `grid_axes`."""
    for a in grid_axes:
        if not 0 <= a < len(shape):
            raise GroupingError(f"grid axis {a} is outside the grid's {len(shape)} axes")
    if len(set(grid_axes)) != len(grid_axes):
        raise GroupingError(f"grid axes {list(grid_axes)} repeat an axis")
    return axes_groups(shape, [(a, 1, shape[a]) for a in grid_axes])
