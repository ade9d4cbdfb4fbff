"""Executes a Plan for every rank on numpy buffers, with the seeded scheduler
of the snac machine (purlin.simulator.scheduler).

Each (rank, role) is a coroutine over its instruction list; waits yield until
their condition holds, so interleavings vary with the seed. Memory is laid
out as the runtimes lay it out: staging (2 halves x slots x elems) and packet
windows (2 halves x sources x elems, with a flag per 8-byte packet). When no
role can move, the call fails naming every blocked wait (a runtime would time
out there).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import ml_dtypes  # noqa: F401  (registers bfloat16/float8 with numpy)
import numpy as np

from purlin import plan as P
from purlin.coll.reference import reduce_parts
from purlin.dtypes import numpy_dtype
from purlin.simulator import scheduler
from purlin.snac.protocol import PACKET_DATA_BYTES
from purlin.simulator.scheduler import Task


class PlanExecutionError(Exception):
    """The plan deadlocked or was given buffers that do not fit it."""


class PlanMachine:
    """Symmetric memory, signals and epochs of all ranks, kept across calls."""

    def __init__(self, plan: P.Plan):
        self.plan = plan
        self.dtype = numpy_dtype(plan.dtype)
        w = plan.world
        self.per_packet = PACKET_DATA_BYTES // plan.elem_bytes
        self.staging = [[np.zeros((2, b.slots, b.elems), self.dtype) for _ in range(w)]
                        for b in plan.buffers]
        self.flags = [[np.zeros((2, b.slots, -(-b.elems // self.per_packet)), np.int64) for _ in range(w)]
                      for b in plan.buffers]
        self.signals = [[[0] * s.slots for _ in range(w)] for s in plan.signals]
        self.epoch = [0] * w
        self.prev = [0] * w

    def run(self, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray], seed: int = 0) -> None:
        plan = self.plan
        for name, arrays, need in (("input", inputs, plan.input_elems), ("output", outputs, plan.output_elems)):
            if len(arrays) != plan.world:
                raise PlanExecutionError(f"{len(arrays)} {name} buffers for world {plan.world}")
            for r, a in enumerate(arrays):
                if a.dtype != self.dtype or a.size < need:
                    raise PlanExecutionError(
                        f"rank {r} {name}: {a.size} x {a.dtype}, the plan needs {need} x {self.dtype}"
                    )
        tasks = [
            Task(self._role(r, k, body, inputs, outputs))
            for r in range(plan.world)
            for k, body in enumerate(plan.programs[r])
        ]
        scheduler.run(tasks, random.Random(seed), lambda live: PlanExecutionError(
            "deadlock: " + "; ".join(t.pending[1]() for t in live)))
        for r in range(plan.world):
            self.prev[r] = self.epoch[r]
            self.epoch[r] += plan.advance

    def _value(self, rank: int, base: P.Base, rel: int) -> int:
        return (self.epoch[rank] if base == P.Base.EPOCH else self.prev[rank]) + rel

    def _mem(self, ref: P.Ref, rank: int, inputs, outputs) -> np.ndarray:
        half = self.epoch[rank] % 2
        if ref.space == P.Space.INPUT:
            return inputs[ref.rank][ref.offset:]
        if ref.space == P.Space.OUTPUT:
            return outputs[ref.rank][ref.offset:]
        # Staging slots and window regions (slot = source rank) alike.
        return self.staging[ref.buf][ref.rank][half, ref.slot, ref.offset:]

    def _role(self, rank: int, role: int, body: list[P.Instr], inputs, outputs):
        at = _At(rank, f"rank {rank} role {role}", self.epoch[rank] % 2, inputs, outputs)
        for n, i in enumerate(body):
            yield from _STEPS[i.op](self, at, n, i)

    def _wait(self, at: _At, n: int, i: P.Instr):
        rank = at.rank
        slots, need = self.signals[i.sig][rank], self._value(rank, i.base, i.rel)
        if slots[i.slot] < need:
            yield (
                lambda s=slots, k=i.slot, v=need: s[k] >= v,
                lambda s=slots, k=i.slot, v=need, n=n, sig=i.sig: (
                    f"{at.where} instruction {n} waits for {self.plan.signals[sig].name}[{k}] "
                    f">= {v} (has {s[k]}, epoch {self.epoch[rank]})"
                ),
            )

    def _signal(self, at: _At, n: int, i: P.Instr):
        target = self.signals[i.sig][i.peer]
        target[i.slot] = max(target[i.slot], self._value(at.rank, i.base, i.rel))
        yield None

    def _copy_or_reduce(self, at: _At, n: int, i: P.Instr):
        assert i.dst is not None
        srcs = [self._mem(s, at.rank, at.inputs, at.outputs)[: i.elems] for s in i.srcs]
        dst = self._mem(i.dst, at.rank, at.inputs, at.outputs)
        if i.op == P.Op.COPY:
            dst[: i.elems] = srcs[0]
        else:
            dst[: i.elems] = reduce_parts(srcs, i.redop.name.lower())
        yield None

    def _packets(self, i: P.Instr) -> tuple[int, int]:
        """The packets [first, last) a put or wait_packets moves: at least one,
        an empty unit's carrying its flag alone."""
        first = i.offset // self.per_packet
        return first, first + max(-(-i.elems // self.per_packet), 1)

    def _put(self, at: _At, n: int, i: P.Instr):
        src = self._mem(i.srcs[0], at.rank, at.inputs, at.outputs)[: i.elems]
        self.staging[i.buf][i.peer][at.half, at.rank, i.offset : i.offset + i.elems] = src
        first, last = self._packets(i)
        self.flags[i.buf][i.peer][at.half, at.rank, first:last] = self.epoch[at.rank] + 1
        yield None

    def _wait_packets(self, at: _At, n: int, i: P.Instr):
        flags = self.flags[i.buf][at.rank][at.half, i.peer]
        first, last = self._packets(i)
        need = self.epoch[at.rank] + 1
        if flags[first:last].min() < need:
            yield (
                lambda f=flags, a=first, b=last, v=need: f[a:b].min() >= v,
                lambda f=flags, a=first, b=last, v=need, n=n, src=i.peer: (
                    f"{at.where} instruction {n} waits for packets from rank {src} "
                    f"[{a}, {b}) to carry flag {v} (lowest {f[a:b].min()})"
                ),
            )


@dataclass(frozen=True)
class _At:
    """The role being run: its rank, its name in diagnostics, the call's half."""

    rank: int
    where: str
    half: int
    inputs: Sequence[np.ndarray]
    outputs: Sequence[np.ndarray]


# What each instruction does, by its opcode: a generator of the role's steps.
_STEPS: dict[P.Op, Callable[[PlanMachine, _At, int, P.Instr], Iterator]] = {
    P.Op.WAIT: PlanMachine._wait,
    P.Op.SIGNAL: PlanMachine._signal,
    P.Op.COPY: PlanMachine._copy_or_reduce,
    P.Op.REDUCE: PlanMachine._copy_or_reduce,
    P.Op.PUT: PlanMachine._put,
    P.Op.WAIT_PACKETS: PlanMachine._wait_packets,
}
