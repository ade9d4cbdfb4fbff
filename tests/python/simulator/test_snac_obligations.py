"""snac-verify's per-rank obligations and fixpoint (purlin.simulator.obligations)
against the interleaving search: both accept what the lowering makes, both
catch bugs that only rank 0, only the last rank or only the odd ranks have,
and the rotation quotient is what proves the symmetric programs."""

from __future__ import annotations

import dataclasses

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.utils.exceptions import PassFailedException

from purlin.coll.builder import CollectiveSpec
from purlin.compile.pipeline import lower
from purlin.snac import dialect as snac
from purlin.simulator import obligation_arrays, obligations
from purlin.snac import protocol
from purlin.snac.errors import SnacExecutionError
from purlin.simulator.snac_machine import verify_program
from purlin.simulator.obligations import verify_obligations
from purlin.snac.phase_binding import phase_states

CASES = [
    ("all_reduce", "sum", 1024, "regime=throughput strategy=direct"),
    ("all_reduce", "sum", 4096, "regime=throughput strategy=composed chunk-bytes=64 slots=2"),
    ("all_gather", None, 256, "regime=throughput chunk-bytes=64 slots=2"),
    ("reduce_scatter", "max", 1024, "regime=throughput chunk-bytes=64 slots=3"),
    ("all_to_all", None, 512, "regime=throughput chunk-bytes=32 slots=2"),
    ("all_reduce", "sum", 64, "regime=latency"),
    ("all_gather", None, 64, "regime=latency"),
]


def program(collective: str, op: str | None, world: int, count: int, options: str) -> snac.ProgramOp:
    module = lower(CollectiveSpec(collective, world, "f32", op, count * world if collective == "reduce_scatter"
                                  else count).build_module(),
                   f"coll-expand,convert-coll-to-snac{{{options}}}")
    return next(o for o in module.walk() if isinstance(o, snac.ProgramOp))


def verdicts(prog) -> tuple[str | None, str | None]:
    """(obligations, interleaving search): None where the program verifies, else the error's kind."""
    out = []
    for check in (lambda: verify_obligations(prog, 3), lambda: verify_program(prog, 3, (0, 1))):
        try:
            check()
            out.append(None)
        except SnacExecutionError as e:
            out.append(type(e).__name__)
    return out[0], out[1]


@pytest.mark.parametrize("world", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[3].split()[0]}")
def test_lowered_programs_verify_both_ways(case, world):
    collective, op, count, options = case
    if world == 1 and "composed" in options:
        pytest.skip("a world of one has nothing to compose")
    assert verdicts(program(collective, op, world, count, options)) == (None, None)


def which(ranks: str, world: int) -> set[int]:
    return {"rank 0": {0}, "last rank": {world - 1}, "odd ranks": set(range(1, world, 2))}[ranks]


RANKS = ["rank 0", "last rank", "odd ranks"]


def plant(monkeypatch, name: str, bad: set[int], rewrite) -> None:
    """protocol.NAME (rank_units or rank_groups) as it is, but on the ranks in
    `bad` its tuple goes through `rewrite`: a bug only those ranks have."""
    real = getattr(protocol, name)
    monkeypatch.setattr(protocol, name, lambda plan, rank: rewrite(real(plan, rank)) if rank in bad
                        else real(plan, rank))


def without_last_consumer(units: tuple) -> tuple:
    return tuple(dataclasses.replace(u, consumers=u.consumers[:-1]) for u in units)


@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("world", [4, 7])
def test_a_consumer_dropped_on_some_ranks_is_caught(monkeypatch, ranks, world):
    """Those ranks' units forget their last consumer: no notify reaches it
    (the search deadlocks; the obligations find the read no store covers)."""
    plant(monkeypatch, "rank_units", which(ranks, world), without_last_consumer)
    prog = program("all_gather", None, world, 256, "regime=throughput chunk-bytes=64 slots=2")
    mine, search = verdicts(prog)
    assert search == "Deadlock" and mine in ("ProtocolViolation", "Deadlock")


