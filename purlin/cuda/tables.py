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
from purlin.coll.attributes import element_bytes
from purlin.coll.layouts import LayoutKind
from purlin.cuda import abi
from purlin.snac import dialect as snac
from purlin.snac.phase_binding import PhaseState
from purlin.snac.protocol import PACKET_BYTES, PACKET_DATA_BYTES

ALIGN = 256


class TableError(Exception):
    """The kernel's phases cannot be laid out for the runtime."""


# Words of shared memory a device-counts kernel may build its tables in.
MAX_COUNTS_TABLE_WORDS = 12288
# The device library indexes table words with 32-bit ints (Kernel::t).
MAX_TABLE_WORDS = (1 << 31) - 1
# It counts a packet phase's (unit or group, packet) pieces with 32-bit ints
# (packets.cuh's spread), a thread's index plus the grid's stride included.
MAX_PACKET_PIECES = 1 << 30


@dataclass(frozen=True)
class Tables:
    ranks: tuple[np.ndarray, ...]  # int64 words per rank; symmetric bases left 0 for the host
    symmetric_bytes: int
    counter_stride: int  # arrival counters per signal site
    capacity: int = 0  # device counts: the words each block's tables may grow to
    scratch: int = 0  # device counts: words of the phases' prefix sums after them

    @property
    def words(self) -> int:
        """Words of each block's copy of the tables (and scratch)."""
        return max([self.capacity, *(len(t) for t in self.ranks)]) + self.scratch


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def counted_ready(kernel: atom.KernelOp) -> dict[str, int]:
    """The phases whose ready signals count (phase: the blocks of the role that
    notifies them): one role of several blocks notifies the phase, and no
    other phase shares its ready signals. There each block adds one to slot
    [rank x max units + unit] of every consumer (no arrival counter before
    the signal: include/purlin/staged.cuh, notify), and a consumer waits for
    blocks x calls so far. A kernel whose counts it reads on the device is
    never generated so (its units vary from call to call)."""
    notifiers: dict[str, set[int]] = {}
    for role in kernel.body.block.ops:
        if isinstance(role, atom.BlocksOp):
            blocks = 1 if role.kind.data == snac.RoleKind.STREAM else role.blocks.value.data
            for op in role.body.walk():
                if isinstance(op, atom.NotifyOp):
                    notifiers.setdefault(op.phase.string_value(), set()).add(blocks)
    phases = [op for op in kernel.body.block.ops if isinstance(op, snac.PhaseOp)]
    ready = [op.ready.string_value() for op in phases]
    counted = {}
    for op, name in zip(phases, ready):
        roles = notifiers.get(op.sym_name.data, set())
        if len(roles) == 1 and (blocks := next(iter(roles))) > 1 and ready.count(name) == 1:
            counted[op.sym_name.data] = blocks
    return counted


def _symmetric_layout(kernel: atom.KernelOp, eb: int, per_rank: dict[str, int] | None = None
                      ) -> tuple[int, dict[str, int], dict[str, tuple[int, int]]]:
    """Where each buffer and signal array sits in the symmetric allocation:
    (bytes after them, offsets, buffer: (half bytes, slot or region bytes)).
    `per_rank`: signal arrays of more than one slot per rank (counted ready
    signals: the phase's most units)."""
    world = kernel.world_size
    per_rank = per_rank or {}
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
            at = _align(at + 8 * op.slots.value.data * per_rank.get(op.sym_name.data, 1))
    return at, offsets, sizes


def _counted_slots(kernel: atom.KernelOp, phases: dict[str, PhaseState]) -> dict[str, int]:
    """Slots per rank of the counted ready signals (counted_ready): the phase's most units."""
    counted = counted_ready(kernel)
    return {op.ready.string_value(): max(1, phases[op.sym_name.data].plan.max_units)
            for op in kernel.body.block.ops if isinstance(op, snac.PhaseOp) and op.sym_name.data in counted}


def _elem_bytes(kernel: atom.KernelOp) -> int:
    assert isinstance(kernel.input.type, MemRefType)
    return element_bytes(kernel.input.type.element_type)


def build_tables(kernel: atom.KernelOp, phases: dict[str, PhaseState], counted: bool = True) -> Tables:
    """The tables of `kernel` for every rank, from its bound phase plans.
    `counted`: laid out for counted ready signals (counted_ready), as a kernel
    generated for these counts has them; False: as one that reads its counts
    on the device lays them out."""
    world = kernel.world_size
    eb = _elem_bytes(kernel)
    at, offsets, sizes = _symmetric_layout(kernel, eb, _counted_slots(kernel, phases) if counted else None)
    symmetric = max(at, ALIGN)
    ordered = [phases[op.sym_name.data] for op in kernel.body.block.ops if isinstance(op, snac.PhaseOp)]
    _check_forwarding(ordered, range(world))
    stride = _counter_stride(ordered)
    ranks = tuple(_rank_tables(r, world, eb, ordered, offsets, sizes, stride) for r in range(world))
    return Tables(ranks, symmetric, stride)


