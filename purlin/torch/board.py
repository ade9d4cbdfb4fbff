"""The call board: how the ranks of a group learn that they made different
calls (another shape, dtype, op or collective) quickly, instead of waiting
on each other's signals until a timeout or forever.

One small region of POSIX shared memory per group (its ranks share a node),
mapped by every rank: each rank posts a header of every purlin call (its
number, collective, dtype, op, sizes, options) into its ring of slots.
`agree` posts and waits until every rank has posted the same call number,
then compares: headers that differ raise CallMismatchError on every rank,
naming each rank's call (a call that compiles or maps memory waits so).
`check` posts and compares with what the peers posted so far, waiting for
none (a CPU call that hits the cache: its run waits for its peers anyway,
and a peer that finds another call stops it, see GroupState). `post` only
posts (a CUDA launch that hits the cache does not wait for its peers'
hosts); a peer's `agree` still sees it.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
import uuid
import zlib
from datetime import timedelta

from purlin.runtime.backend import fence

# A header after the call number: collective, dtype and op by name, elements, digests of the counts and
# of the lowering options, flags.
_HEADER = struct.Struct("<24s8s8s4q")
_SEQ = struct.Struct("<q")
_SLOT_BYTES = 8 + _HEADER.size
# Slots per rank: a rank whose calls all hit may run this many calls ahead of a peer that checks.
RING = 64


# Boards made per (group name, rank): every rank makes a group's boards in the same order.
_BOARDS: dict[tuple[str, int], int] = {}

# What a header's flags say, bit by bit.
FLAGS = ("deterministic", "in place", "on cuda", "specialising")


def _pause(polls: int) -> float:
    """Seconds to sleep after `polls` polls of a peer not there yet: none at first, then doubling
    from 20 us to 1 ms, so that waiting ranks leave the cores to the late one (ranks outnumber them)."""
    return 0.0 if polls < 16 else min(1e-3, 20e-6 * 2 ** min(polls - 16, 6))


def group_store(group):
    """The c10d store a group torch.distributed made was set up through (None: the default group)."""
    import torch.distributed.distributed_c10d as c10d

    return c10d._get_process_group_store(group if group is not None else c10d._get_default_group())


class CallMismatchError(RuntimeError):
    """The ranks of a group made different purlin calls at the same point;
    `calls` holds the headers of the calls posted there."""

    def __init__(self, message: str, calls: set[tuple] = frozenset()) -> None:
        super().__init__(message)
        self.calls = calls


def digest(s: str) -> int:
    """A string's digest, alike in every process (Python's hash is salted per process)."""
    return zlib.crc32(s.encode())


def header(collective: str, dtype: str, op: str | None, count: int, counts: str, lowering: str,
           *flags: bool) -> tuple:
    """The header of a call, as the board holds it; `flags` as FLAGS names them."""
    # Packed and read back: names padded as a peer's slot reads.
    return _HEADER.unpack(_HEADER.pack(collective.encode(), dtype.encode(), (op or "").encode(), count,
                                       digest(counts), digest(lowering),
                                       sum(1 << bit for bit, on in enumerate(flags) if on)))


class CallBoard:
    def __init__(self, store, rank: int, world: int, timeout_s: float, name: str) -> None:
        self.rank, self.world, self.timeout_s, self.name = rank, world, timeout_s, name
        self.seq = 0
        size = world * RING * _SLOT_BYTES
        # Through the group's store (group_store), not a collective: on an NCCL group those allocate
        # CUDA tensors (kept alive a while by its watchdog), and a first call inside torch.compile's
        # CUDA-graph warm-up would leave them in the graph's memory pool.
        _BOARDS[name, rank] = key = _BOARDS.get((name, rank), 0) + 1
        name_key, mapped_key = f"purlin-board/{name}/{key}", f"purlin-board/{name}/{key}/mapped"
        if rank == 0:
            path = f"/dev/shm/purlin-board-{os.getpid()}-{uuid.uuid4().hex}"
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
            os.ftruncate(fd, size)
            os.close(fd)
            store.set(name_key, path)
        else:
            try:
                store.wait([name_key], timedelta(seconds=timeout_s))
            except RuntimeError as e:
                raise CallMismatchError(
                    f"purlin.torch: group {name!r}: rank 0 did not make its first purlin call within "
                    f"{timeout_s:g} s of rank {rank}'s; every rank must make the same purlin calls") from e
            path = store.get(name_key).decode()
        fd = os.open(path, os.O_RDWR)
        try:
            self._mem = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        store.add(mapped_key, 1)
        if rank == 0:
            # Once every rank has mapped it the name can go: no crash leaks it afterwards.
            try:
                self._await_mapped(store, mapped_key)
            finally:
                os.unlink(path)

    def _await_mapped(self, store, key: str) -> None:
        deadline = time.monotonic() + self.timeout_s
        polls = 0
        while (mapped := store.add(key, 0)) < self.world:
            if time.monotonic() > deadline:
                raise CallMismatchError(
                    f"purlin.torch: group {self.name!r}: {self.world - mapped} of its {self.world} ranks did "
                    f"not map the call board within {self.timeout_s:g} s of rank 0's first purlin call; "
                    "every rank must make the same purlin calls")
            polls += 1
            time.sleep(_pause(polls))

    def _slot(self, rank: int, seq: int) -> int:
        return (rank * RING + seq % RING) * _SLOT_BYTES

    def post(self, head: tuple) -> int:
        """Posts this rank's next call; its number."""
        self.seq += 1
        at = self._slot(self.rank, self.seq)
        _HEADER.pack_into(self._mem, at + 8, *head)
        # The number last: a peer that reads it reads the header of that call.
        _SEQ.pack_into(self._mem, at, self.seq)
        return self.seq

    def _posted(self, seq: int, head: tuple, heads: dict[int, tuple]) -> None:
        """Adds to `heads` the headers of call `seq` that peers have posted since."""
        for r in range(self.world):
            if r in heads:
                continue
            at = self._slot(r, seq)
            (s,) = _SEQ.unpack_from(self._mem, at)
            if s == seq:
                got = _HEADER.unpack_from(self._mem, at + 8)
                if _SEQ.unpack_from(self._mem, at)[0] == seq:
                    heads[r] = got
            elif s > seq:
                # That peer ran RING calls ahead on hits and overwrote this one: it cannot be compared.
                heads[r] = head

    def agree(self, head: tuple) -> None:
        """Posts this rank's next call and waits until every rank posted its own;
        CallMismatchError on every rank when they differ, naming each rank's."""
        seq = self.post(head)
        heads: dict[int, tuple] = {self.rank: head}
        deadline = None
        polls = 0
        while True:
            self._posted(seq, head, heads)
            if len(heads) == self.world:
                break
            if deadline is None:
                deadline = time.monotonic() + self.timeout_s
            elif time.monotonic() > deadline:
                raise self._absent(seq, head, heads)
            polls += 1
            time.sleep(_pause(polls))
        self._compare(seq, head, heads)

    def check(self, head: tuple) -> None:
        """Posts this rank's next call and compares it with the peers' posted so
        far, without waiting for the others: of two ranks whose calls differ, the
        one that posts second raises CallMismatchError here (a fence between its
        post and its reads makes sure one of them sees the other's); the first
        learns it when its call stops (`explain`)."""
        seq = self.post(head)
        fence()
        heads: dict[int, tuple] = {self.rank: head}
        self._posted(seq, head, heads)
        self._compare(seq, head, heads)

    def explain(self, head: tuple) -> CallMismatchError | None:
        """Why this rank's last call (posted with `check`) failed, where the board
        tells: peers that posted another call, or none by now; None when every
        rank posted this call."""
        heads: dict[int, tuple] = {self.rank: head}
        self._posted(self.seq, head, heads)
        try:
            self._compare(self.seq, head, heads)
        except CallMismatchError as e:
            return e
        return self._absent(self.seq, head, heads) if len(heads) < self.world else None

    def _absent(self, seq: int, head: tuple, heads: dict[int, tuple]) -> CallMismatchError:
        missing = sorted(set(range(self.world)) - set(heads))
        return CallMismatchError(
            f"purlin.torch: group {self.name!r}: rank(s) {missing} did not make purlin call #{seq} "
            f"({self.describe(head)} on rank {self.rank}) within {self.timeout_s:g} s; every rank must "
            "make the same purlin calls in the same order", set(heads.values()))

    def _compare(self, seq: int, head: tuple, heads: dict[int, tuple]) -> None:
        if all(h == head for h in heads.values()):
            return
        calls: dict[tuple, list[int]] = {}
        for r in sorted(heads):
            calls.setdefault(heads[r], []).append(r)
        said = "; ".join(f"rank{'s' if len(rs) > 1 else ''} {', '.join(map(str, rs))}: {self.describe(h)}"
                         for h, rs in calls.items())
        raise CallMismatchError(f"purlin.torch: group {self.name!r}: the ranks made different calls at purlin "
                                f"call #{seq}: {said}; every rank must make the same calls with the same "
                                "shapes, dtypes and ops", set(calls))

    def describe(self, head: tuple) -> str:
        collective, dtype, op, count, counts, lowering, flags = head
        text = [b.rstrip(b"\0").decode() for b in (collective, dtype, op)]
        what = f"{text[0]} of {count} {text[1]} elements"
        if text[2]:
            what += f", op {text[2]}"
        if counts != digest("None"):
            what += f", counts #{counts:08x}"
        if lowering != digest(""):
            what += f", lowering #{lowering:08x}"
        return ", ".join([what, *(name for bit, name in enumerate(FLAGS) if flags >> bit & 1)])

    def close(self) -> None:
        self._mem.close()
