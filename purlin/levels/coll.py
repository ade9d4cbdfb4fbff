"""The coll level: run a module's collectives by their layout semantics.

The module is lowered with `coll-expand`, so named collectives run through
the layouts that pass assigns them; each `coll.collective` then applies
`reference.apply_layouts` to the per-rank buffers of its operands, which must
be arguments of the entry function.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import BlockArgument, SSAValue

from purlin.coll.dialect import CollectiveOp
from purlin.coll.layouts import Layout, LayoutError, check_collective
from purlin.coll.reference import apply_layouts
from purlin.compile.pipeline import pipeline_spec
from purlin.levels.base import SimError, check_args, level


@level(lambda options: pipeline_spec("coll"))
def run(func: FuncOp, args: list[list[np.ndarray]], world: int, seed: int, options: dict[str, Any]) -> None:
    """Execute the module on `world` ranks; args[i][r] is argument i on rank r, updated in place.

    options: "entry" names the function to run (default: the only one).
    `seed` is unused: the coll level is deterministic.
    """
    check_args(func, args, world)
    for op in func.body.ops:
        if isinstance(op, CollectiveOp):
            _run_collective(func, op, args, world)
        elif isinstance(op, ReturnOp):
            return
        else:
            raise SimError(f"the coll level cannot execute '{op.name}'")


def _arg_index(func: FuncOp, value: SSAValue, role: str, op: CollectiveOp) -> int:
    if not isinstance(value, BlockArgument) or value.owner is not func.body.block:
        raise SimError(
            f"'{op.name}': the {role} must be an argument of @{func.sym_name.data}"
        )
    return value.index


def _bind(layout: Layout, counts: list[np.ndarray], op: CollectiveOp) -> Layout:
    if not layout.is_dynamic:
        return layout
    first = counts[0]
    for r, c in enumerate(counts):
        if not np.array_equal(c, first):
            raise SimError(f"'{op.name}': counts on rank {r} differ from rank 0's")
    try:
        return layout.bind(first.tolist())
    except LayoutError as e:
        raise SimError(f"'{op.name}': counts {first.tolist()}: {e}") from None


def _run_collective(
    func: FuncOp, op: CollectiveOp, args: list[list[np.ndarray]], world: int
) -> None:
    if op.world != world:
        raise SimError(f"'{op.name}' is for world {op.world}, run on {world} ranks")
    inp, out = op.layouts()
    if op.counts is not None:
        counts = args[_arg_index(func, op.counts, "counts", op)]
        inp, out = _bind(inp, counts, op), _bind(out, counts, op)
        try:
            check_collective(inp, out, reduce=op.consume.kind is not None)
        except LayoutError as e:
            raise SimError(f"'{op.name}': counts {counts[0].tolist()}: {e}") from None
    i = _arg_index(func, op.input, "input", op)
    o = _arg_index(func, op.output, "output", op)
    kind = op.consume.kind
    try:
        apply_layouts(inp, out, None if kind is None else kind.value, args[i], args[o])
    except ValueError as e:
        raise SimError(f"'{op.name}': {e}") from None
