"""The `snac` dialect: Stage, Notify, And Consume.

One `snac.program` replaces one collective call. It is rank-generic: `snac.rank`
is a value and every op names its unit or group relative to it, so the IR does
not grow with the world size. What a unit or group is (bytes, peers) comes from
the phase's layouts through `purlin.snac.protocol`.

Per rank, in symmetric memory (visible to every peer):
- `snac.buffer`: staging (halves x slots x elems) or a packet window
  (halves x sources x elems, each 8 data bytes travelling with an 8-byte flag).
- `snac.signals`: one 64-bit slot per peer. `ready` slots are written by
  producers (notify), `free` slots by consumers (ack, finish).

Flags are epochs compared with >=, never reset; the staging half is the
epoch's parity. Memory order and scope are explicit on every signal op.

A `symmetric` program's input and output are addressable by every peer (one
address space, or buffers registered with the runtime). Its phases may then
move data in place, with no buffer: `direct pull` (a consumer reads its
sources from their ranks' buffers) or `direct push` (a producer writes its
units into their destinations' outputs); `grant`, `reclaim`, `notify`,
`wait`, `finish` and `drain` order those accesses within each call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.traits import NoTerminator, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException

from purlin.coll.attributes import (
    ELEMENT_TYPES_TEXT,
    ConsumeAttr,
    LayoutAttr,
    check_reduce_dtype,
    dtype_name,
    element_bytes,
)
from purlin.coll.layouts import LayoutError, LayoutKind, check_collective, world_problem
from purlin.declarations import enum_attribute
from purlin.snac.vocabulary import (  # noqa: F401  (the dialect's vocabulary: snac.MemoryOrder, ...)
    MAX_BUFFER_BYTES,
    MAX_ROLE_BLOCKS,
    MAX_SLOTS,
    BufferKind,
    MemoryOrder,
    PhaseSource,
    Regime,
    RoleKind,
    Route,
    Scope,
    Strategy,
    Transfer,
    buffer_bytes,
)
from purlin.snac.protocol import MAX_PHASE_RECORDS, records, route_layouts

MemoryOrderAttr = enum_attribute(MemoryOrder, "snac.order", __name__)
ScopeAttr = enum_attribute(Scope, "snac.scope", __name__)
BufferKindAttr = enum_attribute(BufferKind, "snac.buffer_kind", __name__)
RegimeAttr = enum_attribute(Regime, "snac.regime", __name__)
StrategyAttr = enum_attribute(Strategy, "snac.strategy", __name__)
PhaseSourceAttr = enum_attribute(PhaseSource, "snac.source", __name__)
RouteAttr = enum_attribute(Route, "snac.route", __name__)
RoleKindAttr = enum_attribute(RoleKind, "snac.role_kind", __name__)
TransferAttr = enum_attribute(Transfer, "snac.transfer", __name__)


@irdl_attr_definition
class TokenType(ParametrizedAttribute, TypeAttribute):
    """Proof that a wait completed; consume needs one, so data is never read first."""

    name = "snac.token"


def _index() -> IndexType:
    return IndexType()


def _int(v: int) -> IntegerAttr:
    return IntegerAttr(v, 64)


def _err(op: Operation, msg: str) -> VerifyException:
    return VerifyException(f"'{op.name}': {msg}")


# -- program and declarations ------------------------------------------------


class ProgramOpBase(IRDLOperation):
    """One collective call, all roles of one (any) rank."""

    input = operand_def(MemRefType)
    output = operand_def(MemRefType)
    counts = opt_operand_def(MemRefType)
    world = prop_def(IntegerAttr[I64])
    regime = prop_def(RegimeAttr)
    strategy = prop_def(StrategyAttr)
    # Every rank's input and output are addressable by its peers.
    symmetric = opt_prop_def(UnitAttr)
    body = region_def("single_block")

    traits = traits_def(NoTerminator(), SymbolTable())
    assembly_format = (
        "$input `,` $output (`counts` $counts^)? `world` $world `regime` $regime "
        "`strategy` $strategy (`symmetric` $symmetric^)? attr-dict `:` type($input) `,` type($output) "
        "(`,` type($counts)^)? $body"
    )

    def __init__(
        self,
        inp: SSAValue,
        out: SSAValue,
        counts: SSAValue | None,
        world: int,
        regime: Regime,
        strategy: Strategy,
        body,
        symmetric: bool = False,
    ):
        props: dict[str, Attribute] = {
            "world": _int(world),
            "regime": RegimeAttr(regime),
            "strategy": StrategyAttr(strategy),
        }
        if symmetric:
            props["symmetric"] = UnitAttr()
        super().__init__(operands=[inp, out, counts], properties=props, regions=[body])

    @property
    def world_size(self) -> int:
        return self.world.value.data

    def lookup(self, ref: SymbolRefAttr, kind: type[Operation], user: Operation) -> Operation:
        found = SymbolTable.lookup_symbol(self, ref)
        if not isinstance(found, kind):
            raise _err(
                user,
                f"'@{ref.string_value()}' does not name a {kind.name} in the enclosing snac.program",
            )
        return found

    def verify_(self) -> None:
        if why := world_problem(self.world_size):
            raise _err(self, why)
        assert isinstance(self.input.type, MemRefType)
        elem = self.input.type.element_type
        if dtype_name(elem) is None:
            raise _err(
                self,
                f"element type {elem} is not supported, expected one of {ELEMENT_TYPES_TEXT}",
            )
        assert isinstance(self.output.type, MemRefType)
        if self.output.type.element_type != elem:
            raise _err(
                self,
                f"input and output element types differ ({elem} vs {self.output.type.element_type})",
            )


@irdl_op_definition
class ProgramOp(ProgramOpBase):
    name = "snac.program"


@irdl_op_definition
class BufferOp(IRDLOperation):
    """Symmetric memory: `snac.buffer @s staging halves 2 slots 4 elems 2048 : bf16`."""

    name = "snac.buffer"

    sym_name = prop_def(SymbolNameConstraint())
    kind = prop_def(BufferKindAttr)
    halves = prop_def(IntegerAttr[I64])
    slots = prop_def(IntegerAttr[I64])
    elems = prop_def(IntegerAttr[I64])
    elem_type = prop_def(TypeAttribute)

    traits = traits_def(SymbolOpInterface())
    assembly_format = (
        "$sym_name $kind `halves` $halves `slots` $slots `elems` $elems `:` $elem_type attr-dict"
    )

    def __init__(self, name: str, kind: BufferKind, halves: int, slots: int, elems: int, elem: Attribute):
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "kind": BufferKindAttr(kind),
                "halves": _int(halves),
                "slots": _int(slots),
                "elems": _int(elems),
                "elem_type": elem,
            }
        )

    def verify_(self) -> None:
        h, s, e = self.halves.value.data, self.slots.value.data, self.elems.value.data
        if h != 2:
            raise _err(self, f"buffers are double-buffered (halves 2), got halves {h}")
        if s < 1 or e < 0:
            raise _err(self, f"needs at least one slot and non-negative elems, got slots {s}, elems {e}")
        if s > MAX_SLOTS:
            raise _err(self, f"{s} slots per half are more than the {MAX_SLOTS} a buffer may have")
        if dtype_name(self.elem_type) is not None:
            nbytes = buffer_bytes(self.kind.data, s, e, element_bytes(self.elem_type))
            if nbytes > MAX_BUFFER_BYTES:
                raise _err(self, f"{h} halves of {s} slots of {e} elements are {nbytes} bytes, more than the "
                                 f"{MAX_BUFFER_BYTES} a buffer may have")


@irdl_op_definition
class SignalsOp(IRDLOperation):
    """Symmetric 64-bit signal slots, one per peer: `snac.signals @ready slots 8`."""

    name = "snac.signals"

    sym_name = prop_def(SymbolNameConstraint())
    slots = prop_def(IntegerAttr[I64])

    traits = traits_def(SymbolOpInterface())
    assembly_format = "$sym_name `slots` $slots attr-dict"

    def __init__(self, name: str, slots: int):
        super().__init__(properties={"sym_name": StringAttr(name), "slots": _int(slots)})


@irdl_op_definition
class PhaseOp(IRDLOperation):
    """What moves in one phase, and through which buffer and signals."""

    name = "snac.phase"

    sym_name = prop_def(SymbolNameConstraint())
    source = prop_def(PhaseSourceAttr)
    src_layout = prop_def(LayoutAttr)
    dst_layout = prop_def(LayoutAttr)
    consume = prop_def(ConsumeAttr)
    chunk = prop_def(IntegerAttr[I64])
    # Through a staging buffer or packet window, or (symmetric programs) in
    # place between the ranks' own buffers.
    buffer = opt_prop_def(SymbolRefAttr)
    transfer = opt_prop_def(TransferAttr)
    ready = prop_def(SymbolRefAttr)
    free = prop_def(SymbolRefAttr)
    route = opt_prop_def(RouteAttr)
    deterministic = opt_prop_def(UnitAttr)
    # Make the consumer's own contribution a unit too: staged (multimem reads
    # all of a group's sources at one symmetric address), or pushed by the
    # producer with its peers' (one read of the input for every destination).
    stage_local = opt_prop_def(UnitAttr)
    # A slice of 0 elements still makes a unit and a group: one flag-only
    # packet, so every pair of ranks the layouts connect exchanges a flag each
    # call whatever the counts (PhasePlan.empty_units).
    empty_units = opt_prop_def(UnitAttr)
    # One dynamic scattered layout from and to that, once bound, moves as one
    # name (coll.layouts.merged_scattered: an all_reduce_v's slices as one
    # unit, as all_reduce's coalesce); bound on the host only.
    coalesce = opt_prop_def(UnitAttr)

    traits = traits_def(SymbolOpInterface())
    assembly_format = (
        "$sym_name `from` $source $src_layout `to` $dst_layout (`route` $route^)? "
        "`consume` $consume `chunk` $chunk (`via` $buffer^)? (`direct` $transfer^)? `ready` $ready `free` $free "
        "(`deterministic` $deterministic^)? (`stage_local` $stage_local^)? (`empty_units` $empty_units^)? "
        "(`coalesce` $coalesce^)? attr-dict"
    )

    def __init__(
        self,
        name: str,
        source: PhaseSource,
        src: LayoutAttr,
        dst: LayoutAttr,
        consume: ConsumeAttr,
        chunk: int,
        buffer: str | Transfer,
        ready: str,
        free: str,
        deterministic: bool,
        route: Route | None = None,
    ):
        """`buffer`: the buffer's symbol, or how a direct phase moves data."""
        props: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "source": PhaseSourceAttr(source),
            "src_layout": src,
            "dst_layout": dst,
            "consume": consume,
            "chunk": _int(chunk),
            "ready": SymbolRefAttr(ready),
            "free": SymbolRefAttr(free),
        }
        if isinstance(buffer, Transfer):
            props["transfer"] = TransferAttr(buffer)
        else:
            props["buffer"] = SymbolRefAttr(buffer)
        if deterministic:
            props["deterministic"] = UnitAttr()
        if route is not None:
            props["route"] = RouteAttr(route)
        super().__init__(properties=props)

    def program(self) -> ProgramOpBase:
        parent = self.parent_op()
        if not isinstance(parent, ProgramOpBase):
            raise _err(self, "must be directly inside a snac.program")
        return parent

    def moves(self) -> str:
        """How the phase moves data: "staging", "packets", "pull" or "push"."""
        if self.transfer is not None:
            return self.transfer.data.value
        buf = self.program().lookup(self.buffer, BufferOp, self)  # type: ignore[arg-type]
        assert isinstance(buf, BufferOp)
        return buf.kind.data.value

    def buffer_op(self) -> BufferOp | None:
        """The phase's staging buffer or packet window; None for a direct phase."""
        if self.buffer is None:
            return None
        buf = self.program().lookup(self.buffer, BufferOp, self)
        assert isinstance(buf, BufferOp)
        return buf

    def verify_(self) -> None:
        prog = self.program()
        for layout in (self.src_layout, self.dst_layout):
            w = layout.world.data
            if w != prog.world_size:
                raise _err(
                    self,
                    f"phase layouts are for world {w} but the program for world {prog.world_size}",
                )
        if (self.buffer is None) == (self.transfer is None):
            raise _err(self, "a phase moves either through a buffer (via @buf) or in place "
                             "(direct pull or direct push), expected exactly one of them")
        if self.transfer is not None:
            self._verify_direct(prog)
        self._verify_layouts(prog)
        for ref in (self.ready, self.free):
            sig = prog.lookup(ref, SignalsOp, self)
            assert isinstance(sig, SignalsOp)
            if sig.slots.value.data != prog.world_size:
                raise _err(
                    self,
                    f"signals '@{ref.string_value()}' have {sig.slots.value.data} slots, "
                    f"expected one per rank ({prog.world_size})",
                )
        if self.chunk.value.data < 0:
            raise _err(self, f"chunk must be non-negative, got {self.chunk.value.data}")
        assert isinstance(prog.input.type, MemRefType)
        buf = self.buffer_op()
        if self.empty_units is not None and (buf is None or buf.kind.data != BufferKind.PACKETS):
            raise _err(self, f"'empty_units' makes an empty slice one flag-only packet, but phase "
                             f"'{self.sym_name.data}' moves data by '{self.moves()}'; expected a phase via a packet "
                             "window")
        if self.coalesce is not None and (problem := _coalesce_problem(self)):
            raise _err(self, f"'coalesce' merges the names of dynamic layouts once bound, but phase "
                             f"'{self.sym_name.data}' {problem}; expected one dynamic scattered layout from and to")
        if buf is not None and buf.elem_type != prog.input.type.element_type:
            raise _err(
                self,
                f"buffer '@{buf.sym_name.data}' holds {buf.elem_type} but the program "
                f"moves {prog.input.type.element_type}",
            )
        kind = self.consume.kind
        dtype = dtype_name(prog.input.type.element_type)
        if kind is not None and dtype is not None and (why := check_reduce_dtype(kind, dtype)):
            raise _err(self, why)


    def _verify_layouts(self, prog: ProgramOpBase) -> None:
        """Before anything is expanded: the layouts fit the program's buffers,
        produce one another (as the route moves them), and cut into no more
        records than MAX_PHASE_RECORDS."""
        src, dst = self.src_layout.to_layout(), self.dst_layout.to_layout()
        if src.is_dynamic or dst.is_dynamic:
            return  # bounded by the buffers when the counts come
        from_input = self.source.data == PhaseSource.INPUT
        for layout, value, what in ((src, prog.input if from_input else prog.output, "source"),
                                    (dst, prog.output, "destination")):
            assert isinstance(value.type, MemRefType)
            (elems,) = value.type.get_shape()
            if elems >= 0 and layout.max_extent() > elems:
                buffer = "output" if value is prog.output else "input"
                raise _err(self, f"the {what} layout reaches element {layout.max_extent()} of a rank's {buffer}, "
                                 f"which holds {elems} ({value.type})")
        try:
            check_collective(*route_layouts(src, dst, None if self.route is None else self.route.data.value),
                             reduce=self.consume.kind is not None)
        except LayoutError as e:
            raise _err(self, f"the layouts do not make a phase: {e}") from None
        chunk = self.chunk.value.data
        for layout, what in ((src, "units"), (dst, "groups")):
            if (n := records(layout, chunk, self.empty_units is not None)) > MAX_PHASE_RECORDS:
                raise _err(self, f"chunk {chunk} cuts the layout into {n} {what}, more than the "
                                 f"{MAX_PHASE_RECORDS} a phase may have; use larger chunks")

    def _verify_direct(self, prog: ProgramOpBase) -> None:
        assert self.transfer is not None
        how = self.transfer.data.value
        if prog.symmetric is None:
            raise _err(self, f"'direct {how}' reads or writes the peers' own buffers, but the program is not "
                             "symmetric; mark it symmetric or move the phase through a buffer")
        if self.transfer.data == Transfer.PUSH and self.consume.kind is not None:
            raise _err(self, "'direct push' writes each unit into its destinations, which cannot "
                             "reduce; a reduction is 'direct pull'")


