"""`atom.kernel` -> one CUDA C++ translation unit (`purlin-opt -t cuda`).

The kernel is `extern "C"`, one per lowered collective. Its roles are
`blockIdx` ranges fixed here, its loops are loops and each Atom op is one
call into include/purlin/kernel.cuh (and the protocol headers it includes)
with the op's phase, mechanism, memory order and role size as template or
constant arguments. What shapes the code
is folded in (collective structure, regime, strategy, world, dtype, reduce
op, generation); what varies with the call's sizes is read from the rank's
tables (purlin/cuda/tables.py) at run time, so one compiled kernel serves
every rank and every size whose structure is the same. Nothing here reads a
layout's counts or a buffer's size.

A kernel with a `counts` operand (dynamic V layouts) reads its counts on the
device: its prologue (include/purlin/counts.cuh) exchanges every rank's
counts and builds the rank's units and groups in shared memory; the shapes
of its phases (layout kinds, chunk, buffer kind) are folded in here.

Two peepholes keep the latency path as short as a hand-fused kernel:
- a `wait_packets` whose token feeds only the copy/reduce right after it
  becomes one `poll_consume`: each thread polls its packets and combines the
  data it polled, with no barrier and no fence;
- an `atom.fence` right before a release signal is folded into it (the
  release store orders the block's earlier writes).
A third keeps a composed reduction in place at the least traffic: the
`atom.reduce` of a direct pull group followed by the `atom.wait_free` and
`atom.push` that forward it becomes the wait, then one `reduce_push` that
stores the reduced chunk to the output and every destination at once.

A symmetric kernel takes every rank's input and output of the call as a
second parameter (abi::Peers), which its direct phases read and write.

A kernel whose one role is a stream role (copy-engine pushes) becomes a
sequence of steps on the rank's stream: one-block kernels `NAME_0`,
`NAME_1`, ... for the signal steps between the pushes, and between them the
copies of every unit of a phase, which the runtime issues to the copy engine
from the rank's tables (KernelSource.stream); the last kernel advances the
epochs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, Operation, SSAValue

from purlin.atom import dialect as atom
from purlin.atom.generations import MAX_THREADS_PER_SM
from purlin.coll.attributes import DTYPES, ReduceKind, dtype_name, element_bytes
from purlin.coll.layouts import LayoutKind
from purlin.cuda import abi
from purlin.cuda.abi import LAYOUT_KINDS
from purlin.cuda.tables import counted_ready
from purlin.diagnostics import op_error, where
from purlin.snac import dialect as snac

# The C++ names of abi.h's enumerators (test_cuda_abi holds them equal to the plan format's).
_DTYPE = {d.name: d.name.upper() for d in DTYPES}
_REDOP = {None: "None", **{kind: kind.name.capitalize() for kind in ReduceKind}}
_MECH = {m: "".join(w.capitalize() for w in m.name.split("_")) for m in atom.Mechanism}
_MOVES = {moves: f"abi::Moves::{moves.capitalize()}" for moves in abi.MOVES}
_BINARY = {
    arith.AddiOp: "{} + {}", arith.SubiOp: "{} - {}", arith.MuliOp: "{} * {}", arith.OrIOp: "{} | {}",
    arith.AndIOp: "{} & {}", arith.XOrIOp: "{} ^ {}", arith.RemUIOp: "{} % {}", arith.DivUIOp: "{} / {}",
    arith.MaxUIOp: "max_u({}, {})", arith.MinUIOp: "min_u({}, {})",
}
# Counts a device-counts kernel gathers in each block's static shared memory.
MAX_GATHERED_COUNTS = 1024
_MATRIX = (LayoutKind.ADDRESSED, LayoutKind.TRANSPOSED)


class CodegenError(Exception):
    """The kernel has an op or a form the CUDA code generator does not handle."""


@dataclass(frozen=True)
class KernelSource:
    """One generated translation unit and what launching it needs."""

    text: str
    name: str
    arch: str
    threads: int
    grid: int
    smem: int  # dynamic shared memory of the pipelines; the tables follow
    shared_tables: bool  # each block reads the tables from shared memory
    blocks_per_sm: int
    sites: tuple[str, ...]  # per site index: the op that waits or signals there
    multimem: bool
    count_words: int = 0  # device counts: words of counts each rank passes (0: none)
    symmetric: bool = False  # takes every rank's buffers (abi::Peers) as its second parameter
    system_scope: bool = True  # signals at system scope; else every rank must run on one GPU
    # A stream role's steps in order: k >= 0 launches kernel NAME_k, k < 0
    # copies every unit of phase -k - 1 by the copy engine. Empty: one kernel NAME.
    stream: tuple[int, ...] = ()


def _error(op: Operation, msg: str) -> CodegenError:
    return CodegenError(op_error(op, msg))


@dataclass
class _Role:
    blocks: int
    loop_vars: list[str] = field(default_factory=list)
    wrote_output: bool = False
    # The line its steps start at, where it may take the input read ahead (ReadAhead); else -1.
    ahead_from: int = -1


class _Emitter:
    def __init__(self, kernel: atom.KernelOp):
        self.kernel = kernel
        self.names: dict[SSAValue, str] = {}
        self.lines: list[str] = []
        self.sites: list[str] = []
        self.rank: SSAValue | None = None
        self.phases: dict[str, int] = {}
        self.phase_ops: dict[str, snac.PhaseOp] = {}
        self.buffers: dict[str, snac.BufferOp] = {}
        # Phases whose ready signals count (tables.counted_ready); none where the device reads the counts.
        self.counted: dict[str, int] = {}
        # A put took the input word read ahead of the tables (ReadAhead).
        self.reads_ahead = False
        assert isinstance(kernel.input.type, MemRefType)
        dtype = dtype_name(kernel.input.type.element_type)
        assert dtype is not None
        self.dtype = f"DType::{_DTYPE[dtype]}"

    # -- values --------------------------------------------------------------

    def name(self, v: SSAValue) -> str:
        if v not in self.names:
            raise CodegenError(f"internal: value {v} used before it is defined")
        return self.names[v]

    def define(self, v: SSAValue) -> str:
        n = f"v{len(self.names)}"
        self.names[v] = n
        return n

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("  " * depth + line)

    def site(self, op: Operation) -> int:
        phase = getattr(op, "phase", None)
        what = f" @{phase.string_value()}" if phase is not None else ""
        self.sites.append(f"'{op.name}'{what} at {where(op)}")
        return len(self.sites) - 1

    def phase_of(self, op: Operation) -> tuple[int, snac.PhaseOp, str]:
        """The phase's index, op and how it moves data (abi::Moves, as C++)."""
        name = op.phase.string_value()  # type: ignore[attr-defined]
        ph = self.phase_ops[name]
        return self.phases[name], ph, _MOVES[ph.moves()]

    def own_rank(self, op: Operation, v: SSAValue) -> None:
        if v is not self.rank:
            raise _error(op, "names the units or groups of a rank other than snac.rank; a compiled "
                             "kernel holds only its own rank's tables")

    def value(self, op: Operation, depth: int) -> bool:
        """Emit `op` if it computes an index; False if it is no such op."""
        if isinstance(op, arith.ConstantOp):
            self.emit(depth, f"const u64 {self.define(op.result)} = {op.value.value.data}ull;")  # type: ignore[attr-defined]
        elif (form := _BINARY.get(type(op))) is not None:
            expr = form.format(self.name(op.lhs), self.name(op.rhs))  # type: ignore[attr-defined]
            self.emit(depth, f"const u64 {self.define(op.result)} = {expr};")
        elif isinstance(op, snac.RankOp):
            self.rank = op.result
            self.emit(depth, f"const u64 {self.define(op.result)} = k.rank();")
        elif isinstance(op, snac.EpochOp):
            self.emit(depth, f"const u64 {self.define(op.epoch)} = k.epoch, {self.define(op.prev)} = k.prev;")
        elif isinstance(op, snac.HalfOp):
            self.emit(depth, f"const u64 {self.define(op.result)} = {self.name(op.epoch)} & 1;")
        elif isinstance(op, (snac.UnitsOp, snac.GroupsOp, snac.StagedGroupsOp)):
            self.own_rank(op, op.rank)
            field_ = {snac.UnitsOp: "kPhUnits", snac.GroupsOp: "kPhGroups",
                      snac.StagedGroupsOp: "kPhStaged"}[type(op)]
            p, _, _ = self.phase_of(op)
            self.emit(depth, f"const u64 {self.define(op.result)} = k.t(K::phase({p}) + abi::{field_});")
        elif isinstance(op, snac.MaxUnitsOp):
            p, _, _ = self.phase_of(op)
            self.emit(depth, f"const u64 {self.define(op.result)} = k.t(K::phase({p}) + abi::kPhMaxUnits);")
        else:
            return False
        return True

    # -- structure -----------------------------------------------------------

    def declarations(self) -> None:
        for op in self.kernel.body.block.ops:
            if isinstance(op, snac.BufferOp):
                self.buffers[op.sym_name.data] = op
            elif isinstance(op, snac.PhaseOp):
                self.phases[op.sym_name.data] = len(self.phases)
                self.phase_ops[op.sym_name.data] = op

    def top(self) -> None:
        for op in self.kernel.body.block.ops:
            if isinstance(op, (snac.BufferOp, snac.SignalsOp, snac.PhaseOp)):
                continue
            if isinstance(op, atom.BlocksOp):
                self.role(op)
            elif isinstance(op, snac.AdvanceOp):
                self.emit(1, f"advance(k, {self.name(op.amount)});")
            elif not self.value(op, 1):
                raise _error(op, "the CUDA code generator does not handle this op at kernel level")

    def role(self, op: atom.BlocksOp) -> None:
        first, blocks = op.first.value.data, op.blocks.value.data
        test = f"blockIdx.x < {blocks}" if first == 0 else f"blockIdx.x >= {first} && blockIdx.x < {first + blocks}"
        self.emit(1, f"if ({test}) {{  // atom.blocks {op.kind.data.value} first {first} blocks {blocks}")
        self.emit(2, f"const Part part{{int(blockIdx.x) - {first}, {blocks}}};")
        # The one role of a latency kernel, from block 0: its first step may be a put of
        # the input, whose first word each thread then loads beside the tables.
        roles = [o for o in self.kernel.body.block.ops if isinstance(o, atom.BlocksOp)]
        alone = self.kernel.regime.data == snac.Regime.LATENCY and roles == [op] and first == 0
        self.block(op.body.block, 2, _Role(blocks, ahead_from=len(self.lines) if alone else -1))
        self.emit(1, "}")

    def ahead(self, role: _Role) -> str:
        """`, ahead` where a put is the role's first step (only index values before it), else ''."""
        if role.ahead_from < 0 or not all(line.lstrip().startswith("const u64 ")
                                          for line in self.lines[role.ahead_from:]):
            return ""
        self.reads_ahead = True
        return ", ahead"

    def block(self, block: Block, depth: int, role: _Role) -> None:
        self.ops(list(block.ops), depth, role)

    def ops(self, ops: list[Operation], depth: int, role: _Role) -> None:
        fused: set[Operation] = set()
        for k, op in enumerate(ops):
            nxt = ops[k + 1] if k + 1 < len(ops) else None
            if op in fused or isinstance(op, scf.YieldOp):
                continue
            if isinstance(op, scf.ForOp) and self.spread_loop(op, depth, role):
                continue
            if isinstance(op, scf.ForOp):
                iv = op.body.block.args[0]
                v = self.define(iv)
                self.emit(depth, f"for (u64 {v} = {self.name(op.lb)}; {v} < {self.name(op.ub)}; "
                                 f"{v} += {self.name(op.step)}) {{")
                role.loop_vars.append(v)
                self.block(op.body.block, depth + 1, role)
                role.loop_vars.pop()
                self.emit(depth, "}")
            elif isinstance(op, atom.WaitPacketsOp) and _fuses(op, nxt):
                assert nxt is not None
                fused.add(nxt)
                self.poll_consume(op, nxt, depth, role)
            elif isinstance(op, atom.ReduceOp) and (forward := _forwarded(op, ops[k + 1:k + 3],
                                                                           self.phase_ops)) is not None:
                wait, push = forward
                fused.update(forward)
                self.atom(wait, depth, role)
                self.reduce_push(op, push, depth, role)
            elif isinstance(op, atom.FenceOp) and _folds(op, nxt):
                self.emit(depth, "// atom.fence: folded into the release store that follows")
            elif op.dialect_name() == "atom":
                self.atom(op, depth, role)
            elif not self.value(op, depth):
                raise _error(op, "the CUDA code generator does not handle this op inside a role")

    # -- atoms ---------------------------------------------------------------

    def atom(self, op: Operation, depth: int, role: _Role) -> None:
        n = self.name
        b = role.blocks
        if isinstance(op, atom.FenceOp):
            self.emit(depth, f"fence_acq_rel<{'true' if op.scope.data == snac.Scope.SYSTEM else 'false'}>();")
            return
        p, phase, moves = self.phase_of(op)
        if hasattr(op, "rank"):
            self.own_rank(op, op.rank)  # type: ignore[attr-defined]
        order = getattr(op, "order", None)
        strong = "true" if order is not None and order.data in (snac.MemoryOrder.ACQUIRE,
                                                               snac.MemoryOrder.RELEASE) else "false"
        if isinstance(op, atom.WaitFreeOp):
            self.emit(depth, f"wait_free<{moves}, {strong}>(k, {p}, {n(op.unit)}, "
                             f"{n(op.epoch)}, {n(op.prev)}, {self.site(op)});")
        elif isinstance(op, atom.StageOp):
            self.barrier_if_reads_output(op, op.unit, phase, depth, role)
            self.emit(depth, f"stage<{self.dtype}, Mech::{_MECH[op.mech.data]}, {op.width.value.data}>"
                             f"(k, {p}, {n(op.unit)}, {n(op.half)}, part, smem, kSmem);")
        elif isinstance(op, atom.PutOp):
            self.barrier_if_reads_output(op, op.unit, phase, depth, role)
            u = n(op.unit)
            self.emit(depth, f"put_units(k, {p}, {u}, {u} + 1, {n(op.half)}, {n(op.flag)}, part{self.ahead(role)});")
        elif isinstance(op, atom.PushOp):
            if op.mech.data == atom.Mechanism.COPY_ENGINE:
                raise _error(op, "the copy engine is not driven from a kernel")
            self.barrier_if_reads_output(op, op.unit, phase, depth, role)
            loads = "" if op.loads is None else f", {op.loads.value.data}"
            self.emit(depth, f"push<{self.dtype}, Mech::{_MECH[op.mech.data]}, {op.width.value.data}{loads}>"
                             f"(k, {p}, {n(op.unit)}, part, smem, kSmem);")
        elif isinstance(op, atom.GrantOp):
            self.emit(depth, f"grant<{strong}>(k, {p}, {n(op.value)}, part);")
        elif isinstance(op, atom.DrainOp):
            self.emit(depth, f"drain<{strong}>(k, {p}, {n(op.value)}, {self.site(op)});")
        elif isinstance(op, atom.NotifyOp):
            counted = ", true" if phase.sym_name.data in self.counted else ""
            self.emit(depth, f"notify<{b}, {strong}{counted}>(k, {p}, {n(op.unit)}, {n(op.value)}, {self.site(op)});")
        elif isinstance(op, atom.WaitReadyOp):
            self.names[op.token] = "token"
            g = n(op.group)
            self.emit(depth, f"{self.wait_ready(op, strong)}(k, {p}, {g}, {g} + 1, {n(op.epoch)}, "
                             f"{self.site(op)}{self.advance_argument(op)});")
        elif isinstance(op, atom.WaitPacketsOp):
            self.names[op.token] = "token"
            self.emit(depth, f"wait_packets<{strong}>(k, {p}, {n(op.group)}, {n(op.epoch)}, part, "
                             f"{self.site(op)});")
        elif isinstance(op, (atom.CopyOp, atom.ReduceOp)):
            reduce = isinstance(op, atom.ReduceOp)
            mech = op.mech.data
            if mech == atom.Mechanism.MULTIMEM and not reduce:
                raise _error(op, "multimem copies are not generated (a copy's destination is the "
                                 "rank's own output, not multicast memory)")
            if mech == atom.Mechanism.COPY_ENGINE:
                raise _error(op, "the copy engine is not driven from a kernel")
            self.emit(depth, f"consume<{self.dtype}, Mech::{_MECH[mech]}, {op.width.value.data}, "
                             f"{'true' if reduce else 'false'}, {moves}>"
                             f"(k, {p}, {self.redop(phase)}, {n(op.group)}, {n(op.half)}, part, smem, kSmem);")
            role.wrote_output = True
        elif isinstance(op, atom.AckOp):
            self.emit(depth, f"ack<{b}, {strong}>(k, {p}, {n(op.group)}, {n(op.epoch)}, {self.site(op)});")
        elif isinstance(op, atom.FinishOp):
            self.emit(depth, f"finish<{b}, {strong}, {moves}>(k, {p}, {n(op.value)}, {self.site(op)});")
        else:
            raise _error(op, "the CUDA code generator does not handle this op")

    def reduce_push(self, op: atom.ReduceOp, push: atom.PushOp, depth: int, role: _Role) -> None:
        """The fused reduce of a pull group and push of the unit forwarding it."""
        p, phase, _ = self.phase_of(op)
        fwd, _, _ = self.phase_of(push)
        self.own_rank(op, op.rank)
        self.emit(depth, f"reduce_push<{self.dtype}, Mech::{_MECH[op.mech.data]}, {op.width.value.data}>"
                         f"(k, {p}, {self.redop(phase)}, {self.name(op.group)}, {fwd}, part, smem, kSmem);"
                         f"  // atom.reduce + atom.push @{push.phase.string_value()}")
        role.wrote_output = True

    def redop(self, phase: snac.PhaseOp) -> str:
        return f"int(RedOp::{_REDOP[phase.consume.kind]})"

    def poll_consume(self, wait: atom.WaitPacketsOp, op: Operation, depth: int, role: _Role,
                     groups: tuple[str, str] | None = None) -> None:
        """One fused wait_packets + consume, or with `groups` (lo, hi) a loop of them."""
        p, phase, _ = self.phase_of(op)
        self.own_rank(wait, wait.rank)
        reduce = isinstance(op, atom.ReduceOp)
        g = self.name(op.group) if groups is None else ""  # type: ignore[attr-defined]
        lo, hi = groups or (g, f"{g} + 1")
        self.emit(depth, f"poll_consume<{self.dtype}, {'true' if reduce else 'false'}>(k, {p}, "
                         f"{self.redop(phase)}, {lo}, {hi}, {self.name(op.half)}, "  # type: ignore[attr-defined]
                         f"{self.name(wait.epoch)}, part, {self.site(wait)});")
        role.wrote_output = True

    def spread_loop(self, loop: scf.ForOp, depth: int, role: _Role) -> bool:
        """A loop whose body is one put, or one fused wait_packets + consume,
        of the loop's index: emitted as one call that spreads (item, packet)
        pairs over the role's threads, so that small items do not leave them idle."""
        body = [o for o in loop.body.block.ops if not isinstance(o, scf.YieldOp)]
        iv = loop.body.block.args[0]
        step = loop.step.owner
        if not (isinstance(step, arith.ConstantOp) and step.value.value.data == 1):  # type: ignore[attr-defined]
            return False
        bounds = (self.name(loop.lb), self.name(loop.ub))
        outside = lambda v: v is not iv and v in self.names  # noqa: E731
        if len(body) == 1 and isinstance(body[0], atom.PutOp) and body[0].unit is iv:
            put = body[0]
            if not (outside(put.half) and outside(put.flag)):
                return False
            p, phase, _ = self.phase_of(put)
            self.own_rank(put, put.rank)
            self.barrier_if_reads_output(put, loop.lb, phase, depth, role)
            self.emit(depth, f"put_units(k, {p}, {bounds[0]}, {bounds[1]}, {self.name(put.half)}, "
                             f"{self.name(put.flag)}, part{self.ahead(role)});  // scf.for over atom.put")
            return True
        if (len(body) == 2 and isinstance(body[0], atom.WaitPacketsOp) and _fuses(body[0], body[1])
                and body[0].group is iv and outside(body[1].half) and outside(body[0].epoch)):
            self.emit(depth, "// scf.for over atom.wait_packets + consume")
            self.poll_consume(body[0], body[1], depth, role, bounds)
            return True
        if (len(body) == 1 and isinstance(body[0], atom.WaitReadyOp) and body[0].group is iv
                and not body[0].token.uses and outside(body[0].epoch)):
            # Waits of groups that producers wrote in place (direct push): all polled at once.
            wait = body[0]
            p, _, _ = self.phase_of(wait)
            self.own_rank(wait, wait.rank)
            strong = "true" if wait.order.data == snac.MemoryOrder.ACQUIRE else "false"
            self.emit(depth, f"{self.wait_ready(wait, strong)}(k, {p}, {bounds[0]}, {bounds[1]}, "
                             f"{self.name(wait.epoch)}, {self.site(wait)}{self.advance_argument(wait)});  "
                             "// scf.for over atom.wait_ready")
            return True
        return False

    def wait_ready(self, wait: atom.WaitReadyOp, strong: str) -> str:
        """The device function of `wait`: with its phase's notifying blocks where they count."""
        _, phase, _ = self.phase_of(wait)
        blocks = self.counted.get(phase.sym_name.data)
        return f"wait_ready<{strong}, {blocks}>" if blocks else f"wait_ready<{strong}>"

    def advance_argument(self, wait: atom.WaitReadyOp) -> str:
        """A counted wait's last argument: what a call moves the epoch on by (snac.advance)."""
        _, phase, _ = self.phase_of(wait)
        if phase.sym_name.data not in self.counted:
            return ""
        (advance,) = [op for op in self.kernel.body.block.ops if isinstance(op, snac.AdvanceOp)]
        return f", {self.name(advance.amount)}"

    def barrier_if_reads_output(self, op: Operation, index: SSAValue, phase: snac.PhaseOp, depth: int,
                                role: _Role) -> None:
        """A step that reads the output after this role wrote it reads what other
        threads (and blocks) wrote: all of them must be done first."""
        if role.wrote_output and phase.source.data == snac.PhaseSource.OUTPUT:
            self.emit(depth, f"role_barrier<{role.blocks}>(k, {self.site(op)}, {self.name(index)});")


