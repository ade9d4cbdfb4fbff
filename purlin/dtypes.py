"""Element types by name: their numpy dtypes and xDSL element types.

Names, sizes and how each combines are those of `purlin.coll.attributes.DTYPES`;
the IR's element type spellings (f8E4M3FN, f8E5M2, ...) are accepted for
them (`canonical_dtype`). purlin.testing.data makes inputs and compares results.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from xdsl.ir import Attribute

from purlin.coll.attributes import DTYPE_ALIASES, DTYPE_INFO, DTYPES, canonical_dtype, dtype_name

# ml_dtypes has the types numpy lacks (bfloat16, the fp8s), under the same names.
NUMPY_DTYPES: dict[str, np.dtype] = {
    d.name: np.dtype(getattr(ml_dtypes, d.array_name, None) or d.array_name) for d in DTYPES
}

DTYPE_NAMES: tuple[str, ...] = tuple(NUMPY_DTYPES)
# By how they reduce: floats round, integers are exact.
FLOAT_DTYPES: tuple[str, ...] = tuple(d.name for d in DTYPES if d.kind == "float")
INTEGER_DTYPES: tuple[str, ...] = tuple(d.name for d in DTYPES if d.integer)


def numpy_dtype(name: str) -> np.dtype:
    try:
        return NUMPY_DTYPES[canonical_dtype(name)]
    except KeyError:
        raise ValueError(
            f"unknown dtype '{name}', expected one of {', '.join(DTYPE_NAMES)} "
            f"(or {', '.join(DTYPE_ALIASES)})"
        ) from None


def element_type(name: str) -> Attribute:
    """The xDSL element type of dtype `name` (e.g. bf16 -> BFloat16Type())."""
    numpy_dtype(name)
    return DTYPE_INFO[canonical_dtype(name)].element()


def is_integer(name: str) -> bool:
    return DTYPE_INFO[canonical_dtype(name)].integer


def dtype_of_element_type(elem: Attribute) -> str:
    """The dtype name of an xDSL element type; ValueError when unsupported."""
    name = dtype_name(elem)
    if name is None:
        raise ValueError(f"element type {elem} is not supported")
    return name


def dtype_of_array(a: np.ndarray) -> str:
    for name, dt in NUMPY_DTYPES.items():
        if a.dtype == dt:
            return name
    raise ValueError(f"numpy dtype {a.dtype} is not a supported element type")


def itemsize(name: str) -> int:
    return numpy_dtype(name).itemsize
