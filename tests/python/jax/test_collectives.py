"""purlin.jax's collectives inside shard_map on CPU devices equal jax.lax's, for
every dtype purlin moves, on meshes of 8, 4 and 2x4 devices with collectives
over one axis or both, under jit.

The data are small integers, so every sum, maximum and mean is exact in
every dtype whatever the order of reduction, and the results must be equal
bit for bit; test_rounding compares random floats within the tolerance of
a reduction in another order."""

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import purlin.jax as pj
from purlin.dtypes import DTYPE_NAMES, numpy_dtype

# Meshes (shape, names) and the axes each collective runs over.
MESHES = {
    "8": ((8,), ("i",), "i"),
    "4": ((4,), ("i",), "i"),
    "2x4 over b": ((2, 4), ("a", "b"), "b"),
    "2x4 over a": ((2, 4), ("a", "b"), "a"),
    "2x4 over both": ((2, 4), ("a", "b"), ("a", "b")),
    "2x4 over both, b first": ((2, 4), ("a", "b"), ("b", "a")),
}
# Largest magnitude that keeps every sum of 8 exact in the dtype.
HIGH = {"fp8e5m2": 1, "fp8e4m3": 2}


def mesh_of(devices, shape, names):
    return Mesh(np.array(devices[: int(np.prod(shape))]).reshape(shape), names)


def data(dtype_name, shape, seed=0):
    dt = numpy_dtype(dtype_name)
    rng = np.random.default_rng(seed)
    high = HIGH.get(dtype_name, 3)
    low = 0 if np.issubdtype(dt, np.unsignedinteger) else -high
    return rng.integers(low, high + 1, shape).astype(dt)


def every_collective(lib, axes, n):
    """One program calling every collective of `lib` (jax.lax or purlin.jax) over `axes` of n devices."""
    shift = [(j, (j + 1) % n) for j in range(n)]
    return lambda u: (
        lib.psum(u, axes),
        lib.pmax(u, axes),
        lib.pmin(u, axes),
        lib.pmean(u, axes),
        lib.all_gather(u, axes),
        lib.all_gather(u, axes, axis=1, tiled=True),
        lib.all_gather(u[0], axes, axis=0),
        lib.psum_scatter(u, axes, tiled=True),
        lib.psum_scatter(u, axes, scatter_dimension=1, tiled=True),
        lib.psum_scatter(u[:n], axes, scatter_dimension=0),
        lib.all_to_all(u, axes, 1, 0, tiled=True),
        lib.all_to_all(u, axes, 0, 1, tiled=True),
        lib.all_to_all(u[:n], axes, 0, 1),
        lib.ppermute(u, axes, shift),
        lib.ppermute(u, axes, shift[: n // 2]),   # devices nobody sends to get zeros
        lib.psum(u[0, 0], axes)[None],            # of rank 0
        lib.psum({"x": u, "y": [u[1:3]]}, axes),  # a pytree
    )


def run(body, mesh, spec, x):
    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False))
    return jax.tree.leaves(f(jax.device_put(x, NamedSharding(mesh, spec))))


def assert_same(ours, theirs):
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, (k, a.dtype, b.dtype, a.shape, b.shape)
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), (k, a, b)


@pytest.mark.parametrize("mesh_name", MESHES)
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_every_collective_equals_jax_lax(devices, mesh_name, dtype):
    shape, names, axes = MESHES[mesh_name]
    mesh = mesh_of(devices, shape, names)
    n = int(np.prod([mesh.shape[a] for a in ((axes,) if isinstance(axes, str) else axes)]))
    spec = P(names)
    with jax.enable_x64(numpy_dtype(dtype).itemsize == 8):
        x = data(dtype, (8 * mesh.size, 8))
        assert_same(run(every_collective(pj, axes, n), mesh, spec, x),
                    run(every_collective(jax.lax, axes, n), mesh, spec, x))


@pytest.mark.parametrize("dtype", ["f32", "bf16", "i32"])
def test_varying_types_as_shard_map_checks_them(devices, dtype):
    """With check_vma (shard_map's default) psum's result is invariant, so it
    may leave shard_map unsharded, as jax.lax's does."""
    mesh = mesh_of(devices, (2, 4), ("a", "b"))
    x = data(dtype, (16, 4))

    def f(lib):
        return jax.jit(jax.shard_map(lambda u: (lib.psum(u, "b"), lib.pmean(u * 2, ("a", "b")), lib.all_gather(u, "a")),
                                     mesh=mesh, in_specs=P(("a", "b")), out_specs=(P("a"), P(), P(("a", "b")))))

    sharded = jax.device_put(x, NamedSharding(mesh, P(("a", "b"))))
    assert_same(jax.tree.leaves(f(pj)(sharded)), jax.tree.leaves(f(jax.lax)(sharded)))


