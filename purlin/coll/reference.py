"""numpy reference semantics.

The named collectives are written from their textbook definitions, on
purpose without `purlin.coll.layouts`, so that they check the layouts that
`coll-expand` assigns. `apply_layouts` is the meaning of a generic
`coll.collective` written from the layout rule, which is what executing coll
IR means.

Every reduction combines in rank order: the narrow floats accumulate in f32
and round once to the element type, f64 accumulates in f64, and integers are
exact in their own width, wrapping as two's complement. Inputs are lists of
per-rank 1-D arrays; results are new arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from purlin.coll.layouts import Layout

_COMBINE = {
    "sum": np.add,
    "prod": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "avg": np.add,  # then divided by the number of contributions
}
_BITWISE = ("and", "or", "xor")


def accumulator(dtype: np.dtype) -> np.dtype:
    """What a reduction of `dtype` accumulates in: integers and f64 in
    themselves, the narrower floats in f32."""
    if dtype.kind in "iu" or dtype == np.float64:
        return dtype
    return np.dtype(np.float32)


def reduce_parts(parts: Sequence[np.ndarray], op: str) -> np.ndarray:
    """Combine equal-length `parts` in order in their accumulator type
    (`accumulator`), rounding once to the element type."""
    try:
        combine = _COMBINE[op]
    except KeyError:
        raise ValueError(f"unknown reduction '{op}'") from None
    if not parts:
        raise ValueError("a reduction needs at least one contribution")
    dtype = parts[0].dtype
    if op in _BITWISE and dtype.kind not in "iu":
        raise ValueError(f"reduction '{op}' takes integers, got {dtype}")
    acc_type = accumulator(dtype)
    acc = parts[0].astype(acc_type)
    # Integer overflow wraps, as the runtimes' does; float overflow is inf.
    with np.errstate(over="ignore", invalid="ignore"):
        for p in parts[1:]:
            acc = combine(acc, p.astype(acc_type))
        if op == "avg":
            acc = acc / acc.dtype.type(len(parts))
        return acc.astype(dtype)


def _check_world(inputs: Sequence[np.ndarray]) -> int:
    if not inputs:
        raise ValueError("need the buffers of at least one rank")
    return len(inputs)


def _blocks(a: np.ndarray, sizes: Sequence[int]) -> list[np.ndarray]:
    """`a` cut into consecutive blocks of `sizes` (the rest ignored)."""
    ends = np.cumsum([0, *sizes])
    if ends[-1] > a.size:
        raise ValueError(f"buffer of {a.size} elements is smaller than {int(ends[-1])}")
    return [a[ends[i] : ends[i + 1]] for i in range(len(sizes))]


def _check_counts(counts: Sequence[int], world: int) -> list[int]:
    counts = [int(c) for c in counts]
    if len(counts) != world or any(c < 0 for c in counts):
        raise ValueError(f"need {world} non-negative counts, got {counts}")
    return counts


# -- fixed-size collectives -------------------------------------------------


def all_reduce(inputs: Sequence[np.ndarray], op: str) -> list[np.ndarray]:
    """Every rank gets the reduction over ranks of all inputs."""
    _check_world(inputs)
    total = reduce_parts(inputs, op)
    return [total.copy() for _ in inputs]


def all_gather(inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Every rank gets the inputs of ranks 0..W-1, concatenated."""
    _check_world(inputs)
    whole = np.concatenate(inputs)
    return [whole.copy() for _ in inputs]


def reduce_scatter(inputs: Sequence[np.ndarray], op: str) -> list[np.ndarray]:
    """Reduce the inputs (W blocks each); rank r keeps block r."""
    w = _check_world(inputs)
    n = inputs[0].size
    if n % w:
        raise ValueError(f"reduce_scatter input of {n} elements is not divisible by {w}")
    total = reduce_parts(inputs, op)
    c = n // w
    return [total[r * c : (r + 1) * c].copy() for r in range(w)]


