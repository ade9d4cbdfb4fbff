"""In-place collectives and overlapping buffers, on the CPU backend (the same
checks guard the CUDA backend; tests/python/runtime/test_runtime_cuda.py runs the
in-place forms on GPUs): all_reduce lowered in place, all_gather into the
rank's own output slice and reduce_scatter into its own input slice are
right; every other overlap is refused before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

from purlin.coll.builder import SpecError
from purlin.compile import compile_plan
from purlin.runtime import Communicator
from purlin.runtime.aliasing import AliasingError

WORLD = 4
N = 1000
LOWERINGS = ["regime=latency", "regime=throughput chunk-bytes=256 slots=2",
             "regime=throughput strategy=composed chunk-bytes=256 slots=2",
             # In place between the ranks' buffers: composed, and the one-shot that falls back to staging.
             "regime=throughput symmetric=true strategy=composed", "regime=throughput symmetric=true"]


def values(rank: int, n: int, salt: int = 0) -> np.ndarray:
    """Small integers: every sum of them is exact in f32."""
    return (((np.arange(n) * 7 + rank * 5 + salt) % 9) - 4).astype(np.float32)


# World 1: the rank's own contribution is all its packet window holds (and
# nothing is composed: no slice has several receivers).
@pytest.mark.parametrize("lowering, world", [(lowering, WORLD) for lowering in LOWERINGS]
                         + [(lowering, 1) for lowering in LOWERINGS if "composed" not in lowering])
def test_all_reduce_in_place_over_repeated_calls(lowering, world):
    plan = compile_plan("all_reduce", world, "f32", "sum", N, lowering=lowering, in_place=True)
    assert plan.in_place
    comm = Communicator(plan, "cpu", name="all_reduce")
    bufs = [values(r, N) for r in range(world)]
    expected = sum(bufs)
    for _ in range(3):
        comm.run(bufs, bufs)
        for b in bufs:
            np.testing.assert_array_equal(b, expected)
        expected = expected * world


@pytest.mark.parametrize("lowering", [*LOWERINGS[:2], LOWERINGS[4]])
def test_all_gather_into_the_rank_s_own_output_slice(lowering):
    plan = compile_plan("all_gather", WORLD, "f32", None, N // WORLD, lowering=lowering)
    n = N // WORLD
    outs = [np.full(WORLD * n, np.nan, np.float32) for _ in range(WORLD)]
    for r, out in enumerate(outs):
        out[r * n:(r + 1) * n] = values(r, n)
    ins = [out[r * n:(r + 1) * n] for r, out in enumerate(outs)]
    Communicator(plan, "cpu", name="all_gather").run(ins, outs)
    expected = np.concatenate([values(r, n) for r in range(WORLD)])
    for out in outs:
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("lowering", [*LOWERINGS[:2], LOWERINGS[4]])
def test_reduce_scatter_into_the_rank_s_own_input_slice(lowering):
    n = N // WORLD
    plan = compile_plan("reduce_scatter", WORLD, "f32", "sum", n, lowering=lowering)
    ins = [values(r, WORLD * n) for r in range(WORLD)]
    expected = sum(ins)
    outs = [x[r * n:(r + 1) * n] for r, x in enumerate(ins)]
    Communicator(plan, "cpu", name="reduce_scatter").run(ins, outs)
    for r, out in enumerate(outs):
        np.testing.assert_array_equal(out, expected[r * n:(r + 1) * n])


def test_inputs_may_be_shared_between_ranks():
    plan = compile_plan("all_reduce", WORLD, "f32", "sum", N)
    shared = values(0, N)
    outs = [np.zeros(N, np.float32) for _ in range(WORLD)]
    Communicator(plan, "cpu", name="all_reduce").run([shared] * WORLD, outs)
    for out in outs:
        np.testing.assert_array_equal(out, WORLD * shared)


def test_all_reduce_not_lowered_in_place_refuses_one_buffer():
    plan = compile_plan("all_reduce", WORLD, "f32", "sum", N, lowering="regime=throughput")
    bufs = [values(r, N) for r in range(WORLD)]
    with pytest.raises(AliasingError, match=r"all_reduce: rank 0's input and output overlap where the call still "
                                            r"reads the input: input bytes \[0, 4000\) are read.* lowered in place: "
                                            r"compile_plan\(..., in_place=True\)"):
        Communicator(plan, "cpu", name="all_reduce").run(bufs, bufs)


@pytest.mark.parametrize("name, op", [("all_gather", None), ("reduce_scatter", "sum"), ("all_to_all_v", None)])
def test_in_place_needs_input_and_output_of_one_size(name, op):
    counts = [[1, 2], [3, 0]] if name == "all_to_all_v" else None
    with pytest.raises(SpecError, match=f"{name}: in_place=True makes the input and output one buffer, but they hold"):
        compile_plan(name, 2, "f32", op, 0 if counts else 8, counts=counts, in_place=True)


def test_pass_options_are_named_as_a_pipeline_spells_them():
    from purlin.compile.pipeline import pipeline

    with pytest.raises(ValueError, match='expected arguments .*"chunk-bytes", .*"ranks-per-device"'):
        pipeline("convert-coll-to-snac{chunkbytes=4}")


def test_all_to_all_in_one_buffer_is_refused():
    plan = compile_plan("all_to_all", WORLD, "f32", None, N // WORLD)
    bufs = [values(r, N) for r in range(WORLD)]
    with pytest.raises(AliasingError, match="rank 0's input and output overlap where the call still reads"):
        Communicator(plan, "cpu", name="all_to_all").run(bufs, bufs)


def test_a_rank_s_output_over_another_rank_s_input_is_refused():
    plan = compile_plan("all_reduce", 2, "f32", "sum", N)
    block = np.zeros(3 * N, np.float32)
    ins = [block[:N], block[N:2 * N]]
    outs = [block[N // 2:N // 2 + N], block[2 * N:]]  # rank 0's output covers half of rank 1's input
    with pytest.raises(AliasingError, match="all_reduce: the input of rank 1 overlaps the output of rank 0|"
                                            "the output of rank 0 overlaps the input of rank 1"):
        Communicator(plan, "cpu", name="all_reduce").run(ins, outs)


def test_in_place_all_to_all_does_not_lower():
    from xdsl.utils.exceptions import PassFailedException

    with pytest.raises(PassFailedException, match="output slice .* covers its input slice .* may still be on "
                                                  "its way to a peer"):
        compile_plan("all_to_all", WORLD, "f32", None, N // WORLD, in_place=True)