def _phase_of(op: Operation, ref: SymbolRefAttr) -> PhaseOp:
    prog = op.parent_op()
    while prog is not None and not isinstance(prog, ProgramOpBase):
        prog = prog.parent_op()
    if prog is None:
        raise _err(op, "must be inside a snac.program")
    phase = prog.lookup(ref, PhaseOp, op)
    assert isinstance(phase, PhaseOp)
    return phase


# -- rank-level values -------------------------------------------------------


@irdl_op_definition
class RankOp(IRDLOperation):
    """This rank's index; one program serves every rank."""

    name = "snac.rank"
    result = result_def(IndexType)
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[_index()])


@irdl_op_definition
class EpochOp(IRDLOperation):
    """The epoch this call starts at, and the one the previous call started at."""

    name = "snac.epoch"
    epoch = result_def(IndexType)
    prev = result_def(IndexType)
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[_index(), _index()])


@irdl_op_definition
class HalfOp(IRDLOperation):
    """The staging half of this call: the epoch's parity."""

    name = "snac.half"
    epoch = operand_def(IndexType)
    result = result_def(IndexType)
    assembly_format = "$epoch attr-dict"

    def __init__(self, epoch: SSAValue):
        super().__init__(operands=[epoch], result_types=[_index()])


# How a phase may move data (PhaseOp.moves).
ALL_MOVES = ("staging", "packets", "pull", "push")


