"""Translation validation at the snac level: the protocol that
convert-coll-to-snac derives, executed rank by rank under the seeded
scheduler, agrees with the independent numpy reference of each named
collective, for every strategy the pass offers."""

import pytest
from collective_cases import (
    DYNAMIC_PAIRS,
    LOWERINGS,
    OPS,
    PAIRS,
    REDUCING_PAIRS,
    SIZES,
    VARIABLE_PAIRS,
    WORLDS,
    check_level,
    default_op,
    deterministic_module,
    make_case,
    order_sensitive_args,
)
from xdsl.utils.exceptions import PassFailedException

from purlin.coll.builder import COLLECTIVES
from purlin.compile.pipeline import lower, pipeline_spec
from purlin.dtypes import DTYPE_NAMES
from purlin.levels.base import SimError
from purlin.levels.snac import run
from purlin.levels.table import LEVELS
from purlin.snac import dialect as snac
from purlin.snac.protocol import PhasePlan
from purlin.testing.cases import Case
from purlin.testing.data import compare


def check(case, strategy, seed=0, calls=1, module=None):
    check_level(run, case, strategy, seed, {"lowering": LOWERINGS[strategy], "calls": calls}, module)


@pytest.mark.parametrize("count", SIZES)
@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("name, strategy", PAIRS)
def test_matches_reference(name, strategy, world, count):
    case = make_case(name, world, "bf16", default_op(name), count, seed=world * 1000 + count)
    check(case, strategy, seed=count)


@pytest.mark.parametrize("count", (0, 1, 37))
@pytest.mark.parametrize("name, strategy", PAIRS)
def test_world_16(name, strategy, count):
    case = make_case(name, 16, "f16", default_op(name), count, seed=16)
    check(case, strategy, seed=count)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("world", (3, 8))
@pytest.mark.parametrize("name, strategy", PAIRS)
def test_dtypes_match_reference(name, strategy, world, dtype):
    case = make_case(name, world, dtype, default_op(name), 37, seed=world)
    check(case, strategy, seed=world)


# World 16 only for bf16: it is the slow one; no prod for fp8.
REDUCTION_CASES = [
    (world, op, dtype)
    for world, dtypes in ((3, ("bf16", "f32", "fp8e4m3")), (16, ("bf16",)))
    for op in OPS[1:]
    for dtype in dtypes
    if not (op == "prod" and dtype.startswith("fp8"))
]


@pytest.mark.parametrize("world, op, dtype", REDUCTION_CASES)
@pytest.mark.parametrize("name, strategy", REDUCING_PAIRS)
def test_reductions_match_reference(name, strategy, world, op, dtype):
    check(make_case(name, world, dtype, op, 37, seed=world), strategy, seed=world)


@pytest.mark.parametrize("world", (2, 3, 8, 16))
@pytest.mark.parametrize("name, strategy", DYNAMIC_PAIRS)
def test_dynamic_counts_match_reference(name, strategy, world):
    case = make_case(name, world, "bf16", default_op(name), 23, seed=world, dynamic=True)
    assert 0 in case.flat_counts(), "the V cases must include zero-size ranks"
    check(case, strategy, seed=world)


@pytest.mark.parametrize("name, strategy", VARIABLE_PAIRS)
def test_v_forms_with_one_rank_holding_everything(name, strategy):
    op = default_op(name)
    if COLLECTIVES[name].matrix:
        counts = [[0, 0, 45, 0]] * 4
    else:
        counts = [0, 0, 45, 0]
    check(Case(name, 4, "f32", op, counts=counts), strategy)
    zeros = [[0] * 4] * 4 if COLLECTIVES[name].matrix else [0] * 4
    check(Case(name, 4, "f32", op, counts=zeros), strategy)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(
    "name, strategy",
    [("all_reduce", "composed"), ("all_reduce", "latency"), ("reduce_scatter_v", "direct"),
     ("all_to_all_v", "copy"), ("all_gather", "copy")],
)
def test_scheduler_seeds(name, strategy, seed):
    # Each seed is another interleaving of the ranks' roles; inputs stay fixed.
    case = make_case(name, 4, "bf16", default_op(name), 37, seed=4)
    check(case, strategy, seed=seed)


@pytest.mark.parametrize("world", (3, 8))
@pytest.mark.parametrize("name, strategy", PAIRS)
def test_repeated_calls(name, strategy, world):
    # Three calls in a row: epochs advance and the staging halves alternate,
    # so a stale flag or a half still being read would show here.
    case = make_case(name, world, "bf16", default_op(name), 37, seed=world)
    check(case, strategy, seed=1, calls=3)


