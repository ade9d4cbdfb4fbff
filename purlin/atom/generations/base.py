"""The baseline generation that every GPU generation refines (see
purlin/atom/generations/__init__.py)."""

from __future__ import annotations

from dataclasses import dataclass

from purlin.atom.dialect import MULTIMEM_REDUCE, Mechanism, Target
from purlin.coll.attributes import ReduceKind
from purlin.snac.protocol import PACKET_BYTES


# Threads an SM holds on sm_80, sm_90 and sm_100: __launch_bounds__ cannot ask
# for more, and grids of ranks sharing a GPU must be resident within it.
MAX_THREADS_PER_SM = 2048


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

    def copy_engine(self) -> Datapath:
        """A stream role's push: DMA between the buffers, no threads (the width
        is the generation's, for the CPU backend's copies)."""
        return Datapath(Mechanism.COPY_ENGINE, self.width)

    def put(self) -> Datapath:
        return Datapath(Mechanism.PACKET, PACKET_BYTES)

    def smem_bytes(self, world: int) -> int:
        return 0

    def multimem_reduces(self, kind: ReduceKind, dtype: str) -> bool:
        return kind in MULTIMEM_REDUCE.get(dtype, frozenset())