class _PhaseStep(IRDLOperation):
    """An op of the phase `phase`, built from the phase's name and its
    operands in the order the op declares them."""

    # The ways of moving data (PhaseOp.moves) whose phases the op belongs to.
    MOVES: ClassVar[tuple[str, ...]] = ALL_MOVES
    phase = prop_def(SymbolRefAttr)

    def __init__(self, phase: str, *operands: SSAValue, result_types: Sequence[Attribute] = (),
                 **properties: Attribute):
        super().__init__(
            operands=operands,
            properties={"phase": SymbolRefAttr(phase), **properties},
            result_types=result_types,
        )

    def verify_(self) -> None:
        phase = _phase_of(self, self.phase)
        if self.MOVES != ALL_MOVES and (how := phase.moves()) not in self.MOVES:
            expected = " or ".join(_MOVE_NAMES[m] for m in self.MOVES)
            raise _err(self, f"phase '@{phase.sym_name.data}' moves {_MOVE_NAMES[how]}, expected a phase that "
                             f"moves {expected}")


_MOVE_NAMES = {"staging": "through a staging buffer", "packets": "through a packet window",
               "pull": "by direct pull", "push": "by direct push"}


class _PhaseQuery(_PhaseStep):
    rank = operand_def(IndexType)
    result = result_def(IndexType)
    assembly_format = "$phase `of` $rank attr-dict"

    def __init__(self, phase: str, rank: SSAValue):
        super().__init__(phase, rank, result_types=[_index()])