def build_rank_tables(kernel: atom.KernelOp, phases: dict[str, PhaseState], rank: int) -> Tables:
    """The tables of rank `rank` alone (`ranks` holds only its): what one
    process running that rank launches with."""
    world = kernel.world_size
    eb = _elem_bytes(kernel)
    at, offsets, sizes = _symmetric_layout(kernel, eb, _counted_slots(kernel, phases))
    ordered = [phases[op.sym_name.data] for op in kernel.body.block.ops if isinstance(op, snac.PhaseOp)]
    _check_forwarding(ordered, (rank,))
    stride = _counter_stride(ordered)
    return Tables((_rank_tables(rank, world, eb, ordered, offsets, sizes, stride),), max(at, ALIGN), stride)


def _counter_stride(phases: list[PhaseState]) -> int:
    """Arrival counters per signal site: the most units or groups of any rank
    in any phase, the same on every rank."""
    return max([1] + [max(ph.plan.max_units, ph.plan.max_groups) for ph in phases])


def _check_forwarding(phases: list[PhaseState], ranks) -> None:
    """A composed reduction forwards its owner's reduced group g as unit g of
    the next phase (the kernels read, and may push, that range of the
    output): the two must be the same range on every rank (of `ranks`)."""
    for reduce, forward in zip(phases, phases[1:]):
        if forward.op.route is None or forward.op.route.data != snac.Route.FROM_OWNER:
            continue
        for r in ranks:
            units = forward.plan.units[r]
            for g in reduce.plan.groups[r]:
                u = units[g.index] if g.index < len(units) else None
                if u is None or (u.src_offset, u.size) != (g.dst_offset, g.size):
                    raise TableError(
                        f"phase '{forward.name}': rank {r}'s unit {g.index} is not the range its group "
                        f"{g.index} of phase '{reduce.name}' reduced ([{g.dst_offset}, {g.dst_offset + g.size}))"
                    )