@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("world", [4, 7])
def test_a_group_reading_the_wrong_unit_on_some_ranks_is_caught(monkeypatch, ranks, world):
    """Those ranks' groups read their sources' next unit, which the wait does not cover."""
    plant(monkeypatch, "rank_groups", which(ranks, world), lambda groups: tuple(
        dataclasses.replace(g, sources=tuple(dataclasses.replace(s, unit=None if s.unit is None else s.unit ^ 1)
                                             for s in g.sources)) for g in groups))
    prog = program("all_gather", None, world, 256, "regime=throughput chunk-bytes=64 slots=2")
    mine, search = verdicts(prog)
    assert mine is not None and search is not None


@pytest.mark.parametrize("ranks", RANKS)
def test_a_group_dropped_on_some_ranks_is_caught(monkeypatch, ranks):
    """Those ranks never write their last destination chunk: the output is not covered."""
    world = 6
    plant(monkeypatch, "rank_groups", which(ranks, world), lambda groups: groups[:-1])
    prog = program("all_reduce", "sum", world, 1024, "regime=throughput strategy=direct")
    with pytest.raises(SnacExecutionError, match="output is not written exactly where"):
        verify_obligations(prog, 3)


def test_symmetric_programs_are_proven_on_rank_0_alone(monkeypatch):
    """A direct all_reduce is the same on every rank but for its peers: the
    rotation quotient checks rank 0's steps only, and finds what the full check finds."""
    prog = program("all_reduce", "sum", 9, 1024, "regime=throughput strategy=direct")
    phases = phase_states(prog, 9, None, shrink=True)
    assert obligations._rotation_symmetric(phases, 9)
    flattened = []
    call = obligations._Flattener.call

    def counting(self, rank, *args):
        flattened.append(rank)
        return call(self, rank, *args)

    monkeypatch.setattr(obligations._Flattener, "call", counting)
    verify_obligations(prog, 3)
    assert set(flattened) == {0}
    composed = program("all_reduce", "sum", 9, 4096, "regime=throughput strategy=composed chunk-bytes=64 slots=2")
    assert not obligations._rotation_symmetric(phase_states(composed, 9, None, shrink=True), 9)


def test_exhaustive_option_runs_the_interleaving_search(monkeypatch):
    module = lower(CollectiveSpec("all_gather", 3, "f32", None, 64).build_module(), "coll-expand,convert-coll-to-snac")
    ran = []
    monkeypatch.setattr("purlin.simulator.snac_verify.verify_program", lambda *a, **k: ran.append("search"))
    monkeypatch.setattr("purlin.simulator.snac_verify.verify_obligations", lambda *a, **k: ran.append("obligations"))
    lower(module, "snac-verify")
    lower(module, "snac-verify{exhaustive=true}")
    assert ran == ["obligations", "search"]


def test_failures_are_pass_failures():
    prog_text = lower(CollectiveSpec("all_gather", 3, "f32", None, 64).build_module(),
                      "coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=64 slots=1}")
    for op in prog_text.walk():
        if isinstance(op, snac.AckOp):
            op.detach()
            op.erase()
            break
    with pytest.raises(PassFailedException, match="snac-verify"):
        lower(prog_text, "snac-verify")


@pytest.mark.parametrize("ranks", RANKS)
def test_a_reduction_missing_a_source_on_some_ranks_is_caught(monkeypatch, ranks):
    """Those ranks reduce their groups without their last source: the reduction is incomplete."""
    world = 5
    plant(monkeypatch, "rank_groups", which(ranks, world),
          lambda groups: tuple(dataclasses.replace(g, sources=g.sources[:-1]) for g in groups))
    prog = program("all_reduce", "sum", world, 1024, "regime=throughput strategy=direct")
    with pytest.raises(SnacExecutionError, match="reads 4 sources of slice"):
        verify_obligations(prog, 3)


# -- the array path (purlin.simulator.obligation_arrays) --------------------------

COMPOSED = ("all_reduce", "sum", 4096, "regime=throughput strategy=composed chunk-bytes=64 slots=2")


