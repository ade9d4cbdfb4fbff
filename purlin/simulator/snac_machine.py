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

The machine's parts: `phase_binding` (phases bound to a world),
`symmetric_memory` (signals and locations), `happens_before` (clocks and the
race checks), `protocol_steps` (what each op does), `execution` (the roles as
coroutines), `deadlock` (its diagnosis) and `scheduler` (the seeded order).
This module is the entry point, and keeps the names other code imports here.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
from xdsl.ir import SSAValue

from purlin.snac import dialect as snac
from purlin.snac.errors import Deadlock, ProtocolViolation, SnacExecutionError
from purlin.simulator.execution import Execution
from purlin.snac.phase_binding import PhaseState, phase_states
from purlin.simulator.symmetric_memory import Signal, World

__all__ = [
    "Deadlock", "ProtocolViolation", "Signal", "SnacExecutionError", "World",
    "execute", "sample_counts", "verify_changing_counts", "verify_program",
]


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
    counts_per_call: Sequence[Sequence] | None = None,
) -> None:
    """Run `program` on every rank `calls` times; data moves when `args` is given.

    `args` maps the program's input/output SSA values to one array per rank.
    `phases` are `phase_states(program, world, counts, shrink)` when already
    computed (they only depend on those). `counts_per_call`: call k runs with
    counts_per_call[k] instead of `counts`, as a kernel that reads its counts
    on the device does. Raises Deadlock, ProtocolViolation or SnacExecutionError.
    """
    world = program.world_size
    state = world_state or World(world, data=args is not None)
    if shrink and args is not None:
        raise SnacExecutionError(None, "only a run without data can shrink slices")
    if counts_per_call is not None and len(counts_per_call) < calls:
        raise SnacExecutionError(None, f"{calls} calls need as many counts, got {len(counts_per_call)}")
    first = counts if counts_per_call is None else counts_per_call[0]
    ex = Execution(program, state, args, first, random.Random(seed), shrink, phases)
    roles = max(1, sum(isinstance(op, snac.RoleOpBase) for op in program.body.block.ops))
    # Each rank's roles, then its caller (who hands the buffers over between calls).
    nthreads = world * (roles + 1)
    base = [r * (roles + 1) for r in range(world)]
    clocks = [[0] * nthreads for _ in range(world)]
    for k in range(calls):
        if counts_per_call is not None and k > 0:
            ex.rebind(phase_states(program, world, counts_per_call[k], shrink))
        clocks = ex.run_call(roles, base, clocks, nthreads)


def verify_program(program: snac.ProgramOpBase, calls: int = 3, seeds: Sequence[int] = (0, 1, 2),
                   counts: Sequence | None = None) -> None:
    """Check the protocol for the program's world size without moving data."""
    phases = phase_states(program, program.world_size, counts, shrink=True)
    for seed in seeds:
        execute(program, counts=counts, calls=calls, seed=seed, shrink=True, phases=phases)


def verify_changing_counts(program: snac.ProgramOpBase, seeds: Sequence[int] = (0, 1, 2)) -> None:
    """Check a dynamic program whose counts change from call to call (each
    sample after each other one), as a kernel reading them on the device runs."""
    samples = sample_counts(program)
    if samples == [None]:
        return
    order = [samples[k % len(samples)] for k in range(2 * len(samples) + 1)]
    for seed in seeds:
        execute(program, calls=len(order), seed=seed, shrink=True, counts_per_call=order)


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
        return [[[1] * w for _ in range(w)], [[(s + d) % 3 for d in range(w)] for s in range(w)],
                [[5 * (d == 0) for d in range(w)] for _ in range(w)]]
    return [[1] * w, [(r % 3) * 2 for r in range(w)], [5 * (r == 0) for r in range(w)]]
