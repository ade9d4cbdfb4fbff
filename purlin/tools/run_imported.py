"""`purlin-run FILE` for StableHLO and `shard` files: import, then the whole
pipeline, then check.

- StableHLO interpreter tests (`interpreter.run_parallel` over
  `programs = [[..]]`, `stablehlo.constant` inputs, `check.expect_eq_const`
  expectations, `// -----` between modules): every case runs on purlin with
  one rank per process and every expectation is checked.
- Any other StableHLO or shard module: its function runs on random inputs
  (processes from mhlo.num_replicas x mhlo.num_partitions, or --world,
  which must agree with them; a shard grid gives its own world) and each
  level is compared with the coll level, as for coll files. One module per
  chunk: modules without `// -----` between them are refused.

One summary line per case on stdout; errors are one diagnostic line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from math import prod

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException

from purlin.dtypes import dtype_of_element_type, numpy_dtype
from purlin.frontends import stablehlo as shlo
from purlin.frontends.check import ExpectEqConstOp
from purlin.frontends.interpreter import RunParallelOp
from purlin.interpret import arg_types
from purlin.pipeline import lower, parse_module
from purlin.testing.data import random_array

_SPLIT = re.compile(r"^// -----\s*$", re.M)


def is_imported(text: str) -> bool:
    """Whether a file is StableHLO or shard IR (not purlin's coll)."""
    return bool(re.search(r"\b(stablehlo|shard|interpreter)\.\w+", text))


@dataclass
class Chunk:
    text: str
    line: int  # line of the chunk's first line in the file, from 0


def chunks(text: str) -> list[Chunk]:
    out, at, line = [], 0, 0
    for m in _SPLIT.finditer(text):
        out.append(Chunk(text[at:m.start()], line))
        line += text[at:m.end()].count("\n")
        at = m.end()
    out.append(Chunk(text[at:], line))
    return [c for c in out if c.text.strip()]


def constant_value(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The flat row-major values of a dense constant, in its element type."""
    dtype = numpy_dtype(dtype_of_element_type(attr.get_element_type()))
    n = prod(attr.get_shape() or ())
    values = attr.get_values()
    if len(values) == 1 and n != 1:
        values = list(values) * n  # a splat
    if dtype.kind in "iu":
        bits = 8 * dtype.itemsize
        return np.array([int(v) % (1 << bits) for v in values], dtype=np.uint64).astype(
            f"u{dtype.itemsize}").view(dtype)
    return np.array(values, dtype=np.float64).astype(dtype)


class SpecError(Exception):
    """A case that cannot be imported or run: its diagnostic."""


def _module(chunk: Chunk, filename: str) -> ModuleOp:
    try:
        module = parse_module("\n" * chunk.line + chunk.text, filename)
    except (ParseError, DiagnosticException) as e:
        raise SpecError(str(e).strip()) from None
    # Modules without '// -----' between them parse as one module around them,
    # which has none of their attributes (mhlo.num_replicas, say).
    nested = [op for op in module.body.ops if isinstance(op, ModuleOp)]
    if len(nested) > 1:
        raise SpecError(f"{_at(nested[1])}: a second module in the same chunk; purlin-run runs one module at a "
                        "time: put a line '// -----' before it")
    if nested:
        raise SpecError(f"{_at(nested[0])}: a module inside a module; purlin-run runs one module at a time: "
                        "drop the outer module")
    return module


def _import(module: ModuleOp, passes: str) -> ModuleOp:
    try:
        return lower(module, passes)
    except (PassFailedException, DiagnosticException) as e:
        raise SpecError(str(e).strip()) from None
    except ValueError as e:
        raise SpecError(str(e)) from None


@dataclass
class Outcome:
    label: str
    world: int
    checked: int
    mismatch: str | None
    seconds: float


Runner = Callable[[ModuleOp, list[list[np.ndarray]], int], float]


def run_interpreter_case(chunk: Chunk, filename: str, run: Runner) -> Outcome:
    """One module of an interpreter test: its program on every process, its
    expectations checked."""
    module = _module(chunk, filename)
    harness = [op for op in module.walk() if isinstance(op, RunParallelOp)]
    if len(harness) != 1:
        raise SpecError(f"{filename}:{chunk.line + 1}: expected one interpreter.run_parallel per module, "
                        f"found {len(harness)}")
    (rp,) = harness
    programs = rp.programs
    names = {p for row in programs for p in row}
    if len(names) != 1:
        raise SpecError(f"{_at(rp)}: every process runs its own program ({', '.join(sorted(names))}); "
                        "purlin runs one program on every rank")
    replicas, partitions = len(programs), len(programs[0])
    world = replicas * partitions
    (name,) = names
    func = next((f for f in module.walk() if isinstance(f, FuncOp) and f.sym_name.data == name), None)
    if func is None:
        raise SpecError(f"{_at(rp)}: no function @{name}")
    program = ModuleOp([func.clone()])
    lowered = _import(program, f"convert-stablehlo-to-coll{{replicas={replicas} partitions={partitions}}}")
    (entry,) = [f for f in lowered.walk() if isinstance(f, FuncOp)]
    n_in = entry.attributes["purlin.inputs"].value.data  # type: ignore[attr-defined]
    n_out = entry.attributes["purlin.results"].value.data  # type: ignore[attr-defined]
    if len(rp.inputs) != world * n_in:
        raise SpecError(f"{_at(rp)}: {len(rp.inputs)} inputs for {world} processes of @{name}, "
                        f"which takes {n_in}")
    values = []
    for v in rp.inputs:
        owner = v.owner
        value = shlo.field(owner, "value") if isinstance(owner, shlo.ConstantOp) else None
        if not isinstance(value, DenseIntOrFPElementsAttr):
            raise SpecError(f"{_at(rp)}: inputs must be stablehlo.constant values")
        values.append(constant_value(value))
    args = _buffers(entry, world, lambda r, i: values[r * n_in + i] if i < n_in else None)
    seconds = run(lowered, args, world)
    checked, mismatch = 0, None
    for op in module.walk():
        if not isinstance(op, ExpectEqConstOp) or op.operand.owner is not rp:
            continue
        k = op.operand.index  # type: ignore[attr-defined]
        rank, result = divmod(k, n_out)
        got = args[n_in + result][rank]
        want = constant_value(op.value)  # type: ignore[arg-type]
        checked += 1
        if mismatch is None and (got.shape != want.shape or not _equal(got, want)):
            bad = int(np.flatnonzero(~_same(got, want))[0]) if got.shape == want.shape else 0
            mismatch = (f"{_at(op)}: result {k} (process {rank}: replica {rank // partitions}, partition "
                        f"{rank % partitions}) at element {bad}: got {got.tolist()}, expected {want.tolist()}")
    label = f"{filename}:{chunk.line + 1}" + (f" @{module.sym_name.data}" if module.sym_name else "")
    return Outcome(f"{label} ({replicas}x{partitions} processes)", world, checked, mismatch, seconds)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind not in "iu":
        fa, fb = a.astype(np.float64), b.astype(np.float64)
        return (fa == fb) | (np.isnan(fa) & np.isnan(fb))
    return a == b


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(_same(a, b).all())


def _at(op) -> str:
    from purlin.diagnostics import where

    return where(op)


def _buffers(entry: FuncOp, world: int, given: Callable[[int, int], np.ndarray | None]) -> list[list[np.ndarray]]:
    """Every argument of the imported function on every rank: `given(rank,
    i)` where it gives one, zeros otherwise (outputs start zeroed)."""
    args = []
    for i, t in enumerate(arg_types(entry)):
        dt = numpy_dtype(dtype_of_element_type(t.element_type))
        n = prod(t.get_shape())
        per_rank = []
        for r in range(world):
            v = given(r, i)
            per_rank.append(np.zeros(n, dt) if v is None else np.ascontiguousarray(v.reshape(-1)).copy())
        args.append(per_rank)
    return args


def import_plain(chunk: Chunk, filename: str, world: int | None) -> tuple[ModuleOp, int, str]:
    """A StableHLO or shard module without a harness, imported to coll:
    (module, world, passes used)."""
    module = _module(chunk, filename)
    collectives = [op for op in module.walk() if isinstance(op, shlo.CollectiveBase)]
    if collectives:
        passes = "convert-stablehlo-to-coll"
        replicas = _module_int(module, "mhlo.num_replicas")
        partitions = _module_int(module, "mhlo.num_partitions") or 1
        if replicas:
            if world is not None and world != replicas * partitions:
                raise SpecError(f"{filename}: --world {world} but the module's processes are "
                                f"{replicas * partitions} (mhlo.num_replicas = {replicas} x mhlo.num_partitions = "
                                f"{partitions})")
        elif world is None:
            raise SpecError(f"{_at(collectives[0])}: the number of replicas is not known: give --world N (N "
                            "processes: replicas x partitions) or the module attribute mhlo.num_replicas")
        elif world % partitions:
            raise SpecError(f"{filename}: --world {world} is not a multiple of the module's "
                            f"mhlo.num_partitions = {partitions} (processes are replicas x partitions)")
        else:
            passes = f"convert-stablehlo-to-coll{{replicas={world // partitions}}}"
    else:
        passes = "convert-shard-to-coll"
    lowered = _import(module, passes)
    worlds = {op.world.data if hasattr(op.world, "data") else op.world for op in lowered.walk()
              if op.name.startswith("coll.") and hasattr(op, "world")}
    if len(worlds) != 1:
        raise SpecError(f"{filename}: the imported module holds collectives of worlds {sorted(worlds)}")
    (w,) = worlds
    if world is not None and world != w:
        raise SpecError(f"{filename}: --world {world} but the module's processes are {w}")
    return lowered, w, passes


def _module_int(module: ModuleOp, name: str) -> int | None:
    attr = module.attributes.get(name)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def random_buffers(entry: FuncOp, world: int, seed: int, op: str | None) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    n_in = entry.attributes["purlin.inputs"].value.data  # type: ignore[attr-defined]
    types = arg_types(entry)
    inputs = {
        (r, i): random_array(rng, dtype_of_element_type(types[i].element_type), prod(types[i].get_shape()), op)
        for i in range(n_in) for r in range(world)
    }
    return _buffers(entry, world, lambda r, i: inputs.get((r, i)))

