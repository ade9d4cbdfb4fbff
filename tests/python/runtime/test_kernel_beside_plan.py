"""A plan is the runtime contract alone: compilation gives its CUDA program
beside it (compile_collective), the CPU backend runs the plan without ever
generating that program, and a CUDA communicator takes the program
explicitly, checked against the plan before any CUDA call (no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest

import purlin.runtime as runtime
from purlin.compile import compile_collective, compile_device_counts, compile_plan
from purlin.cuda.program import CudaProgram
from purlin.plan import from_json
from purlin.runtime.backend import checked_kernel
from purlin.testing.cases import counts_for


@pytest.fixture
def cuda_build(monkeypatch):
    """The CUDA backend as built, so that the checks before any CUDA call run on any build."""
    monkeypatch.setattr(runtime, "available_backends", lambda: ("cpu", "cuda"))


def test_compile_plan_is_compile_collective_s_plan():
    compiled = compile_collective("all_gather", 3, "f32", None, 8)
    assert compiled.plan == compile_plan("all_gather", 3, "f32", None, 8)
    assert isinstance(compiled.cuda, CudaProgram) and compiled.cuda.world == 3
    assert not hasattr(compiled.plan, "cuda")


def test_the_cpu_backend_never_generates_the_kernel(monkeypatch):
    def generated(*args):
        raise AssertionError("the CUDA program was generated for the CPU backend")

    monkeypatch.setattr(CudaProgram, "source", generated)
    monkeypatch.setattr(CudaProgram, "tables", property(generated))
    compiled = compile_collective("all_reduce", 2, "f32", "sum", 4)
    outs = [np.zeros(4, np.float32) for _ in range(2)]
    runtime.Communicator(compiled.plan, "cpu", kernel=compiled.cuda).run([np.ones(4, np.float32)] * 2, outs)
    assert all((o == 2).all() for o in outs)


def test_a_cuda_communicator_without_a_kernel_is_refused(cuda_build):
    plan = compile_plan("all_reduce", 2, "f32", "sum", 4)
    with pytest.raises(ValueError, match="ar: the cuda backend launches the plan's compiled kernel, and none was "
                                         "given; pass kernel="):
        runtime.Communicator(plan, "cuda", name="ar")
    # A plan read back from JSON is the same contract, with no kernel either.
    with pytest.raises(ValueError, match="none was given"):
        runtime.Communicator(from_json(plan.to_json()), "cuda", name="ar")


def test_a_cuda_communicator_refuses_a_kernel_that_is_not_the_plan_s(cuda_build):
    plan = compile_plan("all_reduce", 2, "f32", "sum", 4)
    with pytest.raises(TypeError, match="kernel= takes a purlin.cuda.program.CudaProgram .*got a Plan"):
        runtime.Communicator(plan, "cuda", name="ar", kernel=plan)
    for other, match in (
        (compile_collective("all_reduce", 3, "f32", "sum", 4), "for world 3, sm_90, f32, buffers of 4 and 4"),
        (compile_collective("all_reduce", 2, "f32", "sum", 4, arch="sm_100"), "for world 2, sm_100, f32"),
        (compile_collective("all_reduce", 2, "bf16", "sum", 4), "for world 2, sm_90, bf16"),
        (compile_collective("all_gather", 2, "f32", None, 4), "buffers of 4 and 8 elements"),
    ):
        with pytest.raises(ValueError, match=f"ar: the kernel is not the plan's: it is .*{match}.*; the plan for "
                                             "world 2, sm_90, f32, 4 and 4"):
            runtime.Communicator(plan, "cuda", name="ar", kernel=other.cuda)


def test_a_device_counts_kernel_runs_with_its_counts_bound_or_without_a_plan(cuda_build):
    coll = compile_device_counts("all_gather_v", 2, "f32", input_elems=4, output_elems=8)
    with pytest.raises(ValueError, match="agv: the kernel reads its counts on the device at every call, the plan's "
                                         "are fixed; give the kernel of the plan's counts"):
        runtime.Communicator(coll.bind([1, 3]), "cuda", name="agv", kernel=coll.cuda)
    bound = coll.bind_collective([1, 3])
    assert not bound.cuda.device_counts and bound.cuda.counts == [1, 3]
    assert checked_kernel(bound.cuda, bound.plan, "agv") is bound.cuda
    assert coll.cuda.device_counts and (coll.cuda.count_words, coll.cuda.buffer_elems) == (1, (4, 8))



@pytest.mark.parametrize("name", ["all_gather", "all_to_all_v"])
def test_ranks_sharing_a_gpu_refuse_grids_sized_for_a_gpu_each(cuda_build, monkeypatch, name):
    """The latency regime of 1 MiB lowered for a GPU a rank launches 512
    blocks of 512 threads here: two ranks' grids need 8 blocks an SM of 132,
    which no SM holds, and the ranks' blocks wait for each other. Refused
    before any CUDA call, naming the lowering that fits; lowered for the
    sharing, it fits."""
    monkeypatch.setattr(runtime.backend._runtime, "cuda_device_sms", lambda device: 132, raising=False)
    elems = 1 << 19  # 1 MiB of bf16 a rank
    counts = counts_for(name, 2, elems, seed=1) if name.endswith("_v") else None

    def compiled(lowering):
        return compile_collective(name, 2, "bf16", None, None if counts else elems, counts, arch="sm_90",
                                  lowering=lowering)

    lone = compiled("regime=latency")
    assert lone.cuda.blocks_per_sm(2, 132) == 8
    with pytest.raises(ValueError, match=rf"{name}: 2 ranks share GPU 0, whose 132 SMs cannot hold their grids at "
                                         r"once: 512 blocks of 512 threads a rank need 8 blocks an SM, 4096 threads "
                                         r"where an SM holds 2048; lower it for 2 ranks on a GPU of 132 SMs "
                                         r"\(convert-coll-to-snac ranks-per-device=2 sms=132;"):
        runtime.backend.kernel_spec(lone.cuda, [0, 0], [(1, 1)] * 2, name)
    assert runtime.backend.blocks_per_sm(lone.cuda, [0, 1], name) == 4
    shared = compiled("regime=latency ranks-per-device=2")
    assert runtime.backend.blocks_per_sm(shared.cuda, [0, 0], name) * shared.cuda.threads <= 2048
