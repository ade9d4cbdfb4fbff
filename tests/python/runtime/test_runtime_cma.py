"""The CPU backend's symmetric plans over ordinary buffers, one rank per
process: with buffers anywhere, a peer's input or output is read or written
by cross-memory attach (process_vm_readv / process_vm_writev, one copy by
the kernel) instead of living in the shared heap. Every collective at odd
sizes, worlds 2 and 3, against the reference; the refusals."""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os

import numpy as np
import pytest

pytest.importorskip("torch")

from collective_cases import make_case  # noqa: E402
from process_group import fork_gloo  # noqa: E402

from purlin import _runtime  # noqa: E402
from purlin.coll.builder import COLLECTIVES  # noqa: E402
from purlin.compile import compile_plan  # noqa: E402
from purlin.testing.data import compare  # noqa: E402


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _reads_parent(pid: int, addr: int, out) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    got = ctypes.create_string_buffer(8)
    mine, theirs = _Iovec(ctypes.addressof(got), 8), _Iovec(addr, 8)
    out.put(libc.process_vm_readv(pid, ctypes.byref(mine), 1, ctypes.byref(theirs), 1, 0) == 8
            and got.raw == b"purlin!!")


def _attach_allowed() -> bool:
    """Whether this system lets a process read its parent's memory, as ranks under one launcher must."""
    buf = ctypes.create_string_buffer(b"purlin!!", 8)
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    p = ctx.Process(target=_reads_parent, args=(os.getpid(), ctypes.addressof(buf), out))
    p.start()
    ok = out.get(timeout=30)
    p.join()
    return ok


needs_attach = pytest.mark.skipif(not _attach_allowed(), reason="process_vm_readv between processes is refused here")


def _communicator(words, plan, rank: int, name: str):
    """Rank `rank`'s CpuProcessCommunicator of a symmetric plan, its buffers anywhere."""
    return _runtime.CpuProcessCommunicator(_runtime.decode(words), rank, 30.0, name,
                                           [s.name for s in plan.signals], [b.name for b in plan.buffers], 0,
                                           buffers_anywhere=True)


def _run_cases(rank: int, jobs) -> None:
    import torch.distributed as dist

    for case, words in jobs:
        plan = compile_plan(case.collective, case.world, case.dtype, case.op, case.count, counts=case.counts,
                            lowering="regime=throughput symmetric=true")
        impl = _communicator(words, plan, rank, case.collective)
        names: list = [None] * case.world
        dist.all_gather_object(names, impl.shm_name)
        impl.connect(names)
        dist.barrier()
        impl.unlink()
        try:
            n_in, n_out = case.buffer_sizes()
            for call in range(3):
                args = case.make_args(call)
                expected = case.expected(args)
                # Ordinary arrays, new ones every call: the peers learn where they are each call.
                x, y = args[0][rank].copy(), args[1][rank].copy()
                impl.run(x.ctypes.data, y.ctypes.data)
                assert compare([y], [expected[rank]], case.dtype, case.op, case.contributions, 8.0,
                               "%out") is None, f"rank {rank} {case} call {call}"
                assert np.array_equal(x.view(np.uint8), args[0][rank].view(np.uint8)), "input changed"
        finally:
            impl.close()


@needs_attach
@pytest.mark.parametrize("world", [2, 3])
def test_symmetric_collectives_over_ordinary_buffers_across_processes(world):
    jobs = []
    for name in COLLECTIVES:
        case = make_case(name, world, "bf16", count=37, seed=world)
        plan = compile_plan(name, world, "bf16", case.op, case.count, counts=case.counts,
                            lowering="regime=throughput symmetric=true")
        assert plan.symmetric
        jobs.append((case, plan.encode()))
    fork_gloo(world, _run_cases, jobs)


def test_buffers_anywhere_are_refused_for_a_staged_plan():
    plan = compile_plan("all_gather", 2, "f32", None, 64)
    assert not plan.symmetric
    with pytest.raises(ValueError, match="ag: buffers anywhere are for a symmetric plan"):
        _communicator(plan.encode(), plan, 0, "ag")


def _make_rank_and_exit(words, plan, conn) -> None:
    kept = _communicator(words, plan, 1, "ag")
    conn.send(kept.shm_name)
    os._exit(0)  # its region stays linked, naming a process that is gone


@needs_attach
def test_a_peer_whose_process_is_gone_is_refused_at_connect():
    plan = compile_plan("all_gather", 2, "f32", None, 64, symmetric=True)
    words = plan.encode()
    ctx = mp.get_context("fork")
    mine_end, theirs = ctx.Pipe()
    p = ctx.Process(target=_make_rank_and_exit, args=(words, plan, theirs))
    p.start()
    assert mine_end.poll(60), "the peer process did not start"
    peer = mine_end.recv()
    p.join()
    mine = _communicator(words, plan, 0, "ag")
    try:
        with pytest.raises(RuntimeError, match=r"ag: rank 1's shared memory .*: cross-memory attach to its process "
                                               rf"{p.pid} is refused: No such process"):
            mine.connect([mine.shm_name, peer])
    finally:
        mine.close()
        os.unlink(f"/dev/shm{peer}")
