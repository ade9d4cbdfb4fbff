"""What `purlin.plan.validate` checks: every index, offset and size of a plan
inside what it names. Both readers (`decode`, `from_json`) end with it; the
runtimes re-check what they rely on (csrc/host/plan.cpp). It reads a plan's
header and its programs as given, so that it needs no Plan class."""

from __future__ import annotations

from typing import NoReturn

from purlin.dtypes import ReduceKind, check_reduce_computable
from purlin.plan.model import (
    ARCHS,
    DTYPES,
    MULTIMEM_REDUCE,
    BufKind,
    Instr,
    Mech,
    Op,
    Order,
    PlanError,
    PlanHeader,
    RedOp,
    Ref,
    Space,
)
from purlin.snac.protocol import PACKET_DATA_BYTES
from purlin.snac.vocabulary import MAX_BUFFER_BYTES, MAX_ROLE_BLOCKS, MAX_SLOTS, BufferKind, buffer_bytes

def check_plan(plan: PlanHeader, programs: list[list[list[Instr]]], symmetric: bool) -> None:
    """Raise PlanError unless the header and every rank's `programs[rank][role]` are within bounds."""
    _check_header(plan)
    _check_kernel(plan)
    if len(programs) != plan.world:
        raise PlanError(f"plan has programs for {len(programs)} ranks, world is {plan.world}")
    for rank, roles in enumerate(programs):
        if len(roles) != len(plan.roles):
            raise PlanError(f"rank {rank} has {len(roles)} role programs, the kernel {len(plan.roles)}")
        _check_program(plan, symmetric, rank, roles)


def check_rank_plan(plan: PlanHeader, rank: int, program: list[list[Instr]], symmetric: bool) -> None:
    """`check_plan` for rank `rank`'s `program[role]` alone (naming other ranks only as peers)."""
    _check_header(plan)
    _check_kernel(plan)
    if not 0 <= rank < plan.world:
        raise PlanError(f"rank {rank} is outside world {plan.world}")
    if len(program) != len(plan.roles):
        raise PlanError(f"rank {rank} has {len(program)} role programs, the kernel {len(plan.roles)}")
    _check_program(plan, symmetric, rank, program)


def _check_header(plan: PlanHeader) -> None:
    if not isinstance(plan.arch, str) or plan.arch not in ARCHS:
        raise PlanError(f"unknown arch {plan.arch!r}")
    if not isinstance(plan.dtype, str) or plan.dtype not in DTYPES:
        raise PlanError(f"unknown dtype {plan.dtype!r}")
    if plan.world < 1:
        raise PlanError(f"world must be at least 1, got {plan.world}")
    if plan.advance < 1 or plan.advance % 2 == 0:
        raise PlanError(f"epoch advance must be odd and positive, got {plan.advance}")
    if not 1 <= plan.threads <= 1024 or plan.threads % 32:
        raise PlanError(f"threads per block must be a multiple of 32 in [32, 1024], got {plan.threads}")
    if plan.input_elems < 0 or plan.output_elems < 0:
        raise PlanError("buffer sizes must be non-negative")


def _check_kernel(plan: PlanHeader) -> None:
    """The roles, buffers and signal arrays every rank's programs share."""
    for k, r in enumerate(plan.roles):
        if not 1 <= r.blocks <= MAX_ROLE_BLOCKS:
            raise PlanError(f"role {k} has {r.blocks} blocks, expected 1 to {MAX_ROLE_BLOCKS}")
    for k, b in enumerate(plan.buffers):
        if b.slots < 1 or b.elems < 0:
            raise PlanError(f"buffer {k} has {b.slots} slots of {b.elems} elements")
        if b.kind == BufKind.PACKETS and b.slots != plan.world:
            raise PlanError(f"packet window {k} has {b.slots} source slots, world is {plan.world}")
        if b.kind == BufKind.STAGING and b.slots > MAX_SLOTS:
            raise PlanError(f"buffer {k} has {b.slots} slots per half, more than {MAX_SLOTS}")
        kind = BufferKind.STAGING if b.kind == BufKind.STAGING else BufferKind.PACKETS
        if (nbytes := buffer_bytes(kind, b.slots, b.elems, plan.elem_bytes)) > MAX_BUFFER_BYTES:
            raise PlanError(f"buffer {k} takes {nbytes} bytes, more than {MAX_BUFFER_BYTES}")
    for k, s in enumerate(plan.signals):
        if s.slots != plan.world:
            raise PlanError(f"signal array {k} has {s.slots} slots, world is {plan.world}")