def array_verdict(prog) -> str | None:
    """The array path's verdict, None where the program verifies; a fallback
    to the per-item path (Unsupported) fails the test."""
    world = prog.world_size
    kinds = [op.kind.data.value for op in prog.body.block.ops if isinstance(op, snac.RoleOpBase)]
    try:
        obligation_arrays.verify_arrays(prog, phase_states(prog, world, None, shrink=True), 3, kinds)
    except SnacExecutionError as e:
        return type(e).__name__
    return None


def per_item_verdict(prog) -> str | None:
    try:
        verify_obligations(prog, 3, arrays=False)
    except SnacExecutionError as e:
        return type(e).__name__
    return None


def mutants(case, world):
    """The lowered program with one protocol op dropped (one whose results
    nothing uses), or one constant one larger, each in turn."""
    def targets(prog):
        return [o for o in prog.walk()
                if isinstance(o, (arith.ConstantOp, snac.FenceOpBase))
                or (isinstance(o, snac._PhaseStep) and not isinstance(o, (snac._PhaseQuery, snac.MaxUnitsOp)))]
    for i in range(len(targets(program(case[0], case[1], world, case[2], case[3])))):
        prog = program(case[0], case[1], world, case[2], case[3])
        op = targets(prog)[i]
        if isinstance(op, arith.ConstantOp):
            bumped = arith.ConstantOp(IntegerAttr(op.value.value.data + 1, IndexType()))
            op.parent_block().insert_op_before(bumped, op)
            op.results[0].replace_all_uses_with(bumped.result)
        elif any(r.uses for r in op.results):
            continue
        op.detach()
        op.erase()
        yield f"{op.name} #{i}", prog


# The lowerings whose ranks are not rotations of rank 0 (all but the small all_reduces).
UNSYMMETRIC = [c for c in CASES if c[0] != "all_reduce" or "composed" in c[3]]


@pytest.mark.parametrize("case", UNSYMMETRIC, ids=lambda c: f"{c[0]}-{c[3].split()[0]}")
def test_the_array_path_agrees_with_the_per_item_path(case):
    """On every program one op or constant away from the lowering's, the
    arrays reach the per-item path's verdict (the kinds of error; which of
    several violations each names first may differ)."""
    prog = program(case[0], case[1], 4, case[2], case[3])
    assert not obligations._rotation_symmetric(phase_states(prog, 4, None, shrink=True), 4)
    assert array_verdict(prog) is None
    caught = 0
    for what, prog in mutants(case, 4):
        mine = array_verdict(prog)
        assert mine == per_item_verdict(prog), what
        caught += mine is not None
    assert caught


def indicator(block, before, rank, m: int):
    """An index that is 1 on rank `m` and 0 elsewhere, computed in `block`
    before `before`: max(1 - (rank - m)^2, 0)."""
    c = lambda v: arith.ConstantOp(IntegerAttr(v, IndexType()))  # noqa: E731
    at, one, zero = c(m), c(1), c(0)
    d = arith.SubiOp(rank, at.result)
    sq = arith.MuliOp(d.result, d.result)
    t = arith.SubiOp(one.result, sq.result)
    ind = arith.MaxUIOp(t.result, zero.result)
    for op in (at, one, zero, d, sq, t, ind):
        block.insert_op_before(op, before)
    return ind.result


def bump_on_rank(prog, cls, operand: str, m: int) -> None:
    """Add 1 to `operand` of every `cls` op, on rank `m` only."""
    rank = next(o for o in prog.body.block.ops if isinstance(o, snac.RankOp)).result
    for op in [o for o in prog.walk() if isinstance(o, cls)]:
        old = getattr(op, operand)
        plus = arith.AddiOp(old, indicator(op.parent_block(), op, rank, m))
        op.parent_block().insert_op_before(plus, op)
        op.operands = [plus.result if v is old else v for v in op.operands]