def _packets(nbytes: int) -> int:
    """Packets of a unit or group of `nbytes` (packets.cuh's packets_of: an empty one carries its flag)."""
    return max(1, -(-nbytes // PACKET_DATA_BYTES))


def _rank_tables(rank: int, world: int, eb: int, phases: list[PhaseState], offsets: dict[str, int],
                 sizes: dict[str, tuple[int, int]], stride: int) -> np.ndarray:
    words = [0] * (abi.GLOBAL_WORDS + world + abi.PHASE_WORDS * len(phases))
    words[abi.COUNTER_STRIDE] = stride
    words[abi.PHASE_COUNT] = len(phases)
    for k, ph in enumerate(phases):
        head = abi.GLOBAL_WORDS + world + k * abi.PHASE_WORDS
        packets = ph.moves == "packets"
        units, groups = ph.plan.units[rank], ph.plan.groups[rank]
        window = ph.window_offsets
        fields = {
            abi.PH_UNITS: len(units), abi.PH_GROUPS: len(groups),
            abi.PH_STAGED: ph.plan.staged_groups(rank), abi.PH_MAX_UNITS: ph.plan.max_units,
            **_static_fields(ph.op, ph.buffer, offsets, sizes),
        }
        for f, v in fields.items():
            words[head + f] = v
        words[head + abi.PH_UNITS_AT] = len(words)
        consumers_at = len(words) + abi.UNIT_WORDS * len(units)
        # Direct push: where each unit goes, (rank, byte offset in its output) pairs, after the consumers.
        dests = [ph.plan.destinations[rank][u.index] if ph.moves == "push" else () for u in units]
        dests_at = consumers_at + sum(len(u.consumers) for u in units)
        consumer_words: list[int] = []
        unit_words: list[int] = []
        dest_words: list[int] = []
        for u, where_to in zip(units, dests):
            unit_words += [u.src_offset * eb, u.size * eb, window[rank][u.index] * eb if packets else 0,
                           consumers_at + len(consumer_words), len(u.consumers),
                           dests_at + len(dest_words) if where_to else 0, len(where_to)]
            consumer_words += list(u.consumers)
            for d, off in where_to:
                dest_words += [d, off * eb]
        words += unit_words + consumer_words + dest_words
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
                    source_words += [s.rank, s.unit, window[s.rank][s.unit] * eb if packets
                                     else s.offset * eb if ph.direct else 0]
        words += group_words + source_words
        if packets:
            pieces = max(sum(_packets(u.size * eb) for u in units), sum(_packets(g.size * eb) for g in groups))
            if pieces > MAX_PACKET_PIECES:
                raise TableError(f"phase '{ph.op.sym_name.data}': rank {rank} moves {pieces} packets; the kernel "
                                 f"counts at most {MAX_PACKET_PIECES} a phase (32-bit indices): lower it with "
                                 "regime=throughput")
        if ph.direct:
            # The peers a direct phase signals: grants to its senders, drains from its receivers.
            for at_field, count_field, peers in ((abi.PH_SENDERS_AT, abi.PH_SENDERS, ph.plan.senders(rank)),
                                                 (abi.PH_RECEIVERS_AT, abi.PH_RECEIVERS, ph.plan.receivers(rank))):
                words[head + at_field], words[head + count_field] = len(words), len(peers)
                words += list(peers)
    if len(words) > MAX_TABLE_WORDS:
        raise TableError(f"rank {rank}'s tables take {len(words)} words; the kernel indexes at most "
                         f"{MAX_TABLE_WORDS} (32-bit indices)")
    return np.asarray(words, dtype=np.int64)


def _static_fields(phase: snac.PhaseOp, buffer: snac.BufferOp | None, offsets: dict[str, int],
                   sizes: dict[str, tuple[int, int]]) -> dict[int, int]:
    """A phase header's words that no count changes (a direct phase has no buffer)."""
    buf = None if buffer is None else buffer.sym_name.data
    half_bytes, slot_bytes = (0, 0) if buf is None else sizes[buf]
    return {
        abi.PH_BUFFER: 0 if buf is None else offsets[buf], abi.PH_HALF_BYTES: half_bytes,
        abi.PH_SLOT_BYTES: slot_bytes, abi.PH_SLOTS: 1 if buffer is None else buffer.slots.value.data,
        abi.PH_READY: offsets[phase.ready.string_value()],
        abi.PH_FREE: offsets[phase.free.string_value()],
        abi.PH_SOURCE: int(phase.source.data == snac.PhaseSource.OUTPUT), abi.PH_MULTICAST: 0,
    }


def build_counts_tables(kernel: atom.KernelOp, count_words: int) -> Tables:
    """The static part of a device-counts kernel's tables (global words and
    the phases' buffers and signals), the counts window after the buffers, and
    room for the units and groups the kernel builds (include/purlin/counts.cuh)
    for any counts that fit its buffers."""
    world = kernel.world_size
    eb = _elem_bytes(kernel)
    at, offsets, sizes = _symmetric_layout(kernel, eb)
    window = at
    at = _align(at + 2 * world * count_words * PACKET_BYTES)
    ops = kernel.body.block.ops
    buffers = {op.sym_name.data: op for op in ops if isinstance(op, snac.BufferOp)}
    phases = [op for op in ops if isinstance(op, snac.PhaseOp)]
    header = abi.GLOBAL_WORDS + world + abi.PHASE_WORDS * len(phases)
    elems = [_bound(kernel.input), _bound(kernel.output)]
    capacity, stride = header, 1
    for ph in phases:
        units = _records_bound(ph.src_layout.to_layout().kind, world, ph.chunk.value.data, max(elems))
        groups = _records_bound(ph.dst_layout.to_layout().kind, world, ph.chunk.value.data, elems[1])
        capacity += units * (abi.UNIT_WORDS + world) + groups * (abi.GROUP_WORDS + abi.SOURCE_WORDS * world)
        stride = max(stride, units, groups)
    if capacity > MAX_COUNTS_TABLE_WORDS:
        raise TableError(
            f"device counts: the tables of buffers of {elems[0]} and {elems[1]} elements may need {capacity} "
            f"words, more than the {MAX_COUNTS_TABLE_WORDS} a block holds in shared memory; lower with a "
            "larger chunk-bytes or smaller buffers"
        )
    words = [0] * header
    words[abi.COUNTER_STRIDE] = stride
    words[abi.PHASE_COUNT] = len(phases)
    words[abi.COUNTS_WINDOW] = window
    words[abi.TABLE_CAPACITY] = capacity
    for k, ph in enumerate(phases):
        head = abi.GLOBAL_WORDS + world + k * abi.PHASE_WORDS
        for f, v in _static_fields(ph, buffers[ph.buffer.string_value()], offsets, sizes).items():
            words[head + f] = v
    table = np.asarray(words, dtype=np.int64)
    scratch = len(phases) * abi.COUNTS_SCRATCH_ROWS * world * (world + 1)
    return Tables(tuple(table.copy() for _ in range(world)), max(at, ALIGN), stride, capacity, scratch)


def _bound(v) -> int:
    assert isinstance(v.type, MemRefType)
    n = v.type.get_shape()[0]
    if n < 0:
        raise TableError(f"device counts need static buffer sizes (the bound the counts must fit), got {v.type}")
    return n


def _records_bound(kind: LayoutKind, world: int, chunk: int, elems: int) -> int:
    """The most units (or groups) of a rank's slices of a V layout of `kind`
    that fit in `elems` elements: every slice may end in a partial chunk."""
    slices = 1 if kind == LayoutKind.PACKED else world
    return slices + (elems // chunk if chunk > 0 else 0)
