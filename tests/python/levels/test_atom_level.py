"""Translation validation at the atom and plan levels: the Atom IR that
convert-snac-to-atom writes for each GPU generation, executed by the SNAC
scheduler (atom), and the plans atom-to-plan expands it into, executed by the
plan machine the way a runtime would (plan), agree with the independent numpy
reference of each named collective, for every strategy and generation."""

import collective_cases as cases
import pytest
from xdsl.dialects.func import ReturnOp

from purlin import plan as P
from purlin.atom import dialect as atom
from purlin.coll.builder import COLLECTIVES
from purlin.compile.pipeline import entry_function, lower, pipeline_spec
from purlin.conversion.atom_to_plan import build_plan
from purlin.dtypes import DTYPE_NAMES
from purlin.levels.atom import run_atom, run_plan
from purlin.levels.base import SimError
from purlin.levels.snac import arg_index, counts_of, run_programs
from purlin.levels.table import LEVELS
from purlin.simulator.plan_machine import PlanMachine
from purlin.snac import dialect as snac
from purlin.testing.cases import Case
from purlin.testing.data import compare

LEVEL_RUNNERS = {"atom": run_atom, "plan": run_plan}
ARCHS = ("sm_80", "sm_90", "sm_100")


def check(case, strategy, level, arch, seed=0, calls=1, module=None):
    options = {"lowering": cases.LOWERINGS[strategy], "calls": calls, "arch": arch}
    cases.check_level(LEVEL_RUNNERS[level], case, f"{strategy} {level} {arch}", seed, options, module)


@pytest.mark.parametrize("count", cases.SIZES)
@pytest.mark.parametrize("world", cases.WORLDS)
@pytest.mark.parametrize("name, strategy", cases.PAIRS)
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("level", LEVEL_RUNNERS)
def test_matches_reference(level, arch, name, strategy, world, count):
    case = cases.make_case(name, world, "bf16", cases.default_op(name), count, seed=world * 1000 + count)
    check(case, strategy, level, arch, seed=count)


# World 16: every pair at the plan level on one generation each (they take
# turns), and at the atom level on sm_90.
WORLD_16 = [("plan", ARCHS[k % 3], n, s) for k, (n, s) in enumerate(cases.PAIRS)] + [
    ("atom", "sm_90", n, s) for n, s in cases.PAIRS
]


@pytest.mark.parametrize("level, arch, name, strategy", WORLD_16)
def test_world_16(level, arch, name, strategy):
    case = cases.make_case(name, 16, "f16", cases.default_op(name), 37, seed=16)
    check(case, strategy, level, arch, seed=1)


@pytest.mark.parametrize("world", (3, 8))
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("name, strategy", cases.PAIRS)
@pytest.mark.parametrize("level", LEVEL_RUNNERS)
def test_dtypes_match_reference(level, name, strategy, dtype, world):
    # Generations take turns by dtype; f32 on sm_100 exercises packed f32x2.
    arch = {"f32": "sm_100", "bf16": "sm_80", "f16": "sm_90"}.get(dtype, ARCHS[world % 3])
    case = cases.make_case(name, world, dtype, cases.default_op(name), 37, seed=world)
    check(case, strategy, level, arch, seed=world)


REDUCTION_CASES = [
    (op, dtype)
    for op in cases.OPS[1:]
    for dtype in ("bf16", "f32", "fp8e4m3")
    if not (op == "prod" and dtype.startswith("fp8"))
]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("op, dtype", REDUCTION_CASES)
@pytest.mark.parametrize("name, strategy", cases.REDUCING_PAIRS)
def test_reductions_match_reference(name, strategy, op, dtype, arch):
    check(cases.make_case(name, 3, dtype, op, 37, seed=3), strategy, "plan", arch, seed=3)


@pytest.mark.parametrize("world", (2, 3, 8, 16))
@pytest.mark.parametrize("name, strategy", cases.DYNAMIC_PAIRS)
@pytest.mark.parametrize("level", LEVEL_RUNNERS)
def test_dynamic_counts_match_reference(level, name, strategy, world):
    case = cases.make_case(name, world, "bf16", cases.default_op(name), 23, seed=world, dynamic=True)
    assert 0 in case.flat_counts(), "the V cases must include zero-size ranks"
    check(case, strategy, level, ARCHS[world % 3], seed=world)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name, strategy", cases.VARIABLE_PAIRS)
