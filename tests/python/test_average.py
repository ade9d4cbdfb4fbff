"""avg (NCCL's ncclAvg): the sum of a slice's contributions divided once by
their number, in the accumulator's precision, through every level and the CPU
backend (the CUDA backend where a GPU is), equal to the reference bit for bit;
integers take no average, at the builder, the verifier and the plan decoder."""

import numpy as np
import pytest

from purlin.coll import reference as ref
from purlin.coll.builder import SpecError
from purlin.compile import compile_plan
from purlin.dtypes import FLOAT_DTYPES, INTEGER_DTYPES, numpy_dtype
from purlin.levels.table import LEVELS
from purlin.testing.cases import Case, counts_for

RUNS = [("coll", {}), ("snac", {}), ("atom", {}), ("plan", {}), ("plan", {"backend": "cpu"})]
REDUCING = ("all_reduce", "reduce_scatter", "reduce_scatter_v")


def case_of(collective: str, world: int, dtype: str, count: int) -> Case:
    counts = counts_for(collective, world, count * world, seed=world) if collective.endswith("_v") else None
    return Case(collective, world, dtype, "avg", 0 if counts else count, counts=counts)


def run_exactly(case: Case, level: str, options: dict, seed: int = 0) -> None:
    args = case.make_args(seed)
    want = case.expected(args)
    LEVELS[level](case.build_module(), args, world=case.world, seed=seed, options=options)
    for r, (got, exp) in enumerate(zip(args[1], want)):
        assert np.array_equal(got.view(np.uint8), exp.view(np.uint8)), (
            f"{case} at {level} {options}: rank {r} got {got[:8]}, expected {exp[:8]}")


def test_the_reference_divides_once_after_summing_in_the_accumulator():
    # 1 + 1 + 2 = 4, / 3 rounded once to bf16; averaging pairwise would differ.
    bf16 = numpy_dtype("bf16")
    parts = [np.array([1.0], bf16), np.array([1.0], bf16), np.array([2.0], bf16)]
    assert ref.reduce_parts(parts, "avg")[0] == np.float32(4.0 / 3.0).astype(bf16)
    f64 = [np.array([0.1]), np.array([0.2]), np.array([0.4])]
    assert ref.reduce_parts(f64, "avg")[0] == (0.1 + 0.2 + 0.4) / 3
    got = ref.all_reduce([np.array([2.0, -6.0], np.float32), np.array([4.0, 0.0], np.float32)], "avg")
    assert [g.tolist() for g in got] == [[3.0, -3.0]] * 2


@pytest.mark.parametrize("level, options", RUNS, ids=["coll", "snac", "atom", "plan", "cpu"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_average_through_every_level(dtype, level, options):
    for collective in REDUCING:
        for world in (2, 3, 5):
            run_exactly(case_of(collective, world, dtype, 7), level, options, seed=world)


@pytest.mark.parametrize("lowering", ["regime=latency", "regime=throughput", "regime=throughput chunk-bytes=64"])
def test_average_in_each_regime_on_the_cpu_backend(lowering):
    for dtype in ("bf16", "f32", "f64"):
        run_exactly(case_of("all_reduce", 4, dtype, 333), "plan", {"backend": "cpu", "lowering": lowering})


def test_the_cpu_backend_divides_the_f32_sum_once():
    from purlin.runtime import Communicator

    plan = compile_plan("all_reduce", world=3, dtype="bf16", op="avg", count=1)
    bf16 = numpy_dtype("bf16")
    outs = [np.zeros(1, bf16) for _ in range(3)]
    Communicator(plan, backend="cpu").run([np.array([v], bf16) for v in (1.0, 1.0, 2.0)], outs)
    assert [float(o[0]) for o in outs] == [float(np.float32(4 / 3).astype(bf16))] * 3


@pytest.mark.parametrize("dtype", INTEGER_DTYPES)
def test_integers_take_no_average(dtype):
    with pytest.raises(SpecError, match=f"'avg' divides and takes a floating-point dtype, got {dtype}"):
        compile_plan("all_reduce", world=2, dtype=dtype, op="avg", count=4)


def test_both_plan_readers_refuse_an_average_of_integers():
    import dataclasses

    from purlin import _runtime
    from purlin import plan as P

    plan = compile_plan("all_reduce", world=2, dtype="i32", op="sum", count=4, lowering="regime=latency")
    averaged = dataclasses.replace(plan, programs=[
        [[dataclasses.replace(i, redop=P.RedOp.AVG) if i.op == P.Op.REDUCE else i for i in role] for role in rank]
        for rank in plan.programs])
    assert averaged != plan
    words = averaged.encode()
    with pytest.raises(P.PlanError, match="'avg' divides and takes a floating-point dtype, got i32"):
        P.decode(words)
    with pytest.raises(ValueError, match="average of an integer dtype"):
        _runtime.CpuCommunicator(_runtime.decode(words))


@pytest.mark.gpu
@pytest.mark.parametrize("lowering", ["regime=latency", "regime=throughput blocks=16"])
@pytest.mark.parametrize("dtype", ["bf16", "f32", "f64"])
def test_average_on_one_gpu(dtype, lowering):
    runtime = pytest.importorskip("purlin.runtime")
    if runtime.default_backend() != "cuda":
        pytest.skip("needs the CUDA backend and a GPU")
    for collective in REDUCING:
        options = {"backend": "cuda", "devices": [0] * 3, "lowering": lowering}
        run_exactly(case_of(collective, 3, dtype, 1000), "plan", options)
