"""The CPU backend's copies around the cache (csrc/host/cpu/stream.h): a call
whose buffers outgrow the last-level cache streams its large copies and
reduction results. Forced on small calls here (cache_bypass_bytes=0), so
that odd sizes put slices at every alignment: the results are the
reference's, bit for bit, call after call."""

from __future__ import annotations

import numpy as np
import pytest

from purlin import _runtime
from purlin.coll import reference
from purlin.compile import compile_plan
from purlin.dtypes import numpy_dtype
from purlin.testing.data import random_array


def _communicator(plan, bypass: int):
    return _runtime.CpuCommunicator(_runtime.decode(plan.encode()), 30.0, "bypass", [], [], bypass)


FIXED = [("all_reduce", "sum"), ("all_gather", None), ("reduce_scatter", "max"), ("all_to_all", None)]


@pytest.mark.parametrize("dtype", ["f32", "bf16", "i8", "f64"])
@pytest.mark.parametrize("collective,op", FIXED)
@pytest.mark.parametrize("world,count", [(3, 30011), (4, 65536 + 7), (5, 4099 * 5)])
def test_streamed_calls_match_the_reference(collective, op, dtype, world, count):
    if collective in ("reduce_scatter", "all_to_all"):
        count -= count % world  # these split the buffer evenly
    plan = compile_plan(collective, world=world, dtype=dtype, op=op, count=count)
    comm = _communicator(plan, 0)
    assert comm.bypasses_cache
    rng = np.random.default_rng(count)
    for call in range(2):
        ins = [random_array(rng, dtype, plan.input_extent(r), op) for r in range(world)]
        outs = [np.zeros(plan.output_extent(r), numpy_dtype(dtype)) for r in range(world)]
        comm.run(ins, outs)
        expected = getattr(reference, collective)(ins, *([op] if op else []))
        for r in range(world):
            want = np.asarray(expected[r]).astype(numpy_dtype(dtype))
            assert np.array_equal(outs[r].view(np.uint8), want.view(np.uint8)), f"call {call} rank {r}"


@pytest.mark.parametrize("collective,counts", [
    ("all_gather_v", [40001, 0, 9000, 123]),
    ("reduce_scatter_v", [20000, 3, 0, 50001]),
    ("all_to_all_v", [[9001, 2, 0, 3000], [4, 0, 17000, 1], [0, 3, 2, 8191], [12000, 1, 1, 0]]),
])
def test_streamed_v_calls_match_the_reference(collective, counts):
    op = "sum" if collective == "reduce_scatter_v" else None
    plan = compile_plan(collective, world=4, dtype="f32", op=op, counts=counts)
    comm = _communicator(plan, 0)
    rng = np.random.default_rng(5)
    ins = [random_array(rng, "f32", plan.input_extent(r), op) for r in range(4)]
    outs = [np.zeros(plan.output_extent(r), np.float32) for r in range(4)]
    comm.run(ins, outs)
    expected = getattr(reference, collective)(ins, counts, *([op] if op else []))
    for r in range(4):
        assert np.array_equal(outs[r], np.asarray(expected[r], np.float32)), f"rank {r}"


def test_only_calls_that_outgrow_the_cache_bypass_it():
    cache = _runtime.last_level_cache_bytes()
    assert cache >= 1 << 20
    small = compile_plan("all_gather", world=4, dtype="f32", op=None, count=1024)
    assert not _communicator(small, -1).bypasses_cache
    # Every rank's output alone is then half the cache.
    large = compile_plan("all_gather", world=4, dtype="f32", op=None, count=cache // 32)
    assert _communicator(large, -1).bypasses_cache
    assert not _communicator(large, 1 << 62).bypasses_cache
