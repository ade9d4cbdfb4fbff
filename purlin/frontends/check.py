"""`check.expect_eq_const %v, dense<..> : T`: an expectation of StableHLO's
interpreter tests, which purlin-run checks on the value computed."""

from __future__ import annotations

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def
from xdsl.parser import Parser
from xdsl.printer import Printer

from purlin.frontends.op_definitions import DenseValueOp, parse_dense


@irdl_op_definition
class ExpectEqConstOp(DenseValueOp):
    name = "check.expect_eq_const"

    operand = operand_def()

    def __init__(self, operand: SSAValue, value: DenseIntOrFPElementsAttr):
        super().__init__(operands=[operand], properties={"value": value})

    @classmethod
    def parse(cls, parser: Parser) -> ExpectEqConstOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        value = parse_dense(parser, "value")
        return cls(parser.resolve_operand(operand, value.type), value)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        printer.print_string(", ")
        printer.print_attribute(self.value)  # type: ignore[arg-type]

    def verify_(self) -> None:
        self.verify_value(self.operand.type, "expects a dense value of the operand's type")


Check = Dialect("check", [ExpectEqConstOp], [])
