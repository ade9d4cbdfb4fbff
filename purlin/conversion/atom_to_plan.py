"""`atom-to-plan`: expand a rank-generic atom.kernel into a Plan.

For every rank, each atom.blocks region is walked with its loops unrolled and
its queries answered by the phase plans; each atom op becomes the plan
instructions that perform it for that rank. Epoch-dependent values stay
symbolic (`epoch + k`, `prev + k`), so one plan serves every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from purlin import plan as P
from purlin.atom import dialect as atom
from purlin.coll.dialect import ReduceKind, dtype_name
from purlin.cuda.program import CudaProgram
from purlin.diagnostics import where
from purlin.snac import dialect as snac
from purlin.snac.index_eval import BinaryFn, IndexEvaluator
from purlin.snac.machine import PhaseState, SnacExecutionError, phase_states


class PlanBuildError(Exception):
    """The kernel cannot be expanded into a plan (dynamic sizes, bad loops)."""


@dataclass(frozen=True)
class Sym:
    """A value relative to the rank's epoch state: base + rel."""

    base: P.Base
    rel: int = 0

    def __add__(self, other: int) -> Sym:
        if not isinstance(other, int):
            raise PlanBuildError("epoch values can only be offset by constants")
        return Sym(self.base, self.rel + other)

    __radd__ = __add__


class _Half:
    """The current call's staging half: implicit in the plan (epoch parity)."""


HALF = _Half()

_MECH = {
    atom.Mechanism.VECTOR: P.Mech.VECTOR,
    atom.Mechanism.CP_ASYNC: P.Mech.CP_ASYNC,
    atom.Mechanism.BULK: P.Mech.BULK,
    atom.Mechanism.MULTIMEM: P.Mech.MULTIMEM,
    atom.Mechanism.COPY_ENGINE: P.Mech.COPY_ENGINE,
    atom.Mechanism.PACKET: P.Mech.PACKET,
}
_REDOP = {kind: P.RedOp[kind.name] for kind in ReduceKind}
_ORDER = {snac.MemoryOrder.RELAXED: P.Order.RELAXED, snac.MemoryOrder.ACQUIRE: P.Order.ACQUIRE,
          snac.MemoryOrder.RELEASE: P.Order.RELEASE}
_ROLE = {snac.RoleKind.PRODUCER: P.RoleKind.PRODUCER, snac.RoleKind.CONSUMER: P.RoleKind.CONSUMER,
         snac.RoleKind.REDUCER: P.RoleKind.REDUCER, snac.RoleKind.LOCAL: P.RoleKind.LOCAL,
         snac.RoleKind.FUSED: P.RoleKind.FUSED}


def kernels_in(module: ModuleOp) -> list[atom.KernelOp]:
    return [op for op in module.walk() if isinstance(op, atom.KernelOp)]


def build_plan(kernel: atom.KernelOp, counts: Sequence | None = None) -> P.Plan:
    """The plan of `kernel`; `counts` binds dynamic V counts."""
    if kernel.counts is not None and counts is None:
        raise PlanBuildError(
            f"{where(kernel)}: the kernel's counts are dynamic; build its plan at run time with them"
        )
    world = kernel.world_size
    try:
        phases = phase_states(kernel, world, counts)
    except SnacExecutionError as e:
        raise PlanBuildError(str(e)) from None
    buffers = [op for op in kernel.body.block.ops if isinstance(op, snac.BufferOp)]
    signals = [op for op in kernel.body.block.ops if isinstance(op, snac.SignalsOp)]
    blocks = [op for op in kernel.body.block.ops if isinstance(op, atom.BlocksOp)]
    ex = _Expander(kernel, phases, {b.sym_name.data: i for i, b in enumerate(buffers)},
                   {s.sym_name.data: i for i, s in enumerate(signals)})
    programs = [ex.rank(r, blocks) for r in range(world)]
    assert isinstance(kernel.input.type, MemRefType) and isinstance(kernel.output.type, MemRefType)
    dtype = dtype_name(kernel.input.type.element_type)
    assert dtype is not None
    plan = P.Plan(
        arch=kernel.arch.value,
        world=world,
        dtype=dtype,
        input_elems=_extent(kernel.input.type, phases, "input"),
        output_elems=_extent(kernel.output.type, phases, "output"),
        advance=ex.advance,
        threads=kernel.threads.value.data,
        roles=[P.RoleSpec(_ROLE[b.kind.data], b.blocks.value.data) for b in blocks],
        buffers=[
            P.BufferSpec(
                b.sym_name.data,
                P.BufKind.STAGING if b.kind.data == snac.BufferKind.STAGING else P.BufKind.PACKETS,
                b.slots.value.data,
                b.elems.value.data,
            )
            for b in buffers
        ],
        signals=[P.SignalSpec(s.sym_name.data, s.slots.value.data) for s in signals],
        programs=programs,
        in_place=kernel.input == kernel.output,
    )
    try:
        P.validate(plan)
    except P.PlanError as e:
        raise PlanBuildError(f"{where(kernel)}: the expanded plan is invalid: {e}") from None
    plan.cuda = CudaProgram(kernel, counts)
    return plan


