"""The one table of element types and reductions every layer shares.

Each dtype's printed name, IR element type spelling, size, how it combines
and its numpy/torch name are here, in plan-format code order (a dtype's code
is its index; `purlin.plan` and abi.h's DType follow this table, test_cuda_abi
checks it). The IR's spellings (f8E4M3FN, f8E5M2, ...) name the dtypes too
(`canonical_dtype`). Importing this module imports neither xDSL nor ml_dtypes:
the xDSL element types and the numpy dtypes are made when first asked for,
so the runtime's call path stays light. purlin.testing.data makes inputs and
compares results.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from xdsl.ir import Attribute


@dataclass(frozen=True)
class DType:
    """One element type: its printed name, IR element type spelling, size, and
    how it combines ("float" accumulates in f32, or in f64 for f64; "int"/"uint"
    are exact in their own width, wrapping as two's complement)."""

    name: str
    ir: str
    bytes: int
    kind: str
    array_name: str  # its name in numpy (ml_dtypes for bf16 and fp8) and torch

    @property
    def integer(self) -> bool:
        return self.kind != "float"

    def element(self) -> Attribute:
        """The xDSL element type (e.g. bf16 -> BFloat16Type())."""
        return _element_types()[self.ir]


DTYPES: tuple[DType, ...] = (
    DType("bf16", "bf16", 2, "float", "bfloat16"),
    DType("f16", "f16", 2, "float", "float16"),
    DType("f32", "f32", 4, "float", "float32"),
    DType("fp8e4m3", "f8E4M3FN", 1, "float", "float8_e4m3fn"),
    DType("fp8e5m2", "f8E5M2", 1, "float", "float8_e5m2"),
    DType("i8", "i8", 1, "int", "int8"),
    DType("ui8", "ui8", 1, "uint", "uint8"),
    DType("i32", "i32", 4, "int", "int32"),
    DType("ui32", "ui32", 4, "uint", "uint32"),
    DType("i64", "i64", 8, "int", "int64"),
    DType("ui64", "ui64", 8, "uint", "uint64"),
    DType("f64", "f64", 8, "float", "float64"),
)
DTYPE_INFO: dict[str, DType] = {d.name: d for d in DTYPES}
DTYPE_BYTES: dict[str, int] = {d.name: d.bytes for d in DTYPES}
DTYPE_NAMES: tuple[str, ...] = tuple(DTYPE_INFO)
# By how they reduce: floats round, integers are exact.
FLOAT_DTYPES: tuple[str, ...] = tuple(d.name for d in DTYPES if d.kind == "float")
INTEGER_DTYPES: tuple[str, ...] = tuple(d.name for d in DTYPES if d.integer)

# Element types are looked up by their IR spelling (str of the xDSL type):
# integer types of one class differ only in their parameters.
_BY_ELEMENT: dict[str, str] = {d.ir: d.name for d in DTYPES}

# The IR spelling of an element type (f8E4M3FN) names its dtype too, wherever
# a dtype is given by name; the names above are the ones printed.
DTYPE_ALIASES: dict[str, str] = {ir: name for ir, name in _BY_ELEMENT.items() if ir != name}

ELEMENT_TYPES_TEXT = ", ".join(_BY_ELEMENT)


@cache
def _element_types() -> dict[str, Attribute]:
    from xdsl.dialects.builtin import (
        BFloat16Type,
        Float8E4M3FNType,
        Float8E5M2Type,
        Float16Type,
        Float32Type,
        Float64Type,
        IntegerType,
        Signedness,
    )

    types = [BFloat16Type(), Float16Type(), Float32Type(), Float64Type(), Float8E4M3FNType(), Float8E5M2Type()]
    types += [IntegerType(w, s) for w in (8, 32, 64) for s in (Signedness.SIGNLESS, Signedness.UNSIGNED)]
    return {str(t): t for t in types if str(t) in _BY_ELEMENT}


@cache
def numpy_dtypes() -> dict[str, np.dtype]:
    """Each dtype's numpy dtype; ml_dtypes has the ones numpy lacks (bfloat16,
    the fp8s), under the same names."""
    import ml_dtypes
    import numpy as np

    return {d.name: np.dtype(getattr(ml_dtypes, d.array_name, None) or d.array_name) for d in DTYPES}


def canonical_dtype(name: str) -> str:
    """The printed name of dtype `name` (given as printed or as its IR element type)."""
    return DTYPE_ALIASES.get(name, name)


def dtype_name(elem: Attribute) -> str | None:
    return _BY_ELEMENT.get(str(elem))


def element_bytes(elem: Attribute) -> int:
    """Size of a supported element type; verifiers admit no other."""
    name = dtype_name(elem)
    if name is None:
        raise ValueError(f"unsupported element type {elem}")
    return DTYPE_BYTES[name]


def known_dtype(name: str) -> str:
    """The printed name of dtype `name`; ValueError naming the dtypes there are
    when it is none of them (without loading ml_dtypes)."""
    canonical = canonical_dtype(name)
    if canonical not in DTYPE_INFO:
        raise ValueError(
            f"unknown dtype '{name}', expected one of {', '.join(DTYPE_NAMES)} "
            f"(or {', '.join(DTYPE_ALIASES)})"
        )
    return canonical


def numpy_dtype(name: str) -> np.dtype:
    return numpy_dtypes()[known_dtype(name)]


def element_type(name: str) -> Attribute:
    """The xDSL element type of dtype `name` (e.g. bf16 -> BFloat16Type())."""
    return DTYPE_INFO[known_dtype(name)].element()


def is_integer(name: str) -> bool:
    return DTYPE_INFO[canonical_dtype(name)].integer


def dtype_of_element_type(elem: Attribute) -> str:
    """The dtype name of an xDSL element type; ValueError when unsupported."""
    name = dtype_name(elem)
    if name is None:
        raise ValueError(f"element type {elem} is not supported")
    return name


def dtype_of_array(a: np.ndarray) -> str:
    for name, dt in numpy_dtypes().items():
        if a.dtype == dt:
            return name
    raise ValueError(f"numpy dtype {a.dtype} is not a supported element type")


def itemsize(name: str) -> int:
    return numpy_dtype(name).itemsize


# -- reductions ----------------------------------------------------------------

class ReduceKind(StrEnum):
    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PROD = "prod"
    AND = "and"
    OR = "or"
    XOR = "xor"
    # The sum over a slice's contributions divided once by their number (NCCL's ncclAvg).
    AVG = "avg"


BITWISE = frozenset({ReduceKind.AND, ReduceKind.OR, ReduceKind.XOR})
REDUCE_KINDS_TEXT = "sum, max, min, prod, and, or, xor or avg"


def check_reduce_dtype(kind: ReduceKind, dtype: str) -> str | None:
    """Why `kind` is not allowed on `dtype`, or None when it is.

    prod is only offered where it is exact enough to be useful: fp8 has so
    few mantissa and exponent bits that a product over ranks saturates.
    """
    if kind == ReduceKind.PROD and dtype.startswith("fp8"):
        return f"reduction 'prod' is not supported for {dtype} (it saturates); use f16, bf16 or f32"
    return check_reduce_computable(kind, dtype)


def check_reduce_computable(kind: ReduceKind, dtype: str) -> str | None:
    """Why the datapath cannot compute `kind` on `dtype`, or None: bitwise
    reductions combine the bits of integers only; avg divides, so it takes
    the floating-point dtypes only (the plan readers check this much)."""
    info = DTYPE_INFO.get(dtype)
    if kind in BITWISE and (info is None or not info.integer):
        return f"reduction '{kind.value}' combines bits and takes an integer dtype, got {dtype}"
    if kind == ReduceKind.AVG and (info is None or info.integer):
        return f"reduction 'avg' divides and takes a floating-point dtype, got {dtype}"
    return None