def test_pairs_cover_every_collective_and_strategy():
    assert {s for _, s in PAIRS + DYNAMIC_PAIRS} == set(LOWERINGS)
    assert {n for n, _ in PAIRS} == set(COLLECTIVES)


# -- cyclic staging ---------------------------------------------------------------


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("name, strategy", [(n, s) for n, s in PAIRS if "latency" not in s and "symmetric" not in s])
def test_sizes_go_round_the_slots(name, strategy, world):
    # The size-37 cases above only test slot reuse if a producer has more
    # units than a half has slots.
    case = make_case(name, world, "bf16", default_op(name), 37, seed=world * 1000 + 37)
    module = lower(case.build_module(), pipeline_spec("snac", lowering=LOWERINGS[strategy], verify=False))
    buffers = [op for op in module.walk() if isinstance(op, snac.BufferOp)]
    assert buffers and all(b.slots.value.data == 2 for b in buffers)
    units = [
        PhasePlan(world, op.src_layout.to_layout(), op.dst_layout.to_layout(),
                  op.consume.kind is not None, op.chunk.value.data,
                  keep_unread=op.source.data == snac.PhaseSource.OUTPUT).max_units
        for op in module.walk() if isinstance(op, snac.PhaseOp)
    ]
    assert max(units) > 2, units


# -- deterministic reductions ------------------------------------------------------


@pytest.mark.parametrize("seed", (0, 3))
@pytest.mark.parametrize("name, strategy", REDUCING_PAIRS)
def test_deterministic_reductions_are_bit_exact(name, strategy, seed):
    case = make_case(name, 8, "f32", "sum", 37, seed=8)
    args = order_sensitive_args(case)
    expected = case.expected(args)
    options = {"lowering": LOWERINGS[strategy]}
    run(deterministic_module(case), args, world=8, seed=seed, options=options)
    # op None: bit for bit, as the reference reduces in rank order too.
    mismatch = compare(args[1], expected, "f32", None, what="%out")
    assert mismatch is None, f"{case} {strategy} deterministic: {mismatch}"


@pytest.mark.parametrize("strategy", ["direct", "composed"])
def test_without_deterministic_the_same_bits_too(strategy):
    # Every reduction combines in rank order: the flag is not needed for
    # bit-exact results (it keeps the multicast switch out; see test_atom_level).
    case = make_case("all_reduce", 8, "f32", "sum", 37, seed=8)
    args = order_sensitive_args(case)
    expected = case.expected(args)
    run(case.build_module(), args, world=8, options={"lowering": LOWERINGS[strategy]})
    assert compare(args[1], expected, "f32", None) is None


def test_deterministic_flag_reaches_every_reducing_phase():
    case = make_case("all_reduce", 4, "f32", "sum", 8)
    module = lower(deterministic_module(case), pipeline_spec("snac", lowering=LOWERINGS["composed"], verify=False))
    phases = {op.sym_name.data: op for op in module.walk() if isinstance(op, snac.PhaseOp)}
    assert phases["reduce"].deterministic is not None


# -- the level itself ---------------------------------------------------------------


def test_registry_has_snac():
    assert LEVELS["snac"] is run


def test_composed_is_refused_where_no_slice_is_shared():
    case = make_case("reduce_scatter", 4, "bf16", "sum", 8)
    with pytest.raises(PassFailedException, match="composed strategy needs a slice that several ranks receive"):
        run(case.build_module(), case.make_args(0), world=4,
            options={"lowering": LOWERINGS["composed"]})


def test_composed_is_refused_for_counts_read_at_run_time():
    case = make_case("all_reduce_v", 4, "bf16", "sum", 8, dynamic=True)
    with pytest.raises(PassFailedException, match=r"the composed strategy cannot take counts read on the device: "
                                                  r"their prologue builds the tables of direct phases only"):
        run(case.build_module(), case.make_args(0), world=4,
            options={"lowering": LOWERINGS["composed"]})


def test_wrong_world_is_a_clear_error():
    case = make_case("all_gather", 4, "bf16", None, 3)
    args = case.make_args(0)
    with pytest.raises(SimError, match="is for world 4, run on 3 ranks"):
        run(case.build_module(), [a[:3] for a in args], world=3)
