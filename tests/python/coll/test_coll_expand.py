"""coll-expand through the Python API: each of the seven collectives becomes one
coll.collective, and its layouts move data exactly as the collective says.

The meaning is checked with a tiny layout interpreter (every output slice gets
its input slices of the same name, copied or summed) against numpy definitions
of each collective, for several worlds and sizes, odd ones included.
"""

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from purlin.coll.dialect import Coll, CollectiveOp, NamedCollective
from purlin.coll.expand import CollExpandPass
from purlin.coll.layouts import Layout, LayoutKind


def _expand(body: str, args: str) -> list[CollectiveOp]:
    ctx = Context()
    for d in (Builtin, Func, Coll):
        ctx.load_dialect(d)
    module = Parser(ctx, f"func.func @f({args}) {{\n{body}\n  func.return\n}}").parse_module()
    module.verify()
    CollExpandPass().apply(ctx, module)
    module.verify()
    assert not [op for op in module.walk() if isinstance(op, NamedCollective)]
    return [op for op in module.walk() if isinstance(op, CollectiveOp)]


def _one(body: str, args: str) -> CollectiveOp:
    (op,) = _expand(body, args)
    return op


def _named(name: str, w: int, a: int, b: int, elem: str = "f32", op: str = "", rest: str = "") -> CollectiveOp:
    """The expansion of `coll.NAME [OP] %a, %b world W REST` on
    %a: memref<A x ELEM> and %b: memref<B x ELEM>."""
    ta, tb = f"memref<{a}x{elem}>", f"memref<{b}x{elem}>"
    return _one(f"coll.{name} {op + ' ' if op else ''}%a, %b world {w}{rest} : {ta}, {tb}", f"%a: {ta}, %b: {tb}")


def _run(inp: Layout, out: Layout, reduce: bool, data: list[np.ndarray], out_size: int):
    """Apply a layout pair to per-rank inputs (sum when reducing)."""
    result = [np.zeros(out_size) for _ in range(inp.world)]
    for rank in range(out.world):
        for s in out.slices(rank):
            parts = [data[src.rank][src.offset : src.end] for src in inp.slices_named(s.name)]
            assert reduce or len(parts) == 1
            result[rank][s.offset : s.end] = np.sum(parts, axis=0)
    return result


