"""`convert-coll-to-snac`: derive the Stage-Notify-Consume protocol from layouts.

Each `coll.collective` becomes one rank-generic `snac.program`:
- copy collectives: one phase, sources to destinations;
- reductions, direct: one phase, every destination reduces all sources;
- reductions, composed: reduce to one owner per name, then the owner's result
  is copied to the other destinations (two-shot all_reduce, in one kernel).
Each phase is either pulled through staging (throughput: chunked, cyclic over
slots) or pushed as 16-byte packets (latency). With `symmetric` (every rank's
buffers addressable by its peers) throughput phases move data in place
instead: a reduction pulls its sources from the peers' inputs, a copy pushes
each unit into its destinations' outputs (the producer's own included, so
each input is read once), and composed reductions push the reduced slice on.
The regime and strategy come from `purlin.conversion.cost_model` unless
forced by the pass options.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

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
from purlin.coll.layouts import Layout, LayoutKind, coalesced, format_name
from purlin.conversion.cost_model import COPY_ENGINE_ALIGN_BYTES, THRESHOLDS, choose, packet_blocks, resident_budget
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
    chunk: int  # elements per unit (0: one unit per slice)
    slots: int
    blocks: int  # of each role that moves data
    src: Layout  # the exchange's layouts, coalesced unless composed
    dst: Layout
    direct: bool = False  # phases move in place between the ranks' buffers
    budget: int | None = None  # blocks of a rank's grid in all, where ranks share a GPU
    copy_engine: bool = False  # one stream role whose pushes the copy engine makes
    # Dynamic layouts coalesced once bound (host-bound counts, not composed): see snac.PhaseOp.coalesce.
    coalesce: bool = False
    # blocks= given where ranks share a GPU: the most a rank's grid may have for all to be resident.
    resident: int | None = None


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
        phases = _phases(low, op, inp, out)
        if low.direct and in_place and (why := _pull_overwrites_read_input(phases, op.world)):
            # The rank's output would overwrite its input while a peer still
            # reads it in place: stage instead.
            low = _decide(self.opts, op, inp, out, direct=False)
            phases = _phases(low, op, inp, out)
            assert why
        # Latency, one phase: one fused role, whose handshake goes where the phase is mutual.
        fused = low.regime == snac.Regime.LATENCY and len(phases) == 1 and not low.copy_engine
        if fused and self.opts.blocks == 0 and (pieces := _packet_pieces(
                phases[0], op.world, element_bytes(op.input.type.element_type), in_place)) is not None:
            low = replace(low, blocks=packet_blocks(self.opts.arch, low.blocks, pieces))
        mutual = fused and _mutual(phases[0], op.world, self.opts.counts_on_host)
        body = Block()
        b = Builder(InsertPoint.at_end(body))
        for p in phases:
            _declare_phase(b, p, low, op, in_place, empty_units=mutual and (p.src.is_dynamic or p.dst.is_dynamic))
        gen = _Gen(b, low.regime, low.blocks, {p.name: _moves(p, low) for p in phases}, _scope(self.opts, op.world))
        _emit_roles(gen, phases, low, fused, handshake=not mutual)
        grid = sum(r.blocks.value.data for r in body.ops if isinstance(r, snac.RoleOpBase))
        if low.resident is not None and grid > low.resident:
            raise PassFailedException(op_error(
                op, f"blocks={self.opts.blocks}: its roles take {grid} blocks a rank, but "
                f"{self.opts.ranks_per_device} ranks share a GPU of {self.opts.sms or THRESHOLDS[self.opts.arch].sms} "
                f"SMs, which hold {low.resident} a rank at once, and every rank's blocks wait for its peers'; "
                "expected fewer blocks, or none asked (the cost model's)"))
        program = snac.ProgramOp(
            op.input, op.output, op.counts, op.world, low.regime, low.strategy, Region(body),
            symmetric=self.opts.symmetric,
        )
        program.location = op.location
        # What the program is made of was made of the collective: diagnostics point there.
        for inner in body.walk():
            inner.location = op.location
        program.attributes.update(op.attributes)
        rewriter.replace(op, program)


def _decide(o: ConvertCollToSnacPass, op: CollectiveOp, inp: Layout, out: Layout,
            direct: bool = True) -> Lowering:
    """The cost model's choice for `op`, overridden by the pass options;
    `direct`: in place where the program is symmetric (else staged)."""
    assert isinstance(op.input.type, MemRefType)
    itemsize = element_bytes(op.input.type.element_type)
    reducing = op.consume.kind is not None
    dynamic = inp.is_dynamic or out.is_dynamic
    # Counts read on the device build staged tables only (include/purlin/counts.cuh);
    # counts the host binds give it every offset, in place included.
    symmetric = o.symmetric and direct and (not dynamic or o.counts_on_host)
    if o.copy_engine and (why := _copy_engine_refusal(o, op, reducing, dynamic, symmetric)):
        raise PassFailedException(op_error(op, f"copy-engine: {why}"))
    device_counts = dynamic and not o.counts_on_host
    # Counts given at each call are costed at the most the buffers take.
    total = _static_bound(op) if dynamic else sum(out.name_sizes.values())
    choice = choose(
        o.arch,
        op.world,
        _bytes_per_rank(inp, itemsize),
        None if total is None else total * itemsize,
        reducing,
        device_counts,
        _bytes_per_rank(out, itemsize),
        symmetric=symmetric,
        ranks_per_device=o.ranks_per_device,
        sms=o.sms,
        regime=snac.Regime.THROUGHPUT if o.copy_engine else None if o.regime == "auto" else snac.Regime(o.regime),
        single_receivers=not dynamic and all(len(out.slices_named(n)) == 1 for n in out.name_sizes),
        aligned=not dynamic and _slices_aligned((inp, out), itemsize, COPY_ENGINE_ALIGN_BYTES),
        in_place=op.input == op.output,
    )
    # The cost model's copy engine only where no option asks for what it does not do.
    copy_engine = o.copy_engine or (
        choice.copy_engine and o.regime == "auto" and o.strategy == "auto" and o.blocks == 0 and o.chunk_bytes == 0
    )
    regime = choice.regime
    in_place = symmetric and regime == snac.Regime.THROUGHPUT
    strategy = _strategy(o, op, choice.strategy, out, reducing, device_counts)
    # One exchange moves names that travel together as one: fewer units,
    # signals and groups (the composed phases need the names for owners).
    src, dst = inp, out
    coalesce = False
    if strategy != snac.Strategy.COMPOSED:
        src, dst = coalesced(inp, out) or (inp, out)
        # Dynamic names merge once bound: the host binds them (the device's tables do not merge).
        coalesce = o.counts_on_host and inp.is_dynamic and inp == out and inp.kind == LayoutKind.SCATTERED
    chunk_bytes = o.chunk_bytes if o.chunk_bytes > 0 else choice.chunk_bytes
    chunk = _unit_elems(op, chunk_bytes, itemsize, src, dynamic, in_place)
    if regime == snac.Regime.LATENCY and chunk_bytes % PACKET_DATA_BYTES:
        raise PassFailedException(
            op_error(op, f"packets carry {PACKET_DATA_BYTES}-byte payloads; "
                     f"chunk-bytes {chunk_bytes} is not a multiple")
        )
    return Lowering(
        regime, strategy, chunk,
        o.slots if o.slots > 0 else choice.slots,
        o.blocks if o.blocks > 0 else choice.blocks(regime),
        src, dst, in_place, None if o.blocks > 0 else choice.block_budget, copy_engine, coalesce,
        resident=resident_budget(o.arch, o.ranks_per_device, o.sms) if o.blocks > 0 else None,
    )


def _slices_aligned(layouts: tuple[Layout, ...], itemsize: int, align: int) -> bool:
    """Whether every slice of `layouts` starts and ends at a multiple of `align` bytes."""
    return all(
        (s.offset * itemsize) % align == 0 and (s.size * itemsize) % align == 0
        for layout in layouts for rank in range(layout.world) for s in layout.slices(rank)
    )


def _copy_engine_refusal(o: ConvertCollToSnacPass, op: CollectiveOp, reducing: bool, dynamic: bool,
                         symmetric: bool) -> str | None:
    """Why the copy engine cannot move `op`, or None: it copies whole spans
    between the ranks' own buffers, so only a symmetric copy collective of
    fixed counts in the throughput regime."""
    if reducing:
        return ("the collective reduces; the copy engine only copies (expected all_gather, all_to_all or their "
                "V forms)")
    if dynamic:
        return "counts read on the device are not taken; the copy engine's spans are fixed when the call is issued"
    if not symmetric:
        return "needs symmetric=true (the copies go from the rank's input to the peers' outputs)"
    if o.regime == snac.Regime.LATENCY:
        return "copies whole spans, not packets: regime=latency does not apply"
    if o.strategy not in ("auto", snac.Strategy.COPY):
        return f"strategy '{o.strategy}' does not apply; the copy engine copies"
    return None


def _unit_elems(op: CollectiveOp, chunk_bytes: int, itemsize: int, src: Layout, dynamic: bool,
                in_place: bool) -> int:
    """Elements per unit: 0 (whole slices) for in-place phases the cost model
    left unchunked, else chunk-bytes' worth, at most the largest slice (no
    staging need be larger) or, with dynamic counts, the larger buffer."""
    if in_place and chunk_bytes == 0:
        return 0
    chunk = max(1, chunk_bytes // itemsize)
    if not dynamic:
        return min(chunk, max(max(src.name_sizes.values(), default=1), 1))
    if (bound := _static_bound(op)) is not None:
        return min(chunk, max(bound, 1))
    return chunk


def _static_bound(op: CollectiveOp) -> int | None:
    """The larger of the op's buffers, when both sizes are static."""
    assert isinstance(op.input.type, MemRefType) and isinstance(op.output.type, MemRefType)
    sizes = (op.input.type.get_shape()[0], op.output.type.get_shape()[0])
    return None if min(sizes) < 0 else max(sizes)


