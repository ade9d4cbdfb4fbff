"""One-line declarations of the dialects' enum attributes, as TableGen's
EnumAttr records write them: an attribute from its StrEnum. (Ops are classes
of their own, in xDSL's style: `@irdl_op_definition class StageOp(...)`.)"""

from __future__ import annotations

import types
from enum import StrEnum
from typing import Any, TypeVar

from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import SpacedOpaqueSyntaxAttribute
from xdsl.irdl import irdl_attr_definition

# xdsl bounds EnumAttribute by its own StrEnum class; enum.StrEnum works the
# same at run time, but type checkers tell the two apart (hence the ignores).
E = TypeVar("E", bound=StrEnum)


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

