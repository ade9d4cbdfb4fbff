"""What purlin.torch's regime kernels give on CUDA, checked on the CPU (the
kernels are generated, not run): a throughput call's V kernel is lowered once
and every size binds it, sizes within one staging chunk in one layout (one
communicator runs them all), a size of more chunks in another; the lowering
options each backend asks for."""

from __future__ import annotations

import pytest

from purlin.compile import compile_device_counts
from purlin.runtime.backend import binding_layout
from purlin.torch.regimes import Regime, input_extent, options, regime

# f32 elements a rank, all in the throughput regime on sm_90 and within one
# 4 MiB staging chunk, odd ones among them.
SIZES = (16411, 65536, 100003, 262147, 1000003)


def _counts(collective: str, world: int, n: int) -> list:
    return [[n] * world] * world if collective == "all_to_all_v" else [n + r for r in range(world)]


@pytest.mark.parametrize("collective", ["all_gather_v", "reduce_scatter_v", "all_to_all_v"])
@pytest.mark.parametrize("world", [2, 3, 5])
@pytest.mark.parametrize("symmetric", [False, True], ids=["staged", "in-place"])
def test_throughput_sizes_bind_one_kernel_in_one_layout(collective, world, symmetric):
    op = "sum" if collective == "reduce_scatter_v" else None
    rg = regime(collective, world, "f32", input_extent(collective, _counts(collective, world, SIZES[0])), "sm_90")
    assert rg.name == "throughput"
    kernel = compile_device_counts(collective, world, "f32", op, input_elems=rg.input_elems,
                                   output_elems=rg.output_elems, arch="sm_90",
                                   lowering=options("", rg, cuda=True, symmetric=symmetric), counts_on_host=True)
    bound = [kernel.bind_collective(_counts(collective, world, n)) for n in SIZES]
    assert len({binding_layout(b.cuda) for b in bound}) == 1
    assert len({b.cuda.source().text for b in bound}) == 1
    assert all(b.plan.symmetric is symmetric for b in bound)
    # Staged, a slice of three chunks is three units: another layout of the same kernel (in place: the same).
    larger = kernel.bind_collective(_counts(collective, world, 3 << 20))
    assert larger.cuda.source().text == bound[0].cuda.source().text
    assert (binding_layout(larger.cuda) == binding_layout(bound[0].cuda)) is symmetric


def test_options_per_backend():
    rg = Regime("throughput", 1 << 30, 1 << 30)
    assert options("", rg) == "regime=throughput chunk-bytes=1048576"
    assert options("", rg, cuda=True) == "regime=throughput"
    assert options("", rg, cuda=True, symmetric=True) == "regime=throughput symmetric=true"
    assert options("chunk-bytes=4096 symmetric=false", rg, cuda=True, symmetric=True) == \
        "chunk-bytes=4096 symmetric=false regime=throughput"
    latency = Regime("latency", 1 << 14, 1 << 16)
    assert options("regime=throughput", latency) == "regime=throughput"
