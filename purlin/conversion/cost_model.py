"""Strategy selection for `convert-coll-to-snac`.

All thresholds live in THRESHOLDS, keyed by GPU generation; they are the
knobs to tune from measurements (bench/ regenerates them).
"""

from __future__ import annotations

from dataclasses import dataclass

from purlin.snac.protocol import PACKET_DATA_BYTES
from purlin.snac.vocabulary import Regime, Strategy


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
    # Blocks per role, for packets (at most; one per latency_block_bytes of
    # payload, since every block pays the role's signal) and for staging.
    latency_blocks: int
    throughput_blocks: int
    latency_block_bytes: int
    # Copies (no reduction) of at least this many bytes per rank use units of
    # copy_chunk_bytes: fewer per-unit signals, still enough units to pipeline.
    copy_large_bytes: int
    copy_chunk_bytes: int
    # Multiprocessors of the generation's data-centre part (A100, H100/H200
    # SXM, B200): what ranks sharing one GPU divide, unless told the GPU's own.
    sms: int
    # Copies in place where each slice has one receiver (all_to_all and its V
    # form) of at least this many bytes per rank, every slice on
    # COPY_ENGINE_ALIGN_BYTES, go by the copy engine when ranks share a GPU
    # (0: never; the engine cannot fan one read out).
    copy_engine_min_bytes: int
    # A latency kernel with its ranks' tables compiled in (purlin.torch
    # specialises one called often) is faster up to this many ranks (0: never).
    specialise_max_world: int
    # Every rank on one GPU: packets (with every block the ranks' share of the
    # GPU allows) beyond latency_max_bytes while a rank writes at most this
    # many packet bytes (0: never); all_gather (its one read pushed to every
    # peer, the cheapest throughput kernel) at most the second,
    # reduce_scatter (whose throughput kernel pulls) the third; symmetric
    # reductions direct while all the ranks' inputs take at most the fourth.
    packets_shared_max_bytes: int
    packets_shared_gather_max_bytes: int
    packets_shared_scatter_max_bytes: int
    direct_shared_max_bytes: int
    # Every rank on one GPU: a symmetric throughput kernel whose rank moves at
    # most this many bytes (the larger of its input and output; a copy, a
    # reduction whose output is its input's size, then one that scatters)
    # gets one block an SM of the ranks' share, not SHARED_BLOCKS_PER_SM: its
    # waits take more of its time than its data, and fewer blocks wait less
    # (0: never).
    sparse_shared_copy_max_bytes: int
    sparse_shared_reduce_max_bytes: int
    sparse_shared_scatter_max_bytes: int


