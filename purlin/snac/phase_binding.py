"""A program's phases bound to a world: each rank's units, groups and window
offsets, checked against the phase's buffer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.ir import Operation

from purlin.coll.attributes import element_bytes
from purlin.coll.layouts import Layout, merged_scattered
from purlin.snac import dialect as snac
from purlin.snac.errors import SnacExecutionError
from purlin.snac.protocol import PerRank, PhasePlan, packet_elems, route_layouts


@dataclass
class PhaseState:
    op: snac.PhaseOp
    plan: PhasePlan
    buffer: snac.BufferOp | None  # None: the phase moves in place (direct pull or push)
    ready: str
    free: str
    window_offsets: Sequence[list[int]]  # per producer, per unit: offset in its window region
    # Read from the ops once: their IRDL accessors are slow at a step's rate.
    name: str = field(init=False)
    buf: str = field(init=False)  # the buffer's symbol, "" for a direct phase
    slots: int = field(init=False)
    moves: str = field(init=False)  # snac.PhaseOp.moves
    staged: bool = field(init=False)
    direct: bool = field(init=False)
    from_input: bool = field(init=False)
    reduce: str | None = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.op.sym_name.data
        self.buf = "" if self.buffer is None else self.buffer.sym_name.data
        self.slots = 1 if self.buffer is None else self.buffer.slots.value.data
        self.moves = self.op.moves()
        self.staged = self.moves == "staging"
        self.direct = self.buffer is None
        self.from_input = self.op.source.data == snac.PhaseSource.INPUT
        kind = self.op.consume.kind
        self.reduce = None if kind is None else kind.value



def phase_states(program: snac.ProgramOpBase, world: int, counts: Sequence | None,
                 shrink: bool = False) -> dict[str, PhaseState]:
    """Each phase's units and groups for `world` ranks, checked against its buffer.

    `shrink` cuts slices to slots + 1 units: the program does the same per
    unit at any size, so that covers slot reuse (and three calls half reuse).
    """
    phases: dict[str, PhaseState] = {}
    for op in program.body.block.ops:
        if not isinstance(op, snac.PhaseOp):
            continue
        src = _bind(op.src_layout.to_layout(), counts, op)
        dst = _bind(op.dst_layout.to_layout(), counts, op)
        if op.coalesce is not None:
            src = dst = merged_scattered(src)  # the verifier checked that they are one scattered layout
        buf = op.buffer_op()
        if shrink and op.chunk.value.data > 0:
            cap = op.chunk.value.data * ((1 if buf is None else buf.slots.value.data) + 1)
            src, dst = src.clamped(cap), dst.clamped(cap)
        src, dst = route_layouts(src, dst, None if op.route is None else op.route.data.value)
        plan = PhasePlan(
            world, src, dst, op.consume.kind is not None, op.chunk.value.data,
            keep_unread=op.source.data == snac.PhaseSource.OUTPUT,
            stage_local=op.stage_local is not None, empty_units=op.empty_units is not None,
        )
        align = 0 if buf is None else packet_elems(element_bytes(buf.elem_type))
        offsets = PerRank(world, lambda r, plan=plan, align=align: plan.window_offsets(r, align) if align else [])
        ph = PhaseState(op, plan, buf, op.ready.string_value(), op.free.string_value(), offsets)
        _check_capacity(ph, world)
        phases[op.sym_name.data] = ph
    return phases


def _check_capacity(ph: PhaseState, world: int) -> None:
    buf = ph.buffer
    if buf is None:
        return
    elems = buf.elems.value.data
    if buf.kind.data == snac.BufferKind.STAGING:
        need = ph.plan.max_unit_elems
        what = "unit"
    else:
        need = ph.plan.window_elems(packet_elems(element_bytes(buf.elem_type)))
        what = "per-source window"
        if buf.slots.value.data < world:
            raise SnacExecutionError(
                buf, f"packet window '{buf.sym_name.data}' has "
                f"{buf.slots.value.data} source slots, world {world} needs one per rank"
            )
    if need > elems:
        raise SnacExecutionError(
            buf, f"buffer '{buf.sym_name.data}' holds {elems} elements per slot "
            f"but a {what} of phase '{ph.op.sym_name.data}' needs {need}"
        )


def _bind(layout: Layout, counts: Sequence | None, op: Operation) -> Layout:
    if not layout.is_dynamic:
        return layout
    if counts is None:
        raise SnacExecutionError(op, "dynamic layout needs counts at run time")
    return layout.bind(counts)

