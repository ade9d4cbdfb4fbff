"""One-line declarations for the dialects, as TableGen's EnumAttr and op
records write them: an enum attribute from its StrEnum, and an op that
differs from a base only in name and a few fields."""

from __future__ import annotations

import types
from enum import StrEnum
from typing import Any, ClassVar, TypeVar

from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import SpacedOpaqueSyntaxAttribute
from xdsl.irdl import IRDLOperation, irdl_attr_definition, irdl_op_definition

# xdsl bounds EnumAttribute by its own StrEnum class; enum.StrEnum works the
# same at run time, but type checkers tell the two apart (hence the ignores).
E = TypeVar("E", bound=StrEnum)
Op = TypeVar("Op", bound=IRDLOperation)


def enum_attribute(
    enum: type[E], name: str, module: str
) -> type[EnumAttribute[E]]:  # pyright: ignore[reportInvalidTypeArguments]
    """The attribute `name` holding a member of `enum`, written as the
    member's value; the class is `{enum}Attr`, defined in `module`."""
    cls_name = f"{enum.__name__}Attr"

    def body(namespace: dict[str, Any]) -> None:
        namespace.update(name=name, __module__=module, __qualname__=cls_name)

    # types.new_class keeps the subscripted base in __orig_bases__, where
    # EnumAttribute finds its enum.
    bases = (EnumAttribute[enum], SpacedOpaqueSyntaxAttribute)  # pyright: ignore[reportInvalidTypeArguments]
    return irdl_attr_definition(types.new_class(cls_name, bases, exec_body=body))


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