# sm_90 from the 2xH200 sweep in bench/results/2xh200-run2 (purlin-bench, all_reduce):
# packets win up to 64 KiB; composed beats direct from about 4 MiB; 4 MiB units
# with 64 blocks per role ran 32 MiB six times faster than 256 KiB with 16.
# Copies: all_gather of 256 MiB ran at 236 GB/s busbw with 16 MiB units, 194
# with 4 MiB (bench/results/README.md); all_reduce was slower with 16 MiB.
# Packets: one block per role at 16 B took 16.1 us against 16.8 with 16.
# Copy engine (bench/results/1xh100-copy-engine, ranks on one H100, worlds 2,
# 4, 8): all_to_all 0.96-0.99 of the SM copy at 128 MiB, 0.95-0.96 at 256,
# even at 64 and 1.06-1.09 at 32; all_gather 1.2-1.8x at every size. Slices
# off 16 bytes (256 MiB at worlds 3, 5, 6, 7: 4- or 2-byte aligned) took
# 1.2x at world 3 and 2.4x at worlds 5-7 (1xh100-odd-worlds).
# Tables compiled in (1xh100-rank-tables, 1xh200-session-12-06): 5-22 % faster
# at worlds 2-4 (16 B - 64 KiB), 2-22 % at 5-7 but for all_to_all (to 9 %
# slower at 7), up to 36 % slower at 8 (one body per rank); kept at 4 until
# the defect found at 5-7 (purlin.runtime.backend) is explained.
# Every rank on one H100 (1xh100-session-12-06d, 128 KiB-4 MiB, worlds 2-8),
# against the symmetric throughput lowering: packets with the ranks' share
# of the blocks took 0.34-0.87x as long where a rank writes up to 768 KiB
# of packets (reduce_scatter, all_to_all, all_reduce and their V forms),
# all_to_all 0.95-1.39x from 1 MiB; reduce_scatter 0.50-0.89x up to 1.5 MiB
# (0.55x at world 3 with 1.33 MiB; 1.57x at world 8 with 1.75); all_gather
# 0.73-0.87x up to 683 KiB, 1.12x at 768;
# the direct all_reduce (each rank reduces every input, read from L2 while
# they all fit there) 0.62-0.97x while the inputs together take up to 12 MiB,
# 1.03x at 14, 1.10-1.21x from 16.
# One block an SM (1xh100-session-12-06f, worlds 2-8, 512 KiB-4 MiB, against
# two): 0.70-0.97x as long up to 2 MiB a rank (all_reduce at world 8 and
# 1 MiB 1.08x); at 4 MiB reductions 0.81-0.94x, copies at worlds 5-8
# 0.95-1.15x. Beyond 4 MiB (1xh100-session-12-06g, worlds 2-8, 8 and
# 16 MiB; at two blocks an SM ptxas caps a reduction kernel at 64 registers
# and it spills): all_reduce 0.86-0.96x at worlds 3-8 (world 2 unchanged);
# reduce_scatter 0.76-0.98x at worlds 3, 4, 8 but 1.05-1.23x at 5-7, so it
# keeps 4 MiB; at 64 MiB reduce_scatter 0.95x / 1.02x at worlds 4 / 8. Again
# at 16 MiB on the code of 1xh100-session-12-07i: world 4 even, world 8 1.04x.
# Packet kernels at two blocks an SM polling 2 sources at a time, not 8
# (1xh100-session-12-07b, worlds 2-8, 128 KiB-2 MiB, against the bounds
# before, 768 / 704 / 1536 KiB): all_to_all 0.47-0.84x where a rank writes
# 0.8-1.71 MiB of packets, even at 1.75 MiB (world 8, 1 MiB: 1.00-1.10x,
# noisy), 1.37-1.47x from 2.5 MiB; reduce_scatter 0.62-0.72x at 1.6-1.71
# MiB; all_gather 0.61-0.89x to 1.31 MiB, even at 1.5, 1.11x at 1.75;
# all_reduce 0.71-0.91x to 1.5 MiB, 1.14x at 2 MiB (world 5).
# sm_80 and sm_100 are not measured yet: scaled from sm_90, no copy engine.
THRESHOLDS: dict[str, Thresholds] = {
    "sm_80": Thresholds(32 << 10, 1 << 20, 2 << 20, 4, 16, 48, 4 << 10, 64 << 20, 8 << 20, 108, 0, 4,
                        1760 << 10, 1536 << 10, 1760 << 10, 10 << 20, 2 << 20, 16 << 20, 4 << 20),
    "sm_90": Thresholds(64 << 10, 1 << 20, 4 << 20, 4, 16, 64, 4 << 10, 64 << 20, 16 << 20, 132, 128 << 20, 4,
                        1760 << 10, 1536 << 10, 1760 << 10, 12 << 20, 2 << 20, 16 << 20, 4 << 20),
    "sm_100": Thresholds(64 << 10, 1 << 20, 4 << 20, 4, 16, 64, 4 << 10, 64 << 20, 16 << 20, 148, 0, 4,
                         1760 << 10, 1536 << 10, 1760 << 10, 12 << 20, 2 << 20, 16 << 20, 4 << 20),
}

# The copy engine's slices start and end on this many bytes (see above).
COPY_ENGINE_ALIGN_BYTES = 16

