"""`atom-to-plan`: expand a rank-generic atom.kernel into a Plan.

For every rank, each atom.blocks region is walked with its loops unrolled and
its queries answered by the phase plans; each atom op becomes the plan
instructions that perform it for that rank. Epoch-dependent values stay
symbolic (`epoch + k`, `prev + k`), so one plan serves every call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, Operation, SSAValue

from purlin import plan as P
from purlin.atom import dialect as atom
from purlin.coll.attributes import ReduceKind, dtype_name
from purlin.conversion.runtime_convention import convention_error
from purlin.diagnostics import LocatedError
from purlin.snac import dialect as snac
from purlin.snac.errors import SnacExecutionError
from purlin.snac.index_eval import BINARY, BinaryFn, IndexEvaluator, block_code
from purlin.snac.phase_binding import PhaseState, phase_states


class PlanBuildError(LocatedError):
    """The kernel cannot be expanded into a plan (dynamic sizes, bad loops)."""


@dataclass(frozen=True)
class Sym:
    """A value relative to the rank's epoch state: base + rel."""

    base: P.Base
    rel: int = 0

    def __add__(self, other: int) -> Sym:
        if not isinstance(other, int):
            raise PlanBuildError(None, "epoch values can only be offset by constants")
        return Sym(self.base, self.rel + other)

    __radd__ = __add__


class _Half:
    """The current call's staging half: implicit in the plan (epoch parity)."""


HALF = _Half()

# The plan's codes are the IR enums' own (purlin.plan.model).
_MECH = {m: P.Mech[m.name] for m in atom.Mechanism}
_REDOP = {kind: P.RedOp[kind.name] for kind in ReduceKind}
_ORDER = {o: P.Order[o.name] for o in snac.MemoryOrder}
_SCOPE = {o: P.Scope[o.name] for o in snac.Scope}
_ROLE = {kind: P.RoleKind[kind.name] for kind in snac.RoleKind}


def build_plan(kernel: atom.KernelOp, counts: Sequence | None = None) -> P.Plan:
    """The plan of `kernel`, every rank's part; `counts` binds dynamic V counts."""
    plan = _build(kernel, counts, None)
    assert isinstance(plan, P.Plan)
    return plan


def build_rank_plan(kernel: atom.KernelOp, rank: int, counts: Sequence | None = None,
                    phases: dict[str, PhaseState] | None = None) -> P.RankPlan:
    """Rank `rank`'s part of the plan of `kernel`, built without the other
    ranks' programs: what one process running that rank needs. `phases`:
    `bind_phases(kernel, counts)`, when the caller lays out the rank's kernel
    tables from them too."""
    if not 0 <= rank < kernel.world_size:
        raise PlanBuildError(kernel, f"rank {rank} is outside world {kernel.world_size}")
    plan = _build(kernel, counts, rank, phases)
    assert isinstance(plan, P.RankPlan)
    return plan


def bind_phases(kernel: atom.KernelOp, counts: Sequence | None = None) -> dict[str, PhaseState]:
    """The phases of `kernel` bound to its world and `counts`: each rank's
    units and groups, built when first asked for."""
    if kernel.counts is not None and counts is None:
        raise PlanBuildError(kernel, "the kernel's counts are dynamic; build its plan at run time with them")
    try:
        return phase_states(kernel, kernel.world_size, counts)
    except SnacExecutionError as e:
        raise PlanBuildError(e.op, e.message) from None