def _is_value(op: Operation) -> bool:
    """Whether `op` only computes an index (_Emitter.value emits it)."""
    return isinstance(op, (arith.ConstantOp, snac.RankOp, snac.EpochOp, snac.HalfOp, snac.UnitsOp, snac.GroupsOp,
                           snac.StagedGroupsOp, snac.MaxUnitsOp)) or type(op) in _BINARY


def _copies(op: Operation, e: _Emitter) -> int | None:
    """The phase index of a loop that pushes every unit of the rank by the
    copy engine (`scf.for %u = 0 to units(@p) { atom.push @p unit %u }`), or
    None for any other op; a copy-engine push elsewhere is an error."""
    body = [o for o in op.body.block.ops if not isinstance(o, scf.YieldOp)] if isinstance(op, scf.ForOp) else []
    push = body[0] if len(body) == 1 and isinstance(body[0], atom.PushOp) else None
    if push is None or push.mech.data != atom.Mechanism.COPY_ENGINE:
        for inner in op.walk():
            if isinstance(inner, atom.PushOp) and inner.mech.data == atom.Mechanism.COPY_ENGINE:
                raise _error(inner, "a copy-engine push must be the whole body of a loop over the rank's units")
        return None
    assert isinstance(op, scf.ForOp)
    lb, ub, step = op.lb.owner, op.ub.owner, op.step.owner
    every_unit = (
        push.unit is op.body.block.args[0]
        and isinstance(lb, arith.ConstantOp) and lb.value.value.data == 0  # type: ignore[attr-defined]
        and isinstance(step, arith.ConstantOp) and step.value.value.data == 1  # type: ignore[attr-defined]
        and isinstance(ub, snac.UnitsOp) and ub.phase == push.phase and ub.rank is push.rank
    )
    if not every_unit:
        raise _error(push, "a copy-engine push must be the whole body of a loop over the rank's units "
                           "(from 0 to snac.units of its phase, step 1)")
    if not isinstance(push.rank.owner, snac.RankOp):
        raise _error(push, "names the units of a rank other than snac.rank; a compiled kernel holds only its "
                           "own rank's tables")
    p, _, moves = e.phase_of(push)
    if moves != "abi::Moves::Push":
        raise _error(push, "the copy engine moves pushed phases only")
    return p


