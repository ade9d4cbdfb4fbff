"""The CPU backend's symmetric plans over ordinary buffers, one rank per
process: with buffers anywhere, a peer's input or output is read or written
by cross-memory attach (process_vm_readv / process_vm_writev, one copy by
the kernel) instead of living in the shared heap. Every collective at odd
sizes, worlds 2 and 3, against the reference; the refusals."""

from __future__ import annotations

import multiprocessing as mp
import os

import numpy as np
import pytest

pytest.importorskip("torch")

from attach import needs_attach  # noqa: E402
from collective_cases import make_case  # noqa: E402
from process_group import fork_gloo  # noqa: E402

from purlin import _runtime  # noqa: E402
from purlin.coll.builder import COLLECTIVES  # noqa: E402
from purlin.compile import compile_plan  # noqa: E402
from purlin.testing.data import compare  # noqa: E402


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


def _through_process_communicator(rank: int, jobs) -> None:
    from purlin.runtime import ProcessCommunicator

    for case, words in jobs:
        comm = ProcessCommunicator(words, name=case.collective, buffers="anywhere")
        with pytest.raises(ValueError, match="alloc gives memory of the shared heap; with buffers='anywhere'"):
            comm.alloc(1)
        args = case.make_args(0)
        expected = case.expected(args)
        x, y = args[0][rank], args[1][rank]
        comm.run(x, y)
        assert compare([y], [expected[rank]], case.dtype, case.op, case.contributions, 8.0, "%out") is None
        comm.close()


@needs_attach
def test_a_process_communicator_takes_ordinary_arrays_with_buffers_anywhere():
    jobs = []
    for name in ("all_reduce", "all_to_all_v"):
        case = make_case(name, 3, "f32", count=101, seed=1)
        plan = compile_plan(name, 3, "f32", case.op, case.count, counts=case.counts,
                            lowering="regime=throughput symmetric=true")
        jobs.append((case, plan.encode()))
    fork_gloo(3, _through_process_communicator, jobs)


def test_buffers_anywhere_are_a_symmetric_cpu_plan_s(group_of_one):
    from purlin.runtime import ProcessCommunicator

    with pytest.raises(ValueError, match="ag: buffers='anywhere' is for a symmetric plan on the cpu backend"):
        ProcessCommunicator(compile_plan("all_gather", 1, "f32", None, 8), name="ag", buffers="anywhere")
    with pytest.raises(ValueError, match=r"ag: buffers='shm', expected one of 'heap', 'anywhere'"):
        ProcessCommunicator(compile_plan("all_gather", 1, "f32", None, 8, symmetric=True), name="ag", buffers="shm")
