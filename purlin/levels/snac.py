"""The snac level: lower to SNAC and execute every program with the scheduler.

options: "entry" (function name), "lowering" (options of convert-coll-to-snac,
e.g. "regime=throughput chunk-bytes=64 slots=2"), "calls" (repeat each program,
default 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import BlockArgument, SSAValue

from purlin.compile.pipeline import pipeline_spec
from purlin.levels.base import SimError, check_args, level
from purlin.snac.dialect import ProgramOpBase
from purlin.simulator.snac_machine import SnacExecutionError, World, execute


@level(lambda options: pipeline_spec("snac", lowering=options.get("lowering", ""), verify=False))
def run(func: FuncOp, args: list[list[np.ndarray]], world: int, seed: int, options: dict[str, Any]) -> None:
    run_programs(func, args, world=world, seed=seed, calls=options.get("calls", 1))


def run_programs(func: FuncOp, args: list[list[np.ndarray]], *, world: int, seed: int,
                 calls: int = 1) -> None:
    """Execute the snac.programs of `func` in order. Each has its symmetric
    memory and epochs of its own, starting at 0, as each plan has on a runtime:
    epochs carried into fresh signal slots would wait for frees never stored."""
    check_args(func, args, world)
    for op in func.body.ops:
        if isinstance(op, ReturnOp):
            return
        if not isinstance(op, ProgramOpBase):
            raise SimError(f"the snac level cannot execute '{op.name}'")
        if op.world_size != world:
            raise SimError(f"'{op.name}' is for world {op.world_size}, run on {world} ranks")
        counts = counts_of(func, op, args)
        state = World(world, data=True)
        buffers = {
            op.input: args[arg_index(func, op.input, op)],
            op.output: args[arg_index(func, op.output, op)],
        }
        try:
            execute(op, args=buffers, counts=counts, calls=calls, seed=seed, world_state=state)
        except SnacExecutionError as e:
            raise SimError(str(e)) from None


def counts_of(func: FuncOp, op: ProgramOpBase, args: list[list[np.ndarray]]) -> list | None:
    """The dynamic counts `op` is called with (the same on every rank), if any."""
    if op.counts is None:
        return None
    per_rank = args[arg_index(func, op.counts, op)]
    if any(not np.array_equal(c, per_rank[0]) for c in per_rank):
        raise SimError(f"'{op.name}': counts differ between ranks")
    return per_rank[0].tolist()


def arg_index(func: FuncOp, value: SSAValue, op: ProgramOpBase) -> int:
    if not isinstance(value, BlockArgument) or value.owner is not func.body.block:
        raise SimError(f"'{op.name}': buffers must be arguments of @{func.sym_name.data}")
    return value.index
