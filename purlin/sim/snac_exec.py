"""Executes `snac.program`s for N ranks with an explicit scheduler.

Every role of every rank is a coroutine that yields at each protocol step; a
seeded scheduler picks which runnable one goes next, so different seeds
explore different interleavings. Alongside the data (optional) it checks the
protocol itself:
- happens-before through vector clocks: release stores and acquire waits
  synchronise, relaxed ones do not; a staging or window access not ordered
  after the write it depends on, or a write not ordered after earlier reads,
  is a race;
- every read finds the unit and epoch it expects (no stale or early reads);
- every rank advances its epoch by the same amount;
- when no role can move, the waits are a deadlock: a missing notify when the
  writer has finished, a cycle of waits otherwise.
`snac-verify` runs it without data for a few calls and seeds.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xdsl.dialects import scf
from xdsl.ir import Block, Operation, SSAValue

from purlin.diagnostics import where
from purlin.dialects import atom, snac
from purlin.dialects.coll import element_bytes
from purlin.layouts import Layout
from purlin.protocol import PhasePlan, packet_elems, route_layouts
from purlin.sim.index_eval import IndexEvaluator

if TYPE_CHECKING:
    # numpy is imported where data moves, so snac-verify starts fast.
    import numpy as np


class SnacExecutionError(Exception):
    """The program cannot run as written (bad operands, out-of-range units)."""


class ProtocolViolation(SnacExecutionError):
    """A race, a stale read, or ranks that disagree on the epoch."""


class Deadlock(SnacExecutionError):
    """No role can make progress."""


# Most protocol steps a role takes before the scheduler picks again.
MAX_BURST = 8

# -- vector clocks -----------------------------------------------------------


class Clock:
    __slots__ = ("v",)

    def __init__(self, n: int):
        self.v = [0] * n

    def copy(self) -> list[int]:
        return list(self.v)

    def join(self, other: Sequence[int] | None) -> None:
        if other is not None:
            self.v = [a if a >= b else b for a, b in zip(self.v, other)]


@dataclass
class Signal:
    value: int = 0
    clock: list[int] | None = None  # clock of the last release store


@dataclass
class Access:
    tid: int
    stamp: int
    what: str


@dataclass
class Location:
    """A staging slot or a window region, for race and staleness checks."""

    tag: tuple | None = None  # (phase, producer, unit, epoch) last written
    write: Access | None = None
    write_clock: list[int] | None = None  # packets: the put's clock, joined by waits
    reads: dict[int, Access] = field(default_factory=dict)


@dataclass
class Token:
    phase: str
    group: int
    rank: int
    epoch: int


# -- state shared by all ranks ----------------------------------------------


@dataclass
class PhaseState:
    op: snac.PhaseOp
    plan: PhasePlan
    buffer: snac.BufferOp
    ready: str
    free: str
    window_offsets: list[list[int]]  # per producer, per unit: offset in its window region


class World:
    """Symmetric memory, signals and epochs of all ranks, kept across calls."""

    def __init__(self, world: int, data: bool):
        self.world = world
        self.data = data
        self.epoch = [0] * world
        self.prev = [0] * world
        self.signals: dict[tuple[str, int], list[Signal]] = {}
        self.buffers: dict[tuple[str, int], np.ndarray] = {}
        self.locations: dict[tuple, Location] = {}

    def signal(self, sym: str, owner: int, slot: int) -> Signal:
        slots = self.signals.get((sym, owner))
        if slots is None:
            slots = self.signals[(sym, owner)] = [Signal() for _ in range(self.world)]
        return slots[slot]

    def location(self, key: tuple) -> Location:
        loc = self.locations.get(key)
        if loc is None:
            loc = self.locations[key] = Location()
        return loc


# -- the coroutine interpreter ----------------------------------------------

Wait = tuple[Callable[[], bool], Callable[[], list[tuple[str, int, int, int, int]]], str]


class Thread:
    def __init__(self, tid: int, rank: int, role: str, nthreads: int):
        self.tid = tid
        self.rank = rank
        self.role = role
        self.clock = Clock(nthreads)
        self.gen: Generator[Wait | None, None, None] | None = None
        self.pending: Wait | None = None
        self.done = False

    def tick(self) -> int:
        self.clock.v[self.tid] += 1
        return self.clock.v[self.tid]

    @property
    def name(self) -> str:
        return f"rank {self.rank} ({self.role})"


def _nth(op: Operation, ph: PhaseState, rank: int, items: Sequence, i: int, what: str):
    """Item `i` of `rank`'s units or groups (`what`) in phase `ph`."""
    if not 0 <= i < len(items):
        raise SnacExecutionError(
            f"{where(op)}: rank {rank} has {len(items)} {what}s in phase "
            f"'{ph.op.sym_name.data}', no {what} {i}"
        )
    return items[i]


