"""Seeded inputs and result comparison for every dtype (purlin.dtypes).

Reductions of the narrow floats accumulate in f32 and round once to the
element type, f64 accumulates in f64, integers are exact in their own width
(wrapping as two's complement); copies are bit-exact. Random float inputs are
chosen so that accumulation of them is exact in any order, which makes a
correct implementation agree with the reference bit for bit; `compare` still
allows the rounding slack a reordered reduction may show. Integer results
must match exactly: modular arithmetic does not depend on the order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from purlin.dtypes import is_integer, numpy_dtype

# Same-width unsigned integers, to compare and generate raw bit patterns.
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

_F32_EPS = 2.0**-23


# -- inputs -------------------------------------------------------------------


def random_array(rng: np.random.Generator, dtype: str, n: int, op: str | None) -> np.ndarray:
    """`n` random elements of `dtype` suited to reduction `op` (None: a copy).

    sum: multiples of 1/2 small enough for the dtype (|x| <= 2 for fp8,
    <= 8 otherwise), so f32 sums are exact in any order.
    prod: +-1/2, +-1, +-2, mostly +-1; f32 products of these are exact and
    16 ranks stay inside f16's range except with negligible probability.
    max/min: a sign mix of normal values.
    copy: random finite bit patterns, subnormals included, to catch any
    copy that goes through arithmetic.
    Integers: random bit patterns for every op, so sums and products wrap;
    modular arithmetic is exact in any order.
    """
    dt = numpy_dtype(dtype)
    if is_integer(dtype):
        if op is not None and op not in ("sum", "prod", "max", "min", "and", "or", "xor"):
            raise ValueError(f"unknown reduction '{op}'")
        bits = rng.integers(0, 1 << 63, n, dtype=np.uint64) * 2 + rng.integers(0, 2, n, dtype=np.uint64)
        return bits.astype(_BITS[dt.itemsize]).view(dt)
    if op in ("sum", "avg"):
        half_range = 4 if dtype.startswith("fp8") else 16
        return (rng.integers(-half_range, half_range + 1, n) / 2).astype(dt)
    if op == "prod":
        exps = rng.choice([-1, 0, 1], size=n, p=[0.15, 0.7, 0.15])
        signs = rng.choice([-1.0, 1.0], size=n)
        return (signs * np.exp2(exps)).astype(dt)
    if op in ("max", "min"):
        return (rng.standard_normal(n) * 4).astype(dt)
    if op is not None:
        raise ValueError(f"unknown reduction '{op}'")
    bits = rng.integers(0, 1 << (8 * dt.itemsize), n, dtype=np.uint64)
    out = bits.astype(_BITS[dt.itemsize]).view(dt)
    with np.errstate(invalid="ignore"):  # the NaN patterns are the ones being replaced
        bad = ~np.isfinite(out.astype(np.float64))
    out[bad] = rng.standard_normal(int(bad.sum())).astype(dt)
    return out


def random_inputs(
    dtype: str, sizes: Sequence[int], op: str | None, seed: int | np.random.Generator
) -> list[np.ndarray]:
    """One random array per rank, `sizes[r]` elements on rank r."""
    rng = np.random.default_rng(seed)
    return [random_array(rng, dtype, n, op) for n in sizes]


def filler(dtype: str, n: int) -> np.ndarray:
    """An output buffer before the collective: NaN (integers: bytes 0x5A), so a
    missed write shows."""
    dt = numpy_dtype(dtype)
    if is_integer(dtype):
        return np.full(n * dt.itemsize, 0x5A, np.uint8).view(dt)
    return np.full(n, np.nan, dtype=np.float32).astype(dt)


# -- comparison -----------------------------------------------------------------


def tolerance(dtype: str, op: str | None, contributions: int, scale: float = 1.0) -> tuple[float, float]:
    """(rtol, atol) for a result reduced from `contributions` values of magnitude <= `scale`.

    Reducing in another order than rank order moves an f32 sum by at most
    contributions^2 * scale f32 half-ulps (a product by contributions relative
    f32 ulps); the one rounding to `dtype` may then land one dtype ulp away.
    An average's error is its sum's over the contributions. Copies, max and
    min are exact.
    """
    if op in (None, "max", "min") or contributions <= 1 or is_integer(dtype):
        return 0.0, 0.0
    info = ml_dtypes.finfo(numpy_dtype(dtype))
    # f64 accumulates in f64, the others in f32.
    acc_eps = float(info.eps) if numpy_dtype(dtype).itemsize == 8 else _F32_EPS
    if op == "sum":
        return float(info.eps), float(info.smallest_subnormal) + contributions**2 * acc_eps / 2 * scale
    if op == "avg":  # a sum's error over its contributions, then one more rounding in the division
        return float(info.eps) + acc_eps, float(info.smallest_subnormal) + contributions * acc_eps / 2 * scale
    return float(info.eps) + contributions * acc_eps, float(info.smallest_subnormal)


@dataclass(frozen=True)
class Mismatch:
    rank: int
    offset: int
    actual: str
    expected: str
    what: str = ""

    def __str__(self) -> str:
        where = f" of {self.what}" if self.what else ""
        return (
            f"rank {self.rank} offset {self.offset}{where}: "
            f"got {self.actual}, expected {self.expected}"
        )


def _format(a: np.ndarray, i: int) -> str:
    if i >= a.size:
        return "<missing>"
    value = a[i]
    if a.dtype.itemsize in _BITS:
        bits = a[i : i + 1].view(_BITS[a.dtype.itemsize])[0]
        return f"{value} (0x{int(bits):0{2 * a.dtype.itemsize}x})"
    return str(value)


def first_difference(
    actual: np.ndarray, expected: np.ndarray, op: str | None, rtol: float, atol: float
) -> int | None:
    """Offset of the first element that differs, or None."""
    n = min(actual.size, expected.size)
    a, e = actual[:n], expected[:n]
    if op is None or a.dtype.kind in "iu":
        width = _BITS[a.dtype.itemsize]
        bad = a.view(width) != e.view(width)
    else:
        wide = np.float64 if a.dtype.itemsize == 8 else np.float32
        af, ef = a.astype(wide), e.astype(wide)
        both_nan = np.isnan(af) & np.isnan(ef)
        with np.errstate(invalid="ignore", over="ignore"):
            close = (af == ef) | (np.abs(af - ef) <= atol + rtol * np.abs(ef))
        bad = ~(close | both_nan)
    hits = np.flatnonzero(bad)
    if hits.size:
        return int(hits[0])
    if actual.size != expected.size or actual.dtype != expected.dtype:
        return n
    return None


def compare(
    actual: Sequence[np.ndarray],
    expected: Sequence[np.ndarray],
    dtype: str,
    op: str | None = None,
    contributions: int = 1,
    scale: float = 1.0,
    what: str = "",
) -> Mismatch | None:
    """The first (rank, offset) where per-rank `actual` and `expected` differ.

    op None means a copy: bits must match. For reductions the tolerance is
    `tolerance(dtype, op, contributions, scale)`; NaN matches NaN.
    """
    if len(actual) != len(expected):
        raise ValueError(f"{len(actual)} ranks of results but {len(expected)} expected")
    rtol, atol = tolerance(dtype, op, contributions, scale)
    for rank, (a, e) in enumerate(zip(actual, expected)):
        if a.dtype != e.dtype:
            raise ValueError(f"rank {rank}: result dtype {a.dtype} but expected {e.dtype}")
        a, e = a.reshape(-1), e.reshape(-1)
        offset = first_difference(a, e, op, rtol, atol)
        if offset is not None:
            return Mismatch(rank, offset, _format(a, offset), _format(e, offset), what)
    return None


def compare_ranks(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray], what: str = "") -> Mismatch | None:
    """Where the collective gives every rank the same result (the expected
    arrays are equal bit for bit), the first (rank, offset) whose bits differ
    from rank 0's: data-parallel replicas must not drift."""
    flat = [e.reshape(-1).view(np.uint8) for e in expected]
    if len(flat) < 2 or any(f.shape != flat[0].shape or not np.array_equal(f, flat[0]) for f in flat[1:]):
        return None
    base = actual[0].reshape(-1)
    if base.size == 0:
        return None
    for rank, a in enumerate(actual[1:], start=1):
        a = a.reshape(-1)
        bits = a.view(np.uint8).reshape(a.size, -1) != base.view(np.uint8).reshape(base.size, -1)
        rows = np.flatnonzero(bits.any(axis=1))
        if rows.size:
            i = int(rows[0])
            return Mismatch(rank, i, _format(a, i), f"rank 0's {_format(base, i)} (every rank gets the same bits)",
                            what)
    return None

