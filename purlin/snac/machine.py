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
from bisect import insort
from collections.abc import Callable, Generator, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.ir import Block, Operation, SSAValue

from purlin.coll.dialect import element_bytes
from purlin.coll.layouts import Layout
from purlin.diagnostics import where
from purlin.snac import dialect as snac
from purlin.snac.index_eval import BINARY, IndexEvaluator
from purlin.snac.protocol import PhasePlan, packet_elems, route_layouts


class SnacExecutionError(Exception):
    """The program cannot run as written (bad operands, out-of-range units)."""


class ProtocolViolation(SnacExecutionError):
    """A race, a stale read, or ranks that disagree on the epoch."""


class Deadlock(SnacExecutionError):
    """No role can make progress."""


# Most protocol steps a role takes before the scheduler picks again.
MAX_BURST = 8

# What a compiled op of a role is (see Execution._compiled).
_PROTOCOL, _WAITS, _ARITH, _FOR, _NEXT, _FENCE, _NESTED_ROLE, _INDEX = range(8)


class _View:
    """An op whose attributes are read from it once, then kept: the protocol
    steps read the same operands and properties at every step."""

    def __init__(self, op: Operation):
        self._op = op

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._op, name)
        setattr(self, name, value)
        return value


# -- vector clocks -----------------------------------------------------------


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


@dataclass(slots=True)
class Signal:
    value: int = 0
    clock: np.ndarray | None = None  # clock of the last release store


@dataclass(slots=True)
class Access:
    tid: int
    stamp: int
    who: str
    epoch: int

    @property
    def what(self) -> str:
        return f"{self.who} at epoch {self.epoch}"


@dataclass(slots=True)
class Location:
    """A staging slot or a window region, for race and staleness checks."""

    tag: tuple | None = None  # (phase, producer, unit, epoch) last written
    write: Access | None = None
    write_clock: np.ndarray | None = None  # packets: the put's clock, joined by waits
    reads: dict[int, Access] = field(default_factory=dict)


@dataclass(slots=True)
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
    # Read from the ops once: their IRDL accessors are slow at a step's rate.
    name: str = field(init=False)
    buf: str = field(init=False)
    slots: int = field(init=False)
    staged: bool = field(init=False)
    from_input: bool = field(init=False)
    reduce: str | None = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.op.sym_name.data
        self.buf = self.buffer.sym_name.data
        self.slots = self.buffer.slots.value.data
        self.staged = self.buffer.kind.data == snac.BufferKind.STAGING
        self.from_input = self.op.source.data == snac.PhaseSource.INPUT
        kind = self.op.consume.kind
        self.reduce = None if kind is None else kind.value


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
        return self.slots(sym, owner)[slot]

    def slots(self, sym: str, owner: int) -> list[Signal]:
        """Rank `owner`'s signal array `sym`."""
        slots = self.signals.get((sym, owner))
        if slots is None:
            slots = self.signals[(sym, owner)] = [Signal() for _ in range(self.world)]
        return slots

    def location(self, key: tuple) -> Location:
        loc = self.locations.get(key)
        if loc is None:
            loc = self.locations[key] = Location()
        return loc


# -- the coroutine interpreter ----------------------------------------------

# (ready, what blocks it, kind, the keys of what it still waits for: a
# Signal's id or a window location's key, whose stores may make it ready).
Wait = tuple[
    Callable[[], bool],
    Callable[[], list[tuple[str, int, int, int, int]]],
    str,
    Callable[[], list[Hashable]],
]


