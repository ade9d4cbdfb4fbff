"""The atom dialect's enums, apart from its IR so that the plan format and the
runtimes read them without importing xDSL."""

from enum import StrEnum


class Target(StrEnum):
    SM_70 = "sm_70"
    SM_80 = "sm_80"
    SM_90 = "sm_90"
    SM_100 = "sm_100"


class Mechanism(StrEnum):
    VECTOR = "vector"  # vector loads/stores through registers
    CP_ASYNC = "cp_async"  # cp.async global->shared pipeline (sm_80+)
    BULK = "bulk"  # cp.async.bulk / TMA through shared memory (sm_90+)
    MULTIMEM = "multimem"  # multimem.ld_reduce / multimem.st on multicast memory (sm_90+)
    COPY_ENGINE = "copy_engine"  # DMA engine (cudaMemcpyAsync between peers)
    PACKET = "packet"  # 16-byte stores of 8 data bytes and an 8-byte flag
