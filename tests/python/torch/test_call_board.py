"""The call board is set up through a c10d store alone (no collective, so no
CUDA tensor on an NCCL group): two ranks in threads over one HashStore map
one board and see each other's calls; a rank 0 that never comes, or a peer
that never maps, is a CallMismatchError within the timeout, and rank 0's
shared-memory name does not outlive the set-up either way."""

from __future__ import annotations

import glob
import threading

import pytest
import torch.distributed as dist

from purlin.torch.board import CallBoard, CallMismatchError, header


def _boards(store, world: int, timeout_s: float = 10.0) -> list[CallBoard]:
    boards: list = [None] * world
    errors: list = []

    def make(rank: int) -> None:
        try:
            boards[rank] = CallBoard(store, rank, world, timeout_s, "board-test")
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=make, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return boards


def test_ranks_meeting_through_a_store_share_one_board():
    before = set(glob.glob("/dev/shm/purlin-board-*"))
    b0, b1 = _boards(dist.HashStore(), 2)
    assert set(glob.glob("/dev/shm/purlin-board-*")) == before  # unlinked once both mapped
    call = header("all_reduce", "f32", "sum", 8, "None", "", False, False, False)
    b1.post(call)
    b0.agree(call)
    other = header("all_gather", "f32", None, 8, "None", "", False, False, False)
    b0.post(other)
    with pytest.raises(CallMismatchError, match="different calls"):
        b1.check(call)
    for b in (b0, b1):
        b.close()


def test_a_rank_whose_rank_0_never_comes_gets_a_clear_error():
    with pytest.raises(CallMismatchError, match="rank 0 did not make its first purlin call within 0.2 s"):
        CallBoard(dist.HashStore(), 1, 2, 0.2, "board-test")


def test_rank_0_whose_peer_never_maps_gets_a_clear_error_and_leaves_no_name():
    before = set(glob.glob("/dev/shm/purlin-board-*"))
    with pytest.raises(CallMismatchError, match="1 of its 2 ranks did not map the call board within 0.2 s"):
        CallBoard(dist.HashStore(), 0, 2, 0.2, "board-test")
    assert set(glob.glob("/dev/shm/purlin-board-*")) == before


def test_boards_made_again_for_a_group_meet_under_new_keys():
    store = dist.HashStore()
    first = _boards(store, 2)
    again = _boards(store, 2)  # the first board's keys are still in the store
    call = header("all_reduce", "f32", "sum", 4, "None", "", False, False, False)
    again[1].post(call)
    again[0].agree(call)
    for b in (*first, *again):
        b.close()
