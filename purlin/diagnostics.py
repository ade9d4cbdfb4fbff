"""Located diagnostics: `file:line:col: error: 'op': message`.

xDSL's parser only records locations written as `loc(...)`; `LocatedParser`
also records where each operation starts so verifier and pass errors can
point at the source, one line each instead of a dump of the module. Parse
errors are printed as mlir-opt prints them (`format_parse_error`), and
`// expected-error {{...}}` annotations are read and checked as mlir-opt's
--verify-diagnostics reads and checks them (`parse_annotations`,
`check_expected`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import AnyFloat, FileLineColLoc, IntAttr, ModuleOp, StringAttr
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


@dataclass
class _TensorLiteralElement(Parser._TensorLiteralElement):
    """A dense literal's element; a hexadecimal one of a float type is the
    float's bits (`dense<0xFF800000> : tensor<f32>` is -inf), as in MLIR,
    where xDSL 0.74 reads the integer's value."""

    def to_type(self, parser, type):  # type: ignore[no-untyped-def]
        if isinstance(type, AnyFloat) and isinstance(self.value, int) and self.span.text[:2] in ("0x", "0X"):
            return next(type.iter_unpack(self.value.to_bytes(type.compile_time_size, "little")))
        return super().to_type(parser, type)


class LocatedParser(Parser):
    """`line_offset` is the line the input starts at in its file (for --split-input-file)."""

    _TensorLiteralElement = _TensorLiteralElement

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
    """One diagnostic line for `op`, `FILE:LINE:COL: error: 'op': message`;
    `message` should name what is wrong and what was expected."""
    named = f"'{op.name}'"
    return f"{where(op)}: error: {message if message.startswith(named) else f'{named}: {message}'}"


class LocatedError(Exception):
    """An error found at `op` (None: at no one op) while running or expanding
    a program; str() is the one-line diagnostic."""

    def __init__(self, op: Operation | None, message: str):
        super().__init__(message)
        self.op = op
        self.message = message

    def __str__(self) -> str:
        return self.within("")

    def within(self, context: str) -> str:
        """The diagnostic with `context` (the pass or check that found it) before the message."""
        message = f"{context}: {self.message}" if context else self.message
        return op_error(self.op, message) if self.op is not None else f"error: {message}"


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


SEVERITIES = ("error", "warning", "note", "remark")

# mlir's designator (SourceMgrDiagnosticVerifierHandler), searched for in a line
# stripped of trailing white space: severity, -re, location, message.
ANNOTATION = re.compile(
    r"expected-(error|warning|note|remark)(-re)? *(?:@([+-][0-9]+|above|below|unknown))? *\{\{(.*)\}\}$"
)
# A word starting `expected-`: an annotation meant, though mlir's syntax may not match it.
_MEANT = re.compile(r"(?<![^\s/])expected-([\w-]*) *(@[^\s{]*)? *(\{\{)?")
_LOCATION = re.compile(r"@(?:[+-][0-9]+|above|below|unknown)")


@dataclass
class Expected:
    """An annotation: a diagnostic of `kind` whose message holds `text` (or,
    from expected-*-re, matches `pattern`) on file line `line`."""

    kind: str
    text: str
    pattern: re.Pattern[str]
    line: int | None  # None: the diagnostic has no location (@unknown)
    at: tuple[int, int]  # where the annotation is written (file line, column)
    met: bool = False

    def matches(self, message: str) -> bool:
        return self.pattern.search(message) is not None


def _regex(body: str) -> re.Pattern[str] | str:
    """The pattern of an expected-*-re body ({{...}} parts are regular
    expressions, the rest literal), or what is wrong with it."""
    parts = []
    rest = body
    while (open_at := rest.find("{{")) >= 0:
        parts.append(re.escape(rest[:open_at]))
        rest = rest[open_at + 2:]
        close_at = rest.find("}}")
        if close_at < 0:
            return "has a regular expression without its end '}}'"
        try:
            re.compile(rest[:close_at])
        except re.error as e:
            return f"has an invalid regular expression '{rest[:close_at]}': {e.msg}"
        parts.append(f"({rest[:close_at]})")
        rest = rest[close_at + 2:]
    parts.append(re.escape(rest))
    try:
        return re.compile("".join(parts))
    except re.error as e:  # parts valid alone, not together (a group reference)
        return f"has an invalid regular expression '{body}': {e.msg}"


