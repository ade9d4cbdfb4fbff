"""The snac dialect's enums and limits, apart from its IR so that the plan
format and the runtimes read them without importing xDSL."""

from __future__ import annotations

from enum import StrEnum

from purlin.snac.protocol import PACKET_BYTES, PACKET_DATA_BYTES


class MemoryOrder(StrEnum):
    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"


class Scope(StrEnum):
    GPU = "gpu"
    SYSTEM = "system"


class BufferKind(StrEnum):
    STAGING = "staging"
    PACKETS = "packets"


class Regime(StrEnum):
    LATENCY = "latency"
    THROUGHPUT = "throughput"


class Strategy(StrEnum):
    COPY = "copy"
    DIRECT = "direct"
    COMPOSED = "composed"


class PhaseSource(StrEnum):
    INPUT = "input"
    OUTPUT = "output"


class Route(StrEnum):
    """How a composed reduction routes a phase through one owner per name
    (purlin.snac.protocol.route_layouts): to the owners, or from them to the rest."""

    TO_OWNER = "to_owner"
    FROM_OWNER = "from_owner"


class Transfer(StrEnum):
    """How a phase without a buffer moves data between the ranks' own buffers."""

    PULL = "pull"  # consumers read their sources in the source ranks' buffers
    PUSH = "push"  # producers write their units into the destinations' outputs


class RoleKind(StrEnum):
    PRODUCER = "producer"
    CONSUMER = "consumer"
    REDUCER = "reducer"
    LOCAL = "local"  # groups with no staged source: nothing to wait for
    # Packets only: the same blocks put the rank's units and consume its
    # groups, each thread its own lines, with no role split between them.
    FUSED = "fused"
    # Copy-engine programs: the one role of the rank, its steps in order on
    # the rank's stream (pushes by the copy engine, signals by one block).
    STREAM = "stream"


# Limits checked before anything is expanded or allocated: staging slots per
# half, bytes of one buffer (both halves), blocks of one role (more than any
# GPU holds at once). csrc/include/purlin/plan.h checks plans against the same.
MAX_SLOTS = 1024
MAX_BUFFER_BYTES = 1 << 34
MAX_ROLE_BLOCKS = 4096


def buffer_bytes(kind: BufferKind, slots: int, elems: int, elem_bytes: int) -> int:
    """Bytes of a buffer's two halves: staging slots of elements, or a packet
    window's per-source regions of 16-byte packets of 8 data bytes."""
    if kind == BufferKind.STAGING:
        return 2 * slots * elems * elem_bytes
    return 2 * slots * -(-elems * elem_bytes // PACKET_DATA_BYTES) * PACKET_BYTES
