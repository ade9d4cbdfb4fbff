"""Cases of the named collectives shared by the level tests (coll, snac, atom,
plan) and the runtime tests: the lowerings each strategy names, which
strategies each collective takes, and the sizes, worlds and ops to run."""

import numpy as np
from xdsl.dialects.builtin import UnitAttr

from purlin.coll.builder import COLLECTIVES
from purlin.coll.dialect import NamedCollective
from purlin.coll.reference import reduce_parts
from purlin.testing.cases import Case, counts_for
from purlin.testing.data import compare

# 16-byte chunks and two slots per half: a few hundred bytes already go round
# the slots several times, so slot reuse is exercised at every world size.
SMALL = "chunk-bytes=16 slots=2"
LOWERINGS = {
    "latency": "regime=latency",
    "latency-composed": "regime=latency strategy=composed",
    "direct": f"regime=throughput strategy=direct {SMALL}",
    "composed": f"regime=throughput strategy=composed {SMALL}",
    "copy": f"regime=throughput strategy=copy {SMALL}",
    # In place between the ranks' own buffers: whole slices, and 16-byte units.
    "symmetric": "regime=throughput symmetric=true",
    "symmetric-chunked": "regime=throughput symmetric=true chunk-bytes=16",
    "symmetric-direct": "regime=throughput symmetric=true strategy=direct",
    # The copy engine's stream role: whole slices, and 16-byte units.
    "symmetric-copy-engine": "symmetric=true copy-engine=true",
    "symmetric-copy-engine-chunked": "symmetric=true copy-engine=true chunk-bytes=16",
    # Dynamic counts the host binds before each call: composed, and in place.
    "latency-composed-on-host": "regime=latency strategy=composed counts-on-host=true",
    "composed-on-host": f"regime=throughput strategy=composed counts-on-host=true {SMALL}",
    "symmetric-on-host": "regime=throughput symmetric=true counts-on-host=true",
}
# What counts read at run time refuse: the copy engine's spans are fixed when the
# call is issued, and their device prologue builds direct phases only.
DEVICE_COUNTS_REFUSE = ("copy-engine", "composed")


def strategies(name, dynamic=False):
    info = COLLECTIVES[name]
    # Counts read at run time lower staged (symmetric=true falls back): not listed twice.
    symmetric = [] if dynamic else ["symmetric", "symmetric-chunked"]
    if not info.reduces:
        engine = [] if dynamic else ["symmetric-copy-engine", "symmetric-copy-engine-chunked"]
        return ["latency", "copy", *symmetric, *engine]
    # Composed needs a name with several destinations: all_reduce's and all_reduce_v's.
    if name in ("all_reduce", "all_reduce_v"):
        if dynamic:
            return ["latency", "direct", "latency-composed-on-host", "composed-on-host", "symmetric-on-host"]
        return ["latency", "latency-composed", "direct", "composed", *symmetric, "symmetric-direct"]
    return ["latency", "direct", *symmetric]


PAIRS = [(n, s) for n in COLLECTIVES for s in strategies(n)]
REDUCING = [n for n, c in COLLECTIVES.items() if c.reduces]
VARIABLE = [n for n, c in COLLECTIVES.items() if c.variable]
REDUCING_PAIRS = [(n, s) for n, s in PAIRS if n in REDUCING]
VARIABLE_PAIRS = [(n, s) for n, s in PAIRS if n in VARIABLE]
# The V forms with each strategy that takes counts bound at run time.
DYNAMIC_PAIRS = [(n, s) for n in VARIABLE for s in strategies(n, dynamic=True)]
WORLDS = (2, 3, 4, 8)  # world 16 is slow: a subset of its own where needed
# Per-rank unit: empty, one element, odd (cycles the slots), a few hundred bytes.
SIZES = (0, 1, 37, 300)
OPS = ("sum", "max", "min", "prod")


def default_op(name):
    return "sum" if COLLECTIVES[name].reduces else None


def make_case(name, world, dtype="f32", op=None, count=37, seed=0, dynamic=False) -> Case:
    """A case of `name` with `count` elements per rank unit (V forms: seeded
    counts of that total per rank); `op` defaults to sum where it reduces."""
    info = COLLECTIVES[name]
    op = op or default_op(name)
    if info.variable:
        return Case(name, world, dtype, op, counts=counts_for(name, world, count * world, seed),
                    dynamic=dynamic)
    return Case(name, world, dtype, op, count)


def check_level(run, case: Case, label: str = "", seed: int = 0, options: dict | None = None, module=None) -> None:
    """`case` through a level's interpreter `run`: outputs match the reference, inputs are untouched."""
    args = case.make_args(seed)
    inputs = [a.copy() for a in args[0]]
    expected = case.expected(args)
    run(module or case.build_module(), args, world=case.world, seed=seed, options=options)
    mismatch = compare(args[1], expected, case.dtype, case.op, case.contributions, 8.0, "%out")
    assert mismatch is None, f"{case} {label}: {mismatch}"
    assert compare(args[0], inputs, case.dtype, what="%in") is None


def deterministic_module(case: Case):
    """`case`'s module with its collective marked deterministic."""
    module = case.build_module()
    (op,) = [o for o in module.walk() if isinstance(o, NamedCollective)]
    op.properties["deterministic"] = UnitAttr()
    return module


def order_sensitive_args(case: Case) -> list[list[np.ndarray]]:
    """`case`'s arguments with f32 inputs of mixed magnitudes: their f32 sum
    depends on the order."""
    args = case.make_args(0)
    rng = np.random.default_rng(0)
    for a in args[0]:
        a[:] = rng.standard_normal(a.size) * np.exp2(rng.integers(-24, 24, a.size))
    # The inputs must tell rank order from another order, or a bit-exact result proves nothing.
    assert not np.array_equal(reduce_parts(args[0], "sum"), reduce_parts(args[0][::-1], "sum"))
    return args