def _stream_kernels(e: _Emitter, name: str, threads: int, head_params: str) -> tuple[list[str], tuple[int, ...]]:
    """The kernels of a stream role's signal steps and the order of the
    steps (KernelSource.stream)."""
    kernel = e.kernel
    (role,) = [op for op in kernel.body.block.ops if isinstance(op, atom.BlocksOp)]
    if role.kind.data != snac.RoleKind.STREAM:
        raise _error(role, "a kernel with copy-engine steps has one stream role")
    segments: list[list[Operation]] = [[]]
    order: list[int] = []
    for op in role.body.block.ops:
        if (p := _copies(op, e)) is None:
            segments[-1].append(op)
            continue
        if any(not _is_value(o) for o in segments[-1]):
            order.append(len(segments) - 1)
            segments.append([])
        order.append(-p - 1)
    # The last kernel advances the epochs, even with no step of its own.
    order.append(len(segments) - 1)
    lines: list[str] = []
    for k, segment in enumerate(segments):
        if k not in order:
            continue  # index values only, before the first copies: each kernel computes them again
        e.names, e.lines, e.rank = {}, [], None
        for op in kernel.body.block.ops:
            if isinstance(op, (snac.BufferOp, snac.SignalsOp, snac.PhaseOp)):
                continue
            if isinstance(op, atom.BlocksOp):
                e.emit(1, f"{{  // atom.blocks stream, step {order.index(k)} of {len(order)}")
                e.emit(2, "const Part part{0, 1};")
                e.ops([o for o in op.body.block.ops if o in segment or _is_value(o)], 2, _Role(1))
                e.emit(1, "}")
            elif isinstance(op, snac.AdvanceOp):
                if k == len(segments) - 1:
                    e.emit(1, f"advance(k, {e.name(op.amount)});")
            elif not e.value(op, 1):
                raise _error(op, "the CUDA code generator does not handle this op at kernel level")
        lines += [
            f"// Step {order.index(k)} of a stream role: one block of {threads} threads.",
            f'extern "C" __global__ void __launch_bounds__({threads}, 1)',
            f"{name}_{k}({head_params}) {{",
            "  extern __shared__ __align__(128) char smem[];",
            "  follow_previous(p);",
            "  K k(p, reinterpret_cast<i64*>(smem + kSmem), &peers);",
            *e.lines,
            "}",
            "",
        ]
    return lines, tuple(order)


