"""The runtimes hard-code a put's flag (epoch + 1) and the half of a put or
stage (the epoch's parity): lowering refuses IR whose operands say otherwise,
naming the op, instead of dropping them unread."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType
from xdsl.rewriter import InsertPoint, Rewriter

from purlin.atom import dialect as atom
from purlin.compile.pipeline import lower, parse_module
from purlin.atom.dialect import kernels_in
from purlin.conversion.atom_to_plan import PlanBuildError, build_plan

TEXT = """func.func @all_gather(%in: memref<2xf32>, %out: memref<4xf32>) {
  coll.all_gather %in, %out world 2 : memref<2xf32>, memref<4xf32>
  func.return
}"""


def _kernel(regime: str) -> atom.KernelOp:
    module = lower(parse_module(TEXT), f"coll-expand,convert-coll-to-snac{{regime={regime}}},convert-snac-to-atom")
    (kernel,) = kernels_in(module)
    return kernel


def _refused(regime: str, cls: type, operand: int, value: int, message: str) -> None:
    """`regime`'s kernel with operand `operand` of its first `cls` op set to
    the constant `value`: atom-to-plan refuses it with `message`."""
    kernel = _kernel(regime)
    op = next(o for o in kernel.walk() if isinstance(o, cls))
    c = arith.ConstantOp.from_int_and_width(value, IndexType())
    Rewriter.insert_op(c, InsertPoint.before(op))
    op.operands[operand] = c.result
    with pytest.raises(PlanBuildError, match=message):
        build_plan(kernel)


def test_the_lowered_kernels_follow_the_convention():
    for regime in ("latency", "throughput"):
        build_plan(_kernel(regime))


def test_atom_to_plan_refuses_a_put_with_another_flag():
    _refused("latency", atom.PutOp, 3, 1, r"'atom\.put': flag must be epoch \+ 1, .* got the constant 1")


def test_atom_to_plan_refuses_a_stage_into_a_fixed_half():
    _refused("throughput", atom.StageOp, 2, 0, r"'atom\.stage': half must be the current epoch's parity")
