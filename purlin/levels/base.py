"""What the level interpreters share: their error, how a level is called
(LevelRunner, made by `level`) and the check of the per-rank buffers they are
given against the entry function's arguments.

The levels are purlin.levels.coll, .snac and .atom (the atom and plan levels,
the plan level on purlin.simulator.plan_machine or a runtime);
purlin.levels.table lists them for purlin-run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp
from xdsl.dialects.func import FuncOp

from purlin.compile.pipeline import EntryError, entry_function, lower
from purlin.dtypes import dtype_of_element_type, numpy_dtype


class SimError(Exception):
    """A module cannot be executed: unsupported op, bad buffers, missing level."""


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


class LevelRunner(Protocol):
    """How a simulation level is called; purlin.levels.table says what each argument is."""

    def __call__(self, module: ModuleOp, args: list[list[np.ndarray]], *, world: int, seed: int = 0,
                 options: dict[str, Any] | None = None) -> None: ...


LevelBody = Callable[[FuncOp, list[list[np.ndarray]], int, int, dict[str, Any]], None]


def level(passes: Callable[[dict[str, Any]], str]) -> Callable[[LevelBody], LevelRunner]:
    """The level whose `body(func, args, world, seed, options)` runs `func`,
    the entry function of the module lowered by `passes(options)`."""

    def runner(body: LevelBody) -> LevelRunner:
        @functools.wraps(body)
        def run(module: ModuleOp, args: list[list[np.ndarray]], *, world: int, seed: int = 0,
                options: dict[str, Any] | None = None) -> None:
            options = options or {}
            try:
                func = entry_function(lower(module, passes(options)), options.get("entry"))
            except EntryError as e:
                raise SimError(str(e)) from None
            body(func, args, world, seed, options)

        return run

    return runner