def all_to_all(inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Block s of rank d's output is block d of rank s's input."""
    w = _check_world(inputs)
    n = inputs[0].size
    if n % w:
        raise ValueError(f"all_to_all buffer of {n} elements is not divisible by {w}")
    c = n // w
    return [
        np.concatenate([inputs[s][d * c : (d + 1) * c] for s in range(w)]) for d in range(w)
    ]


# -- variable-size (V) collectives ------------------------------------------


def all_gather_v(inputs: Sequence[np.ndarray], counts: Sequence[int]) -> list[np.ndarray]:
    """Every rank gets the first counts[s] elements of each rank s, in rank order."""
    w = _check_world(inputs)
    counts = _check_counts(counts, w)
    whole = np.concatenate([_blocks(inputs[s], [counts[s]])[0] for s in range(w)])
    return [whole.copy() for _ in range(w)]


def reduce_scatter_v(
    inputs: Sequence[np.ndarray], counts: Sequence[int], op: str
) -> list[np.ndarray]:
    """Reduce the inputs (blocks of counts[0], counts[1], ...); rank r keeps block r."""
    w = _check_world(inputs)
    counts = _check_counts(counts, w)
    total = reduce_parts([a[: sum(counts)] for a in inputs], op)
    return [b.copy() for b in _blocks(total, counts)]


def all_reduce_v(
    inputs: Sequence[np.ndarray], counts: Sequence[int], op: str
) -> list[np.ndarray]:
    """Every rank gets the reduction over ranks of the first sum(counts)
    elements; the counts only say which rank's slice is which."""
    w = _check_world(inputs)
    n = sum(_check_counts(counts, w))
    return all_reduce([_blocks(a, [n])[0] for a in inputs], op)


def all_to_all_v(
    inputs: Sequence[np.ndarray], counts: Sequence[Sequence[int]]
) -> list[np.ndarray]:
    """counts[s][d] elements go from rank s to rank d.

    Rank s's input holds its sends in destination order; rank d's output
    holds its receives in source order.
    """
    w = _check_world(inputs)
    matrix = [_check_counts(row, w) for row in counts]
    if len(matrix) != w:
        raise ValueError(f"need a {w}x{w} count matrix, got {len(matrix)} rows")
    sends = [_blocks(inputs[s], matrix[s]) for s in range(w)]
    return [np.concatenate([sends[s][d] for s in range(w)]) for d in range(w)]


# -- layouts ----------------------------------------------------------------


def apply_layouts(
    input_layout: Layout,
    output_layout: Layout,
    reduce: str | None,
    inputs: Sequence[np.ndarray],
    outputs: Sequence[np.ndarray],
) -> None:
    """Run a layout collective on per-rank buffers, writing `outputs` in place.

    Each output slice receives the input slice of the same name (copy, `reduce`
    None) or the reduction of all input slices of that name in rank order.
    Output elements outside the output layout are left alone. Inputs are read
    before any output is written, so in-place collectives (input buffer is
    the output buffer) see their original data.
    """
    w = input_layout.world
    if output_layout.world != w or len(inputs) != w or len(outputs) != w:
        raise ValueError(
            f"layouts are for worlds {w} and {output_layout.world} but buffers "
            f"are given for {len(inputs)} and {len(outputs)} ranks"
        )
    for what, layout, bufs in (("input", input_layout, inputs), ("output", output_layout, outputs)):
        for r, buf in enumerate(bufs):
            if buf.size < layout.extent(r):
                raise ValueError(
                    f"{what} buffer of rank {r} has {buf.size} elements but its "
                    f"layout covers {layout.extent(r)}"
                )
    results = {}
    for name in output_layout.name_sizes:
        sources = input_layout.slices_named(name)
        parts = [inputs[s.rank][s.offset : s.end] for s in sources]
        if not parts:
            raise ValueError(f"output slice {name} has no input slice")
        if reduce is None:
            if len(parts) != 1:
                raise ValueError(f"copy of slice {name} has {len(parts)} sources")
            results[name] = parts[0].copy()
        else:
            results[name] = reduce_parts(parts, reduce)
    for r in range(w):
        for s in output_layout.slices(r):
            outputs[r][s.offset : s.end] = results[s.name]