@pytest.mark.parametrize("level", LEVEL_RUNNERS)
def test_v_forms_with_one_rank_holding_everything(level, name, strategy, arch):
    op = cases.default_op(name)
    matrix = COLLECTIVES[name].matrix
    counts = [[0, 0, 45, 0]] * 4 if matrix else [0, 0, 45, 0]
    check(Case(name, 4, "f32", op, counts=counts), strategy, level, arch)
    zeros = [[0] * 4] * 4 if matrix else [0] * 4
    check(Case(name, 4, "f32", op, counts=zeros), strategy, level, arch)
    if any(word in strategy for word in cases.DEVICE_COUNTS_REFUSE):
        return  # counts read at run time are refused (bound on the host: DYNAMIC_PAIRS)
    # The same counts bound at run time.
    check(Case(name, 4, "f32", op, counts=counts, dynamic=True), strategy, level, arch)
    check(Case(name, 4, "f32", op, counts=zeros, dynamic=True), strategy, level, arch)


@pytest.mark.parametrize("world", (3, 8))
@pytest.mark.parametrize("name, strategy", cases.PAIRS)
@pytest.mark.parametrize("level", LEVEL_RUNNERS)
def test_repeated_calls(level, name, strategy, world):
    # Three calls in a row: epochs advance and the staging halves alternate,
    # so a stale flag or a half still being read would show here.
    case = cases.make_case(name, world, "bf16", cases.default_op(name), 37, seed=world)
    check(case, strategy, level, ARCHS[world % 3], seed=1, calls=3)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "name, strategy",
    [("all_reduce", "composed"), ("all_reduce", "latency"), ("reduce_scatter_v", "direct"),
     ("all_to_all_v", "copy")],
)
def test_plan_scheduler_seeds(name, strategy, seed):
    # Each seed is another interleaving of the plan's (rank, role) programs.
    case = cases.make_case(name, 4, "bf16", cases.default_op(name), 37, seed=4)
    check(case, strategy, "plan", "sm_90", seed=seed, calls=2)


# -- deterministic reductions ------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name, strategy", cases.REDUCING_PAIRS)
def test_deterministic_reductions_are_bit_exact_in_the_plan(name, strategy, arch):
    case = cases.make_case(name, 8, "f32", "sum", 37, seed=8)
    args = cases.order_sensitive_args(case)
    expected = case.expected(args)
    run_plan(cases.deterministic_module(case), args, world=8, seed=3,
             options={"lowering": cases.LOWERINGS[strategy], "arch": arch})
    mismatch = compare(args[1], expected, "f32", None, what="%out")
    assert mismatch is None, f"{case} {strategy} {arch} deterministic: {mismatch}"


# -- what each generation's plans use -------------------------------------------------


def plans(case, lowering, arch, multimem=False):
    module = lower(case.build_module(),
                  pipeline_spec("atom", lowering=lowering, arch=arch, multimem=multimem, verify=False))
    func = entry_function(module, None)
    kernels = [op for op in func.body.ops if isinstance(op, atom.KernelOp)]
    return func, kernels


def mechs(plan):
    return {(i.op, i.mech) for rank in plan.programs for role in rank for i in role}


@pytest.mark.parametrize("arch", ARCHS)
def test_mechanisms_by_generation(arch):
    # 16 KiB units: bulk staging from sm_90 on; consumers read peers through registers.
    case = cases.make_case("all_reduce", 2, "f32", "sum", 8192)
    _, (kernel,) = plans(case, "regime=throughput strategy=direct chunk-bytes=16384", arch)
    used = mechs(build_plan(kernel))
    stage = P.Mech.CP_ASYNC if arch == "sm_80" else P.Mech.BULK
    assert (P.Op.COPY, stage) in used
    assert (P.Op.REDUCE, P.Mech.VECTOR) in used
    assert not {m for _, m in used} & {P.Mech.MULTIMEM, P.Mech.COPY_ENGINE}
    if arch == "sm_100":
        reduces = [op for op in kernel.walk() if isinstance(op, atom.ReduceOp)]
        assert reduces and all(op.packed_f32x2 is not None and op.width.value.data == 32 for op in reduces)


# -- multimem: semantically a reduce -------------------------------------------------


