"""Strategy selection for `convert-coll-to-snac`.

All thresholds live in THRESHOLDS, keyed by GPU generation; they are the
knobs to tune from measurements (bench/ regenerates them).
"""

from __future__ import annotations

from dataclasses import dataclass

from purlin.dialects.snac import Regime, Strategy


@dataclass(frozen=True)
class Thresholds:
    # Largest per-rank payload (bytes) sent as 16-byte packets.
    latency_max_bytes: int
    # Smallest total payload (bytes) for which a reduction is composed
    # (reduce to owner, then copy out) rather than direct (every rank reduces all).
    composed_min_bytes: int
    # Staging: bytes per unit and slots per half.
    chunk_bytes: int
    slots: int
    # Blocks per role.
    blocks: int


THRESHOLDS: dict[str, Thresholds] = {
    "sm_80": Thresholds(32 << 10, 512 << 10, 128 << 10, 4, 16),
    "sm_90": Thresholds(64 << 10, 1 << 20, 256 << 10, 4, 16),
    "sm_100": Thresholds(64 << 10, 1 << 20, 256 << 10, 4, 24),
}

# Latency packets carry 8 data bytes in 16: beyond this many ranks the
# fan-out of pushed packets costs more than staging even for small sizes.
LATENCY_MAX_WORLD = 16


@dataclass(frozen=True)
class Choice:
    regime: Regime
    strategy: Strategy
    chunk_bytes: int
    slots: int
    blocks: int


def choose(arch: str, world: int, per_rank_bytes: int | None, total_bytes: int | None,
           reduce: bool, dynamic: bool) -> Choice:
    t = THRESHOLDS[arch]
    latency = (
        per_rank_bytes is not None
        and per_rank_bytes <= t.latency_max_bytes
        and world <= LATENCY_MAX_WORLD
    )
    if not reduce:
        strategy = Strategy.COPY
    elif dynamic or latency or total_bytes is None or total_bytes < t.composed_min_bytes:
        strategy = Strategy.DIRECT
    else:
        strategy = Strategy.COMPOSED
    regime = Regime.LATENCY if latency else Regime.THROUGHPUT
    return Choice(regime, strategy, t.chunk_bytes, t.slots, t.blocks)