def _fuses(wait: atom.WaitPacketsOp, nxt: Operation | None) -> bool:
    """Whether the packet wait and the consume after it become one poll_consume."""
    return (
        isinstance(nxt, (atom.CopyOp, atom.ReduceOp))
        and nxt.token is wait.token
        and wait.token.has_one_use()
        and nxt.group is wait.group
        and nxt.phase == wait.phase
        and nxt.mech.data == atom.Mechanism.VECTOR
    )


def _forwarded(reduce: atom.ReduceOp, after: list[Operation],
               phases: dict[str, snac.PhaseOp]) -> tuple[atom.WaitFreeOp, atom.PushOp] | None:
    """The wait_free and push right after `reduce` that forward the chunk it
    reduced (unit g of a phase pushing from the output, g the reduced group),
    or None. Reducing in place and pushing the result reads each source once."""
    if len(after) != 2 or reduce.mech.data != atom.Mechanism.VECTOR:
        return None
    wait, push = after
    source, target = phases[reduce.phase.string_value()], None
    if isinstance(push, atom.PushOp):
        target = phases[push.phase.string_value()]
    if (target is None or source.moves() != "pull" or not isinstance(wait, atom.WaitFreeOp)
            or wait.phase != push.phase or wait.unit is not reduce.group or push.unit is not reduce.group
            or target.source.data != snac.PhaseSource.OUTPUT or target.route is None
            or target.route.data != snac.Route.FROM_OWNER or push.mech.data != atom.Mechanism.VECTOR):
        return None
    return wait, push


