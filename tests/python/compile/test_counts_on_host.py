"""V collectives whose counts the host binds before each call
(compile_device_counts(counts_on_host=True)): lowered symmetric, they move the
counts in place (no staging), at the offsets each binding gives. Checked on
the CPU backend against the reference for several bindings of one lowering,
zeros among the counts, worlds 2-5 and both regimes; the bound CUDA kernels
move in place and compile; the kernel that would read the counts on the
device is refused by name; without counts_on_host the same lowering stages.
In the latency regime an empty slice is a flag-only unit, so every pair of
ranks exchanges a packet each call and the bound kernels need no per-call
handshake, as the fixed ones: checked over counts changing from call to call
in one process and across processes, against the fixed kernels' calls, by
snac-verify (and refused by it without the flag-only units); fixed counts
keep their lowering."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from purlin.coll.builder import COLLECTIVES
from purlin.compile import compile_device_counts, placement_options
from purlin.cuda import nvrtc
from purlin.cuda.program import ProgramError
from purlin.plan import Op
from purlin.runtime import Communicator, ProcessCommunicator
from purlin.snac import dialect as snac
from purlin.testing.cases import Case, counts_for
from purlin.testing.data import compare

V_FORMS = ("all_gather_v", "reduce_scatter_v", "all_to_all_v", "all_reduce_v")
# Elements of a rank's input the lowering is sized for; every binding's counts fit them.
CAPACITY = 2048


def op_of(collective: str) -> str | None:
    return "sum" if collective in ("reduce_scatter_v", "all_reduce_v") else None


def lowered(collective: str, world: int, regime: str, counts_on_host: bool = True, symmetric: bool = True):
    out = CAPACITY if collective in ("reduce_scatter_v", "all_reduce_v") else CAPACITY * world
    return compile_device_counts(collective, world, "bf16", op_of(collective), input_elems=CAPACITY,
                                 output_elems=out, arch="sm_90", counts_on_host=counts_on_host,
                                 lowering=placement_options(f"regime={regime}", symmetric, world, 132))


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
    through it cost what the fixed ones cost (the fixed ones asked for the
    throughput regime: on one GPU the cost model sends some of these sizes as
    packets). But for blocks: a fixed call within the one-GPU bound of one
    block an SM (cost_model.sparse_shared_*_max_bytes) takes fewer than the
    bound form, lowered for the largest call; at the bound form's, the same."""
    from purlin.coll.builder import CollectiveSpec
    from purlin.compile import compile_collective

    op = op_of(FIXED_OF[collective])
    per_peer = [(1 << 19) // world, (8 << 20) // world]  # bf16 elements a rank sends each peer
    fixed = [compile_collective(collective, world, "bf16", op, n, arch="sm_90", symmetric=True,
                                ranks_per_device=world, sms=132, lowering="regime=throughput") for n in per_peer]
    assert {c.cuda.kernel.regime.data.value for c in fixed} == {"throughput"}
    n_in, n_out = CollectiveSpec(collective, world, "bf16", op, per_peer[-1]).buffer_sizes()
    dc = compile_device_counts(FIXED_OF[collective], world, "bf16", op, input_elems=n_in, output_elems=n_out,
                               arch="sm_90", counts_on_host=True,
                               lowering=placement_options("regime=throughput", True, world, 132))
    for n, c in zip(per_peer, fixed):
        counts = [[n] * world for _ in range(world)] if collective == "all_to_all" else [n] * world
        binding = dc.bind_collective(counts)
        bound = binding.cuda
        blocks = [max(r.blocks for r in k.plan.roles) for k in (binding, c)]
        if blocks[0] != blocks[1]:
            assert blocks[1] < blocks[0] and n == per_peer[0], (n, blocks)
            c = compile_collective(collective, world, "bf16", op, n, arch="sm_90", symmetric=True,
                                   ranks_per_device=world, sms=132, lowering=f"regime=throughput blocks={blocks[0]}")
        per_sm = c.cuda.blocks_per_sm(world, 132)
        # Whole-round pushes (atom.push `loads`) are chosen from unit sizes known when lowered, so a
        # large fixed all_gather has them and the bound form, lowered for any counts, not (yet).
        fixed_source = c.cuda.source(per_sm).text
        if collective == "all_gather" and n == per_peer[-1]:
            assert ", 16, 8>(k," in fixed_source
            fixed_source = fixed_source.replace(", 16, 8>(k,", ", 16>(k,")
        assert bound.source(per_sm).text == fixed_source
        assert len(bound.tables.ranks) == world
        assert all(np.array_equal(b, f) for b, f in zip(bound.tables.ranks, c.cuda.tables.ranks))


# -- the latency regime: every pair exchanges a flag each call, no handshake ----


def changing_counts(collective: str, world: int) -> list:
    """Counts for calls in a row: none at all, some ranks' rows or slices
    empty, seeded ones with zeros, every rank alike."""
    if COLLECTIVES[collective].matrix:
        return [[[0] * world for _ in range(world)],
                # rank 0 sends nothing
                [[0] * world] + [[(s + d) % 3 * 5 for d in range(world)] for s in range(1, world)],
                # all to rank 0, rank 0 only to itself
                [[7 * (d == 0) for d in range(world)] for _ in range(world)],
                # nobody sends to a peer
                [[9 * (s == d) for d in range(world)] for s in range(world)],
                [list(r) for r in counts_for(collective, world, 300, seed=4)],
                [[1] * world for _ in range(world)]]
    return [[0] * world, [5 * (r == 0) for r in range(world)], [0 if r % 2 else 7 for r in range(world)],
            list(counts_for(collective, world, 300, seed=4)), [1] * world]


def pairs(plan) -> list[tuple[set[int], set[int]]]:
    """Per rank: the peers it puts packets to, and those it waits for packets from."""
    return [({i.peer for role in prog for i in role if i.op == Op.PUT},
             {i.peer for role in prog for i in role if i.op == Op.WAIT_PACKETS}) for prog in plan.programs]


def no_handshake(plan) -> bool:
    """Whether no rank's program waits on or stores a signal: only packets order the calls."""
    return all(i.op not in (Op.WAIT, Op.SIGNAL) for prog in plan.programs for role in prog for i in role)


@pytest.mark.parametrize("symmetric", [True, False], ids=["in-place", "staged"])
@pytest.mark.parametrize("world", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("collective", V_FORMS)
def test_latency_bindings_need_no_handshake_over_changing_counts(collective, world, symmetric):
    """One latency lowering bound to counts that change from call to call,
    zeros and empty rows among them, run on one communicator (its memory and
    epochs carried from call to call): an empty slice is one flag-only packet,
    every call matches the reference, and no call signals or waits on a signal."""
    dc = lowered(collective, world, "latency", symmetric=symmetric)
    n_in, n_out = dc.input_elems, dc.output_elems
    comm = None
    for call, counts in enumerate(changing_counts(collective, world) * 2):
        plan = dc.bind(counts)
        # Every pair exchanges a packet each call, whatever the counts.
        assert no_handshake(plan) and pairs(plan) == [({*range(world)} - {r},) * 2 for r in range(world)]
        if comm is None:
            comm = Communicator(plan, "cpu", name=collective)
        else:
            comm.rebind(plan)
        case = Case(collective, world, "bf16", op_of(collective), counts=counts)
        args = case.make_args(seed=call)
        ins = padded(args[0], [n_in] * world, 0.0)
        outs = padded(args[1], [n_out] * world, np.nan)
        comm.run(ins, outs)
        got = [o[:a.size] for o, a in zip(outs, args[1])]
        mismatch = compare(got, case.expected(args), "bf16", case.op, case.contributions, 8.0, "%out")
        assert mismatch is None, f"{collective} world {world} call {call} counts {counts}: {mismatch}"
        assert all(np.isnan(o[a.size:]).all() for o, a in zip(outs, args[1])), "written past the output"
    assert comm.epoch(0) == 2 * len(changing_counts(collective, world)) * comm.plan.advance


def _run_bindings(rank: int, collective: str, world: int, symmetric: bool) -> None:
    dc = lowered(collective, world, "latency", symmetric=symmetric)
    comm = None
    for call, counts in enumerate(changing_counts(collective, world) * 2):
        plan = dc.bind(counts)
        if comm is None:
            # A symmetric plan's buffers live in the rank's heap, sized for the lowering's capacity.
            heap = 2 * (dc.input_elems + dc.output_elems) + 4096 if symmetric else None
            comm = ProcessCommunicator(plan, name=collective, timeout_s=30.0, heap_bytes=heap)
            own_in, own_out = ((comm.alloc(dc.input_elems), comm.alloc(dc.output_elems)) if symmetric else
                               (np.zeros(dc.input_elems, ml_dtypes.bfloat16),
                                np.zeros(dc.output_elems, ml_dtypes.bfloat16)))
        else:
            comm.rebind(plan)
        case = Case(collective, world, "bf16", op_of(collective), counts=counts)
        args = case.make_args(seed=call)
        own_in[:] = padded([args[0][rank]], [dc.input_elems], 0.0)[0]
        own_out[:] = padded([args[1][rank]], [dc.output_elems], np.nan)[0]
        comm.run(own_in, own_out)
        want = case.expected(args)[rank]
        assert compare([own_out[:want.size]], [want], "bf16", case.op, case.contributions, 8.0, "%out") is None, \
            f"rank {rank} call {call} counts {counts}"
    comm.close()


@pytest.mark.parametrize("symmetric", [True, False], ids=["in-place", "staged"])
@pytest.mark.parametrize("collective", V_FORMS)
def test_latency_bindings_across_processes(collective, symmetric):
    """The same, one rank per process: a rank's next call may start while its
    peers still poll the last one, so only the flag-only packets keep a window
    half from being rewritten under its reader."""
    torch = pytest.importorskip("torch")
    dist = pytest.importorskip("torch.distributed")
    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("torch.distributed with gloo is unavailable")
    from process_group import fork_gloo

    assert torch is not None
    fork_gloo(3, _run_bindings, collective, 3, symmetric)


@pytest.mark.parametrize("collective", V_FORMS)
def test_latency_bound_kernels_are_the_fixed_kernels_but_for_their_blocks(collective):
    """Bound to equal counts, the latency V form's kernel makes the calls the
    fixed collective's kernel makes (no wait_free before its puts, no finish
    after its consumes): only its role's blocks differ (the lowering knew no
    size); it compiles for every generation."""
    from purlin.coll.builder import CollectiveSpec
    from purlin.compile import compile_collective

    world, n = 4, 512
    fixed_name = next(f for f, v in {**FIXED_OF, "all_reduce": "all_reduce_v"}.items() if v == collective)
    op = op_of(collective)
    fixed = compile_collective(fixed_name, world, "bf16", op, n, arch="sm_90", lowering="regime=latency",
                               symmetric=True, ranks_per_device=world, sms=132)
    n_in, n_out = CollectiveSpec(fixed_name, world, "bf16", op, n).buffer_sizes()
    counts = {"all_to_all": [[n] * world for _ in range(world)], "all_reduce": [n // world] * world}.get(
        fixed_name, [n] * world)
    steps = lambda text: [line.strip() for line in text.splitlines() if "(k, " in line]  # noqa: E731
    for arch in ("sm_80", "sm_90", "sm_100"):
        dc = compile_device_counts(collective, world, "bf16", op, input_elems=n_in, output_elems=n_out, arch=arch,
                                   counts_on_host=True, lowering=placement_options("regime=latency", True, world, 132))
        text = dc.bind_collective(counts).cuda.source().text
        assert "wait_free<" not in text and "finish<" not in text
        if arch == "sm_90":
            assert steps(text) == steps(fixed.cuda.source().text)
        assert nvrtc.compile_cubin(text, arch).cubin[:4] == b"\x7fELF"


def test_an_empty_slice_is_a_flag_only_unit_of_the_tables():
    """The tables of a bound latency all_to_all_v: rank 0's unit to rank 1
    (count 0) has 0 bytes and a packet of the window of its own, the next
    unit starting one packet (8 bytes) later; rank 1's group from rank 0 has
    0 bytes and waits for that unit."""
    from purlin.cuda import abi

    world = 3
    counts = [[4, 0, 6], [1, 2, 3], [5, 6, 0]]
    tables = lowered("all_to_all_v", world, "latency").bind_collective(counts).cuda.tables.ranks
    head = abi.GLOBAL_WORDS + world

    def records(rank: int, at: int, words: int, count: int) -> list[list[int]]:
        t = tables[rank]
        first = int(t[head + at])
        return [[int(w) for w in t[first + k * words:first + (k + 1) * words]] for k in range(count)]

    units = records(0, abi.PH_UNITS_AT, abi.UNIT_WORDS, int(tables[0][head + abi.PH_UNITS]))
    assert [(u[abi.U_BYTES], u[abi.U_WINDOW]) for u in units] == [(0, 0), (12, 8)]  # bf16: to ranks 1 and 2
    groups = records(1, abi.PH_GROUPS_AT, abi.GROUP_WORDS, int(tables[1][head + abi.PH_GROUPS]))
    from_0 = groups[0]
    source = [int(w) for w in tables[1][from_0[abi.G_SOURCES_AT]:from_0[abi.G_SOURCES_AT] + abi.SOURCE_WORDS]]
    assert (from_0[abi.G_BYTES], from_0[abi.G_REMOTE], source[abi.S_RANK], source[abi.S_UNIT]) == (0, 1, 0, 0)


def test_the_device_counts_kernel_of_a_latency_lowering_is_refused():
    dc = lowered("all_gather_v", 3, "latency")
    with pytest.raises(ProgramError, match="phase 'exchange' makes a flag-only unit of every empty slice "
                                           r"\(lowered counts-on-host\), which the tables the device builds from its "
                                           "counts do not have: bind the counts on the host"):
        dc.cuda.source()


def test_the_device_counts_kernel_of_a_coalesced_exchange_is_refused():
    dc = lowered("all_reduce_v", 3, "latency")
    for phase in (op for op in dc.kernel.walk() if isinstance(op, snac.PhaseOp)):
        assert phase.coalesce is not None
        del phase.properties["empty_units"]
    with pytest.raises(ProgramError, match="phase 'exchange' moves its slices coalesced "
                                           r"\(lowered counts-on-host\), which the tables the device builds from its "
                                           "counts do not have: bind the counts on the host"):
        dc.cuda.source()


@pytest.mark.parametrize("collective", V_FORMS)
def test_counts_read_on_the_device_keep_the_handshake(collective):
    """Without counts-on-host the device builds the tables, with no unit of an
    empty slice: a pair may exchange nothing in a call, so the handshake stays."""
    dc = lowered(collective, 3, "latency", counts_on_host=False)
    assert not any(isinstance(op, snac.PhaseOp) and op.empty_units is not None for op in dc.kernel.walk())
    text = dc.cuda.source().text
    assert "wait_free<" in text and "finish<" in text


FIXED_CASES = [("all_reduce", None), ("all_gather", None), ("reduce_scatter", None), ("all_to_all", None),
               ("all_gather_v", "zeros"), ("reduce_scatter_v", "zeros"), ("all_to_all_v", "zeros"),
               ("all_to_all_v", "one way"), ("all_to_all_v", "both ways")]


def fixed_counts(collective: str, world: int, kind: str | None):
    if kind is None:
        return None
    if kind == "zeros":
        return counts_for(collective, world, 40, seed=world)
    # One way: rank 1 sends to nobody but itself, and receives from every rank; both ways: nothing empty.
    return [[0 if s == 1 and d != 1 and kind == "one way" else 1 + s + d for d in range(world)]
            for s in range(world)]


@pytest.mark.parametrize("regime", ["latency", "throughput"])
@pytest.mark.parametrize("world", [2, 3, 5])
@pytest.mark.parametrize("collective, kind", FIXED_CASES)
def test_fixed_counts_keep_their_lowering(collective, kind, world, regime):
    """Fixed counts make no unit of an empty slice: no phase of theirs has
    empty_units, no put, wait or consume moves 0 elements, and a latency
    program keeps its handshake exactly where some rank pushes to a peer that
    pushes nothing back."""
    from purlin.compile import compile_collective

    counts = fixed_counts(collective, world, kind)
    compiled = compile_collective(collective, world, "bf16", "sum" if "reduce" in collective else None, 24,
                                  counts=counts, arch="sm_90", lowering=f"regime={regime}", symmetric=True,
                                  ranks_per_device=world, sms=132)
    assert not any(isinstance(op, snac.PhaseOp) and op.empty_units is not None for op in compiled.cuda.kernel.walk())
    moves = [i for prog in compiled.plan.programs for role in prog for i in role
             if i.op in (Op.PUT, Op.WAIT_PACKETS, Op.COPY, Op.REDUCE)]
    assert all(i.elems for i in moves)
    if regime == "latency":
        pushed = {(r, d) for r, (to, _) in enumerate(pairs(compiled.plan)) for d in to}
        mutual = all((d, r) in pushed for r, d in pushed)
        assert no_handshake(compiled.plan) == mutual == ("wait_free<" not in compiled.cuda.source().text)
        assert kind != "one way" or not mutual


def test_snac_verify_proves_the_flag_only_units_needed():
    """snac-verify accepts each latency V form lowered counts-on-host (it runs
    sampled counts, zeros among them, and counts changing from call to call);
    without its flag-only units the same handshake-free program is refused:
    a rank that got nothing from a peer rewrites that peer's window half two
    calls later with nothing ordering the peer's reads before."""
    from xdsl.utils.exceptions import PassFailedException

    from purlin.coll.builder import CollectiveSpec
    from purlin.compile.pipeline import make_context, pipeline
    from purlin.simulator.snac_verify import SnacVerifyPass

    # all_reduce_v is left out: every non-empty slice goes between every pair, so it needs no flag-only unit.
    for collective in ("all_gather_v", "reduce_scatter_v", "all_to_all_v"):
        world = 3
        zeros = [[0] * world for _ in range(world)] if COLLECTIVES[collective].matrix else [0] * world
        module = CollectiveSpec(collective, world, "bf16", op_of(collective), counts=zeros,
                                dynamic=True).build_module((64, 64 if collective == "reduce_scatter_v" else 64 * world))
        pipeline("coll-expand,convert-coll-to-snac{regime=latency symmetric=true counts-on-host=true}").apply(
            make_context(), module)
        SnacVerifyPass().apply(make_context(), module)
        (phase,) = [op for op in module.walk() if isinstance(op, snac.PhaseOp)]
        assert not any(isinstance(op, (snac.ReclaimOp, snac.FinishOp)) for op in module.walk())
        del phase.properties["empty_units"]
        with pytest.raises(PassFailedException, match=r"snac-verify \(with counts .*\): reused too early: rank [0-9] "
                                                      r"\(fused\) overwrites @exchange_buf"):
            SnacVerifyPass().apply(make_context(), module)
