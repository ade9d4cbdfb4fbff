"""Parsing stays linear in the input: locating each operation must not rescan
the text before it (which made 66k ops take 77 s and a 50 MB file never finish)."""

import pytest

from purlin.compile.pipeline import make_context
from purlin.diagnostics import LineIndex, LocatedParser, where

OP = "  coll.all_reduce sum %a, %a world 2 : memref<8xf32>, memref<8xf32>\n"


def module_text(ops: int) -> str:
    return "func.func @f(%a: memref<8xf32>) {\n" + OP * ops + "  func.return\n}\n"


class CountingText(str):
    """A str that tallies the characters its searches look through: the work
    xDSL's `Span.get_location` does to find a line (count and rfind from 0)."""

    scanned = 0

    def _tally(self, start, end):
        start = 0 if start is None else start
        end = len(self) if end is None else end
        CountingText.scanned += max(0, end - start)

    def count(self, sub, start=None, end=None):
        self._tally(start, end)
        return super().count(sub, start, end)

    def rfind(self, sub, start=None, end=None):
        self._tally(start, end)
        return super().rfind(sub, start, end)

    def find(self, sub, start=None, end=None):
        self._tally(start, end)
        return super().find(sub, start, end)


def scanned_to_parse(ops: int):
    text = CountingText(module_text(ops))
    CountingText.scanned = 0
    module = LocatedParser(make_context(), text, "big.mlir").parse_module()
    return CountingText.scanned, len(text), module


@pytest.mark.parametrize("ops", [250, 1000])
def test_locating_ops_scans_the_text_a_bounded_number_of_times(ops):
    scanned, size, _ = scanned_to_parse(ops)
    # Quadratic location scanned about ops / 2 times the text (125x and 500x here).
    assert scanned <= 2 * size, (ops, scanned, size)


def test_work_grows_linearly_from_n_to_4n_ops():
    small, _, _ = scanned_to_parse(250)
    large, _, _ = scanned_to_parse(1000)
    assert large <= 6 * max(small, 1)


def test_locations_are_still_exact():
    _, _, module = scanned_to_parse(3)
    func = module.body.block.first_op
    ops = list(func.body.block.ops)
    assert [where(op) for op in ops] == [f"big.mlir:{line}:3" for line in (2, 3, 4, 5)]


@pytest.mark.parametrize(
    "text, pos, want",
    [("", 0, (1, 1)), ("ab\ncd\n", 0, (1, 1)), ("ab\ncd\n", 2, (1, 3)), ("ab\ncd\n", 3, (2, 1)),
     ("ab\ncd\n", 6, (3, 1)), ("\n\n\nx", 3, (4, 1))],
)
def test_line_index_agrees_with_counting_newlines(text, pos, want):
    assert LineIndex(text).line_col(pos) == want
    line_start = text.rfind("\n", 0, pos) + 1
    assert want == (text.count("\n", 0, line_start) + 1, pos - line_start + 1)