def _folds(fence: atom.FenceOp, nxt: Operation | None) -> bool:
    return (
        isinstance(nxt, (atom.NotifyOp, atom.AckOp, atom.FinishOp))
        and nxt.order.data == snac.MemoryOrder.RELEASE
        and (nxt.scope.data == snac.Scope.SYSTEM or fence.scope.data == snac.Scope.GPU)
    )


def system_scope(kernel: atom.KernelOp) -> bool:
    """Whether the kernel signals at system scope: unless every signal and
    fence of it is at GPU scope (all its ranks on one GPU)."""
    scopes = {op.scope.data for op in kernel.body.walk() if isinstance(getattr(op, "scope", None), snac.ScopeAttr)}
    return snac.Scope.SYSTEM in scopes or not scopes


def kernel_name(kernel: atom.KernelOp) -> str:
    return f"purlin_{kernel.regime.data.value}_{kernel.strategy.data.value}"


def grid_of(kernel: atom.KernelOp) -> int:
    return sum(b.blocks.value.data for b in kernel.body.block.ops if isinstance(b, atom.BlocksOp))


def count_words(kernel: atom.KernelOp) -> int:
    """Counts each rank contributes to a device-counts kernel: a row of the
    matrix (all_to_all_v's sends), or its own count; 0 for static counts."""
    if kernel.counts is None:
        return 0
    kinds = {ph.src_layout.to_layout().kind for ph in kernel.body.block.ops if isinstance(ph, snac.PhaseOp)}
    return kernel.world_size if kinds & set(_MATRIX) else 1


