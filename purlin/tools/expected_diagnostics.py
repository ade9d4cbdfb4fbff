"""`// expected-error {{...}}` annotations, checked as mlir-opt --verify-diagnostics does.

An annotation expects a diagnostic whose message contains its text (or, as
`expected-error-re`, matches it, `{{...}}` parts being regular expressions)
on the annotation's own line, on a line relative to it (`@+N`, `@-N`), on the
nearest line above or below that holds no annotation (`@above`, `@below`),
or without a location (`@unknown`). Every diagnostic of a chunk must be
expected and every expectation met.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ANNOTATION = re.compile(
    r"expected-(error|warning|note|remark)(-re)?(?:@([+-]\d+|above|below|unknown))?\s*\{\{(.*)\}\}"
)


@dataclass
class Expected:
    kind: str
    text: str
    pattern: re.Pattern[str]
    line: int | None  # the file line the diagnostic must be on; None: no location
    at: tuple[int, int]  # where the annotation is written (file line, column)
    met: bool = False


def _pattern(text: str, regex: bool) -> re.Pattern[str]:
    if not regex:
        return re.compile(re.escape(text))
    parts = re.split(r"\{\{(.*?)\}\}", text)
    # Even parts are literal text, odd parts regular expressions.
    return re.compile("".join(p if i % 2 else re.escape(p) for i, p in enumerate(parts)))


def expected_in(text: str, line_offset: int = 0) -> list[Expected]:
    """The annotations of `text`, whose first line is line `line_offset + 1` of its file."""
    lines = text.split("\n")
    marked = [ANNOTATION.search(line) for line in lines]
    out = []
    for i, m in enumerate(marked):
        if m is None:
            continue
        kind, regex, where, body = m.groups()
        if where is None:
            target: int | None = i
        elif where == "unknown":
            target = None
        elif where in ("above", "below"):
            step = -1 if where == "above" else 1
            target = i + step
            while 0 <= target < len(lines) and marked[target] is not None:
                target += step
        else:
            target = i + int(where)
        line = None if target is None else target + 1 + line_offset
        out.append(Expected(kind, body, _pattern(body, bool(regex)), line,
                            (i + 1 + line_offset, m.start() + 1)))
    return out


def has_annotations(text: str) -> bool:
    return ANNOTATION.search(text) is not None


# An error produced: (file line, column) or None when it has no location, and its message.
Produced = tuple[tuple[int, int] | None, str]


def check(name: str, expected: list[Expected], errors: list[Produced]) -> list[str]:
    """Each error of file `name` must meet an expectation of its line; returns
    a diagnostic for each one that does not and for each expectation left unmet."""
    problems = []
    for at, message in errors:
        line = None if at is None else at[0]
        match = next((e for e in expected if not e.met and e.kind == "error" and e.line == line
                      and e.pattern.search(message)), None)
        if match is not None:
            match.met = True
            continue
        where = f"{name}:{at[0]}:{at[1]}: " if at is not None else ""
        first = message.strip().splitlines()[0] if message.strip() else ""
        problems.append(f"{where}error: unexpected error: {first}")
    for e in expected:
        if not e.met:
            problems.append(
                f'{name}:{e.at[0]}:{e.at[1]}: error: expected {e.kind} "{e.text}" was not produced'
            )
    return problems
