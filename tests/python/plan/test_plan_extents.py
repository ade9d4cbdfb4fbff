"""Per-rank buffer sizes: `Plan.input_extent`/`output_extent` (and the C++
decoder's) are what each rank's instructions touch, so a V collective's
smaller ranks pass buffers of their own size; the CPU backend runs on exactly
those and refuses anything smaller."""

from __future__ import annotations

import types

import numpy as np
import pytest
from collective_cases import LOWERINGS, VARIABLE, default_op, strategies

from purlin import _runtime
from purlin import plan as P
from purlin.atom import dialect as atom
from purlin.coll.builder import COLLECTIVES
from purlin.compile.pipeline import entry_function, lower, pipeline_spec
from purlin.conversion.atom_to_plan import build_plan
from purlin.levels.snac import counts_of
from purlin.runtime import Communicator, backend
from purlin.testing.cases import Case, counts_for
from purlin.testing.data import compare, filler, random_array


def lowered(case: Case, strategy: str) -> P.Plan:
    args = case.make_args(0)
    func = entry_function(lower(case.build_module(), pipeline_spec("atom", lowering=LOWERINGS[strategy], arch="sm_90", verify=False)))
    (kernel,) = [op for op in func.body.ops if isinstance(op, atom.KernelOp)]
    return build_plan(kernel, counts_of(func, kernel, args))


def needed(case: Case) -> list[tuple[int, int]]:
    """(input, output) elements each rank moves, from the counts alone."""
    c, w = case.counts, case.world
    if case.collective == "all_gather_v":
        return [(c[r], sum(c)) for r in range(w)]
    if case.collective == "reduce_scatter_v":
        return [(sum(c), c[r]) for r in range(w)]
    if case.collective == "all_reduce_v":
        return [(sum(c), sum(c))] * w
    return [(sum(c[r]), sum(row[r] for row in c)) for r in range(w)]


def v_cases() -> list:
    """Uneven counts with zero ranks (seeded), at worlds 2 to 4, with each strategy."""
    cases = []
    for name in VARIABLE:
        for world in (2, 3, 4):
            for seed in (1, 2):
                counts = counts_for(name, world, 37 * world, seed)
                cases += [pytest.param(Case(name, world, "f32", default_op(name), counts=counts), strategy,
                                       id=f"{name}-w{world}-s{seed}-{strategy}") for strategy in strategies(name)]
    explicit = {
        "all_gather_v": (0, 5, 0, 0),
        "reduce_scatter_v": (0, 0, 9, 0),  # three ranks receive nothing
        "all_to_all_v": ((0, 3, 0, 0), (0, 0, 0, 0), (2, 0, 0, 7), (0, 0, 1, 0)),
        "all_reduce_v": (0, 0, 9, 0),  # one rank's slice, every rank's output
    }
    for name, counts in explicit.items():
        cases += [pytest.param(Case(name, 4, "f16", default_op(name), counts=counts), strategy,
                               id=f"{name}-mostly-empty-{strategy}") for strategy in strategies(name)]
    return cases


V_CASES = v_cases()


@pytest.mark.parametrize("case, strategy", V_CASES)
def test_v_extents_are_what_each_rank_moves(case, strategy):
    plan = lowered(case, strategy)
    want = needed(case)
    got = [(plan.input_extent(r), plan.output_extent(r)) for r in range(case.world)]
    assert got == want
    assert all(i <= plan.input_elems and o <= plan.output_elems for i, o in got)
    decoded = _runtime.decode(plan.encode())
    assert list(zip(decoded.input_extent, decoded.output_extent)) == want


@pytest.mark.parametrize("name", [n for n in COLLECTIVES if not COLLECTIVES[n].variable])
def test_fixed_collectives_need_their_whole_buffers(name):
    case = Case(name, 3, "bf16", default_op(name), 12)
    for strategy in strategies(name):
        plan = lowered(case, strategy)
        assert [(plan.input_extent(r), plan.output_extent(r)) for r in range(3)] == [case.buffer_sizes()] * 3


def exact_args(case: Case, plan: P.Plan, seed: int) -> list[list[np.ndarray]]:
    """Inputs and outputs of exactly each rank's extent, not the plan-wide size."""
    rng = np.random.default_rng(seed)
    w = case.world
    return [
        [random_array(rng, case.dtype, plan.input_extent(r), case.op) for r in range(w)],
        [filler(case.dtype, plan.output_extent(r)) for r in range(w)],
    ]


@pytest.mark.parametrize("case, strategy", V_CASES)
def test_cpu_backend_runs_on_buffers_of_each_ranks_own_size(case, strategy):
    plan = lowered(case, strategy)
    comm = Communicator(plan, name=case.collective, timeout_s=30.0)
    for call in range(2):  # both halves of the staging and windows
        args = exact_args(case, plan, seed=call)
        assert [a.size for a in args[0] + args[1]] == [n for pair in zip(*needed(case)) for n in pair]
        expected = case.expected(args)
        comm.run(args[0], args[1])
        mismatch = compare(args[1], expected, case.dtype, case.op, case.contributions, 8.0, "%out")
        assert mismatch is None, f"{case} {strategy} call {call}: {mismatch}"


