"""Located diagnostics: `file:line:col: error: 'op': message`.

xDSL's parser only records locations written as `loc(...)`; `LocatedParser`
also records where each operation starts so verifier and pass errors can
point at the source, one line each instead of a dump of the module.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException


class LocatedParser(Parser):
    """`line_offset` is the line the input starts at in its file (for --split-input-file)."""

    def __init__(self, ctx: Context, input: str | bytes, name: str, line_offset: int = 0):
        super().__init__(ctx, input, name)
        self.line_offset = line_offset

    def parse_operation(self) -> Operation:
        where = self._current_token.span.get_location()
        op = super().parse_operation()
        if not isinstance(op.location, FileLineColLoc):
            op.location = FileLineColLoc(
                StringAttr(where.file),
                IntAttr(where.line + self.line_offset),
                IntAttr(where.col),
            )
        return op


def where(op: Operation) -> str:
    """The source position of `op`, or its name when it has none."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return f"<{op.name}>"


def op_error(op: Operation, message: str) -> str:
    """One diagnostic line for `op`; `message` should name what is wrong and what was expected."""
    return f"{where(op)}: error: {message}"


def verify_located(module: ModuleOp, stage: str | None = None) -> None:
    """Verify every operation, raising one located diagnostic for the first failure."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            after = f" (after pass {stage})" if stage else ""
            msg = str(e).removeprefix("Operation does not verify: ")
            raise VerifyException(op_error(op, msg) + after) from None
