"""A numpy reference of the StableHLO ops purlin leaves in a program (what
moves no data between processes): each op on one process's arrays, as
StableHLO's spec says. `purlin.frontends.spmd` runs whole programs with it.

Arrays are numpy arrays of the element type (ml_dtypes' bfloat16 and fp8
types; bool for i1). Float arithmetic of 16-bit and smaller floats is done in
f32 and rounded, as XLA's CPU backend does; integers wrap.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from math import prod

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation

from purlin.dtypes import dtype_of_element_type, numpy_dtype
from purlin.frontends import stablehlo as shlo
from purlin.frontends.tensor_functions import op_name


class ReferenceError(ValueError):
    """An op the reference cannot run, or operands it cannot take."""


def numpy_type(elem: Attribute) -> np.dtype:
    """The numpy dtype of a tensor's element type."""
    if isinstance(elem, IntegerType):
        width, unsigned = elem.width.data, elem.signedness.data == Signedness.UNSIGNED
        if width == 1:
            return np.dtype(bool)
        if width in (8, 16, 32, 64):
            return np.dtype(f"{'u' if unsigned else 'i'}{width // 8}")
    for kind, dt in ((BFloat16Type, ml_dtypes.bfloat16), (Float16Type, np.float16), (Float32Type, np.float32),
                     (Float64Type, np.float64)):
        if isinstance(elem, kind):
            return np.dtype(dt)
    try:
        return numpy_dtype(dtype_of_element_type(elem))
    except ValueError:
        raise ReferenceError(f"element type {elem} is not one the reference holds") from None


def tensor_type(t: Attribute) -> tuple[tuple[int, ...], np.dtype]:
    if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
        raise ReferenceError(f"the reference takes statically shaped tensors, got {t}")
    return tuple(t.get_shape()), numpy_type(t.element_type)


