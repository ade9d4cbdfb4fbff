"""Pieces the importers' op definitions share: fields given as a property or
an attribute, and ops that carry a dense constant `value`."""

from __future__ import annotations

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Attribute, Operation
from xdsl.irdl import IRDLOperation, opt_prop_def
from xdsl.parser import Parser
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