def _strategy(o: ConvertCollToSnacPass, op: CollectiveOp, chosen: snac.Strategy, out: Layout,
              reducing: bool, device_counts: bool) -> snac.Strategy:
    """The forced strategy if it applies, else the cost model's; composed
    falls back to direct where no slice has several receivers.
    `device_counts`: the counts are read on the device."""
    strategy = chosen
    if o.strategy != "auto":
        strategy = snac.Strategy(o.strategy)
        if reducing == (strategy == snac.Strategy.COPY):
            raise PassFailedException(
                op_error(op, f"strategy '{o.strategy}' does not apply to a "
                         f"{'reduction' if reducing else 'copy'} collective")
            )
    # Holders are known by a layout's kind, its counts bound or not.
    shared = any(out.holder_count(n) > 1 for n in out.names())
    if strategy == snac.Strategy.COMPOSED and not shared:
        if o.strategy == "composed":
            raise PassFailedException(
                op_error(op, "the composed strategy needs a slice that several ranks receive; "
                         "use strategy=direct")
            )
        strategy = snac.Strategy.DIRECT
    if strategy == snac.Strategy.COMPOSED and device_counts:
        raise PassFailedException(
            op_error(op, "the composed strategy cannot take counts read on the device: their prologue "
                     "builds the tables of direct phases only (include/purlin/counts.cuh), not the owners' "
                     "routes; use strategy=direct, or counts-on-host=true where the host binds every "
                     "call's counts")
        )
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