def constant(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The value of a dense constant, in its element type and shape."""
    shape, dt = tensor_type(attr.get_type())
    values = list(attr.get_values())
    n = prod(shape)
    if len(values) == 1 and n != 1:
        values = values * n  # a splat
    if dt.kind in "iu":
        bits = 8 * dt.itemsize
        flat = np.array([int(v) % (1 << bits) for v in values], dtype=np.uint64).astype(f"u{dt.itemsize}").view(dt)
    elif dt.kind == "b":
        flat = np.array([bool(v) for v in values], dtype=bool)
    else:
        flat = np.array(values, dtype=np.float64).astype(dt)
    return flat.reshape(shape)


def _small_float(dt: np.dtype) -> bool:
    """bf16, f16 and the fp8s (ml_dtypes' types are of numpy kind 'V')."""
    return dt.kind not in "iub" and dt.itemsize < 4


def _float_op(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """`fn` on floats computed in f32 for the 16-bit and smaller ones, rounded back."""

    @np.errstate(all="ignore")  # overflow to inf and nan are results, as in IEEE arithmetic
    def run(*xs: np.ndarray) -> np.ndarray:
        dt = xs[0].dtype
        if _small_float(dt):
            return np.asarray(fn(*[x.astype(np.float32) for x in xs])).astype(dt)
        return np.asarray(fn(*xs)).astype(dt)

    return run


def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Division rounding toward zero; x / 0 is all ones (-1), as XLA gives."""
    safe = np.where(b == 0, 1, b).astype(a.dtype)
    with np.errstate(over="ignore"):
        q = np.abs(a.astype(np.int64)) // np.abs(safe.astype(np.int64))
        q = np.where((a < 0) != (safe < 0), -q, q) if a.dtype.kind == "i" else q
    out = q.astype(a.dtype)
    return np.where(b == 0, np.array(-1).astype(a.dtype), out)


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return _int_divide(a, b)
    return _float_op(np.divide)(a, b)


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        safe = np.where(b == 0, 1, b).astype(a.dtype)
        return np.where(b == 0, a, np.fmod(a, safe)).astype(a.dtype)
    return _float_op(np.fmod)(a, b)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        out = np.ones_like(a)
        base, e = a.copy(), b.astype(np.int64)
        neg = e < 0
        e = np.where(neg, 0, e)
        while np.any(e > 0):
            out = np.where(e & 1, out * base, out).astype(a.dtype)
            base = (base * base).astype(a.dtype)
            e >>= 1
        # a negative power of an integer: 1 and -1 stay units, others round to 0
        return np.where(neg, np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0)),
                        out).astype(a.dtype)
    return _float_op(np.power)(a, b)


def _bits(a: np.ndarray) -> int:
    return 8 * a.dtype.itemsize


def _shift(kind: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        n = _bits(a)
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        ua, ub = a.view(unsigned) if a.dtype.kind == "i" else a, b.astype(np.uint64)
        big = ub >= n
        s = np.where(big, 0, ub).astype(unsigned)
        if kind == "left":
            out = np.where(big, 0, (ua << s)).astype(unsigned)
        elif kind == "logical":
            out = np.where(big, 0, (ua >> s)).astype(unsigned)
        else:
            signed = a.view(np.dtype(f"i{a.dtype.itemsize}"))
            out = np.where(big, np.where(signed < 0, -1, 0), signed >> s.astype(signed.dtype)).astype(
                signed.dtype).view(unsigned)
        return out.view(a.dtype)

    return run


def _logical(fn: Callable) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return lambda a, b: fn(a, b).astype(a.dtype)


def _arith(fn: Callable) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Integers wrap in their width; floats as _float_op."""

    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind in "iub":
            with np.errstate(over="ignore"):
                return fn(a, b).astype(a.dtype)
        return _float_op(fn)(a, b)

    return run


def _extremum(fn: Callable) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return lambda a, b: fn(a, b).astype(a.dtype)


BINARY: dict[type[Operation], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    shlo.AddOp: _arith(np.add),
    shlo.SubtractOp: _arith(np.subtract),
    shlo.MulOp: _arith(np.multiply),
    shlo.DivideOp: _divide,
    shlo.RemainderOp: _remainder,
    shlo.PowerOp: _power,
    shlo.MaxOp: _extremum(np.maximum),
    shlo.MinOp: _extremum(np.minimum),
    shlo.AndOp: _logical(np.bitwise_and),
    shlo.OrOp: _logical(np.bitwise_or),
    shlo.XorOp: _logical(np.bitwise_xor),
    shlo.Atan2Op: _float_op(np.arctan2),
    shlo.ShiftLeftOp: _shift("left"),
    shlo.ShiftRightArithmeticOp: _shift("arithmetic"),
    shlo.ShiftRightLogicalOp: _shift("logical"),
}


def _neg(a: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (-a).astype(a.dtype) if a.dtype.kind in "iu" else _float_op(np.negative)(a)


def _abs(a: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.abs(a).astype(a.dtype) if a.dtype.kind in "iu" else _float_op(np.abs)(a)


def _sign(a: np.ndarray) -> np.ndarray:
    return np.sign(a).astype(a.dtype) if a.dtype.kind in "iu" else _float_op(np.sign)(a)


def _not(a: np.ndarray) -> np.ndarray:
    return np.logical_not(a) if a.dtype.kind == "b" else np.bitwise_not(a)


def _popcnt(a: np.ndarray) -> np.ndarray:
    u = a.view(np.dtype(f"u{a.dtype.itemsize}")).astype(np.uint64)
    count = np.zeros(a.shape, np.uint64)
    for k in range(_bits(a)):
        count += (u >> np.uint64(k)) & np.uint64(1)
    return count.astype(a.dtype)


def _clz(a: np.ndarray) -> np.ndarray:
    u = a.view(np.dtype(f"u{a.dtype.itemsize}")).astype(np.uint64)
    n = _bits(a)
    out = np.full(a.shape, n, np.int64)
    for k in range(n):
        out = np.where((u >> np.uint64(k)) != 0, n - 1 - k, out)
    return out.astype(a.dtype)


def _round_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


UNARY: dict[type[Operation], Callable[[np.ndarray], np.ndarray]] = {
    shlo.NegOp: _neg,
    shlo.AbsOp: _abs,
    shlo.SignOp: _sign,
    shlo.NotOp: _not,
    shlo.PopcntOp: _popcnt,
    shlo.ClzOp: _clz,
    shlo.ExpOp: _float_op(np.exp),
    shlo.Expm1Op: _float_op(np.expm1),
    shlo.LogOp: _float_op(np.log),
    shlo.Log1pOp: _float_op(np.log1p),
    shlo.SqrtOp: _float_op(np.sqrt),
    shlo.RsqrtOp: _float_op(lambda x: 1 / np.sqrt(x)),
    shlo.CbrtOp: _float_op(np.cbrt),
    shlo.SineOp: _float_op(np.sin),
    shlo.CosineOp: _float_op(np.cos),
    shlo.TanOp: _float_op(np.tan),
    shlo.TanhOp: _float_op(np.tanh),
    shlo.LogisticOp: _float_op(lambda x: 1 / (1 + np.exp(-x))),
    shlo.FloorOp: _float_op(np.floor),
    shlo.CeilOp: _float_op(np.ceil),
    shlo.RoundEvenOp: _float_op(np.rint),
    shlo.RoundAwayOp: _float_op(_round_away),
}


def convert(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """StableHLO's convert: floats to integers toward zero, to bool as != 0."""
    if dt.kind == "b":
        return x != 0
    if x.dtype.kind == "b":
        return x.astype(dt)
    if dt.kind in "iu" and x.dtype.kind not in "iu":
        with np.errstate(invalid="ignore", over="ignore"):
            f = np.trunc(x.astype(np.float64))
            info = np.iinfo(dt)
            return np.clip(np.nan_to_num(f), info.min, info.max).astype(dt)
    with np.errstate(over="ignore"):
        return x.astype(np.float32).astype(dt) if _small_float(x.dtype) and dt.kind not in "iu" else x.astype(dt)


def _compare(op: shlo.CompareOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    fns = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal, "GT": np.greater, "LE": np.less_equal,
           "LT": np.less}
    if a.dtype.kind not in "iub":
        a, b = a.astype(np.float64), b.astype(np.float64)
    return fns[op.direction.value](a, b)


def broadcast_in_dim(x: np.ndarray, dims: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """Operand dimension i is result dimension dims[i]."""
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    moved = np.transpose(x, order) if order else x
    full = [1] * len(shape)
    for i in order:
        full[dims[i]] = x.shape[i]
    return np.broadcast_to(moved.reshape(full), tuple(shape)).copy()


def _dynamic_slice(x: np.ndarray, starts: Sequence[np.ndarray], sizes: Sequence[int]) -> np.ndarray:
    index = []
    for s, n, dim in zip(starts, sizes, x.shape):
        a = int(np.asarray(s).reshape(()))
        a = min(max(a, 0), dim - n)
        index.append(slice(a, a + n))
    return x[tuple(index)].copy()


def _iota(shape: Sequence[int], dim: int, dt: np.dtype) -> np.ndarray:
    ramp = np.arange(shape[dim]).reshape([shape[dim] if k == dim else 1 for k in range(len(shape))])
    return np.broadcast_to(ramp, tuple(shape)).astype(dt)


Evaluate = Callable[[Block, list[np.ndarray]], list[np.ndarray]]


def _reduce(op: shlo.ReduceOp, args: list[np.ndarray], region: Evaluate) -> list[np.ndarray]:
    """Fold the operands along the dimensions, from the init values, with the region."""
    n = len(op.results)
    values, inits = args[:n], args[n:]
    dims = op.reduce_dims
    assert op.body is not None
    block = op.body.block
    kept = [d for d in range(values[0].ndim) if d not in dims]
    out_shape = [values[0].shape[d] for d in kept]
    acc = [np.broadcast_to(i, out_shape).copy() for i in inits]
    moved = [np.transpose(v, kept + list(dims)) for v in values]
    for index in itertools.product(*[range(values[0].shape[d]) for d in dims]):
        at = (Ellipsis, *index)
        acc = region(block, [*acc, *[m[at] for m in moved]])
    return [np.asarray(a).reshape(out_shape) for a in acc]


def _dot_general(op: shlo.DotGeneralOp, a: np.ndarray, b: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Batching dimensions first, then %a's free ones, then %b's; integers wrap."""
    lb, rb, lc, rc = op.dims()
    lf = [d for d in range(a.ndim) if d not in lb + lc]
    rf = [d for d in range(b.ndim) if d not in rb + rc]
    batch = [a.shape[d] for d in lb]
    k = prod(a.shape[d] for d in lc)
    x = np.transpose(a, lb + lf + lc).reshape(prod(batch), prod(a.shape[d] for d in lf), k)
    y = np.transpose(b, rb + rc + rf).reshape(prod(batch), k, prod(b.shape[d] for d in rf))
    if dt.kind in "iub":
        with np.errstate(over="ignore"):
            wide = np.matmul(x.astype(np.int64), y.astype(np.int64))
        out = wide.astype(np.uint64).astype(dt) if dt.kind == "u" else wide.astype(dt)
    else:
        out = np.matmul(x.astype(np.float64 if dt.itemsize >= 8 else np.float32),
                        y.astype(np.float64 if dt.itemsize >= 8 else np.float32)).astype(dt)
    return out.reshape(batch + [a.shape[d] for d in lf] + [b.shape[d] for d in rf])


def _starts(starts: Sequence[np.ndarray], sizes: Sequence[int], shape: Sequence[int]) -> list[int]:
    """Start indices clamped so that the block of `sizes` lies in `shape`."""
    return [min(max(int(np.asarray(s).reshape(())), 0), n - k) for s, k, n in zip(starts, sizes, shape)]


def _dynamic_update_slice(x: np.ndarray, update: np.ndarray, starts: Sequence[np.ndarray]) -> np.ndarray:
    out = x.copy()
    at = _starts(starts, update.shape, x.shape)
    out[tuple(slice(a, a + n) for a, n in zip(at, update.shape))] = update
    return out


def _pad(op: shlo.PadOp, x: np.ndarray, value: np.ndarray) -> np.ndarray:
    pads = op.padding()
    # Interior and positive edges first, then cut the negative edges.
    full = [max(lo, 0) + max(hi, 0) + n + max(n - 1, 0) * i for (lo, hi, i), n in zip(pads, x.shape)]
    out = np.full(full, value.reshape(()), x.dtype)
    out[tuple(slice(max(lo, 0), max(lo, 0) + (n - 1) * (i + 1) + 1 if n else max(lo, 0), i + 1)
              for (lo, _, i), n in zip(pads, x.shape))] = x
    return out[tuple(slice(-min(lo, 0), f + min(hi, 0)) for (lo, hi, _), f in zip(pads, full))].copy()


def _reduce_window(op: shlo.ReduceWindowOp, args: list[np.ndarray], region: Evaluate) -> list[np.ndarray]:
    """Each operand dilated and padded with its init value, then each window
    position folded, all windows at once."""
    n = len(op.results)
    values, inits = args[:n], args[n:]
    win = op.window()
    padded = []
    for v, init in zip(values, inits):
        shape = [lo + hi + (d - 1) * base + 1 if d else lo + hi
                 for (_, _, base, _, lo, hi), d in zip(win, v.shape)]
        grown = [max(lo, 0) + max(hi, 0) + (d - 1) * base + 1 if d else max(lo, 0) + max(hi, 0)
                 for (_, _, base, _, lo, hi), d in zip(win, v.shape)]
        full = np.full(grown, init.reshape(()), v.dtype)
        full[tuple(slice(max(lo, 0), max(lo, 0) + (d - 1) * base + 1 if d else max(lo, 0), base)
                   for (_, _, base, _, lo, _), d in zip(win, v.shape))] = v
        cut = tuple(slice(-min(lo, 0), -min(lo, 0) + s) for (_, _, _, _, lo, _), s in zip(win, shape))
        padded.append(full[cut])
    out_shape = tuple(tensor_type(op.results[0].type)[0])
    acc = [np.broadcast_to(i.reshape(()), out_shape).copy() for i in inits]
    assert op.body is not None
    for offset in itertools.product(*[range(size) for size, *_ in win]):
        at = tuple(slice(o * dil, o * dil + (m - 1) * stride + 1 if m else o * dil, stride)
                   for o, (_, stride, _, dil, _, _), m in zip(offset, win, out_shape))
        acc = region(op.body.block, [*acc, *[p[at] for p in padded]])
    return [np.asarray(a).reshape(out_shape) for a in acc]


def _sort(op: shlo.SortOp, args: list[np.ndarray], region: Evaluate) -> list[np.ndarray]:
    """Each slice along the dimension ordered by the comparator (a stable merge sort)."""
    d = shlo._int(op, "dimension") or 0
    d %= max(args[0].ndim, 1)
    assert op.body is not None
    block = op.body.block
    moved = [np.moveaxis(a, d, -1) for a in args]
    outs = [m.copy() for m in moved]

    def less(i: int, j: int, row: tuple) -> bool:
        pair = [x for m in moved for x in (m[row][i], m[row][j])]
        return bool(np.asarray(region(block, [np.asarray(v) for v in pair])[0]).reshape(()))

    for row in itertools.product(*[range(n) for n in moved[0].shape[:-1]]):
        order = functools.cmp_to_key(lambda i, j, row=row: -1 if less(i, j, row) else (1 if less(j, i, row) else 0))
        perm = sorted(range(moved[0].shape[-1]), key=order)
        for m, o in zip(moved, outs):
            o[row] = m[row][perm]
    return [np.moveaxis(o, -1, d).copy() for o in outs]


def _index_vectors(indices: np.ndarray, ivd: int, idx_batch: list[int]) -> tuple[np.ndarray, list[int]]:
    """The index vectors of `indices` (along dimension ivd; its rank, a
    trailing one of size 1): batch dimensions first, the vector last; and
    where the batching dimensions `idx_batch` of `indices` are among them."""
    if ivd == indices.ndim:
        indices = indices[..., None]
    return np.moveaxis(indices, ivd, -1).astype(np.int64), [k if k < ivd else k - 1 for k in idx_batch]


def _gather(op: shlo.GatherOp, x: np.ndarray, indices: np.ndarray, out: tuple[tuple[int, ...], np.dtype]
            ) -> np.ndarray:
    """StableHLO's gather: per batch index, the slice of slice_sizes at the
    (clamped) start its index vector gives, its collapsed dimensions dropped."""
    dims = shlo.field(op, "dimension_numbers")
    assert isinstance(dims, shlo.GatherAttr)
    sizes = shlo._ints(op, "slice_sizes") or []
    offset_dims = shlo.int_list(dims.offset_dims)
    collapsed = shlo.int_list(dims.collapsed_slice_dims)
    op_batch, idx_batch = shlo.int_list(dims.operand_batching_dims), shlo.int_list(dims.start_indices_batching_dims)
    start_map = shlo.int_list(dims.start_index_map)
    vectors, idx_batch_pos = _index_vectors(indices, dims.index_vector_dim.data, idx_batch)
    shape, dt = out
    result = np.zeros(shape, dt)
    batch_dims = [k for k in range(len(shape)) if k not in offset_dims]
    kept = [k for k in range(x.ndim) if k not in collapsed + op_batch]
    for b in itertools.product(*[range(shape[k]) for k in batch_dims]):
        vec = vectors[b]
        start = [0] * x.ndim
        for k, d in enumerate(start_map):
            start[d] = int(vec[k])
        for o, i in zip(op_batch, idx_batch_pos):
            start[o] = b[i]
        start = [min(max(s, 0), n - k) for s, n, k in zip(start, x.shape, sizes)]
        block = x[tuple(slice(s, s + k) for s, k in zip(start, sizes))]
        block = block.reshape([sizes[k] for k in kept])
        at: list = [slice(None)] * len(shape)
        for k, v in zip(batch_dims, b):
            at[k] = v
        result[tuple(at)] = block
    return result


def _scatter(op: shlo.ScatterOp, args: list[np.ndarray], region: Evaluate) -> list[np.ndarray]:
    """StableHLO's scatter: each update element combined, by the region, into
    the result element its index vector and window position name; out of
    range ones are dropped."""
    n = len(op.results)
    values, indices, updates = args[:n], args[n], args[n + 1:]
    dims = shlo.field(op, "scatter_dimension_numbers")
    assert isinstance(dims, shlo.ScatterAttr) and op.body is not None
    window = shlo.int_list(dims.update_window_dims)
    inserted = shlo.int_list(dims.inserted_window_dims)
    in_batch, idx_batch = shlo.int_list(dims.input_batching_dims), shlo.int_list(dims.scatter_indices_batching_dims)
    to_operand = shlo.int_list(dims.scatter_dims_to_operand_dims)
    vectors, idx_batch_pos = _index_vectors(indices, dims.index_vector_dim.data, idx_batch)
    outs = [v.copy() for v in values]
    rank = values[0].ndim
    window_operand = [k for k in range(rank) if k not in inserted + in_batch]
    scatter_dims = [k for k in range(updates[0].ndim) if k not in window]
    for u in itertools.product(*[range(m) for m in updates[0].shape]):
        b = tuple(u[k] for k in scatter_dims)
        vec = vectors[b]
        full = [0] * rank
        for k, d in enumerate(to_operand):
            full[d] += int(vec[k])
        for o, i in zip(in_batch, idx_batch_pos):
            full[o] += b[i]
        for k, d in zip(window, window_operand):
            full[d] += u[k]
        if not all(0 <= f < m for f, m in zip(full, values[0].shape)):
            continue
        at = tuple(full)
        new = region(op.body.block, [*[np.asarray(o[at]) for o in outs], *[np.asarray(up[u]) for up in updates]])
        for o, v in zip(outs, new):
            o[at] = np.asarray(v).reshape(())
    return outs


def _truth(x: np.ndarray) -> bool:
    return bool(np.asarray(x).reshape(()))


# A loop's most iterations: a program looping longer is refused, not run forever.
MAX_TRIPS = 4096


def _while(op: shlo.WhileOp, args: list[np.ndarray], region: Evaluate) -> list[np.ndarray]:
    values = list(args)
    for _ in range(MAX_TRIPS):
        if not _truth(region(op.cond.block, values)[0]):
            return values
        values = region(op.body.block, values)
    raise ReferenceError(f"'{op.name}' ran {MAX_TRIPS} times and goes on; purlin's reference stops there")


def branch_index(op: shlo.CaseOp | shlo.IfOp, pred: np.ndarray) -> int:
    """The branch a case's index (the last one out of range) or an if's predicate picks."""
    if isinstance(op, shlo.IfOp):
        return 0 if _truth(pred) else 1
    k = int(np.asarray(pred).reshape(()))
    return k if 0 <= k < len(op.branches) else len(op.branches) - 1


def evaluate(op: Operation, args: list[np.ndarray], process: tuple[int, int], region: Evaluate
             ) -> list[np.ndarray]:
    """The results of `op` on `args` on the process (replica, partition);
    `region` evaluates a nested region (a reduction's)."""
    kind = type(op)
    outs = [tensor_type(r.type) for r in op.results]
    try:
        if kind in BINARY:
            return [BINARY[kind](args[0], args[1])]  # type: ignore[index]
        if kind in UNARY:
            return [UNARY[kind](args[0])]  # type: ignore[index]
        if isinstance(op, shlo.ConstantOp):
            return [constant(op.value)]  # type: ignore[arg-type]
        if isinstance(op, shlo.ConvertOp):
            return [convert(args[0], outs[0][1])]
        if isinstance(op, shlo.IsFiniteOp):
            return [np.isfinite(args[0].astype(np.float64))]
        if isinstance(op, shlo.BitcastConvertOp):
            return [args[0].view(outs[0][1]).reshape(outs[0][0])]
        if isinstance(op, shlo.ReshapeOp):
            return [args[0].reshape(outs[0][0])]
        if isinstance(op, shlo.BroadcastInDimOp):
            return [broadcast_in_dim(args[0], op.dims, outs[0][0])]
        if isinstance(op, shlo.TransposeOp):
            return [np.transpose(args[0], op.perm).copy()]
        if isinstance(op, shlo.SliceOp):
            return [args[0][tuple(slice(a, b, s) for a, b, s in op.bounds())].copy()]
        if isinstance(op, shlo.DynamicSliceOp):
            return [_dynamic_slice(args[0], args[1:], shlo._ints(op, "slice_sizes") or [])]
        if isinstance(op, shlo.ConcatenateOp):
            return [np.concatenate(args, axis=shlo._int(op, "dimension") or 0)]
        if isinstance(op, shlo.IotaOp):
            return [_iota(outs[0][0], shlo._int(op, "iota_dimension") or 0, outs[0][1])]
        if isinstance(op, shlo.CompareOp):
            return [_compare(op, args[0], args[1])]
        if isinstance(op, shlo.SelectOp):
            return [np.where(args[0], args[1], args[2]).astype(outs[0][1])]
        if isinstance(op, shlo.ClampOp):
            return [np.minimum(np.maximum(args[1], args[0]), args[2]).astype(outs[0][1])]
        if isinstance(op, shlo.PartitionIdOp):
            return [np.array(process[1]).astype(outs[0][1])]
        if isinstance(op, shlo.ReplicaIdOp):
            return [np.array(process[0]).astype(outs[0][1])]
        if isinstance(op, shlo.ReduceOp):
            return _reduce(op, args, region)
        if isinstance(op, shlo.DotGeneralOp):
            return [_dot_general(op, args[0], args[1], outs[0][1])]
        if isinstance(op, shlo.DynamicUpdateSliceOp):
            return [_dynamic_update_slice(args[0], args[1], args[2:])]
        if isinstance(op, shlo.PadOp):
            return [_pad(op, args[0], args[1])]
        if isinstance(op, shlo.ReduceWindowOp):
            return _reduce_window(op, args, region)
        if isinstance(op, shlo.SortOp):
            return _sort(op, args, region)
        if isinstance(op, shlo.GatherOp):
            return [_gather(op, args[0], args[1], outs[0])]
        if isinstance(op, shlo.ScatterOp):
            return _scatter(op, args, region)
        if isinstance(op, shlo.WhileOp):
            return _while(op, args, region)
        if isinstance(op, shlo.CaseOp | shlo.IfOp):
            return region(op.branches[branch_index(op, args[0])].block, [])
        if isinstance(op, shlo.CustomCallOp) and op.target == "Sharding" and len(args) == 1:
            return [args[0]]
    except ReferenceError:
        raise
    except (ValueError, TypeError, IndexError) as e:
        raise ReferenceError(f"'{op_name(op)}' cannot run on operands {[a.shape for a in args]}: {e}") from None
    target = f" @{op.target}" if isinstance(op, shlo.CustomCallOp) else ""
    raise ReferenceError(f"'{op_name(op)}'{target} is not an op purlin's reference runs")
