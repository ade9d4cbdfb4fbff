"""sm_80 (A100): cp.async stages global memory through shared memory."""

from dataclasses import dataclass

from purlin.dialects.atom import Mechanism, Target
from purlin.dialects.coll import ReduceKind
from purlin.lowering.generations import Datapath, Generation

# Pipeline depth of the cp.async ring per block, and bytes per stage.
CP_ASYNC_STAGES = 4
CP_ASYNC_STAGE_BYTES = 8192


@dataclass(frozen=True)
class SM80(Generation):
    target: Target = Target.SM_80

    def stage(self, unit_bytes: int) -> Datapath:
        return Datapath(Mechanism.CP_ASYNC, self.width)

    def copy(self) -> Datapath:
        return Datapath(Mechanism.CP_ASYNC, self.width)

    def reduce(self, kind: ReduceKind, dtype: str, multimem: bool) -> Datapath:
        # One pipeline stage per source: loads of peer n+1 overlap the math on peer n.
        return Datapath(Mechanism.CP_ASYNC, self.width)

    def smem_bytes(self, world: int) -> int:
        return CP_ASYNC_STAGES * CP_ASYNC_STAGE_BYTES
