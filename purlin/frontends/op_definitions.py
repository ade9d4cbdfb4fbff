"""Pieces the importers' op definitions share: ops that differ from a base
only in name and a few fields, and ops that carry a dense constant `value`."""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Attribute, Operation
from xdsl.irdl import IRDLOperation, irdl_op_definition, opt_prop_def
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

Op = TypeVar("Op", bound=IRDLOperation)


def field(op: Operation, name: str) -> Attribute | None:
    """An op's field `name`, given as a property or as an attribute."""
    return op.properties.get(name, op.attributes.get(name))


def define_op(base: type[Op], module: str, cls_name: str, op_name: str,
              doc: str | None = None, **body: Any) -> type[Op]:
    """The op `op_name`: `base` with `body` (field definitions, traits,
    assembly format, upper-case class constants) added, defined in `module`."""
    namespace = {"name": op_name, "__module__": module, "__qualname__": cls_name, **body}
    # IRDL takes upper-case names for class constants only when declared ClassVar.
    namespace["__annotations__"] = {k: ClassVar[type(v)] for k, v in body.items() if k.isupper()}
    if doc is not None:
        namespace["__doc__"] = doc
    return irdl_op_definition(type(cls_name, (base,), namespace))


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