def test_a_buffer_below_its_ranks_extent_is_refused():
    case = Case("all_gather_v", 3, "f32", counts=(4, 0, 9))
    plan = lowered(case, "latency")
    comm = Communicator(plan, name="agv")
    ins, outs = exact_args(case, plan, seed=0)
    with pytest.raises(ValueError, match="agv: input of rank 2 has 8 elements, the plan needs at least 9 for rank 2"):
        comm.run([ins[0], ins[1], ins[2][:8]], outs)
    with pytest.raises(ValueError, match="output of rank 0 has 12 elements, the plan needs at least 13 for rank 0"):
        comm.run(ins, [outs[0][:12], outs[1], outs[2]])
    # The backend's own check, behind the Python one.
    with pytest.raises(ValueError, match="input of rank 0 has 12 bytes, the plan needs at least 16 for rank 0"):
        comm._impl.run([ins[0][:3], ins[1], ins[2]], outs)
    with pytest.raises(ValueError, match="the plan is for world 3, got 2 outputs"):
        comm._impl.run(ins, outs[:2])
    # Rank 1 sends nothing: an empty input is all it needs.
    assert ins[1].size == 0
    comm.run(ins, outs)


class FakeTensor:
    """What _device_buffer reads of a CUDA tensor."""

    def __init__(self, n: int):
        self.n, self.dtype, self.is_cuda = n, "torch.float32", True
        self.device = types.SimpleNamespace(index=0)

    def data_ptr(self):
        return 0x1000

    def numel(self):
        return self.n

    def is_contiguous(self):
        return True


def test_cuda_buffers_are_checked_against_their_ranks_extent():
    plan = lowered(Case("reduce_scatter_v", 3, "f32", "sum", counts=(2, 7, 0)), "latency")
    assert backend.device_buffer(FakeTensor(9), 2, "input", plan.dtype, "rsv", 0, plan.input_extent(2)) == (0x1000, 9)
    assert backend.device_buffer(FakeTensor(0), 2, "output", plan.dtype, "rsv", 0, plan.output_extent(2)) == (0x1000, 0)
    with pytest.raises(ValueError, match="rsv: output of rank 1 has 6 elements, the plan needs at least 7 for rank 1"):
        backend.device_buffer(FakeTensor(6), 1, "output", plan.dtype, "rsv", 0, plan.output_extent(1))


# -- hand-built plans: which instructions count ---------------------------------


def one_rank(body: list[P.Instr], n_in: int = 32, n_out: int = 32) -> P.Plan:
    return P.Plan("sm_90", 2, "f32", n_in, n_out, 1, 128, [P.RoleSpec(P.RoleKind.PRODUCER, 1)],
                  [P.BufferSpec("stage", P.BufKind.STAGING, 2, 32), P.BufferSpec("win", P.BufKind.PACKETS, 2, 32)],
                  [P.SignalSpec("ready", 2)], [[body], [[]]])


@pytest.mark.parametrize("body, extents", [
    # A put reads its source; its window destination is no user buffer.
    ([P.Instr(P.Op.PUT, P.Mech.PACKET, 6, peer=1, buf=1, offset=8, srcs=(P.Ref(P.Space.INPUT, 0, offset=3),))], (9, 0)),
    # A reduce writes its destination and reads every source.
    ([P.Instr(P.Op.REDUCE, P.Mech.VECTOR, 4, redop=P.RedOp.SUM, dst=P.Ref(P.Space.OUTPUT, 0, offset=10),
              srcs=(P.Ref(P.Space.INPUT, 0, offset=1), P.Ref(P.Space.INPUT, 0, offset=20),
                    P.Ref(P.Space.STAGING, 0, 0)))],
     (24, 14)),
    # A copy out of a packet window into the output: element offsets, as in linear memory.
    ([P.Instr(P.Op.COPY, P.Mech.VECTOR, 5, dst=P.Ref(P.Space.OUTPUT, 0, offset=2),
              srcs=(P.Ref(P.Space.WINDOW, 0, 1, 1),))],
     (0, 7)),
    # Waits, signals and zero-length moves touch nothing.
    ([P.Instr(P.Op.WAIT_PACKETS, P.Mech.PACKET, 8, buf=1, peer=1, offset=16),
      P.Instr(P.Op.SIGNAL, sig=0, peer=1, slot=0, rel=1, order=P.Order.RELEASE),
      P.Instr(P.Op.COPY, P.Mech.VECTOR, 0, dst=P.Ref(P.Space.OUTPUT, 0, offset=30),
              srcs=(P.Ref(P.Space.INPUT, 0, offset=30),))],
     (0, 0)),
    # The largest end wins, wherever it comes in the program.
    ([P.Instr(P.Op.COPY, P.Mech.VECTOR, 8, dst=P.Ref(P.Space.OUTPUT, 0, offset=16),
              srcs=(P.Ref(P.Space.INPUT, 0, offset=4),)),
      P.Instr(P.Op.COPY, P.Mech.VECTOR, 2, dst=P.Ref(P.Space.OUTPUT, 0), srcs=(P.Ref(P.Space.INPUT, 0),))], (12, 24)),
], ids=["put", "reduce", "copy-from-window", "untouched", "largest"])
def test_extent_counts_the_refs_data_instructions_move(body, extents):
    plan = one_rank(body)
    P.validate(plan)
    assert (plan.input_extent(0), plan.output_extent(0)) == extents
    assert (plan.input_extent(1), plan.output_extent(1)) == (0, 0)
    decoded = _runtime.decode(plan.encode())
    assert (decoded.input_extent, decoded.output_extent) == ([extents[0], 0], [extents[1], 0])


def test_extent_of_a_rank_outside_the_world_is_an_error():
    with pytest.raises(IndexError, match="rank 2 is outside world 2"):
        one_rank([]).input_extent(2)