def _build(kernel: atom.KernelOp, counts: Sequence | None, only: int | None,
           phases: dict[str, PhaseState] | None = None) -> P.Plan | P.RankPlan:
    for op in kernel.body.walk():
        if (why := convention_error(op)) is not None:
            raise PlanBuildError(op, why)
    if phases is None:
        phases = bind_phases(kernel, counts)
    world = kernel.world_size
    buffers = [op for op in kernel.body.block.ops if isinstance(op, snac.BufferOp)]
    signals = [op for op in kernel.body.block.ops if isinstance(op, snac.SignalsOp)]
    blocks = [op for op in kernel.body.block.ops if isinstance(op, atom.BlocksOp)]
    ex = _Expander(kernel, phases, {b.sym_name.data: i for i, b in enumerate(buffers)},
                   {s.sym_name.data: i for i, s in enumerate(signals)})
    programs = [ex.rank(r, blocks) for r in (range(world) if only is None else (only,))]
    assert isinstance(kernel.input.type, MemRefType) and isinstance(kernel.output.type, MemRefType)
    dtype = dtype_name(kernel.input.type.element_type)
    assert dtype is not None
    shared = dict(
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
                P.BufKind[b.kind.data.name],
                b.slots.value.data,
                b.elems.value.data,
            )
            for b in buffers
        ],
        signals=[P.SignalSpec(s.sym_name.data, s.slots.value.data) for s in signals],
        in_place=kernel.input == kernel.output,
        symmetric=kernel.symmetric is not None,
    )
    try:
        if only is None:
            plan = P.Plan(**shared, programs=programs)
            P.validate(plan)
            return plan
        part = P.RankPlan(**shared, rank=only, program=programs[0])
        P.validate_rank(part)
        return part
    except P.PlanError as e:
        raise PlanBuildError(kernel, f"the expanded plan is invalid: {e}") from None


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
        self._code: dict[Block, list[tuple[str, Operation, Any]]] = {}
        self._info: dict[Operation, _OpInfo] = {}

    def rank(self, rank: int, blocks: list[atom.BlocksOp]) -> list[list[P.Instr]]:
        env: dict[SSAValue, object] = {}
        for op in self.kernel.body.block.ops:
            if isinstance(op, (snac.BufferOp, snac.SignalsOp, snac.PhaseOp, atom.BlocksOp)):
                continue
            if isinstance(op, snac.AdvanceOp):
                amount = env[op.amount]
                if not isinstance(amount, int):
                    raise PlanBuildError(op, "the epoch advance must not depend on the epoch")
                if self.advance and amount != self.advance:
                    raise PlanBuildError(op, f"rank {rank} advances by {amount}, rank 0 by {self.advance}")
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
        for kind, op, how in self._compiled(block):
            if kind == "atom":
                out.extend(how.expand(self, _At(how, env, rank)))
            elif kind == "for":
                lb, ub, step, iv, body = how
                lb, ub, step = env[lb], env[ub], env[step]
                if not all(isinstance(v, int) for v in (lb, ub, step)):
                    raise PlanBuildError(op, "loop bounds must not depend on the epoch")
                for i in range(lb, ub, step):
                    env[iv] = i
                    self._block(body, env, rank, out)
            elif kind == "binary":
                res, lhs, rhs, fn = how
                env[res] = self.binary(op, fn, env[lhs], env[rhs])
            elif kind == "constant":
                env[how[0]] = how[1]
            else:
                self._value(op, env, rank)

    def _compiled(self, block: Block) -> list[tuple[str, Operation, Any]]:
        """`block`'s ops, each classified and its operands read once (IRDL's
        accessors cost more than expanding an op, and loops repeat them)."""
        return block_code(self._code, block, self._classify)

    def _classify(self, op: Operation) -> tuple[str, Operation, Any] | None:
        if isinstance(op, atom.FenceOp):
            return None  # a signal instruction fences its role's earlier writes itself
        if op.dialect_name() == "atom":
            return ("atom", op, self._op_info(op))
        if isinstance(op, arith.ConstantOp):
            return ("constant", op, (op.result, op.value.value.data))  # type: ignore[attr-defined]
        if (fn := BINARY.get(type(op))) is not None:
            return ("binary", op, (op.result, op.lhs, op.rhs, fn))  # type: ignore[attr-defined]
        return ("value", op, None)

    def _op_info(self, op: Operation) -> _OpInfo:
        expand = _EXPAND.get(type(op))
        if expand is None:
            raise PlanBuildError(op, "atom-to-plan cannot expand this op")
        return _OpInfo(self, op, expand)

    def _value(self, op: Operation, env: dict, rank: int) -> None:
        if not self.eval_index(op, env, rank):
            raise PlanBuildError(op, "atom-to-plan cannot expand this op")

    def binary(self, op: Operation, fn: BinaryFn, a: object, b: object) -> object:
        if isinstance(a, int) and isinstance(b, int):
            return fn(a, b)
        # Epoch values stay symbolic: only offsets keep them so.
        if isinstance(op, arith.AddiOp):
            return a + b  # type: ignore[operator]
        raise PlanBuildError(op, "only addition keeps a value relative to the epoch")

    def epoch_values(self, rank: int) -> tuple[Sym, Sym]:
        return Sym(P.Base.EPOCH), Sym(P.Base.PREV)

    def half(self, epoch: object) -> _Half:
        return HALF

    def _sym(self, v: object, op: Operation) -> Sym:
        if not isinstance(v, Sym):
            raise PlanBuildError(op, "expected a value relative to the epoch")
        return v

    def _wait_free(self, a: _At) -> list[P.Instr]:
        op = a.op
        units = a.units
        u = a.index("unit", len(units), "unit")
        if a.moves == "push":
            e = self._sym(a.value("epoch"), op)
            granted = sorted({d for d, _ in a.ph.plan.destinations[a.rank][u]} - {a.rank})
            return [P.Instr(P.Op.WAIT, sig=a.free, slot=d, base=e.base, rel=e.rel + 1, order=a.order, scope=a.scope)
                    for d in granted]
        if a.staged and u >= a.slots:
            e = self._sym(a.value("epoch"), op)
            prior = units[u - a.slots]
            return [P.Instr(P.Op.WAIT, sig=a.free, slot=d, base=e.base, rel=e.rel + u - a.slots + 1,
                            order=a.order, scope=a.scope) for d in prior.consumers]
        if u == 0:
            prev = self._sym(a.value("prev"), op)
            return [P.Instr(P.Op.WAIT, sig=a.free, slot=d, base=prev.base, rel=prev.rel, order=a.order, scope=a.scope)
                    for d in range(self.kernel.world_size) if d != a.rank]
        return []

    def _stage(self, a: _At) -> list[P.Instr]:
        unit = a.unit()
        return [P.Instr(P.Op.COPY, a.mech, unit.size,
                        dst=P.Ref(P.Space.STAGING, a.rank, a.buf, unit.index % a.slots, 0),
                        srcs=(P.Ref(a.source_space, a.rank, 0, 0, unit.src_offset),))]

    def _put(self, a: _At) -> list[P.Instr]:
        unit = a.unit()
        off = a.ph.window_offsets[a.rank][unit.index]
        return [P.Instr(P.Op.PUT, a.mech, unit.size, peer=d, buf=a.buf, offset=off,
                        srcs=(P.Ref(a.source_space, a.rank, 0, 0, unit.src_offset),))
                for d in unit.consumers]

    def _push(self, a: _At) -> list[P.Instr]:
        unit = a.unit()
        src = P.Ref(a.source_space, a.rank, 0, 0, unit.src_offset)
        return [P.Instr(P.Op.COPY, a.mech, unit.size, dst=P.Ref(P.Space.OUTPUT, d, 0, 0, off), srcs=(src,))
                for d, off in a.ph.plan.destinations[a.rank][unit.index]]

    def _grant(self, a: _At) -> list[P.Instr]:
        v = self._sym(a.value("value"), a.op)
        return [P.Instr(P.Op.SIGNAL, sig=a.free, peer=d, slot=a.rank, base=v.base, rel=v.rel, order=a.order, scope=a.scope)
                for d in a.ph.plan.senders(a.rank)]

    def _drain(self, a: _At) -> list[P.Instr]:
        v = self._sym(a.value("value"), a.op)
        return [P.Instr(P.Op.WAIT, sig=a.free, slot=d, base=v.base, rel=v.rel, order=a.order, scope=a.scope)
                for d in a.ph.plan.receivers(a.rank)]

    def _notify(self, a: _At) -> list[P.Instr]:
        unit = a.unit()
        v = self._sym(a.value("value"), a.op)
        return [P.Instr(P.Op.SIGNAL, sig=a.ready, peer=d, slot=a.rank, base=v.base, rel=v.rel,
                        order=a.order, scope=a.scope) for d in unit.consumers]

    def _wait_ready(self, a: _At) -> list[P.Instr]:
        group = a.group()
        e = self._sym(a.value("epoch"), a.op)
        return [P.Instr(P.Op.WAIT, sig=a.ready, slot=s.rank, base=e.base, rel=e.rel + s.unit + 1,
                        order=a.order, scope=a.scope) for s in group.remote]

    def _wait_packets(self, a: _At) -> list[P.Instr]:
        group = a.group()
        # The runtime polls for flag epoch + 1 itself; the operand must still be one.
        self._sym(a.value("epoch"), a.op)
        return [P.Instr(P.Op.WAIT_PACKETS, P.Mech.PACKET, group.size, buf=a.buf, peer=s.rank,
                        offset=a.ph.window_offsets[s.rank][s.unit]) for s in group.remote]

    def _sources(self, a: _At, group) -> list[P.Ref]:
        if a.moves == "push" and group.remote:
            raise PlanBuildError(
                a.op, f"rank {a.rank} consumes group {group.index} of phase '{a.name}', which its producers push")
        srcs = []
        for s in group.sources:
            if s.unit is None or a.moves == "pull":
                # In place: the rank's own buffer, or (direct pull) the source rank's.
                srcs.append(P.Ref(a.source_space, s.rank, 0, 0, s.offset))
            elif a.staged:
                srcs.append(P.Ref(P.Space.STAGING, s.rank, a.buf, s.unit % a.slots, 0))
            else:
                srcs.append(P.Ref(P.Space.WINDOW, a.rank, a.buf, s.rank, a.ph.window_offsets[s.rank][s.unit]))
        return srcs

    def _copy(self, a: _At) -> list[P.Instr]:
        group = a.group()
        srcs = self._sources(a, group)
        dst = P.Ref(P.Space.OUTPUT, a.rank, 0, 0, group.dst_offset)
        return [P.Instr(P.Op.COPY, a.mech, group.size, dst=dst, srcs=tuple(srcs))]

    def _reduce(self, a: _At) -> list[P.Instr]:
        group = a.group()
        srcs = self._sources(a, group)
        dst = P.Ref(P.Space.OUTPUT, a.rank, 0, 0, group.dst_offset)
        kind = a.info.reduce
        assert kind is not None
        if a.mech == P.Mech.MULTIMEM and (
            len({(r.space, r.slot, r.offset) for r in srcs}) != 1 or srcs[0].space != P.Space.STAGING
        ):
            raise PlanBuildError(
                a.op, f"multimem needs every source of group {group.index} on rank {a.rank} "
                "at the same staging slot; stage the local contribution (stage_local)"
            )
        return [P.Instr(P.Op.REDUCE, a.mech, group.size, redop=_REDOP[kind], dst=dst, srcs=tuple(srcs))]

    def _ack(self, a: _At) -> list[P.Instr]:
        group = a.group()
        e = self._sym(a.value("epoch"), a.op)
        return [P.Instr(P.Op.SIGNAL, sig=a.free, peer=s.rank, slot=a.rank, base=e.base,
                        rel=e.rel + s.unit + 1, order=a.order, scope=a.scope) for s in group.remote]

    def _finish(self, a: _At) -> list[P.Instr]:
        v = self._sym(a.value("value"), a.op)
        # A direct pull phase tells the ranks it read from; the others every peer.
        peers = a.ph.plan.senders(a.rank) if a.moves == "pull" else [
            d for d in range(self.kernel.world_size) if d != a.rank]
        return [P.Instr(P.Op.SIGNAL, sig=a.free, peer=d, slot=a.rank, base=v.base, rel=v.rel,
                        order=a.order, scope=a.scope) for d in peers]