class _Site:
    """Where the checks are in one rank's program: instruction `n` of role
    `role`. One site walks the program (a record per instruction cost more
    than checking it)."""

    __slots__ = ("plan", "symmetric", "rank", "role", "n", "instr")
    plan: PlanHeader
    symmetric: bool
    rank: int
    role: int
    n: int
    instr: Instr

    def __init__(self, plan: PlanHeader, symmetric: bool, rank: int):
        self.plan, self.symmetric, self.rank = plan, symmetric, rank

    def fail(self, msg: str) -> NoReturn:
        raise PlanError(f"rank {self.rank} role {self.role} instruction {self.n} "
                        f"({self.instr.op.name.lower()}): {msg}")

    def in_world(self, v: int, what: str) -> None:
        if not 0 <= v < self.plan.world:
            self.fail(f"{what} {v} is outside world {self.plan.world}")


def _check_program(plan: PlanHeader, symmetric: bool, rank: int, program: list[list[Instr]]) -> None:
    """Every instruction of rank `rank`'s `program[role]`."""
    at = _Site(plan, symmetric, rank)
    for role, body in enumerate(program):
        at.role = role
        for n, i in enumerate(body):
            at.n, at.instr = n, i
            _check_instr(at)


def _check_instr(at: _Site) -> None:
    i = at.instr
    if i.elems < 0:
        at.fail(f"{i.elems} elements")
    if (check := _CHECK_OP.get(i.op)) is not None:
        check(at)
    if i.mech != Mech.NONE:  # waits and signals, most of a plan, have none
        _check_mech(at)


def _check_signal_op(at: _Site) -> None:
    i, plan = at.instr, at.plan
    if not 0 <= i.sig < len(plan.signals):
        at.fail(f"signal array {i.sig} does not exist ({len(plan.signals)} arrays)")
    if not 0 <= i.slot < plan.signals[i.sig].slots:
        at.fail(f"signal slot {i.slot} is outside {plan.signals[i.sig].slots} slots")
    if i.rel < 0:
        at.fail(f"flag offset {i.rel} is negative")
    if i.op == Op.WAIT:
        if i.order == Order.RELEASE:
            at.fail("a wait cannot be a release")
    else:
        at.in_world(i.peer, "peer")
        if i.order == Order.ACQUIRE:
            at.fail("a signal store cannot be an acquire")


def _check_data_op(at: _Site) -> None:
    i = at.instr
    if i.dst is None:
        at.fail("has no destination")
    _check_ref(at, i.dst, "destination", writes=True)
    if i.op == Op.COPY and len(i.srcs) != 1:
        at.fail(f"a copy has one source, got {len(i.srcs)}")
    if i.op == Op.REDUCE and (not i.srcs or i.redop == RedOp.NONE):
        at.fail("a reduce needs sources and a reduction")
    if i.op == Op.REDUCE and (problem := check_reduce_computable(ReduceKind(i.redop.name.lower()), at.plan.dtype)):
        at.fail(problem)
    for k, s in enumerate(i.srcs):
        _check_ref(at, s, f"source {k}", writes=False)


