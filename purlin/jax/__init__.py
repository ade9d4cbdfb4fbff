"""purlin.jax: jax.lax's collectives on purlin, inside jax.shard_map.

    import purlin.jax as pj
    f = jax.shard_map(lambda x: pj.psum(x, "i"), mesh=mesh, in_specs=P("i"), out_specs=P())

`psum`, `pmax`, `pmin`, `pmean`, `all_gather`, `psum_scatter`, `all_to_all` and
`ppermute` take jax.lax's arguments and return what jax.lax returns; under
jax.jit and jax.grad they are JAX primitives (purlin.jax.collectives), each
lowered to an XLA FFI custom call per device: on CPU devices a rank of
purlin's CPU backend per device, on its own thread; on GPUs the collective's
compiled kernel, launched on the device's stream.
"""

from purlin.jax.collectives import all_gather, all_to_all, pmax, pmean, pmin, ppermute, psum, psum_scatter

__all__ = ["all_gather", "all_to_all", "pmax", "pmean", "pmin", "ppermute", "psum", "psum_scatter"]
