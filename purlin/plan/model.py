"""The plan's vocabulary: the format constants, the enums, the dtype and arch
tables, and the records a plan is made of (references, instructions, the
kernel's roles, buffers and signal arrays). csrc/include/purlin/plan.h and
purlin/cuda/include/purlin/abi.h define the same values for the runtimes
(tests/python/plan/test_plan_abi.py holds them equal)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum

from purlin.atom import vocabulary as atom
from purlin.dtypes import DTYPES as COLL_DTYPES
from purlin.dtypes import ReduceKind
from purlin.snac import vocabulary as snac

# What purlin.plan re-exports.
__all__ = [
    "ARCHS", "DTYPES", "FLAG_SYMMETRIC", "FORMAT", "HEADER_WORDS", "INSTR_WORDS", "INT64", "MAGIC", "MULTIMEM_REDUCE",
    "REF_WORDS", "VERSION", "Base", "BufKind", "BufferSpec", "Instr", "Mech", "Op", "Order", "PlanError", "PlanHeader",
    "RedOp", "Ref", "RoleKind", "RoleSpec", "Scope", "SignalSpec", "Space",
]

FORMAT = "purlin-plan"
VERSION = 1
MAGIC = 0x4E4C5250  # "PRLN"
INSTR_WORDS = 16
REF_WORDS = 5
HEADER_WORDS = 16
# Header flags: the plan reads and writes other ranks' user buffers in place.
FLAG_SYMMETRIC = 1


class PlanError(Exception):
    """A plan that is malformed, corrupt, or of another version."""


class Op(IntEnum):
    WAIT = 1
    SIGNAL = 2
    COPY = 3
    REDUCE = 4
    PUT = 5
    WAIT_PACKETS = 6


class Space(IntEnum):
    INPUT = 0
    OUTPUT = 1
    STAGING = 2
    WINDOW = 3


class Base(IntEnum):
    EPOCH = 0
    PREV = 1


def _codes(name: str, ir: type[Enum], none: bool = False) -> type[IntEnum]:
    """The plan's codes of an IR enum: its members in their order, after
    NONE = 0 where `none` (ops that have no such value)."""
    members = (["NONE"] if none else []) + [m.name for m in ir]
    return IntEnum(name, [(m, code) for code, m in enumerate(members)], module=__name__)


# The codes of the IR's mechanisms, memory orders, scopes, reductions, buffer and role kinds.
Mech = _codes("Mech", atom.Mechanism, none=True)
Order = _codes("Order", snac.MemoryOrder)
Scope = _codes("Scope", snac.Scope)
RedOp = _codes("RedOp", ReduceKind, none=True)
BufKind = _codes("BufKind", snac.BufferKind)
RoleKind = _codes("RoleKind", snac.RoleKind)


# dtype -> (code, bytes): the code is the dtype's place in coll.DTYPES.
DTYPES = {d.name: (code, d.bytes) for code, d in enumerate(COLL_DTYPES)}
ARCHS = {"sm_80": 80, "sm_90": 90, "sm_100": 100}
# What multimem.ld_reduce can reduce, by element type (PTX ISA; as atom.MULTIMEM_REDUCE).
MULTIMEM_REDUCE = {
    "f32": (RedOp.SUM,),
    "f16": (RedOp.SUM, RedOp.MAX, RedOp.MIN),
    "bf16": (RedOp.SUM, RedOp.MAX, RedOp.MIN),
}
INT64 = (-(1 << 63), (1 << 63) - 1)


@dataclass(frozen=True)
class Ref:
    space: Space
    rank: int
    buf: int = 0
    slot: int = 0
    offset: int = 0

    def words(self) -> list[int]:
        return [int(self.space), self.rank, self.buf, self.slot, self.offset]


@dataclass(frozen=True)
class Instr:
    op: Op
    mech: Mech = Mech.NONE
    elems: int = 0
    # wait / signal
    sig: int = 0
    peer: int = 0
    slot: int = 0
    base: Base = Base.EPOCH
    rel: int = 0
    order: Order = Order.RELAXED
    scope: Scope = Scope.SYSTEM
    # data
    redop: RedOp = RedOp.NONE
    buf: int = 0
    offset: int = 0
    dst: Ref | None = None
    srcs: tuple[Ref, ...] = ()


@dataclass(frozen=True)
class RoleSpec:
    kind: RoleKind
    blocks: int


@dataclass(frozen=True)
class BufferSpec:
    name: str
    kind: BufKind
    slots: int
    elems: int


@dataclass(frozen=True)
class SignalSpec:
    name: str
    slots: int


@dataclass
class PlanHeader:
    """What a whole plan and each rank's part share: the kernel's shape, its
    roles, buffers and signal arrays."""

    arch: str
    world: int
    dtype: str
    input_elems: int
    output_elems: int
    advance: int
    threads: int
    roles: list[RoleSpec]
    buffers: list[BufferSpec]
    signals: list[SignalSpec]

    @property
    def elem_bytes(self) -> int:
        return DTYPES[self.dtype][1]
