"""The `atom` dialect: how the GPU moves bytes.

`convert-snac-to-atom{arch=...}` keeps the orchestration of a snac.program
(its buffers, signals, phases, loops and rank-generic queries) and replaces
each protocol step by the datapath that performs it on one GPU generation:
- `atom.kernel` is the program as one kernel launch: target, threads per
  block, shared memory, and whether multicast objects are bound.
- `atom.blocks` are the blocks of one role (first block, count).
- data: `atom.stage`, `atom.copy`, `atom.reduce` (N-to-1, f32 accumulation),
  `atom.put` (16-byte packets), each with the mechanism it uses and its
  access width in bytes;
- signals: `atom.fence`, `atom.notify`/`atom.ack`/`atom.finish` (stores) and
  `atom.wait_ready`/`atom.wait_free`/`atom.wait_packets` (polls), each with
  explicit order and scope.
Atom ops are snac ops with a mechanism, so the SNAC simulator and
`snac-verify` run Atom IR unchanged.
"""

from __future__ import annotations

from xdsl.dialects.builtin import I64, IntegerAttr, MemRefType, ModuleOp, UnitAttr
from xdsl.ir import Dialect, Operation
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def, traits_def
from xdsl.traits import NoTerminator, SymbolTable
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from purlin.coll.attributes import DTYPE_BYTES, ReduceKind, dtype_name
from purlin.atom.vocabulary import Mechanism, Target  # noqa: F401  (the dialect's vocabulary: atom.Mechanism, ...)
from purlin.declarations import enum_attribute
from purlin.snac import dialect as snac
from purlin.snac.protocol import PACKET_BYTES


# Oldest generation with each mechanism.
MIN_SM: dict[Mechanism, int] = {
    Mechanism.VECTOR: 0,
    Mechanism.COPY_ENGINE: 0,
    Mechanism.PACKET: 0,
    Mechanism.CP_ASYNC: 80,
    Mechanism.BULK: 90,
    Mechanism.MULTIMEM: 90,
}

# Widest single access (bytes): 32-byte loads and stores arrived with sm_100.
MAX_WIDTH: dict[Target, int] = {
    Target.SM_70: 16,
    Target.SM_80: 16,
    Target.SM_90: 16,
    Target.SM_100: 32,
}

# What multimem.ld_reduce can reduce, by element type (PTX ISA).
MULTIMEM_REDUCE: dict[str, frozenset[ReduceKind]] = {
    "f32": frozenset({ReduceKind.SUM}),
    "f16": frozenset({ReduceKind.SUM, ReduceKind.MAX, ReduceKind.MIN}),
    "bf16": frozenset({ReduceKind.SUM, ReduceKind.MAX, ReduceKind.MIN}),
}


def sm(target: Target) -> int:
    return int(target.value.removeprefix("sm_"))


TargetAttr = enum_attribute(Target, "atom.target", __name__)
MechanismAttr = enum_attribute(Mechanism, "atom.mechanism", __name__)


def _err(op: Operation, msg: str) -> VerifyException:
    return VerifyException(f"'{op.name}': {msg}")


@irdl_op_definition
class KernelOp(snac.ProgramOpBase):
    """One kernel launch per rank and call, all blocks co-resident."""

    name = "atom.kernel"

    target = prop_def(TargetAttr)
    threads = prop_def(IntegerAttr[I64])
    smem = prop_def(IntegerAttr[I64])
    multimem = opt_prop_def(UnitAttr)

    traits = traits_def(NoTerminator(), SymbolTable())
    assembly_format = (
        "$input `,` $output (`counts` $counts^)? `world` $world `regime` $regime "
        "`strategy` $strategy (`symmetric` $symmetric^)? `target` $target `threads` $threads `smem` $smem "
        "(`multimem` $multimem^)? attr-dict `:` type($input) `,` type($output) "
        "(`,` type($counts)^)? $body"
    )

    @property
    def arch(self) -> Target:
        return self.target.data

    def verify_(self) -> None:
        super().verify_()
        t = self.threads.value.data
        if not 32 <= t <= 1024 or t % 32:
            raise _err(self, f"threads per block must be a multiple of 32 in [32, 1024], got {t}")
        if self.smem.value.data < 0:
            raise _err(self, f"shared memory must be non-negative, got {self.smem.value.data}")
        if self.multimem is not None and sm(self.arch) < 90:
            raise _err(self, f"multicast objects need sm_90 or newer, the target is {self.arch.value}")


def kernels_in(module: ModuleOp) -> list[KernelOp]:
    return [op for op in module.walk() if isinstance(op, KernelOp)]


