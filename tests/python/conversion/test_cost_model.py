"""The cost model's choices at the thresholds measured on 2xH200 (sm_90)."""

import pytest

from purlin.coll.builder import COLLECTIVES
from purlin.conversion.cost_model import THRESHOLDS, block_budget, choose, resident_budget
from purlin.snac.dialect import Regime, Strategy

T = THRESHOLDS["sm_90"]


@pytest.mark.parametrize("per_rank, regime", [(16, Regime.LATENCY), (T.latency_max_bytes, Regime.LATENCY),
                                              (T.latency_max_bytes + 16, Regime.THROUGHPUT)])
def test_packets_up_to_latency_max_bytes(per_rank, regime):
    assert choose("sm_90", 2, per_rank, 2 * per_rank, reduce=True, device_counts=False).regime == regime


def test_reductions_compose_from_composed_min_bytes():
    below = choose("sm_90", 2, T.composed_min_bytes // 4, T.composed_min_bytes // 2, reduce=True, device_counts=False)
    above = choose("sm_90", 2, T.composed_min_bytes, 2 * T.composed_min_bytes, reduce=True, device_counts=False)
    assert (below.strategy, above.strategy) == (Strategy.DIRECT, Strategy.COMPOSED)


@pytest.mark.parametrize("reduce, per_rank, chunk", [
    (False, T.copy_large_bytes, T.copy_chunk_bytes),
    (False, T.copy_large_bytes - 1, T.chunk_bytes),
    (True, T.copy_large_bytes, T.chunk_bytes),  # large units made all_reduce slower
])
def test_large_copies_use_larger_units(reduce, per_rank, chunk):
    assert choose("sm_90", 2, per_rank, 2 * per_rank, reduce=reduce, device_counts=False).chunk_bytes == chunk


def test_counts_read_on_the_device_never_compose():
    c = choose("sm_90", 2, None, None, reduce=True, device_counts=True)
    assert (c.regime, c.strategy, c.chunk_bytes) == (Regime.THROUGHPUT, Strategy.DIRECT, T.chunk_bytes)
    big = choose("sm_90", 2, None, 2 * T.composed_min_bytes, reduce=True, device_counts=True, symmetric=True)
    assert big.strategy == Strategy.DIRECT


def test_counts_bound_on_the_host_compose_as_fixed_ones():
    """Costed at the most its buffers take (total_bytes): composed from composed_min_bytes, always where
    symmetric; no total known (unbounded buffers) is direct unless symmetric."""
    def strategy(total, symmetric=False):
        return choose("sm_90", 2, None, total, reduce=True, device_counts=False, symmetric=symmetric).strategy

    assert strategy(T.composed_min_bytes - 2) == Strategy.DIRECT
    assert strategy(T.composed_min_bytes) == Strategy.COMPOSED
    assert strategy(None) == Strategy.DIRECT
    assert strategy(None, symmetric=True) == strategy(16, symmetric=True) == Strategy.COMPOSED


@pytest.mark.parametrize("per_rank, blocks", [(16, 1), (T.latency_block_bytes, 1), (T.latency_block_bytes + 1, 2),
                                              (T.latency_max_bytes, T.latency_blocks)])
def test_packet_roles_get_a_block_per_latency_block_bytes(per_rank, blocks):
    c = choose("sm_90", 2, per_rank, 2 * per_rank, reduce=False, device_counts=False)
    assert (c.regime, c.latency_blocks) == (Regime.LATENCY, blocks)


def test_packet_blocks_follow_what_a_rank_receives():
    # all_gather on 8 ranks: 8 KiB sent, 64 KiB received per rank.
    t = THRESHOLDS["sm_90"]
    gather = choose("sm_90", 8, 8 << 10, 64 << 10, reduce=False, device_counts=False, out_per_rank_bytes=64 << 10)
    assert gather.regime == Regime.LATENCY
    assert gather.latency_blocks == t.latency_blocks == (64 << 10) // t.latency_block_bytes
    scatter = choose("sm_90", 8, 64 << 10, 64 << 10, reduce=True, device_counts=False, out_per_rank_bytes=8 << 10)
    assert scatter.latency_blocks == t.latency_blocks


@pytest.mark.parametrize("ranks, budget", [(1, None), (2, 132), (4, 66), (8, 33), (3, 88)])
def test_ranks_sharing_a_gpu_divide_its_blocks(ranks, budget):
    from purlin.conversion.cost_model import block_budget

    assert block_budget("sm_90", ranks) == budget
    assert block_budget("sm_90", ranks, sms=114) == (None if ranks == 1 else 2 * 114 // ranks)


def test_in_place_throughput_composes_whole_slices():
    # Symmetric buffers: every reduction with a shared slice is composed (the
    # least traffic), at any size, and units are whole slices.
    c = choose("sm_90", 4, 32 << 20, 128 << 20, reduce=True, device_counts=False, symmetric=True, ranks_per_device=4)
    assert (c.regime, c.strategy, c.chunk_bytes, c.block_budget) == (Regime.THROUGHPUT, Strategy.COMPOSED, 0, 66)
    small = choose("sm_90", 4, 16, 64, reduce=True, device_counts=False, symmetric=True)
    assert (small.regime, small.strategy) == (Regime.LATENCY, Strategy.DIRECT)
    forced = choose("sm_90", 4, 16, 64, reduce=True, device_counts=False, symmetric=True, regime=Regime.THROUGHPUT)
    assert (forced.regime, forced.strategy, forced.chunk_bytes) == (Regime.THROUGHPUT, Strategy.COMPOSED, 0)


@pytest.mark.parametrize("world, per_rank, out, reduce, ranks, per_sm", [
    (8, 128 << 10, 1 << 20, False, 8, 1),  # all_gather of 1 MiB (beyond its packets)
    (4, 512 << 10, 2 << 20, False, 4, 1),  # 2 MiB: the copies' bound
    (4, 1 << 20, 4 << 20, False, 4, 2),  # 4 MiB: copies at worlds 5-8 were slower with one
    (8, 4 << 20, 4 << 20, False, 8, 2),  # all_to_all of 4 MiB
    (8, 1 << 20, 1 << 20, True, 8, 1),  # all_reduce of 1 MiB
    (5, 8 << 20, 8 << 20, True, 5, 1),
    (5, 16 << 20, 16 << 20, True, 5, 1),  # 16 MiB: all_reduce's bound
    (3, 32 << 20, 32 << 20, True, 3, 2),
    (4, 4 << 20, 1 << 20, True, 4, 1),  # reduce_scatter of 4 MiB: its bound
    (6, 6 << 20, 1 << 20, True, 6, 2),  # reduce_scatter beyond: slower with one at worlds 5-7
    (4, 1 << 20, 1 << 20, True, 2, 2),  # two GPUs of two ranks: not measured
    (4, 256 << 10, 64 << 10, True, 4, None),  # packets: the latency budget
])
def test_small_throughput_calls_on_one_gpu_take_one_block_an_sm(world, per_rank, out, reduce, ranks, per_sm):
    c = choose("sm_90", world, per_rank, world * per_rank, reduce=reduce, device_counts=False,
               out_per_rank_bytes=out, symmetric=True, ranks_per_device=ranks, sms=132)
    if per_sm is None:
        assert c.regime == Regime.LATENCY and c.block_budget == 2 * 132 // world
    else:
        assert (c.regime, c.block_budget) == (Regime.THROUGHPUT, per_sm * 132 // ranks)
    # Staged (buffers peers cannot address): not measured, two an SM.
    staged = choose("sm_90", world, per_rank, world * per_rank, reduce=reduce, device_counts=False,
                    out_per_rank_bytes=out, ranks_per_device=ranks, sms=132, regime=Regime.THROUGHPUT)
    assert staged.block_budget == 2 * 132 // ranks


@pytest.mark.parametrize("world", range(2, 9))
@pytest.mark.parametrize("symmetric", [True, False])
def test_every_lowering_fits_the_gpu_its_ranks_share(world, symmetric):
    # The grids of `world` ranks on one 132-SM GPU: at most two 512-thread blocks per SM.
    from purlin.compile import compile_collective

    for name, count in (("all_reduce", 1 << 20), ("all_gather", 1 << 18), ("reduce_scatter", 1 << 18),
                        ("all_to_all", 1 << 16)):
        compiled = compile_collective(name, world, "bf16", "sum" if "reduce" in name else None, count,
                                      symmetric=symmetric, ranks_per_device=world)
        roles = compiled.plan.roles
        assert world * sum(r.blocks for r in roles) <= 2 * 132, (name, [r.blocks for r in roles])
        assert compiled.cuda.blocks_per_sm(world, 132) <= 2


@pytest.mark.parametrize("world, grid", [(2, 65), (3, 88), (4, 65), (8, 33)])
@pytest.mark.parametrize("name", ["all_gather", "reduce_scatter", "all_to_all"])
def test_throughput_grids_fill_a_budget_the_block_cap_leaves_idle(world, grid, name):
    # 16 MiB a rank, every rank on one 132-SM GPU, two blocks an SM: 64 data blocks and a signalling one
    # fill worlds 2 (at one an SM) and 4 to within an eighth; at world 3 they would leave 23 of 88 idle.
    from purlin.compile import compile_collective

    compiled = compile_collective(name, world, "bf16", "sum" if "reduce" in name else None, (8 << 20) // world,
                                  symmetric=True, ranks_per_device=world, sms=132)
    assert compiled.cuda.grid == grid
    assert compiled.cuda.blocks_per_sm(world, 132) == (1 if world == 2 else 2)


@pytest.mark.parametrize("sms", [108, 132, 148])
@pytest.mark.parametrize("world", range(2, 9))
def test_filled_grids_fit_every_gpus_multiprocessors(sms, world):
    # The fill takes the whole budget where it applies: every rank's grid still resident at once.
    from purlin.compile import compile_collective

    for name in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"):
        count = (8 << 20) // (1 if name == "all_reduce" else world)
        compiled = compile_collective(name, world, "bf16", "sum" if "reduce" in name else None, count,
                                      symmetric=True, ranks_per_device=world, sms=sms)
        per_sm = compiled.cuda.blocks_per_sm(world, sms)
        assert per_sm <= 2 and world * compiled.cuda.grid <= per_sm * sms, (name, compiled.cuda.grid)


@pytest.mark.parametrize("world", range(2, 9))
def test_default_lowering_is_resident_at_every_size(world):
    # What a Communicator lowers (symmetric, its ranks per GPU) for every collective, V forms with uneven
    # counts, odd sizes from 12 B to 1 GiB and each generation's GPU: never a grid the runtime then refuses.
    from purlin.compile import compile_collective
    from purlin.tools.bench import _case

    for arch, sms in (("sm_80", 108), ("sm_90", 132), ("sm_100", 148)):
        for name in COLLECTIVES:
            for nbytes in (12, 1000, 65532, 999_996, 3 << 20, 17 << 20, 100_000_002, 1 << 30):
                case, _ = _case(name, nbytes, world)
                for ranks in sorted({1, 2, world}):
                    compiled = compile_collective(name, world, "bf16", case.op, case.count, case.counts, arch=arch,
                                                  symmetric=True, ranks_per_device=ranks, sms=sms)
                    assert compiled.cuda.resident_blocks_per_sm(ranks, sms, 0, name) <= 2, (arch, nbytes, ranks)


@pytest.mark.parametrize("per_rank, ranks, reduce, single, aligned, symmetric, engine", [
    (128 << 20, 4, False, True, True, True, True),  # all_to_all from 128 MiB, ranks sharing a GPU
    (64 << 20, 4, False, True, True, True, False),  # below: the SM copy is as fast
    (128 << 20, 1, False, True, True, True, False),  # a GPU of its own: not measured
    (128 << 20, 4, False, False, True, True, False),  # all_gather: one read fans out only on the SMs
    (128 << 20, 4, False, True, False, True, False),  # slices off 16 bytes: the engine is slower
    (128 << 20, 4, True, True, True, True, False),  # reductions: the engine only copies
    (128 << 20, 4, False, True, True, False, False),  # staged: its copies are the SMs'
])
def test_copy_engine_where_it_measured_faster(per_rank, ranks, reduce, single, aligned, symmetric, engine):
    kw = dict(reduce=reduce, device_counts=False, symmetric=symmetric, ranks_per_device=ranks, single_receivers=single,
              aligned=aligned)
    assert choose("sm_90", 4, per_rank, 4 * per_rank, **kw).copy_engine == engine
    assert not choose("sm_100", 4, per_rank, 4 * per_rank, **kw).copy_engine


@pytest.mark.parametrize("world, per_rank, out, reduce, ranks, regime", [
    (4, 256 << 10, 64 << 10, True, 4, Regime.LATENCY),  # reduce_scatter: 384 KiB of packets a rank
    (2, 1 << 20, 512 << 10, True, 2, Regime.LATENCY),  # 1 MiB
    (5, 1 << 20, 200 << 10, True, 5, Regime.LATENCY),  # 1.6 MiB
    (7, 1 << 20, (1 << 20) // 7, True, 7, Regime.LATENCY),  # 1755 KiB
    (8, 1 << 20, 128 << 10, True, 8, Regime.THROUGHPUT),  # 1792 KiB: beyond the bound, 1760 KiB
    (4, 256 << 10, 64 << 10, True, 1, Regime.THROUGHPUT),  # a GPU each: packets cross links
    (4, 256 << 10, 64 << 10, True, 2, Regime.THROUGHPUT),  # two GPUs of two ranks
    (2, 512 << 10, 512 << 10, True, 2, Regime.LATENCY),  # all_reduce: all of it to the peer, 1 MiB
    (3, 384 << 10, 384 << 10, True, 3, Regime.LATENCY),  # to two peers: 1.5 MiB
    (2, 880 << 10, 880 << 10, True, 2, Regime.LATENCY),  # 1760 KiB: the bound of all but gathers
    (2, 896 << 10, 896 << 10, True, 2, Regime.THROUGHPUT),  # 1792 KiB
    (7, 1 << 20, 1 << 20, False, 7, Regime.LATENCY),  # all_to_all: 6/7 MiB to its peers, 1755 KiB
    (8, 1 << 20, 1 << 20, False, 8, Regime.THROUGHPUT),  # 7/8 MiB, 1792 KiB
    (4, 128 << 10, 512 << 10, False, 4, Regime.LATENCY),  # all_gather: its input to 3 peers, 768 KiB
    (4, 256 << 10, 1 << 20, False, 4, Regime.LATENCY),  # 1.5 MiB: all_gather's bound
    (8, 128 << 10, 1 << 20, False, 8, Regime.THROUGHPUT),  # 1.75 MiB
])
def test_packets_reach_further_where_every_rank_shares_one_gpu(world, per_rank, out, reduce, ranks, regime):
    """Beyond latency_max_bytes, while a rank writes at most packets_shared_max_bytes
    of packets, with every block the ranks' share of the GPU allows."""
    c = choose("sm_90", world, per_rank, per_rank, reduce=reduce, device_counts=False, out_per_rank_bytes=out,
               symmetric=True, ranks_per_device=ranks, sms=132)
    assert c.regime == regime
    if regime == Regime.LATENCY and per_rank > T.latency_max_bytes:
        assert c.latency_blocks == c.block_budget == 2 * 132 // world


def test_packet_bytes_follow_what_a_rank_sends():
    from purlin.conversion.cost_model import packet_bytes

    assert packet_bytes(4, 1 << 20, 1 << 20, reduce=True) == 2 * 3 * (1 << 20)  # all_reduce: to every peer
    assert packet_bytes(4, 1 << 20, 1 << 18, reduce=True) == 2 * 3 * (1 << 18)  # reduce_scatter: a slice each
    assert packet_bytes(4, 1 << 18, 1 << 20, reduce=False) == 2 * 3 * (1 << 18)  # all_gather: its input to each
    assert packet_bytes(4, 1 << 20, 1 << 20, reduce=False) == 2 * 3 * (1 << 18)  # all_to_all: a chunk each


@pytest.mark.parametrize("world, per_rank, ranks, in_place, strategy", [
    (4, 1 << 20, 4, False, Strategy.DIRECT),  # 4 MiB of inputs on one GPU
    (2, 4 << 20, 2, False, Strategy.DIRECT),  # 8 MiB
    (6, 2 << 20, 6, False, Strategy.DIRECT),  # 12 MiB: the bound
    (7, 2 << 20, 7, False, Strategy.COMPOSED),  # 14 MiB
    (4, 4 << 20, 4, False, Strategy.COMPOSED),
    (8, 2 << 20, 8, False, Strategy.COMPOSED),
    (4, 1 << 20, 4, True, Strategy.COMPOSED),  # in place, a peer would still read what is overwritten
    (4, 1 << 20, 1, False, Strategy.COMPOSED),  # a GPU each: every input over the links W times
])
def test_symmetric_reductions_on_one_gpu_direct_while_their_inputs_fit_l2(world, per_rank, ranks, in_place, strategy):
    c = choose("sm_90", world, per_rank, per_rank, reduce=True, device_counts=False, symmetric=True,
               ranks_per_device=ranks, sms=132, regime=Regime.THROUGHPUT, in_place=in_place)
    assert c.strategy == strategy


@pytest.mark.parametrize("per_rank_bytes", [70_006, 300_006, 1_000_006])
@pytest.mark.parametrize("world", [2, 3, 5, 8, 13, 16])
@pytest.mark.parametrize("name", list(COLLECTIVES))
def test_the_one_gpu_choices_compute_the_reference(name, world, per_rank_bytes):
    """Every rank on one GPU, past latency_max_bytes, odd sizes: what the cost model
    picks there (packets with the ranks' share of the blocks, the direct symmetric
    all_reduce, or the throughput lowering) runs on the CPU backend and equals the
    numpy reference."""
    from collective_cases import make_case

    from purlin.compile import compile_collective
    from purlin.runtime import Communicator
    from purlin.testing.data import compare

    scatters = name in ("reduce_scatter", "all_to_all", "reduce_scatter_v", "all_to_all_v")
    count = max(1, per_rank_bytes // 2 // (world if scatters else 1))
    case = make_case(name, world, "bf16", count=count, seed=world)
    c = compile_collective(case.collective, world, case.dtype, case.op, case.count, case.counts, arch="sm_90",
                           symmetric=True, ranks_per_device=world, sms=132)
    assert world * sum(r.blocks for r in c.plan.roles) <= 2 * 132
    args = case.make_args(seed=world)
    expected = case.expected(args)
    Communicator(c.plan, "cpu", name=name).run(args[0], args[1])
    assert compare(args[1], expected, case.dtype, case.op, case.contributions, 8.0, "%out") is None


def test_the_one_gpu_choices_reach_past_the_latency_bound():
    """The cases above take the new lowerings: packets past 64 KiB, the direct symmetric all_reduce."""
    from purlin.compile import compile_collective

    def kernel(name, world, count):
        c = compile_collective(name, world, "bf16", "sum" if "reduce" in name else None, count, arch="sm_90",
                               symmetric=True, ranks_per_device=world, sms=132)
        return c.cuda.kernel.regime.data.value, c.cuda.kernel.strategy.data.value, [r.blocks for r in c.plan.roles]

    assert kernel("all_reduce", 2, 35_003) == ("latency", "direct", [132])
    assert kernel("reduce_scatter", 3, 150_003 // 3) == ("latency", "direct", [88])
    assert kernel("all_reduce", 4, 500_003) == ("throughput", "direct", [1, 32])  # one block an SM: 1 MB a rank
    assert kernel("all_reduce", 8, 1_000_003)[:2] == ("throughput", "composed")  # 16 MB of inputs


def test_packet_blocks_take_every_piece_in_one_round():
    from purlin.conversion.cost_model import packet_blocks

    per_block = T.latency_block_bytes // 8
    assert packet_blocks("sm_90", 16, 16 * per_block) == 16
    assert packet_blocks("sm_90", 16, 16 * per_block + 3) == 17
    assert packet_blocks("sm_90", 4, 10) == 4  # never fewer than the payload's count


@pytest.mark.parametrize("name, world, nbytes, blocks", [
    ("all_gather", 5, 65530, 17),  # 5 slices of 13106 B: 5 x 1639 packets polled, not 8191.25
    ("all_to_all", 3, 65532, 17),  # 3 x 2731 put and polled
    ("all_gather", 4, 65536, 16),  # whole packets: 8192 pieces, 16 x 512 threads
    ("all_to_all", 8, 65536, 16),
    ("reduce_scatter", 5, 65530, 16),  # one group of 1639 packets polled, 5 units of 1639 put
    ("all_gather", 5, 1020, 1)])
def test_the_fused_packet_role_takes_its_pieces_in_one_round(name, world, nbytes, blocks):
    from purlin.compile import compile_collective
    from purlin.tools.bench import _case

    case, _ = _case(name, nbytes, world)
    for ranks in (1, world):
        compiled = compile_collective(name, world, "bf16", case.op, case.count, case.counts, arch="sm_90",
                                      symmetric=True, ranks_per_device=ranks, sms=132)
        assert compiled.cuda.kernel.regime.data == Regime.LATENCY
        assert [r.blocks for r in compiled.plan.roles] == [blocks], (name, world, ranks)
    # Blocks asked for win; the ranks' share of a small GPU cuts the role.
    asked = compile_collective(name, world, "bf16", case.op, case.count, case.counts, arch="sm_90",
                               lowering="blocks=16", symmetric=True, ranks_per_device=world, sms=132)
    assert [r.blocks for r in asked.plan.roles] == [16]
    small = compile_collective(name, world, "bf16", case.op, case.count, case.counts, arch="sm_90",
                               symmetric=True, ranks_per_device=world, sms=8)
    assert [r.blocks for r in small.plan.roles] == [min(blocks, 2 * 8 // world)]


def test_grids_asked_for_may_fill_every_thread_an_sm_holds_when_ranks_share_it():
    """blocks= is the user's: it may take every thread of the ranks' SMs (four
    blocks of 512), not just the two blocks an SM the cost model plans."""
    assert resident_budget("sm_90", 8, 132) == 66 == 2 * block_budget("sm_90", 8, 132)
    assert resident_budget("sm_80", 4) == 108
    assert resident_budget("sm_90", 1) is None