@irdl_op_definition
class UnitsOp(_PhaseQuery):
    """How many units `rank` produces in the phase."""

    name = "snac.units"


@irdl_op_definition
class GroupsOp(_PhaseQuery):
    """How many groups `rank` consumes in the phase."""

    name = "snac.groups"


@irdl_op_definition
class StagedGroupsOp(_PhaseQuery):
    """How many of `rank`'s groups read staged units; they come first, the
    groups that read only the rank's own buffers after them."""

    name = "snac.staged_groups"


@irdl_op_definition
class MaxUnitsOp(_PhaseStep):
    """The most units any rank produces in the phase: the same on every rank."""

    name = "snac.max_units"
    result = result_def(IndexType)
    assembly_format = "$phase attr-dict"

    def __init__(self, phase: str):
        super().__init__(phase, result_types=[_index()])


class RoleOpBase(IRDLOperation):
    """Blocks of the kernel with one job; roles of a rank run concurrently."""

    kind = prop_def(RoleKindAttr)
    blocks = prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "$kind `blocks` $blocks attr-dict-with-keyword $body"

    def __init__(self, kind: RoleKind, blocks: int, body):
        super().__init__(
            properties={"kind": RoleKindAttr(kind), "blocks": _int(blocks)}, regions=[body]
        )

    def verify_(self) -> None:
        if self.blocks.value.data < 1:
            raise _err(self, f"a role needs at least one block, got {self.blocks.value.data}")
        if self.blocks.value.data > MAX_ROLE_BLOCKS:
            raise _err(self, f"{self.blocks.value.data} blocks are more than the {MAX_ROLE_BLOCKS} a role may have")
        if not isinstance(self.parent_op(), ProgramOpBase):
            raise _err(self, "must be directly inside a snac.program")
        if self.kind.data == RoleKind.STREAM:
            self._verify_stream()
        if self.kind.data == RoleKind.FUSED:
            for op in self.body.walk():
                if isinstance(op, (StageOpBase, NotifyOpBase, AckOpBase, PushOpBase, GrantOpBase, DrainOpBase)):
                    raise _err(
                        self,
                        f"a fused role moves packets only (put, wait, consume), but holds "
                        f"'{op.name}'; staged phases need separate producer and consumer roles",
                    )


    def _verify_stream(self) -> None:
        """A stream role is its rank's whole program, its steps in order on one
        stream: one block, no other role, pushed phases only."""
        if self.blocks.value.data != 1:
            raise _err(self, f"a stream role runs on one block (its signals between the copies), got "
                             f"{self.blocks.value.data}")
        program = self.parent_op()
        assert isinstance(program, ProgramOpBase)
        roles = [op for op in program.body.block.ops if isinstance(op, RoleOpBase)]
        if len(roles) != 1:
            raise _err(self, f"a stream role must be its program's only role, the program has {len(roles)}")
        for op in self.body.walk():
            if isinstance(op, (StageOpBase, PutOpBase, ConsumeOpBase, AckOpBase, FinishOpBase, DrainOpBase)):
                raise _err(self, f"a stream role pushes, signals and waits only, but holds '{op.name}'")
            if isinstance(op, _PhaseStep):
                phase = _phase_of(op, op.phase)
                if phase.moves() != "push":
                    raise _err(self, f"a stream role moves pushed phases only; '@{phase.sym_name.data}' moves "
                                     f"by {phase.moves()}")


