"""purlin.torch's caches on CPU ranks (gloo processes): many odd sizes equal to
gloo's while the communicators kept stay within their bound, all_reduce of any
size through one all_reduce_v kernel per regime (in place and apart), evicted ones
made again without lowering again, release(), and ranks whose calls differ
(shape, dtype, op, a cached call on one rank and a new one on another)
raising CallMismatchError on every rank at once, naming both calls."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
from process_group import fork_gloo as spawn  # noqa: E402

if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("needs torch.distributed with gloo", allow_module_level=True)

SIZES = [1, 2, 3, 5, 7, 11, 13, 31, 33, 63, 127, 129, 255, 257, 1021, 1025, 4099, 16411, 65537, 262147]


def _odd_sizes_bounded(rank: int) -> None:
    import purlin.torch as pt

    pt.init()
    pt.set_cache_limits(communicators=3)
    world = dist.get_world_size()
    g = torch.Generator().manual_seed(rank)
    made0, lowered0 = pt.cache_stats()["communicators made"], pt.cache_stats()["lowerings"]
    for rounds in range(2):
        for n in SIZES:
            x = torch.randint(-50, 50, (n,), generator=g).to(torch.float32)
            got, want = x.clone(), x.clone()
            pt.all_reduce(got)
            dist.all_reduce(want)
            assert torch.equal(got, want), n
            for op in ("max", "prod"):
                got, want = x.clone(), x.clone()
                pt.all_reduce(got, op)
                dist.all_reduce(want, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.PRODUCT)
                assert torch.equal(got, want), (n, op)
            got, want = x.new_empty(world * n), x.new_empty(world * n)
            pt.all_gather(got, x)
            dist.all_gather_into_tensor(want, x)
            assert torch.equal(got, want), n
            wide = torch.randint(-50, 50, (world * n,), generator=g).to(torch.int32)
            got, want = wide.new_empty(n), wide.new_empty(n)
            pt.reduce_scatter(got, wide)
            dist.reduce_scatter_tensor(want, wide)
            assert torch.equal(got, want), n
            got, want = torch.empty_like(wide), torch.empty_like(wide)
            pt.all_to_all(got, wide)
            dist.all_to_all_single(want, wide)
            assert torch.equal(got, want), n
            assert pt.cache_stats()["communicators kept"] <= 3
    s = pt.cache_stats()
    # One kernel per regime (latency, throughput) of each V collective the calls run, whatever the sizes:
    # all_reduce_v f32 in place of three ops (the all_reduces), all_gather_v f32 (the all_gathers),
    # reduce_scatter_v and all_to_all_v of int32; evicted communicators are made again (with 3 kept of more
    # kernels and layouts), not lowered again.
    assert s["lowerings"] - lowered0 == 2 * (3 + 1 + 1 + 1)
    pt.release()
    assert pt.cache_stats()["communicators kept"] == 0 and pt.cache_stats()["plans kept"] == 0
    x = torch.ones(9)
    pt.all_reduce(x)
    assert x.tolist() == [float(world)] * 9


def test_odd_sizes_bounded_cache():
    spawn(2, _odd_sizes_bounded)


def _all_reduce_sizes(rank: int) -> None:
    import purlin.torch as pt
    from purlin.torch.groups import group_name, state

    pt.init()
    g = torch.Generator().manual_seed(rank)
    lowered0 = pt.cache_stats()["lowerings"]
    for n in SIZES:
        x = torch.randint(-50, 50, (n,), generator=g).to(torch.float32)
        want = x.clone()
        dist.all_reduce(want)
        out = torch.empty_like(x)
        pt.all_reduce(x, out=out)
        assert torch.equal(out, want), n
        pt.all_reduce(x)
        assert torch.equal(x, want), n
    # One all_reduce_v kernel per regime (latency, throughput), in place and apart, whatever the sizes.
    assert pt.cache_stats()["lowerings"] - lowered0 == 2 * 2
    assert {k[1:3] for k in state(group_name()).plans} == {("regime", "all_reduce_v")}


def test_all_reduce_of_any_size_runs_one_kernel_per_regime():
    spawn(3, _all_reduce_sizes)


def _raises_quickly(fn, *words: str) -> None:
    import purlin.torch as pt

    t = time.monotonic()
    with pytest.raises(pt.CallMismatchError) as e:
        fn()
    assert time.monotonic() - t < 1.0, time.monotonic() - t
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def _mismatches(rank: int) -> None:
    import purlin.torch as pt

    pt.init()
    # Shapes differ on a first call.
    _raises_quickly(lambda: pt.all_reduce(torch.ones(8 + 4 * rank)), "all_reduce of 8 f32", "of 12 f32",
                    "rank 0", "rank 1")
    # Both cached 8; then rank 0 calls 8 again (a hit) and rank 1 calls 16 (a miss).
    pt.all_reduce(torch.ones(8))
    _raises_quickly(lambda: pt.all_reduce(torch.ones(8 if rank == 0 else 16)), "of 8 f32", "of 16 f32")
    # Two cached shapes, each rank calls the other one.
    pt.all_reduce(torch.ones(16))
    _raises_quickly(lambda: pt.all_reduce(torch.ones(16 if rank == 0 else 8)), "of 8 f32", "of 16 f32")
    # dtype, op, collective, a call of zero elements.
    _raises_quickly(lambda: pt.all_reduce(torch.ones(8, dtype=torch.float32 if rank else torch.bfloat16)),
                    "bf16", "f32")
    _raises_quickly(lambda: pt.all_reduce(torch.ones(8), "max" if rank else "sum"), "op max", "op sum")
    _raises_quickly(lambda: pt.all_gather(torch.empty(16), torch.ones(8)) if rank else pt.all_reduce(torch.ones(8)),
                    "all_gather of 8", "all_reduce of 8")
    _raises_quickly(lambda: pt.all_reduce(torch.ones(8 * rank)), "of 0 f32", "of 8 f32")
    # The ranks agree again afterwards.
    x = torch.ones(8)
    pt.all_reduce(x)
    assert x.tolist() == [2.0] * 8


def test_mismatched_calls_raise_on_every_rank():
    spawn(2, _mismatches)


def _running_peers_stopped(rank: int) -> None:
    import purlin.torch as pt

    pt.init()
    for n in (8, 16):
        pt.all_reduce(torch.ones(n))
    # Cached on every rank: ranks that run the call of 8 (they saw no other call when they posted) are
    # stopped by the first to see both, whichever rank posts last; each names the calls posted when it
    # learnt of them. Then every rank makes its calls anew.
    for late in range(3):
        if rank == late:
            time.sleep(0.2)
        _raises_quickly(lambda: pt.all_reduce(torch.ones(16 if rank == 2 else 8)), "all_reduce of 8",
                        "rank 2: all_reduce of 16")
        for n in (8, 16):
            x = torch.ones(n)
            pt.all_reduce(x)
            assert x.tolist() == [3.0] * n


def test_a_call_that_differs_stops_the_peers_already_running_theirs():
    spawn(3, _running_peers_stopped)


def _limits(rank: int) -> None:
    import purlin.torch as pt

    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="communicators must be a positive integer"):
            pt.set_cache_limits(communicators=bad)


def test_cache_limits_are_checked():
    spawn(1, _limits)


def _thrash(rank: int) -> None:
    import warnings

    import purlin.torch as pt

    pt.init()
    pt.set_cache_limits(communicators=1)
    # Each all_reduce one all_reduce_v kernel: the latency one, then the throughput one.
    small, large = torch.ones(8), torch.ones(1 << 17)
    def told(caught) -> list[str]:
        return [str(w.message) for w in caught if "closed lately is made again" in str(w.message)]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pt.all_reduce(small)
        pt.all_reduce(large)
        assert not told(caught), told(caught)
        for _ in range(3):
            pt.all_reduce(small)  # its communicators were closed for the large call's: made again
            pt.all_reduce(large)
    said = told(caught)
    assert len(said) == 1 and "set_cache_limits" in said[0], said
    assert small.eq(2 ** 4).all() and large.eq(2 ** 4).all()
    pt.set_cache_limits(communicators=32)


def test_calls_that_outgrow_the_cache_limits_are_told_once():
    spawn(2, _thrash)