class Execution(IndexEvaluator):
    """Runs one snac.program for every rank, `calls` times in a row."""

    def __init__(
        self,
        program: snac.ProgramOpBase,
        world: World,
        args: dict[SSAValue, list[np.ndarray]] | None,
        counts: Sequence | None,
        rng: random.Random,
        shrink: bool = False,
    ):
        self.program = program
        self.shrink = shrink
        self.w = world
        self.args = args
        self.rng = rng
        self.phases: dict[str, PhaseState] = {}
        self.dtype = None
        if args is not None:
            self.dtype = args[program.input][0].dtype
        self._declare(counts)

    # -- declarations ------------------------------------------------------

    def _declare(self, counts: Sequence | None) -> None:
        self.phases = phase_states(self.program, self.w.world, counts, self.shrink)
        if not self.w.data:
            return
        import numpy as np

        for ph in self.phases.values():
            buf = ph.buffer
            for r in range(self.w.world):
                key = (buf.sym_name.data, r)
                if key not in self.w.buffers:
                    self.w.buffers[key] = np.zeros(
                        (2, buf.slots.value.data, buf.elems.value.data), dtype=self.dtype
                    )

    # -- running -----------------------------------------------------------

    def run_call(self, threads_per_rank: int, base_tid: list[int], clocks: list[list[int]],
                 nthreads: int) -> list[list[int]]:
        """One call on every rank; returns each rank's clock at the end of the call."""
        threads: list[Thread] = []
        advances: list[int] = [0] * self.w.world
        for rank in range(self.w.world):
            env: dict[SSAValue, Any] = {}
            roles = 0
            for op in self.program.body.block.ops:
                if isinstance(op, snac.RoleOpBase):
                    t = Thread(base_tid[rank] + roles, rank, op.kind.data.value, nthreads)
                    t.clock.join(clocks[rank])
                    t.tick()
                    t.gen = self._run_block(op.body.block, dict(env), t)
                    threads.append(t)
                    roles += 1
                elif isinstance(op, snac.AdvanceOp):
                    advances[rank] = env[op.amount]
                elif isinstance(op, (snac.BufferOp, snac.SignalsOp, snac.PhaseOp)):
                    continue
                else:
                    self._eval(op, env, rank)
            if roles > threads_per_rank:
                raise SnacExecutionError("internal: more roles than thread ids")
        self._schedule(threads)
        if len(set(advances)) != 1:
            detail = ", ".join(f"rank {r}: {a}" for r, a in enumerate(advances))
            raise ProtocolViolation(
                f"{where(self.program)}: epochs advance differently on different ranks "
                f"(by {detail}) at epoch {self.w.epoch[0]}; every rank must advance by the "
                "global maximum"
            )
        joined: list[list[int]] = []
        for rank in range(self.w.world):
            c = Clock(nthreads)
            c.join(clocks[rank])
            for t in threads:
                if t.rank == rank:
                    c.join(t.clock.v)
            joined.append(c.v)
            self.w.prev[rank] = self.w.epoch[rank]
            self.w.epoch[rank] += advances[rank]
        return joined

    def _schedule(self, threads: list[Thread]) -> None:
        live = [t for t in threads]
        while live:
            runnable = [t for t in live if t.pending is None or t.pending[0]()]
            if not runnable:
                raise self._deadlock(live, threads)
            t = self.rng.choice(runnable)
            # Run it for a random burst: interleavings still vary by seed,
            # with fewer scans of the runnable set.
            for _ in range(self.rng.randint(1, MAX_BURST)):
                if t.pending is not None and not t.pending[0]():
                    break
                t.pending = None
                try:
                    assert t.gen is not None
                    t.pending = next(t.gen)
                except StopIteration:
                    t.done = True
                    live.remove(t)
                    break

    def _deadlock(self, live: list[Thread], threads: list[Thread]) -> Deadlock:
        lines = []
        waits: dict[int, list[tuple[str, int, int, int, int]]] = {}
        for t in live:
            assert t.pending is not None
            waits[t.tid] = t.pending[1]()
        stored = self._stored_signals()
        for t in live:
            for sym, owner, writer, need, have in waits[t.tid]:
                if sym not in stored:
                    lines.append(
                        f"missing notify: {t.name} waits for {sym}[{writer}] on rank {owner} "
                        f">= {need} (epoch {self.w.epoch[t.rank]}), but no op of the program "
                        f"stores to {sym}"
                    )
                # A wait whose writer has finished its call can never be satisfied.
                elif not any(o.rank == writer and not o.done for o in threads):
                    lines.append(
                        f"missing notify: {t.name} waits for {sym}[{writer}] on rank {owner} "
                        f">= {need} (epoch {self.w.epoch[t.rank]}), but rank {writer} finished "
                        f"the call having stored {have}"
                    )
        if not lines:
            cycle = _find_cycle(live, waits)
            desc = " -> ".join(
                f"{t.name} waiting for {w[0]}[{w[2]}] >= {w[3]} (has {w[4]})" for t, w in cycle
            )
            lines.append(f"deadlock: cycle of waits at epoch {self.w.epoch[0]}: {desc} -> back")
        more = f" (and {len(lines) - 1} more blocked waits)" if len(lines) > 1 else ""
        return Deadlock(f"{where(self.program)}: {lines[0]}{more}")

    def _stored_signals(self) -> set[str]:
        """Signals (and packet windows) some op of the program writes."""
        stored: set[str] = set()
        for op in self.program.body.walk():
            if isinstance(op, snac.NotifyOpBase):
                stored.add(self._phase(op).ready)
            elif isinstance(op, (snac.AckOpBase, snac.FinishOpBase)):
                stored.add(self._phase(op).free)
            elif isinstance(op, snac.PutOpBase):
                stored.add(f"@{self._phase(op).buffer.sym_name.data} packets")
        return stored

    # -- block and op evaluation ------------------------------------------

    def _run_block(self, block: Block, env: dict[SSAValue, Any], t: Thread):
        for op in block.ops:
            if isinstance(op, scf.ForOp):
                lb, ub, step = env[op.lb], env[op.ub], env[op.step]
                for i in range(lb, ub, step):
                    env[op.body.block.args[0]] = i
                    yield from self._run_block(op.body.block, env, t)
            elif isinstance(op, scf.YieldOp):
                continue
            elif isinstance(op, snac.RoleOpBase):
                raise SnacExecutionError(f"{where(op)}: roles cannot nest")
            else:
                step = self._step(op, env, t)
                if step is not None:
                    yield from step

    def _eval(self, op: Operation, env: dict[SSAValue, Any], rank: int) -> None:
        if not self.eval_index(op, env, rank):
            raise SnacExecutionError(f"{where(op)}: the simulator cannot execute '{op.name}'")

    def epoch_values(self, rank: int) -> tuple[int, int]:
        return self.w.epoch[rank], self.w.prev[rank]

    def _step(self, op: Operation, env: dict[SSAValue, Any], t: Thread):
        """Evaluate `op`; protocol ops return a generator that yields waits."""
        if isinstance(op, snac.ReclaimOpBase):
            return self._reclaim(op, env, t)
        if isinstance(op, snac.WaitOpBase):
            return self._wait(op, env, t)
        if isinstance(op, snac.StageOpBase):
            self._stage(op, env, t)
        elif isinstance(op, snac.PutOpBase):
            self._put(op, env, t)
        elif isinstance(op, snac.NotifyOpBase):
            self._notify(op, env, t)
        elif isinstance(op, snac.ConsumeOpBase):
            self._consume(op, env, t)
        elif isinstance(op, snac.AckOpBase):
            self._ack(op, env, t)
        elif isinstance(op, snac.FinishOpBase):
            self._finish(op, env, t)
        elif isinstance(op, atom.FenceOp):
            # Release stores carry this block's writes in this model.
            pass
        else:
            self._eval(op, env, t.rank)
            return None
        return _yield_once()

    # -- protocol steps ----------------------------------------------------

    def _unit(self, op: Operation, ph: PhaseState, rank: int, u: int):
        return _nth(op, ph, rank, ph.plan.units[rank], u, "unit")

    def _group(self, op: Operation, ph: PhaseState, rank: int, g: int):
        return _nth(op, ph, rank, ph.plan.groups[rank], g, "group")

    def _store(self, t: Thread, sig: Signal, value: int, release: bool, what: str, op: Operation) -> None:
        if value < sig.value:
            raise ProtocolViolation(
                f"{where(op)}: {t.name} stores {value} into {what}, which already holds "
                f"{sig.value}: flags must only grow"
            )
        t.tick()
        sig.value = value
        sig.clock = t.clock.copy() if release else None

    def _await(self, t: Thread, conds: list[tuple[Signal, int, str, int, int]], acquire: bool):
        """Yield until every (signal, need) holds, then acquire their stores."""

        def ready() -> bool:
            return all(s.value >= need for s, need, *_ in conds)

        def blocked() -> list[tuple[str, int, int, int, int]]:
            return [(sym, owner, writer, need, s.value)
                    for s, need, sym, owner, writer in conds if s.value < need]

        if not ready():
            yield (ready, blocked, "wait")
        if acquire:
            for s, *_ in conds:
                t.clock.join(s.clock)
        t.tick()

    def _reclaim(self, op: snac.ReclaimOp, env, t: Thread):
        ph = self._phase(op)
        rank, u = env[op.rank], env[op.unit]
        self._unit(op, ph, rank, u)
        slots = ph.buffer.slots.value.data
        staged = ph.buffer.kind.data == snac.BufferKind.STAGING
        if staged and u >= slots:
            prior = ph.plan.units[rank][u - slots]
            need = env[op.epoch] + (u - slots) + 1
            readers = prior.consumers
        elif u == 0:
            need = env[op.prev]
            readers = tuple(d for d in range(self.w.world) if d != rank)
        else:
            return
        conds = [(self.w.signal(ph.free, rank, d), need, ph.free, rank, d) for d in readers]
        yield from self._await(t, conds, op.order.data == snac.MemoryOrder.ACQUIRE)

    def _stage(self, op: snac.StageOp, env, t: Thread) -> None:
        ph = self._phase(op)
        rank, u, half = env[op.rank], env[op.unit], env[op.half]
        unit = self._unit(op, ph, rank, u)
        slot = u % ph.buffer.slots.value.data
        key = ("stage", ph.buffer.sym_name.data, rank, half, slot)
        self._write(t, key, (ph.op.sym_name.data, rank, u, self.w.epoch[rank]), op,
                    f"@{ph.buffer.sym_name.data} of rank {rank} half {half} slot {slot}")
        if self.w.data:
            src = self._source(ph, rank)
            self.w.buffers[(ph.buffer.sym_name.data, rank)][half, slot, : unit.size] = src[
                unit.src_offset : unit.src_offset + unit.size
            ]

    def _source(self, ph: PhaseState, rank: int) -> np.ndarray:
        assert self.args is not None
        v = self.program.input if ph.op.source.data == snac.PhaseSource.INPUT else self.program.output
        return self.args[v][rank]

    def _put(self, op: snac.PutOp, env, t: Thread) -> None:
        ph = self._phase(op)
        rank, u, half, flag = env[op.rank], env[op.unit], env[op.half], env[op.flag]
        unit = self._unit(op, ph, rank, u)
        off = ph.window_offsets[rank][u]
        buf = ph.buffer.sym_name.data
        for d in unit.consumers:
            key = ("win", buf, d, half, rank, u)
            self._write(t, key, (ph.op.sym_name.data, rank, u, flag), op,
                        f"@{buf} of rank {d} half {half} source {rank} unit {u}")
            # Data and flag travel in one 16-byte store: the put's clock is
            # what a reader of the packet synchronises with.
            loc = self.w.location(key)
            loc.write_clock = t.clock.copy()
            if self.w.data:
                src = self._source(ph, rank)
                self.w.buffers[(buf, d)][half, rank, off : off + unit.size] = src[
                    unit.src_offset : unit.src_offset + unit.size
                ]

    def _notify(self, op: snac.NotifyOp, env, t: Thread) -> None:
        ph = self._phase(op)
        rank, u, value = env[op.rank], env[op.unit], env[op.value]
        unit = self._unit(op, ph, rank, u)
        release = op.order.data == snac.MemoryOrder.RELEASE
        for d in unit.consumers:
            self._store(t, self.w.signal(ph.ready, d, rank), value, release,
                        f"{ph.ready}[{rank}] on rank {d}", op)

    def _wait(self, op: snac.WaitOp, env, t: Thread):
        ph = self._phase(op)
        rank, g, epoch = env[op.rank], env[op.group], env[op.epoch]
        group = self._group(op, ph, rank, g)
        acquire = op.order.data == snac.MemoryOrder.ACQUIRE
        if ph.buffer.kind.data == snac.BufferKind.STAGING:
            conds = [
                (self.w.signal(ph.ready, rank, s.rank), epoch + s.unit + 1, ph.ready, rank, s.rank)
                for s in group.remote
            ]
            yield from self._await(t, conds, acquire)
        else:
            yield from self._await_packets(ph, group, rank, epoch, t, acquire)
        env[op.token] = Token(ph.op.sym_name.data, g, rank, epoch)

    def _await_packets(self, ph: PhaseState, group, rank: int, epoch: int, t: Thread, acquire: bool):
        buf = ph.buffer.sym_name.data
        half = epoch % 2
        keys = [("win", buf, rank, half, s.rank, s.unit) for s in group.remote]

        def ready() -> bool:
            for k in keys:
                loc = self.w.locations.get(k)
                if loc is None or loc.tag is None or loc.tag[3] < epoch + 1:
                    return False
            return True

        def blocked():
            out = []
            for k, s in zip(keys, group.remote):
                loc = self.w.locations.get(k)
                have = loc.tag[3] if loc is not None and loc.tag is not None else 0
                if have < epoch + 1:
                    out.append((f"@{buf} packets", rank, s.rank, epoch + 1, have))
            return out

        if not ready():
            yield (ready, blocked, "packets")
        for k in keys:
            # A packet is read with its flag: acquire or not, its data is the put's.
            t.clock.join(self.w.locations[k].write_clock)
        t.tick()

    def _consume(self, op: snac.ConsumeOp, env, t: Thread) -> None:
        ph = self._phase(op)
        rank, g, half = env[op.rank], env[op.group], env[op.half]
        tok: Token = env[op.token]
        name = ph.op.sym_name.data
        if (tok.phase, tok.group, tok.rank) != (name, g, rank):
            raise ProtocolViolation(
                f"{where(op)}: rank {rank} consumes group {g} of phase '{name}' with the token "
                f"of a wait for group {tok.group} of phase '{tok.phase}'"
            )
        group = self._group(op, ph, rank, g)
        buf = ph.buffer.sym_name.data
        staged = ph.buffer.kind.data == snac.BufferKind.STAGING
        slots = ph.buffer.slots.value.data
        pieces: list[np.ndarray] = []
        for s in group.sources:
            if s.unit is None:
                if self.w.data:
                    src = self._source(ph, rank)
                    pieces.append(src[s.offset : s.offset + group.size])
                continue
            expect = (name, s.rank, s.unit, tok.epoch + 1 if not staged else tok.epoch)
            if staged:
                key = ("stage", buf, s.rank, half, s.unit % slots)
                what = f"@{buf} of rank {s.rank} half {half} slot {s.unit % slots}"
            else:
                key = ("win", buf, rank, half, s.rank, s.unit)
                what = f"@{buf} of rank {rank} half {half} source {s.rank} unit {s.unit}"
            self._read(t, key, expect, op, what, rank)
            if self.w.data:
                if staged:
                    pieces.append(self.w.buffers[(buf, s.rank)][half, s.unit % slots, : group.size])
                else:
                    off = ph.window_offsets[s.rank][s.unit]
                    pieces.append(self.w.buffers[(buf, rank)][half, s.rank, off : off + group.size])
        if not self.w.data:
            return
        assert self.args is not None
        out = self.args[self.program.output][rank]
        kind = ph.op.consume.kind
        if kind is None:
            out[group.dst_offset : group.dst_offset + group.size] = pieces[0]
        else:
            from purlin.sim.reference import reduce_f32

            out[group.dst_offset : group.dst_offset + group.size] = reduce_f32(pieces, kind.value)

    def _ack(self, op: snac.AckOp, env, t: Thread) -> None:
        ph = self._phase(op)
        rank, g, epoch = env[op.rank], env[op.group], env[op.epoch]
        group = self._group(op, ph, rank, g)
        release = op.order.data == snac.MemoryOrder.RELEASE
        for s in group.remote:
            self._store(t, self.w.signal(ph.free, s.rank, rank), epoch + s.unit + 1, release,
                        f"{ph.free}[{rank}] on rank {s.rank}", op)

    def _finish(self, op: snac.FinishOp, env, t: Thread) -> None:
        ph = self._phase(op)
        rank, value = env[op.rank], env[op.value]
        release = op.order.data == snac.MemoryOrder.RELEASE
        for d in range(self.w.world):
            if d != rank:
                self._store(t, self.w.signal(ph.free, d, rank), value, release,
                            f"{ph.free}[{rank}] on rank {d}", op)

    # -- race and staleness checks ------------------------------------------

    def _hb(self, a: Access | None, t: Thread) -> bool:
        return a is None or a.tid == t.tid or t.clock.v[a.tid] >= a.stamp

    def _write(self, t: Thread, key: tuple, tag: tuple, op: Operation, what: str) -> None:
        loc = self.w.location(key)
        stamp = t.tick()
        for r in loc.reads.values():
            if not self._hb(r, t):
                raise ProtocolViolation(
                    f"{where(op)}: race: {t.name} overwrites {what} with unit {tag[2]} of epoch "
                    f"{tag[3]} while {r.what} may still read it (no acknowledgement orders the "
                    "read before this write)"
                )
        if not self._hb(loc.write, t):
            assert loc.write is not None
            raise ProtocolViolation(
                f"{where(op)}: race: {t.name} and {loc.write.what} write {what} unordered"
            )
        loc.tag = tag
        loc.write = Access(t.tid, stamp, f"{t.name} at epoch {tag[3]}")
        loc.reads = {}

    def _read(self, t: Thread, key: tuple, expect: tuple, op: Operation, what: str, rank: int) -> None:
        loc = self.w.location(key)
        if loc.tag != expect:
            if loc.tag is not None and (loc.tag[3], loc.tag[2]) > (expect[3], expect[2]):
                raise ProtocolViolation(
                    f"{where(op)}: reused too early: {what} was overwritten with unit "
                    f"{loc.tag[2]} of epoch {loc.tag[3]} before rank {rank} read unit "
                    f"{expect[2]} of epoch {expect[3]} from it"
                )
            have = "nothing" if loc.tag is None else f"unit {loc.tag[2]} of epoch {loc.tag[3]}"
            raise ProtocolViolation(
                f"{where(op)}: read before wait: rank {rank} reads {what} expecting unit "
                f"{expect[2]} of epoch {expect[3]} from rank {expect[1]}, but it holds {have}"
            )
        if not self._hb(loc.write, t):
            raise ProtocolViolation(
                f"{where(op)}: race: {t.name} reads {what} (unit {expect[2]}, epoch {expect[3]}) "
                "without synchronising with its producer: the notify or the wait is not "
                "release/acquire"
            )
        loc.reads[t.tid] = Access(t.tid, t.tick(), f"{t.name} at epoch {expect[3]}")