@irdl_op_definition
class RoleOp(RoleOpBase):
    name = "snac.role"


# -- protocol steps ----------------------------------------------------------


class _Signalling(_PhaseStep):
    """Signal ops: explicit memory order and scope."""

    # The memory orders the op may take, its default first.
    ALLOWED: ClassVar[tuple[MemoryOrder, ...]]
    order = prop_def(MemoryOrderAttr)
    scope = prop_def(ScopeAttr)

    def __init__(self, phase: str, *operands: SSAValue, order: MemoryOrder | None = None,
                 scope: Scope = Scope.SYSTEM, result_types: Sequence[Attribute] = ()):
        super().__init__(
            phase, *operands, result_types=result_types,
            order=MemoryOrderAttr(self.ALLOWED[0] if order is None else order), scope=ScopeAttr(scope),
        )

    def verify_(self) -> None:
        super().verify_()
        if self.order.data not in self.ALLOWED:
            allowed = " or ".join(o.value for o in self.ALLOWED)
            raise _err(self, f"memory order '{self.order.data.value}' is not valid here, expected {allowed}")


class _Await(_Signalling):
    """Loads that observe peers' stores: acquire, or relaxed where a fence does the ordering."""

    ALLOWED: ClassVar[tuple[MemoryOrder, ...]] = (MemoryOrder.ACQUIRE, MemoryOrder.RELAXED)


