"""Why no simulated role can move: a missing notify when the writer has
finished or nothing stores the signal, a cycle of waits otherwise."""

from __future__ import annotations

from purlin.snac import dialect as snac
from purlin.snac.errors import Deadlock
from purlin.simulator.happens_before import Thread
from purlin.snac.phase_binding import PhaseState


def diagnose(program: snac.ProgramOpBase, phases: dict[str, PhaseState], epochs: list[int],
             live: list[Thread], threads: list[Thread]) -> Deadlock:
    """The deadlock of `live` (all blocked), among all of the call's `threads`."""
    lines = []
    waits: dict[int, list[tuple[str, int, int, int, int]]] = {}
    for t in live:
        assert t.pending is not None
        waits[t.tid] = t.pending[1]()
    stored = _stored_signals(program, phases)
    for t in live:
        for sym, owner, writer, need, have in waits[t.tid]:
            if sym not in stored:
                why = f"no op of the program stores to {sym}"
            # A wait whose writer has finished its call can never be satisfied.
            elif not any(o.rank == writer and not o.done for o in threads):
                why = f"rank {writer} finished the call having stored {have}"
            else:
                continue
            lines.append(
                f"missing notify: {t.name} waits for {sym}[{writer}] on rank {owner} "
                f">= {need} (epoch {epochs[t.rank]}), but {why}"
            )
    if not lines:
        cycle = _find_cycle(live, waits)
        desc = " -> ".join(
            f"{t.name} waiting for {w[0]}[{w[2]}] >= {w[3]} (has {w[4]})" for t, w in cycle
        )
        lines.append(f"deadlock: cycle of waits at epoch {epochs[0]}: {desc} -> back")
    more = f" (and {len(lines) - 1} more blocked waits)" if len(lines) > 1 else ""
    return Deadlock(program, f"{lines[0]}{more}")


def _stored_signals(program: snac.ProgramOpBase, phases: dict[str, PhaseState]) -> set[str]:
    """Signals (and packet windows) some op of the program writes."""
    stored: set[str] = set()
    for op in program.body.walk():
        if isinstance(op, snac.NotifyOpBase):
            stored.add(phases[op.phase.string_value()].ready)
        elif isinstance(op, (snac.AckOpBase, snac.FinishOpBase, snac.GrantOpBase)):
            stored.add(phases[op.phase.string_value()].free)
        elif isinstance(op, snac.PutOpBase):
            stored.add(f"@{phases[op.phase.string_value()].buf} packets")
    return stored


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

