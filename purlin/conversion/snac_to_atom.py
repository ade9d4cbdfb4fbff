"""`convert-snac-to-atom{arch=sm_80|sm_90|sm_100 multimem=false}`.

Each snac.program becomes an atom.kernel for the generation: roles become
block ranges, and every protocol step becomes the atom that performs it with
the generation's mechanism (see purlin/atom/generations/). Orchestration
(phases, loops, flag values) is carried over unchanged; a put's flag and the
half of a put or stage must be the values the runtimes hard-code
(purlin/conversion/runtime_convention.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, UnitAttr
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import PassFailedException

from purlin.atom import dialect as atom
from purlin.atom.generations import GENERATIONS, Datapath, Generation
from purlin.coll.attributes import dtype_name, element_bytes
from purlin.conversion.runtime_convention import convention_error
from purlin.diagnostics import op_error
from purlin.snac import dialect as snac
from purlin.snac.errors import SnacExecutionError
from purlin.snac.phase_binding import phase_states
from purlin.snac.protocol import packet_elems, route_layouts


def _int(v: int) -> IntegerAttr:
    return IntegerAttr(v, 64)


class LowerProgram(RewritePattern):
    def __init__(self, gen: Generation, multimem: bool):
        self.gen = gen
        self.multimem = multimem

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: snac.ProgramOp, rewriter: PatternRewriter) -> None:
        gen = self.gen
        for inner in op.body.walk():
            if (why := convention_error(inner)) is not None:
                raise PassFailedException(op_error(inner, why))
        body = op.body.clone()
        try:
            self.states = phase_states(op, op.world_size, None)
        except SnacExecutionError:
            self.states = None  # dynamic counts: unit sizes known only at the call
        self.threads = _threads(op, gen)
        assert isinstance(op.input.type, MemRefType)
        elem = op.input.type.element_type
        dtype = dtype_name(elem)
        assert dtype is not None
        props = dict(op.properties)
        # Only staging pipelines (cp.async, bulk copies) take shared memory.
        pipelined = any(isinstance(inner, snac.StageOp) for inner in op.body.walk())
        props.update(
            target=atom.TargetAttr(gen.target),
            threads=_int(self.threads),
            smem=_int(gen.smem_bytes(op.world_size) if pipelined else 0),
        )
        if self.multimem:
            props["multimem"] = UnitAttr()
        kernel = atom.KernelOp.create(
            operands=list(op.operands), properties=props, regions=[body],
            attributes=dict(op.attributes),
        )
        kernel.location = op.location
        phases = {p.sym_name.data: p for p in body.block.ops if isinstance(p, snac.PhaseOp)}
        buffers = {b.sym_name.data: b for b in body.block.ops if isinstance(b, snac.BufferOp)}
        first = 0
        for inner in list(body.walk()):
            if isinstance(inner, snac.RoleOp):
                blocks = inner.blocks.value.data
                _swap(rewriter, inner, atom.BlocksOp, {"first": _int(first)})
                first += blocks
                continue
            lower = _LOWER.get(type(inner))
            if lower is None:
                continue
            phase = phases.get(inner.phase.string_value())  # type: ignore[attr-defined]
            if phase is None:
                continue
            buf = None if phase.buffer is None else buffers[phase.buffer.string_value()]
            lower(self, _Step(inner, phase, buf, elem, dtype, rewriter))
        rewriter.replace(op, kernel)

    def _reclaim(self, s: _Step) -> None:
        _swap(s.rewriter, s.op, atom.WaitFreeOp)

    def _stage(self, s: _Step) -> None:
        assert s.buf is not None
        unit_bytes = s.buf.elems.value.data * element_bytes(s.elem)
        _swap(s.rewriter, s.op, atom.StageOp, _path(self.gen.stage(unit_bytes)))

    def _put(self, s: _Step) -> None:
        _swap(s.rewriter, s.op, atom.PutOp, _path(self.gen.put()))

    def _push(self, s: _Step) -> None:
        role = s.op.parent_op()
        while role is not None and not isinstance(role, snac.RoleOpBase):
            role = role.parent_op()
        stream = role is not None and role.kind.data == snac.RoleKind.STREAM
        path = self.gen.copy_engine() if stream else self.gen.copy()
        props = _path(path)
        if role is not None and path.mech == atom.Mechanism.VECTOR and self.states is not None:
            loads = _push_loads(self.states[s.phase.sym_name.data], role.blocks.value.data * self.threads,
                                element_bytes(s.elem), path.width)
            if loads is not None:
                props["loads"] = _int(loads)
        _swap(s.rewriter, s.op, atom.PushOp, props)

    def _grant(self, s: _Step) -> None:
        _swap(s.rewriter, s.op, atom.GrantOp)

    def _drain(self, s: _Step) -> None:
        _swap(s.rewriter, s.op, atom.DrainOp)

    def _notify(self, s: _Step) -> None:
        s.rewriter.insert(atom.FenceOp(s.op.scope.data), InsertPoint.before(s.op))  # type: ignore[attr-defined]
        _swap(s.rewriter, s.op, atom.NotifyOp)

    def _wait(self, s: _Step) -> None:
        packets = s.buf is not None and s.buf.kind.data == snac.BufferKind.PACKETS
        _swap(s.rewriter, s.op, atom.WaitPacketsOp if packets else atom.WaitReadyOp)

    def _consume(self, s: _Step) -> None:
        kind = s.phase.consume.kind
        if kind is None:
            _swap(s.rewriter, s.op, atom.CopyOp, _path(self.gen.copy()))
            return
        # multimem.ld_reduce reads one symmetric address on every rank:
        # only staged phases, with the local contribution staged too.
        # The switch reduces in an order of its own: only where one rank
        # reduces each slice (others get its bits), never deterministic.
        staged = s.buf is not None and s.buf.kind.data == snac.BufferKind.STAGING
        switch = staged and s.phase.deterministic is None and _one_reducer(s.phase)
        path = self.gen.reduce(kind, s.dtype, self.multimem and switch)
        if path.mech == atom.Mechanism.MULTIMEM:
            s.phase.properties["stage_local"] = UnitAttr()
        _swap(s.rewriter, s.op, atom.ReduceOp, _path(path))

    def _ack(self, s: _Step) -> None:
        _swap(s.rewriter, s.op, atom.AckOp)

    def _finish(self, s: _Step) -> None:
        s.rewriter.insert(atom.FenceOp(s.op.scope.data), InsertPoint.before(s.op))  # type: ignore[attr-defined]
        _swap(s.rewriter, s.op, atom.FinishOp)


@dataclass(frozen=True)
class _Step:
    """A protocol step of the program being lowered, with its phase and buffer."""

    op: Operation
    phase: snac.PhaseOp
    buf: snac.BufferOp | None  # None: a direct phase
    elem: Attribute
    dtype: str
    rewriter: PatternRewriter


# The atom of each protocol step, by its snac op.
_LOWER: dict[type[Operation], Callable[[LowerProgram, _Step], None]] = {
    snac.ReclaimOp: LowerProgram._reclaim,
    snac.StageOp: LowerProgram._stage,
    snac.PutOp: LowerProgram._put,
    snac.NotifyOp: LowerProgram._notify,
    snac.WaitOp: LowerProgram._wait,
    snac.ConsumeOp: LowerProgram._consume,
    snac.AckOp: LowerProgram._ack,
    snac.FinishOp: LowerProgram._finish,
    snac.PushOp: LowerProgram._push,
    snac.GrantOp: LowerProgram._grant,
    snac.DrainOp: LowerProgram._drain,
}


# A vector push whose every unit goes to two destinations or more (an
# all_gather's: each load feeds several stores), and gives each thread of its
# role atom.WHOLE_ROUND_LOADS chunks or more, loads them in whole rounds of that many, with
# no bound checks: all_gather of 16 MiB took 0.95-0.96x as long at worlds 2
# and 8 so, but copies of one destination a unit (all_to_all) 1.03-1.12x at
# 4 MiB, and those of fewer chunks a thread (the tail rounds) 1.02-1.04x
# (bench/results/1xh100-session-12-07c, ab-copy-whole-rounds-u8*). A unit
# whose destination lies off its source's alignment is shifted into place,
# which the whole rounds' registers only slow (world 5's 16 MiB all_gather,
# its slots 2 bytes off: 1.02x). Measured with 16-byte words only: sm_100's
# 32-byte words would hold twice the registers, and keep the datapath's rounds.
WHOLE_ROUND_WIDTH = 16


def _push_loads(state, threads: int, elem_bytes: int, width: int) -> int | None:
    """atom.push's `loads` for a phase of static units pushed by `threads`
    threads in all (None: the datapath's default)."""
    if width != WHOLE_ROUND_WIDTH:
        return None
    plan, least = state.plan, None
    for r in range(plan.world):
        for u, dsts in zip(plan.units[r], plan.destinations[r]):
            if len(u.consumers) < 2:
                return None  # most often rank 0's first unit: an all_to_all costs no more than one look
            if any((off - u.src_offset) * elem_bytes % width for _, off in dsts):
                return None  # shifted into place at run time, where whole rounds only cost registers
            least = u.size if least is None else min(least, u.size)
    if least is None or least * elem_bytes // width < atom.WHOLE_ROUND_LOADS * threads:
        return None
    return atom.WHOLE_ROUND_LOADS


def _threads(op: snac.ProgramOp, gen: Generation) -> int:
    """Threads per block: the generation's, but a packet kernel of static sizes
    gets the first of THREAD_STEPS that covers its pieces (one packet put to
    one consumer, or polled) spread over its smallest role: a 16-byte call runs
    one warp, as a hand-fused kernel does. A stream role's block only signals
    and waits: one warp."""
    if any(isinstance(r, snac.RoleOp) and r.kind.data == snac.RoleKind.STREAM for r in op.body.block.ops):
        return THREAD_STEPS[0]
    if op.regime.data != snac.Regime.LATENCY:
        return gen.threads
    try:
        phases = phase_states(op, op.world_size, None)
    except SnacExecutionError:
        return gen.threads  # dynamic counts: any size the buffers hold
    pieces = 0
    for ph in phases.values():
        assert ph.buffer is not None
        per = packet_elems(element_bytes(ph.buffer.elem_type))
        for r in range(op.world_size):
            put = sum(-(-u.size // per) * len(u.consumers) for u in ph.plan.units[r])
            polled = sum(-(-g.size // per) for g in ph.plan.groups[r])
            pieces = max(pieces, put, polled)
    blocks = min(role.blocks.value.data for role in op.body.block.ops if isinstance(role, snac.RoleOp))
    # Few sizes of threads, so that sizes near each other share a compiled kernel.
    need = -(-pieces // blocks)
    return next((t for t in THREAD_STEPS if t >= need and t < gen.threads), gen.threads)


# The block sizes of packet kernels below the generation's.
THREAD_STEPS = (32, 128)


def _path(p: Datapath) -> dict:
    props = {"mech": atom.MechanismAttr(p.mech), "width": _int(p.width)}
    if p.packed_f32x2:
        props["packed_f32x2"] = UnitAttr()
    return props


def _swap(rewriter: PatternRewriter, old: Operation, cls: type[Operation], extra: dict | None = None) -> None:
    new = cls.create(
        operands=list(old.operands),
        result_types=[r.type for r in old.results],
        properties={**old.properties, **(extra or {})},
        attributes=dict(old.attributes),
        regions=[old.detach_region(r) for r in list(old.regions)],
    )
    new.location = old.location
    rewriter.replace(old, new)


def _one_reducer(phase: snac.PhaseOp) -> bool:
    """Whether each name the phase reduces has one destination slice."""
    route = None if phase.route is None else phase.route.data.value
    _, dst = route_layouts(phase.src_layout.to_layout(), phase.dst_layout.to_layout(), route)
    return not dst.is_dynamic and all(len(dst.slices_named(n)) == 1 for n in dst.name_sizes)


@dataclass(frozen=True)
class ConvertSnacToAtomPass(ModulePass):
    """Options: arch (sm_80|sm_90|sm_100), multimem (bind multicast objects
    and reduce with multimem.ld_reduce where the element type allows)."""

    name = "convert-snac-to-atom"

    arch: str = "sm_90"
    multimem: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        gen = GENERATIONS.get(self.arch)
        if gen is None:
            raise PassFailedException(
                f"convert-snac-to-atom: unknown arch '{self.arch}', expected one of "
                f"{', '.join(GENERATIONS)}"
            )
        if self.multimem and atom.sm(gen.target) < 90:
            raise PassFailedException(
                f"convert-snac-to-atom: multimem needs sm_90 or newer, got {self.arch}"
            )
        PatternRewriteWalker(LowerProgram(gen, self.multimem), apply_recursively=False).rewrite_module(op)
