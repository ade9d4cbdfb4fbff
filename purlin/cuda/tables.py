"""Per-rank tables of a compiled collective: what varies from call shape to
call shape without changing the generated code (sizes, offsets, peers of
every unit and group), laid out as include/purlin/abi.h says.

The symmetric allocation is the same on every rank: each buffer (two halves)
and each signal array at an offset computed here once. Offsets and sizes in
the tables are bytes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import MemRefType

from purlin.atom import dialect as atom
from purlin.coll.dialect import element_bytes
from purlin.cuda import abi
from purlin.snac import dialect as snac
from purlin.snac.machine import PhaseState
from purlin.snac.protocol import PACKET_BYTES, PACKET_DATA_BYTES

ALIGN = 256


class TableError(Exception):
    """The kernel's phases cannot be laid out for the runtime."""


@dataclass(frozen=True)
class Tables:
    ranks: tuple[np.ndarray, ...]  # int64 words per rank; symmetric bases left 0 for the host
    symmetric_bytes: int
    counter_stride: int  # arrival counters per signal site

    @property
    def words(self) -> int:
        return max(len(t) for t in self.ranks)


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def build_tables(kernel: atom.KernelOp, phases: dict[str, PhaseState]) -> Tables:
    """The tables of `kernel` for every rank, from its bound phase plans."""
    world = kernel.world_size
    assert isinstance(kernel.input.type, MemRefType)
    eb = element_bytes(kernel.input.type.element_type)
    per_packet = PACKET_DATA_BYTES // eb
    at = 0
    offsets: dict[str, int] = {}
    sizes: dict[str, tuple[int, int]] = {}  # buffer: (half bytes, slot or region bytes)
    for op in kernel.body.block.ops:
        if isinstance(op, snac.BufferOp):
            elems, slots = op.elems.value.data, op.slots.value.data
            if op.kind.data == snac.BufferKind.STAGING:
                slot = elems * eb
                sizes[op.sym_name.data] = (slots * slot, slot)
            else:
                region = -(-elems // per_packet) * PACKET_BYTES
                sizes[op.sym_name.data] = (world * region, region)
            offsets[op.sym_name.data] = at
            at = _align(at + 2 * sizes[op.sym_name.data][0])
        elif isinstance(op, snac.SignalsOp):
            offsets[op.sym_name.data] = at
            at = _align(at + 8 * op.slots.value.data)
    symmetric = max(at, ALIGN)
    ordered = [phases[op.sym_name.data] for op in kernel.body.block.ops if isinstance(op, snac.PhaseOp)]
    stride = max([1] + [max(len(ph.plan.units[r]), len(ph.plan.groups[r]))
                        for ph in ordered for r in range(world)])
    ranks = tuple(_rank_tables(r, world, eb, ordered, offsets, sizes, stride) for r in range(world))
    return Tables(ranks, symmetric, stride)


def _rank_tables(rank: int, world: int, eb: int, phases: list[PhaseState], offsets: dict[str, int],
                 sizes: dict[str, tuple[int, int]], stride: int) -> np.ndarray:
    words = [0] * (abi.GLOBAL_WORDS + world + abi.PHASE_WORDS * len(phases))
    words[abi.COUNTER_STRIDE] = stride
    words[abi.PHASE_COUNT] = len(phases)
    for k, ph in enumerate(phases):
        head = abi.GLOBAL_WORDS + world + k * abi.PHASE_WORDS
        buf = ph.buffer.sym_name.data
        staged = ph.buffer.kind.data == snac.BufferKind.STAGING
        units, groups = ph.plan.units[rank], ph.plan.groups[rank]
        window = ph.window_offsets
        half_bytes, slot_bytes = sizes[buf]
        fields = {
            abi.PH_UNITS: len(units), abi.PH_GROUPS: len(groups),
            abi.PH_STAGED: ph.plan.staged_groups(rank), abi.PH_MAX_UNITS: ph.plan.max_units,
            abi.PH_BUFFER: offsets[buf], abi.PH_HALF_BYTES: half_bytes, abi.PH_SLOT_BYTES: slot_bytes,
            abi.PH_SLOTS: ph.buffer.slots.value.data, abi.PH_READY: offsets[ph.ready.lstrip("@")],
            abi.PH_FREE: offsets[ph.free.lstrip("@")],
            abi.PH_SOURCE: int(ph.op.source.data == snac.PhaseSource.OUTPUT), abi.PH_MULTICAST: 0,
        }
        for f, v in fields.items():
            words[head + f] = v
        words[head + abi.PH_UNITS_AT] = len(words)
        consumers_at = len(words) + abi.UNIT_WORDS * len(units)
        consumer_words: list[int] = []
        unit_words: list[int] = []
        for u in units:
            unit_words += [u.src_offset * eb, u.size * eb, window[rank][u.index] * eb if not staged else 0,
                           consumers_at + len(consumer_words), len(u.consumers)]
            consumer_words += list(u.consumers)
        words += unit_words + consumer_words
        words[head + abi.PH_GROUPS_AT] = len(words)
        sources_at = len(words) + abi.GROUP_WORDS * len(groups)
        group_words: list[int] = []
        source_words: list[int] = []
        for g in groups:
            if len(g.sources) > world:
                raise TableError(
                    f"phase '{ph.op.sym_name.data}': group {g.index} of rank {rank} has "
                    f"{len(g.sources)} sources, more than the world ({world})"
                )
            group_words += [g.dst_offset * eb, g.size * eb, sources_at + len(source_words), len(g.sources),
                            len(g.remote)]
            for s in g.sources:
                if s.unit is None:
                    source_words += [s.rank, -1, s.offset * eb]
                else:
                    source_words += [s.rank, s.unit, 0 if staged else window[s.rank][s.unit] * eb]
        words += group_words + source_words
    return np.asarray(words, dtype=np.int64)
