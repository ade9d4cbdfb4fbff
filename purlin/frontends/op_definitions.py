"""Pieces the importers' op definitions share: fields given as a property or
an attribute, ops that carry a dense constant `value`, and terminators that
return a region's values."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, opt_prop_def, traits_def, var_operand_def
from xdsl.parser import Parser
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException


def field(op: Operation, name: str) -> Attribute | None:
    """An op's field `name`, given as a property or as an attribute."""
    return op.properties.get(name, op.attributes.get(name))


class DenseValueOp(IRDLOperation):
    """An op with a dense constant `value`, a property or an attribute."""

    value_ = opt_prop_def(Attribute, prop_name="value")

    @property
    def value(self) -> Attribute | None:
        return field(self, "value")

    def verify_value(self, of_type: Attribute, expected: str) -> None:
        """The value must be dense and of `of_type`; `expected` says so."""
        if not isinstance(self.value, DenseIntOrFPElementsAttr) or self.value.type != of_type:
            raise VerifyException(f"'{self.name}': {expected} {of_type}")


def parse_dense(parser: Parser, what: str) -> DenseIntOrFPElementsAttr:
    """`dense<..> : tensor<..>`, named `what` in the error otherwise."""
    start = parser.pos
    value = parser.parse_attribute()
    if not isinstance(value, DenseIntOrFPElementsAttr):
        parser.raise_error(f"expected a dense<..> : tensor<..> {what}", start, parser.pos)
    return value


class ValuesTerminator(IRDLOperation):
    """`OP %v, .. : T, ..`: a region's terminator, returning its values (parsed
    in that form; printed as each dialect prints)."""

    values = var_operand_def()
    traits = traits_def(IsTerminator())

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])

    @classmethod
    def parse(cls, parser: Parser) -> ValuesTerminator:
        names = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand) or []
        values = []
        if names:
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            if len(types) != len(names):
                parser.raise_error(f"{len(names)} values but {len(types)} types")
            values = [parser.resolve_operand(n, t) for n, t in zip(names, types)]
        return cls(values)
