"""sm_90 (H100/H200): bulk copies for large units, multimem reductions when
multicast objects are bound, otherwise the sm_80 datapath."""

from dataclasses import dataclass

from purlin.atom.dialect import Mechanism, Target
from purlin.atom.generations.base import Datapath
from purlin.atom.generations.sm80 import SM80
from purlin.coll.attributes import ReduceKind

# Below this a bulk copy's setup (mbarrier, descriptor) costs more than it saves.
BULK_MIN_BYTES = 16384


@dataclass(frozen=True)
class SM90(SM80):
    target: Target = Target.SM_90

    def stage(self, unit_bytes: int) -> Datapath:
        if unit_bytes >= BULK_MIN_BYTES:
            return Datapath(Mechanism.BULK, self.width)
        return super().stage(unit_bytes)

    def reduce(self, kind: ReduceKind, dtype: str, multimem: bool) -> Datapath:
        if multimem and self.multimem_reduces(kind, dtype):
            # multimem.ld_reduce moves at most 16 bytes per access.
            return Datapath(Mechanism.MULTIMEM, 16)
        return super().reduce(kind, dtype, multimem)