class _Signal(_Signalling):
    """Stores that publish this rank's writes: release, or relaxed where a fence does the ordering."""

    ALLOWED: ClassVar[tuple[MemoryOrder, ...]] = (MemoryOrder.RELEASE, MemoryOrder.RELAXED)


class ReclaimOpBase(_Await):
    """Before writing unit u: wait until where it goes may be written.

    Staging: unit u goes to slot u mod slots. The first time in a call, the
    half must be free of the call before last: every peer finished it (free
    >= prev). Later, the slot's previous unit u - slots must be acknowledged
    by its consumers (free >= epoch + u - slots + 1). Packets: the first put
    of a call waits for the half as staging does. Direct push: every other
    destination of unit u granted this call (free >= epoch + 1).
    """

    MOVES: ClassVar[tuple[str, ...]] = ("staging", "packets", "push")

    unit = operand_def(IndexType)
    rank = operand_def(IndexType)
    epoch = operand_def(IndexType)
    prev = operand_def(IndexType)
    assembly_format = (
        "$phase `unit` $unit `of` $rank `epoch` $epoch `prev` $prev $order $scope attr-dict"
    )


@irdl_op_definition
class ReclaimOp(ReclaimOpBase):
    name = "snac.reclaim"


class StageOpBase(_PhaseStep):
    """Copy unit u of this rank into its own staging slot (u mod slots) of `half`."""

    unit = operand_def(IndexType)
    rank = operand_def(IndexType)
    half = operand_def(IndexType)
    assembly_format = "$phase `unit` $unit `of` $rank `half` $half attr-dict"

    MOVES: ClassVar[tuple[str, ...]] = ("staging",)


