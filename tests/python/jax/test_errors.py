"""What purlin.jax refuses, it refuses at trace time with a message that says
what and why: a dtype purlin does not move, an axis the mesh lacks, a call
outside shard_map, a permutation that repeats a device."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import purlin.jax as pj


def call(devices, body, x):
    mesh = Mesh(np.array(devices), ("i",))
    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i"), check_vma=False))
    return f(jax.device_put(x, NamedSharding(mesh, P("i"))))


@pytest.mark.parametrize("dtype", [jnp.int16, jnp.uint16, jnp.complex64, jnp.bool_])
def test_a_dtype_purlin_does_not_move(devices, dtype):
    with pytest.raises(TypeError, match=f"purlin.jax.all_gather: purlin does not move {np.dtype(dtype)}; it moves "
                                        "bfloat16, float16, float32"):
        call(devices, lambda u: pj.all_gather(u, "i", tiled=True), np.zeros((8, 2), dtype))


def test_bool_sums_as_jax_lax_sums_them(devices):
    """jax.lax.psum counts booleans in int32, and so does purlin.jax."""
    x = np.arange(16).reshape(8, 2) % 3 == 0
    ours = call(devices, lambda u: pj.psum(u, "i"), x)
    theirs = call(devices, lambda u: jax.lax.psum(u, "i"), x)
    assert ours.dtype == theirs.dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_an_axis_not_in_the_mesh(devices):
    with pytest.raises(NameError, match="unbound axis name: j"):
        call(devices, lambda u: pj.psum(u, "j"), np.zeros((8, 2), np.float32))


def test_outside_shard_map():
    with pytest.raises(NameError, match="unbound axis name: i"):
        jax.jit(lambda u: pj.psum_scatter(u, "i"))(np.zeros(8, np.float32))


def test_a_permutation_that_repeats_a_destination(devices):
    with pytest.raises(ValueError, match="ppermute sources and destinations must be unique"):
        call(devices, lambda u: pj.ppermute(u, "i", [(0, 1), (2, 1)]), np.zeros((8, 2), np.float32))


def test_a_split_that_does_not_divide(devices):
    with pytest.raises(ValueError, match="has to be divisible by the size of the named axis"):
        call(devices, lambda u: pj.all_to_all(u, "i", 1, 0, tiled=True), np.zeros((8, 3), np.float32))