def run_multimem(case, strategy, arch="sm_90", seed=0, calls=1):
    """The plan level with convert-snac-to-atom{multimem=true}: the plan
    machine reduces a multimem instruction like any other reduce."""
    args = case.make_args(seed)
    expected = case.expected(args)
    func, kernels = plans(case, cases.LOWERINGS[strategy], arch, multimem=True)
    assert kernels and all(k.multimem is not None for k in kernels)
    used = set()
    for op in func.body.ops:
        if isinstance(op, ReturnOp):
            break
        plan = build_plan(op, counts_of(func, op, args))
        used |= {m for _, m in mechs(plan)}
        machine = PlanMachine(plan)
        for call in range(calls):
            machine.run(args[arg_index(func, op.input, op)], args[arg_index(func, op.output, op)],
                        seed=seed + call)
    mismatch = compare(args[1], expected, case.dtype, case.op, case.contributions, 8.0, "%out")
    assert mismatch is None, f"{case} {strategy} multimem: {mismatch}"
    return used


MULTIMEM_CASES = [
    (n, s, dtype, op)
    for n, s in cases.REDUCING_PAIRS if not s.startswith(("latency", "symmetric"))
    for dtype, op in (("bf16", "sum"), ("bf16", "max"), ("f16", "min"), ("f32", "sum"))
]


@pytest.mark.parametrize("name, strategy, dtype, op", MULTIMEM_CASES)
def test_multimem_plans_run_on_the_plan_simulator(name, strategy, dtype, op):
    case = cases.make_case(name, 4, dtype, op, 37, seed=4)
    used = run_multimem(case, strategy, calls=2)
    # The switch reduces slices with one reducer: not a direct all_reduce's,
    # where every rank reduces every slice (and must get the same bits).
    assert (P.Mech.MULTIMEM in used) == (name not in ("all_reduce", "all_reduce_v") or strategy != "direct")


@pytest.mark.parametrize("strategy", ["latency", "latency-composed", "symmetric", "symmetric-direct"])
def test_multimem_is_not_used_on_packets_or_in_place(strategy):
    # Packets carry their flags inline, and the ranks' own buffers have no
    # multicast object: multimem.ld_reduce can read neither.
    used = run_multimem(cases.make_case("all_reduce", 3, "bf16", "sum", 37), strategy)
    assert P.Mech.MULTIMEM not in used


def test_multimem_phases_stage_the_local_contribution():
    case = cases.make_case("reduce_scatter", 4, "bf16", "sum", 37)
    _, kernels = plans(case, cases.LOWERINGS["direct"], "sm_90", multimem=True)
    (kernel,) = kernels
    phases = [op for op in kernel.body.block.ops if isinstance(op, snac.PhaseOp)]
    assert phases and all(p.stage_local is not None for p in phases)
    plan = build_plan(kernel)
    reduces = [i for body in plan.programs[1] for i in body if i.op == P.Op.REDUCE]
    assert reduces and all({s.space for s in i.srcs} == {P.Space.STAGING} for i in reduces)
    assert all(len({(s.slot, s.offset) for s in i.srcs}) == 1 for i in reduces)


@pytest.mark.parametrize("dtype, op", [("f32", "max"), ("bf16", "prod"), ("fp8e4m3", "sum")])
def test_multimem_falls_back_where_the_switch_cannot_reduce(dtype, op):
    used = run_multimem(cases.make_case("all_reduce", 3, dtype, op, 37), "direct", arch="sm_100")
    assert P.Mech.MULTIMEM not in used


def test_multimem_at_the_atom_level():
    case = cases.make_case("all_reduce", 3, "bf16", "sum", 37, seed=3)
    args = case.make_args(0)
    expected = case.expected(args)
    func, _ = plans(case, cases.LOWERINGS["composed"], "sm_90", multimem=True)
    run_programs(func, args, world=3, seed=0, calls=2)
    assert compare(args[1], expected, "bf16", "sum", case.contributions, 8.0) is None


# -- the levels themselves -------------------------------------------------------------


def test_registry_has_atom_and_plan():
    assert LEVELS["atom"] is run_atom
    assert LEVELS["plan"] is run_plan


@pytest.mark.parametrize("level", LEVEL_RUNNERS)
def test_wrong_world_is_a_clear_error(level):
    case = cases.make_case("all_gather", 4, "bf16", None, 3)
    args = case.make_args(0)
    with pytest.raises(SimError, match="is for world 4, run on 3 ranks"):
        LEVEL_RUNNERS[level](case.build_module(), [a[:3] for a in args], world=3, options={})


@pytest.mark.parametrize("level", LEVEL_RUNNERS)
def test_unknown_arch_is_refused(level):
    case = cases.make_case("all_gather", 2, "bf16", None, 3)
    with pytest.raises(Exception, match="unknown arch 'sm_70'"):
        LEVEL_RUNNERS[level](case.build_module(), case.make_args(0), world=2, options={"arch": "sm_70"})
