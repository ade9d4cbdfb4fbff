"""The runtimes' convention for the operands that they do not read.

Every packet carries the flag epoch + 1 and every staging access uses the
half of the epoch's parity: the CPU runtime and the plan hard-code both, so a
put's `flag` and a put's or stage's `half` must be those values. Lowering
checks them on the IR's def chains (constants, `arith.addi` / `arith.subi`
on `snac.epoch`, `snac.half`) rather than dropping them unread.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue

from purlin.snac import dialect as snac


def convention_error(op: Operation) -> str | None:
    """What is wrong with the `half` / `flag` operands of a put or stage (snac
    or atom), or None when they are the runtimes' values or `op` has none."""
    if not isinstance(op, (snac.PutOpBase, snac.StageOpBase)):
        return None
    half = op.half.owner
    if not (isinstance(half, snac.HalfOp) and (k := epoch_offset(half.epoch)) is not None and k % 2 == 0):
        return (f"'{op.name}': half must be the current epoch's parity (snac.half of the epoch), "
                f"which the runtimes use; got {_describe(op.half)}")
    if isinstance(op, snac.PutOpBase) and epoch_offset(op.flag) != 1:
        return (f"'{op.name}': flag must be epoch + 1, which the runtimes write into every "
                f"packet; got {_describe(op.flag)}")
    return None


def epoch_offset(v: SSAValue) -> int | None:
    """k where `v` is snac.epoch's epoch + k, else None."""
    op = v.owner
    if isinstance(op, snac.EpochOp):
        return 0 if v is op.epoch else None
    if isinstance(op, arith.AddiOp):
        for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if (k := epoch_offset(a)) is not None and (c := _constant(b)) is not None:
                return k + c
    if isinstance(op, arith.SubiOp):
        if (k := epoch_offset(op.lhs)) is not None and (c := _constant(op.rhs)) is not None:
            return k - c
    return None


def _constant(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _describe(v: SSAValue) -> str:
    if (k := epoch_offset(v)) is not None:
        return "the epoch" if k == 0 else f"epoch {'+' if k > 0 else '-'} {abs(k)}"
    if (c := _constant(v)) is not None:
        return f"the constant {c}"
    if isinstance(v.owner, snac.EpochOp):
        return "the previous epoch"
    if isinstance(v.owner, snac.HalfOp):
        return f"snac.half of {_describe(v.owner.epoch)}"
    if isinstance(v.owner, Operation):
        return f"a result of '{v.owner.name}'"
    return "a block argument"
