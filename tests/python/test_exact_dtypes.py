"""The dtypes that reduce exactly (i8, ui8, i32, ui32, i64, ui64) and f64,
through every level and the CPU backend (the CUDA backend where a GPU is):
integer results equal the reference bit for bit, including wrap-around."""

import numpy as np
import pytest

from purlin.compile import compile_plan
from purlin.dtypes import INTEGER_DTYPES
from purlin.levels.table import LEVELS
from purlin.testing.cases import Case
from purlin.testing.data import compare

EXACT = (*INTEGER_DTYPES, "f64")
RUNS = [("coll", {}), ("snac", {}), ("atom", {}), ("plan", {}), ("plan", {"backend": "cpu"})]


def run(case, level, options, seed=0):
    args = case.make_args(seed)
    want = case.expected(args)
    LEVELS[level](case.build_module(), args, world=case.world, seed=seed, options=options)
    mismatch = compare(args[1], want, case.dtype, case.op, case.contributions, 8.0, "%out")
    assert mismatch is None, f"{case} at {level} {options}: {mismatch}"


@pytest.mark.parametrize("level, options", RUNS, ids=["coll", "snac", "atom", "plan", "cpu"])
@pytest.mark.parametrize("dtype", EXACT)
def test_every_exact_dtype_through_every_level(dtype, level, options):
    for op in ("sum", "prod", "max", "min") + (("xor",) if dtype != "f64" else ()):
        run(Case("all_reduce", 3, dtype, op, 11), level, options, seed=len(op))
    run(Case("reduce_scatter", 3, dtype, "sum", 5), level, options)
    run(Case("all_gather", 3, dtype, None, 5), level, options)


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise_reductions_on_the_cpu_backend(op):
    run(Case("all_reduce", 4, "ui32", op, 37), "plan", {"backend": "cpu"}, seed=2)


def test_integer_sums_and_products_wrap_as_twos_complement():
    from purlin.runtime import Communicator

    plan = compile_plan("all_reduce", world=2, dtype="i8", op="sum", count=2)
    comm = Communicator(plan, backend="cpu")
    outs = [np.zeros(2, np.int8) for _ in range(2)]
    comm.run([np.array([100, -128], np.int8), np.array([100, -1], np.int8)], outs)
    assert [o.tolist() for o in outs] == [[-56, 127]] * 2
    plan = compile_plan("all_reduce", world=2, dtype="ui64", op="prod", count=1)
    outs = [np.zeros(1, np.uint64) for _ in range(2)]
    Communicator(plan, backend="cpu").run([np.array([1 << 40], np.uint64)] * 2, outs)
    assert outs[0][0] == 0 and outs[1][0] == 0  # 2^80 mod 2^64


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise_reductions_need_integers(op):
    from purlin.coll.builder import SpecError

    with pytest.raises(SpecError, match=f"'{op}' combines bits and takes an integer dtype"):
        Case("all_reduce", 2, "f32", op, 4)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", EXACT)
@pytest.mark.parametrize("lowering", ["regime=latency", "regime=throughput blocks=16"])
def test_exact_dtypes_on_one_gpu(dtype, lowering):
    runtime = pytest.importorskip("purlin.runtime")
    if runtime.default_backend() != "cuda":
        pytest.skip("needs the CUDA backend and a GPU")
    for op in ("sum", "max") + (("xor",) if dtype != "f64" else ()):
        case = Case("all_reduce", 4, dtype, op, 1000)
        run(case, "plan", {"backend": "cuda", "devices": [0] * 4, "lowering": lowering})