class _OpInfo:
    """What expanding one atom op needs that no rank or iteration changes:
    its phase, buffer and signal indices, order, scope and mechanism as plan
    values, and its operands (read once: IRDL's accessors are slow)."""

    def __init__(self, ex: _Expander, op: Operation, expand: Callable[[_Expander, _At], list[P.Instr]]):
        ph = ex._phase(op)
        self.op, self.ph, self.expand = op, ph, expand
        self.buf = -1 if ph.buffer is None else ex.buf_index[ph.buf]
        self.ready, self.free = ex.sig_index[ph.ready], ex.sig_index[ph.free]
        self.name = ph.name
        self.slots = ph.slots
        self.moves = ph.moves
        self.staged = ph.staged
        self.order = _ORDER[op.order.data] if hasattr(op, "order") else P.Order.RELAXED  # type: ignore[attr-defined]
        self.scope = _SCOPE[op.scope.data] if hasattr(op, "scope") else P.Scope.SYSTEM  # type: ignore[attr-defined]
        self.mech = _MECH[op.mech.data] if hasattr(op, "mech") else P.Mech.NONE  # type: ignore[attr-defined]
        self.source_space = P.Space.INPUT if ph.op.source.data == snac.PhaseSource.INPUT else P.Space.OUTPUT
        self.reduce = ph.op.consume.kind
        self.operands = {name: getattr(op, name) for name in ("unit", "group", "epoch", "prev", "value")
                         if hasattr(op, name)}