@pytest.mark.parametrize("world", [5, 8])
def test_an_epoch_advanced_one_more_on_a_middle_rank_is_caught(world):
    prog = program(*COMPOSED[:1], COMPOSED[1], world, *COMPOSED[2:])
    bump_on_rank(prog, snac.AdvanceOp, "amount", world // 2)
    with pytest.raises(SnacExecutionError, match=f"epochs advance differently.*rank {world // 2}: "):
        verify_obligations(prog, 3)


@pytest.mark.parametrize("ranks", ["rank 0", "middle rank", "last rank"])
@pytest.mark.parametrize("case", [COMPOSED, CASES[2]], ids=["all_reduce", "all_gather"])
@pytest.mark.parametrize("bug", [(snac.NotifyOp, "value"), (snac.WaitOp, "epoch"), (snac.AckOp, "epoch"),
                                 (snac.FinishOp, "value")], ids=["notify", "wait", "ack", "finish"])
def test_a_flag_or_epoch_off_by_one_on_one_rank_is_caught(case, ranks, bug):
    """That rank's notifies announce each unit with the next one's flag, or
    its waits expect the next epoch's unit, or its acks and finishes release
    a slot one epoch early: a read not ordered after its write, or a slot
    rewritten while read."""
    world = 6
    m = {"rank 0": 0, "middle rank": world // 2, "last rank": world - 1}[ranks]
    prog = program(case[0], case[1], world, case[2], case[3])
    bump_on_rank(prog, *bug, m)
    mine = array_verdict(prog)
    assert mine == per_item_verdict(prog) and mine is not None


@pytest.mark.parametrize("case", [COMPOSED, CASES[2], CASES[4]], ids=["all_reduce", "all_gather", "all_to_all"])
def test_a_bug_on_a_single_middle_rank_is_caught(monkeypatch, case):
    """The middle rank's units forget their last consumer."""
    world = 7
    plant(monkeypatch, "rank_units", {world // 2}, without_last_consumer)
    prog = program(case[0], case[1], world, case[2], case[3])
    mine = array_verdict(prog)
    assert mine is not None and mine == per_item_verdict(prog)


@pytest.mark.parametrize("case", [COMPOSED, CASES[2], CASES[3]], ids=["all_reduce", "all_gather", "reduce_scatter"])
def test_a_bug_on_the_last_peer_of_one_rank_is_caught(monkeypatch, case):
    """Rank 2's last group reads its last peer's unit one past the right one."""
    world = 7

    def last_peer_off_by_one(groups: tuple) -> tuple:
        if not any(g.remote for g in groups):
            return groups
        last = max(i for i, g in enumerate(groups) if g.remote)
        g = groups[last]
        peer = g.sources.index(g.remote[-1])
        sources = tuple(dataclasses.replace(s, unit=s.unit + 1) if i == peer else s for i, s in enumerate(g.sources))
        return groups[:last] + (dataclasses.replace(g, sources=sources),) + groups[last + 1:]

    plant(monkeypatch, "rank_groups", {2}, last_peer_off_by_one)
    prog = program(case[0], case[1], world, case[2], case[3])
    mine = array_verdict(prog)
    assert mine is not None and mine == per_item_verdict(prog)


def test_forms_the_arrays_do_not_describe_are_checked_item_by_item():
    """A staging half of 2 (every call in a third half) is not a form of the
    array path: verify_obligations checks it item by item, with that verdict."""
    prog = program(*CASES[2][:2], 4, *CASES[2][2:])
    half = next(o for o in prog.body.block.ops if isinstance(o, snac.HalfOp))
    two = arith.ConstantOp(IntegerAttr(2, IndexType()))
    prog.body.block.insert_op_before(two, half)
    half.result.replace_all_uses_with(two.result)
    kinds = [op.kind.data.value for op in prog.body.block.ops if isinstance(op, snac.RoleOpBase)]
    with pytest.raises(obligation_arrays.Unsupported, match="half"):
        obligation_arrays.verify_arrays(prog, phase_states(prog, 4, None, shrink=True), 3, kinds)
    try:
        verify_obligations(prog, 3)
        default = None
    except SnacExecutionError as e:
        default = type(e).__name__
    assert default == per_item_verdict(prog) == "ProtocolViolation"
