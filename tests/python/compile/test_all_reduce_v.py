"""coll.all_reduce_v lowered as all_reduce is.

Static counts of all_reduce's split (purlin.torch.regimes.slices) give the
very kernel source, tables and plan of all_reduce of their sum, in every
regime, symmetric or not. Dynamic counts bound on the host
(compile_device_counts(counts_on_host=True)) are lowered once, composed as a
fixed all_reduce of the most the buffers take: in the symmetric throughput
regime every binding is the fixed all_reduce's kernel source and tables;
staged (not symmetric), those of the fixed composed all_reduce wherever a
slice holds at least one chunk (below, the fixed lowering sizes its staging to
the largest slice, the bound one to the chunk: the same kernel source).
Bound plans, in place too, run on the CPU backend and match the reference:
worlds 2-5, both regimes, symmetric or not, zeros among the counts.
"""

from __future__ import annotations

import numpy as np
import pytest

from purlin.compile import compile_collective, compile_device_counts, placement_options
from purlin.conversion.cost_model import THRESHOLDS
from purlin.plan import BufKind
from purlin.runtime import Communicator
from purlin.testing.cases import Case, counts_for
from purlin.testing.data import compare
from purlin.torch.regimes import slices


def same_kernel(a, b, per_sm: int = 1) -> str | None:
    """What differs between two compiled collectives' CUDA programs, or None."""
    if a.cuda.source(per_sm).text != b.cuda.source(per_sm).text:
        return "kernel source"
    ta, tb = a.cuda.tables.ranks, b.cuda.tables.ranks
    if len(ta) != len(tb) or not all(np.array_equal(x, y) for x, y in zip(ta, tb)):
        return "tables"
    return None


PLACEMENTS = {
    "auto": {},
    "latency": {"lowering": "regime=latency"},
    "throughput": {"lowering": "regime=throughput"},
    "throughput-chunked": {"lowering": "regime=throughput chunk-bytes=256 slots=2"},
    "symmetric": {"symmetric": True, "sms": 132},
    "symmetric-throughput": {"symmetric": True, "sms": 132, "lowering": "regime=throughput"},
}


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("world", [2, 3, 4, 5, 6, 7, 8, 16])
def test_static_counts_lower_as_all_reduce(world, placement):
    kw = dict(PLACEMENTS[placement])
    if kw.get("symmetric"):
        kw["ranks_per_device"] = world
    # Units of 256 bytes: 300_001 elements would be thousands a rank (a slow test, nothing new).
    sizes = (0, 1, world - 1, 5 * world, 1001, 4099) + (() if placement == "throughput-chunked" else (300_001,))
    for n in sizes:
        for in_place in (False, True):
            fixed = compile_collective("all_reduce", world, "f32", "sum", n, arch="sm_90", in_place=in_place, **kw)
            v = compile_collective("all_reduce_v", world, "f32", "sum", counts=slices(n, world), arch="sm_90",
                                   in_place=in_place, **kw)
            where = f"n {n} in place {in_place}"
            assert np.array_equal(v.plan.encode(), fixed.plan.encode()), where
            assert same_kernel(v, fixed) is None, where


def role_blocks(compiled) -> int:
    """The blocks of the widest role of `compiled`'s kernel."""
    return max(r.blocks for r in compiled.plan.roles)


def lowered(world: int, bound: int, lowering: str, symmetric: bool, in_place: bool = False):
    return compile_device_counts("all_reduce_v", world, "bf16", "sum", input_elems=bound, output_elems=bound,
                                 arch="sm_90", counts_on_host=True, in_place=in_place,
                                 lowering=placement_options(lowering, symmetric, world if symmetric else 1,
                                                            132 if symmetric else 0))


def fixed_all_reduce(world: int, n: int, lowering: str, symmetric: bool, in_place: bool = False):
    return compile_collective("all_reduce", world, "bf16", "sum", n, arch="sm_90", lowering=lowering,
                              symmetric=symmetric, in_place=in_place, ranks_per_device=world if symmetric else 1,
                              sms=132 if symmetric else 0)