def _malformed(line: str) -> tuple[int, str] | None:
    """Where an annotation meant on `line` (which mlir's syntax does not match)
    starts and what is wrong with it; None when none is meant: a word
    `expected-...` followed by a location, `{{`, nothing, or text ending in
    `}}` (not prose such as "the expected-output layout")."""
    for m in _MEANT.finditer(line):
        word, location, braces = m.groups()
        if location is None and braces is None and line[m.end():] and not line.endswith("}}"):
            continue
        if word.removesuffix("-re") in SEVERITIES:
            return m.start(), _what_is_wrong(f"'expected-{word}'", location, braces)
        return m.start(), (
            f"unknown annotation 'expected-{word}': expected expected-error, expected-warning, "
            "expected-note or expected-remark, each optionally with -re"
        )
    return None


def _what_is_wrong(name: str, location: str | None, braces: str | None) -> str:
    """What keeps annotation `name`, of a known kind, from mlir's syntax."""
    if location is not None and not _LOCATION.fullmatch(location):
        return f"annotation {name} has a malformed location '{location}': expected @+N, @-N, @above, @below or @unknown"
    if braces is None:
        return f"annotation {name} has no '{{{{': expected the message between '{{{{' and '}}}}'"
    return (f"annotation {name} does not end with '}}}}': expected the message between '{{{{' and '}}}}' "
            "at the end of the line")


def parse_annotations(text: str, name: str, line_offset: int = 0) -> tuple[list[Expected], list[str]]:
    """The annotations of `text`, whose first line is line `line_offset + 1` of
    file `name`, and a diagnostic for each one that cannot be read."""
    lines = text.split("\n")
    expected: list[Expected] = []
    problems: list[str] = []
    last_plain = 0  # the last line holding no annotation (0-based), as mlir counts
    below: list[Expected] = []
    for i, raw in enumerate(lines):
        line = raw.rstrip()
        m = ANNOTATION.search(line)
        if m is None:
            if (bad := _malformed(line)) is not None:
                problems.append(f"{name}:{i + 1 + line_offset}:{bad[0] + 1}: error: {bad[1]}")
            for e in below:
                e.line = i + 1 + line_offset
            below.clear()
            last_plain = i
            continue
        kind, regex, where, body = m.groups()
        at = (i + 1 + line_offset, m.start() + 1)
        pattern = _regex(body) if regex else re.compile(re.escape(body))
        if isinstance(pattern, str):
            problems.append(f"{name}:{at[0]}:{at[1]}: error: annotation 'expected-{kind}-re' {pattern}")
            continue
        target: int | None = i
        if where == "unknown":
            target = None
        elif where == "above":
            target = last_plain
        elif where == "below":
            target = len(lines) - 1  # unless a line without annotation follows
        elif where is not None:
            target = i + int(where)
        e = Expected(kind, body, pattern, None if target is None else target + 1 + line_offset, at)
        if where == "below":
            below.append(e)
        expected.append(e)
    return expected, problems


# A diagnostic produced: its severity, (file line, column) or None when it has no location, and its message.
Produced = tuple[str, tuple[int, int] | None, str]


def check_expected(name: str, expected: list[Expected], produced: list[Produced]) -> list[str]:
    """Each diagnostic of file `name` must meet an annotation of its line and
    kind (one annotation may meet several); returns an error for each one that
    does not and for each annotation left unmet, as mlir-opt does."""
    problems = []
    for kind, at, message in produced:
        line = None if at is None else at[0]
        candidates = [e for e in expected if e.line == line and e.matches(message)]
        if (match := next((e for e in candidates if e.kind == kind), None)) is not None:
            match.met = True
        elif candidates:
            near = candidates[0]
            problems.append(f"{name}:{near.at[0]}:{near.at[1]}: error: "
                            f"'{kind}' diagnostic emitted when expecting a '{near.kind}'")
        else:
            where = f"{name}:{at[0]}:{at[1]}: " if at is not None else ""
            first = message.strip().splitlines()[0] if message.strip() else ""
            problems.append(f"{where}error: unexpected {kind}: {first}")
    for e in expected:
        if not e.met:
            problems.append(f'{name}:{e.at[0]}:{e.at[1]}: error: expected {e.kind} "{e.text}" was not produced')
    return problems