def _static_elems(kernel: atom.KernelOp, v: SSAValue, what: str) -> int:
    assert isinstance(v.type, MemRefType)
    n = v.type.get_shape()[0]
    if n < 0:
        raise _error(kernel, f"device counts need a static {what} size (the bound the counts must fit), "
                             f"got {v.type}")
    return n


@dataclass(frozen=True)
class CountsShape:
    """What a device-counts kernel folds in of its phases: per phase the
    fields of include/purlin/counts_tables.h's PhaseShape and the elements of
    its staging slot or per-source packet region; and the buffers' bounds."""

    phases: tuple[tuple[int, ...], ...]
    names: tuple[str, ...]
    buffer_elems: tuple[int, ...]
    input_elems: int
    output_elems: int
    row: int  # counts per rank


def counts_shape(kernel: atom.KernelOp) -> CountsShape:
    """The device-counts shape of `kernel`, or CodegenError where the prologue
    cannot build its tables."""
    row, world = count_words(kernel), kernel.world_size
    if row == 0:
        raise _error(kernel, "device counts need a kernel with a counts operand")
    if world * row > MAX_GATHERED_COUNTS:
        raise _error(kernel, f"device counts of world {world} are {world * row} words, more than the "
                             f"{MAX_GATHERED_COUNTS} a block gathers")
    ops = kernel.body.block.ops
    buffers = {op.sym_name.data: op for op in ops if isinstance(op, snac.BufferOp)}
    phases, names, elems = [], [], []
    for ph in (op for op in ops if isinstance(op, snac.PhaseOp)):
        src, dst = ph.src_layout.to_layout(), ph.dst_layout.to_layout()
        if ph.route is not None:
            raise _error(ph, "device counts: a routed (composed) phase is not generated; lower with strategy=direct")
        if not (src.is_dynamic and dst.is_dynamic) or (src.kind in _MATRIX) != (dst.kind in _MATRIX):
            raise _error(ph, f"device counts need two dynamic V layouts of one kind of counts, got "
                             f"{src.kind.value} and {dst.kind.value}")
        buf = buffers[ph.buffer.string_value()]
        from_output = int(ph.source.data == snac.PhaseSource.OUTPUT)
        # Forwarding phases keep unread slices (PhasePlan.keep_unread).
        phases.append((LAYOUT_KINDS[src.kind.value], LAYOUT_KINDS[dst.kind.value], ph.chunk.value.data,
                       int(ph.stage_local is not None), from_output,
                       int(buf.kind.data == snac.BufferKind.PACKETS), from_output))
        names.append(ph.sym_name.data)
        elems.append(buf.elems.value.data)
    return CountsShape(tuple(phases), tuple(names), tuple(elems), _static_elems(kernel, kernel.input, "input"),
                       _static_elems(kernel, kernel.output, "output"), row)


