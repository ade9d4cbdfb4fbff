"""snac-verify on programs the lowering produces, and on broken ones built from them."""

import pytest
from xdsl.utils.exceptions import PassFailedException

from purlin.compile.pipeline import lower, make_context, parse_module
from purlin.snac import dialect as snac
from purlin.snac import errors as snac_errors
from purlin.simulator.snac_verify import SnacVerifyPass

ALL_GATHER_V = """
func.func @f(%in: memref<8xf32>, %out: memref<12xf32>) {
  coll.all_gather_v %in, %out world 3 counts [8, 0, 4] : memref<8xf32>, memref<12xf32>
  func.return
}
"""


def _lowered(text: str, options: str = "regime=throughput chunk-bytes=8 slots=2"):
    return lower(parse_module(text), f"coll-expand,convert-coll-to-snac{{{options}}}")


def test_lowered_v_collective_verifies():
    SnacVerifyPass().apply(make_context(), _lowered(ALL_GATHER_V))


def test_local_advance_is_rejected_naming_each_rank():
    module = _lowered(ALL_GATHER_V)
    (program,) = [op for op in module.walk() if isinstance(op, snac.ProgramOp)]
    advance = next(op for op in program.body.block.ops if isinstance(op, snac.AdvanceOp))
    rank = next(op for op in program.body.block.ops if isinstance(op, snac.RankOp))
    # Advance by this rank's own unit count. snac-verify cuts slices to
    # slots + 1 units: 3 units on rank 0, none on rank 1, 2 on rank 2.
    local = snac.UnitsOp("exchange", rank.result)
    program.body.block.insert_op_before(local, advance)
    advance.operands = [local.result]
    with pytest.raises(PassFailedException) as err:
        SnacVerifyPass().apply(make_context(), module)
    msg = str(err.value)
    assert "epochs advance differently on different ranks" in msg
    assert "rank 0: 3, rank 1: 0, rank 2: 2" in msg


def test_dynamic_counts_are_verified_with_sample_counts():
    text = """
    func.func @f(%in: memref<16xf32>, %out: memref<16xf32>, %c: memref<4xi64>) {
      coll.reduce_scatter_v sum %in, %out world 4 counts %c : memref<16xf32>, memref<16xf32>, memref<4xi64>
      func.return
    }
    """
    SnacVerifyPass().apply(make_context(), _lowered(text))


def test_bad_options_are_diagnosed():
    with pytest.raises(PassFailedException, match="calls and seeds must be at least 1"):
        SnacVerifyPass(calls=0).apply(make_context(), _lowered(ALL_GATHER_V))


DYNAMIC_ALL_TO_ALL_V = """
func.func @f(%in: memref<12xf32>, %out: memref<12xf32>, %c: memref<3x3xi64>) {
  coll.all_to_all_v %in, %out world 3 counts %c : memref<12xf32>, memref<12xf32>, memref<3x3xi64>
  func.return
}
"""


@pytest.mark.parametrize("options", ["regime=throughput chunk-bytes=8 slots=2", "regime=latency"])
def test_counts_changing_from_call_to_call_move_each_call_s_data(options):
    import numpy as np

    from purlin.coll.reference import all_to_all_v
    from purlin.simulator.snac_machine import execute

    (program,) = [op for op in _lowered(DYNAMIC_ALL_TO_ALL_V, options).walk() if isinstance(op, snac.ProgramOp)]
    calls = [[[1, 2, 3], [0, 0, 4], [2, 2, 2]], [[0, 0, 0], [5, 0, 0], [0, 6, 0]], [[4, 0, 0], [0, 4, 0], [0, 0, 4]]]
    ins = [np.arange(12, dtype=np.float32) + 100 * r for r in range(3)]
    for seed in range(3):
        outs = [np.full(12, -1, np.float32) for _ in range(3)]
        execute(program, args={program.input: ins, program.output: outs}, counts_per_call=calls, calls=3, seed=seed)
        for r, want in enumerate(all_to_all_v(ins, calls[-1])):
            np.testing.assert_array_equal(outs[r][: len(want)], want)
    with pytest.raises(snac_errors.SnacExecutionError, match="3 calls need as many counts, got 2"):
        execute(program, counts_per_call=calls[:2], calls=3)
