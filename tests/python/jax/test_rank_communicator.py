"""The CPU backend's ranks called one by one (purlin._runtime.CpuRankCommunicator,
csrc/host/cpu/ranks.h), as XLA's device threads call them: each rank from its
own thread, call after call, meeting its peers in shared host memory; a rank
that never comes times its peers out, and a symmetric plan is refused."""

import re
import threading

import numpy as np
import pytest

from purlin.compile import compile_plan
from purlin.dtypes import numpy_dtype
from purlin.runtime.backend import CollectiveTimeout, _runtime


def communicator(plan, timeout_s=10.0):
    return _runtime.CpuRankCommunicator(_runtime.decode(plan.encode()), timeout_s, "ranks")


def each_rank(comm, inputs, outputs, ranks=None):
    """Every rank's call on its own thread; the exceptions they raised, by rank."""
    errors = {}

    def one(r):
        try:
            comm.run(r, inputs[r].ctypes.data, outputs[r].ctypes.data)
        except Exception as e:  # noqa: BLE001 - reported by rank
            errors[r] = e

    threads = [threading.Thread(target=one, args=(r,)) for r in (ranks if ranks is not None else range(comm.world))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


@pytest.mark.parametrize("collective, op, lowering", [
    ("all_reduce", "sum", ""),
    ("all_reduce", "sum", "regime=throughput strategy=composed chunk-bytes=256 slots=2"),
    ("all_gather", None, ""),
    ("reduce_scatter", "max", "regime=throughput chunk-bytes=128"),
    ("all_to_all", None, "regime=latency"),
])
def test_ranks_on_their_own_threads(collective, op, lowering):
    world, count = 4, 96
    plan = compile_plan(collective, world=world, dtype="i32", op=op, count=count, lowering=lowering)
    comm = communicator(plan)
    rng = np.random.default_rng(0)
    for call in range(4):
        inputs = [rng.integers(-50, 50, plan.input_extent(r)).astype(np.int32) for r in range(world)]
        outputs = [np.zeros(plan.output_extent(r), np.int32) for r in range(world)]
        assert each_rank(comm, inputs, outputs) == {}
        stacked = np.stack(inputs)
        if collective == "all_reduce":
            want = [stacked.sum(0)] * world
        elif collective == "all_gather":
            want = [stacked.reshape(-1)] * world
        elif collective == "reduce_scatter":
            want = list(stacked.max(0).reshape(world, count))
        else:
            want = [stacked.reshape(world, world, count)[:, r].reshape(-1) for r in range(world)]
        for r in range(world):
            np.testing.assert_array_equal(outputs[r], want[r], err_msg=f"call {call} rank {r}")
    assert [comm.epoch(r) for r in range(world)] == [4 * plan.advance] * world


def test_a_rank_that_never_comes_times_its_peers_out():
    plan = compile_plan("all_reduce", world=3, dtype="f32", op="sum", count=8)
    comm = communicator(plan, timeout_s=0.3)
    inputs = [np.ones(8, np.float32) for _ in range(3)]
    outputs = [np.zeros(8, np.float32) for _ in range(3)]
    errors = each_rank(comm, inputs, outputs, ranks=[0, 1])
    assert set(errors) == {0, 1}
    assert all(isinstance(e, CollectiveTimeout) for e in errors.values())
    # The first to time out flags it, which wakes the other: it times out itself or stops at once.
    said = sorted(str(e) for e in errors.values())
    assert any("timed out after 0.3 s" in m for m in said), said
    assert all("timed out after 0.3 s" in m or re.search(r"stopped: rank [01]'s call timed out", m) for m in said), said
    # Rank 2 comes late: its peers have flagged their failure, so it stops at once.
    with pytest.raises((CollectiveTimeout, RuntimeError), match="rank [01]'s call timed out"):
        comm.run(2, inputs[2].ctypes.data, outputs[2].ctypes.data)


def test_refusals():
    symmetric = compile_plan("all_gather", world=2, dtype="bf16", op=None, count=4096, symmetric=True)
    assert symmetric.symmetric
    with pytest.raises(ValueError, match="symmetric"):
        communicator(symmetric)
    comm = communicator(compile_plan("all_gather", world=2, dtype="bf16", op=None, count=4))
    x = np.zeros(8, numpy_dtype("bf16"))
    with pytest.raises(IndexError, match="rank 2 is outside world 2"):
        comm.run(2, x.ctypes.data, x.ctypes.data)
    assert (comm.world, comm.input_bytes(1), comm.output_bytes(1)) == (2, 8, 16)
