"""`convert-snac-to-atom{arch=sm_80|sm_90|sm_100 multimem=false}`.

Each snac.program becomes an atom.kernel for the generation: roles become
block ranges, and every protocol step becomes the atom that performs it with
the generation's mechanism (see purlin/atom/generations/). Orchestration
(phases, loops, flag values) is carried over unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, UnitAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from purlin.atom import dialect as atom
from purlin.atom.generations import GENERATIONS, Datapath, Generation
from purlin.coll.dialect import dtype_name, element_bytes
from purlin.snac import dialect as snac
from purlin.snac.protocol import route_layouts


def _int(v: int) -> IntegerAttr:
    return IntegerAttr(v, 64)


class LowerProgram(RewritePattern):
    def __init__(self, gen: Generation, multimem: bool):
        self.gen = gen
        self.multimem = multimem

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: snac.ProgramOp, rewriter: PatternRewriter) -> None:
        gen = self.gen
        body = op.body.clone()
        assert isinstance(op.input.type, MemRefType)
        elem = op.input.type.element_type
        dtype = dtype_name(elem)
        assert dtype is not None
        props = dict(op.properties)
        props.update(
            target=atom.TargetAttr(gen.target),
            threads=_int(gen.threads),
            smem=_int(gen.smem_bytes(op.world_size)),
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
                self._swap(inner, atom.BlocksOp, {"first": _int(first)})
                first += blocks
                continue
            phase = phases.get(getattr(inner, "phase", None) and inner.phase.string_value())
            if phase is None:
                continue
            buf = buffers[phase.buffer.string_value()]
            unit_bytes = buf.elems.value.data * element_bytes(elem)
            if isinstance(inner, snac.ReclaimOp):
                self._swap(inner, atom.WaitFreeOp)
            elif isinstance(inner, snac.StageOp):
                self._swap(inner, atom.StageOp, self._path(gen.stage(unit_bytes)))
            elif isinstance(inner, snac.PutOp):
                self._swap(inner, atom.PutOp, self._path(gen.put()))
            elif isinstance(inner, snac.NotifyOp):
                Rewriter.insert_op(atom.FenceOp(inner.scope.data), _before(inner))
                self._swap(inner, atom.NotifyOp)
            elif isinstance(inner, snac.WaitOp):
                packets = buf.kind.data == snac.BufferKind.PACKETS
                self._swap(inner, atom.WaitPacketsOp if packets else atom.WaitReadyOp)
            elif isinstance(inner, snac.ConsumeOp):
                kind = phase.consume.kind
                if kind is None:
                    self._swap(inner, atom.CopyOp, self._path(gen.copy()))
                else:
                    # multimem.ld_reduce reads one symmetric address on every rank:
                    # only staged phases, with the local contribution staged too.
                    # The switch reduces in an order of its own: only where one rank
                    # reduces each slice (others get its bits), never deterministic.
                    staged = buf.kind.data == snac.BufferKind.STAGING
                    switch = staged and phase.deterministic is None and _one_reducer(phase)
                    path = gen.reduce(kind, dtype, self.multimem and switch)
                    if path.mech == atom.Mechanism.MULTIMEM:
                        phase.properties["stage_local"] = UnitAttr()
                    self._swap(inner, atom.ReduceOp, self._path(path))
            elif isinstance(inner, snac.AckOp):
                self._swap(inner, atom.AckOp)
            elif isinstance(inner, snac.FinishOp):
                Rewriter.insert_op(atom.FenceOp(inner.scope.data), _before(inner))
                self._swap(inner, atom.FinishOp)
        rewriter.replace(op, kernel)

    @staticmethod
    def _path(p: Datapath) -> dict:
        props = {"mech": atom.MechanismAttr(p.mech), "width": _int(p.width)}
        if p.packed_f32x2:
            props["packed_f32x2"] = UnitAttr()
        return props

    @staticmethod
    def _swap(old: Operation, cls: type[Operation], extra: dict | None = None) -> None:
        new = cls.create(
            operands=list(old.operands),
            result_types=[r.type for r in old.results],
            properties={**old.properties, **(extra or {})},
            attributes=dict(old.attributes),
            regions=[old.detach_region(r) for r in list(old.regions)],
        )
        new.location = old.location
        Rewriter.replace_op(old, new)


def _one_reducer(phase: snac.PhaseOp) -> bool:
    """Whether each name the phase reduces has one destination slice."""
    route = None if phase.route is None else phase.route.data.value
    _, dst = route_layouts(phase.src_layout.to_layout(), phase.dst_layout.to_layout(), route)
    return not dst.is_dynamic and all(len(dst.slices_named(n)) == 1 for n in dst.name_sizes)


def _before(op: Operation):
    from xdsl.rewriter import InsertPoint

    return InsertPoint.before(op)


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
