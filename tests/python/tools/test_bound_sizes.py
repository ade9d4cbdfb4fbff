"""bench/bound_sizes.py without a GPU: each size's fixed lowering and its
regime's V form (lowered once, over the regime's largest buffers) bound to
that size give the same results on the CPU backend, and one V form serves
every size of a regime."""

import numpy as np
import pytest
from bench_scripts import bench_script

from purlin.coll.builder import CollectiveSpec
from purlin.dtypes import numpy_dtype
from purlin.runtime import Communicator

BF16 = numpy_dtype("bf16")


@pytest.fixture(scope="module")
def bound_sizes():
    with bench_script("bound_sizes") as module:
        yield module


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("collective", ["all_gather", "reduce_scatter", "all_to_all"])
def test_the_bound_v_form_computes_what_the_fixed_lowering_does(bound_sizes, collective, world):
    pairs = bound_sizes.pairs(collective, world, [16, 1000, 70000, 2 << 20], "sm_90", 132)
    assert {p.regime for p in pairs} == {"latency", "throughput"}
    # One V form per regime: its kernel is the same object for every size of the regime.
    kernels = {}
    for p in pairs:
        assert kernels.setdefault(p.regime, p.bound.cuda.kernel) is p.bound.cuda.kernel
    for p in pairs:
        n_in, n_out = CollectiveSpec(collective, world, "bf16", bound_sizes.op_of(collective), p.count).buffer_sizes()
        rng = np.random.default_rng(p.count)
        ins = [rng.integers(-8, 8, n_in).astype(np.float32) for _ in range(world)]
        for which, compiled in (("fixed", p.fixed), ("bound", p.bound)):
            outs = [np.zeros(n_out, dtype=BF16) for _ in range(world)]
            Communicator(compiled.plan, name=which).run([a.astype(BF16) for a in ins], outs)
            bound_sizes.check(collective, [o.astype(np.float32) for o in outs], ins, which)
    with pytest.raises(SystemExit, match=f"{collective} bound: rank 0 differs"):
        bound_sizes.check(collective, [np.ones(n_out, dtype=np.float32)] * world, ins, "bound")


@pytest.mark.parametrize("symmetric", [True, False], ids=["in-place", "staged"])
def test_what_the_bound_form_shares_with_the_fixed_one(bound_sizes, symmetric):
    pairs = bound_sizes.pairs("all_to_all", 4, [16, 2 << 20, 16 << 20], "sm_90", 132, symmetric)
    same = {p.count * 2 * 4: bound_sizes.sameness(p, 4, 132) for p in pairs}
    # Latency packets wait for a free window in the V form; throughput bindings are the fixed kernels,
    # in place with the fixed tables at every size, staged with them at the regime's largest; but in place
    # a fixed call of at most 2 MiB a rank (beyond packets) takes one block an SM, the binding the largest's two.
    assert same[16] == "-"
    assert same[16 << 20] == "code+tables"
    assert same[2 << 20] == ("-" if symmetric else "code")
