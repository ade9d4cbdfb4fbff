"""Located diagnostics: `file:line:col: error: 'op': message`.

xDSL's parser only records locations written as `loc(...)`; `LocatedParser`
also records where each operation starts so verifier and pass errors can
point at the source, one line each instead of a dump of the module. Parse
errors are printed as mlir-opt prints them (`format_parse_error`).
"""

from __future__ import annotations

import re
from bisect import bisect_right

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, MultipleSpansParseError, ParseError, VerifyException
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind


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

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """As xDSL's, but input without operations is an empty module, as in mlir-opt."""
        if allow_implicit_module:
            while self._current_token.kind in (MLIRTokenKind.HASH_IDENT, MLIRTokenKind.EXCLAMATION_IDENT):
                self._parse_alias_def()
            if self._current_token.kind == MLIRTokenKind.EOF:
                return ModuleOp([])
        return super().parse_module(allow_implicit_module)

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


def _source_line(span: Span[str] | Span[bytes]) -> tuple[str, str]:
    """The line `span` starts on and a caret under its start, tabs expanded to
    stops of 8 as LLVM's SourceMgr prints them."""
    text = span.input
    start = text.get_start_of_line(span.start)
    line = text.content[start:text.get_end_of_line(span.start)]
    before = text.content[start:span.start]
    if isinstance(line, bytes):
        line, before = line.decode("utf-8", "replace"), before.decode("utf-8", "replace")
    return line.removesuffix("\r").expandtabs(8), " " * len(before.expandtabs(8)) + "^"


def _located_lines(severity: str, span: Span[str] | Span[bytes], message: str) -> list[str]:
    line, caret = _source_line(span)
    return [f"{span.get_location()}: {severity}: {message}", line, caret]


def parse_error_notes(error: ParseError) -> list[tuple[Span[str] | Span[bytes], str]]:
    """The places a parse error refers to (a block's first declaration), each with its note."""
    if not isinstance(error, MultipleSpansParseError):
        return []
    default = (error.ref_text or "").strip().removesuffix(":")
    return [(span, message or default) for span, message in error.refs]


def format_parse_error(error: ParseError) -> str:
    """`file:line:col: error: message`, the source line and a caret, then each
    note the same way: what mlir-opt prints for a parse error."""
    lines = _located_lines("error", error.span, error.msg)
    for span, note in parse_error_notes(error):
        lines += _located_lines("note", span, note)
    return "\n".join(lines)

