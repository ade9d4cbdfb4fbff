"""The modules JAX emits for collectives in `shard_map` and `pmap`, imported and
run by purlin.

    python bench/jax_corpus.py                      # the whole corpus: import and run rates
    python bench/jax_corpus.py --out DIR            # also write each module to DIR/NAME.mlir
    python bench/jax_corpus.py --backend cpu        # run the collectives on purlin's CPU backend
    python bench/jax_corpus.py --limit 40 --seed 1  # a sample of 40 cases

Each case is one jitted program: psum, pmax, pmin, pmean, all_gather
(tiled or not, along any dimension), psum_scatter, all_to_all or ppermute
over one mesh axis, several, or part of the mesh (shard_map's axis_names), on
meshes of 2 to 8 devices of one to three axes, tensors of rank 0 to 3, in
f32, bf16, f16, i32 and a few more; some with arithmetic around the
collective; and programs as a JAX user writes them around collectives (a
matmul before psum, a ring of ppermutes in fori_loop, a cond, cumsum,
softmax, pytrees, indexing), on small integers so that every result is
exact. Each is lowered by both partitioners (Shardy, JAX's default, and
GSPMD) and printed in pretty and generic form: four modules a case. A module
imports when `convert-stablehlo-to-coll` takes it; it runs when purlin's run
of the whole module (its inputs split by the module's shardings, the
collectives on purlin, the outputs reassembled) equals the coll level on
every collective and JAX's own outputs. Prints a line per module that fails,
then the rates.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

DEVICES = 8
PARTITIONERS = ("shardy", "gspmd")
FORMS = ("pretty", "generic")
MESHES: tuple[tuple[int, ...], ...] = ((8,), (4,), (2,), (3,), (2, 4), (4, 2), (2, 3), (2, 2, 2))
PROGRAM_MESHES = ((8,), (3,), (2, 4), (2, 2, 2))
DTYPES = ("float32", "bfloat16", "float16", "int32")
EXTRA_DTYPES = ("int8", "uint8", "uint32")
REDUCTIONS = ("psum", "pmax", "pmin", "pmean")


@dataclass(frozen=True)
class Case:
    """One program: `fn` mapped over `mesh` (shard_map with `in_spec` /
    `out_spec`, or pmap over its one axis) on inputs of `shapes`."""

    name: str
    mesh: tuple[int, ...]
    fn: Callable
    shapes: tuple[tuple[int, ...], ...]
    dtype: str
    in_specs: tuple = ()
    out_specs: object = None
    axis_names: frozenset[str] | None = None
    pmap: bool = False
    check_vma: bool = True

    def jitted(self):
        devices = np.array(jax.devices()[: int(np.prod(self.mesh))])
        if self.pmap:
            return jax.pmap(self.fn, axis_name="i", devices=list(devices))
        mesh = Mesh(devices.reshape(self.mesh), _names(self.mesh))
        kw: dict = {"check_vma": self.check_vma}
        if self.axis_names is not None:
            kw["axis_names"] = set(self.axis_names)
        return jax.jit(jax.shard_map(self.fn, mesh=mesh, in_specs=self.in_specs, out_specs=self.out_specs, **kw))

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Small integers, so that sums are exact in every dtype."""
        rng = np.random.default_rng(seed)
        out = []
        for shape in self.shapes:
            dt = np.dtype(jnp.dtype(self.dtype))
            low = 0 if dt.kind == "u" else -4
            out.append(np.asarray(rng.integers(low, 5, shape)).astype(dt))
        return out

    def lower(self, partitioner: str, form: str) -> str:
        jax.config.update("jax_use_shardy_partitioner", partitioner == "shardy")
        try:
            lowered = self.jitted().lower(*[jnp.asarray(a) for a in self.inputs()])
            if form == "pretty":
                return lowered.as_text()
            return lowered.compiler_ir("stablehlo").operation.get_asm(print_generic_op_form=True)
        finally:
            jax.config.update("jax_use_shardy_partitioner", True)

    def expected(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """JAX's own outputs on `inputs`."""
        out = self.jitted()(*[jnp.asarray(a) for a in inputs])
        return [np.asarray(o) for o in jax.tree.leaves(out)]


# The programs, their parameters bound (not closed over: the cases are built before they are lowered).
def _reduce(name: str, axes, a):
    return getattr(jax.lax, name)(a, axes)


def _reduce_sum(name: str, axes, a):
    return getattr(jax.lax, name)(a.sum(), axes)


def _all_gather(axes, dim: int, tiled: bool, a):
    return jax.lax.all_gather(a, axes, axis=dim, tiled=tiled)


def _psum_scatter(axes, dim: int, tiled: bool, a):
    return jax.lax.psum_scatter(a, axes, scatter_dimension=dim, tiled=tiled)


def _all_to_all(axes, split: int, concat: int, tiled: bool, a):
    return jax.lax.all_to_all(a, axes, split, concat, tiled=tiled)


def _ppermute(axes, perm, a):
    return jax.lax.ppermute(a, axes, perm)


def _scaled_psum(axes, a):
    return jax.lax.psum(a * 2, axes) - 1


def _psum_of_index(axes, a):
    first = axes if isinstance(axes, str) else axes[0]
    return jax.lax.psum(a + jax.lax.axis_index(first).astype(a.dtype), axes)


def _max_of_gather(axes, a):
    return jax.lax.pmax(jax.lax.all_gather(a, axes, tiled=True), axes)


def _matmul_psum(axes, x, w):
    """Tensor parallelism: the contraction split among the devices, then summed."""
    return jax.lax.psum(x @ w, axes)


def _batched_matmul_psum(axes, a):
    return jax.lax.psum(jnp.einsum("bij,bkj->bik", a, a), axes)


def _ring_sum(axes, g: int, a):
    """A ring all-reduce in a fori_loop: pass the block on, add what came."""
    perm = [(i, (i + 1) % g) for i in range(g)]

    def step(_, carry):
        total, block = carry
        block = jax.lax.ppermute(block, axes, perm)
        return total + block, block

    return jax.lax.fori_loop(0, g - 1, step, (a, a))[0]


def _cond_psum(axes, everything, a):
    """A cond whose predicate every device shares (a sum over the whole mesh)."""
    return jax.lax.cond(jax.lax.psum(a.sum(), everything) > 0, lambda v: jax.lax.psum(v, axes),
                        lambda v: v * 2 - 1, a)


def _cumsum_psum(axes, a):
    return jax.lax.psum(jnp.cumsum(a, axis=a.ndim - 1), axes)


def _softmax_of_psum(axes, a):
    return jax.nn.softmax(jax.lax.psum(a, axes) / 4, axis=-1)


def _chain(axes, g: int, a):
    """Several collectives in sequence, arithmetic between them."""
    total = jax.lax.psum(a, axes)
    gathered = jax.lax.all_gather(total - a, axes, tiled=True)
    return jax.lax.ppermute(jnp.maximum(gathered, 0), axes, [(i, (i + 1) % g) for i in range(g)])


def _pytree_psum(axes, a):
    out = jax.lax.psum({"a": a, "b": (a * 2, a.astype(jnp.int32))}, axes)
    return out["a"] + out["b"][0], out["b"][1]


def _indexing_psum(axes, a):
    """Padding, a gather and an update at the device's own index, a sort."""
    first = axes if isinstance(axes, str) else axes[0]
    i = jax.lax.axis_index(first)
    b = jnp.pad(a, ((1, 0), (0, 2)))
    b = jax.lax.dynamic_update_slice(b, jnp.full((1, 2), 7, b.dtype), (0, i % 2))
    b = b[:, jnp.array([2, 0, 1, 1])] + jnp.sort(b, axis=1)[:, :4]
    return jax.lax.psum(b.at[:, 1].add(3), axes)


def _argmax_pmax(axes, a):
    return jax.lax.pmax(jnp.argmax(a, axis=1).astype(jnp.int32) + jnp.clip(a, -2, 2).sum(axis=1), axes)


def _integer_ops_psum(axes, a):
    b = (a << 1) ^ (a & 3) | (a >> 1)
    return jax.lax.psum(jnp.where(b % 3 == 0, -b, jnp.abs(b)) // 2, axes)


def _unary_pmax(axes, a):
    f = a.astype(jnp.float32)
    b = jnp.floor(f / 2) + jnp.ceil(f / 3) + jnp.round(f / 4) + jnp.sign(f) * jnp.sqrt(jnp.abs(f))
    return jax.lax.pmax(b + jnp.tanh(f) + jax.nn.sigmoid(f) + jnp.exp(-jnp.abs(f)) + jnp.log1p(jnp.abs(f)), axes)


def _names(mesh: tuple[int, ...]) -> tuple[str, ...]:
    return ("x", "y", "z")[: len(mesh)]


def _shape(rank: int, spec: list, sizes: dict[str, int], base: int = 2) -> tuple[int, ...]:
    """A global shape of `rank` whose dimension k divides among the axes spec[k] names."""
    dims = []
    for k in range(rank):
        axes = spec[k] if k < len(spec) else None
        axes = () if axes is None else (axes if isinstance(axes, tuple) else (axes,))
        dims.append(base * int(np.prod([sizes[a] for a in axes])) + (0 if axes else k % 2))
    return tuple(dims)


def _axis_choices(names: tuple[str, ...]) -> list[tuple[str, ...]]:
    """One axis, each; the whole mesh; and a pair where there are three."""
    picks = [(n,) for n in names]
    if len(names) > 1:
        picks.append(names)
    if len(names) == 3:
        picks.append(names[1:])
    return picks


def _spec_over(rank: int, axes: tuple[str, ...], others: tuple[str, ...], on: int = 0) -> list:
    """A spec of `rank` putting `axes` on dimension `on` and the `others` on the next ones."""
    spec: list = [None] * rank
    if rank == 0:
        return spec
    spec[on] = axes if len(axes) > 1 else axes[0]
    for k, a in enumerate(others):
        d = (on + 1 + k) % rank
        if spec[d] is None:
            spec[d] = a
        elif d != on:
            spec[d] = (*((spec[d],) if isinstance(spec[d], str) else spec[d]), a)
    return spec


def _without(spec: list, axes: tuple[str, ...]) -> list:
    out = []
    for s in spec:
        kept = tuple(a for a in ((s,) if isinstance(s, str) else (s or ())) if a not in axes)
        out.append(None if not kept else kept[0] if len(kept) == 1 else kept)
    return out


def _with(spec: list, dim: int, axes: tuple[str, ...]) -> list:
    out = list(spec)
    have = () if out[dim] is None else ((out[dim],) if isinstance(out[dim], str) else out[dim])
    both = (*have, *axes)
    out[dim] = both[0] if len(both) == 1 else both
    return out


def _ax(axes: tuple[str, ...]):
    return axes[0] if len(axes) == 1 else axes


def _group(mesh: tuple[int, ...], axes: tuple[str, ...]) -> int:
    sizes = dict(zip(_names(mesh), mesh))
    return int(np.prod([sizes[a] for a in axes]))


def shard_map_cases(mesh: tuple[int, ...], rng: random.Random) -> Iterator[Case]:
    names = _names(mesh)
    sizes = dict(zip(names, mesh))
    tag = "x".join(map(str, mesh))
    for axes in _axis_choices(names):
        others = tuple(n for n in names if n not in axes)
        g = _group(mesh, axes)
        label = "".join(axes)
        for rank in (0, 1, 2, 3):
            dtype = rng.choice(DTYPES)
            for red in REDUCTIONS:
                if red == "pmean" and dtype == "int32" and rank == 3:
                    continue
                spec = _spec_over(max(rank, 1), axes, others)[:rank] if rank else []
                shape = _shape(rank, spec, sizes)
                if rank == 0:
                    # A rank-0 value varying over the axes: the sum of a shard.
                    spec1 = _spec_over(1, axes, others)
                    shape1 = _shape(1, spec1, sizes)
                    fn = partial(_reduce_sum, red, _ax(axes))
                    yield Case(f"{red}_{label}_r0_{dtype}_{tag}", mesh, fn, (shape1,), dtype, (P(*spec1),),
                               P(), check_vma=False)
                    continue
                fn = partial(_reduce, red, _ax(axes))
                yield Case(f"{red}_{label}_r{rank}_{dtype}_{tag}", mesh, fn, (shape,), dtype, (P(*spec),),
                           P(*_without(spec, axes)))
            if rank == 0:
                continue
            dtype = rng.choice(DTYPES + EXTRA_DTYPES)
            spec = _spec_over(rank, axes, others)
            shape = _shape(rank, spec, sizes)
            for tiled in (True, False):
                dim = rng.randrange(rank + (0 if tiled else 1))
                out = _without(spec, axes)
                if not tiled:
                    out.insert(dim, None)
                fn = partial(_all_gather, _ax(axes), dim, tiled)
                # jax.lax.all_gather's result still varies over the axes (as JAX tracks it).
                yield Case(f"all_gather_{label}_r{rank}_d{dim}_{'tiled' if tiled else 'stacked'}_{dtype}_{tag}",
                           mesh, fn, (shape,), dtype, (P(*spec),), P(*out), check_vma=False)
            # psum_scatter: the axes' dimension is whole on every device.
            dtype = rng.choice(DTYPES)
            dim = rng.randrange(rank)
            spec = [None] * rank
            for k, a in enumerate(others):
                if rank > 1:
                    spec[(dim + 1 + k % (rank - 1)) % rank] = _ax((*_flat(spec[(dim + 1 + k % (rank - 1)) % rank]), a))
            for tiled in (True, False):
                if rank == 1 and not tiled:
                    continue
                shape = list(_shape(rank, spec, sizes))
                shape[dim] = g * (2 if tiled else 1)
                if tiled:
                    out = _with(list(spec), dim, axes)
                else:
                    out = list(spec)
                    del out[dim]
                    out = _with(out, 0, axes)
                fn = partial(_psum_scatter, _ax(axes), dim, tiled)
                yield Case(f"psum_scatter_{label}_r{rank}_d{dim}_{'tiled' if tiled else 'untiled'}_{dtype}_{tag}",
                           mesh, fn, (tuple(shape),), dtype, (P(*spec),), P(*out))
            # all_to_all: the axes move from the concat dimension to the split dimension.
            dtype = rng.choice(DTYPES + EXTRA_DTYPES)
            split, concat = rng.randrange(rank), rng.randrange(rank)
            spec = _spec_over(rank, axes, others, on=concat)
            shape = list(_shape(rank, spec, sizes))
            shape[split] *= g
            out = _with(_without(spec, axes), split, axes)
            fn = partial(_all_to_all, _ax(axes), split, concat, True)
            yield Case(f"all_to_all_{label}_r{rank}_s{split}c{concat}_{dtype}_{tag}", mesh, fn,
                       (tuple(shape),), dtype, (P(*spec),), P(*out))
            # ppermute: a cyclic shift, and a partial permutation.
            dtype = rng.choice(DTYPES + EXTRA_DTYPES)
            spec = _spec_over(rank, axes, others)
            shape = _shape(rank, spec, sizes)
            for kind, perm in (("shift", [(i, (i + 1) % g) for i in range(g)]),
                               ("partial", [(i, g - 1 - i) for i in range(g // 2 + g % 2)])):
                fn = partial(_ppermute, _ax(axes), perm)
                yield Case(f"ppermute_{label}_r{rank}_{kind}_{dtype}_{tag}", mesh, fn, (shape,), dtype,
                           (P(*spec),), P(*spec), check_vma=kind == "shift")
    # Arithmetic around collectives, and the device's own index.
    axes = names[-1:]
    spec = _spec_over(2, names, ())
    shape = _shape(2, spec, sizes)
    dtype = rng.choice(("float32", "bfloat16"))
    yield Case(f"mixed_psum_scale_{tag}_{dtype}", mesh, partial(_scaled_psum, _ax(axes)), (shape,),
               dtype, (P(*spec),), P(*_without(spec, axes)))
    yield Case(f"mixed_axis_index_{tag}", mesh,
               partial(_psum_of_index, _ax(axes)), (shape,),
               "float32", (P(*spec),), P(*_without(spec, axes)))
    yield Case(f"mixed_pmean_int_{tag}", mesh, partial(_reduce, "pmean", _ax(axes)), (shape,), "int32",
               (P(*spec),), P(*_without(spec, axes)))
    yield Case(f"mixed_two_collectives_{tag}", mesh,
               partial(_max_of_gather, _ax(axes)), (shape,), "float32",
               (P(*spec),), P(*_without(spec, axes)), check_vma=False)
    if len(names) > 1:
        # shard_map over part of the mesh: the other axes stay automatic.
        first = names[:1]
        spec = _spec_over(2, first, ())
        shape = _shape(2, spec, sizes)
        for red in ("psum", "pmax", "all_gather"):
            fn = partial(_all_gather, first[0], 0, True) if red == "all_gather" else partial(_reduce, red, first[0])
            yield Case(f"partial_{red}_{tag}", mesh, fn, (shape,), "float32", (P(*spec),), P(),
                       axis_names=frozenset(first), check_vma=red != "all_gather")


def program_cases(mesh: tuple[int, ...], rng: random.Random) -> Iterator[Case]:
    """Programs as a JAX user writes them around collectives over the last
    axis: a matmul before psum, a ring in fori_loop, a cond, cumsum,
    softmax, collectives in sequence, pytrees, indexing, integer ops."""
    names = _names(mesh)
    sizes = dict(zip(names, mesh))
    tag = "x".join(map(str, mesh))
    axes = names[-1:]
    ax, g = _ax(axes), _group(mesh, axes)
    spec = _spec_over(2, names, ())
    shape = _shape(2, spec, sizes, base=2)
    out = P(*_without(spec, axes))
    k = 2 * g
    yield Case(f"prog_matmul_psum_{tag}", mesh, partial(_matmul_psum, ax), ((4, k), (k, 3)),
               rng.choice(("float32", "int32")), (P(None, ax), P(ax, None)), P())
    yield Case(f"prog_batched_matmul_psum_{tag}", mesh, partial(_batched_matmul_psum, ax), ((2, 3, k),),
               "float32", (P(None, None, ax),), P())
    yield Case(f"prog_ring_sum_{tag}", mesh, partial(_ring_sum, ax, g), (shape,), rng.choice(("float32", "int32")),
               (P(*spec),), P(*spec))
    yield Case(f"prog_cond_psum_{tag}", mesh, partial(_cond_psum, ax, names), (shape,), "float32",
               (P(*spec),), P(*spec), check_vma=False)
    yield Case(f"prog_cumsum_psum_{tag}", mesh, partial(_cumsum_psum, ax), (shape,), rng.choice(DTYPES[:2]),
               (P(*spec),), out)
    yield Case(f"prog_softmax_{tag}", mesh, partial(_softmax_of_psum, ax), (shape,), "float32", (P(*spec),), out)
    yield Case(f"prog_chain_{tag}", mesh, partial(_chain, ax, g), (shape,), "int32", (P(*spec),), P(*spec),
               check_vma=False)
    yield Case(f"prog_pytree_psum_{tag}", mesh, partial(_pytree_psum, ax), (shape,), "float32", (P(*spec),),
               (out, out))
    yield Case(f"prog_indexing_psum_{tag}", mesh, partial(_indexing_psum, ax), ((int(np.prod(mesh)), 3),),
               rng.choice(("float32", "int32")), (P(names, None),), P(_ax(names[:-1]) if names[:-1] else None),
               check_vma=False)
    yield Case(f"prog_argmax_pmax_{tag}", mesh, partial(_argmax_pmax, ax), (shape,), "int32", (P(*spec),),
               P(*_without(spec, axes)[:1]))
    yield Case(f"prog_integer_ops_psum_{tag}", mesh, partial(_integer_ops_psum, ax), (shape,),
               rng.choice(("int32", "uint32", "int8")), (P(*spec),), out)
    yield Case(f"prog_unary_pmax_{tag}", mesh, partial(_unary_pmax, ax), (shape,), "float32", (P(*spec),), out)


def _flat(s) -> tuple[str, ...]:
    return () if s is None else ((s,) if isinstance(s, str) else tuple(s))


def pmap_cases(devices: int, rng: random.Random) -> Iterator[Case]:
    n = devices
    for red in REDUCTIONS:
        dtype = rng.choice(DTYPES if red != "pmean" else ("float32", "bfloat16", "float16"))
        rank = rng.randrange(0, 3)
        shape = (n, *([3, 2][:rank]))
        fn = partial(_reduce, red, "i")
        yield Case(f"pmap_{red}_r{rank}_{dtype}_{n}", (n,), fn, (shape,), dtype, pmap=True)
    dtype = rng.choice(DTYPES + EXTRA_DTYPES)
    for tiled in (False, True):
        fn = partial(_all_gather, "i", 0, tiled)
        yield Case(f"pmap_all_gather_{'tiled' if tiled else 'stacked'}_{dtype}_{n}", (n,), fn, ((n, 2, 3),), dtype,
                   pmap=True)
    dtype = rng.choice(DTYPES)
    yield Case(f"pmap_psum_scatter_{dtype}_{n}", (n,), partial(_psum_scatter, "i", 0, False), ((n, n, 3),), dtype,
               pmap=True)
    yield Case(f"pmap_psum_scatter_tiled_{dtype}_{n}", (n,), partial(_psum_scatter, "i", 0, True),
               ((n, 2 * n),), dtype, pmap=True)
    dtype = rng.choice(DTYPES + EXTRA_DTYPES)
    yield Case(f"pmap_all_to_all_{dtype}_{n}", (n,), partial(_all_to_all, "i", 0, 0, False), ((n, n, 2),), dtype,
               pmap=True)
    yield Case(f"pmap_all_to_all_tiled_{dtype}_{n}", (n,), partial(_all_to_all, "i", 1, 0, True),
               ((n, 2, 2 * n),), dtype, pmap=True)
    perm = [(i, (i + 1) % n) for i in range(n)]
    yield Case(f"pmap_ppermute_{dtype}_{n}", (n,), partial(_ppermute, "i", perm), ((n, 4),), dtype,
               pmap=True)


def cases(seed: int = 0) -> list[Case]:
    """Every case of the corpus (the dtypes and dimensions drawn from `seed`)."""
    rng = random.Random(seed)
    out = []
    for mesh in MESHES:
        out += shard_map_cases(mesh, rng)
    for mesh in PROGRAM_MESHES:
        out += program_cases(mesh, random.Random(f"{seed}-{mesh}"))
    for n in (8, 4, 2):
        out += pmap_cases(n, rng)
    return out


@dataclass
class Tally:
    modules: int = 0
    lowered: int = 0
    imported: int = 0
    ran: int = 0
    failures: list[str] = field(default_factory=list)


def _equal(got: np.ndarray, want: np.ndarray) -> bool:
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if got.dtype.kind in "iub":
        return bool(np.array_equal(got, want))
    a, b = got.astype(np.float64), want.astype(np.float64)
    tol = 1e-2 if got.dtype.itemsize <= 2 else 1e-5
    return bool(np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True))


def check(case: Case, partitioner: str, form: str, text: str, backend: str) -> str | None:
    """None when the module imports and its run matches the coll level and
    JAX; else what failed ("import: ..." or "run: ...")."""
    from purlin.frontends.spmd import Global
    from purlin.levels.base import SimError
    from purlin.tools import run_imported

    try:
        program = run_imported.import_program(text, case.name)
    except run_imported.SpecError as e:
        return f"import: {e}"
    inputs = case.inputs(seed=1)
    try:
        result = run_imported.run_program(program, inputs, run_imported.level_runner(
            "coll" if backend == "sim" else "plan", backend))
    except (run_imported.SpecError, SimError) as e:
        return f"run: {e}"
    if result.mismatch:
        return f"run: {result.mismatch}"
    outputs = [o.value if isinstance(o, Global) else None for o in result.outputs]
    if any(o is None for o in outputs):
        return "run: an output of main is not a global value"
    want = case.expected(inputs)
    if len(want) != len(outputs):
        return f"run: {len(outputs)} outputs, JAX gives {len(want)}"
    for k, (got, w) in enumerate(zip(outputs, want)):
        if not _equal(got, w):
            return f"run: output {k} differs from JAX's: got {got.reshape(-1)[:8]}, JAX {w.reshape(-1)[:8]}"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="write each module to OUT/NAME.mlir")
    ap.add_argument("--seed", type=int, default=0, help="seed of the dtypes and dimensions drawn")
    ap.add_argument("--limit", type=int, help="a sample of this many cases")
    ap.add_argument("--backend", default="cpu", choices=("sim", "cpu"),
                    help="what runs the collectives: the coll level only (sim), or purlin's CPU backend")
    ap.add_argument("--only", help="cases whose name contains this")
    args = ap.parse_args(argv)
    all_cases = [c for c in cases(args.seed) if args.only is None or args.only in c.name]
    if args.limit is not None and args.limit < len(all_cases):
        all_cases = random.Random(args.seed).sample(all_cases, args.limit)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    tally = Tally()
    for case, partitioner, form in itertools.product(all_cases, PARTITIONERS, FORMS):
        tally.modules += 1
        name = f"{case.name}.{partitioner}.{form}"
        try:
            text = case.lower(partitioner, form)
        except Exception as e:  # JAX refuses the program: not a module of the corpus
            tally.failures.append(f"{name}: jax: {type(e).__name__}: {str(e).splitlines()[0]}")
            continue
        tally.lowered += 1
        if args.out:
            (args.out / f"{name}.mlir").write_text(text)
        why = check(case, partitioner, form, text, args.backend)
        if why is None or why.startswith("run:"):
            tally.imported += 1
        if why is None:
            tally.ran += 1
        else:
            tally.failures.append(f"{name}: {why}")
    for line in tally.failures:
        print(line)
    print(f"{tally.lowered} modules of {len(all_cases)} cases ({tally.modules - tally.lowered} refused by JAX); "
          f"imported {tally.imported} ({100 * tally.imported / max(tally.lowered, 1):.1f}%); "
          f"ran and matched {tally.ran} ({100 * tally.ran / max(tally.imported, 1):.1f}% of those imported)")
    return 0 if tally.ran == tally.imported == tally.lowered else 1


if __name__ == "__main__":
    sys.exit(main())