class Thread:
    def __init__(self, tid: int, rank: int, role: str, nthreads: int):
        self.tid = tid
        self.rank = rank
        self.role = role
        self.name = f"rank {rank} ({role})"
        self.clock = Clock(nthreads)
        self.stamp = 0  # own entry of the clock, which only the thread's ticks move
        self.gen: Generator[Wait | None, None, None] | None = None
        self.pending: Wait | None = None
        self.done = False
        self.watching: set[Hashable] = set()

    def tick(self) -> int:
        self.stamp += 1
        self.clock.v[self.tid] = self.stamp
        return self.stamp


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
        phases: dict[str, PhaseState] | None = None,
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
        # Blocked threads by what they wait for, and those a store may have readied.
        self._watchers: dict[Hashable, list[Thread]] = {}
        self._woken: list[Thread] = []
        self._blocks: dict[Block, list[tuple[int, Any, Any]]] = {}
        self._declare(counts, phases)

    # -- declarations ------------------------------------------------------

    def _declare(self, counts: Sequence | None, phases: dict[str, PhaseState] | None) -> None:
        if phases is None:
            phases = phase_states(self.program, self.w.world, counts, self.shrink)
        self.phases = phases
        if not self.w.data:
            return
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
                    t.stamp = int(t.clock.v[t.tid])
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
        """Pick a runnable thread at random and run it for a random burst, until all finish.

        The runnable threads are kept in thread order, as a scan of all live
        threads would list them: a blocked thread is looked at again only when
        a store to what it waits for may have readied it (waits only become
        ready: flags and epochs only grow), so a step costs what it changes,
        not the world size.
        """
        live = list(threads)
        position = {t.tid: i for i, t in enumerate(threads)}
        runnable = list(threads)
        self._watchers, self._woken = {}, []
        blocked: set[int] = set()
        while live:
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
            if t.done or (t.pending is not None and not t.pending[0]()):
                runnable.remove(t)
                if not t.done:
                    blocked.add(t.tid)
                    self._watch(t)
            woken, self._woken = self._woken, []
            for o in dict.fromkeys(woken):
                if o.tid in blocked:
                    assert o.pending is not None
                    if o.pending[0]():
                        blocked.discard(o.tid)
                        o.watching.clear()
                        insort(runnable, o, key=lambda x: position[x.tid])
                    else:
                        self._watch(o)

    def _watch(self, t: Thread) -> None:
        """Register blocked `t` with what it still waits for (once per key)."""
        assert t.pending is not None
        for key in t.pending[3]():
            if key not in t.watching:
                t.watching.add(key)
                self._watchers.setdefault(key, []).append(t)

    def _wake(self, key: Hashable) -> None:
        """A store to `key`: the threads waiting for it may be ready."""
        if waiting := self._watchers.pop(key, None):
            for t in waiting:
                t.watching.discard(key)
            self._woken += waiting

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
        code = self._compiled(block)
        loops: list[tuple[Any, SSAValue, int]] = []  # (iterations left, induction var, body start)
        pc = 0
        while pc < len(code):
            kind, op, how = code[pc]
            pc += 1
            if kind is _PROTOCOL:
                how(op, env, t)
                yield None
            elif kind is _ARITH:
                how(env)
            elif kind is _WAITS:
                waiting = how(op, env, t)
                if waiting is not None:
                    yield from waiting
            elif kind is _FOR:
                lb, ub, step, iv, end = how
                left = iter(range(env[lb], env[ub], env[step]))
                i = next(left, None)
                if i is None:
                    pc = end
                else:
                    env[iv] = i
                    loops.append((left, iv, pc))
            elif kind is _NEXT:
                left, iv, start = loops[-1]
                i = next(left, None)
                if i is None:
                    loops.pop()
                else:
                    env[iv] = i
                    pc = start
            elif kind is _FENCE:
                yield None
            elif kind is _NESTED_ROLE:
                raise SnacExecutionError(f"{where(op)}: roles cannot nest")
            else:
                self._eval(op, env, t.rank)

    def _compiled(self, block: Block) -> list[tuple[int, Any, Any]]:
        """`block`'s ops as (kind, op, how to run it), decided once per block:
        dispatching on op classes and reading operands through IRDL at every
        step costs more than the step at large worlds. Loops are inlined: a
        _FOR entry gives where its body ends, after the _NEXT that repeats it."""
        steps = self._blocks.get(block)
        if steps is None:
            steps = self._blocks[block] = []
            self._compile_into(block, steps)
        return steps

    def _compile_into(self, block: Block, steps: list[tuple[int, Any, Any]]) -> None:
        for op in block.ops:
            if isinstance(op, scf.ForOp):
                at = len(steps)
                steps.append((_FOR, op, None))
                self._compile_into(op.body.block, steps)
                steps.append((_NEXT, op, None))
                steps[at] = (_FOR, op, (op.lb, op.ub, op.step, op.body.block.args[0], len(steps)))
            elif isinstance(op, scf.YieldOp):
                continue
            elif isinstance(op, snac.RoleOpBase):
                steps.append((_NESTED_ROLE, op, None))
            elif isinstance(op, snac.FenceOpBase):
                # Release stores carry this block's writes in this model.
                steps.append((_FENCE, op, None))
            elif (waits := self._waiting_step(op)) is not None:
                steps.append((_WAITS, self._view(op), waits))
            elif (step := self._protocol_step(op)) is not None:
                steps.append((_PROTOCOL, self._view(op), step))
            elif (arith_step := self._arith_step(op)) is not None:
                steps.append((_ARITH, op, arith_step))
            else:
                steps.append((_INDEX, op, None))

    def _view(self, op: Operation) -> _View:
        """`op` for the protocol steps, its phase (`ph`) looked up once."""
        view = _View(op)
        view.ph = self._phase(op)
        return view

    def _waiting_step(self, op: Operation):
        """The step of an op that may wait: it returns None when it did not
        have to wait, else a generator that yields the wait and completes it."""
        if isinstance(op, snac.ReclaimOpBase):
            return self._reclaim
        if isinstance(op, snac.WaitOpBase):
            return self._wait
        return None

    def _protocol_step(self, op: Operation):
        for cls, step in (
            (snac.StageOpBase, self._stage),
            (snac.PutOpBase, self._put),
            (snac.NotifyOpBase, self._notify),
            (snac.ConsumeOpBase, self._consume),
            (snac.AckOpBase, self._ack),
            (snac.FinishOpBase, self._finish),
        ):
            if isinstance(op, cls):
                return step
        return None

    def _arith_step(self, op: Operation):
        """Constants and binary integer ops, the index arithmetic inside loops."""
        if isinstance(op, arith.ConstantOp):
            result, value = op.result, op.value.value.data  # type: ignore[attr-defined]

            def constant(env):
                env[result] = value

            return constant
        fn = BINARY.get(type(op))
        if fn is None:
            return None
        result, lhs, rhs = op.result, op.lhs, op.rhs  # type: ignore[attr-defined]

        def binary(env):
            env[result] = self.binary(op, fn, env[lhs], env[rhs])

        return binary

    def _eval(self, op: Operation, env: dict[SSAValue, Any], rank: int) -> None:
        if not self.eval_index(op, env, rank):
            raise SnacExecutionError(f"{where(op)}: the simulator cannot execute '{op.name}'")

    def epoch_values(self, rank: int) -> tuple[int, int]:
        return self.w.epoch[rank], self.w.prev[rank]

    # -- protocol steps ----------------------------------------------------

    def _unit(self, op: Operation, ph: PhaseState, rank: int, u: int):
        units = ph.plan.units[rank]
        return units[u] if 0 <= u < len(units) else _nth(op, ph, rank, units, u, "unit")

    def _group(self, op: Operation, ph: PhaseState, rank: int, g: int):
        groups = ph.plan.groups[rank]
        return groups[g] if 0 <= g < len(groups) else _nth(op, ph, rank, groups, g, "group")

    def _store(self, t: Thread, sig: Signal, value: int, release: bool, what: Callable[[], str],
               op: Operation) -> None:
        if value < sig.value:
            raise ProtocolViolation(
                f"{where(op)}: {t.name} stores {value} into {what()}, which already holds "
                f"{sig.value}: flags must only grow"
            )
        t.tick()
        sig.value = value
        sig.clock = t.clock.copy() if release else None
        self._wake(id(sig))

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

    def _reclaim(self, op: snac.ReclaimOp, env, t: Thread):
        ph = op.ph
        rank, u = env[op.rank], env[op.unit]
        self._unit(op, ph, rank, u)
        slots = ph.slots
        if ph.staged and u >= slots:
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

    def _stage(self, op: snac.StageOp, env, t: Thread) -> None:
        ph = op.ph
        rank, u, half = env[op.rank], env[op.unit], env[op.half]
        unit = self._unit(op, ph, rank, u)
        slot = u % ph.slots
        key = ("stage", ph.buf, rank, half, slot)
        self._write(t, key, (ph.name, rank, u, self.w.epoch[rank]), op,
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

    def _put(self, op: snac.PutOp, env, t: Thread) -> None:
        ph = op.ph
        rank, u, half, flag = env[op.rank], env[op.unit], env[op.half], env[op.flag]
        unit = self._unit(op, ph, rank, u)
        off = ph.window_offsets[rank][u]
        buf = ph.buf
        for d in unit.consumers:
            key = ("win", buf, d, half, rank, u)
            self._write(t, key, (ph.name, rank, u, flag), op,
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

    def _notify(self, op: snac.NotifyOp, env, t: Thread) -> None:
        ph = op.ph
        rank, u, value = env[op.rank], env[op.unit], env[op.value]
        unit = self._unit(op, ph, rank, u)
        release = op.order.data == snac.MemoryOrder.RELEASE
        for d in unit.consumers:
            self._store(t, self.w.signal(ph.ready, d, rank), value, release,
                        lambda d=d: f"{ph.ready}[{rank}] on rank {d}", op)

    def _wait(self, op: snac.WaitOp, env, t: Thread):
        ph = op.ph
        rank, g, epoch = env[op.rank], env[op.group], env[op.epoch]
        group = self._group(op, ph, rank, g)
        acquire = op.order.data == snac.MemoryOrder.ACQUIRE
        env[op.token] = Token(ph.name, g, rank, epoch)
        if ph.staged:
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

    def _consume(self, op: snac.ConsumeOp, env, t: Thread) -> None:
        ph = op.ph
        rank, g, half = env[op.rank], env[op.group], env[op.half]
        tok: Token = env[op.token]
        name = ph.name
        if (tok.phase, tok.group, tok.rank) != (name, g, rank):
            raise ProtocolViolation(
                f"{where(op)}: rank {rank} consumes group {g} of phase '{name}' with the token "
                f"of a wait for group {tok.group} of phase '{tok.phase}'"
            )
        group = self._group(op, ph, rank, g)
        buf, staged, slots = ph.buf, ph.staged, ph.slots
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
                what = lambda s=s: f"@{buf} of rank {s.rank} half {half} slot {s.unit % slots}"  # noqa: E731
            else:
                key = ("win", buf, rank, half, s.rank, s.unit)
                what = lambda s=s: (  # noqa: E731
                    f"@{buf} of rank {rank} half {half} source {s.rank} unit {s.unit}"
                )
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
        if ph.reduce is None:
            out[group.dst_offset : group.dst_offset + group.size] = pieces[0]
        else:
            from purlin.coll.reference import reduce_parts

            out[group.dst_offset : group.dst_offset + group.size] = reduce_parts(pieces, ph.reduce)

    def _ack(self, op: snac.AckOp, env, t: Thread) -> None:
        ph = op.ph
        rank, g, epoch = env[op.rank], env[op.group], env[op.epoch]
        group = self._group(op, ph, rank, g)
        release = op.order.data == snac.MemoryOrder.RELEASE
        for s in group.remote:
            self._store(t, self.w.signal(ph.free, s.rank, rank), epoch + s.unit + 1, release,
                        lambda s=s: f"{ph.free}[{rank}] on rank {s.rank}", op)

    def _finish(self, op: snac.FinishOp, env, t: Thread) -> None:
        ph = op.ph
        rank, value = env[op.rank], env[op.value]
        release = op.order.data == snac.MemoryOrder.RELEASE
        for d in range(self.w.world):
            if d != rank:
                self._store(t, self.w.signal(ph.free, d, rank), value, release,
                            lambda d=d: f"{ph.free}[{rank}] on rank {d}", op)

    # -- race and staleness checks ------------------------------------------

    def _hb(self, a: Access | None, t: Thread) -> bool:
        return a is None or a.tid == t.tid or t.clock.v[a.tid] >= a.stamp

    def _write(self, t: Thread, key: tuple, tag: tuple, op: Operation, what: Callable[[], str]) -> None:
        """`what` names the location, for a diagnostic (formatted only then)."""
        loc = self.w.location(key)
        stamp = t.tick()
        for r in loc.reads.values():
            if not self._hb(r, t):
                raise ProtocolViolation(
                    f"{where(op)}: race: {t.name} overwrites {what()} with unit {tag[2]} of epoch "
                    f"{tag[3]} while {r.what} may still read it (no acknowledgement orders the "
                    "read before this write)"
                )
        if not self._hb(loc.write, t):
            assert loc.write is not None
            raise ProtocolViolation(
                f"{where(op)}: race: {t.name} and {loc.write.what} write {what()} unordered"
            )
        loc.tag = tag
        loc.write = Access(t.tid, stamp, t.name, tag[3])
        loc.reads = {}
        self._wake(key)

    def _read(self, t: Thread, key: tuple, expect: tuple, op: Operation, what: Callable[[], str],
              rank: int) -> None:
        loc = self.w.location(key)
        if loc.tag != expect:
            if loc.tag is not None and (loc.tag[3], loc.tag[2]) > (expect[3], expect[2]):
                raise ProtocolViolation(
                    f"{where(op)}: reused too early: {what()} was overwritten with unit "
                    f"{loc.tag[2]} of epoch {loc.tag[3]} before rank {rank} read unit "
                    f"{expect[2]} of epoch {expect[3]} from it"
                )
            have = "nothing" if loc.tag is None else f"unit {loc.tag[2]} of epoch {loc.tag[3]}"
            raise ProtocolViolation(
                f"{where(op)}: read before wait: rank {rank} reads {what()} expecting unit "
                f"{expect[2]} of epoch {expect[3]} from rank {expect[1]}, but it holds {have}"
            )
        if not self._hb(loc.write, t):
            raise ProtocolViolation(
                f"{where(op)}: race: {t.name} reads {what()} (unit {expect[2]}, epoch {expect[3]}) "
                "without synchronising with its producer: the notify or the wait is not "
                "release/acquire"
            )
        loc.reads[t.tid] = Access(t.tid, t.tick(), t.name, expect[3])


def _after(wait: Wait, then: Callable[[], None]):
    """Yield `wait` once; the scheduler resumes only when it is ready."""
    yield wait
    then()


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
    phases: dict[str, PhaseState] | None = None,
) -> None:
    """Run `program` on every rank `calls` times; data moves when `args` is given.

    `args` maps the program's input/output SSA values to one array per rank.
    `phases` are `phase_states(program, world, counts, shrink)` when already
    computed (they only depend on those). Raises Deadlock, ProtocolViolation
    or SnacExecutionError.
    """
    world = program.world_size
    state = world_state or World(world, data=args is not None)
    if shrink and args is not None:
        raise SnacExecutionError("only a run without data can shrink slices")
    ex = Execution(program, state, args, counts, random.Random(seed), shrink, phases)
    roles = sum(isinstance(op, snac.RoleOpBase) for op in program.body.block.ops)
    nthreads = world * max(roles, 1)
    base = [r * max(roles, 1) for r in range(world)]
    clocks = [[0] * nthreads for _ in range(world)]
    for _ in range(calls):
        clocks = ex.run_call(max(roles, 1), base, clocks, nthreads)


def verify_program(program: snac.ProgramOpBase, calls: int = 3, seeds: Sequence[int] = (0, 1, 2),
                   counts: Sequence | None = None) -> None:
    """Check the protocol for the program's world size without moving data."""
    phases = phase_states(program, program.world_size, counts, shrink=True)
    for seed in seeds:
        execute(program, counts=counts, calls=calls, seed=seed, shrink=True, phases=phases)


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

