"""sm_80 (A100): cp.async stages global memory through shared memory.

Only the producer's staging copy is pipelined. Consumers read peers' memory
through registers: with both sides pipelined, an all_reduce of 1 MiB on 2
H200s lost chunks of its last group (tests/python/runtime/test_runtime_cuda.py found
it; either side pipelined alone was exact), so the consumer pipeline stays
compiled in purlin/cuda/include/purlin/atoms/sm80.cuh but is not selected until that is
understood."""

from dataclasses import dataclass

from purlin.atom.dialect import Mechanism, Target
from purlin.atom.generations.base import Datapath, Generation

# Pipeline depth of the cp.async ring per block, and bytes per stage.
CP_ASYNC_STAGES = 4
CP_ASYNC_STAGE_BYTES = 8192


@dataclass(frozen=True)
class SM80(Generation):
    target: Target = Target.SM_80

    def stage(self, unit_bytes: int) -> Datapath:
        return Datapath(Mechanism.CP_ASYNC, self.width)

    def smem_bytes(self, world: int) -> int:
        return CP_ASYNC_STAGES * CP_ASYNC_STAGE_BYTES
