"""`check.expect_eq_const %v, dense<..> : T`: an expectation of StableHLO's
interpreter tests, which purlin-run checks on the value computed."""

from __future__ import annotations

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, opt_prop_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from purlin.frontends.stablehlo import field


@irdl_op_definition
class ExpectEqConstOp(IRDLOperation):
    name = "check.expect_eq_const"

    operand = operand_def()
    value_ = opt_prop_def(Attribute, prop_name="value")

    def __init__(self, operand: SSAValue, value: DenseIntOrFPElementsAttr):
        super().__init__(operands=[operand], properties={"value": value})

    @property
    def value(self) -> Attribute | None:
        return field(self, "value")

    @classmethod
    def parse(cls, parser: Parser) -> ExpectEqConstOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        start = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("expected a dense<..> : tensor<..> value", start, parser.pos)
        return cls(parser.resolve_operand(operand, value.type), value)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        printer.print_string(", ")
        printer.print_attribute(self.value)  # type: ignore[arg-type]

    def verify_(self) -> None:
        if not isinstance(self.value, DenseIntOrFPElementsAttr) or self.value.type != self.operand.type:
            raise VerifyException(f"'{self.name}': expects a dense value of the operand's type {self.operand.type}")


Check = Dialect("check", [ExpectEqConstOp], [])
