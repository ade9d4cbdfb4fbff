"""The GPU path: each device's rank kernel launched alone on XLA's stream for
the device (CudaCommunicator.run_rank, what the FFI handler calls), and
purlin.jax inside shard_map over GPUs against jax.lax. Marked gpu; skipped
where there are too few GPUs."""

import threading

import jax
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import purlin.jax as pj
from purlin.compile import compile_collective
from purlin.runtime import available_backends
from purlin.runtime.backend import _runtime, kernel_spec

pytestmark = pytest.mark.gpu


def gpus():
    try:
        return jax.devices("gpu")
    except RuntimeError:
        return []


def cuda_visible() -> int:
    return _runtime.cuda_device_count() if "cuda" in available_backends() else 0


@pytest.mark.skipif(cuda_visible() < 1, reason="needs a CUDA GPU and purlin's CUDA backend")
def test_ranks_launched_one_by_one_from_their_own_threads():
    """Two ranks on one GPU, each launched alone on its own stream by its own
    thread, as XLA's device threads do: every call's sum arrives."""
    import torch

    from purlin.compile import arch_of_device

    world, count = 2, 4096
    compiled = compile_collective("all_reduce", world=world, dtype="f32", op="sum", count=count,
                                  arch=arch_of_device(0))
    plan = compiled.plan
    extents = [(plan.input_extent(r), plan.output_extent(r)) for r in range(world)]
    comm = _runtime.CudaCommunicator(kernel_spec(compiled.cuda, [0, 0], extents), [0, 0], 10.0, "run_rank")
    streams = [torch.cuda.Stream(0) for _ in range(world)]
    for call in range(5):
        ins = [torch.full((count,), float(r + 1 + call), device="cuda:0") for r in range(world)]
        outs = [torch.zeros(count, device="cuda:0") for _ in range(world)]
        threads = [threading.Thread(target=comm.run_rank,
                                    args=(r, ins[r].data_ptr(), outs[r].data_ptr(), streams[r].cuda_stream))
                   for r in range(world)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        comm.synchronize()
        for out in outs:
            assert torch.all(out == sum(r + 1 + call for r in range(world)))


def every_collective(lib, n):
    shift = [(j, (j + 1) % n) for j in range(n)]
    return lambda u: (lib.psum(u, "g"), lib.pmax(u, "g"), lib.pmean(u, "g"), lib.all_gather(u, "g", tiled=True),
                      lib.psum_scatter(u, "g", tiled=True), lib.all_to_all(u, "g", 1, 0, tiled=True),
                      lib.ppermute(u, "g", shift))


def run(lib, devices, x):
    mesh = Mesh(np.array(devices), ("g",))
    f = jax.jit(jax.shard_map(every_collective(lib, len(devices)), mesh=mesh, in_specs=P("g"), out_specs=P("g"),
                              check_vma=False))
    return [np.asarray(y) for y in f(jax.device_put(x, NamedSharding(mesh, P("g"))))]


@pytest.mark.parametrize("count", [1, 2])
def test_collectives_on_gpus_equal_jax_lax(count):
    devices = gpus()[:count]
    if len(devices) < count or cuda_visible() < count:
        pytest.skip(f"needs {count} GPUs visible to JAX and purlin's CUDA backend")
    x = np.random.default_rng(0).integers(-3, 4, (8 * count, 8)).astype(np.float32)
    for ours, theirs in zip(run(pj, devices, x), run(jax.lax, devices, x)):
        np.testing.assert_array_equal(ours, theirs)


def test_grad_on_gpus():
    devices = gpus()[:2]
    if len(devices) < 2 or cuda_visible() < 2:
        pytest.skip("needs 2 GPUs visible to JAX and purlin's CUDA backend")
    mesh = Mesh(np.array(devices), ("g",))

    def loss(lib):
        body = jax.shard_map(lambda u: lib.all_gather(lib.psum(u * u, "g"), "g", tiled=True), mesh=mesh,
                             in_specs=P("g"), out_specs=P("g"), check_vma=False)
        return lambda v: (body(v) ** 2).sum()

    x = jax.device_put(np.arange(16, dtype=np.float32).reshape(4, 4), NamedSharding(mesh, P("g")))
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.grad(loss(pj)))(x)),
                                  np.asarray(jax.jit(jax.grad(loss(jax.lax)))(x)))
