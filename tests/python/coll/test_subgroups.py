"""Translation validation of sub-group collectives: named collectives with
`groups` at worlds 4, 6, 8 and 12, in several group shapes (contiguous,
strided, reversed, partial, unequal), run at the coll and snac levels (and
the plan on the CPU backend at world 8) against the textbook reference
applied to each group on its own; ranks in no group keep their output."""

import numpy as np
import pytest
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

from purlin.coll import dialect as coll
from purlin.coll import reference
from purlin.coll.attributes import ReduceKind
from purlin.compile.pipeline import lower, make_context
from purlin.dtypes import element_type
from purlin.levels.table import LEVELS
from purlin.simulator.snac_verify import SnacVerifyPass
from purlin.testing.data import compare, filler, random_array

SHAPES = {
    4: [[[0, 1], [2, 3]], [[3, 1], [0, 2]]],
    6: [[[0, 1, 2], [3, 4, 5]], [[5, 0], [1, 4], [2, 3]], [[0, 2, 4]]],
    8: [[[0, 1, 2, 3], [4, 5, 6, 7]], [[0, 4], [1, 5], [2, 6], [3, 7]], [[7, 6, 5, 4, 3, 2, 1, 0]]],
    12: [[list(range(6)), list(range(6, 12))], [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8, 11]], [[11, 0, 5]]],
}
CASES = [(w, g) for w, shapes in SHAPES.items() for g in shapes]
COUNT = 3  # elements of the per-rank unit

OPS = {
    "all_reduce": (coll.AllReduceOp, "sum", lambda g: (COUNT, COUNT), lambda x: reference.all_reduce(x, "sum")),
    "all_gather": (coll.AllGatherOp, None, lambda g: (COUNT, g * COUNT), reference.all_gather),
    "reduce_scatter": (coll.ReduceScatterOp, "max", lambda g: (g * COUNT, COUNT),
                       lambda x: reference.reduce_scatter(x, "max")),
    "all_to_all": (coll.AllToAllOp, None, lambda g: (g * COUNT, g * COUNT), reference.all_to_all),
}


def build(name, world, groups, dtype):
    op_cls, kind, sizes, _ = OPS[name]
    n_in, n_out = sizes(len(groups[0]))
    elem = element_type(dtype)
    block = Block(arg_types=[MemRefType(elem, [n_in]), MemRefType(elem, [n_out])])
    op = op_cls(block.args[0], block.args[1], world, None if kind is None else ReduceKind(kind),
                groups=groups)
    block.add_ops([op, ReturnOp()])
    return ModuleOp([FuncOp(name, ([a.type for a in block.args], []), Region(block))])


def expected(name, groups, inputs, outputs):
    out = [o.copy() for o in outputs]
    for group in groups:
        for rank, res in zip(group, OPS[name][3]([inputs[r] for r in group])):
            out[rank][: res.size] = res
    return out


def check(name, world, groups, level, dtype="i32", seed=0, options=None):
    module = build(name, world, groups, dtype)
    n_in, n_out = OPS[name][2](len(groups[0]))
    rng = np.random.default_rng(seed)
    inputs = [random_array(rng, dtype, n_in, OPS[name][1]) for _ in range(world)]
    outputs = [filler(dtype, n_out) for _ in range(world)]
    want = expected(name, groups, inputs, outputs)
    args = [[a.copy() for a in inputs], outputs]
    LEVELS[level](module, args, world=world, seed=seed, options=options or {})
    mismatch = compare(args[1], want, dtype, OPS[name][1], world, 8.0, "%out")
    assert mismatch is None, f"{name} world {world} groups {groups} at {level}: {mismatch}"


@pytest.mark.parametrize("world, groups", CASES, ids=[f"{w}-{i}" for w, s in SHAPES.items() for i in range(len(s))])
@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("level", ["coll", "snac"])
def test_sub_groups_match_each_group_s_reference(level, name, world, groups):
    check(name, world, groups, level, seed=world)


@pytest.mark.parametrize("groups", SHAPES[8], ids=["halves", "strided", "reversed"])
@pytest.mark.parametrize("name", list(OPS))
def test_sub_groups_on_the_cpu_backend(name, groups):
    check(name, 8, groups, "plan", "f32", seed=3, options={"backend": "cpu"})


@pytest.mark.parametrize("level", ["coll", "snac", "plan"])
def test_all_reduce_takes_groups_of_unequal_sizes(level):
    check("all_reduce", 6, [[0, 2], [1, 3, 5]], level, "i64", seed=1)


@pytest.mark.parametrize("world, groups", [(8, SHAPES[8][1]), (12, SHAPES[12][2])])
@pytest.mark.parametrize("name", list(OPS))
def test_snac_verify_proves_sub_group_programs(name, world, groups):
    module = lower(build(name, world, groups, "bf16" if name != "all_to_all" else "f32"),
                   "coll-expand,convert-coll-to-snac")
    SnacVerifyPass().apply(make_context(), module)