def _extent(t: MemRefType, phases: dict[str, PhaseState], which: str) -> int:
    """The buffer's static size, or what the bound layouts need when dynamic."""
    (n,) = t.get_shape()
    if n >= 0:
        return n
    need = 0
    for ph in phases.values():
        reads = ph.op.source.data.value == which
        if reads:
            need = max(need, ph.plan.src.max_extent())
        if which == "output":
            need = max(need, ph.plan.dst.max_extent())
    return need


class _Expander(IndexEvaluator):
    def __init__(self, kernel: atom.KernelOp, phases: dict[str, PhaseState],
                 buf_index: dict[str, int], sig_index: dict[str, int]):
        self.kernel = kernel
        self.phases = phases
        self.buf_index = buf_index
        self.sig_index = sig_index
        self.advance = 0

    def rank(self, rank: int, blocks: list[atom.BlocksOp]) -> list[list[P.Instr]]:
        env: dict[SSAValue, object] = {}
        for op in self.kernel.body.block.ops:
            if isinstance(op, (snac.BufferOp, snac.SignalsOp, snac.PhaseOp, atom.BlocksOp)):
                continue
            if isinstance(op, snac.AdvanceOp):
                amount = env[op.amount]
                if not isinstance(amount, int):
                    raise PlanBuildError(f"{where(op)}: the epoch advance must not depend on the epoch")
                if self.advance and amount != self.advance:
                    raise PlanBuildError(
                        f"{where(op)}: rank {rank} advances by {amount}, rank 0 by {self.advance}"
                    )
                self.advance = amount
                continue
            self._value(op, env, rank)
        out = []
        for b in blocks:
            instrs: list[P.Instr] = []
            self._block(b.body.block, dict(env), rank, instrs)
            out.append(instrs)
        return out

    def _block(self, block: Block, env: dict, rank: int, out: list[P.Instr]) -> None:
        for op in block.ops:
            if isinstance(op, scf.ForOp):
                lb, ub, step = env[op.lb], env[op.ub], env[op.step]
                if not all(isinstance(v, int) for v in (lb, ub, step)):
                    raise PlanBuildError(f"{where(op)}: loop bounds must not depend on the epoch")
                for i in range(lb, ub, step):  # type: ignore[arg-type]
                    env[op.body.block.args[0]] = i
                    self._block(op.body.block, env, rank, out)
            elif isinstance(op, (scf.YieldOp, atom.FenceOp)):
                # A signal instruction fences its role's earlier writes itself.
                continue
            elif op.dialect_name() == "atom":
                out.extend(self._atom(op, env, rank))
            else:
                self._value(op, env, rank)

    def _value(self, op: Operation, env: dict, rank: int) -> None:
        if not self.eval_index(op, env, rank):
            raise PlanBuildError(f"{where(op)}: atom-to-plan cannot expand '{op.name}'")

    def binary(self, op: Operation, fn: BinaryFn, a: object, b: object) -> object:
        if isinstance(a, int) and isinstance(b, int):
            return fn(a, b)
        # Epoch values stay symbolic: only offsets keep them so.
        if isinstance(op, arith.AddiOp):
            return a + b  # type: ignore[operator]
        raise PlanBuildError(f"{where(op)}: '{op.name}' on epoch values")

    def epoch_values(self, rank: int) -> tuple[Sym, Sym]:
        return Sym(P.Base.EPOCH), Sym(P.Base.PREV)

    def half(self, epoch: object) -> _Half:
        return HALF

    def _sym(self, v: object, op: Operation) -> Sym:
        if not isinstance(v, Sym):
            raise PlanBuildError(f"{where(op)}: expected a value relative to the epoch")
        return v

    def _atom(self, op: Operation, env: dict, rank: int) -> list[P.Instr]:
        ph = self._phase(op)
        name = ph.op.sym_name.data
        buf = self.buf_index[ph.buffer.sym_name.data]
        ready, free = self.sig_index[ph.ready], self.sig_index[ph.free]
        slots = ph.buffer.slots.value.data
        order = _ORDER[op.order.data] if hasattr(op, "order") else P.Order.RELAXED  # type: ignore[attr-defined]
        source_space = P.Space.INPUT if ph.op.source.data == snac.PhaseSource.INPUT else P.Space.OUTPUT
        mech = _MECH[op.mech.data] if hasattr(op, "mech") else P.Mech.NONE  # type: ignore[attr-defined]
        units, groups = ph.plan.units[rank], ph.plan.groups[rank]

        def index(v: SSAValue, limit: int, what: str) -> int:
            i = env[v]
            if not isinstance(i, int) or not 0 <= i < limit:
                raise PlanBuildError(f"{where(op)}: rank {rank} has {limit} {what}s in phase '{name}', no {i}")
            return i

        if isinstance(op, atom.WaitFreeOp):
            u = index(op.unit, len(units), "unit")
            if ph.buffer.kind.data == snac.BufferKind.STAGING and u >= slots:
                e = self._sym(env[op.epoch], op)
                prior = units[u - slots]
                return [P.Instr(P.Op.WAIT, sig=free, slot=d, base=e.base, rel=e.rel + u - slots + 1,
                                order=order) for d in prior.consumers]
            if u == 0:
                prev = self._sym(env[op.prev], op)
                return [P.Instr(P.Op.WAIT, sig=free, slot=d, base=prev.base, rel=prev.rel, order=order)
                        for d in range(self.kernel.world_size) if d != rank]
            return []
        if isinstance(op, atom.StageOp):
            unit = units[index(op.unit, len(units), "unit")]
            return [P.Instr(P.Op.COPY, mech, unit.size,
                            dst=P.Ref(P.Space.STAGING, rank, buf, unit.index % slots, 0),
                            srcs=(P.Ref(source_space, rank, 0, 0, unit.src_offset),))]
        if isinstance(op, atom.PutOp):
            unit = units[index(op.unit, len(units), "unit")]
            off = ph.window_offsets[rank][unit.index]
            return [P.Instr(P.Op.PUT, mech, unit.size, peer=d, buf=buf, offset=off,
                            srcs=(P.Ref(source_space, rank, 0, 0, unit.src_offset),))
                    for d in unit.consumers]
        if isinstance(op, atom.NotifyOp):
            unit = units[index(op.unit, len(units), "unit")]
            v = self._sym(env[op.value], op)
            return [P.Instr(P.Op.SIGNAL, sig=ready, peer=d, slot=rank, base=v.base, rel=v.rel,
                            order=order) for d in unit.consumers]
        if isinstance(op, (atom.WaitReadyOp, atom.WaitPacketsOp)):
            group = groups[index(op.group, len(groups), "group")]
            e = self._sym(env[op.epoch], op)
            if isinstance(op, atom.WaitPacketsOp):
                return [P.Instr(P.Op.WAIT_PACKETS, P.Mech.PACKET, group.size, buf=buf, peer=s.rank,
                                offset=ph.window_offsets[s.rank][s.unit]) for s in group.remote]
            return [P.Instr(P.Op.WAIT, sig=ready, slot=s.rank, base=e.base, rel=e.rel + s.unit + 1,
                            order=order) for s in group.remote]
        if isinstance(op, (atom.CopyOp, atom.ReduceOp)):
            group = groups[index(op.group, len(groups), "group")]
            staged = ph.buffer.kind.data == snac.BufferKind.STAGING
            srcs = []
            for s in group.sources:
                if s.unit is None:
                    srcs.append(P.Ref(source_space, rank, 0, 0, s.offset))
                elif staged:
                    srcs.append(P.Ref(P.Space.STAGING, s.rank, buf, s.unit % slots, 0))
                else:
                    srcs.append(P.Ref(P.Space.WINDOW, rank, buf, s.rank, ph.window_offsets[s.rank][s.unit]))
            dst = P.Ref(P.Space.OUTPUT, rank, 0, 0, group.dst_offset)
            if isinstance(op, atom.CopyOp):
                return [P.Instr(P.Op.COPY, mech, group.size, dst=dst, srcs=tuple(srcs))]
            kind = ph.op.consume.kind
            assert kind is not None
            if mech == P.Mech.MULTIMEM and (
                len({(r.space, r.slot, r.offset) for r in srcs}) != 1 or srcs[0].space != P.Space.STAGING
            ):
                raise PlanBuildError(
                    f"{where(op)}: multimem needs every source of group {group.index} on rank {rank} "
                    "at the same staging slot; stage the local contribution (stage_local)"
                )
            return [P.Instr(P.Op.REDUCE, mech, group.size, redop=_REDOP[kind], dst=dst, srcs=tuple(srcs))]
        if isinstance(op, atom.AckOp):
            group = groups[index(op.group, len(groups), "group")]
            e = self._sym(env[op.epoch], op)
            return [P.Instr(P.Op.SIGNAL, sig=free, peer=s.rank, slot=rank, base=e.base,
                            rel=e.rel + s.unit + 1, order=order) for s in group.remote]
        if isinstance(op, atom.FinishOp):
            v = self._sym(env[op.value], op)
            return [P.Instr(P.Op.SIGNAL, sig=free, peer=d, slot=rank, base=v.base, rel=v.rel,
                            order=order) for d in range(self.kernel.world_size) if d != rank]
        raise PlanBuildError(f"{where(op)}: atom-to-plan cannot expand '{op.name}'")