@pytest.mark.parametrize("in_place", [False, True], ids=["apart", "in-place"])
@pytest.mark.parametrize("world", [2, 3, 4, 5, 7, 8])
def test_symmetric_throughput_bindings_are_the_fixed_kernels(world, in_place):
    """One lowering bound to each size gives the very kernel and tables of the
    fixed all_reduce of that size, large or small, divisible by the world or not;
    in place too (moved in place between the ranks' buffers, never staged).
    Composed asked: below direct_shared_max_bytes the cost model lowers a
    fixed all_reduce with every rank on one GPU direct. Blocks: a fixed call
    of at most sparse_shared_reduce_max_bytes a rank takes one block an SM,
    the bound form those of the regime's largest call: at those, the same."""
    sizes = (1, world + 1, 1000, 65_537, (4 << 20) + 3, (16 << 20) // world)
    lowering = "regime=throughput strategy=composed"
    dc = lowered(world, max(sizes), lowering, True, in_place)
    assert dc.kernel.strategy.data.value == "composed"
    for n in sizes:
        fixed = fixed_all_reduce(world, n, lowering, True, in_place)
        assert not any(b.kind == BufKind.STAGING for b in fixed.plan.buffers)
        assert fixed.cuda.kernel.strategy.data.value == "composed"
        bound = dc.bind_collective(slices(n, world))
        assert bound.plan.symmetric
        if role_blocks(fixed) != role_blocks(bound):
            assert role_blocks(fixed) < role_blocks(bound), f"n {n}"
            assert 2 * n <= THRESHOLDS["sm_90"].sparse_shared_reduce_max_bytes, f"n {n}"
            fixed = fixed_all_reduce(world, n, f"{lowering} blocks={role_blocks(bound)}", True, in_place)
        assert same_kernel(bound, fixed, fixed.cuda.blocks_per_sm(world, 132)) is None, f"n {n}"


@pytest.mark.parametrize("symmetric", [False, True], ids=["staged", "symmetric"])
@pytest.mark.parametrize("world", [2, 3, 5, 8])
def test_latency_bindings_move_the_fixed_all_reduce_units(world, symmetric):
    """In the latency regime the exchange coalesces once bound: whatever the
    counts (zeros among them), every rank moves one unit to every rank and
    reduces one group, the fixed all_reduce's; only the packet windows differ,
    sized for the regime's largest call, and the signals laid out after them."""
    from purlin.cuda import abi

    dc = lowered(world, CAPACITY["latency"], "regime=latency", symmetric)
    window = [abi.GLOBAL_WORDS + world + w for w in (abi.PH_HALF_BYTES, abi.PH_SLOT_BYTES, abi.PH_READY, abi.PH_FREE)]
    for n in (1, world - 1, world, 301, CAPACITY["latency"]):
        bound = dc.bind_collective(slices(n, world)).cuda.tables
        fixed = fixed_all_reduce(world, n, "regime=latency", symmetric).cuda.tables
        for r in range(world):
            b, f = bound.ranks[r].copy(), fixed.ranks[r].copy()
            assert b[abi.GLOBAL_WORDS + world + abi.PH_UNITS] == 1 and b[abi.GLOBAL_WORDS + world + abi.PH_GROUPS] == 1
            b[window], f[window] = 0, 0
            assert np.array_equal(b, f), f"n {n} rank {r}"


@pytest.mark.parametrize("world", [2, 3, 4, 5, 8])
def test_staged_throughput_bindings_are_the_fixed_kernels(world):
    """Not symmetric: the fixed all_reduce is composed from composed_min_bytes;
    a binding is its kernel and tables where every slice holds a chunk, and its
    kernel source below (the staging is sized to the chunk, not the slice)."""
    chunk = 1 << 19  # bf16 elements: units of 1 MiB
    lowering = f"regime=throughput chunk-bytes={2 * chunk}"
    least = THRESHOLDS["sm_90"].composed_min_bytes // 2  # bf16 elements of the smallest composed all_reduce
    full = [world * chunk, 3 * world * chunk + world - 1]  # every slice at least a chunk
    short = [least, least + world + 1, world * chunk - 1]
    dc = lowered(world, max(full + short), lowering, False)
    assert dc.kernel.strategy.data.value == "composed"
    for n in full + short:
        fixed = fixed_all_reduce(world, n, lowering, False)
        assert fixed.cuda.kernel.strategy.data.value == "composed", n
        bound = dc.bind_collective(slices(n, world))
        if n in full:
            assert min(slices(n, world)) >= chunk
            assert same_kernel(bound, fixed) is None, f"n {n}"
        else:
            assert bound.cuda.source().text == fixed.cuda.source().text, f"n {n}"


def test_small_buffers_lower_direct_and_counts_read_on_the_device_too():
    """Costed at the most the buffers take: below composed_min_bytes direct; and
    counts read on the device take direct phases only (its kernel compiles)."""
    assert lowered(4, 1000, "regime=throughput", False).kernel.strategy.data.value == "direct"
    device = compile_device_counts("all_reduce_v", 4, "bf16", "sum", input_elems=1 << 20, output_elems=1 << 20,
                                   arch="sm_90", lowering="regime=throughput")
    assert device.kernel.strategy.data.value == "direct"
    assert "device_counts<1>" in device.cuda.source().text


def padded(arrays: list[np.ndarray], extents: list[int], fill) -> list[np.ndarray]:
    """Each rank's array grown to the plan's extent, the rest `fill`."""
    return [np.concatenate([a, np.full(max(0, n - a.size), fill, a.dtype)]) for a, n in zip(arrays, extents)]


# bf16 elements a rank's buffer holds: the latency regime's bound on sm_90,
# and 1 MiB in the throughput regime, composed where not symmetric.
CAPACITY = {"latency": THRESHOLDS["sm_90"].latency_max_bytes // 2, "throughput": 1 << 19}


@pytest.mark.parametrize("in_place", [False, True], ids=["apart", "in-place"])
@pytest.mark.parametrize("symmetric", [False, True], ids=["staged", "symmetric"])
@pytest.mark.parametrize("regime", ["throughput", "latency"])
@pytest.mark.parametrize("world", [2, 3, 4, 5])
def test_bindings_of_one_lowering_match_the_reference(world, regime, symmetric, in_place):
    lowering = f"regime={regime}" + (" chunk-bytes=256 slots=2" if regime == "throughput" else "")
    dc = lowered(world, CAPACITY[regime], lowering, symmetric, in_place)
    # Symmetric on one GPU, apart, below direct_shared_max_bytes: every rank pulls every input whole.
    direct = regime == "latency" or (symmetric and not in_place)
    assert dc.kernel.strategy.data.value == ("direct" if direct else "composed")
    for seed, total in enumerate((1, 7, 300, 4099)):
        counts = counts_for("all_reduce_v", world, total, seed=seed)
        assert 0 in counts or world == 1
        bound = dc.bind(counts)
        assert bound.in_place == in_place
        case = Case("all_reduce_v", world, "bf16", "sum", counts=counts)
        args = case.make_args(seed=seed)
        expected = case.expected(args)
        ins = padded(args[0], [bound.input_extent(r) for r in range(world)], 0.0)
        outs = ins if in_place else padded(args[1], [bound.output_extent(r) for r in range(world)], np.nan)
        comm = Communicator(bound, "cpu", name="all_reduce_v")
        for _ in range(1 if in_place else 2):  # in place, a second call would reduce the result
            comm.run(ins, outs)
        got = [o[:total] for o in outs]
        mismatch = compare(got, expected, "bf16", "sum", case.contributions, 8.0, "%out")
        assert mismatch is None, f"world {world} {regime} counts {counts}: {mismatch}"


def test_in_place_needs_one_buffer_size():
    from purlin.coll.builder import SpecError

    with pytest.raises(SpecError, match="in_place=True makes the input and output one buffer, but they are given "
                                        "8 and 16 elements"):
        compile_device_counts("all_reduce_v", 2, "f32", "sum", input_elems=8, output_elems=16, in_place=True)