def _inputs(w: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(w * 1000 + n)
    return [rng.integers(-50, 50, n).astype(float) for _ in range(w)]


SHAPES = [(1, 5), (2, 8), (3, 7), (4, 16), (5, 3), (8, 64)]


@pytest.mark.parametrize("w,n", SHAPES)
def test_all_reduce(w, n):
    op = _named("all_reduce", w, n, n, op="sum", rest=" deterministic")
    inp, out = op.layouts()
    assert op.consume.kind == "sum" and op.deterministic is not None
    assert inp == out and inp.kind == LayoutKind.SCATTERED
    # Uneven sizes become balanced V counts, larger slices first.
    if n % w:
        assert inp.variable and sorted(inp.counts, reverse=True) == list(inp.counts)
        assert max(inp.counts) - min(inp.counts) == 1 and sum(inp.counts) == n
    else:
        assert inp == Layout.fixed(LayoutKind.SCATTERED, w, n // w)
    data = _inputs(w, n)
    for got in _run(inp, out, True, data, n):
        np.testing.assert_array_equal(got, np.sum(data, axis=0))


@pytest.mark.parametrize("w,n", SHAPES)
def test_all_gather(w, n):
    op = _named("all_gather", w, n, w * n, "bf16")
    inp, out = op.layouts()
    assert op.consume.kind is None
    assert (inp, out) == (Layout.fixed(LayoutKind.PACKED, w, n), Layout.fixed(LayoutKind.SCATTERED, w, n))
    data = _inputs(w, n)
    for got in _run(inp, out, False, data, w * n):
        np.testing.assert_array_equal(got, np.concatenate(data))


@pytest.mark.parametrize("w,n", SHAPES)
def test_reduce_scatter(w, n):
    op = _named("reduce_scatter", w, w * n, n, "f16", op="max")
    inp, out = op.layouts()
    assert op.consume.kind == "max"
    assert (inp, out) == (Layout.fixed(LayoutKind.SCATTERED, w, n), Layout.fixed(LayoutKind.PACKED, w, n))
    data = _inputs(w, w * n)
    total = np.sum(data, axis=0)  # the interpreter sums; the layouts are what is checked
    for rank, got in enumerate(_run(inp, out, True, data, n)):
        np.testing.assert_array_equal(got, total[rank * n : (rank + 1) * n])


@pytest.mark.parametrize("w,n", SHAPES)
def test_all_to_all(w, n):
    n = n * w  # divisible by world
    op = _named("all_to_all", w, n, n, "f8E4M3FN")
    inp, out = op.layouts()
    assert (inp.kind, out.kind) == (LayoutKind.ADDRESSED, LayoutKind.TRANSPOSED)
    data = _inputs(w, n)
    c = n // w
    for rank, got in enumerate(_run(inp, out, False, data, n)):
        # Block i of rank r's output is block r of rank i's input.
        want = np.concatenate([data[i][rank * c : (rank + 1) * c] for i in range(w)])
        np.testing.assert_array_equal(got, want)


V_COUNTS = [[3], [0, 5], [2, 0, 4], [1, 0, 0, 7], [4, 4, 4, 4, 0]]


def _v_layouts(name: str, counts: list, a: int, b: int, in_kind: LayoutKind, out_kind: LayoutKind,
               op: str = "") -> tuple[Layout, Layout]:
    """The layouts of `_named(name, ..., a, b)` over `counts` (a list, or a
    matrix the attribute lists row by row), checked to be `in_kind` and
    `out_kind` vectors of exactly those counts."""
    w = len(counts)
    listed = [c for row in counts for c in row] if isinstance(counts[0], list) else counts
    inp, out = _named(name, w, a, b, op=op, rest=f" counts {listed}").layouts()
    assert (inp, out) == (Layout.vector(in_kind, w, counts), Layout.vector(out_kind, w, counts))
    return inp, out


@pytest.mark.parametrize("counts", V_COUNTS)
def test_all_gather_v(counts):
    w, total, big = len(counts), sum(counts), max(counts)
    inp, out = _v_layouts("all_gather_v", counts, big, total, LayoutKind.PACKED, LayoutKind.SCATTERED)
    data = _inputs(w, big)
    for got in _run(inp, out, False, data, total):
        np.testing.assert_array_equal(got, np.concatenate([data[i][: counts[i]] for i in range(w)]))


@pytest.mark.parametrize("counts", V_COUNTS)
def test_reduce_scatter_v(counts):
    w, total, big = len(counts), sum(counts), max(counts)
    inp, out = _v_layouts("reduce_scatter_v", counts, total, big, LayoutKind.SCATTERED, LayoutKind.PACKED, op="sum")
    data = _inputs(w, total)
    summed = np.sum(data, axis=0)
    starts = np.cumsum([0, *counts])
    for rank, got in enumerate(_run(inp, out, True, data, big)):
        np.testing.assert_array_equal(got[: counts[rank]], summed[starts[rank] : starts[rank + 1]])


@pytest.mark.parametrize("matrix", [[[2]], [[1, 2], [0, 3]], [[0, 1, 2], [3, 0, 0], [1, 1, 1]]])
def test_all_to_all_v(matrix):
    w = len(matrix)
    n = max(max(sum(row) for row in matrix), max(sum(col) for col in zip(*matrix)))
    inp, out = _v_layouts("all_to_all_v", matrix, n, n, LayoutKind.ADDRESSED, LayoutKind.TRANSPOSED)
    data = _inputs(w, n)
    for rank, got in enumerate(_run(inp, out, False, data, n)):
        # Rank r receives, in sender order, what each sender addressed to r.
        parts = []
        for i in range(w):
            start = sum(matrix[i][:rank])
            parts.append(data[i][start : start + matrix[i][rank]])
        want = np.concatenate(parts)
        np.testing.assert_array_equal(got[: len(want)], want)


def test_dynamic_counts_carry_over():
    ops = _expand(
        "coll.all_gather_v %a, %b world 4 counts %n : memref<8xf32>, memref<32xf32>, memref<4xi64>\n"
        "coll.reduce_scatter_v sum %b, %a world 4 counts %n deterministic : memref<32xf32>, memref<8xf32>, memref<4xi64>\n"
        "coll.all_to_all_v %b, %b world 4 counts %m : memref<32xf32>, memref<32xf32>, memref<4x4xi64>",
        "%a: memref<8xf32>, %b: memref<32xf32>, %n: memref<4xi64>, %m: memref<4x4xi64>",
    )
    kinds = [(op.layouts()[0].kind, op.layouts()[1].kind) for op in ops]
    assert kinds == [
        (LayoutKind.PACKED, LayoutKind.SCATTERED),
        (LayoutKind.SCATTERED, LayoutKind.PACKED),
        (LayoutKind.ADDRESSED, LayoutKind.TRANSPOSED),
    ]
    for op in ops:
        assert all(layout.is_dynamic for layout in op.layouts())
    assert [op.counts.name_hint for op in ops] == ["n", "n", "m"]
    assert ops[1].deterministic is not None and ops[0].deterministic is None


def test_discardable_attributes_carry_over():
    op = _one(
        'coll.all_reduce sum %a, %a world 2 {tag = "grad"} : memref<8xf32>, memref<8xf32>',
        "%a: memref<8xf32>",
    )
    assert str(op.attributes["tag"]) == '"grad"'


def test_unexpandable_op_fails_with_a_diagnostic():
    with pytest.raises(PassFailedException, match=r"'coll.all_reduce': cannot expand .* dynamic sizes"):
        _expand(
            "coll.all_reduce sum %a, %a world 2 : memref<?xf32>, memref<?xf32>",
            "%a: memref<?xf32>",
        )


def test_expansion_is_idempotent():
    ctx = Context()
    for d in (Builtin, Func, Coll):
        ctx.load_dialect(d)
    module = Parser(
        ctx,
        "func.func @f(%a: memref<8xf32>) {\n"
        "  coll.all_reduce sum %a, %a world 2 : memref<8xf32>, memref<8xf32>\n  func.return\n}",
    ).parse_module()
    CollExpandPass().apply(ctx, module)
    once = str(module)
    CollExpandPass().apply(ctx, module)
    assert str(module) == once