def _check_packet_op(at: _Site) -> None:
    """put and wait_packets: a packet window of this rank's, by buf/offset."""
    i, plan = at.instr, at.plan
    if not 0 <= i.buf < len(plan.buffers) or plan.buffers[i.buf].kind != BufKind.PACKETS:
        at.fail(f"buffer {i.buf} is not a packet window")
    window = plan.buffers[i.buf].elems
    # An empty one still moves the packet at its offset (its flag).
    if i.offset < 0 or i.offset + max(i.elems, 1) > window:
        at.fail(f"window range [{i.offset}, {i.offset + max(i.elems, 1)}) is outside its {window} elements")
    per_packet = PACKET_DATA_BYTES // plan.elem_bytes
    if i.offset % per_packet:
        at.fail(f"window offset {i.offset} does not start a packet ({per_packet} elements)")
    at.in_world(i.peer, "peer" if i.op == Op.PUT else "source rank")
    if i.op == Op.PUT:
        if len(i.srcs) != 1:
            at.fail(f"a put has one source, got {len(i.srcs)}")
        _check_ref(at, i.srcs[0], "source", writes=False)


# Each op's own checks.
_CHECK_OP = {Op.WAIT: _check_signal_op, Op.SIGNAL: _check_signal_op, Op.COPY: _check_data_op,
             Op.REDUCE: _check_data_op, Op.PUT: _check_packet_op, Op.WAIT_PACKETS: _check_packet_op}


def _check_mech(at: _Site) -> None:
    """What the instruction's mechanism can do, on the plan's dtype and arch."""
    i, plan = at.instr, at.plan
    if i.mech == Mech.MULTIMEM:
        if i.op == Op.REDUCE and i.redop not in MULTIMEM_REDUCE.get(plan.dtype, ()):
            at.fail(f"multimem cannot reduce {plan.dtype} with {i.redop.name.lower()}")
        if plan.dtype.startswith("fp8"):
            at.fail(f"multimem does not move {plan.dtype}")
    if i.mech in (Mech.BULK, Mech.MULTIMEM) and ARCHS[plan.arch] < 90:
        at.fail(f"{i.mech.name.lower()} needs sm_90 or newer, the plan targets {plan.arch}")


def _check_ref(at: _Site, r: Ref, what: str, writes: bool) -> None:
    at.in_world(r.rank, f"{what} rank")
    if r.space in (Space.INPUT, Space.OUTPUT):
        size = _user_buffer_size(at, r, what, writes)
    else:
        size = _symmetric_buffer_size(at, r, what)
    if r.offset < 0 or r.offset + at.instr.elems > size:
        at.fail(f"{what} [{r.offset}, {r.offset + at.instr.elems}) is outside its {size} elements")


def _user_buffer_size(at: _Site, r: Ref, what: str, writes: bool) -> int:
    """Elements of the input or output a ref names: unless the plan is
    symmetric, only the executing rank's are mapped."""
    if r.rank != at.rank and not at.symmetric:
        at.fail(f"{what} names rank {r.rank}'s {r.space.name.lower()}, only rank {at.rank}'s is mapped "
                "(the plan is not symmetric)")
    if writes and r.space == Space.INPUT:
        at.fail(f"{what} writes the input buffer")
    return at.plan.input_elems if r.space == Space.INPUT else at.plan.output_elems


def _symmetric_buffer_size(at: _Site, r: Ref, what: str) -> int:
    """Elements of one slot of the staging buffer or packet window a ref names."""
    buffers = at.plan.buffers
    if not 0 <= r.buf < len(buffers):
        at.fail(f"{what} buffer {r.buf} does not exist ({len(buffers)} buffers)")
    b = buffers[r.buf]
    want = BufKind.STAGING if r.space == Space.STAGING else BufKind.PACKETS
    if b.kind != want:
        at.fail(f"{what} uses buffer {r.buf} ({b.kind.name.lower()}) as {r.space.name.lower()}")
    if not 0 <= r.slot < b.slots:
        at.fail(f"{what} slot {r.slot} is outside buffer {r.buf}'s {b.slots} slots")
    return b.elems