def _yield_once():
    yield None


def _find_cycle(live: list[Thread], waits) -> list[tuple[Thread, tuple]]:
    by_rank: dict[int, list[Thread]] = {}
    for t in live:
        by_rank.setdefault(t.rank, []).append(t)
    for start in live:
        path: list[tuple[Thread, tuple]] = []
        seen: dict[int, int] = {}
        t = start
        while t.tid not in seen:
            seen[t.tid] = len(path)
            w = waits[t.tid][0]
            path.append((t, w))
            nxt = by_rank.get(w[2])
            if not nxt:
                break
            t = nxt[0]
        else:
            return path[seen[t.tid]:]
    return [(live[0], waits[live[0].tid][0])]


def phase_states(program: snac.ProgramOpBase, world: int, counts: Sequence | None,
                 shrink: bool = False) -> dict[str, PhaseState]:
    """Each phase's units and groups for `world` ranks, checked against its buffer.

    `shrink` cuts slices to slots + 1 units: the program does the same per
    unit at any size, so that covers slot reuse (and three calls half reuse).
    """
    buffers = {op.sym_name.data: op for op in program.body.block.ops if isinstance(op, snac.BufferOp)}
    phases: dict[str, PhaseState] = {}
    for op in program.body.block.ops:
        if not isinstance(op, snac.PhaseOp):
            continue
        src = _bind(op.src_layout.to_layout(), counts, op)
        dst = _bind(op.dst_layout.to_layout(), counts, op)
        buf = buffers[op.buffer.string_value()]
        if shrink and op.chunk.value.data > 0:
            cap = op.chunk.value.data * (buf.slots.value.data + 1)
            src, dst = src.clamped(cap), dst.clamped(cap)
        src, dst = route_layouts(src, dst, None if op.route is None else op.route.data.value)
        plan = PhasePlan(
            world, src, dst, op.consume.kind is not None, op.chunk.value.data,
            op.deterministic is not None,
            keep_unread=op.source.data == snac.PhaseSource.OUTPUT,
            stage_local=op.stage_local is not None,
        )
        align = packet_elems(element_bytes(buf.elem_type))
        offsets = [plan.window_offsets(r, align) for r in range(world)]
        ph = PhaseState(op, plan, buf, op.ready.string_value(), op.free.string_value(), offsets)
        _check_capacity(ph, world)
        phases[op.sym_name.data] = ph
    return phases


