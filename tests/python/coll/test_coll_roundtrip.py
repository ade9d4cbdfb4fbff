"""Layouts survive print -> parse, and the layout model means what DESIGN.md says.

Random layouts of every kind (worlds 1..16, counts with zeros, dynamic counts,
named layouts with tuple names and empty slices) go through LayoutAttr and its
text form; the model's extents, slices and name coverage are checked against
direct definitions of each kind.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from purlin.coll.attributes import LayoutAttr
from purlin.coll.dialect import Coll
from purlin.coll.layouts import Layout, LayoutError, LayoutKind, Slice, check_collective

FIXED_KINDS = [LayoutKind.PACKED, LayoutKind.SCATTERED, LayoutKind.ADDRESSED, LayoutKind.TRANSPOSED]
MATRIX_KINDS = (LayoutKind.ADDRESSED, LayoutKind.TRANSPOSED)

worlds = st.integers(1, 16)
counts = st.integers(0, 9)  # zero included on purpose: empty slices are legal
names = st.one_of(
    st.tuples(st.integers(0, 20)), st.lists(st.integers(0, 5), min_size=2, max_size=3).map(tuple)
)


@st.composite
def fixed_layouts(draw):
    return Layout.fixed(draw(st.sampled_from(FIXED_KINDS)), draw(worlds), draw(counts))


@st.composite
def vector_layouts(draw):
    kind, w = draw(st.sampled_from(FIXED_KINDS)), draw(worlds)
    if draw(st.booleans()):
        return Layout.vector(kind, w, None)
    if kind in MATRIX_KINDS:
        return Layout.vector(kind, w, draw(_matrix(w)))
    return Layout.vector(kind, w, draw(st.lists(counts, min_size=w, max_size=w)))


def _matrix(w: int):
    return st.lists(st.lists(counts, min_size=w, max_size=w), min_size=w, max_size=w)


@st.composite
def named_layouts(draw):
    """Valid by construction: one size per name, slices laid out without overlap."""
    w = draw(worlds)
    sizes = draw(st.dictionaries(names, counts, min_size=1, max_size=6))
    pool = sorted(sizes)
    slices = []
    for rank in range(w):
        offset = 0
        for name in draw(st.lists(st.sampled_from(pool), max_size=4)):
            offset += draw(st.integers(0, 3))
            slices.append(Slice(rank, offset, sizes[name], name))
            offset += sizes[name]
    return Layout.named(w, draw(st.permutations(slices)))


layouts = st.one_of(fixed_layouts(), vector_layouts(), named_layouts())


def _ctx() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Coll)
    return ctx


def _reparse(attr: LayoutAttr) -> LayoutAttr:
    parsed = Parser(_ctx(), str(attr)).parse_attribute()
    assert isinstance(parsed, LayoutAttr)
    return parsed


@settings(max_examples=300, deadline=None)
@given(layouts)
def test_layout_attr_roundtrip(layout: Layout):
    layout.check()
    attr = LayoutAttr.from_layout(layout)
    assert attr.to_layout() == layout
    parsed = _reparse(attr)
    assert parsed == attr
    assert parsed.to_layout() == layout
    assert str(parsed) == str(attr)


def _expected_extent(layout: Layout, rank: int) -> int:
    c, w = layout.counts, layout.world
    if not layout.variable:
        return c if layout.kind == LayoutKind.PACKED else w * c
    return {
        LayoutKind.PACKED: lambda: c[rank],
        LayoutKind.SCATTERED: lambda: sum(c),
        LayoutKind.ADDRESSED: lambda: sum(c[rank]),
        LayoutKind.TRANSPOSED: lambda: sum(row[rank] for row in c),
    }[layout.kind]()


def _expected_names(layout: Layout, rank: int) -> list[tuple[int, ...]]:
    w = layout.world
    return {
        LayoutKind.PACKED: [(rank,)],
        LayoutKind.SCATTERED: [(i,) for i in range(w)],
        LayoutKind.ADDRESSED: [(rank, i) for i in range(w)],
        LayoutKind.TRANSPOSED: [(i, rank) for i in range(w)],
    }[layout.kind]


@settings(max_examples=200, deadline=None)
@given(st.one_of(fixed_layouts(), vector_layouts()).filter(lambda lay: not lay.is_dynamic))
def test_fixed_and_v_layouts_match_their_definition(layout: Layout):
    for rank in range(layout.world):
        slices = layout.slices(rank)
        assert [s.name for s in slices] == _expected_names(layout, rank)
        # Contiguous from offset 0, in name order.
        starts = [sum(s.size for s in slices[:i]) for i in range(len(slices))]
        assert [s.offset for s in slices] == starts
        assert all(s.rank == rank for s in slices)
        assert layout.extent(rank) == _expected_extent(layout, rank)
    assert layout.max_extent() == max(_expected_extent(layout, r) for r in range(layout.world))


@settings(max_examples=200, deadline=None)
@given(named_layouts())
def test_named_layout_model(layout: Layout):
    for rank in range(layout.world):
        mine = [s for s in layout.slices_ if s.rank == rank]
        key = lambda s: (s.offset, s.name)  # noqa: E731
        assert sorted(layout.slices(rank), key=key) == sorted(mine, key=key)
        assert layout.extent(rank) == max((s.end for s in mine), default=0)
    for s in layout.slices_:
        assert s in layout.slices_named(s.name)
        assert layout.name_sizes[s.name] == s.size


@settings(max_examples=200, deadline=None)
@given(layouts.filter(lambda lay: not lay.is_dynamic))
def test_name_coverage(layout: Layout):
    # A layout always covers itself under reduce; under copy only when no
    # name has two sources.
    check_collective(layout, layout, reduce=True)
    holders = [len(layout.slices_named(n)) for n in layout.name_sizes]
    if max(holders, default=1) > 1:
        with pytest.raises(LayoutError, match="ambiguous"):
            check_collective(layout, layout, reduce=False)
    else:
        check_collective(layout, layout, reduce=False)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(FIXED_KINDS), worlds, st.data())
def test_dynamic_layout_binds_to_the_static_one(kind, w, data):
    if kind in MATRIX_KINDS:
        c = data.draw(_matrix(w))
    else:
        c = data.draw(st.lists(counts, min_size=w, max_size=w))
    assert Layout.vector(kind, w, None).bind(c) == Layout.vector(kind, w, c)


@settings(max_examples=100, deadline=None)
@given(worlds, st.lists(counts, min_size=1, max_size=17))
def test_wrong_count_length_is_rejected(w, c):
    layout = Layout.vector(LayoutKind.SCATTERED, w, c)
    if len(c) == w:
        layout.check()
    else:
        with pytest.raises(LayoutError, match=f"expected {w} counts"):
            layout.check()


_int = st.integers(-3, 12)
_name_text = st.one_of(
    _int.map(str), st.lists(_int, min_size=1, max_size=3).map(lambda n: f"({', '.join(map(str, n))})")
)
_slice_text = st.tuples(_int, _int, _int, _name_text)
_KINDS_TEXT = [k.value for k in FIXED_KINDS] + [f"{k.value}_v" for k in FIXED_KINDS]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_KINDS_TEXT + ["named", "named_v", "bogus"]),
    st.integers(0, 5),
    st.data(),
)
def test_arbitrary_layout_text_parses_or_fails_cleanly(kind, w, data):
    """Any text in the layout grammar parses to a valid layout or is a ParseError."""
    if kind == "named":
        slices = data.draw(st.lists(_slice_text, max_size=5))
        body = "[" + ", ".join(f"({r}, {o}, {s}, {n})" for r, o, s, n in slices) + "]"
    elif kind.endswith("_v") and data.draw(st.booleans()):
        body = "?"
    elif kind in ("addressed_v", "transposed_v"):
        rows = data.draw(st.lists(st.lists(_int, max_size=5), max_size=5))
        body = "[" + ", ".join("[" + ", ".join(map(str, r)) + "]" for r in rows) + "]"
    elif kind.endswith("_v"):
        body = "[" + ", ".join(map(str, data.draw(st.lists(_int, max_size=6)))) + "]"
    else:
        body = str(data.draw(_int))
    text = f"#coll.layout<{kind}, world {w}, {body}>"
    try:
        attr = Parser(_ctx(), text).parse_attribute()
    except ParseError:
        return
    except VerifyException as e:
        raise AssertionError(f"{text}: a verifier error, not a located parse error: {e}") from e
    assert isinstance(attr, LayoutAttr)
    attr.to_layout().check()
    assert _reparse(attr) == attr


def test_overlap_behind_an_empty_slice_is_found():
    layout = Layout.named(1, [Slice(0, 0, 10, (0,)), Slice(0, 1, 0, (1,)), Slice(0, 5, 1, (2,))])
    with pytest.raises(LayoutError, match=r"slices 0 \[0, 10\) and 2 \[5, 6\) overlap on rank 0"):
        layout.check()
