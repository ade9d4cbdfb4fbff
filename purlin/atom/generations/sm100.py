"""sm_100 (B200): as sm_90 with 32-byte accesses and packed f32x2 math."""

from dataclasses import dataclass, replace

from purlin.atom.dialect import Mechanism, Target
from purlin.atom.generations.base import Datapath
from purlin.atom.generations.sm90 import SM90
from purlin.coll.attributes import ReduceKind


@dataclass(frozen=True)
class SM100(SM90):
    target: Target = Target.SM_100
    width: int = 32

    def reduce(self, kind: ReduceKind, dtype: str, multimem: bool) -> Datapath:
        path = super().reduce(kind, dtype, multimem)
        if path.mech == Mechanism.MULTIMEM:
            return path
        return replace(path, packed_f32x2=True)
