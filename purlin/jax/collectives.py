"""jax.lax's collectives, run by purlin.

Each function traces jax.lax's own (so axis names, axis_index_groups,
pytrees, bool inputs, the varying-axes types of shard_map and every check
are exactly jax.lax's), then binds, in place of each of jax's collective
primitives, purlin's twin of it: the same parameters and abstract
evaluation (jax's rule is called), the same derivatives (as jax.lax defines
them, through purlin's collectives where they communicate), and a lowering
to one XLA FFI custom call per device around transposes done in jax
(purlin.jax.layouts). pmean on floats is purlin's `avg` reduction.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Literal, Primitive
from jax.interpreters import ad, mlir

from purlin.dtypes import numpy_dtypes
from purlin.jax.build import registered
from purlin.jax.layouts import axis_groups, layout, refine
from purlin.jax.sites import register

# purlin's dtypes as JAX names them (bfloat16 and the fp8s are ml_dtypes', as in JAX).
_DTYPES = {dt: name for name, dt in numpy_dtypes().items()}

# jax.lax primitive -> purlin's reduction (None for collectives that copy).
_REDUCTIONS = {"psum_invariant": "sum", "psum": "sum", "pmax": "max", "pmin": "min", "reduce_scatter": "sum",
               "all_gather": None, "all_to_all": None, "ppermute": None}

_twins: dict[tuple[str, bool], Primitive] = {}


def psum(x, axis_name, *, axis_index_groups=None):
    """jax.lax.psum on purlin."""
    return _run(jax.lax.psum, "psum", x, axis_name, axis_index_groups=axis_index_groups)


def pmax(x, axis_name, *, axis_index_groups=None):
    """jax.lax.pmax on purlin."""
    return _run(jax.lax.pmax, "pmax", x, axis_name, axis_index_groups=axis_index_groups)


def pmin(x, axis_name, *, axis_index_groups=None):
    """jax.lax.pmin on purlin."""
    return _run(jax.lax.pmin, "pmin", x, axis_name, axis_index_groups=axis_index_groups)


def pmean(x, axis_name, *, axis_index_groups=None):
    """jax.lax.pmean on purlin: floats by purlin's `avg` (the sum in f32, or f64,
    divided once), other dtypes as jax.lax does it (the sum, then a division)."""
    def one(leaf):
        if jnp.issubdtype(leaf.dtype, jnp.floating) and _even(axis_index_groups):
            return _run(jax.lax.psum, "pmean", leaf, axis_name, axis_index_groups=axis_index_groups, mean=True)
        total = psum(leaf, axis_name, axis_index_groups=axis_index_groups)
        return total / _group_size(axis_name, axis_index_groups)
    return jax.tree.map(one, x)


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
    """jax.lax.all_gather on purlin."""
    return _run(jax.lax.all_gather, "all_gather", x, axis_name, axis_index_groups=axis_index_groups, axis=axis,
                tiled=tiled)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """jax.lax.psum_scatter on purlin."""
    return _run(jax.lax.psum_scatter, "psum_scatter", x, axis_name, scatter_dimension=scatter_dimension,
                axis_index_groups=axis_index_groups, tiled=tiled)


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """jax.lax.all_to_all on purlin."""
    return _run(jax.lax.all_to_all, "all_to_all", x, axis_name, split_axis, concat_axis,
                axis_index_groups=axis_index_groups, tiled=tiled)


def ppermute(x, axis_name, perm):
    """jax.lax.ppermute on purlin (devices no pair sends to get zeros)."""
    return _run(jax.lax.ppermute, "ppermute", x, axis_name, perm)


def _even(axis_index_groups) -> bool:
    return axis_index_groups is None or len({len(g) for g in axis_index_groups}) == 1


def _group_size(axis_name, axis_index_groups) -> int:
    if axis_index_groups is not None:
        return len(axis_index_groups[0])
    return jax.lax.axis_size(axis_name)


def _run(lax_fn, api: str, x, *args, mean: bool = False, **kwargs):
    """`lax_fn(x, *args, **kwargs)` as jax.lax traces it, purlin's twins bound
    for its collectives."""
    leaves, tree = jax.tree.flatten(x)
    closed, shapes = jax.make_jaxpr(lambda *ls: lax_fn(jax.tree.unflatten(tree, ls), *args, **kwargs),
                                    return_shape=True)(*leaves)
    out = _evaluate(closed, leaves, api, mean)
    return jax.tree.unflatten(jax.tree.structure(shapes), out)


def _evaluate(closed, args, api: str, mean: bool):
    jaxpr = closed.jaxpr
    env = dict(zip(jaxpr.constvars, closed.consts))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        if eqn.primitive.name in _REDUCTIONS:
            _check_dtype(api, ins[0])
            outs = [twin(eqn.primitive, mean).bind(*ins, **eqn.params)]
        else:
            outs = eqn.primitive.bind(*ins, **eqn.primitive.get_bind_params(eqn.params))
            outs = outs if eqn.primitive.multiple_results else [outs]
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


def _check_dtype(api: str, x) -> None:
    dtype = np.dtype(x.dtype)
    if dtype not in _DTYPES:
        raise TypeError(f"purlin.jax.{api}: purlin does not move {dtype}; it moves "
                        f"{', '.join(str(d) for d in _DTYPES)}")


def twin(lax_prim: Primitive, mean: bool = False) -> Primitive:
    """purlin's primitive for jax.lax's `lax_prim` (its mean: the `avg` reduction)."""
    key = (lax_prim.name, mean)
    if key in _twins:
        return _twins[key]
    p = Primitive(f"purlin_{lax_prim.name}" + ("_mean" if mean else ""))
    p.def_effectful_abstract_eval(lambda aval, **params: lax_prim.abstract_eval(aval, **params))
    mlir.register_lowering(p, partial(_lower, lax_prim.name, mean))
    transpose = _TRANSPOSES.get(lax_prim.name)
    if transpose is not None:
        ad.deflinear2(p, partial(transpose, lax_prim, mean))
    _twins[key] = p
    return p


# -- derivatives: jax.lax's, through purlin where they communicate -----------


def _psum_invariant_transpose(lax_prim, mean, ct, x, *, axes):
    # Back to varying, no communication (jax's own rule).
    ct = ct / math.prod(jax.lax.axis_size(a) for a in axes) if mean else ct
    return ad.primitive_transposes[lax_prim](ct, x, axes=axes)


def _psum_transpose(lax_prim, mean, ct, x, *, axes, axis_index_groups):
    return (twin(lax_prim, mean).bind(ct, axes=axes, axis_index_groups=axis_index_groups),)


def _all_gather_transpose(lax_prim, mean, ct, x, *, all_gather_dimension, axis_name, axis_index_groups,
                          axis_size, tiled):
    return (psum_scatter(ct, axis_name, scatter_dimension=all_gather_dimension,
                         axis_index_groups=axis_index_groups, tiled=tiled),)


def _reduce_scatter_transpose(lax_prim, mean, ct, x, *, axis_name, scatter_dimension, axis_index_groups,
                              axis_size, tiled):
    return (all_gather(ct, axis_name, axis_index_groups=axis_index_groups, axis=scatter_dimension,
                       tiled=tiled),)


def _all_to_all_transpose(lax_prim, mean, ct, x, *, axis_name, split_axis, concat_axis, axis_index_groups,
                          tiled):
    return (all_to_all(ct, axis_name, concat_axis, split_axis, axis_index_groups=axis_index_groups,
                       tiled=tiled),)


def _ppermute_transpose(lax_prim, mean, ct, x, *, axis_name, perm):
    return (ppermute(ct, axis_name, [(dst, src) for src, dst in perm]),)


# pmax and pmin have none, as in jax.lax.
_TRANSPOSES = {"psum_invariant": _psum_invariant_transpose, "psum": _psum_transpose,
               "all_gather": _all_gather_transpose, "reduce_scatter": _reduce_scatter_transpose,
               "all_to_all": _all_to_all_transpose, "ppermute": _ppermute_transpose}


# -- lowering -----------------------------------------------------------------


def _lower(name: str, mean: bool, ctx, x, **params):
    platforms = tuple(ctx.module_context.platforms)
    if platforms not in (("cpu",), ("cuda",)):
        raise NotImplementedError(f"purlin.jax runs on CPU and CUDA devices, not when lowering for {platforms}")
    mesh = getattr(ctx.module_context.axis_context, "mesh", None)
    if mesh is None or not hasattr(mesh, "devices"):
        raise NotImplementedError("purlin.jax collectives run inside jax.shard_map over a mesh of devices")
    in_aval, = ctx.avals_in
    out_aval, = ctx.avals_out
    axes = params.get("axes", params.get("axis_name"))
    axes = tuple(axes) if isinstance(axes, (tuple, list)) else (axes,)
    if any(isinstance(a, int) for a in axes):
        raise NotImplementedError(f"purlin.jax reduces over named axes only, got {axes}")
    groups = refine(axis_groups(mesh.devices.shape, mesh.axis_names, axes), params.get("axis_index_groups"))
    how = layout(name, params, tuple(in_aval.shape), tuple(out_aval.shape), len(groups[0]),
                 "avg" if mean else _REDUCTIONS[name])
    if how.sorted_ranks:
        groups = [sorted(g) for g in groups]
    flat = mesh.devices.flat
    site = register(f"purlin.jax {name} over {axes}", how, _DTYPES[np.dtype(in_aval.dtype)], platforms[0],
                    [[flat[i] for i in g] for g in groups])
    target = registered()

    def run(v):
        call = jax.ffi.ffi_call(target, jax.ShapeDtypeStruct((how.output_elems,), v.dtype), has_side_effect=True)
        return how.post(call(how.pre(v), site=np.int64(site)))

    return mlir.lower_fun(run, multiple_results=False)(ctx, x)