def test_axis_index_groups(devices):
    mesh = mesh_of(devices, (8,), ("i",))
    groups = [[0, 3, 5, 6], [1, 2, 4, 7]]
    uneven = [[0, 5], [1, 2, 3, 4, 6, 7]]
    x = data("i32", (64, 4))

    def body(lib):
        return lambda u: (lib.psum(u, "i", axis_index_groups=groups), lib.psum(u, "i", axis_index_groups=uneven),
                          lib.pmax(u, "i", axis_index_groups=uneven), lib.pmean(u, "i", axis_index_groups=uneven),
                          lib.pmean(u.astype(jnp.float32), "i", axis_index_groups=groups),
                          lib.all_gather(u, "i", axis_index_groups=groups, tiled=True),
                          lib.psum_scatter(u, "i", axis_index_groups=groups, tiled=True),
                          lib.all_to_all(u, "i", 0, 1, axis_index_groups=groups, tiled=True))

    assert_same(run(body(pj), mesh, P("i"), x), run(body(jax.lax), mesh, P("i"), x))


def test_mesh_devices_in_any_order(devices):
    """Ranks follow the mesh's positions, not the devices' ids."""
    mesh = Mesh(np.array(devices)[[5, 2, 7, 0, 4, 1, 6, 3]].reshape(2, 4), ("a", "b"))
    x = data("i32", (64, 8))
    assert_same(run(every_collective(pj, "b", 4), mesh, P(("a", "b")), x),
                run(every_collective(jax.lax, "b", 4), mesh, P(("a", "b")), x))


def test_calls_repeat_and_interleave(devices):
    """One compiled program called again and again, and two programs in turn,
    each call's data its own (epochs carry over between calls)."""
    mesh = mesh_of(devices, (8,), ("i",))
    spec = P("i")
    f = jax.jit(jax.shard_map(lambda u: pj.psum(u, "i"), mesh=mesh, in_specs=spec, out_specs=spec))
    g = jax.jit(jax.shard_map(lambda u: pj.all_gather(pj.psum(u, "i") * 2, "i", tiled=True), mesh=mesh,
                              in_specs=spec, out_specs=spec))
    for k in range(12):
        x = jax.device_put(data("i32", (8, 16), seed=k), NamedSharding(mesh, spec))
        want = np.tile(np.asarray(x).reshape(8, 1, 16).sum(0), (8, 1))
        assert np.array_equal(np.asarray(f(x)), want)
        assert np.array_equal(np.asarray(g(x)), np.tile(2 * want, (8, 1)))


def test_a_collective_in_a_loop(devices):
    mesh = mesh_of(devices, (4,), ("i",))

    def body(lib):
        return lambda u: jax.lax.fori_loop(0, 5, lambda _, v: lib.pmax(v, "i") - lib.psum(v, "i") // 4, u)

    x = data("i32", (16, 4))
    assert_same(run(body(pj), mesh, P("i"), x), run(body(jax.lax), mesh, P("i"), x))


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_rounding(devices, dtype):
    """Random floats: purlin sums in rank order in f32 and rounds once, XLA its
    own way; they agree to the dtype's precision."""
    mesh = mesh_of(devices, (8,), ("i",))
    dt = numpy_dtype(dtype)
    x = np.random.default_rng(1).standard_normal((64, 32)).astype(dt)
    ours = run(lambda u: (pj.psum(u, "i"), pj.pmean(u, "i"), pj.psum_scatter(u, "i", tiled=True)), mesh, P("i"), x)
    theirs = run(lambda u: (jax.lax.psum(u, "i"), jax.lax.pmean(u, "i"), jax.lax.psum_scatter(u, "i", tiled=True)),
                 mesh, P("i"), x)
    eps = float(ml_dtypes.finfo(dt).eps)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b, np.float32), rtol=8 * eps, atol=8 * eps)


def test_under_pmap(devices):
    x = data("i32", (8, 8))

    def f(lib):
        return jax.pmap(lambda v: (lib.psum(v, "p"), lib.all_gather(v, "p"), lib.ppermute(v, "p", [(0, 7), (7, 0)])),
                        axis_name="p", devices=devices)

    assert_same(jax.tree.leaves(f(pj)(x)), jax.tree.leaves(f(jax.lax)(x)))