@irdl_op_definition
class StageOp(StageOpBase):
    name = "snac.stage"


class PushOpBase(_PhaseStep):
    """Direct push: copy unit u of this rank from its source buffer into the
    output of every destination of the unit, in place."""

    MOVES: ClassVar[tuple[str, ...]] = ("push",)
    unit = operand_def(IndexType)
    rank = operand_def(IndexType)
    assembly_format = "$phase `unit` $unit `of` $rank attr-dict"


@irdl_op_definition
class PushOp(PushOpBase):
    name = "snac.push"


class PutOpBase(_Signal):
    """Latency regime: push unit u into each consumer's packet window, every
    8 data bytes fused with the 8-byte `flag` in one 16-byte store."""

    ALLOWED: ClassVar[tuple[MemoryOrder, ...]] = (MemoryOrder.RELAXED, MemoryOrder.RELEASE)
    unit = operand_def(IndexType)
    rank = operand_def(IndexType)
    half = operand_def(IndexType)
    flag = operand_def(IndexType)
    assembly_format = (
        "$phase `unit` $unit `of` $rank `half` $half `flag` $flag $order $scope attr-dict"
    )

    MOVES: ClassVar[tuple[str, ...]] = ("packets",)


@irdl_op_definition
class PutOp(PutOpBase):
    name = "snac.put"


class NotifyOpBase(_Signal):
    """Store `value` into slot [rank] of the `ready` signals of every consumer
    of unit u: staged, readable in place (direct pull) or written into it
    (direct push)."""

    MOVES: ClassVar[tuple[str, ...]] = ("staging", "pull", "push")

    unit = operand_def(IndexType)
    rank = operand_def(IndexType)
    value = operand_def(IndexType)
    assembly_format = "$phase `unit` $unit `of` $rank `value` $value $order $scope attr-dict"


@irdl_op_definition
class NotifyOp(NotifyOpBase):
    name = "snac.notify"


class WaitOpBase(_Await):
    """Wait until every remote source of group g is visible: its `ready` slot
    reached epoch + unit + 1 (staging, direct pull and push) or its packets
    carry flag >= epoch + 1."""

    group = operand_def(IndexType)
    rank = operand_def(IndexType)
    epoch = operand_def(IndexType)
    token = result_def(TokenType)
    assembly_format = "$phase `group` $group `of` $rank `epoch` $epoch $order $scope attr-dict"

    def __init__(self, phase: str, group: SSAValue, rank: SSAValue, epoch: SSAValue,
                 order: MemoryOrder | None = None, scope: Scope = Scope.SYSTEM):
        super().__init__(phase, group, rank, epoch, order=order, scope=scope, result_types=[TokenType()])


@irdl_op_definition
class WaitOp(WaitOpBase):
    name = "snac.wait"


class ConsumeOpBase(_PhaseStep):
    """Copy, or N-to-1 reduce (f32 accumulation), group g into the output:
    from staging, packets, or (direct pull) the sources' own buffers. In a
    direct push phase producers write the groups with remote sources; only
    the others are consumed."""

    group = operand_def(IndexType)
    rank = operand_def(IndexType)
    half = operand_def(IndexType)
    token = operand_def(TokenType)
    assembly_format = "$phase `group` $group `of` $rank `half` $half `after` $token attr-dict"


