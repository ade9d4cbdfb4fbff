"""Device counts without a GPU: their kernels compile for every generation,
and the tables a device-counts kernel builds in each block
(include/purlin/counts_tables.h, run here on the host through
purlin._runtime) are word for word the tables purlin/cuda/tables.py writes
from the bound PhasePlan, for every V collective, both regimes, chunked
units, zero and skewed counts; counts that do not fit the kernel's buffers
are refused with the same answer on every rank."""

from __future__ import annotations

import random

import pytest

from purlin import _runtime
from purlin.compile import compile_collective, compile_device_counts
from purlin.cuda import abi
from purlin.cuda.codegen import CodegenError, counts_shape, emit_cuda
from purlin.cuda.program import ProgramError
from purlin.cuda.tables import build_tables
from purlin.snac.phase_binding import phase_states

V_FORMS = {"all_gather_v": None, "reduce_scatter_v": "max", "all_to_all_v": None, "all_reduce_v": "sum"}
LOWERINGS = ("regime=latency", "regime=throughput chunk-bytes=16", "regime=throughput")
ERRORS = {v: k for k, v in abi.COUNTS_ERRORS.items()}


def rows_of(name: str, world: int, rng: random.Random, most: int, zeros: float) -> list[list[int]]:
    """Every rank's own counts: a row of sends (all_to_all_v) or one count."""
    width = world if name == "all_to_all_v" else 1
    return [[0 if rng.random() < zeros else rng.randint(0, most) for _ in range(width)] for _ in range(world)]


def device_tables(coll, rows: list[list[int]], rank: int) -> tuple[tuple[int, ...], list[int]]:
    shape = counts_shape(coll.kernel)
    static = coll.cuda.tables.ranks[rank].tolist()
    flat = [c for row in rows for c in row]
    eb = coll.kernel.input.type.element_type.bitwidth // 8
    return _runtime.counts_tables(list(shape.phases), coll.world, shape.row, flat, rank, eb, static,
                                  shape.input_elems, shape.output_elems, list(shape.buffer_elems))


def fits(coll, rows) -> bool:
    """Whether the counts fit the buffers, by the collective's own sizes."""
    full = coll.full_counts(rows)
    w = coll.world
    if coll.collective == "all_to_all_v":
        ins = [sum(full[r]) for r in range(w)]
        outs = [sum(full[s][r] for s in range(w)) for r in range(w)]
    elif coll.collective == "all_gather_v":
        ins, outs = full, [sum(full)] * w
    elif coll.collective == "all_reduce_v":
        ins = outs = [sum(full)] * w
    else:
        ins, outs = [sum(full)] * w, full
    return max(ins) <= coll.input_elems and max(outs) <= coll.output_elems


