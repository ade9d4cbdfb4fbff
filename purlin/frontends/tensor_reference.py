"""A numpy reference of the StableHLO ops purlin leaves in a program (what
moves no data between processes): each op on one process's arrays, as
StableHLO's spec says. `purlin.frontends.spmd` runs whole programs with it.

Arrays are numpy arrays of the element type (ml_dtypes' bfloat16 and fp8
types; bool for i1). Float arithmetic of 16-bit and smaller floats is done in
f32 and rounded, as XLA's CPU backend does; integers wrap.
"""

from __future__ import annotations

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
        if isinstance(op, shlo.CustomCallOp) and op.target == "Sharding" and len(args) == 1:
            return [args[0]]
    except (ValueError, TypeError, IndexError) as e:
        raise ReferenceError(f"'{op_name(op)}' cannot run on operands {[a.shape for a in args]}: {e}") from None
    target = f" @{op.target}" if isinstance(op, shlo.CustomCallOp) else ""
    raise ReferenceError(f"'{op_name(op)}'{target} is not an op purlin's reference runs")
