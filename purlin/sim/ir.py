"""IR plumbing shared by the levels: context, parsing, lowering, entry function, arguments."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import ArgSpecParseError

from purlin.diagnostics import LocatedParser, verify_located
from purlin.tools.pass_contracts import check_pipeline_step
from purlin.sim import SimError
from purlin.sim.dtypes import dtype_of_element_type, numpy_dtype
from purlin.universe import DIALECTS, PASSES, load_extensions

PipelineCallback = Callable[[ModulePass | None, ModuleOp, ModulePass | None], None]


def make_context() -> Context:
    """xDSL's dialects plus purlin's, loaded lazily."""
    ctx = Context()
    for name, factory in {**get_all_dialects(), **DIALECTS}.items():
        ctx.register_dialect(name, factory)
    load_extensions(ctx)
    return ctx


def parse_module(text: str, filename: str = "<input>") -> ModuleOp:
    """Parse and verify; errors are located diagnostics (ParseError, VerifyException)."""
    module = LocatedParser(make_context(), text, filename).parse_module()
    verify_located(module)
    return module


def pipeline(passes: str, callback: PipelineCallback | None = None) -> PassPipeline:
    """The pass pipeline `passes` of purlin's passes; ValueError naming it
    when a pass or an option is unknown or the text does not parse."""
    try:
        return PassPipeline.parse_spec(PASSES, passes, callback)
    except ArgSpecParseError as e:
        # A BaseException in xDSL, which would escape every handler.
        raise ValueError(f"invalid pass pipeline '{passes}': {e}") from None
    except ValueError as e:
        raise ValueError(f"invalid pass pipeline '{passes}': {e}") from None


def lower(module: ModuleOp, passes: str) -> ModuleOp:
    """A copy of `module` after the comma-separated pass pipeline `passes`,
    verified before the first pass and after each, each pass given something
    it takes and leaving nothing it should have lowered."""

    def verify_after(previous: ModulePass | None, op: ModuleOp, following: ModulePass | None) -> None:
        verify_located(op, previous.name if previous else None)
        check_pipeline_step(previous, op, following)

    lowered = module.clone()
    pipeline(passes, verify_after).apply(make_context(), lowered)
    return lowered


def entry_function(module: ModuleOp, name: str | None = None) -> FuncOp:
    """The function named `name`, or the module's only function."""
    funcs = [op for op in module.walk() if isinstance(op, FuncOp)]
    if name is not None:
        for f in funcs:
            if f.sym_name.data == name:
                return f
        raise SimError(f"no function @{name} in the module")
    if len(funcs) != 1:
        names = ", ".join("@" + f.sym_name.data for f in funcs) or "none"
        raise SimError(f"expected exactly one function to run, found {names}; name one")
    return funcs[0]


def arg_types(func: FuncOp) -> list[MemRefType]:
    types = list(func.function_type.inputs.data)
    for i, t in enumerate(types):
        if not isinstance(t, MemRefType):
            raise SimError(f"@{func.sym_name.data} argument {i} is {t}, expected a memref")
    return types  # type: ignore[return-value]


def arg_numpy_dtype(t: MemRefType) -> np.dtype:
    if t.element_type == IntegerType(64):
        return np.dtype(np.int64)
    try:
        return numpy_dtype(dtype_of_element_type(t.element_type))
    except ValueError as e:
        raise SimError(str(e)) from None


def check_args(func: FuncOp, args: Sequence[Sequence[np.ndarray]], world: int) -> None:
    """`args[i][r]` must be an array of argument i's type and shape for each rank r."""
    types = arg_types(func)
    fname = f"@{func.sym_name.data}"
    if len(args) != len(types):
        raise SimError(f"{fname} takes {len(types)} arguments, {len(args)} given")
    for i, (t, per_rank) in enumerate(zip(types, args)):
        if len(per_rank) != world:
            raise SimError(f"{fname} argument {i}: {len(per_rank)} buffers for world {world}")
        dt = arg_numpy_dtype(t)
        shape = t.get_shape()
        for r, a in enumerate(per_rank):
            if a.dtype != dt:
                raise SimError(f"{fname} argument {i} on rank {r}: dtype {a.dtype}, expected {dt}")
            if a.ndim != len(shape) or any(d >= 0 and d != n for d, n in zip(shape, a.shape)):
                raise SimError(
                    f"{fname} argument {i} on rank {r}: shape {a.shape} does not fit {t}"
                )