def _counts_prologue(e: _Emitter) -> list[str]:
    """The call that gathers the counts and builds this rank's tables."""
    kernel = e.kernel
    shape = counts_shape(kernel)
    assert isinstance(kernel.input.type, MemRefType)
    site = len(e.sites)
    e.sites.append(f"the counts exchange of 'atom.kernel' at {where(kernel)}")
    return [
        "  // Device counts: each rank's, gathered, then this rank's tables.",
        "  constexpr counts::PhaseShape kShapes[] = {",
        *(f"      {{{', '.join(map(str, p))}}},  // @{n}" for p, n in zip(shape.phases, shape.names)),
        "  };",
        f"  constexpr i64 kBufferElems[] = {{{', '.join(map(str, shape.buffer_elems))}}};",
        f"  if (!device_counts<{shape.row}>(k, reinterpret_cast<i64*>(smem + kSmem), kShapes, kBufferElems, "
        f"{shape.input_elems}, {shape.output_elems}, {element_bytes(kernel.input.type.element_type)}, {site})) "
        "return;",
    ]


def _fixed_tables(rank_tables: Mapping[int, Sequence[int]]) -> list[str]:
    """Each rank's tables as a constant array, and the Fixed of its Kernel."""
    lines = []
    for r, words in sorted(rank_tables.items()):
        lines += [
            f"__device__ constexpr i64 kRank{r}Words[{len(words)}] = {{{', '.join(f'{int(w)}ll' for w in words)}}};",
            f"struct Rank{r}Tables {{",
            "  static constexpr bool fixed = true;",
            f"  static constexpr int words = {len(words)};",
            f"  __device__ static constexpr i64 word(int i) {{ return kRank{r}Words[i]; }}",
            "};",
        ]
    return lines


