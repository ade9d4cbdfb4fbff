"""Happens-before for the simulated threads: vector clocks, and the checks
that every staging or window access and every signal store is ordered.

Release stores and acquire waits synchronise, relaxed ones do not; a read not
ordered after the write it depends on, or a write not ordered after earlier
reads, is a race; a read that finds another unit or epoch than it expects is
stale or early.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np
from xdsl.ir import Operation

from purlin.snac.errors import ProtocolViolation
from purlin.simulator.scheduler import Task
from purlin.simulator.symmetric_memory import Access, Signal, World


class Clock:
    """A vector clock: one int64 per thread. numpy, because joins are the
    inner loop of a large world (a few hundred threads join a clock each step)."""

    __slots__ = ("v",)

    def __init__(self, n: int):
        self.v = np.zeros(n, dtype=np.int64)

    def copy(self) -> np.ndarray:
        return self.v.copy()

    def join(self, other: np.ndarray | None) -> None:
        if other is not None:
            np.maximum(self.v, other, out=self.v)



class Thread(Task):
    """A simulated role of one rank, with its vector clock."""

    def __init__(self, tid: int, rank: int, role: str, nthreads: int):
        super().__init__()
        self.tid = tid
        self.rank = rank
        self.role = role
        self.name = f"rank {rank} ({role})"
        self.clock = Clock(nthreads)
        self.stamp = 0  # own entry of the clock, which only the thread's ticks move
        self.watching: set[Hashable] = set()

    def tick(self) -> int:
        self.stamp += 1
        self.clock.v[self.tid] = self.stamp
        return self.stamp


class RaceChecker:
    """Checks the accesses of threads to `world`; `wake(key)` is told of every
    store, so that the threads waiting for that key are looked at again."""

    def __init__(self, world: World, wake: Callable[[Hashable], None]):
        self.w = world
        self.wake = wake

    def store(self, t: Thread, sig: Signal, value: int, release: bool, what: Callable[[], str],
              op: Operation) -> None:
        if value < sig.value:
            raise ProtocolViolation(
                op, f"{t.name} stores {value} into {what()}, which already holds "
                f"{sig.value}: flags must only grow"
            )
        t.tick()
        sig.value = value
        sig.clock = t.clock.copy() if release else None
        self.wake(id(sig))

    def hb(self, a: Access | None, t: Thread) -> bool:
        return a is None or a.tid == t.tid or t.clock.v[a.tid] >= a.stamp

    def write(self, t: Thread, key: tuple, tag: tuple, op: Operation, what: Callable[[], str]) -> None:
        """`what` names the location, for a diagnostic (formatted only then)."""
        loc = self.w.location(key)
        stamp = t.tick()
        for r in loc.reads.values():
            if not self.hb(r, t):
                raise ProtocolViolation(
                    op, f"race: {t.name} overwrites {what()} with unit {tag[2]} of epoch "
                    f"{tag[3]} while {r.what} may still read it (no acknowledgement orders the "
                    "read before this write)"
                )
        if not self.hb(loc.write, t):
            assert loc.write is not None
            raise ProtocolViolation(op, f"race: {t.name} and {loc.write.what} write {what()} unordered")
        loc.tag = tag
        loc.write = Access(t.tid, stamp, t.name, tag[3])
        loc.reads = {}
        self.wake(key)

    def read(self, t: Thread, key: tuple, expect: tuple, op: Operation, what: Callable[[], str],
             rank: int) -> None:
        loc = self.w.location(key)
        if loc.tag != expect:
            if loc.tag is not None and (loc.tag[3], loc.tag[2]) > (expect[3], expect[2]):
                raise ProtocolViolation(
                    op, f"reused too early: {what()} was overwritten with unit "
                    f"{loc.tag[2]} of epoch {loc.tag[3]} before rank {rank} read unit "
                    f"{expect[2]} of epoch {expect[3]} from it"
                )
            have = "nothing" if loc.tag is None else f"unit {loc.tag[2]} of epoch {loc.tag[3]}"
            raise ProtocolViolation(
                op, f"read before wait: rank {rank} reads {what()} expecting unit "
                f"{expect[2]} of epoch {expect[3]} from rank {expect[1]}, but it holds {have}"
            )
        if not self.hb(loc.write, t):
            raise ProtocolViolation(
                op, f"race: {t.name} reads {what()} (unit {expect[2]}, epoch {expect[3]}) "
                "without synchronising with its producer: the notify or the wait is not "
                "release/acquire"
            )
        loc.reads[t.tid] = Access(t.tid, t.tick(), t.name, expect[3])
