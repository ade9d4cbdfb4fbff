"""The numpy reference on small hand-computed cases, and the dtype helpers it relies on."""

import ml_dtypes
import numpy as np
import pytest

from purlin.coll import reference as ref
from purlin.coll.attributes import DTYPE_BYTES
from purlin.coll.layouts import Layout, LayoutKind, Slice
from purlin.dtypes import DTYPE_NAMES, dtype_of_element_type, element_type, numpy_dtype
from purlin.testing.data import compare, random_inputs, tolerance


def f32(*vals):
    return np.array(vals, dtype=np.float32)


def ranks(*rows, dtype=np.float32):
    return [np.array(r, dtype=dtype) for r in rows]


def assert_ranks(got, want):
    assert len(got) == len(want)
    for r, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, np.asarray(w, dtype=g.dtype), err_msg=f"rank {r}")


# -- the named collectives ----------------------------------------------------


@pytest.mark.parametrize(
    "op, want",
    [("sum", [9, -1, 6]), ("max", [5, 2, 4]), ("min", [1, -4, 0]), ("prod", [15, -16, 0])],
)
def test_all_reduce(op, want):
    inputs = ranks([1, 2, 0], [5, -4, 4], [3, 1, 2])
    prod_inputs = ranks([1, 2, 0], [5, -4, 4], [3, 2, 2])
    got = ref.all_reduce(prod_inputs if op == "prod" else inputs, op)
    assert_ranks(got, [want] * 3)


def test_all_reduce_accumulates_in_f32_and_rounds_once():
    # In bf16, 256 + 1 rounds back to 256 at every step; in f32 the three 1s survive.
    inputs = ranks([256], [1], [1], [1], dtype=ml_dtypes.bfloat16)
    (got, *_) = ref.all_reduce(inputs, "sum")
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    assert float(got[0]) == 260.0


def test_all_reduce_world_1_is_identity():
    x = f32(1.5, -2)
    (got,) = ref.all_reduce([x], "sum")
    np.testing.assert_array_equal(got, x)
    assert got is not x


def test_all_gather():
    got = ref.all_gather(ranks([1, 2], [3, 4], [5, 6]))
    assert_ranks(got, [[1, 2, 3, 4, 5, 6]] * 3)


def test_all_gather_empty_and_world_1():
    assert_ranks(ref.all_gather(ranks([], [])), [[], []])
    assert_ranks(ref.all_gather(ranks([7])), [[7]])


def test_reduce_scatter():
    got = ref.reduce_scatter(ranks([1, 2, 3, 4], [10, 20, 30, 40]), "sum")
    assert_ranks(got, [[11, 22], [33, 44]])
    got = ref.reduce_scatter(ranks([1, 9, 3, 4], [10, 2, 0, 40]), "max")
    assert_ranks(got, [[10, 9], [3, 40]])


def test_reduce_scatter_rejects_indivisible_input():
    with pytest.raises(ValueError, match="not divisible"):
        ref.reduce_scatter(ranks([1, 2, 3], [1, 2, 3]), "sum")


def test_all_to_all():
    # rank s's block d is "sd"; rank d's block s must be "sd".
    inputs = ranks([0, 1, 2], [10, 11, 12], [20, 21, 22])
    got = ref.all_to_all(inputs)
    assert_ranks(got, [[0, 10, 20], [1, 11, 21], [2, 12, 22]])


def test_all_to_all_blocks_of_two():
    inputs = ranks([0, 0.5, 1, 1.5], [10, 10.5, 11, 11.5])
    assert_ranks(ref.all_to_all(inputs), [[0, 0.5, 10, 10.5], [1, 1.5, 11, 11.5]])


def test_all_gather_v_with_zero_counts_ignores_buffer_tail():
    inputs = ranks([1, 2, 99], [99, 99, 99], [3, 99, 99])
    got = ref.all_gather_v(inputs, [2, 0, 1])
    assert_ranks(got, [[1, 2, 3]] * 3)


def test_all_gather_v_all_zero():
    assert_ranks(ref.all_gather_v(ranks([5], [6]), [0, 0]), [[], []])


