"""V collectives whose counts the host binds before each call
(compile_device_counts(counts_on_host=True)): lowered symmetric, they move the
counts in place (no staging), at the offsets each binding gives. Checked on
the CPU backend against the reference for several bindings of one lowering,
zeros among the counts, worlds 2-5 and both regimes; the bound CUDA kernels
move in place and compile; the kernel that would read the counts on the
device is refused by name; without counts_on_host the same lowering stages."""

from __future__ import annotations

import numpy as np
import pytest

from purlin.compile import compile_device_counts, placement_options
from purlin.cuda import nvrtc
from purlin.cuda.program import ProgramError
from purlin.runtime import Communicator
from purlin.testing.cases import Case, counts_for
from purlin.testing.data import compare

V_FORMS = ("all_gather_v", "reduce_scatter_v", "all_to_all_v", "all_reduce_v")
# Elements of a rank's input the lowering is sized for; every binding's counts fit them.
CAPACITY = 2048


def op_of(collective: str) -> str | None:
    return "sum" if collective in ("reduce_scatter_v", "all_reduce_v") else None


def lowered(collective: str, world: int, regime: str, counts_on_host: bool = True):
    out = CAPACITY if collective in ("reduce_scatter_v", "all_reduce_v") else CAPACITY * world
    return compile_device_counts(collective, world, "bf16", op_of(collective), input_elems=CAPACITY,
                                 output_elems=out, arch="sm_90", counts_on_host=counts_on_host,
                                 lowering=placement_options(f"regime={regime}", True, world, 132))


def padded(arrays: list[np.ndarray], extents: list[int], fill: float) -> list[np.ndarray]:
    """Each rank's array grown to the plan's extent, the rest `fill`."""
    return [np.concatenate([a, np.full(max(0, n - a.size), fill, a.dtype)]) for a, n in zip(arrays, extents)]


@pytest.mark.parametrize("regime", ["throughput", "latency"])
@pytest.mark.parametrize("world", [2, 3, 4, 5])
@pytest.mark.parametrize("collective", V_FORMS)
def test_bindings_of_one_lowering_match_the_reference(collective, world, regime):
    dc = lowered(collective, world, regime)
    for seed, total in enumerate((1, 300, 477)):
        counts = counts_for(collective, world, total, seed=seed)
        bound = dc.bind_collective(counts)
        assert bound.plan.symmetric
        case = Case(collective, world, "bf16", op_of(collective), counts=counts)
        args = case.make_args(seed=seed)
        ins = padded(args[0], [bound.plan.input_extent(r) for r in range(world)], 0.0)
        outs = padded(args[1], [bound.plan.output_extent(r) for r in range(world)], np.nan)
        comm = Communicator(bound.plan, "cpu", name=collective)
        for _ in range(2):
            comm.run(ins, outs)
        got = [o[:a.size] for o, a in zip(outs, args[1])]
        mismatch = compare(got, case.expected(args), "bf16", case.op, case.contributions, 8.0, "%out")
        assert mismatch is None, f"{collective} world {world} {regime} counts {counts}: {mismatch}"


@pytest.mark.parametrize("collective", V_FORMS)
def test_bound_kernels_move_in_place_and_compile(collective):
    dc = lowered(collective, 4, "throughput")
    program = dc.bind_collective(counts_for(collective, 4, 500, seed=3)).cuda
    text = program.source().text
    assert "abi::Moves::Staging" not in text and ("abi::Moves::Pull" in text or "abi::Moves::Push" in text)
    assert nvrtc.compile_cubin(text, "sm_90").cubin[:4] == b"\x7fELF"


def test_the_device_counts_kernel_of_a_symmetric_lowering_is_refused():
    dc = lowered("all_to_all_v", 3, "throughput")
    with pytest.raises(ProgramError, match="the kernel moves its dynamic counts in place, at offsets the host "
                                           r"binds \(lowered counts-on-host\): bind the counts on the host"):
        dc.cuda.source()


def test_counts_read_on_the_device_are_staged():
    dc = lowered("reduce_scatter_v", 4, "throughput", counts_on_host=False)
    assert "abi::Moves::Staging" in dc.cuda.source().text
    assert "abi::Moves::Staging" in dc.bind_collective([10, 0, 300, 7]).cuda.source().text


FIXED_OF = {"all_gather": "all_gather_v", "reduce_scatter": "reduce_scatter_v", "all_to_all": "all_to_all_v"}


@pytest.mark.parametrize("world", [2, 4, 8])
@pytest.mark.parametrize("collective", list(FIXED_OF))
def test_throughput_bindings_are_the_fixed_kernels(collective, world):
    """One throughput lowering bound to each size gives the very kernel and
    tables that lowering the fixed collective at that size gives: calls routed
    through it cost what the fixed ones cost."""
    from purlin.coll.builder import CollectiveSpec
    from purlin.compile import compile_collective

    op = op_of(FIXED_OF[collective])
    per_peer = [(1 << 19) // world, (8 << 20) // world]  # bf16 elements a rank sends each peer
    fixed = [compile_collective(collective, world, "bf16", op, n, arch="sm_90", symmetric=True,
                                ranks_per_device=world, sms=132) for n in per_peer]
    assert {c.cuda.kernel.regime.data.value for c in fixed} == {"throughput"}
    n_in, n_out = CollectiveSpec(collective, world, "bf16", op, per_peer[-1]).buffer_sizes()
    dc = compile_device_counts(FIXED_OF[collective], world, "bf16", op, input_elems=n_in, output_elems=n_out,
                               arch="sm_90", counts_on_host=True,
                               lowering=placement_options("regime=throughput", True, world, 132))
    for n, c in zip(per_peer, fixed):
        counts = [[n] * world for _ in range(world)] if collective == "all_to_all" else [n] * world
        bound = dc.bind_collective(counts).cuda
        per_sm = c.cuda.blocks_per_sm(world, 132)
        assert bound.source(per_sm).text == c.cuda.source(per_sm).text
        assert len(bound.tables.ranks) == world
        assert all(np.array_equal(b, f) for b, f in zip(bound.tables.ranks, c.cuda.tables.ranks))
