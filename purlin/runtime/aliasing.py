"""Which overlaps of the buffers of one call are right, for every backend.

A rank's output may overlap its input only where the protocol makes it safe:
- the whole buffer, when the plan was lowered in place (`Plan.in_place`: the
  IR's input and output are one value, and every phase stages the rank's own
  contribution before its slice is overwritten);
- where a copy would write a slice onto itself (all_gather whose input is
  the rank's own slice of the output): the backends skip such copies;
- where a reduction writes the elements it reads of the rank's own input and
  nothing else reads them (reduce_scatter whose output is the rank's own
  slice of its input).
Any other overlap, and any overlap between different ranks' buffers other
than inputs shared for reading, is an error: a peer would read what the
call already overwrote.
"""

from __future__ import annotations

from collections.abc import Sequence

from purlin.plan import Op, Plan, Space


class AliasingError(ValueError):
    """Buffers of one call overlap where the collective cannot be right."""


class Buffers:
    """The overlap rules of one plan; rank-own overlaps are worked out once per offset."""

    def __init__(self, plan: Plan, name: str):
        self.plan = plan
        self.name = name
        self._own: dict[tuple[int, int], str | None] = {}

    def check(self, buffers: Sequence[tuple[int, int, int, int]]) -> None:
        """`buffers[r]` = (input address, input bytes, output address, output bytes)
        of rank r, all in one address space; raises AliasingError for a wrong overlap."""
        check_ranks_apart(self.name, buffers)
        for r, (ip, ib, op, ob) in enumerate(buffers):
            if ib and ob and ip < op + ob and op < ip + ib:
                key = (r, op - ip)
                if key not in self._own:
                    self._own[key] = _own_overlap(self.plan, r, op - ip)
                if self._own[key]:
                    raise AliasingError(f"{self.name}: rank {r}'s input and output overlap {self._own[key]}")


def check_ranks_apart(name: str, buffers: Sequence[tuple[int, int, int, int]]) -> None:
    """No rank's buffer overlaps another rank's, but inputs shared for reading
    (`buffers` as in Buffers.check)."""
    spans = sorted((lo, lo + n, r, writes) for r, (ip, ib, op, ob) in enumerate(buffers)
                   for lo, n, writes in ((ip, ib, False), (op, ob, True)) if n)
    active: list[tuple[int, int, bool]] = []  # (end, rank, writes) of spans still open
    for lo, hi, r, writes in spans:
        active = [a for a in active if a[0] > lo]
        for _, other, other_writes in active:
            if other != r and (writes or other_writes):
                what = lambda w: "output" if w else "input"  # noqa: E731
                raise AliasingError(
                    f"{name}: the {what(other_writes)} of rank {other} overlaps the {what(writes)} "
                    f"of rank {r}: each rank needs buffers of its own (only inputs may be shared)"
                )
        active.append((hi, r, writes))


def _own_overlap(plan: Plan, rank: int, delta: int) -> str | None:
    """Why rank `rank`'s output at byte `delta` from its input is wrong, or None."""
    if delta == 0 and plan.in_place:
        return None
    # One buffer for both, where the collective allows it: lowered in place.
    hint = (" (one buffer as both input and output wants the collective lowered in place: "
            "compile_plan(..., in_place=True))") if delta == 0 and plan.input_elems == plan.output_elems else ""
    eb = plan.elem_bytes
    writes, reads = [], []  # byte ranges in the input's coordinates
    for role in plan.programs[rank]:
        for k, i in enumerate(role):
            if i.elems == 0:
                continue
            n = i.elems * eb
            locals_ = [s for s in i.srcs if s.space == Space.INPUT]
            if i.op in (Op.COPY, Op.REDUCE) and i.dst is not None and i.dst.space == Space.OUTPUT:
                at = delta + i.dst.offset * eb
                if i.op == Op.COPY and locals_ and locals_[0].offset * eb == at:
                    continue  # a slice copied onto itself: skipped by the backends
                writes.append((at, at + n, (id(role), k)))
            for s in locals_:
                own = i.op == Op.REDUCE and i.dst is not None and i.dst.space == Space.OUTPUT
                reads.append((s.offset * eb, s.offset * eb + n, (id(role), k) if own else None))
    for wlo, whi, wi in writes:
        for rlo, rhi, ri in reads:
            if wlo < rhi and rlo < whi and not (ri == wi and rlo == wlo):
                return (f"where the call still reads the input: input bytes [{rlo}, {rhi}) are read while "
                        f"output bytes [{wlo - delta}, {whi - delta}) overwrite them; in place only all_reduce "
                        "lowered in place, all_gather into the rank's own output slice and reduce_scatter into "
                        f"the rank's own input slice are right{hint}")
    return None