# Blocks per multiprocessor planned for when ranks share a GPU: two blocks of
# 512 threads leave each thread 64 registers (the datapath's unrolled loops
# spill below that), and all grids of the ranks must be resident at once.
SHARED_BLOCKS_PER_SM = 2

# Latency packets carry 8 data bytes in 16: beyond this many ranks the
# fan-out of pushed packets costs more than staging even for small sizes.
LATENCY_MAX_WORLD = 16


def packet_bytes(world: int, per_rank_bytes: int, out_per_rank_bytes: int | None, reduce: bool) -> int:
    """What a rank writes as packets (8 data bytes in 16) in a call of the
    latency regime: a reduction whose output is its whole input (all_reduce)
    sends all of it to every peer, the others each peer its share."""
    out = per_rank_bytes if out_per_rank_bytes is None else out_per_rank_bytes
    sent = per_rank_bytes * (world - 1) if reduce and out == per_rank_bytes else max(per_rank_bytes, out) * (world - 1) // world
    return 2 * sent


def packet_blocks(arch: str, blocks: int, pieces: int) -> int:
    """Blocks of a packet role, `blocks` as chosen by its payload's bytes (one
    per latency_block_bytes), raised so that its threads take `pieces` (the
    packets a rank puts, or polls) in one round: the bytes leave out the
    partial packet that ends each slice, and one piece beyond the threads is
    another round trip for a few of them (all_gather of 65530 B at world 5:
    8195 pieces for 16 blocks of 512 threads, 1.38x the floor where world 4's
    8192 took 0.94x, bench/results/1xh100-session-12-07c). Blocks beyond the
    ranks' share of a GPU are cut where the roles are laid out."""
    per_block = THRESHOLDS[arch].latency_block_bytes // PACKET_DATA_BYTES
    return max(blocks, -(-pieces // per_block))


@dataclass(frozen=True)
class Choice:
    regime: Regime
    strategy: Strategy
    chunk_bytes: int  # 0: one unit per slice
    slots: int
    latency_blocks: int
    throughput_blocks: int
    # Blocks one rank's grid may have in all, when ranks share a GPU (None: no bound).
    block_budget: int | None = None
    # The copies go by the copy engine (one stream role).
    copy_engine: bool = False

    def blocks(self, regime: Regime) -> int:
        return self.latency_blocks if regime == Regime.LATENCY else self.throughput_blocks


def resident_budget(arch: str, ranks_per_device: int, sms: int = 0) -> int | None:
    """The most blocks each of `ranks_per_device` ranks sharing a GPU may
    launch for all their grids to be resident at once, at as many blocks an SM
    as its threads allow (a grid asked for explicitly); None for a GPU of its own."""
    # Here, not at the top: purlin.torch reads the thresholds without loading xDSL.
    from purlin.atom.generations import GENERATIONS, MAX_THREADS_PER_SM

    return block_budget(arch, ranks_per_device, sms, MAX_THREADS_PER_SM // GENERATIONS[arch].threads)


def block_budget(arch: str, ranks_per_device: int, sms: int = 0, per_sm: int = SHARED_BLOCKS_PER_SM) -> int | None:
    """The blocks each of `ranks_per_device` ranks sharing a GPU of `sms`
    multiprocessors (0: the generation's) may launch so that all their grids
    are resident together, `per_sm` blocks to an SM; None for a GPU of its own."""
    if ranks_per_device <= 1:
        return None
    return max(1, (sms or THRESHOLDS[arch].sms) * per_sm // ranks_per_device)


def choose(arch: str, world: int, per_rank_bytes: int | None, total_bytes: int | None,
           reduce: bool, device_counts: bool, out_per_rank_bytes: int | None = None, *,
           symmetric: bool = False, ranks_per_device: int = 1, sms: int = 0,
           regime: Regime | None = None, single_receivers: bool = False, aligned: bool = False,
           in_place: bool = False) -> Choice:
    """`per_rank_bytes` and `out_per_rank_bytes`: the largest rank's input and
    output; packet blocks follow the larger (an all_gather receives world
    times what it sends). `total_bytes`: every name's bytes together (for
    counts given at each call, the most the buffers take). `device_counts`:
    the counts are read on the device, whose prologue builds direct phases
    only (include/purlin/counts.cuh). `symmetric`: the ranks' buffers are
    addressable by their peers, so throughput phases move whole slices in
    place (a reduction composed, each name reduced once and pushed to its
    other destinations: the least traffic; direct where every rank shares
    one GPU and the inputs fit its L2 together). `ranks_per_device` ranks
    share a GPU of `sms` multiprocessors: see block_budget; all the world on
    one, packets reach further (packets_shared_max_bytes). `regime`: forced,
    else chosen here.
    `single_receivers`: every slice of the output has one receiving rank;
    `aligned`: every slice on COPY_ENGINE_ALIGN_BYTES; `in_place`: the input
    is the output (a direct reduction would overwrite what peers still read)."""
    t = THRESHOLDS[arch]
    one_gpu = world > 1 and ranks_per_device >= world
    out = per_rank_bytes if out_per_rank_bytes is None else out_per_rank_bytes
    packets_bound = (
        t.packets_shared_gather_max_bytes if not reduce and per_rank_bytes is not None and out > per_rank_bytes
        else t.packets_shared_scatter_max_bytes if reduce and per_rank_bytes is not None and out < per_rank_bytes
        else t.packets_shared_max_bytes
    )
    shared_packets = (
        one_gpu and per_rank_bytes is not None
        and packet_bytes(world, per_rank_bytes, out_per_rank_bytes, reduce) <= packets_bound
    )
    latency = (
        per_rank_bytes is not None
        and (per_rank_bytes <= t.latency_max_bytes or shared_packets)
        and world <= LATENCY_MAX_WORLD
    ) if regime is None else regime == Regime.LATENCY
    in_place_direct = symmetric and not latency
    # Every input read by every rank: from L2 while they fit there together.
    direct_shared = one_gpu and total_bytes is not None and world * total_bytes <= t.direct_shared_max_bytes
    if not reduce:
        strategy = Strategy.COPY
    elif device_counts or latency or (not in_place_direct and (total_bytes is None or total_bytes < t.composed_min_bytes)):
        strategy = Strategy.DIRECT
    elif in_place_direct and direct_shared and not in_place:
        strategy = Strategy.DIRECT
    else:
        strategy = Strategy.COMPOSED
    large_copy = not reduce and per_rank_bytes is not None and per_rank_bytes >= t.copy_large_bytes
    chunk = 0 if in_place_direct else t.copy_chunk_bytes if large_copy else t.chunk_bytes
    latency_blocks = t.latency_blocks
    moved = None if per_rank_bytes is None else max(per_rank_bytes, out_per_rank_bytes or 0)
    if moved is not None:
        latency_blocks = max(1, min(latency_blocks, -(-moved // t.latency_block_bytes)))
    scatters = reduce and per_rank_bytes is not None and out < per_rank_bytes
    sparse = one_gpu and in_place_direct and moved is not None and moved <= (
        t.sparse_shared_scatter_max_bytes if scatters
        else t.sparse_shared_reduce_max_bytes if reduce else t.sparse_shared_copy_max_bytes)
    budget = block_budget(arch, ranks_per_device, sms, 1 if sparse else SHARED_BLOCKS_PER_SM)
    if budget is not None:
        beyond = latency and per_rank_bytes is not None and per_rank_bytes > t.latency_max_bytes
        latency_blocks = budget if beyond else min(latency_blocks, budget)
    copy_engine = (
        in_place_direct and not reduce and single_receivers and aligned and ranks_per_device > 1
        and t.copy_engine_min_bytes > 0 and per_rank_bytes is not None
        and per_rank_bytes >= t.copy_engine_min_bytes
    )
    return Choice(Regime.LATENCY if latency else Regime.THROUGHPUT, strategy, chunk, t.slots, latency_blocks,
                  t.throughput_blocks, budget, copy_engine)
