"""Runs a `snac.program` (or an atom.kernel, whose ops share the protocol
ops' classes) for every rank: each role of each rank is a coroutine that
yields at each protocol step, under the seeded scheduler."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.ir import Block, Operation, SSAValue

from purlin.snac import dialect as snac
from purlin.simulator import scheduler
from purlin.simulator.deadlock import diagnose
from purlin.snac.errors import ProtocolViolation, SnacExecutionError
from purlin.simulator.happens_before import Clock, RaceChecker, Thread
from purlin.snac.index_eval import BINARY, IndexEvaluator
from purlin.snac.phase_binding import PhaseState, phase_states
from purlin.simulator.protocol_steps import ProtocolSteps
from purlin.simulator.symmetric_memory import World
from purlin.simulator.user_buffers import UserBuffers

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


class _Watchers(scheduler.Wakeups):
    """Blocked threads by what they wait for (a signal's id, a window
    location's key), and those a store may have readied since the last look."""

    def __init__(self) -> None:
        self.by_key: dict[Hashable, list[Thread]] = {}
        self.woken_since: list[Thread] = []

    def blocked(self, task: scheduler.Task) -> None:
        """Register blocked `task` with what it still waits for (once per key)."""
        assert isinstance(task, Thread) and task.pending is not None
        for key in task.pending[3]():
            if key not in task.watching:
                task.watching.add(key)
                self.by_key.setdefault(key, []).append(task)

    def unblocked(self, task: scheduler.Task) -> None:
        assert isinstance(task, Thread)
        task.watching.clear()

    def woken(self, blocked: dict[int, scheduler.Task]) -> list[Thread]:
        woken, self.woken_since = self.woken_since, []
        return list(dict.fromkeys(woken))

    def wake(self, key: Hashable) -> None:
        """A store to `key`: the threads waiting for it may be ready."""
        if waiting := self.by_key.pop(key, None):
            for t in waiting:
                t.watching.discard(key)
            self.woken_since += waiting


class Execution(IndexEvaluator, ProtocolSteps):
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
        self._watchers = _Watchers()
        self.races = RaceChecker(world, self._wake)
        self.user = UserBuffers(world.world, program.input == program.output)
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
            if buf is None:
                continue
            for r in range(self.w.world):
                key = (buf.sym_name.data, r)
                if key not in self.w.buffers:
                    self.w.buffers[key] = np.zeros(
                        (2, buf.slots.value.data, buf.elems.value.data), dtype=self.dtype
                    )

    def rebind(self, phases: dict[str, PhaseState]) -> None:
        """The next calls' phases, bound to other counts (the compiled steps
        hold the phases they look up)."""
        self._declare(None, phases)
        self._blocks.clear()

    # -- running -----------------------------------------------------------

    def run_call(self, threads_per_rank: int, base_tid: list[int], clocks: list[list[int]],
                 nthreads: int) -> list[list[int]]:
        """One call on every rank; returns each rank's clock at the end of the
        call. Thread id base_tid[rank] + threads_per_rank is the rank's caller,
        which hands its buffers over at the call's start."""
        threads: list[Thread] = []
        advances: list[int] = [0] * self.w.world
        for rank in range(self.w.world):
            env: dict[SSAValue, Any] = {}
            roles = 0
            host = base_tid[rank] + threads_per_rank
            start = np.asarray(clocks[rank], dtype=np.int64).copy()
            start[host] += 1
            self.user.begin(rank, host, int(start[host]))
            for op in self.program.body.block.ops:
                if isinstance(op, snac.RoleOpBase):
                    t = Thread(base_tid[rank] + roles, rank, op.kind.data.value, nthreads)
                    t.clock.join(start)
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
                raise SnacExecutionError(None, "internal: more roles than thread ids")
        # A store wakes only the threads that wait for what it stored, so a
        # step costs what it changes, not the world size.
        self._watchers = _Watchers()
        scheduler.run(threads, self.rng,
                      lambda live: diagnose(self.program, self.phases, self.w.epoch, live, threads),
                      self._watchers)
        if len(set(advances)) != 1:
            detail = ", ".join(f"rank {r}: {a}" for r, a in enumerate(advances))
            raise ProtocolViolation(
                self.program, "epochs advance differently on different ranks "
                f"(by {detail}) at epoch {self.w.epoch[0]}; every rank must advance by the "
                "global maximum"
            )
        joined: list[list[int]] = []
        for rank in range(self.w.world):
            c = Clock(nthreads)
            c.join(clocks[rank])
            c.v[base_tid[rank] + threads_per_rank] += 1
            for t in threads:
                if t.rank == rank:
                    c.join(t.clock.v)
            self.user.end(rank, c.v, self.program)
            joined.append(c.v)
            self.w.prev[rank] = self.w.epoch[rank]
            self.w.epoch[rank] += advances[rank]
        return joined

    def _wake(self, key: Hashable) -> None:
        self._watchers.wake(key)

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
                raise SnacExecutionError(op, "roles cannot nest")
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
            elif (step := self._step(op)) is not None:
                steps.append((step[0], self._view(op), step[1]))
            elif (arith_step := self._arith_step(op)) is not None:
                steps.append((_ARITH, op, arith_step))
            else:
                steps.append((_INDEX, op, None))

    def _view(self, op: Operation) -> _View:
        """`op` for the protocol steps, its phase (`ph`) looked up once."""
        view = _View(op)
        view.ph = self._phase(op)
        return view

    def _step(self, op: Operation) -> tuple[int, Any] | None:
        """(_WAITS or _PROTOCOL, the step method) of a protocol op, or None.
        Looked up by the op's base classes: atom ops share snac's."""
        for cls in type(op).__mro__:
            if (found := _STEPS.get(cls)) is not None:
                kind, name = found
                return kind, getattr(self, name)
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
            raise SnacExecutionError(op, f"the simulator cannot execute '{op.name}'")

    def epoch_values(self, rank: int) -> tuple[int, int]:
        return self.w.epoch[rank], self.w.prev[rank]


# The step of each protocol op, by its base class. A _WAITS step returns None
# when it did not have to wait, else a generator that yields the wait and
# completes it; a _PROTOCOL step is done when it returns.
_STEPS: dict[type[Operation], tuple[int, str]] = {
    snac.ReclaimOpBase: (_WAITS, "_reclaim"),
    snac.WaitOpBase: (_WAITS, "_wait"),
    snac.StageOpBase: (_PROTOCOL, "_stage"),
    snac.PutOpBase: (_PROTOCOL, "_put"),
    snac.NotifyOpBase: (_PROTOCOL, "_notify"),
    snac.ConsumeOpBase: (_PROTOCOL, "_consume"),
    snac.AckOpBase: (_PROTOCOL, "_ack"),
    snac.FinishOpBase: (_PROTOCOL, "_finish"),
    snac.PushOpBase: (_PROTOCOL, "_push"),
    snac.GrantOpBase: (_PROTOCOL, "_grant"),
    snac.DrainOpBase: (_WAITS, "_drain"),
}
