"""Located diagnostics: `file:line:col: error: 'op': message`.

xDSL's parser only records locations written as `loc(...)`; `LocatedParser`
also records where each operation starts so verifier and pass errors can
point at the source, one line each instead of a dump of the module.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, VerifyException


class LineIndex:
    """Where each line of a text starts, found in one scan: a position's line
    and column are then a bisection (xDSL's `Span.get_location` counts the
    newlines from the start of the text on every call)."""

    def __init__(self, text: str):
        self.starts = [0, *(m.end() for m in re.finditer("\n", text))]

    def line_col(self, pos: int) -> tuple[int, int]:
        """1-based line and column of position `pos`."""
        line = bisect_right(self.starts, pos)
        return line, pos - self.starts[line - 1] + 1


def decode_source(data: bytes, name: str, line_offset: int = 0) -> str:
    """`data` as UTF-8 text; a located DiagnosticException naming `name` when it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1 + line_offset
        col = e.start - data.rfind(b"\n", 0, e.start)
        raise DiagnosticException(
            f"{name}:{line}:{col}: error: not UTF-8 text (byte 0x{data[e.start]:02x}: {e.reason}); "
            "expected an MLIR source file"
        ) from None


class LocatedParser(Parser):
    """`line_offset` is the line the input starts at in its file (for --split-input-file)."""

    def __init__(self, ctx: Context, input: str | bytes, name: str, line_offset: int = 0):
        super().__init__(ctx, input, name)
        self.line_offset = line_offset
        self.lines = LineIndex(self.lexer.input.content)
        self.filename = StringAttr(name)

    def parse_operation(self) -> Operation:
        line, col = self.lines.line_col(self._current_token.span.start)
        op = super().parse_operation()
        if not isinstance(op.location, FileLineColLoc):
            op.location = FileLineColLoc(
                self.filename, IntAttr(line + self.line_offset), IntAttr(col)
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
