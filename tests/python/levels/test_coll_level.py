"""Translation validation at the coll level: coll-expand's layouts, executed,
agree with the independent numpy reference of each named collective."""

import numpy as np
import pytest
from collective_cases import OPS, REDUCING, check_level, make_case

from purlin.coll.builder import COLLECTIVES
from purlin.compile.pipeline import parse_module
from purlin.dtypes import DTYPE_NAMES, numpy_dtype
from purlin.levels.base import SimError
from purlin.levels.coll import run
from purlin.levels.table import LEVELS, get_level
from purlin.testing.cases import Case

WORLDS = (2, 3, 4, 8, 16)
# Per-rank unit: empty, one element, odd, and a few KiB.
SIZES = (0, 1, 37, 1000)


def check(case, seed=0):
    check_level(run, case, seed=seed)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("count", SIZES)
@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("name", list(COLLECTIVES))
def test_matches_reference(name, world, count, dtype):
    op = "sum" if COLLECTIVES[name].reduces else None
    check(make_case(name, world, dtype, op, count, seed=world * 1000 + count), seed=count)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("op", OPS[1:])
@pytest.mark.parametrize("world", (2, 3, 16))
@pytest.mark.parametrize("name", REDUCING)
def test_reductions_match_reference(name, world, op, dtype):
    if op == "prod" and dtype.startswith("fp8"):
        pytest.skip("prod is not offered for fp8")
    check(make_case(name, world, dtype, op, 37, seed=world), seed=world)


@pytest.mark.parametrize("world", (1, 2, 5))
@pytest.mark.parametrize("name", [n for n, c in COLLECTIVES.items() if c.variable])
def test_dynamic_counts_match_reference(name, world):
    op = "sum" if COLLECTIVES[name].reduces else None
    check(make_case(name, world, "bf16", op, 9, seed=world, dynamic=True), seed=world)


@pytest.mark.parametrize("name", list(COLLECTIVES))
def test_world_1(name):
    op = "max" if COLLECTIVES[name].reduces else None
    check(make_case(name, 1, "f16", op, 5))


def test_all_ranks_zero_counts():
    for name in ("all_gather_v", "reduce_scatter_v"):
        op = "sum" if COLLECTIVES[name].reduces else None
        check(Case(name, 4, "bf16", op, counts=[0, 0, 0, 0]))
    check(Case("all_to_all_v", 3, "bf16", counts=[[0] * 3] * 3))


def test_registry_has_every_level_and_reports_unknown_ones():
    assert LEVELS["coll"] is run
    assert set(LEVELS) == {"coll", "snac", "atom", "plan"}
    with pytest.raises(SimError, match="unknown level 'gpu', expected one of coll, snac, atom, plan"):
        get_level("gpu")


# -- modules written by hand ----------------------------------------------------


def bufs(world, n, dtype="f32", fill=None):
    dt = numpy_dtype(dtype)
    if fill is None:
        return [np.arange(n, dtype=np.float32).astype(dt) + 10 * r for r in range(world)]
    return [np.full(n, fill, np.float32).astype(dt) for _ in range(world)]


def test_in_place_all_reduce():
    module = parse_module("""
    func.func @f(%buf: memref<6xf32>) {
      coll.all_reduce sum %buf, %buf world 3 : memref<6xf32>, memref<6xf32>
      func.return
    }""")
    buf = bufs(3, 6)
    run(module, [buf], world=3)
    want = np.arange(6) * 3 + 30
    for b in buf:
        np.testing.assert_array_equal(b, want)


def test_generic_broadcast_and_sequence():
    # A named-layout broadcast from rank 2, then an all_gather of the result.
    module = parse_module("""
    func.func @f(%src: memref<2xf32>, %mid: memref<2xf32>, %out: memref<6xf32>) {
      coll.collective %src, %mid in #coll.layout<named, world 3, [(2, 0, 2, 0)]>
          out #coll.layout<named, world 3, [(0, 0, 2, 0), (1, 0, 2, 0), (2, 0, 2, 0)]>
          consume #coll.consume<copy> : memref<2xf32>, memref<2xf32>
      coll.all_gather %mid, %out world 3 : memref<2xf32>, memref<6xf32>
      func.return
    }""")
    args = [bufs(3, 2), bufs(3, 2, fill=-1), bufs(3, 6, fill=-1)]
    run(module, args, world=3)
    for r in range(3):
        np.testing.assert_array_equal(args[1][r], [20, 21])
        np.testing.assert_array_equal(args[2][r], [20, 21] * 3)


DYNAMIC = """
func.func @f(%in: memref<4xf32>, %out: memref<8xf32>, %c: memref<2x2xi64>) {
  coll.all_to_all_v %in, %out world 2 counts %c : memref<4xf32>, memref<8xf32>, memref<2x2xi64>
  func.return
}"""


def test_dynamic_counts_are_bound_from_the_argument():
    counts = np.array([[1, 3], [2, 0]], np.int64)
    args = [bufs(2, 4), bufs(2, 8, fill=-1), [counts.copy(), counts.copy()]]
    run(parse_module(DYNAMIC), args, world=2)
    np.testing.assert_array_equal(args[1][0], [0, 10, 11, -1, -1, -1, -1, -1])
    np.testing.assert_array_equal(args[1][1], [1, 2, 3, -1, -1, -1, -1, -1])


def test_dynamic_counts_must_agree_and_fit():
    module = parse_module(DYNAMIC)
    c = np.array([[1, 3], [2, 0]], np.int64)
    with pytest.raises(SimError, match="counts on rank 1 differ"):
        run(module, [bufs(2, 4), bufs(2, 8), [c, c + 1]], world=2)
    big = np.array([[4, 3], [2, 0]], np.int64)
    with pytest.raises(SimError, match="input buffer of rank 0 has 4 elements"):
        run(module, [bufs(2, 4), bufs(2, 8), [big, big]], world=2)
    neg = np.array([[-1, 3], [2, 0]], np.int64)
    with pytest.raises(SimError, match="non-negative"):
        run(module, [bufs(2, 4), bufs(2, 8), [neg, neg]], world=2)


def test_bad_arguments_are_clear_errors():
    module = parse_module(DYNAMIC)
    c = np.zeros((2, 2), np.int64)
    with pytest.raises(SimError, match="takes 3 arguments, 2 given"):
        run(module, [bufs(2, 4), bufs(2, 8)], world=2)
    with pytest.raises(SimError, match="2 buffers for world 3"):
        run(module, [bufs(2, 4), bufs(2, 8), [c, c]], world=3)
    with pytest.raises(SimError, match="dtype float16, expected float32"):
        run(module, [bufs(2, 4, "f16"), bufs(2, 8), [c, c]], world=2)
    with pytest.raises(SimError, match=r"shape \(5,\) does not fit"):
        run(module, [bufs(2, 5), bufs(2, 8), [c, c]], world=2)


def test_unsupported_op_and_missing_function():
    module = parse_module("""
    func.func @f(%a: memref<2xf32>) {
      %b = memref.alloc() : memref<2xf32>
      coll.all_reduce sum %a, %b world 1 : memref<2xf32>, memref<2xf32>
      func.return
    }""")
    with pytest.raises(SimError, match="cannot execute 'memref.alloc'"):
        run(module, [bufs(1, 2)], world=1)
    with pytest.raises(SimError, match="no function @g"):
        run(module, [bufs(1, 2)], world=1, options={"entry": "g"})
