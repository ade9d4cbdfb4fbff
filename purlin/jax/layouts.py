"""How one device's array of a jax.lax collective maps onto the 1-D buffers
of purlin's collective, and which devices form its groups.

Every device of a group holds an array of one shape S; the collective's
input is S flattened after a transpose that puts what goes to each rank in
rank order, and its output is reshaped and transposed back into what
jax.lax returns (the shapes of jax's own abstract evaluation). Groups are
those jax.lax's lowering computes: the mesh's devices along the named axes
(row-major in the order the axes are named), split by axis_index_groups.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Layout:
    """purlin's collective for one jax.lax collective at one shape."""

    collective: str
    op: str | None
    count: int                   # compile_plan's count (0 with counts)
    counts: tuple[tuple[int, ...], ...] | None  # all_to_all_v's matrix (ppermute)
    input_elems: int
    output_elems: int
    pre: Callable                # rank's array -> purlin's input
    post: Callable               # purlin's output -> jax.lax's result
    sorted_ranks: bool = False   # a group's ranks in device order (ppermute's numbering)


def _flat(x):
    return x.reshape(-1)


def _blocks_first(x, axis: int, n: int):
    """x with dimension `axis` cut into n equal blocks, block j the j-th run of the flat result."""
    s = x.shape
    return jnp.moveaxis(x.reshape(s[:axis] + (n, s[axis] // n) + s[axis + 1:]), axis, 0).reshape(-1)


def _stacked_into(y, n: int, block: Shape, axis: int, out: Shape):
    """n blocks of shape `block` in rank order, joined at dimension `axis` of `out`."""
    return jnp.moveaxis(y.reshape((n, *block)), 0, axis).reshape(out)


def layout(name: str, params: dict, shape: Shape, out_shape: Shape, n: int, op: str | None) -> Layout:
    """purlin's collective for jax.lax primitive `name` (with its params) on
    arrays of `shape` giving `out_shape`, over groups of `n` devices; `op`
    is the reduction of those that reduce."""
    size = math.prod(shape)
    out_size = math.prod(out_shape)

    def reshape_out(y):
        return y.reshape(out_shape)

    if name in ("psum_invariant", "psum", "pmax", "pmin"):
        return Layout("all_reduce", op, size, None, size, size, _flat, reshape_out)
    if name == "all_gather":
        d = params["all_gather_dimension"]
        return Layout("all_gather", None, size, None, size, n * size, _flat,
                      lambda y: _stacked_into(y, n, shape, d, out_shape))
    if name == "reduce_scatter":
        d = params["scatter_dimension"]
        return Layout("reduce_scatter", op, size // n, None, size, size // n,
                      lambda x: _blocks_first(x, d, n), reshape_out)
    if name == "all_to_all":
        s, c = params["split_axis"], params["concat_axis"]
        block = shape[:s] + (shape[s] // n,) + shape[s + 1:]
        return Layout("all_to_all", None, size // n, None, size, out_size,
                      lambda x: _blocks_first(x, s, n), lambda y: _stacked_into(y, n, block, c, out_shape))
    if name == "ppermute":
        pairs = [(src % n, dst % n) for src, dst in params["perm"]]
        if len({s for s, _ in pairs}) < len(pairs) or len({d for _, d in pairs}) < len(pairs):
            raise ValueError(f"ppermute sources and destinations must be unique, got {params['perm']}")
        counts = [[0] * n for _ in range(n)]
        for src, dst in pairs:
            counts[src][dst] = size
        return Layout("all_to_all_v", None, 0, tuple(map(tuple, counts)), size, size, _flat, reshape_out,
                      sorted_ranks=True)
    raise ValueError(f"purlin.jax has no layout for jax.lax primitive {name!r}")


def axis_groups(mesh_shape: Sequence[int], axis_names: Sequence, axes: Sequence) -> list[list[int]]:
    """Groups of logical device ids (positions in the mesh's row-major device
    order) along `axes`, each in the order of those axes."""
    if len(set(axes)) != len(axes):
        raise ValueError(f"axis names {tuple(axes)} repeat a name")
    dims = [list(axis_names).index(a) for a in axes]
    iota = np.arange(math.prod(mesh_shape)).reshape(tuple(mesh_shape))
    along = math.prod(mesh_shape[d] for d in dims)
    return np.moveaxis(iota, dims, range(len(dims))).reshape(along, -1).T.tolist()


def refine(groups: list[list[int]], axis_index_groups) -> list[list[int]]:
    """`groups` split by jax's axis_index_groups (positions within each group)."""
    if axis_index_groups is None:
        return groups
    return [[g[i] for i in index_group] for g in groups for index_group in axis_index_groups]
