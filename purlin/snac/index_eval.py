"""Index arithmetic and snac queries, evaluated for one rank.

Shared by the snac simulator, which knows each rank's epochs, and by
atom-to-plan, which keeps them symbolic; each says what the epoch values are
and how arithmetic treats them.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from xdsl.dialects import arith, scf
from xdsl.ir import Block, Operation, SSAValue

from purlin.snac import dialect as snac

if TYPE_CHECKING:
    from purlin.snac.phase_binding import PhaseState

BinaryFn = Callable[[Any, Any], Any]

BINARY: dict[type[Operation], BinaryFn] = {
    arith.AddiOp: operator.add,
    arith.SubiOp: operator.sub,
    arith.MuliOp: operator.mul,
    arith.OrIOp: operator.or_,
    arith.MaxUIOp: max,
    arith.RemUIOp: operator.mod,
}


def block_code(cache: dict, block: Block, classify: Callable[[Operation], tuple | None]) -> list[tuple]:
    """`block`'s ops classified once (reading operands through IRDL at every
    step costs more than the step), kept in `cache`: an scf.for as ("for",
    op, (lower, upper, step, induction variable, body)), an scf.yield left
    out, any other op as `classify` gives it (None: left out)."""
    code = cache.get(block)
    if code is None:
        code = cache[block] = []
        for op in block.ops:
            if isinstance(op, scf.ForOp):
                code.append(("for", op, (op.lb, op.ub, op.step, op.body.block.args[0], op.body.block)))
            elif not isinstance(op, scf.YieldOp) and (item := classify(op)) is not None:
                code.append(item)
    return code


class IndexEvaluator:
    """Evaluates arith constants and integer ops, `snac.rank`, `snac.epoch`,
    `snac.half` and the phase queries (`snac.units`, `snac.groups`,
    `snac.max_units`) into an environment of SSA values."""

    phases: dict[str, PhaseState]

    def _phase(self, op: Operation) -> PhaseState:
        return self.phases[op.phase.string_value()]  # type: ignore[attr-defined]

    def eval_index(self, op: Operation, env: dict[SSAValue, Any], rank: int) -> bool:
        """Bind the results of `op` in `env`; False, binding nothing, when
        `op` is none of the ops above."""
        if isinstance(op, arith.ConstantOp):
            env[op.result] = op.value.value.data  # type: ignore[attr-defined]
        elif (fn := BINARY.get(type(op))) is not None:
            env[op.result] = self.binary(op, fn, env[op.lhs], env[op.rhs])  # type: ignore[attr-defined]
        elif isinstance(op, snac.RankOp):
            env[op.result] = rank
        elif isinstance(op, snac.EpochOp):
            env[op.epoch], env[op.prev] = self.epoch_values(rank)
        elif isinstance(op, snac.HalfOp):
            env[op.result] = self.half(env[op.epoch])
        elif isinstance(op, snac.UnitsOp):
            env[op.result] = len(self._phase(op).plan.units[env[op.rank]])
        elif isinstance(op, snac.GroupsOp):
            env[op.result] = len(self._phase(op).plan.groups[env[op.rank]])
        elif isinstance(op, snac.StagedGroupsOp):
            env[op.result] = self._phase(op).plan.staged_groups(env[op.rank])
        elif isinstance(op, snac.MaxUnitsOp):
            env[op.result] = self._phase(op).plan.max_units
        else:
            return False
        return True

    def binary(self, op: Operation, fn: BinaryFn, a: Any, b: Any) -> Any:
        """The result of the integer op `op`, which computes `fn`, on `a`, `b`."""
        return fn(a, b)

    def epoch_values(self, rank: int) -> tuple[Any, Any]:
        """The values of `snac.epoch` on `rank`: the epoch and the previous one."""
        raise NotImplementedError

    def half(self, epoch: Any) -> Any:
        """The value of `snac.half` for `epoch`: the staging half in use."""
        return epoch % 2