@pytest.mark.parametrize("lowering", LOWERINGS)
@pytest.mark.parametrize("world", [1, 2, 3, 5])
@pytest.mark.parametrize("name", list(V_FORMS))
def test_device_tables_are_the_bound_plan_s_tables(name, world, lowering):
    coll = compile_device_counts(name, world, "f32", V_FORMS[name], input_elems=96, output_elems=96,
                                 lowering=lowering)
    rng = random.Random(world * 31 + len(lowering))
    checked = 0
    for trial in range(12):
        rows = rows_of(name, world, rng, most=24 // max(1, world - 2), zeros=0.3 if trial % 3 else 0.0)
        if trial == 0:
            rows = [[0] * len(r) for r in rows]
        if not fits(coll, rows):
            continue
        reference = build_tables(coll.kernel, phase_states(coll.kernel, world, coll.full_counts(rows)),
                                 counted=False)
        for rank in range(world):
            problem, words = device_tables(coll, rows, rank)
            assert problem[0] == 0, f"rank {rank}: {ERRORS[problem[0]]} {problem}"
            want = reference.ranks[rank].tolist()
            # Global words differ by design: the kernel's are bounds and offsets.
            assert words[abi.GLOBAL_WORDS:] == want[abi.GLOBAL_WORDS:], f"rank {rank}, counts {rows}"
            assert words[abi.PHASE_COUNT] == want[abi.PHASE_COUNT]
            assert words[abi.COUNTER_STRIDE] >= want[abi.COUNTER_STRIDE]
            assert len(words) <= words[abi.TABLE_CAPACITY]
        checked += 1
    assert checked >= 6


@pytest.mark.parametrize("lowering", LOWERINGS[:2])
def test_counts_that_do_not_fit_are_refused_alike_on_every_rank(lowering):
    coll = compile_device_counts("all_to_all_v", 3, "f32", input_elems=10, output_elems=12, lowering=lowering)
    cases = {
        "Negative": [[1, -2, 0], [0, 0, 0], [0, 0, 0]],
        "Input": [[4, 4, 3], [0, 0, 0], [0, 0, 0]],  # rank 0 sends 11 of 10
        "Output": [[0, 6, 0], [0, 0, 0], [0, 7, 0]],  # rank 1 receives 13 of 12
    }
    for error, rows in cases.items():
        answers = {tuple(device_tables(coll, rows, r)[0]) for r in range(3)}
        assert len(answers) == 1, answers
        code, rank, need, have = answers.pop()
        assert ERRORS[code] == error
        assert (rank, need, have) == {"Negative": (0, -2, 0), "Input": (0, 11, 10), "Output": (1, 13, 12)}[error]


def test_units_that_outgrow_a_staging_slot_or_packet_region_are_refused():
    for lowering, padded in (("regime=latency", 4 + 4), ("regime=throughput chunk-bytes=64", 3)):
        coll = compile_device_counts("all_to_all_v", 3, "bf16", input_elems=12, output_elems=12, lowering=lowering)
        shape = counts_shape(coll.kernel)
        # Rank 0's units: (0, 1) and (0, 2) of 3 elements, a packet of 4 bf16 each.
        rows = [[1, 3, 3], [0, 0, 0], [0, 0, 0]]
        static = coll.cuda.tables.ranks[0].tolist()
        for elems, code in ((padded, 0), (padded - 1, abi.COUNTS_ERRORS["Buffer"])):
            problem, _ = _runtime.counts_tables(list(shape.phases), 3, 3, [c for r in rows for c in r], 0, 2, static,
                                                12, 12, [elems])
            assert problem[0] == code, (lowering, elems, problem)


@pytest.mark.parametrize("lowering", LOWERINGS[:2])
@pytest.mark.parametrize("name", list(V_FORMS))
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_100"])
def test_device_counts_kernels_compile_for_every_generation(arch, name, lowering, tmp_path, monkeypatch):
    monkeypatch.setenv("PURLIN_CACHE_DIR", str(tmp_path))
    coll = compile_device_counts(name, 4, "bf16", "sum" if V_FORMS[name] else None, input_elems=1024,
                                 output_elems=1024, arch=arch, lowering=lowering)
    assert coll.cuda.cubin()[:4] == b"\x7fELF"


def test_a_kernel_with_static_counts_has_no_counts_prologue():
    coll = compile_device_counts("all_gather_v", 2, "f32", input_elems=8, output_elems=16)
    bound = coll.bind_collective([3, 5])
    assert bound.plan == coll.bind([3, 5])
    assert bound.cuda.source().count_words == 0 and bound.cuda.count_words == 0
    assert "device_counts" not in bound.cuda.source().text
    assert coll.cuda.source().count_words == coll.count_words == 1 and "device_counts<1>" in coll.cuda.source().text


def test_device_counts_need_bounded_buffers_and_direct_phases():
    from purlin.coll.builder import CollectiveSpec
    from purlin.compile import _kernel

    spec = CollectiveSpec("all_to_all_v", 2, "f32", counts=[[0, 0], [0, 0]], dynamic=True)
    unbounded = _kernel("all_to_all_v", spec.build_module((-1, 8)), "sm_90", "")
    with pytest.raises(CodegenError, match="device counts need a static input size"):
        emit_cuda(unbounded)
    with pytest.raises(CodegenError, match="device counts need a kernel with a counts operand"):
        emit_cuda(compile_collective("all_gather_v", 2, "f32", None, counts=[1, 2]).cuda.kernel, device_counts=True)
    with pytest.raises(ValueError, match="not a V collective"):
        compile_device_counts("all_reduce", 2, "f32", "sum", input_elems=4, output_elems=4)


def test_tables_too_large_for_shared_memory_are_a_diagnostic():
    coll = compile_device_counts("all_to_all_v", 8, "f32", input_elems=1 << 20, output_elems=1 << 20,
                                 lowering="regime=throughput chunk-bytes=64")
    with pytest.raises(ProgramError, match="words, more than the .* a block holds in shared memory"):
        _ = coll.cuda.tables


def test_more_counts_than_a_block_gathers_are_a_diagnostic():
    coll = compile_device_counts("all_to_all_v", 33, "f32", input_elems=33, output_elems=33)
    with pytest.raises(ProgramError, match="device counts of world 33 are 1089 words, more than the 1024"):
        coll.cuda.source()


def test_tables_past_32_bit_indices_are_refused(monkeypatch):
    """The device library indexes table words with ints: a rank's tables
    longer than that bound are a TableError, not wrapped indices."""
    from purlin.cuda import tables

    coll = compile_collective("all_gather", 4, "bf16", None, 1024, arch="sm_90")
    words = len(coll.cuda.tables.ranks[0])
    kernel = coll.cuda.kernel
    states = phase_states(kernel, 4, None)
    assert len(build_tables(kernel, states).ranks[0]) == words
    monkeypatch.setattr(tables, "MAX_TABLE_WORDS", words - 1)
    with pytest.raises(tables.TableError, match=f"rank 0's tables take {words} words; the kernel indexes at most"):
        build_tables(kernel, states)


@pytest.mark.parametrize("name", ["all_gather", "all_to_all", "reduce_scatter"])
def test_packet_phases_past_32_bit_pieces_are_refused(name, monkeypatch):
    """packets.cuh's spread counts a phase's (unit or group, packet) pieces
    with ints: a rank moving more is a TableError naming the phase."""
    from purlin.cuda import tables

    coll = compile_collective(name, 4, "bf16", "sum" if "reduce" in name else None, 1024, arch="sm_90",
                              lowering="regime=latency")
    kernel = coll.cuda.kernel
    states = phase_states(kernel, 4, None)
    units = max(sum(max(1, -(-u.size * 2 // 8)) for u in s.plan.units[0]) for s in states.values())
    groups = max(sum(max(1, -(-g.size * 2 // 8)) for g in s.plan.groups[0]) for s in states.values())
    monkeypatch.setattr(tables, "MAX_PACKET_PIECES", max(units, groups))
    build_tables(kernel, states)
    monkeypatch.setattr(tables, "MAX_PACKET_PIECES", max(units, groups) - 1)
    with pytest.raises(tables.TableError, match=rf"phase '\w+': rank 0 moves {max(units, groups)} packets; the "
                                                r"kernel counts at most"):
        build_tables(kernel, states)


def test_the_largest_packet_buffer_fits_32_bit_pieces():
    """A packet window (snac.buffer) holds at most MAX_BUFFER_BYTES in two halves: the pieces
    one phase of a rank moves stay within the bound spread counts to, so the refusal above
    guards the two limits against each other."""
    from purlin.cuda.tables import MAX_PACKET_PIECES
    from purlin.snac.protocol import PACKET_BYTES
    from purlin.snac.vocabulary import MAX_BUFFER_BYTES

    assert MAX_BUFFER_BYTES // 2 // PACKET_BYTES <= MAX_PACKET_PIECES