def required_kernels(module: ModuleOp, purpose: str) -> list[KernelOp]:
    """The atom.kernels of `module`, or a DiagnosticException saying that
    `purpose` (what the caller would do with them) needs some."""
    kernels = kernels_in(module)
    if not kernels:
        raise DiagnosticException(f"error: no atom.kernel to {purpose}; lower with convert-snac-to-atom first")
    return kernels


def kernel_of(op: Operation) -> KernelOp:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, KernelOp):
        parent = parent.parent_op()
    if parent is None:
        raise _err(op, "must be inside an atom.kernel")
    return parent


@irdl_op_definition
class BlocksOp(snac.RoleOpBase):
    """The blocks [first, first + blocks) of the kernel, running one role."""

    name = "atom.blocks"

    first = prop_def(IntegerAttr[I64])
    assembly_format = "$kind `first` $first `blocks` $blocks attr-dict-with-keyword $body"

    def verify_(self) -> None:
        super().verify_()
        if not isinstance(self.parent_op(), KernelOp):
            raise _err(self, "must be directly inside an atom.kernel")
        if self.first.value.data < 0:
            raise _err(self, f"first block must be non-negative, got {self.first.value.data}")
        if self.kind.data == snac.RoleKind.STREAM:
            for op in self.body.walk():
                if isinstance(op, PushOp) and op.mech.data != Mechanism.COPY_ENGINE:
                    raise _err(self, f"a stream role's pushes are the copy engine's, got mech "
                                     f"'{op.mech.data.value}'")


class _Datapath:
    """Data-moving atoms: a mechanism and an access width."""

    mech = prop_def(MechanismAttr)
    width = prop_def(IntegerAttr[I64])

    def verify_datapath(self: Operation, reduce: ReduceKind | None = None) -> None:  # type: ignore[misc]
        kernel = kernel_of(self)
        mech: Mechanism = self.mech.data  # type: ignore[attr-defined]
        width: int = self.width.value.data  # type: ignore[attr-defined]
        target = kernel.arch
        if sm(target) < MIN_SM[mech]:
            raise _err(
                self,
                f"mechanism '{mech.value}' needs sm_{MIN_SM[mech]} or newer, the target is {target.value}",
            )
        assert isinstance(kernel.input.type, MemRefType)
        dtype = dtype_name(kernel.input.type.element_type)
        assert dtype is not None
        elem = DTYPE_BYTES[dtype]
        if mech == Mechanism.PACKET:
            if width != PACKET_BYTES:
                raise _err(self, f"packets are {PACKET_BYTES}-byte stores, got width {width}")
        elif width not in (4, 8, 16, 32) or width > MAX_WIDTH[target] or width % elem:
            raise _err(
                self,
                f"access width {width} bytes is not valid for {dtype} on {target.value}: expected a "
                f"multiple of {elem} among 4, 8, 16" + (", 32" if MAX_WIDTH[target] == 32 else ""),
            )
        if mech == Mechanism.COPY_ENGINE:
            role = self.parent_op()
            while role is not None and not isinstance(role, BlocksOp):
                role = role.parent_op()
            if not isinstance(self, PushOp) or role is None or role.kind.data != snac.RoleKind.STREAM:
                raise _err(self, "the copy engine makes only the pushes of a stream role (the host issues them "
                                 "between the role's signal steps)")
        if mech == Mechanism.MULTIMEM:
            if kernel.multimem is None:
                raise _err(self, "multimem needs a kernel with multicast objects bound (multimem)")
            if reduce is not None and reduce not in MULTIMEM_REDUCE.get(dtype, frozenset()):
                allowed = {d: sorted(k.value for k in ks) for d, ks in MULTIMEM_REDUCE.items()}
                raise _err(
                    self,
                    f"multimem cannot reduce {dtype} with '{reduce.value}' (fp8 and prod never); "
                    f"supported: {allowed}",
                )
            if reduce is None and dtype.startswith("fp8"):
                raise _err(self, f"multimem does not store {dtype}")


@irdl_op_definition
class StageOp(snac.StageOpBase, _Datapath):
    name = "atom.stage"
    assembly_format = (
        "$phase `unit` $unit `of` $rank `half` $half `mech` $mech `width` $width attr-dict"
    )

    def verify_(self) -> None:
        super().verify_()
        self.verify_datapath()


@irdl_op_definition
class PutOp(snac.PutOpBase, _Datapath):
    name = "atom.put"
    assembly_format = (
        "$phase `unit` $unit `of` $rank `half` $half `flag` $flag $order $scope "
        "`mech` $mech `width` $width attr-dict"
    )

    def verify_(self) -> None:
        super().verify_()
        self.verify_datapath()


# The loads in flight a thread that a vector push may take in whole rounds
# (atom.push `loads`; the lowering's choice: convert-snac-to-atom).
WHOLE_ROUND_LOADS = 8


