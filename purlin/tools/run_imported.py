"""`purlin-run FILE` for StableHLO and `shard` files: import, then the whole
pipeline, then check.

- StableHLO interpreter tests (`interpreter.run_parallel` over
  `programs = [[..]]`, `stablehlo.constant` inputs, `check.expect_eq_const`
  expectations, `// -----` between modules): every case runs on purlin with
  one rank per process and every expectation is checked.
- Any other StableHLO or shard module (JAX's among them) runs on random
  inputs: on mhlo.num_replicas x mhlo.num_partitions processes (or --world,
  which must agree with them; a shard grid gives its own world). A module
  that splits global values among its devices (`sdy.manual_computation`,
  GSPMD's `SPMDFullToShardShape`) takes global inputs, split by its
  shardings, and its outputs are put back together by them; any other
  module runs its function on every process on inputs of its own. The
  collectives run at the level asked for, and each call is compared with the
  coll level on the same inputs; the other ops run on purlin's numpy
  reference of StableHLO. One module per chunk: modules without `// -----`
  between them are refused.

One summary line per case on stdout; errors are one diagnostic line.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from math import prod
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException

from purlin.coll.dialect import CollectiveOp, NamedCollective
from purlin.compile import placement_options
from purlin.compile.pipeline import lower, parse_module
from purlin.diagnostics import where
from purlin.dtypes import dtype_of_array, dtype_of_element_type, numpy_dtype
from purlin.frontends import stablehlo as shlo
from purlin.frontends.check import ExpectEqConstOp
from purlin.frontends.interpreter import RunParallelOp
from purlin.frontends.sdy import MeshOp
from purlin.frontends.spmd import Global, Local, Machine, SpmdError, Value, holds_sharding
from purlin.frontends.tensor_coll import counts
from purlin.frontends.tensor_reference import constant, numpy_type
from purlin.levels import table as levels
from purlin.levels.base import SimError, arg_types
from purlin.testing.data import compare, random_array

_SPLIT = re.compile(r"^// -----\s*$", re.M)


def is_imported(text: str) -> bool:
    """Whether a file is StableHLO, Shardy or shard IR (not purlin's coll)."""
    return bool(re.search(r"\b(stablehlo|shard|interpreter|sdy)\.\w+", text))


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
    return constant(attr).reshape(-1)


class SpecError(Exception):
    """A case that cannot be imported or run: its diagnostic."""


def _module(chunk: Chunk, filename: str) -> ModuleOp:
    try:
        module = parse_module("\n" * chunk.line + chunk.text, filename)
    except (ParseError, DiagnosticException) as e:
        raise SpecError(str(e).strip()) from None
    except ValueError as e:  # xDSL's attributes refuse some values (dense<2> : tensor<i0>) so, unlocated
        raise SpecError(f"{filename}: error: {e}") from None
    # Modules without '// -----' between them parse as one module around them,
    # which has none of their attributes (mhlo.num_replicas, say).
    nested = [op for op in module.body.ops if isinstance(op, ModuleOp)]
    if len(nested) > 1:
        raise SpecError(f"{where(nested[1])}: a second module in the same chunk; purlin-run runs one module at a "
                        "time: put a line '// -----' before it")
    if nested:
        raise SpecError(f"{where(nested[0])}: a module inside a module; purlin-run runs one module at a time: "
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
    fields: str = ""  # what the summary line says of the case besides its world and level


# Runs a module's one coll function (the one with purlin.inputs) at a level on
# every rank's buffers, in place; returns the seconds it took.
Runner = Callable[[ModuleOp, list[list[np.ndarray]], int], float]


def level_runner(level: str = "coll", backend: str = "sim", lowering: str = "") -> Runner:
    """The Runner of a level, with the options purlin-run gives it (one
    process runs every rank: on a runtime backend their buffers are one
    another's to read and write)."""
    options: dict = {"backend": backend, "arch": "sm_90"}
    lowering = placement_options(lowering, True) if backend in ("cpu", "cuda") else lowering
    if lowering:
        options["lowering"] = lowering

    def run(module: ModuleOp, buffers: list[list[np.ndarray]], world: int) -> float:
        (entry,) = [f for f in module.walk() if isinstance(f, FuncOp) and "purlin.inputs" in f.attributes]
        started = time.perf_counter()
        levels.get_level(level)(module, buffers, world=world, seed=0,
                                options={**options, "entry": entry.sym_name.data})
        return time.perf_counter() - started

    return run


@dataclass
class Program:
    """An imported module and how to run it."""

    module: ModuleOp
    entry: FuncOp
    replicas: int
    partitions: int
    global_inputs: bool  # main takes global values, split by the module's shardings

    @property
    def world(self) -> int:
        return self.replicas * self.partitions


@dataclass
class ProgramResult:
    outputs: list[Value]
    mismatch: str | None
    seconds: float
    calls: int


@dataclass
class _Calls:
    run: Runner
    world: int
    reference: bool
    seconds: float = 0.0
    calls: int = 0
    mismatch: str | None = None
    where: str = ""
    scale: float = 1.0
    seen: list[str] = field(default_factory=list)

    def __call__(self, func: FuncOp, ins: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
        n_in, n_out = counts(func)  # type: ignore[misc]
        module = ModuleOp([func.clone()])
        buffers = []
        for i, t in enumerate(arg_types(func)):
            if i < n_in:
                buffers.append([a.copy() for a in ins[i]])
            else:
                dt = numpy_dtype(dtype_of_element_type(t.element_type))
                buffers.append([np.zeros(prod(t.get_shape()), dt) for _ in range(self.world)])
        expected = [[a.copy() for a in b] for b in buffers] if self.reference else None
        try:
            self.seconds += self.run(module, buffers, self.world)
        except (SimError, PassFailedException, DiagnosticException) as e:
            raise SimError(f"@{func.sym_name.data}: {e}") from None
        self.calls += 1
        if expected is not None:
            levels.get_level("coll")(module, expected, world=self.world, seed=0,
                                     options={"entry": func.sym_name.data})
            op = first_reduction(func)
            for k in range(n_in, n_in + n_out):
                got, want = buffers[k], expected[k]
                mismatch = compare(got, want, dtype_of_array(got[0]), op, self.world, _scale(ins),
                                   f"output {k - n_in} of @{func.sym_name.data}")
                if mismatch and self.mismatch is None:
                    self.mismatch = f"{where(func)}: {mismatch}"
        return buffers[n_in:n_in + n_out]


def first_reduction(root: Operation) -> str | None:
    """The reduction of the first reducing collective under `root`, to shape random inputs."""
    for op in root.walk():
        if isinstance(op, NamedCollective) and op.op is not None:
            return op.op.data.value
        if isinstance(op, CollectiveOp) and op.consume.kind is not None:
            return op.consume.kind.value
    return None


def _scale(arrays: list[list[np.ndarray]]) -> float:
    best = 1.0
    for per_rank in arrays:
        for a in per_rank:
            f = np.abs(a.astype(np.float64)) if a.dtype.kind != "b" else a.astype(np.float64)
            f = f[np.isfinite(f)]
            if f.size:
                best = max(best, float(f.max()))
    return best


def run_program(program: Program, inputs: list, run: Runner, reference: bool = True) -> ProgramResult:
    """The entry of `program` on `inputs` (global arrays, or per input a list
    of every rank's arrays), its collectives run by `run` and each call
    compared with the coll level when `reference`."""
    calls = _Calls(run, program.world, reference)
    machine = Machine(program.module, program.replicas, program.partitions, calls)
    args: list[Value] = [Global(a) for a in inputs] if program.global_inputs else [Local(list(a)) for a in inputs]
    try:
        outputs = machine.run(program.entry, args)
    except SpmdError as e:
        raise SpecError(f"purlin's reference cannot run the module: {e}") from None
    return ProgramResult(outputs, calls.mismatch, calls.seconds, calls.calls)


def _module_int(module: ModuleOp, name: str) -> int | None:
    attr = module.attributes.get(name)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def _entry(module: ModuleOp, name: str | None, filename: str) -> FuncOp:
    """The function to run: `name`, or `main`, or the one public function."""
    funcs = [f for f in module.body.ops if isinstance(f, FuncOp)]
    if name is not None:
        found = [f for f in funcs if f.sym_name.data == name]
        if not found:
            raise SpecError(f"{filename}: no function @{name} in the module")
        return found[0]
    main = [f for f in funcs if f.sym_name.data == "main"]
    public = [f for f in funcs if f.sym_visibility is None or f.sym_visibility.data == "public"]
    if main:
        return main[0]
    if len(public) == 1:
        return public[0]
    raise SpecError(f"{filename}: the module holds functions {', '.join('@' + f.sym_name.data for f in public)}; "
                    "purlin-run runs one: name it with --entry")


def import_chunk(chunk: Chunk, filename: str, world: int | None = None, entry: str | None = None) -> Program:
    """A StableHLO (JAX's too) or shard module without a harness, imported."""
    module = _module(chunk, filename)
    collectives = [op for op in module.walk() if isinstance(op, shlo.CollectiveBase)]
    if collectives:
        replicas = _module_int(module, "mhlo.num_replicas")
        partitions = _module_int(module, "mhlo.num_partitions")
        meshes = {int(prod(m.mesh.shape.values())) for m in module.walk() if isinstance(m, MeshOp)}
        if not replicas and not partitions and len(meshes) == 1:
            replicas, partitions = 1, meshes.pop()
        partitions = partitions or 1
        passes = "convert-stablehlo-to-coll"
        if replicas:
            if world is not None and world != replicas * partitions:
                raise SpecError(f"{filename}: --world {world} but the module's processes are "
                                f"{replicas * partitions} (mhlo.num_replicas = {replicas} x mhlo.num_partitions = "
                                f"{partitions})")
        elif world is None:
            raise SpecError(f"{where(collectives[0])}: the number of replicas is not known: give --world N (N "
                            "processes: replicas x partitions) or the module attribute mhlo.num_replicas")
        elif world % partitions:
            raise SpecError(f"{filename}: --world {world} is not a multiple of the module's "
                            f"mhlo.num_partitions = {partitions} (processes are replicas x partitions)")
        else:
            replicas = world // partitions
            passes = f"convert-stablehlo-to-coll{{replicas={replicas}}}"
        lowered = _import(module, passes)
    elif not any(op.name.startswith("shard.") and op.name != "shard.grid" for op in module.walk()):
        raise SpecError(f"{filename}: the module holds no collective purlin runs (StableHLO's all_reduce, "
                        "all_gather, reduce_scatter, all_to_all, collective_permute, collective_broadcast, or "
                        "MLIR shard's)")
    else:
        lowered = _import(module, "convert-shard-to-coll")
        worlds = {op.world.data if hasattr(op.world, "data") else op.world for op in lowered.walk()
                  if isinstance(op, NamedCollective | CollectiveOp)}
        if len(worlds) != 1:
            raise SpecError(f"{filename}: the imported module holds collectives of worlds {sorted(worlds)}")
        replicas, partitions = worlds.pop(), 1
        if world is not None and world != replicas:
            raise SpecError(f"{filename}: --world {world} but the module's processes are {replicas}")
    func = _entry(lowered, entry, filename)
    funcs = {f.sym_name.data: f for f in lowered.body.ops if isinstance(f, FuncOp)}
    return Program(lowered, func, replicas, partitions, holds_sharding(func, funcs))


def import_program(text: str, filename: str = "<input>", world: int | None = None) -> Program:
    """`text`, one module, imported (import_chunk)."""
    found = chunks(text)
    if len(found) != 1:
        raise SpecError(f"{filename}: expected one module, found {len(found)} chunks")
    return import_chunk(found[0], filename, world)


def program_inputs(program: Program, seed: int) -> list:
    """Random inputs of the entry: global arrays, or per input every rank's."""
    rng = np.random.default_rng(seed)
    func = program.entry
    op = next((r for f in program.module.body.ops if isinstance(f, FuncOp) and (r := first_reduction(f))), None)
    if counts(func) is not None:
        n_in = counts(func)[0]  # type: ignore[index]
        types = [(tuple(t.get_shape()), t.element_type) for t in arg_types(func)[:n_in]]
    else:
        types = [(tuple(t.get_shape()), t.element_type) for t in func.function_type.inputs.data]  # type: ignore[attr-defined]
    out: list = []
    for shape, elem in types:
        def one() -> np.ndarray:
            try:
                return random_array(rng, dtype_of_element_type(elem), prod(shape), op).reshape(shape)
            except ValueError:
                return rng.integers(0, 2, shape).astype(numpy_type(elem))
        out.append(one() if program.global_inputs else [one() for _ in range(program.world)])
    return out


def run_plain(chunk: Chunk, filename: str, world: int | None, seed: int, run: Runner,
              entry: str | None = None) -> Outcome:
    """A module without a harness on random inputs, each collective call
    compared with the coll level."""
    program = import_chunk(chunk, filename, world, entry)
    inputs = program_inputs(program, seed)
    result = run_program(program, inputs, run)
    arrays = [a for a in inputs] if program.global_inputs else [a for per_rank in inputs for a in per_rank[:1]]
    dtype = next((_dtype_name(a) for a in arrays), "-")
    op = next((r for f in program.module.body.ops if isinstance(f, FuncOp) and (r := first_reduction(f))), None)
    nbytes = max((a.nbytes for a in arrays), default=0)
    fields = f"dtype={dtype} op={op or '-'} bytes={nbytes}"
    return Outcome(f"{Path(filename).name}@{program.entry.sym_name.data}", program.world, result.calls,
                   result.mismatch, result.seconds, fields)


def _dtype_name(a: np.ndarray) -> str:
    try:
        return dtype_of_array(a)
    except ValueError:
        return str(a.dtype)


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
        raise SpecError(f"{where(rp)}: every process runs its own program ({', '.join(sorted(names))}); "
                        "purlin runs one program on every rank")
    replicas, partitions = len(programs), len(programs[0])
    world = replicas * partitions
    (name,) = names
    func = next((f for f in module.walk() if isinstance(f, FuncOp) and f.sym_name.data == name), None)
    if func is None:
        raise SpecError(f"{where(rp)}: no function @{name}")
    lowered = _import(ModuleOp([func.clone()]),
                      f"convert-stablehlo-to-coll{{replicas={replicas} partitions={partitions}}}")
    entry = next(f for f in lowered.body.ops if isinstance(f, FuncOp) and f.sym_name.data == name)
    n_in = len(func.function_type.inputs.data)
    n_out = len(func.function_type.outputs.data)
    if len(rp.inputs) != world * n_in:
        raise SpecError(f"{where(rp)}: {len(rp.inputs)} inputs for {world} processes of @{name}, "
                        f"which takes {n_in}")
    values = []
    for v in rp.inputs:
        owner = v.owner
        value = shlo.field(owner, "value") if isinstance(owner, shlo.ConstantOp) else None
        if not isinstance(value, DenseIntOrFPElementsAttr):
            raise SpecError(f"{where(rp)}: inputs must be stablehlo.constant values")
        values.append(constant(value))
    program = Program(lowered, entry, replicas, partitions, False)
    inputs = [[values[r * n_in + i] for r in range(world)] for i in range(n_in)]
    result = run_program(program, inputs, run, reference=False)
    checked, mismatch = 0, None
    for op in module.walk():
        if not isinstance(op, ExpectEqConstOp) or op.operand.owner is not rp:
            continue
        k = op.operand.index  # type: ignore[attr-defined]
        rank, index = divmod(k, n_out)
        out = result.outputs[index]
        got = (out.values[rank] if isinstance(out, Local) else out.value).reshape(-1)
        want = constant_value(op.value)  # type: ignore[arg-type]
        checked += 1
        if mismatch is None and (got.shape != want.shape or not _equal(got, want)):
            bad = int(np.flatnonzero(~_same(got, want))[0]) if got.shape == want.shape else 0
            mismatch = (f"{where(op)}: result {k} (process {rank}: replica {rank // partitions}, partition "
                        f"{rank % partitions}) at element {bad}: got {got.tolist()}, expected {want.tolist()}")
    label = f"{filename}:{chunk.line + 1}" + (f" @{module.sym_name.data}" if module.sym_name else "")
    return Outcome(f"{label} ({replicas}x{partitions} processes)", world, checked, mismatch, result.seconds)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind not in "iub":
        fa, fb = a.astype(np.float64), b.astype(np.float64)
        return (fa == fb) | (np.isnan(fa) & np.isnan(fb))
    return a == b


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(_same(a, b).all())

