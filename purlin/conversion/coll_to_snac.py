"""`convert-coll-to-snac`: derive the Stage-Notify-Consume protocol from layouts.

Each `coll.collective` becomes one rank-generic `snac.program`:
- copy collectives: one phase, sources to destinations;
- reductions, direct: one phase, every destination reduces all sources;
- reductions, composed: reduce to one owner per name, then the owner's result
  is copied to the other destinations (two-shot all_reduce, in one kernel).
Each phase is either pulled through staging (throughput: chunked, cyclic over
slots) or pushed as 16-byte packets (latency). The regime and strategy come
from `purlin.conversion.cost_model` unless forced by the pass options.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, MemRefType, ModuleOp, UnitAttr
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import PassFailedException

from purlin.coll.attributes import ConsumeAttr, LayoutAttr, element_bytes
from purlin.coll.dialect import CollectiveOp
from purlin.coll.layouts import Layout, coalesced, format_name
from purlin.conversion.cost_model import THRESHOLDS, choose
from purlin.diagnostics import op_error
from purlin.snac import dialect as snac
from purlin.snac.protocol import PACKET_DATA_BYTES, PhasePlan, packet_elems, route_layouts


@dataclass(frozen=True)
class PhaseSpec:
    name: str
    source: snac.PhaseSource
    src: Layout
    dst: Layout
    consume: ConsumeAttr
    route: snac.Route | None = None


def _bytes_per_rank(layout: Layout, itemsize: int) -> int | None:
    if layout.is_dynamic:
        return None
    return layout.max_extent() * itemsize


@dataclass(frozen=True)
class Lowering:
    """What the pass decided for one collective: regime, strategy, unit sizes."""

    regime: snac.Regime
    strategy: snac.Strategy
    chunk: int  # elements per staged unit
    slots: int
    blocks: int
    src: Layout  # the exchange's layouts, coalesced unless composed
    dst: Layout


class LowerCollective(RewritePattern):
    def __init__(self, opts: ConvertCollToSnacPass):
        self.opts = opts

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CollectiveOp, rewriter: PatternRewriter) -> None:
        if op.groups is not None:
            raise PassFailedException(op_error(
                op, f"'{op.name}': has groups, whose layouts name group-local ranks; run "
                "coll-expand before convert-coll-to-snac"))
        inp, out = op.layouts()
        # In place: every phase that reads the input stages the rank's own
        # contribution too, so that a slice is overwritten only after it was read.
        in_place = op.input == op.output
        if in_place and (why := _in_place_refusal(inp, out)):
            raise PassFailedException(op_error(op, why))
        low = _decide(self.opts, op, inp, out)
        body = Block()
        b = Builder(InsertPoint.at_end(body))
        phases = _phases(low, op, inp, out)
        for p in phases:
            _declare_phase(b, p, low, op, in_place)
        _emit_roles(_Gen(b, low.regime, low.blocks), phases, low, op.world)
        program = snac.ProgramOp(
            op.input, op.output, op.counts, op.world, low.regime, low.strategy, Region(body)
        )
        program.location = op.location
        program.attributes.update(op.attributes)
        rewriter.replace(op, program)


def _decide(o: ConvertCollToSnacPass, op: CollectiveOp, inp: Layout, out: Layout) -> Lowering:
    """The cost model's choice for `op`, overridden by the pass options."""
    assert isinstance(op.input.type, MemRefType)
    itemsize = element_bytes(op.input.type.element_type)
    reducing = op.consume.kind is not None
    dynamic = inp.is_dynamic or out.is_dynamic
    choice = choose(
        o.arch,
        op.world,
        _bytes_per_rank(inp, itemsize),
        None if dynamic else sum(out.name_sizes.values()) * itemsize,
        reducing,
        dynamic,
        _bytes_per_rank(out, itemsize),
    )
    regime = choice.regime if o.regime == "auto" else snac.Regime(o.regime)
    strategy = _strategy(o, op, choice.strategy, out, reducing, dynamic)
    # One exchange moves names that travel together as one: fewer units,
    # signals and groups (the composed phases need the names for owners).
    src, dst = inp, out
    if strategy != snac.Strategy.COMPOSED:
        src, dst = coalesced(inp, out) or (inp, out)
    chunk_bytes = o.chunk_bytes if o.chunk_bytes > 0 else choice.chunk_bytes
    chunk = max(1, chunk_bytes // itemsize)
    if not dynamic:
        # No unit is larger than the largest slice: staging need not be either.
        chunk = min(chunk, max(max(src.name_sizes.values(), default=1), 1))
    elif (bound := _static_bound(op)) is not None:
        # Nor larger than the buffers, whatever the counts.
        chunk = min(chunk, max(bound, 1))
    if regime == snac.Regime.LATENCY and chunk_bytes % PACKET_DATA_BYTES:
        raise PassFailedException(
            op_error(op, f"packets carry {PACKET_DATA_BYTES}-byte payloads; "
                     f"chunk-bytes {chunk_bytes} is not a multiple")
        )
    return Lowering(
        regime, strategy, chunk,
        o.slots if o.slots > 0 else choice.slots,
        o.blocks if o.blocks > 0 else choice.blocks(regime),
        src, dst,
    )


def _static_bound(op: CollectiveOp) -> int | None:
    """The larger of the op's buffers, when both sizes are static."""
    assert isinstance(op.input.type, MemRefType) and isinstance(op.output.type, MemRefType)
    sizes = (op.input.type.get_shape()[0], op.output.type.get_shape()[0])
    return None if min(sizes) < 0 else max(sizes)


def _strategy(o: ConvertCollToSnacPass, op: CollectiveOp, chosen: snac.Strategy, out: Layout,
              reducing: bool, dynamic: bool) -> snac.Strategy:
    """The forced strategy if it applies, else the cost model's; composed
    falls back to direct where no slice has several receivers."""
    strategy = chosen
    if o.strategy != "auto":
        strategy = snac.Strategy(o.strategy)
        if reducing == (strategy == snac.Strategy.COPY):
            raise PassFailedException(
                op_error(op, f"strategy '{o.strategy}' does not apply to a "
                         f"{'reduction' if reducing else 'copy'} collective")
            )
    shared = not dynamic and any(
        len(out.slices_named(n)) > 1 for n in out.name_sizes
    )
    if strategy == snac.Strategy.COMPOSED and not shared:
        if o.strategy == "composed":
            raise PassFailedException(
                op_error(op, "the composed strategy needs static counts and a slice that "
                         "several ranks receive; use strategy=direct")
            )
        strategy = snac.Strategy.DIRECT
    return strategy


def _phases(low: Lowering, op: CollectiveOp, inp: Layout, out: Layout) -> list[PhaseSpec]:
    if low.strategy == snac.Strategy.COMPOSED:
        return [
            PhaseSpec("reduce", snac.PhaseSource.INPUT, inp, out, op.consume,
                      snac.Route.TO_OWNER),
            PhaseSpec("forward", snac.PhaseSource.OUTPUT, out, out, ConsumeAttr.copy(),
                      snac.Route.FROM_OWNER),
        ]
    return [PhaseSpec("exchange", snac.PhaseSource.INPUT, low.src, low.dst, op.consume)]


def _declare_phase(b: Builder, p: PhaseSpec, low: Lowering, op: CollectiveOp, in_place: bool) -> None:
    """The phase's buffer, its ready and free signals, and the phase itself."""
    assert isinstance(op.input.type, MemRefType)
    elem = op.input.type.element_type
    world = op.world
    buf = f"{p.name}_buf"
    stage_local = in_place and p.source == snac.PhaseSource.INPUT
    if low.regime == snac.Regime.LATENCY:
        elems = _window_elems(p, op, world, packet_elems(element_bytes(elem)), stage_local)
        b.insert(snac.BufferOp(buf, snac.BufferKind.PACKETS, 2, world, elems, elem))
    else:
        b.insert(snac.BufferOp(buf, snac.BufferKind.STAGING, 2, low.slots, low.chunk, elem))
    b.insert(snac.SignalsOp(f"{p.name}_ready", world))
    b.insert(snac.SignalsOp(f"{p.name}_free", world))
    phase = snac.PhaseOp(
        p.name, p.source, LayoutAttr.from_layout(p.src), LayoutAttr.from_layout(p.dst),
        p.consume, low.chunk if low.regime == snac.Regime.THROUGHPUT else 0,
        buf, f"{p.name}_ready", f"{p.name}_free", op.deterministic is not None,
        p.route,
    )
    if stage_local:
        phase.properties["stage_local"] = UnitAttr()
    b.insert(phase)


def _emit_roles(gen: _Gen, phases: list[PhaseSpec], low: Lowering, world: int) -> None:
    """The epoch prologue, the roles that run the phases, and the advance."""
    gen.prologue([p.name for p in phases])
    if low.regime == snac.Regime.LATENCY and len(phases) == 1:
        gen.fused_role("exchange", handshake=not _mutual(phases[0], world))
    elif low.strategy == snac.Strategy.COMPOSED:
        gen.producer_role("reduce")
        gen.consumer_role("reduce", snac.RoleKind.REDUCER, forward="forward")
        gen.consumer_role("forward", snac.RoleKind.CONSUMER)
    else:
        gen.producer_role("exchange")
        # A copy's own slice needs no wait: a role of its own copies it
        # while the consumer pulls the peers' units.
        local = low.strategy == snac.Strategy.COPY and low.regime == snac.Regime.THROUGHPUT
        gen.consumer_role("exchange", snac.RoleKind.CONSUMER,
                          local_blocks=max(1, gen.blocks // 4) if local else 0)
    gen.b.insert(snac.AdvanceOp(gen.adv))


def _in_place_refusal(inp: Layout, out: Layout) -> str | None:
    """Why the input and output cannot be one buffer, or None. Staging the
    rank's own contribution orders the overwrite of a slice after the reads of
    the input slice it covers when both are the same slice (one name, one
    range); an output slice that covers another name's input would be
    overwritten while that name may still be on its way to a peer."""
    if inp.is_dynamic or out.is_dynamic:
        return ("'coll.collective': input and output are one buffer, but the counts are dynamic: which slices overlap is not "
                "known; pass distinct buffers")
    for rank in range(inp.world):
        for o in out.slices(rank):
            for i in inp.slices(rank):
                if i.offset < o.end and o.offset < i.end and (i.offset, i.size, i.name) != (o.offset, o.size, o.name):
                    return (f"'coll.collective': input and output are one buffer, but rank {rank}'s output slice "
                            f"{format_name(o.name)} at [{o.offset}, {o.end}) covers its input slice "
                            f"{format_name(i.name)} at [{i.offset}, {i.end}), which may still be on its way to "
                            "a peer; in place, each output slice must be the input slice of its own name "
                            "(all_reduce); pass distinct buffers")
    return None


def _mutual(p: PhaseSpec, world: int) -> bool:
    """Whether every rank that pushes to a peer also receives from that peer
    in the same phase. Then a rank writes a window half again (two calls
    later) only after it polled the peer's packets of the call in between,
    which the peer pushed after its kernel finished reading that half: the
    per-call wait_free / finish handshake is implied and can go. snac-verify
    checks the resulting program on its own; dynamic layouts keep the
    handshake (their peers are not known here)."""
    if p.src.is_dynamic or p.dst.is_dynamic:
        return False
    plan = PhasePlan(world, p.src, p.dst, p.consume.kind is not None, 0)
    pairs = {(u.producer, d) for units in plan.units for u in units for d in u.consumers}
    return all((d, s) in pairs for s, d in pairs)


def _window_elems(p: PhaseSpec, op: CollectiveOp, world: int, align: int, stage_local: bool) -> int:
    """A packet window holds, per source, everything that source pushes in a call
    (with `stage_local`, its own contribution too)."""
    if p.src.is_dynamic:
        # Dynamic sizes are bounded by the buffers the program was given.
        assert isinstance(op.input.type, MemRefType) and isinstance(op.output.type, MemRefType)
        bound = max(op.input.type.get_shape()[0], op.output.type.get_shape()[0])
        if bound < 0:
            raise PassFailedException(
                op_error(op, "latency regime needs static buffer sizes to size the packet window")
            )
        # Each of a source's units may start on a fresh packet.
        return bound + world * align
    src, dst = route_layouts(p.src, p.dst, p.route)
    plan = PhasePlan(world, src, dst, p.consume.kind is not None, 0,
                     keep_unread=p.source == snac.PhaseSource.OUTPUT, stage_local=stage_local)
    return plan.window_elems(align)


class _Gen:
    """Emits the rank-generic body: loops over units and groups, not peers."""

    def __init__(self, b: Builder, regime: snac.Regime, blocks: int):
        self.b = b
        self.regime = regime
        self.blocks = blocks

    def _const(self, b: Builder, v: int) -> SSAValue:
        return b.insert(arith.ConstantOp.from_int_and_width(v, IndexType())).result

    def prologue(self, phases: list[str]) -> None:
        b = self.b
        self.rank = b.insert(snac.RankOp()).result
        ep = b.insert(snac.EpochOp())
        self.epoch, self.prev = ep.epoch, ep.prev
        self.half = b.insert(snac.HalfOp(self.epoch)).result
        self.c0 = self._const(b, 0)
        self.c1 = self._const(b, 1)
        most = b.insert(snac.MaxUnitsOp(phases[0])).result
        for name in phases[1:]:
            other = b.insert(snac.MaxUnitsOp(name)).result
            most = b.insert(arith.MaxUIOp(most, other)).result
        # Odd, so the staging half alternates; at least 1 for packet flags.
        self.adv = b.insert(arith.OrIOp(most, self.c1)).result
        self.next_epoch = b.insert(arith.AddiOp(self.epoch, self.adv)).result
        if self.regime == snac.Regime.LATENCY:
            # Every packet of this call carries the same flag.
            self.flag = b.insert(arith.AddiOp(self.epoch, self.c1)).result

    def _role(self, kind: snac.RoleKind, blocks: int = 0) -> Builder:
        block = Block()
        self.b.insert(snac.RoleOp(kind, blocks or self.blocks, Region(block)))
        return Builder(InsertPoint.at_end(block))

    def _loop(self, b: Builder, count: SSAValue, first: SSAValue | None = None) -> tuple[Builder, SSAValue]:
        block = Block(arg_types=[IndexType()])
        loop = b.insert(scf.ForOp(first or self.c0, count, self.c1, [], Region(block)))
        inner = Builder(InsertPoint.at_end(loop.body.block))
        return inner, loop.body.block.args[0]

    def _produce(self, b: Builder, phase: str, unit: SSAValue, reclaim: bool = True) -> None:
        if reclaim:
            b.insert(snac.ReclaimOp(phase, unit, self.rank, self.epoch, self.prev))
        if self.regime == snac.Regime.LATENCY:
            b.insert(snac.PutOp(phase, unit, self.rank, self.half, self.flag))
            return
        b.insert(snac.StageOp(phase, unit, self.rank, self.half))
        u1 = b.insert(arith.AddiOp(unit, self.c1)).result
        value = b.insert(arith.AddiOp(self.epoch, u1)).result
        b.insert(snac.NotifyOp(phase, unit, self.rank, value))

    def producer_role(self, phase: str) -> None:
        b = self._role(snac.RoleKind.PRODUCER)
        n = b.insert(snac.UnitsOp(phase, self.rank)).result
        body, u = self._loop(b, n)
        self._produce(body, phase, u)
        body.insert(scf.YieldOp())

    def fused_role(self, phase: str, handshake: bool) -> None:
        """Latency, one phase: the same blocks push the rank's units and consume
        its groups. Without `handshake`, no wait_free before the pushes and no
        finish after the reads (see _mutual)."""
        b = self._role(snac.RoleKind.FUSED)
        n = b.insert(snac.UnitsOp(phase, self.rank)).result
        body, u = self._loop(b, n)
        self._produce(body, phase, u, reclaim=handshake)
        body.insert(scf.YieldOp())
        n = b.insert(snac.GroupsOp(phase, self.rank)).result
        body, g = self._loop(b, n)
        token = body.insert(snac.WaitOp(phase, g, self.rank, self.epoch)).token
        body.insert(snac.ConsumeOp(phase, g, self.rank, self.half, token))
        body.insert(scf.YieldOp())
        if handshake:
            b.insert(snac.FinishOp(phase, self.rank, self.next_epoch))

    def consumer_role(self, phase: str, kind: snac.RoleKind, forward: str | None = None,
                      local_blocks: int = 0) -> None:
        """Consumes the rank's groups; with `local_blocks`, only those that read
        staging, and a LOCAL role of that many blocks the rest."""
        b = self._role(kind)
        query = snac.StagedGroupsOp if local_blocks else snac.GroupsOp
        n = b.insert(query(phase, self.rank)).result
        body, g = self._loop(b, n)
        token = body.insert(snac.WaitOp(phase, g, self.rank, self.epoch)).token
        body.insert(snac.ConsumeOp(phase, g, self.rank, self.half, token))
        if forward is not None:
            # The owner's reduced chunk g is unit g of the forwarding phase.
            self._produce(body, forward, g)
        if self.regime == snac.Regime.THROUGHPUT:
            body.insert(snac.AckOp(phase, g, self.rank, self.epoch))
        body.insert(scf.YieldOp())
        b.insert(snac.FinishOp(phase, self.rank, self.next_epoch))
        if local_blocks:
            lb = self._role(snac.RoleKind.LOCAL, local_blocks)
            first = lb.insert(snac.StagedGroupsOp(phase, self.rank)).result
            n = lb.insert(snac.GroupsOp(phase, self.rank)).result
            body, g = self._loop(lb, n, first)
            # The wait has no staged source to wait for; its token orders the read.
            token = body.insert(snac.WaitOp(phase, g, self.rank, self.epoch)).token
            body.insert(snac.ConsumeOp(phase, g, self.rank, self.half, token))
            body.insert(scf.YieldOp())


@dataclass(frozen=True)
class ConvertCollToSnacPass(ModulePass):
    """Options: arch (sm_80|sm_90|sm_100), regime (auto|latency|throughput),
    strategy (auto|copy|direct|composed), chunk-bytes, slots and blocks per role
    (0: from the cost model)."""

    name = "convert-coll-to-snac"

    arch: str = "sm_90"
    regime: str = "auto"
    strategy: str = "auto"
    chunk_bytes: int = 0
    slots: int = 0
    blocks: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _check_choice("arch", self.arch, THRESHOLDS)
        _check_choice("regime", self.regime, ["auto", *snac.Regime])
        _check_choice("strategy", self.strategy, ["auto", *snac.Strategy])
        if self.chunk_bytes < 0 or self.slots < 0 or self.blocks < 0:
            raise PassFailedException(
                f"{self.name}: chunk-bytes, slots and blocks must be non-negative"
            )
        PatternRewriteWalker(LowerCollective(self), apply_recursively=False).rewrite_module(op)


def _check_choice(option: str, value: str, allowed) -> None:
    allowed = [str(a) for a in allowed]
    if value not in allowed:
        raise PassFailedException(
            f"convert-coll-to-snac: unknown {option} '{value}', expected one of {', '.join(allowed)}"
        )
