"""GPU generations for `convert-snac-to-atom`.

A generation says which mechanism each datapath step uses. The orchestration
is the same for all of them; adding a generation is one file here with a
subclass of `Generation`, plus its entry in GENERATIONS.
"""

from __future__ import annotations

from dataclasses import dataclass

from purlin.dialects.atom import MULTIMEM_REDUCE, Mechanism, Target
from purlin.dialects.coll import ReduceKind


@dataclass(frozen=True)
class Datapath:
    mech: Mechanism
    width: int
    packed_f32x2: bool = False


@dataclass(frozen=True)
class Generation:
    """The baseline: 16-byte vector loads and stores through registers."""

    target: Target = Target.SM_70
    threads: int = 512
    width: int = 16

    def stage(self, unit_bytes: int) -> Datapath:
        return Datapath(Mechanism.VECTOR, self.width)

    def copy(self) -> Datapath:
        return Datapath(Mechanism.VECTOR, self.width)

    def reduce(self, kind: ReduceKind, dtype: str, multimem: bool) -> Datapath:
        return Datapath(Mechanism.VECTOR, self.width)

    def put(self) -> Datapath:
        return Datapath(Mechanism.PACKET, 16)

    def smem_bytes(self, world: int) -> int:
        return 0

    def multimem_reduces(self, kind: ReduceKind, dtype: str) -> bool:
        return kind in MULTIMEM_REDUCE.get(dtype, frozenset())


def _generations() -> dict[str, Generation]:
    from purlin.lowering.generations.sm80 import SM80
    from purlin.lowering.generations.sm90 import SM90
    from purlin.lowering.generations.sm100 import SM100

    return {"sm_80": SM80(), "sm_90": SM90(), "sm_100": SM100()}


GENERATIONS: dict[str, Generation] = _generations()