def test_reduce_scatter_v():
    inputs = ranks([1, 2, 3, 4], [10, 20, 30, 40], [100, 200, 300, 400])
    got = ref.reduce_scatter_v(inputs, [1, 0, 3], "sum")
    assert_ranks(got, [[111], [], [222, 333, 444]])


def test_reduce_scatter_v_world_1():
    assert_ranks(ref.reduce_scatter_v(ranks([4, 5, 6]), [2], "min"), [[4, 5]])


def test_all_to_all_v():
    # counts[s][d]: rank 0 sends 1 to rank 0 and 2 to rank 1; rank 1 sends 0 and 1.
    counts = [[1, 2], [0, 1]]
    inputs = ranks([0, 1, 2], [7])
    got = ref.all_to_all_v(inputs, counts)
    assert_ranks(got, [[0], [1, 2, 7]])


def test_all_to_all_v_three_ranks_source_order():
    counts = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    inputs = ranks([1, 2, 2], [10, 12], [20, 20, 21])
    got = ref.all_to_all_v(inputs, counts)
    assert_ranks(got, [[10, 20, 20], [1, 21], [2, 2, 12]])


def test_all_to_all_v_all_zero():
    assert_ranks(ref.all_to_all_v(ranks([1], [2]), [[0, 0], [0, 0]]), [[], []])


def test_all_reduce_v_reduces_the_counts_sum_whatever_the_split():
    # The counts say which rank's slice is which; every rank gets all of them reduced.
    inputs = ranks([1, 2, 3, 99], [10, 20, 30, 99], [100, 200, 300, 99])
    for counts in ([1, 0, 2], [3, 0, 0], [0, 2, 1]):
        assert_ranks(ref.all_reduce_v(inputs, counts, "sum"), [[111, 222, 333]] * 3)
    assert_ranks(ref.all_reduce_v(inputs, [0, 0, 1], "max"), [[100]] * 3)


def test_all_reduce_v_all_zero_and_checked():
    assert_ranks(ref.all_reduce_v(ranks([5], [6]), [0, 0], "sum"), [[], []])
    with pytest.raises(ValueError, match="2 non-negative counts"):
        ref.all_reduce_v(ranks([1], [2]), [1, -1], "sum")
    with pytest.raises(ValueError, match="smaller than"):
        ref.all_reduce_v(ranks([1], [2]), [1, 1], "sum")


def test_v_counts_are_checked():
    with pytest.raises(ValueError, match="2 non-negative counts"):
        ref.all_gather_v(ranks([1], [2]), [1])
    with pytest.raises(ValueError, match="smaller than"):
        ref.all_gather_v(ranks([1], [2]), [2, 1])


# -- layouts ------------------------------------------------------------------


def test_apply_layouts_scattered_reduce_is_all_reduce():
    layout = Layout.fixed(LayoutKind.SCATTERED, 2, 2)
    inputs = ranks([1, 2, 3, 4], [10, 20, 30, 40])
    outputs = [np.full(5, -1, np.float32) for _ in range(2)]
    ref.apply_layouts(layout, layout, "sum", inputs, outputs)
    assert_ranks(outputs, [[11, 22, 33, 44, -1]] * 2)


def test_apply_layouts_in_place_reads_inputs_first():
    inp = Layout.fixed(LayoutKind.ADDRESSED, 2, 1)
    out = Layout.fixed(LayoutKind.TRANSPOSED, 2, 1)
    bufs = ranks([0, 1], [10, 11])
    ref.apply_layouts(inp, out, None, bufs, bufs)
    assert_ranks(bufs, [[0, 10], [1, 11]])


def test_apply_layouts_named_broadcast():
    # Rank 1's element 2 goes to offset 0 of every rank: a broadcast.
    inp = Layout.named(3, [Slice(1, 2, 1, (7,))])
    out = Layout.named(3, [Slice(r, 0, 1, (7,)) for r in range(3)])
    inputs = ranks([0, 0, 0], [0, 0, 5], [0, 0, 0])
    outputs = [np.zeros(1, np.float32) for _ in range(3)]
    ref.apply_layouts(inp, out, None, inputs, outputs)
    assert_ranks(outputs, [[5]] * 3)


