"""The CPU backend's threads and waits: role threads parked between calls
and shared by every communicator of the process, a forked child starting its
own, waiting ranks asleep rather than spinning, and packets read and written
at every alignment the dtypes give (partial packets at either end)."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from purlin import _runtime
from purlin.coll import reference
from purlin.compile import compile_plan
from purlin.dtypes import numpy_dtype
from purlin.plan import BufKind
from purlin.runtime import Communicator
from purlin.testing.data import random_array

WORLD = 4


def _all_reduce(count: int, dtype: str = "f32") -> tuple[Communicator, list, list]:
    plan = compile_plan("all_reduce", world=WORLD, dtype=dtype, op="sum", count=count)
    rng = np.random.default_rng(count)
    ins = [rng.integers(-8, 8, count).astype(numpy_dtype(dtype)) for _ in range(WORLD)]
    return Communicator(plan, backend="cpu"), ins, [np.zeros(count, numpy_dtype(dtype)) for _ in range(WORLD)]


_COUNT_THREADS = """
import os, sys
import numpy as np
from purlin.compile import compile_plan
from purlin.runtime import Communicator

def threads():
    # The pool's threads, by the name they give themselves: other threads may come and go.
    names = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                names.append(f.read().strip())
        except FileNotFoundError:  # a thread that ended while it was listed
            pass
    return names.count("purlin-role")

counts = [1 << 18] + [1 << 16, 1 << 17, 3 << 16, 1 << 18] * 3
roles = []
for k, count in enumerate(counts):
    plan = compile_plan("all_reduce", world=4, dtype="f32", op="sum", count=count)
    roles.append(len(plan.roles))
    comm = Communicator(plan, backend="cpu")
    ins = [np.full(count, r, np.float32) for r in range(4)]
    outs = [np.zeros(count, np.float32) for _ in range(4)]
    if k == 0:
        before = threads()
    for _ in range(3):
        comm.run(ins, outs)
    assert all(np.array_equal(o, sum(ins)) for o in outs)
    if k == 0:
        first = threads()
print(before, first, threads(), roles[0], max(roles))
"""


def test_threads_are_kept_and_shared_across_calls_and_communicators():
    """In a fresh process: the first call starts its threads, which stay;
    13 communicators and 39 calls later there are no more."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _COUNT_THREADS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    before, first, last, roles, most = map(int, done.stdout.split())
    # At most every role of every rank at once, the caller's thread running one
    # of them; fewer where a role ends (and its thread is reused) before the
    # last is handed out, as on a machine of two cores.
    assert roles > 1, "the first plan needs threads besides the caller's"
    assert before == 0, "no pool thread before the first call"
    assert 1 <= first <= roles * WORLD - 1
    assert first <= last <= most * WORLD - 1, "parked threads stay and are reused"


def test_a_forked_child_runs_with_threads_of_its_own():
    comm, ins, outs = _all_reduce(1 << 18)
    comm.run(ins, outs)  # the parent's pool now holds parked threads, which a child lacks
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            child, child_ins, child_outs = _all_reduce(1 << 18)
            child.run(child_ins, child_outs)
            comm.run(ins, outs)
            ok = all(np.array_equal(o, sum(child_ins)) for o in child_outs)
        finally:
            os._exit(0 if ok else 1)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's call hung")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status) == 0


def test_ranks_waiting_for_a_late_peer_sleep():
    """Ranks 1..3 wait half a second for rank 0: they sleep, using little CPU
    (spinning they would use one core each), and finish once it comes."""
    count = 1 << 18
    plan = compile_plan("all_reduce", world=WORLD, dtype="f32", op="sum", count=count)
    comm = _runtime.CpuRankCommunicator(_runtime.decode(plan.encode()), 30.0, "late")
    ins = [np.full(count, r + 1, np.float32) for r in range(WORLD)]
    outs = [np.zeros(count, np.float32) for _ in range(WORLD)]
    errors = []

    def rank(r: int) -> None:
        try:
            comm.run(r, ins[r].ctypes.data, outs[r].ctypes.data)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    late = 0.5
    threads = [threading.Thread(target=rank, args=(r,)) for r in range(1, WORLD)]
    cpu = time.process_time()
    for t in threads:
        t.start()
    time.sleep(late)
    used = time.process_time() - cpu
    rank(0)
    for t in threads:
        t.join()
    assert not errors
    assert all(np.array_equal(o, sum(ins)) for o in outs)
    assert used < 0.05 * late, f"waiting ranks used {used:.3f} s of CPU in {late} s"


@pytest.mark.parametrize("dtype", ["fp8e4m3", "bf16", "f32", "i64"])
@pytest.mark.parametrize("collective,counts", [("all_gather_v", [3, 0, 5, 1]), ("reduce_scatter_v", [5, 1, 0, 7]),
                                                ("all_to_all_v", [[1, 2, 0, 3], [4, 0, 1, 1],
                                                                  [0, 3, 2, 5], [2, 1, 1, 0]])])
def test_packets_at_every_alignment(collective, counts, dtype):
    """Small V collectives go through packets: segments of odd sizes start and end inside a packet."""
    op = "sum" if collective == "reduce_scatter_v" else None
    plan = compile_plan(collective, world=WORLD, dtype=dtype, op=op, counts=counts)
    assert any(b.kind == BufKind.PACKETS for b in plan.buffers)
    comm = Communicator(plan, backend="cpu")
    rng = np.random.default_rng(7)
    for call in range(3):
        ins = [random_array(rng, dtype, plan.input_extent(r), op) for r in range(WORLD)]
        outs = [np.zeros(plan.output_extent(r), numpy_dtype(dtype)) for r in range(WORLD)]
        comm.run(ins, outs)
        expected = getattr(reference, collective)(ins, counts, *([op] if op else []))
        for r in range(WORLD):
            want = np.asarray(expected[r]).astype(numpy_dtype(dtype))
            assert np.array_equal(outs[r].view(np.uint8), want.view(np.uint8)), f"{collective} {dtype} call {call} rank {r}"