@irdl_op_definition
class ConsumeOp(ConsumeOpBase):
    name = "snac.consume"


class FenceOpBase(IRDLOperation):
    """Orders the block's earlier writes before the stores that follow; SNAC
    has no fence of its own, a lowered program's datapath (atom.fence) does."""


class AckOpBase(_Signal):
    """After consuming group g: store epoch + unit + 1 into slot [rank] of
    each remote source's `free` signals, so it may reuse the slot."""

    MOVES: ClassVar[tuple[str, ...]] = ("staging",)

    group = operand_def(IndexType)
    rank = operand_def(IndexType)
    epoch = operand_def(IndexType)
    assembly_format = "$phase `group` $group `of` $rank `epoch` $epoch $order $scope attr-dict"


@irdl_op_definition
class AckOp(AckOpBase):
    name = "snac.ack"


class FinishOpBase(_Signal):
    """End of this rank's reads in the phase: store `value` (the next epoch)
    into slot [rank] of every peer's `free` signals."""

    MOVES: ClassVar[tuple[str, ...]] = ("staging", "packets", "pull")

    rank = operand_def(IndexType)
    value = operand_def(IndexType)
    assembly_format = "$phase `of` $rank `value` $value $order $scope attr-dict"


@irdl_op_definition
class FinishOp(FinishOpBase):
    name = "snac.finish"


class GrantOpBase(_Signal):
    """Direct push, at the start of a call: this rank's output may be written
    now; store `value` (epoch + 1) into slot [rank] of the `free` signals of
    every rank that pushes to it."""

    MOVES: ClassVar[tuple[str, ...]] = ("push",)
    rank = operand_def(IndexType)
    value = operand_def(IndexType)
    assembly_format = "$phase `of` $rank `value` $value $order $scope attr-dict"


@irdl_op_definition
class GrantOp(GrantOpBase):
    name = "snac.grant"


class DrainOpBase(_Await):
    """Direct pull, at the end of a call: wait until every rank that reads
    this rank's units finished (its `free` slot reached `value`, the next
    epoch), so that the caller may write the buffers again."""

    MOVES: ClassVar[tuple[str, ...]] = ("pull",)
    rank = operand_def(IndexType)
    value = operand_def(IndexType)
    assembly_format = "$phase `of` $rank `value` $value $order $scope attr-dict"


@irdl_op_definition
class DrainOp(DrainOpBase):
    name = "snac.drain"


@irdl_op_definition
class AdvanceOp(IRDLOperation):
    """Move this rank's epoch forward by `amount` once all roles are done."""

    name = "snac.advance"
    amount = operand_def(IndexType)
    assembly_format = "$amount attr-dict"

    def __init__(self, amount: SSAValue):
        super().__init__(operands=[amount])

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), ProgramOpBase):
            raise _err(self, "must be directly inside a snac.program, after its roles")


Snac = Dialect(
    "snac",
    [
        ProgramOp,
        BufferOp,
        SignalsOp,
        PhaseOp,
        RankOp,
        EpochOp,
        HalfOp,
        UnitsOp,
        GroupsOp,
        StagedGroupsOp,
        MaxUnitsOp,
        RoleOp,
        ReclaimOp,
        StageOp,
        PutOp,
        PushOp,
        NotifyOp,
        WaitOp,
        ConsumeOp,
        AckOp,
        FinishOp,
        GrantOp,
        DrainOp,
        AdvanceOp,
    ],
    [
        MemoryOrderAttr,
        ScopeAttr,
        BufferKindAttr,
        RegimeAttr,
        StrategyAttr,
        PhaseSourceAttr,
        RouteAttr,
        RoleKindAttr,
        TransferAttr,
        TokenType,
    ],
)


def _coalesce_problem(phase: PhaseOp) -> str | None:
    """Why `phase`'s layouts are not what 'coalesce' merges once bound, or None."""
    src, dst = phase.src_layout.to_layout(), phase.dst_layout.to_layout()
    if not (src.is_dynamic and dst.is_dynamic):
        return "has static layouts"
    if src != dst or src.kind != LayoutKind.SCATTERED:
        return f"moves {src.kind} to {dst.kind} slices"
    return None