def test_apply_layouts_reduces_in_rank_order_in_f32():
    inp = Layout.named(4, [Slice(r, 0, 1, (0,)) for r in range(4)])
    inputs = ranks([256], [1], [1], [1], dtype=ml_dtypes.bfloat16)
    outputs = [np.zeros(1, ml_dtypes.bfloat16)] + [np.zeros(0, ml_dtypes.bfloat16)] * 3
    out = Layout.named(4, [Slice(0, 0, 1, (0,))])
    ref.apply_layouts(inp, out, "sum", inputs, outputs)
    assert float(outputs[0][0]) == 260.0


def test_apply_layouts_checks_buffer_sizes():
    layout = Layout.fixed(LayoutKind.PACKED, 2, 3)
    with pytest.raises(ValueError, match="rank 1 has 2 elements"):
        ref.apply_layouts(layout, layout, None, ranks([1, 2, 3], [1, 2]), ranks([0, 0, 0], [0, 0, 0]))


# -- dtypes -------------------------------------------------------------------


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtype_round_trip(name):
    assert dtype_of_element_type(element_type(name)) == name
    assert numpy_dtype(name).itemsize == DTYPE_BYTES[name]


def test_unknown_dtype_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown dtype 'c64'"):
        numpy_dtype("c64")


@pytest.mark.parametrize("name", DTYPE_NAMES)
@pytest.mark.parametrize("op", ["sum", "max", "min", "prod", None])
def test_random_inputs_are_seeded_finite_and_sum_exactly(name, op):
    if op == "prod" and name.startswith("fp8"):
        pytest.skip("prod is not offered for fp8")
    a = random_inputs(name, [100, 0, 37], op, seed=5)
    b = random_inputs(name, [100, 0, 37], op, seed=5)
    assert [x.size for x in a] == [100, 0, 37]
    for x, y in zip(a, b):
        assert x.dtype == numpy_dtype(name)
        np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))
        assert np.isfinite(x.astype(np.float64)).all()
    if op in ("sum", "prod"):
        # Accumulation over 16 ranks is exact (integers: modular), so any order agrees.
        parts = random_inputs(name, [64] * 16, op, seed=1)
        fwd = ref.reduce_parts(parts, op)
        bwd = ref.reduce_parts(parts[::-1], op)
        np.testing.assert_array_equal(fwd.view(np.uint8), bwd.view(np.uint8))


def test_compare_reports_first_rank_and_offset():
    want = ranks([1, 2, 3], [4, 5, 6])
    got = ranks([1, 2, 3], [4, 5, 7])
    m = compare(got, want, "f32", what="%out")
    assert (m.rank, m.offset) == (1, 2)
    assert "rank 1 offset 2 of %out: got 7.0" in str(m)
    assert compare(want, want, "f32") is None


def test_compare_copies_bit_exact_and_reductions_with_tolerance():
    bf = ml_dtypes.bfloat16
    one = np.array([1.0], bf)
    next_up = np.array([1.0078125], bf)  # one bf16 ulp above 1
    zero, neg_zero = np.array([0.0], bf), np.array([-0.0], bf)
    assert compare([neg_zero], [zero], "bf16") is not None
    assert compare([neg_zero], [zero], "bf16", "max", 4) is None
    assert compare([next_up], [one], "bf16") is not None
    assert compare([next_up], [one], "bf16", "sum", 4) is None
    assert compare([np.array([1.03125], bf)], [one], "bf16", "sum", 4) is not None
    nan = np.array([np.nan], bf)
    assert compare([nan], [nan], "bf16", "sum", 4) is None
    assert compare([nan], [one], "bf16", "sum", 4).offset == 0


def test_compare_size_difference_is_a_mismatch():
    m = compare(ranks([1, 2]), ranks([1, 2, 3]), "f32")
    assert (m.rank, m.offset, m.actual) == (0, 2, "<missing>")


def test_tolerance_grows_with_contributions_and_is_zero_for_copies():
    assert tolerance("bf16", None, 8) == (0.0, 0.0)
    assert tolerance("bf16", "max", 8) == (0.0, 0.0)
    assert tolerance("f32", "sum", 1) == (0.0, 0.0)
    r4, a4 = tolerance("f32", "sum", 4)
    r16, a16 = tolerance("f32", "sum", 16)
    assert r4 == r16 == 2.0**-23 and a16 > a4
    assert tolerance("fp8e4m3", "sum", 2)[0] == 0.125
