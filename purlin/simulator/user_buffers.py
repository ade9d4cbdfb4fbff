"""The ranks' own buffers (the caller's input and output) during one call.

The caller writes a rank's input and reads its output before the rank's call
starts and after it returns; during the call, the rank's roles and, in place
(direct pull and push), its peers read and write them. Every access must be
ordered after the owning rank's call began and before it returned (a signal
of that rank's orders it), and accesses of different threads to overlapping
ranges must be ordered when one writes; in place (input and output one
buffer), no range may be read as input once it was overwritten.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import Operation

from purlin.snac.errors import ProtocolViolation
from purlin.simulator.happens_before import Thread


@dataclass(slots=True)
class UserAccess:
    tid: int
    stamp: int
    who: str
    lo: int
    hi: int
    write: bool
    space: str  # "input" or "output": what the access took the memory for


class UserBuffers:
    """Each rank's input and output memories (one when `aliased`: in place) in
    the current call, with the stamps of each rank's caller at its start."""

    def __init__(self, world: int, aliased: bool):
        self.world = world
        self.aliased = aliased
        self.accesses: dict[tuple[int, str], list[UserAccess]] = {}
        self.host_tid = [0] * world
        self.start_stamp = [0] * world

    def begin(self, rank: int, host_tid: int, stamp: int) -> None:
        """Rank `rank`'s call starts: its caller, thread `host_tid`, is at `stamp`."""
        self.host_tid[rank] = host_tid
        self.start_stamp[rank] = stamp
        for space in ("input", "output"):
            self.accesses.pop((rank, self._memory(space)), None)

    def _memory(self, space: str) -> str:
        return "buffer" if self.aliased else space

    def access(self, t: Thread, rank: int, space: str, lo: int, hi: int, write: bool, op: Operation) -> None:
        """Thread `t` reads (or writes) elements [lo, hi) of rank `rank`'s `space`."""
        if hi <= lo:
            return
        verb = "writes" if write else "reads"
        what: Callable[[], str] = lambda: f"rank {rank}'s {space} [{lo}, {hi})"  # noqa: E731
        if t.clock.v[self.host_tid[rank]] < self.start_stamp[rank]:
            raise ProtocolViolation(
                op, f"race: {t.name} {verb} {what()} before rank {rank}'s call may have begun: no "
                f"signal of rank {rank} orders it after the call's start, when the caller hands the buffer over"
            )
        seen = self.accesses.setdefault((rank, self._memory(space)), [])
        for b in seen:
            if b.hi <= lo or hi <= b.lo:
                continue
            if b.write and not write and space == "input":
                raise ProtocolViolation(
                    op, f"in place: {t.name} reads {what()} as input, but {b.who} already overwrote "
                    f"[{b.lo}, {b.hi}) of it with output"
                )
            if (write or b.write) and b.tid != t.tid and t.clock.v[b.tid] < b.stamp:
                raise ProtocolViolation(
                    op, f"race: {t.name} {verb} {what()} while {b.who} may still "
                    f"{'write' if b.write else 'read'} [{b.lo}, {b.hi}) of it (no signal orders the two)"
                )
        seen.append(UserAccess(t.tid, t.tick(), t.name, lo, hi, write, space))

    def end(self, rank: int, clock, program: Operation) -> None:
        """Rank `rank`'s call of `program` returns with the join of its roles'
        clocks `clock`: every access to its buffers must be ordered before."""
        for space in ("input", "output") if not self.aliased else ("input",):
            for a in self.accesses.get((rank, self._memory(space)), []):
                if clock[a.tid] < a.stamp:
                    verb = "writes" if a.write else "reads"
                    raise ProtocolViolation(
                        program, f"race: {a.who} {verb} rank {rank}'s {a.space} [{a.lo}, {a.hi}) after rank {rank}'s call "
                        f"may have returned: no signal orders it before the call's end, so the caller may "
                        "already reuse the buffer"
                    )