def _check_capacity(ph: PhaseState, world: int) -> None:
    buf = ph.buffer
    elems = buf.elems.value.data
    if buf.kind.data == snac.BufferKind.STAGING:
        need = ph.plan.max_unit_elems
        what = "unit"
    else:
        need = ph.plan.window_elems(packet_elems(element_bytes(buf.elem_type)))
        what = "per-source window"
        if buf.slots.value.data < world:
            raise SnacExecutionError(
                f"{where(buf)}: packet window '{buf.sym_name.data}' has "
                f"{buf.slots.value.data} source slots, world {world} needs one per rank"
            )
    if need > elems:
        raise SnacExecutionError(
            f"{where(buf)}: buffer '{buf.sym_name.data}' holds {elems} elements per slot "
            f"but a {what} of phase '{ph.op.sym_name.data}' needs {need}"
        )


def _bind(layout: Layout, counts: Sequence | None, op: Operation) -> Layout:
    if not layout.is_dynamic:
        return layout
    if counts is None:
        raise SnacExecutionError(f"{where(op)}: dynamic layout needs counts at run time")
    return layout.bind(counts)


# -- entry points -------------------------------------------------------------


def execute(
    program: snac.ProgramOpBase,
    *,
    args: dict[SSAValue, list[np.ndarray]] | None = None,
    counts: Sequence | None = None,
    calls: int = 1,
    seed: int = 0,
    world_state: World | None = None,
    shrink: bool = False,
) -> None:
    """Run `program` on every rank `calls` times; data moves when `args` is given.

    `args` maps the program's input/output SSA values to one array per rank.
    Raises Deadlock, ProtocolViolation or SnacExecutionError.
    """
    world = program.world_size
    state = world_state or World(world, data=args is not None)
    if shrink and args is not None:
        raise SnacExecutionError("only a run without data can shrink slices")
    ex = Execution(program, state, args, counts, random.Random(seed), shrink)
    roles = sum(isinstance(op, snac.RoleOpBase) for op in program.body.block.ops)
    nthreads = world * max(roles, 1)
    base = [r * max(roles, 1) for r in range(world)]
    clocks = [[0] * nthreads for _ in range(world)]
    for _ in range(calls):
        clocks = ex.run_call(max(roles, 1), base, clocks, nthreads)


def verify_program(program: snac.ProgramOpBase, calls: int = 3, seeds: Sequence[int] = (0, 1, 2),
                   counts: Sequence | None = None) -> None:
    """Check the protocol for the program's world size without moving data."""
    for seed in seeds:
        execute(program, counts=counts, calls=calls, seed=seed, shrink=True)


def sample_counts(program: snac.ProgramOpBase) -> list[Sequence | None]:
    """Counts to verify a dynamic program with: equal ones, and some zeros."""
    dyn = None
    for op in program.body.block.ops:
        if isinstance(op, snac.PhaseOp) and op.src_layout.to_layout().is_dynamic:
            dyn = op.src_layout.to_layout()
    if dyn is None:
        return [None]
    w = program.world_size
    if dyn.matrix_counts:
        return [[[1] * w for _ in range(w)], [[(s + d) % 3 for d in range(w)] for s in range(w)]]
    return [[1] * w, [(r % 3) * 2 for r in range(w)]]