def _scope(o: ConvertCollToSnacPass, world: int) -> snac.Scope:
    """The scope of every signal: the option's, or (auto) GPU scope where all
    the ranks share one GPU, else system scope."""
    if o.scope != "auto":
        return snac.Scope(o.scope)
    return snac.Scope.GPU if o.ranks_per_device >= world else snac.Scope.SYSTEM


def _moves(p: PhaseSpec, low: Lowering) -> str:
    """How phase `p` moves data (snac.PhaseOp.moves): in place, a reduction
    pulled and a copy pushed; else through packets or staging."""
    if low.direct:
        return (snac.Transfer.PUSH if p.consume.kind is None else snac.Transfer.PULL).value
    return "packets" if low.regime == snac.Regime.LATENCY else "staging"


def _declare_phase(b: Builder, p: PhaseSpec, low: Lowering, op: CollectiveOp, in_place: bool,
                   empty_units: bool) -> None:
    """The phase's buffer, its ready and free signals, and the phase itself;
    `empty_units`: an empty slice makes a unit too (see _mutual)."""
    assert isinstance(op.input.type, MemRefType)
    elem = op.input.type.element_type
    world = op.world
    moves = _moves(p, low)
    via: str | snac.Transfer = f"{p.name}_buf"
    stage_local = _stage_local(p, moves, in_place)
    if moves == "packets":
        elems = _window_elems(p, op, world, packet_elems(element_bytes(elem)), stage_local)
        b.insert(snac.BufferOp(via, snac.BufferKind.PACKETS, 2, world, elems, elem))
    elif moves == "staging":
        b.insert(snac.BufferOp(via, snac.BufferKind.STAGING, 2, low.slots, low.chunk, elem))
    else:
        via = snac.Transfer(moves)
    b.insert(snac.SignalsOp(f"{p.name}_ready", world))
    b.insert(snac.SignalsOp(f"{p.name}_free", world))
    phase = snac.PhaseOp(
        p.name, p.source, LayoutAttr.from_layout(p.src), LayoutAttr.from_layout(p.dst),
        p.consume, low.chunk if low.regime == snac.Regime.THROUGHPUT else 0,
        via, f"{p.name}_ready", f"{p.name}_free", op.deterministic is not None,
        p.route,
    )
    if stage_local:
        phase.properties["stage_local"] = UnitAttr()
    if empty_units:
        phase.properties["empty_units"] = UnitAttr()
    if low.coalesce:
        phase.properties["coalesce"] = UnitAttr()
    b.insert(phase)