@irdl_op_definition
class PushOp(snac.PushOpBase, _Datapath):
    """Write a unit into the outputs of its destinations, in place. `loads`: a
    vector push's loads in flight a thread in whole rounds (the datapath's
    default where absent)."""

    name = "atom.push"
    loads = opt_prop_def(IntegerAttr[I64])
    assembly_format = "$phase `unit` $unit `of` $rank `mech` $mech `width` $width (`loads` $loads^)? attr-dict"

    def verify_(self) -> None:
        super().verify_()
        self.verify_datapath()
        if self.loads is None:
            return
        loads = self.loads.value.data
        if self.mech.data != Mechanism.VECTOR or loads != WHOLE_ROUND_LOADS:
            raise _err(self, f"loads {loads} with mech '{self.mech.data.value}': expected mech 'vector' and "
                             f"{WHOLE_ROUND_LOADS} loads in flight a thread")


@irdl_op_definition
class CopyOp(snac.ConsumeOpBase, _Datapath):
    """Consume a group by copying its one source into the output."""

    name = "atom.copy"
    assembly_format = (
        "$phase `group` $group `of` $rank `half` $half `after` $token `mech` $mech "
        "`width` $width attr-dict"
    )

    def verify_(self) -> None:
        super().verify_()
        phase = snac._phase_of(self, self.phase)
        if phase.consume.kind is not None:
            raise _err(self, f"phase '@{phase.sym_name.data}' reduces; use atom.reduce")
        self.verify_datapath()


@irdl_op_definition
class ReduceOp(snac.ConsumeOpBase, _Datapath):
    """Consume a group by an N-to-1 reduction with f32 accumulation."""

    name = "atom.reduce"
    packed_f32x2 = opt_prop_def(UnitAttr)
    assembly_format = (
        "$phase `group` $group `of` $rank `half` $half `after` $token `mech` $mech "
        "`width` $width (`packed_f32x2` $packed_f32x2^)? attr-dict"
    )

    def verify_(self) -> None:
        super().verify_()
        phase = snac._phase_of(self, self.phase)
        kind = phase.consume.kind
        if kind is None:
            raise _err(self, f"phase '@{phase.sym_name.data}' copies; use atom.copy")
        if self.packed_f32x2 is not None and sm(kernel_of(self).arch) < 100:
            raise _err(self, "packed f32x2 arithmetic needs sm_100")
        self.verify_datapath(kind)


@irdl_op_definition
class FenceOp(snac.FenceOpBase):
    """Orders this block's earlier writes before the stores that follow."""

    name = "atom.fence"
    scope = prop_def(snac.ScopeAttr)
    assembly_format = "$scope attr-dict"

    def __init__(self, scope: snac.Scope = snac.Scope.SYSTEM):
        super().__init__(properties={"scope": snac.ScopeAttr(scope)})


# The signal ops: snac's protocol steps, lowered as they are.
@irdl_op_definition
class NotifyOp(snac.NotifyOpBase):
    name = "atom.notify"


@irdl_op_definition
class AckOp(snac.AckOpBase):
    name = "atom.ack"


@irdl_op_definition
class FinishOp(snac.FinishOpBase):
    name = "atom.finish"


@irdl_op_definition
class WaitReadyOp(snac.WaitOpBase):
    """Poll the ready slots of a group's sources (relaxed), then acquire."""

    name = "atom.wait_ready"


@irdl_op_definition
class WaitPacketsOp(snac.WaitOpBase):
    """Poll a group's packets until their flags reach the epoch."""

    name = "atom.wait_packets"


@irdl_op_definition
class WaitFreeOp(snac.ReclaimOpBase):
    """Poll the free slots before reusing a staging slot or window half, or writing a destination's output."""

    name = "atom.wait_free"


@irdl_op_definition
class GrantOp(snac.GrantOpBase):
    """Store the grant into the free slots of the ranks that push to this one."""

    name = "atom.grant"


@irdl_op_definition
class DrainOp(snac.DrainOpBase):
    """Poll the free slots of the ranks that read this one's units (relaxed), then acquire."""

    name = "atom.drain"


ATOM_OPS: tuple[type[Operation], ...] = (
    KernelOp,
    BlocksOp,
    StageOp,
    PutOp,
    PushOp,
    CopyOp,
    ReduceOp,
    FenceOp,
    NotifyOp,
    AckOp,
    FinishOp,
    WaitReadyOp,
    WaitPacketsOp,
    WaitFreeOp,
    GrantOp,
    DrainOp,
)

Atom = Dialect("atom", list(ATOM_OPS), [TargetAttr, MechanismAttr])
