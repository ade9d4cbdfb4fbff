"""Derivatives through purlin.jax are jax.lax's: jax.grad and jax.jvp of
programs whose collectives run on purlin, with shard_map's varying-axes
types checked (psum's transpose is then a pvary, no communication) and not
(psum's transpose is a psum); the transposes that communicate run on purlin."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import purlin.jax as pj
from purlin.jax.collectives import twin

SPEC = P(("a", "b"))
LOSSES = {
    "psum": (lambda L, u: L.psum(u * u, "b"), P("a")),
    "psum over both": (lambda L, u: L.psum(jnp.sin(u), ("a", "b")), P()),
    "pmean": (lambda L, u: L.pmean(u * 3, "b"), P("a")),
    "all_gather": (lambda L, u: L.all_gather(u, "b", axis=1, tiled=True), SPEC),
    "all_gather stacked": (lambda L, u: L.all_gather(u * u, "a", axis=0), SPEC),
    "psum_scatter": (lambda L, u: L.psum_scatter(u, "b", scatter_dimension=1, tiled=True), SPEC),
    "all_to_all": (lambda L, u: L.all_to_all(u, "b", 1, 0, tiled=True), SPEC),
    "ppermute": (lambda L, u: L.ppermute(u, "b", [(0, 1), (1, 2), (3, 0)]), SPEC),
}


def mesh_of(devices):
    return Mesh(np.array(devices).reshape(2, 4), ("a", "b"))


def loss(lib, mesh, name, check_vma):
    body, out_spec = LOSSES[name]
    f = jax.shard_map(lambda u: body(lib, u), mesh=mesh, in_specs=SPEC, out_specs=out_spec, check_vma=check_vma)
    return lambda v: (f(v) ** 2).sum()


@pytest.mark.parametrize("check_vma", [True, False])
@pytest.mark.parametrize("name", LOSSES)
def test_grad_equals_jax_lax(devices, name, check_vma):
    mesh = mesh_of(devices)
    x = jax.device_put(np.arange(128, dtype=np.float32).reshape(16, 8) / 16, NamedSharding(mesh, SPEC))
    with jax.set_mesh(mesh):
        ours = jax.jit(jax.grad(loss(pj, mesh, name, check_vma)))(x)
        theirs = jax.jit(jax.grad(loss(jax.lax, mesh, name, check_vma)))(x)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


def test_the_backward_pass_runs_on_purlin(devices):
    """all_gather's transpose is purlin's psum_scatter, not jax.lax's."""
    mesh = mesh_of(devices)
    grad = jax.grad(loss(pj, mesh, "all_gather", True))
    x = jax.device_put(np.ones((16, 8), np.float32), NamedSharding(mesh, SPEC))
    with jax.set_mesh(mesh):
        program = str(jax.make_jaxpr(grad)(x))
    assert "purlin_reduce_scatter[" in program and "purlin_all_gather[" in program, program
    assert " reduce_scatter[" not in program and " all_gather[" not in program, program


def test_jvp(devices):
    mesh = mesh_of(devices)

    def f(lib):
        return jax.shard_map(lambda u: lib.all_to_all(lib.psum(u, "a"), "b", 1, 0, tiled=True), mesh=mesh,
                             in_specs=SPEC, out_specs=SPEC, check_vma=False)

    x = jax.device_put(np.arange(128, dtype=np.float32).reshape(16, 8), NamedSharding(mesh, SPEC))
    t = jax.device_put(np.ones((16, 8), np.float32), NamedSharding(mesh, SPEC))
    ours = jax.jit(lambda a, b: jax.jvp(f(pj), (a,), (b,)))(x, t)
    theirs = jax.jit(lambda a, b: jax.jvp(f(jax.lax), (a,), (b,)))(x, t)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("lib", [jax.lax, pj], ids=["jax.lax", "purlin.jax"])
def test_pmax_has_no_derivative_as_in_jax_lax(devices, lib):
    mesh = mesh_of(devices)
    f = jax.shard_map(lambda u: lib.pmax(u, "b"), mesh=mesh, in_specs=SPEC, out_specs=P("a"))
    x = jax.device_put(np.ones((16, 8), np.float32), NamedSharding(mesh, SPEC))
    with pytest.raises(NotImplementedError, match="Differentiation rule for '.*pmax' not implemented"):
        jax.grad(lambda v: f(v).sum())(x)


def test_twins_keep_jax_lax_abstract_evaluation():
    assert twin(jax.lax.all_gather_p).name == "purlin_all_gather"
    assert twin(jax.lax.all_gather_p) is twin(jax.lax.all_gather_p)