def _stage_local(p: PhaseSpec, moves: str, in_place: bool) -> bool:
    """Whether the phase's producer stages (or pushes) its own contribution: a
    pushing producer writes its own destination too, from the one read of its
    input; in place, a phase that reads the input orders the overwrite after it."""
    return moves == "push" or (in_place and p.source == snac.PhaseSource.INPUT and moves != "pull")


def _packet_pieces(p: PhaseSpec, world: int, itemsize: int, in_place: bool) -> int | None:
    """The most packets one rank's packet role puts (each once, to all its
    consumers) or polls in phase `p`, as put_units and poll_consume spread
    them over its threads; None where the counts are dynamic."""
    if p.src.is_dynamic or p.dst.is_dynamic:
        return None
    plan = _packet_plan(p, world, _stage_local(p, "packets", in_place))
    per = packet_elems(itemsize)
    put = [sum(max(1, -(-u.size // per)) for u in plan.units[r]) for r in range(world)]
    polled = [sum(-(-g.size // per) if g.size > 0 or not g.remote else 1 for g in plan.groups[r])
              for r in range(world)]
    return max(max(put), max(polled), 0)


def _emit_roles(gen: _Gen, phases: list[PhaseSpec], low: Lowering, fused: bool, handshake: bool) -> None:
    """The epoch prologue, the roles that run the phases, and the advance.
    Roles that only signal (a pulled phase's producer, a pushed phase's
    consumer) get one block; those that move data share the rest. `fused`:
    latency, one phase, one fused role, with its per-call handshake or not."""
    gen.prologue([p.name for p in phases])
    direct, copy = low.direct, low.strategy == snac.Strategy.COPY
    # A staged copy's own slice needs no wait: a role of its own copies it
    # while the consumer pulls the peers' units.
    local = copy and low.regime == snac.Regime.THROUGHPUT and not direct
    if low.copy_engine:
        (phase,) = phases
        gen.stream_role(phase.name)
    elif fused:
        (b,) = _role_blocks(low, lambda n: [n])
        gen.fused_role("exchange", b, handshake)
    elif low.strategy == snac.Strategy.COMPOSED:
        producer, reducer, consumer = _role_blocks(low, lambda n: [1, n, 1] if direct else [n, n, n])
        gen.producer_role("reduce", producer)
        gen.consumer_role("reduce", snac.RoleKind.REDUCER, reducer, forward="forward")
        gen.consumer_role("forward", snac.RoleKind.CONSUMER, consumer)
    else:
        producer, consumer, *rest = _role_blocks(
            low, lambda n: ([n, 1] if copy else [1, n]) if direct else [n, n, max(1, n // 4)] if local else [n, n])
        gen.producer_role("exchange", producer)
        gen.consumer_role("exchange", snac.RoleKind.CONSUMER, consumer, local_blocks=rest[0] if rest else 0)
    gen.b.insert(snac.AdvanceOp(gen.adv))


def _role_blocks(low: Lowering, shape: Callable[[int], list[int]]) -> list[int]:
    """Blocks of each role, `shape(n)` for n blocks per data-moving role: the
    most up to low.blocks whose grid fits low.budget (where ranks share a GPU).
    There a throughput kernel's data roles grow past low.blocks to fill the
    budget, at the blocks an SM the grids need anyway (half the budget where
    they fit one an SM), if the capped grids would leave more than an eighth
    of it idle: world 3's 65 blocks of 88 left reduce_scatter of 16 and
    256 MiB 1.13x as long; one block more at worlds 2 and 4 (65 of 66) gained
    nothing (bench/results/1xh100-session-12-07g)."""
    n, limit = low.blocks, low.budget
    if limit is not None:
        capped = sum(shape(min(n, limit)))
        if low.regime == snac.Regime.THROUGHPUT:
            limit = limit // 2 if capped <= limit // 2 else limit
            if capped * 8 < limit * 7:
                n = limit
        while n > 1 and sum(shape(n)) > limit:
            n -= 1
    return shape(n)


def _pull_overwrites_read_input(phases: list[PhaseSpec], world: int) -> str | None:
    """In place, why a rank's output may be overwritten while a peer still
    reads it as input in place, or None: some range of a rank's buffer that a
    peer pulls is written by another rank (the rank itself included). A range
    that its own reader writes later (a composed reduction's owner pushing
    the reduced slice back) is ordered by that reader."""
    pulled: dict[int, list[tuple[int, int, int]]] = {}
    written: dict[int, list[tuple[int, int, int]]] = {}
    for p in phases:
        src, dst = route_layouts(*_structural(p.src, p.dst, world), p.route)
        plan = PhasePlan(world, src, dst, p.consume.kind is not None, 0,
                         keep_unread=p.source == snac.PhaseSource.OUTPUT,
                         stage_local=p.consume.kind is None)
        for groups in plan.groups:
            for g in groups:
                if p.consume.kind is not None:
                    written.setdefault(g.consumer, []).append((g.dst_offset, g.dst_offset + g.size, g.consumer))
                    if p.source == snac.PhaseSource.INPUT:
                        for s in g.remote:
                            if s.rank != g.consumer:
                                pulled.setdefault(s.rank, []).append((s.offset, s.offset + g.size, g.consumer))
                else:
                    for s in g.remote:
                        written.setdefault(g.consumer, []).append((g.dst_offset, g.dst_offset + g.size, s.rank))
    for rank, reads in pulled.items():
        for lo, hi, reader in reads:
            for wlo, whi, writer in written.get(rank, []):
                if writer != reader and lo < whi and wlo < hi:
                    return (f"rank {writer} writes [{wlo}, {whi}) of rank {rank}'s buffer while rank {reader} "
                            f"reads [{lo}, {hi}) of it in place")
    return None


def _in_place_refusal(inp: Layout, out: Layout) -> str | None:
    """Why the input and output cannot be one buffer, or None. Staging the
    rank's own contribution orders the overwrite of a slice after the reads of
    the input slice it covers when both are the same slice (one name, one
    range); an output slice that covers another name's input would be
    overwritten while that name may still be on its way to a peer."""
    if inp.is_dynamic or out.is_dynamic:
        if inp == out:
            return None  # one layout bound to one set of counts: each output slice is its own name's input slice
        return ("'coll.collective': input and output are one buffer, but the counts are dynamic and the input and "
                "output layouts differ: which slices overlap is not known; pass distinct buffers")
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


def _mutual(p: PhaseSpec, world: int, counts_on_host: bool) -> bool:
    """Whether every rank that pushes to a peer also receives from that peer
    in the same phase, every call. Then a rank writes a window half again
    (two calls later) only after it polled the peer's packets of the call in
    between, which the peer pushed after its kernel finished reading that
    half: the per-call wait_free / finish handshake is implied and can go.
    snac-verify checks the resulting program on its own.

    Dynamic counts bound on the host: the phase then makes a unit of every
    slice, a flag-only packet where the slice is empty (empty_units), so its
    pairs are the layouts' structure whatever the counts: those of counts
    all 1. Counts read on the device keep the handshake: the tables the
    device builds have no empty units (include/purlin/counts_tables.h)."""
    if (p.src.is_dynamic or p.dst.is_dynamic) and not counts_on_host:
        return False
    plan = PhasePlan(world, *_structural(p.src, p.dst, world), p.consume.kind is not None, 0)
    pairs = {(u.producer, d) for units in plan.units for u in units for d in u.consumers}
    return all((d, s) in pairs for s, d in pairs)


def _structural(src: Layout, dst: Layout, world: int) -> tuple[Layout, Layout]:
    """A phase's layouts with dynamic counts bound to all 1: its structure
    (which ranks send which names to whom, which slices are one), the same for
    every binding; distinct slices of a dynamic layout never overlap, and
    ranges within one slice all overlap its one element, so what overlaps
    here may overlap bound, and nothing else can."""
    dynamic = src if src.is_dynamic else dst if dst.is_dynamic else None
    if dynamic is None:
        return src, dst
    ones = [[1] * world for _ in range(world)] if dynamic.matrix_counts else [1] * world
    return src.bind(ones) if src.is_dynamic else src, dst.bind(ones) if dst.is_dynamic else dst


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
        # Each of a source's units (one a slice, at most `world`) may start
        # on a fresh packet; an empty one (empty_units) takes one packet.
        return bound + world * align
    return _packet_plan(p, world, stage_local).window_elems(align)


def _packet_plan(p: PhaseSpec, world: int, stage_local: bool) -> PhasePlan:
    """Units and groups of packet phase `p` of static counts (whole slices)."""
    src, dst = route_layouts(p.src, p.dst, p.route)
    return PhasePlan(world, src, dst, p.consume.kind is not None, 0,
                     keep_unread=p.source == snac.PhaseSource.OUTPUT, stage_local=stage_local)


class _Gen:
    """Emits the rank-generic body: loops over units and groups, not peers.
    `moves`: how each phase moves data (snac.PhaseOp.moves)."""

    def __init__(self, b: Builder, regime: snac.Regime, blocks: int, moves: dict[str, str], scope: snac.Scope):
        self.b = b
        self.regime = regime
        self.blocks = blocks
        self.moves = moves
        self.scope = scope

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
        if self.regime == snac.Regime.LATENCY or "push" in self.moves.values():
            # Every packet of this call carries the same flag; a grant opens the output for this call.
            self.flag = b.insert(arith.AddiOp(self.epoch, self.c1)).result

    def _role(self, kind: snac.RoleKind, blocks: int) -> Builder:
        block = Block()
        self.b.insert(snac.RoleOp(kind, blocks, Region(block)))
        return Builder(InsertPoint.at_end(block))

    def _loop(self, b: Builder, count: SSAValue, first: SSAValue | None = None) -> tuple[Builder, SSAValue]:
        block = Block(arg_types=[IndexType()])
        loop = b.insert(scf.ForOp(first or self.c0, count, self.c1, [], Region(block)))
        inner = Builder(InsertPoint.at_end(loop.body.block))
        return inner, loop.body.block.args[0]

    def _produce(self, b: Builder, phase: str, unit: SSAValue, reclaim: bool = True) -> None:
        moves = self.moves[phase]
        if reclaim and moves != "pull":
            b.insert(snac.ReclaimOp(phase, unit, self.rank, self.epoch, self.prev, scope=self.scope))
        if moves == "packets":
            b.insert(snac.PutOp(phase, unit, self.rank, self.half, self.flag, scope=self.scope))
            return
        if moves == "staging":
            b.insert(snac.StageOp(phase, unit, self.rank, self.half))
        elif moves == "push":
            b.insert(snac.PushOp(phase, unit, self.rank))
        u1 = b.insert(arith.AddiOp(unit, self.c1)).result
        value = b.insert(arith.AddiOp(self.epoch, u1)).result
        b.insert(snac.NotifyOp(phase, unit, self.rank, value, scope=self.scope))

    def producer_role(self, phase: str, blocks: int) -> None:
        """Stages, pushes or (pulled in place) announces the rank's units; a
        pulled phase's producer then waits until its readers are done."""
        b = self._role(snac.RoleKind.PRODUCER, blocks)
        n = b.insert(snac.UnitsOp(phase, self.rank)).result
        body, u = self._loop(b, n)
        self._produce(body, phase, u)
        body.insert(scf.YieldOp())
        if self.moves[phase] == "pull":
            b.insert(snac.DrainOp(phase, self.rank, self.next_epoch, scope=self.scope))

    def stream_role(self, phase: str) -> None:
        """A pushed phase as one role of steps in order, the copy engine's
        shape: grant this rank's output, wait for every destination's grant,
        push every unit, announce them, then wait for every group."""
        b = self._role(snac.RoleKind.STREAM, 1)
        b.insert(snac.GrantOp(phase, self.rank, self.flag, scope=self.scope))
        n = b.insert(snac.UnitsOp(phase, self.rank)).result
        body, u = self._loop(b, n)
        body.insert(snac.ReclaimOp(phase, u, self.rank, self.epoch, self.prev, scope=self.scope))
        body.insert(scf.YieldOp())
        body, u = self._loop(b, n)
        body.insert(snac.PushOp(phase, u, self.rank))
        body.insert(scf.YieldOp())
        body, u = self._loop(b, n)
        u1 = body.insert(arith.AddiOp(u, self.c1)).result
        value = body.insert(arith.AddiOp(self.epoch, u1)).result
        body.insert(snac.NotifyOp(phase, u, self.rank, value, scope=self.scope))
        body.insert(scf.YieldOp())
        n = b.insert(snac.GroupsOp(phase, self.rank)).result
        body, g = self._loop(b, n)
        body.insert(snac.WaitOp(phase, g, self.rank, self.epoch, scope=self.scope))
        body.insert(scf.YieldOp())

    def fused_role(self, phase: str, blocks: int, handshake: bool) -> None:
        """Latency, one phase: the same blocks push the rank's units and consume
        its groups. Without `handshake`, no wait_free before the pushes and no
        finish after the reads (see _mutual)."""
        b = self._role(snac.RoleKind.FUSED, blocks)
        n = b.insert(snac.UnitsOp(phase, self.rank)).result
        body, u = self._loop(b, n)
        self._produce(body, phase, u, reclaim=handshake)
        body.insert(scf.YieldOp())
        n = b.insert(snac.GroupsOp(phase, self.rank)).result
        body, g = self._loop(b, n)
        token = body.insert(snac.WaitOp(phase, g, self.rank, self.epoch, scope=self.scope)).token
        body.insert(snac.ConsumeOp(phase, g, self.rank, self.half, token))
        body.insert(scf.YieldOp())
        if handshake:
            b.insert(snac.FinishOp(phase, self.rank, self.next_epoch, scope=self.scope))

    def consumer_role(self, phase: str, kind: snac.RoleKind, blocks: int, forward: str | None = None,
                      local_blocks: int = 0) -> None:
        """Consumes the rank's groups; with `local_blocks`, only those that read
        staging, and a LOCAL role of that many blocks the rest. A pushed
        phase's consumer opens its output for the call, then waits for its
        groups, which the producers wrote."""
        b = self._role(kind, blocks)
        moves = self.moves[phase]
        if moves == "push":
            b.insert(snac.GrantOp(phase, self.rank, self.flag, scope=self.scope))
        query = snac.StagedGroupsOp if local_blocks else snac.GroupsOp
        n = b.insert(query(phase, self.rank)).result
        body, g = self._loop(b, n)
        token = body.insert(snac.WaitOp(phase, g, self.rank, self.epoch, scope=self.scope)).token
        if moves != "push":
            body.insert(snac.ConsumeOp(phase, g, self.rank, self.half, token))
        if forward is not None:
            # The owner's reduced chunk g is unit g of the forwarding phase.
            self._produce(body, forward, g)
        if moves == "staging":
            body.insert(snac.AckOp(phase, g, self.rank, self.epoch, scope=self.scope))
        body.insert(scf.YieldOp())
        if moves != "push":
            b.insert(snac.FinishOp(phase, self.rank, self.next_epoch, scope=self.scope))
        if local_blocks:
            lb = self._role(snac.RoleKind.LOCAL, local_blocks)
            first = lb.insert(snac.StagedGroupsOp(phase, self.rank)).result
            n = lb.insert(snac.GroupsOp(phase, self.rank)).result
            body, g = self._loop(lb, n, first)
            # The wait has no staged source to wait for; its token orders the read.
            token = body.insert(snac.WaitOp(phase, g, self.rank, self.epoch, scope=self.scope)).token
            body.insert(snac.ConsumeOp(phase, g, self.rank, self.half, token))
            body.insert(scf.YieldOp())


@dataclass(frozen=True)
class ConvertCollToSnacPass(ModulePass):
    """Options: arch (sm_80|sm_90|sm_100), regime (auto|latency|throughput),
    strategy (auto|copy|direct|composed), chunk-bytes, slots and blocks per role
    (0: from the cost model); symmetric (the caller's input and output buffers
    are addressable by every rank: throughput phases then move data in place
    between them, no staging); ranks-per-device (ranks sharing one GPU) and sms
    (its multiprocessors, 0: the generation's), which bound the blocks per role
    so that every rank's grid is resident at once; scope (auto|gpu|system) of
    the signals: auto is GPU scope where every rank shares one GPU;
    copy-engine (a symmetric copy collective's pushes made by the copy engine,
    its steps one stream role); counts-on-host (dynamic counts are bound on
    the host before each call, never read on the device: a symmetric
    program then moves them in place too, a reduction may be composed, and a
    latency one makes a flag-only unit of every empty slice, so that it drops
    the per-call handshake where fixed counts would, see _mutual)."""

    name = "convert-coll-to-snac"

    arch: str = "sm_90"
    regime: str = "auto"
    strategy: str = "auto"
    chunk_bytes: int = 0
    slots: int = 0
    blocks: int = 0
    symmetric: bool = False
    ranks_per_device: int = 1
    sms: int = 0
    scope: str = "auto"
    copy_engine: bool = False
    counts_on_host: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _check_choice("arch", self.arch, THRESHOLDS)
        _check_choice("regime", self.regime, ["auto", *snac.Regime])
        _check_choice("strategy", self.strategy, ["auto", *snac.Strategy])
        _check_choice("scope", self.scope, ["auto", *snac.Scope])
        if self.chunk_bytes < 0 or self.slots < 0 or self.blocks < 0 or self.sms < 0:
            raise PassFailedException(
                f"{self.name}: chunk-bytes, slots, blocks and sms must be non-negative"
            )
        if self.ranks_per_device < 1:
            raise PassFailedException(f"{self.name}: ranks-per-device must be at least 1, got {self.ranks_per_device}")
        PatternRewriteWalker(LowerCollective(self), apply_recursively=False).rewrite_module(op)


def _check_choice(option: str, value: str, allowed) -> None:
    allowed = [str(a) for a in allowed]
    if value not in allowed:
        raise PassFailedException(
            f"convert-coll-to-snac: unknown {option} '{value}', expected one of {', '.join(allowed)}"
        )
