"""One rank's part of a plan (build_rank_plan, compile_rank_plan) is the
same as that rank's part of the whole plan, and its kernel tables
(compile_rank_collective) that rank's of the whole kernel's; both are built
without expanding the other ranks' programs."""

import pytest

from purlin.coll.builder import SpecError
from purlin.compile import compile_collective, compile_rank_collective, compile_rank_plan
from purlin.conversion import atom_to_plan
from purlin.plan import PlanError, validate_rank

CASES = [
    ("all_reduce", 4, "bf16", "sum", 1024, ""),
    ("all_reduce", 5, "f32", "max", 4096, "regime=throughput strategy=composed chunk-bytes=1024 slots=2"),
    ("all_reduce", 3, "f32", "sum", 64, "regime=latency"),
    ("all_gather", 6, "f16", None, 512, "regime=throughput"),
    ("reduce_scatter", 4, "bf16", "sum", 256, ""),
    ("all_to_all", 5, "f32", None, 64, "regime=throughput"),
    ("all_reduce", 4, "f32", "sum", 4096, "regime=throughput strategy=direct symmetric=true"),
]


@pytest.mark.parametrize("collective, world, dtype, op, count, lowering", CASES)
def test_every_rank_part_equals_the_whole_plans(collective, world, dtype, op, count, lowering):
    whole = compile_collective(collective, world, dtype, op, count, lowering=lowering)
    for rank in range(world):
        part = compile_rank_collective(collective, world, dtype, op, rank, count, lowering=lowering)
        assert part.plan == whole.plan.rank_plan(rank)
        assert part.plan == compile_rank_plan(collective, world, dtype, op, rank, count, lowering=lowering)
        assert part.tables.tolist() == whole.cuda.tables.ranks[rank].tolist()


def test_a_rank_part_expands_only_its_rank(monkeypatch):
    expanded = []
    rank = atom_to_plan._Expander.rank

    def counting(self, r, blocks):
        expanded.append(r)
        return rank(self, r, blocks)

    monkeypatch.setattr(atom_to_plan._Expander, "rank", counting)
    compile_rank_plan("all_reduce", 16, "bf16", "sum", 11, 4096)
    assert expanded == [11]


@pytest.mark.parametrize("rank", [-1, 4])
def test_a_rank_outside_the_world_is_refused(rank):
    with pytest.raises(SpecError, match=f"rank {rank} is outside world 4"):
        compile_rank_plan("all_reduce", 4, "f32", "sum", rank, 64)


def test_a_rank_part_is_validated_as_the_whole_plan_is():
    part = compile_rank_plan("all_gather", 4, "f32", None, 2, 64, lowering="regime=throughput")
    part.program[0][0] = part.program[0][0].__class__(**{**part.program[0][0].__dict__, "sig": 9})
    with pytest.raises(PlanError, match="rank 2 role 0 instruction 0 .*signal array 9 does not exist"):
        validate_rank(part)
