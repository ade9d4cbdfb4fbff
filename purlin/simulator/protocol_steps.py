"""The simulated protocol steps of `snac` ops: what each one waits for, moves
and stores for one rank, checked by the race checker as it goes."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation, SSAValue

from purlin.snac import dialect as snac
from purlin.snac.errors import ProtocolViolation, SnacExecutionError
from purlin.simulator.happens_before import RaceChecker, Thread
from purlin.snac.phase_binding import PhaseState
from purlin.simulator.symmetric_memory import Signal, World
from purlin.simulator.user_buffers import UserBuffers

# (ready, what blocks it, kind, the keys of what it still waits for: a
# Signal's id or a window location's key, whose stores may make it ready).
Wait = tuple[
    Callable[[], bool],
    Callable[[], list[tuple[str, int, int, int, int]]],
    str,
    Callable[[], list[Hashable]],
]


@dataclass(slots=True)
class Token:
    phase: str
    group: int
    rank: int
    epoch: int


class ProtocolSteps:
    """The steps, for the machine that runs them: each takes the op (a view
    with its phase as `ph`), the environment and the thread. A step that may
    wait returns None when it did not have to, else a generator that yields
    the wait and completes the step."""

    program: snac.ProgramOpBase
    w: World
    args: dict[SSAValue, list[np.ndarray]] | None
    races: RaceChecker
    user: UserBuffers

    def _unit(self, op: Operation, ph: PhaseState, rank: int, u: int):
        units = ph.plan.units[rank]
        return units[u] if 0 <= u < len(units) else _nth(op, ph, rank, units, u, "unit")

    def _group(self, op: Operation, ph: PhaseState, rank: int, g: int):
        groups = ph.plan.groups[rank]
        return groups[g] if 0 <= g < len(groups) else _nth(op, ph, rank, groups, g, "group")

    def _await(self, t: Thread, conds: list[tuple[Signal, int, str, int, int]], acquire: bool):
        """Acquire the stores once every (signal, need) holds: now (None), or
        in the generator returned, which yields the wait until then."""
        # Flags only grow, so conditions met stay met: scan each once.
        first = 0

        def ready() -> bool:
            nonlocal first
            while first < len(conds) and conds[first][0].value >= conds[first][1]:
                first += 1
            return first == len(conds)

        def blocked() -> list[tuple[str, int, int, int, int]]:
            return [(sym, owner, writer, need, s.value)
                    for s, need, sym, owner, writer in conds if s.value < need]

        def keys() -> list[Hashable]:
            return [id(conds[first][0])] if first < len(conds) else []

        def acquired() -> None:
            if acquire:
                for s, *_ in conds:
                    t.clock.join(s.clock)
            t.tick()

        if ready():
            acquired()
            return None
        return _after((ready, blocked, "wait", keys), acquired)

    def _reclaim(self, op: snac.ReclaimOpBase, env, t: Thread):
        ph = op.ph
        rank, u = env[op.rank], env[op.unit]
        self._unit(op, ph, rank, u)
        slots = ph.slots
        if ph.moves == "push":
            need = env[op.epoch] + 1
            readers = tuple(sorted({d for d, _ in ph.plan.destinations[rank][u]} - {rank}))
        elif ph.staged and u >= slots:
            prior = ph.plan.units[rank][u - slots]
            need = env[op.epoch] + (u - slots) + 1
            readers = prior.consumers
        elif u == 0:
            need = env[op.prev]
            readers = tuple(d for d in range(self.w.world) if d != rank)
        else:
            return None
        mine = self.w.slots(ph.free, rank)
        conds = [(mine[d], need, ph.free, rank, d) for d in readers]
        return self._await(t, conds, op.order.data == snac.MemoryOrder.ACQUIRE)

    def _stage(self, op: snac.StageOpBase, env, t: Thread) -> None:
        ph = op.ph
        rank, u, half = env[op.rank], env[op.unit], env[op.half]
        unit = self._unit(op, ph, rank, u)
        slot = u % ph.slots
        self._read_source(t, ph, rank, unit.src_offset, unit.size, op)
        key = ("stage", ph.buf, rank, half, slot)
        self.races.write(t, key, (ph.name, rank, u, self.w.epoch[rank]), op,
                         lambda: f"@{ph.buf} of rank {rank} half {half} slot {slot}")
        if self.w.data:
            src = self._source(ph, rank)
            self.w.buffers[(ph.buf, rank)][half, slot, : unit.size] = src[
                unit.src_offset : unit.src_offset + unit.size
            ]

    def _source(self, ph: PhaseState, rank: int) -> np.ndarray:
        assert self.args is not None
        v = self.program.input if ph.from_input else self.program.output
        return self.args[v][rank]

    def _read_source(self, t: Thread, ph: PhaseState, rank: int, offset: int, size: int, op) -> None:
        """Thread `t` reads `size` elements at `offset` of rank `rank`'s source buffer."""
        self.user.access(t, rank, "input" if ph.from_input else "output", offset, offset + size, False, op)

    def _push(self, op: snac.PushOpBase, env, t: Thread) -> None:
        ph = op.ph
        rank, u = env[op.rank], env[op.unit]
        unit = self._unit(op, ph, rank, u)
        self._read_source(t, ph, rank, unit.src_offset, unit.size, op)
        for d, off in ph.plan.destinations[rank][u]:
            self.user.access(t, d, "output", off, off + unit.size, True, op)
            if self.w.data:
                assert self.args is not None
                self.args[self.program.output][d][off : off + unit.size] = self._source(ph, rank)[
                    unit.src_offset : unit.src_offset + unit.size
                ]

    def _grant(self, op: snac.GrantOpBase, env, t: Thread) -> None:
        ph = op.ph
        rank, value = env[op.rank], env[op.value]
        self._signal(op, t, ph.free, rank, ((d, value) for d in ph.plan.senders(rank)))

    def _drain(self, op: snac.DrainOpBase, env, t: Thread):
        ph = op.ph
        rank, value = env[op.rank], env[op.value]
        mine = self.w.slots(ph.free, rank)
        conds = [(mine[d], value, ph.free, rank, d) for d in ph.plan.receivers(rank)]
        return self._await(t, conds, op.order.data == snac.MemoryOrder.ACQUIRE)

    def _put(self, op: snac.PutOpBase, env, t: Thread) -> None:
        ph = op.ph
        rank, u, half, flag = env[op.rank], env[op.unit], env[op.half], env[op.flag]
        unit = self._unit(op, ph, rank, u)
        off = ph.window_offsets[rank][u]
        buf = ph.buf
        self._read_source(t, ph, rank, unit.src_offset, unit.size, op)
        for d in unit.consumers:
            key = ("win", buf, d, half, rank, u)
            self.races.write(t, key, (ph.name, rank, u, flag), op,
                             lambda d=d: f"@{buf} of rank {d} half {half} source {rank} unit {u}")
            # Data and flag travel in one 16-byte store: the put's clock is
            # what a reader of the packet synchronises with.
            loc = self.w.location(key)
            loc.write_clock = t.clock.copy()
            if self.w.data:
                src = self._source(ph, rank)
                self.w.buffers[(buf, d)][half, rank, off : off + unit.size] = src[
                    unit.src_offset : unit.src_offset + unit.size
                ]

    def _notify(self, op: snac.NotifyOpBase, env, t: Thread) -> None:
        ph = op.ph
        rank, u, value = env[op.rank], env[op.unit], env[op.value]
        unit = self._unit(op, ph, rank, u)
        self._signal(op, t, ph.ready, rank, ((d, value) for d in unit.consumers))

    def _wait(self, op: snac.WaitOpBase, env, t: Thread):
        ph = op.ph
        rank, g, epoch = env[op.rank], env[op.group], env[op.epoch]
        group = self._group(op, ph, rank, g)
        acquire = op.order.data == snac.MemoryOrder.ACQUIRE
        env[op.token] = Token(ph.name, g, rank, epoch)
        if ph.moves != "packets":
            mine = self.w.slots(ph.ready, rank)
            conds = [(mine[s.rank], epoch + s.unit + 1, ph.ready, rank, s.rank) for s in group.remote]
            return self._await(t, conds, acquire)
        return self._await_packets(ph, group, rank, epoch, t, acquire)

    def _await_packets(self, ph: PhaseState, group, rank: int, epoch: int, t: Thread, acquire: bool):
        buf = ph.buf
        half = epoch % 2
        keys = [("win", buf, rank, half, s.rank, s.unit) for s in group.remote]
        # Window epochs only grow, so packets that arrived stay arrived: scan each once.
        first = 0

        def arrived(k) -> bool:
            loc = self.w.locations.get(k)
            return loc is not None and loc.tag is not None and loc.tag[3] >= epoch + 1

        def ready() -> bool:
            nonlocal first
            while first < len(keys) and arrived(keys[first]):
                first += 1
            return first == len(keys)

        def blocked():
            out = []
            for k, s in zip(keys, group.remote):
                loc = self.w.locations.get(k)
                have = loc.tag[3] if loc is not None and loc.tag is not None else 0
                if have < epoch + 1:
                    out.append((f"@{buf} packets", rank, s.rank, epoch + 1, have))
            return out

        def waiting() -> list[Hashable]:
            return [keys[first]] if first < len(keys) else []

        def acquired() -> None:
            for k in keys:
                # A packet is read with its flag: acquire or not, its data is the put's.
                t.clock.join(self.w.locations[k].write_clock)
            t.tick()

        if ready():
            acquired()
            return None
        return _after((ready, blocked, "packets", waiting), acquired)

    def _consume(self, op: snac.ConsumeOpBase, env, t: Thread) -> None:
        ph = op.ph
        rank, g, half = env[op.rank], env[op.group], env[op.half]
        tok: Token = env[op.token]
        name = ph.name
        if (tok.phase, tok.group, tok.rank) != (name, g, rank):
            raise ProtocolViolation(
                op, f"rank {rank} consumes group {g} of phase '{name}' with the token "
                f"of a wait for group {tok.group} of phase '{tok.phase}'"
            )
        group = self._group(op, ph, rank, g)
        buf, staged, slots = ph.buf, ph.staged, ph.slots
        if ph.moves == "push" and group.remote:
            raise SnacExecutionError(
                op, f"rank {rank} consumes group {g} of phase '{name}', which its producers push: "
                "a direct push phase consumes only groups without remote sources"
            )
        pieces: list[np.ndarray] = []
        for s in group.sources:
            if s.unit is None or ph.direct:
                # Read in place: the rank's own buffer, or (direct pull) the source rank's.
                self._read_source(t, ph, s.rank, s.offset, group.size, op)
                if self.w.data:
                    src = self._source(ph, s.rank)
                    pieces.append(src[s.offset : s.offset + group.size])
                continue
            expect = (name, s.rank, s.unit, tok.epoch + 1 if not staged else tok.epoch)
            if staged:
                key = ("stage", buf, s.rank, half, s.unit % slots)
                what = lambda s=s: f"@{buf} of rank {s.rank} half {half} slot {s.unit % slots}"  # noqa: E731
            else:
                key = ("win", buf, rank, half, s.rank, s.unit)
                what = lambda s=s: (  # noqa: E731
                    f"@{buf} of rank {rank} half {half} source {s.rank} unit {s.unit}"
                )
            self.races.read(t, key, expect, op, what, rank)
            if self.w.data:
                if staged:
                    pieces.append(self.w.buffers[(buf, s.rank)][half, s.unit % slots, : group.size])
                else:
                    off = ph.window_offsets[s.rank][s.unit]
                    pieces.append(self.w.buffers[(buf, rank)][half, s.rank, off : off + group.size])
        self.user.access(t, rank, "output", group.dst_offset, group.dst_offset + group.size, True, op)
        if not self.w.data:
            return
        assert self.args is not None
        out = self.args[self.program.output][rank]
        if ph.reduce is None:
            out[group.dst_offset : group.dst_offset + group.size] = pieces[0]
        else:
            # Only data runs reduce: the entry points stay free of the reference at import.
            from purlin.coll.reference import reduce_parts

            out[group.dst_offset : group.dst_offset + group.size] = reduce_parts(pieces, ph.reduce)

    def _ack(self, op: snac.AckOpBase, env, t: Thread) -> None:
        ph = op.ph
        rank, g, epoch = env[op.rank], env[op.group], env[op.epoch]
        group = self._group(op, ph, rank, g)
        self._signal(op, t, ph.free, rank, ((s.rank, epoch + s.unit + 1) for s in group.remote))

    def _finish(self, op: snac.FinishOpBase, env, t: Thread) -> None:
        """To every peer; in a direct pull phase to the ranks this one read from."""
        ph = op.ph
        rank, value = env[op.rank], env[op.value]
        peers = ph.plan.senders(rank) if ph.moves == "pull" else (d for d in range(self.w.world) if d != rank)
        self._signal(op, t, ph.free, rank, ((d, value) for d in peers))

    def _signal(self, op, t: Thread, sym: str, rank: int, stores: Iterable[tuple[int, int]]) -> None:
        """Store each (peer, value) of `stores` into slot `rank` of the peer's `sym`."""
        release = op.order.data == snac.MemoryOrder.RELEASE
        for d, value in stores:
            self.races.store(t, self.w.signal(sym, d, rank), value, release,
                             lambda d=d: f"{sym}[{rank}] on rank {d}", op)


def _after(wait: Wait, then: Callable[[], None]):
    """Yield `wait` once; the scheduler resumes only when it is ready."""
    yield wait
    then()



def _nth(op: Operation, ph: PhaseState, rank: int, items: Sequence, i: int, what: str):
    """Item `i` of `rank`'s units or groups (`what`) in phase `ph`."""
    if not 0 <= i < len(items):
        raise SnacExecutionError(
            op, f"rank {rank} has {len(items)} {what}s in phase "
            f"'{ph.op.sym_name.data}', no {what} {i}"
        )
    return items[i]