class _At:
    """One atom op being expanded for one rank: its _OpInfo's fields, the
    values of its operands, and the rank's units and groups of its phase."""

    def __init__(self, info: _OpInfo, env: dict, rank: int):
        self.info, self.env, self.rank = info, env, rank
        self.op, self.ph, self.buf, self.ready, self.free = info.op, info.ph, info.buf, info.ready, info.free
        self.name, self.slots, self.moves, self.staged = info.name, info.slots, info.moves, info.staged
        self.order, self.scope, self.mech, self.source_space = info.order, info.scope, info.mech, info.source_space
        plan = info.ph.plan
        self.units, self.groups = plan.units[rank], plan.groups[rank]

    def value(self, operand: str) -> object:
        return self.env[self.info.operands[operand]]

    def index(self, operand: str, limit: int, what: str) -> int:
        i = self.value(operand)
        if not isinstance(i, int) or not 0 <= i < limit:
            raise PlanBuildError(self.op, f"rank {self.rank} has {limit} {what}s in phase '{self.name}', no {i}")
        return i

    def unit(self):
        return self.units[self.index("unit", len(self.units), "unit")]

    def group(self):
        return self.groups[self.index("group", len(self.groups), "group")]


# The plan instructions of each atom op, by its class.
_EXPAND: dict[type[Operation], Callable[[_Expander, _At], list[P.Instr]]] = {
    atom.WaitFreeOp: _Expander._wait_free,
    atom.StageOp: _Expander._stage,
    atom.PutOp: _Expander._put,
    atom.NotifyOp: _Expander._notify,
    atom.WaitReadyOp: _Expander._wait_ready,
    atom.WaitPacketsOp: _Expander._wait_packets,
    atom.CopyOp: _Expander._copy,
    atom.ReduceOp: _Expander._reduce,
    atom.AckOp: _Expander._ack,
    atom.FinishOp: _Expander._finish,
    atom.PushOp: _Expander._push,
    atom.GrantOp: _Expander._grant,
    atom.DrainOp: _Expander._drain,
}