def emit_cuda(kernel: atom.KernelOp, shared_tables: bool = True, blocks_per_sm: int = 1,
              device_counts: bool | None = None, rank_tables: Mapping[int, Sequence[int]] | None = None
              ) -> KernelSource:
    """The translation unit of `kernel`: each block copies the tables into
    shared memory first (`shared_tables`) or reads them from global memory;
    registers sized for `blocks_per_sm` resident blocks per SM.
    `device_counts` (default: whether the kernel has a counts operand): the
    kernel reads its counts on the device; else the host binds them in the tables.
    `rank_tables` (rank -> its tables as the host uploads them, for the ranks
    one process launches): compiled in, the body once per rank (a switch on
    the rank; another rank traps); the tables are read as `shared_tables`
    says, but a lookup at an index the compiler knows is a constant (the
    symmetric allocations' addresses, the host's, excepted)."""
    threads = kernel.threads.value.data
    if blocks_per_sm < 1 or blocks_per_sm * threads > MAX_THREADS_PER_SM:
        raise CodegenError(
            f"{where(kernel)}: error: '{kernel.name}': {blocks_per_sm} blocks of {threads} threads "
            f"per SM exceed the {MAX_THREADS_PER_SM} threads an SM holds"
        )
    dynamic = kernel.counts is not None if device_counts is None else device_counts
    e = _Emitter(kernel)
    e.counted = {} if dynamic else counted_ready(kernel)
    e.declarations()
    streamed = any(isinstance(op, atom.PushOp) and op.mech.data == atom.Mechanism.COPY_ENGINE
                   for op in kernel.body.walk())
    if not streamed:
        e.top()
    if dynamic and kernel.counts is None:
        raise CodegenError(f"{where(kernel)}: error: '{kernel.name}': device counts need a kernel with a counts operand")
    if dynamic and not shared_tables:
        raise CodegenError(f"{where(kernel)}: error: '{kernel.name}': device counts build the tables in shared memory")
    if dynamic and any(ph.moves() in ("pull", "push") for ph in e.phase_ops.values()):
        raise CodegenError(f"{where(kernel)}: error: '{kernel.name}': the kernel moves its dynamic counts in place, "
                           "at offsets the host binds (lowered counts-on-host): bind the counts on the host "
                           "(DeviceCountsCollective.bind_collective), or lower it without counts-on-host to read "
                           "them on the device")
    host_bound = {n: "makes a flag-only unit of every empty slice" if ph.empty_units is not None
                  else "moves its slices coalesced" for n, ph in e.phase_ops.items()
                  if ph.empty_units is not None or ph.coalesce is not None}
    if dynamic and host_bound:
        name, what = next(iter(host_bound.items()))
        raise CodegenError(f"{where(kernel)}: error: '{kernel.name}': phase '{name}' {what} (lowered "
                           "counts-on-host), which the tables the device builds from its counts do not have: bind "
                           "the counts on the host (DeviceCountsCollective.bind_collective), or lower it without "
                           "counts-on-host to read them on the device")
    prologue = _counts_prologue(e) if dynamic else []
    name = kernel_name(kernel)
    if streamed and (dynamic or kernel.symmetric is None):
        raise CodegenError(f"{where(kernel)}: error: '{kernel.name}': copy-engine steps need a symmetric kernel "
                           "of fixed counts")
    world = kernel.world_size
    if rank_tables and (dynamic or streamed or not all(0 <= r < world for r in rank_tables)):
        raise CodegenError(f"{where(kernel)}: error: '{kernel.name}': tables compiled in take ranks of the world "
                           f"(0-{world - 1}, got {', '.join(map(str, sorted(rank_tables)))}), fixed counts and no "
                           "copy-engine steps")
    symmetric = kernel.symmetric is not None
    system = system_scope(kernel)
    grid = grid_of(kernel)
    smem = kernel.smem.value.data
    params = "const __grid_constant__ abi::Header p" + (
        ", const __grid_constant__ abi::Peers<kWorld> peers" if symmetric else "")
    head = [
        f"// purlin: {kernel.regime.data.value} {kernel.strategy.data.value} collective, world {world}, "
        f"{kernel.arch.value}, generated from the atom.kernel at {where(kernel)}",
        f"#define PURLIN_BLOCKS_PER_SM {blocks_per_sm}  // the headers size their loads in flight by it",
        f"#include <purlin/{'counts' if dynamic else 'kernel'}.cuh>",
        "",
        "namespace {",
        "using namespace purlin;",
        "using namespace purlin::cuda;",
        f"constexpr int kWorld = {world};",
        f"constexpr bool kSharedTables = {'true' if shared_tables else 'false'};",
        f"// Signals and packets at {'system' if system else 'GPU (every rank on one GPU)'} scope.",
        f"constexpr bool kSystem = {'true' if system else 'false'};",
        f"// Dynamic shared memory: {smem} bytes for the pipelines, then the tables.",
        f"constexpr int kSmem = {smem};",
        *([] if rank_tables else ["using K = Kernel<kWorld, kSharedTables, kSystem>;"]),
        *_fixed_tables(rank_tables or {}),
        "}  // namespace",
        "",
    ]
    if streamed:
        body, stream = _stream_kernels(e, name, threads, params)
        return KernelSource("\n".join(head + body), name, kernel.arch.value, threads, grid, smem, shared_tables,
                            blocks_per_sm, tuple(e.sites), kernel.multimem is not None, 0, symmetric, system,
                            stream)
    launch = [
        f"// {grid} block{'s' if grid > 1 else ''} of {threads} threads, all co-resident.",
        f'extern "C" __global__ void __launch_bounds__({threads}, {blocks_per_sm})',
        f"{name}({params}) {{",
        "  extern __shared__ __align__(128) char smem[];",
        "  follow_previous(p);",
    ]
    frame = f"  K k(p, reinterpret_cast<i64*>(smem + kSmem){', &peers' if symmetric else ''});"
    if e.reads_ahead:
        frame = "  const ReadAhead ahead(p);  // the first put's input word, beside the tables\n" + frame
    if rank_tables:
        peers = ", const abi::Peers<kWorld>& peers" if symmetric else ""
        text = "\n".join(head + [
            "// The call of one rank, its tables compiled in (K's Fixed).",
            "template <class K>",
            f"__device__ __forceinline__ void rank_call(const abi::Header& p{peers}, char* smem) {{",
            frame, *e.lines, "}", "", *launch, "  switch (p.rank) {",
            *(f"    case {r}: rank_call<Kernel<kWorld, kSharedTables, kSystem, Rank{r}Tables>>(p"
              f"{', peers' if symmetric else ''}, smem); break;" for r in sorted(rank_tables)),
            "    default: __trap();  // a rank whose tables are not compiled in", "  }", "}", ""])
    else:
        text = "\n".join(head + launch + [frame] + prologue + e.lines + ["}", ""])
    return KernelSource(text, name, kernel.arch.value, threads, grid, smem, shared_tables, blocks_per_sm,
                        tuple(e.sites), kernel.multimem is not None, count_words(kernel) if dynamic else 0,
                        symmetric, system)
