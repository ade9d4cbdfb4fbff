"""`purlin-run`: run a collective in the multi-rank simulator and check it.

    purlin-run --collective all_reduce --world 8 --bytes 4096 --dtype bf16 [--op sum]
    purlin-run FILE.mlir [--world 8] [--counts ...]

The first form builds the named collective on random inputs and compares the
chosen level with the independent numpy reference. The second runs the
entry function of FILE on random buffers and compares the chosen level with
the coll level (the layout semantics of the IR).

One summary line on stdout, or one error line on stderr (never a traceback).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument
from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException

from purlin.coll.attributes import DTYPE_ALIASES, ReduceKind, canonical_dtype
from purlin.coll.builder import COLLECTIVES, SpecError, byte_step
from purlin.coll.dialect import CollectiveOp, NamedCollective
from purlin.coll.layouts import world_problem
from purlin.compile import placement_options
from purlin.compile.pipeline import EntryError, entry_function, parse_module, pipeline
from purlin.diagnostics import decode_source
from purlin.dtypes import DTYPE_NAMES, dtype_of_array, dtype_of_element_type, itemsize
from purlin.levels import table as levels
from purlin.levels.atom import RuntimeRefused
from purlin.levels.base import SimError, arg_numpy_dtype, arg_types
from purlin.testing.cases import Case, counts_for
from purlin.testing.data import Mismatch, compare, compare_ranks, random_array
from purlin.tools import run_imported

EXIT_STATUS = """exit status:
  0  the results match the reference
  1  they differ, or the level failed to run what it compiled (result=mismatch or result=error)
  2  usage or input error: a bad option, an input that cannot be read, parsed, verified or
     lowered, a size that cannot be met exactly, a world or size beyond purlin-run's limits, a
     plan the runtime refuses (its kernel cannot be generated, compiled or placed on the GPUs)"""

# Host memory purlin-run may use for the buffers of all ranks (with the
# copies it keeps to check them): beyond it a run is refused, not attempted.
MEMORY_LIMIT = 4 << 30
# Copies of each buffer alive during a run: the level's, the inputs kept to
# check they did not change or the expected outputs, and the level's staging.
_COPIES = 3


class UsageError(Exception):
    """Bad command line or input file: exit 2."""


class Refused(UsageError):
    """The runtime refuses to run what the level compiled: exit 2."""


def _one_line(text: str) -> str:
    """`text` on one line (NVRTC's log, say, comes a line per message; a parser's
    caret under the source line means nothing once the lines are joined)."""
    return "; ".join(line.strip() for line in text.splitlines() if line.strip().strip("^"))


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be non-negative, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="purlin-run",
        description="Run a collective in the multi-rank simulator and compare it with the reference.",
        epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("file", nargs="?", type=Path, help="an .mlir file to run instead of --collective")
    ap.add_argument("--collective", choices=list(COLLECTIVES), help="named collective to build")
    ap.add_argument("--world", type=int, help="number of ranks")
    ap.add_argument(
        "--bytes",
        type=_non_negative,
        help="bytes of the larger buffer of one rank, exactly (all_reduce: the buffer, a "
        "multiple of the element size; all_gather: the output; reduce_scatter: the input; "
        "all_to_all: the buffer, each a multiple of world x the element size); a V form "
        "draws random counts adding up to that, in whole elements (all_to_all_v: each rank "
        "sends and receives that much); not needed for a V form given --counts",
    )
    ap.add_argument(
        "--dtype", type=canonical_dtype, choices=DTYPE_NAMES,
        help=f"element type ({', '.join(f'{a} for {n}' for a, n in DTYPE_ALIASES.items())})",
    )
    ap.add_argument("--op", choices=[k.value for k in ReduceKind], help="reduction (default sum)")
    ap.add_argument(
        "--level", default=None,
        help="simulation level: coll, snac, atom or plan (default coll; plan with --backend)",
    )
    ap.add_argument(
        "--seed", type=_non_negative, default=0, help="seed of inputs, counts and schedules"
    )
    ap.add_argument(
        "--counts",
        nargs="+",
        help="counts of a V collective: 'c0,c1,..', or for all_to_all_v a matrix with rows "
        "(senders) separated by ';'; in FILE mode the values of the i64 counts argument",
    )
    ap.add_argument(
        "--dynamic", action="store_true", help="pass the counts as a run-time argument"
    )
    ap.add_argument("--entry", help="function of FILE to run (default: its only one)")
    ap.add_argument(
        "--backend", default="sim", choices=["sim", "cpu", "cuda"],
        help="what executes the plan level: the simulator, or a runtime backend (default sim)",
    )
    ap.add_argument(
        "--devices", default=None, metavar="LIST",
        help="--backend cuda: the GPU of each rank, e.g. 0,0,0 (three ranks sharing GPU 0; "
        "default: GPU r for rank r)",
    )
    ap.add_argument(
        "--arch", default="sm_90", choices=["sm_80", "sm_90", "sm_100"],
        help="GPU generation for the atom and plan levels (default sm_90)",
    )
    ap.add_argument(
        "--lowering", default="",
        help="options of convert-coll-to-snac for levels below coll, e.g. "
        "'regime=throughput strategy=composed chunk-bytes=64 slots=2'",
    )
    return ap


def _parse_counts(tokens: Sequence[str]) -> list[list[int]]:
    """Rows of integers from tokens like '1,2;3,4' or '1' '2'."""
    text = ",".join(tokens)
    try:
        return [
            [int(v) for v in row.split(",") if v.strip()]
            for row in text.split(";")
            if row.strip(" ,")
        ]
    except ValueError:
        raise UsageError(f"--counts must be integers, got '{' '.join(tokens)}'") from None


def _named_case(args: argparse.Namespace) -> Case:
    missing = [f"--{a}" for a in ("world", "dtype") if getattr(args, a) is None]
    if missing:
        raise UsageError(f"--collective needs {' and '.join(missing)}")
    info = COLLECTIVES[args.collective]
    w = args.world
    if why := world_problem(w):
        raise UsageError(f"--world {w}: {why}")
    if args.bytes is None and not (info.variable and args.counts):
        raise UsageError("--collective needs --bytes")
    if not info.variable and (args.counts or args.dynamic):
        raise UsageError(f"{args.collective} takes no counts; use the _v form")
    op = args.op
    if info.reduces and op is None:
        op = "sum"
    step = byte_step(args.collective, w, args.dtype)
    if args.bytes is not None and args.bytes % step:
        below = args.bytes - args.bytes % step
        unit = "one element" if step == itemsize(args.dtype) else f"world = {w} elements"
        raise UsageError(
            f"--bytes {args.bytes} cannot be met exactly: {args.collective} on world {w} in "
            f"{args.dtype} grows in steps of {step} bytes ({unit}); the nearest valid sizes "
            f"are {below} and {below + step}"
        )
    n = (args.bytes or 0) // itemsize(args.dtype)
    counts = None
    count = 0
    if info.variable:
        if args.counts:
            rows = _parse_counts(args.counts)
            flat = [c for row in rows for c in row]
            if info.matrix:
                if len(flat) != w * w or (len(rows) > 1 and any(len(r) != w for r in rows)):
                    raise UsageError(
                        f"{args.collective} on world {w} needs a {w}x{w} count matrix "
                        f"(rows separated by ';'), got {'; '.join(map(str, rows))}"
                    )
                counts = [flat[i * w : (i + 1) * w] for i in range(w)]
            else:
                counts = flat
                if len(flat) != w:
                    raise UsageError(
                        f"{args.collective} on world {w} needs {w} counts, got {len(flat)}"
                    )
        else:
            counts = counts_for(args.collective, w, n, args.seed, balanced=True)
    else:
        count = (args.bytes or 0) // step
    try:
        case = Case(args.collective, w, args.dtype, op, count, counts, args.dynamic)
    except SpecError as e:
        raise UsageError(str(e)) from None
    if args.counts and args.bytes is not None and args.bytes != case.bytes:
        raise UsageError(
            f"--bytes {args.bytes} and --counts {' '.join(args.counts)} disagree: those counts make the larger "
            f"buffer of a rank {case.bytes} bytes; give --counts alone"
        )
    _check_memory(w, sum(case.buffer_sizes()) * itemsize(case.dtype))
    return case


def _check_memory(world: int, nbytes: int) -> None:
    """Refuse a run whose buffers (`nbytes` a rank) would not fit MEMORY_LIMIT."""
    need = _COPIES * world * nbytes
    if need > MEMORY_LIMIT:
        raise UsageError(
            f"the buffers of {world} ranks ({nbytes} bytes each, {_COPIES} copies to run and "
            f"check them) need {_gib(need)} of host memory, more than purlin-run's limit of "
            f"{_gib(MEMORY_LIMIT)}; use fewer bytes or ranks"
        )


def _gib(nbytes: int) -> str:
    return f"{nbytes / (1 << 30):.3g} GiB"


def _level(args: argparse.Namespace) -> str:
    return args.level if args.backend == "sim" else f"{args.level} backend={args.backend}"


def _summary(label: str, world: int, dtype: str, op: str | None, nbytes: int, level: str) -> str:
    return f"{label} world={world} dtype={dtype} op={op or '-'} bytes={nbytes} level={level}"


def _scale(arrays: Sequence[np.ndarray]) -> float:
    """Largest finite magnitude among the inputs, for the reduction tolerance."""
    best = 1.0
    for a in arrays:
        f = np.abs(a.astype(np.float32))
        f = f[np.isfinite(f)]
        if f.size:
            best = max(best, float(f.max()))
    return best


def _copy(args: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    return [[a.copy() for a in per_rank] for per_rank in args]


def _options(args: argparse.Namespace) -> dict:
    options: dict = {"arch": args.arch, "backend": args.backend}
    lowering = args.lowering
    if args.backend in ("cpu", "cuda"):
        # One process runs every rank: their buffers are one another's to read
        # and write in place; ranks listed on one GPU share its multiprocessors.
        devices = args.devices or []
        ranks_per_device = max((devices.count(d) for d in devices), default=1)
        lowering = placement_options(lowering, True, ranks_per_device, _sms(devices) if args.backend == "cuda" else 0)
    if lowering:
        options["lowering"] = lowering
    if args.devices is not None:
        options["devices"] = args.devices
    return options


def _sms(devices: list[int]) -> int:
    """The fewest multiprocessors of the GPUs named (0: none named)."""
    from purlin import _runtime

    return min((_runtime.cuda_device_sms(d) for d in set(devices)), default=0)


def _run_level(
    level: str, module: ModuleOp, args: list[list[np.ndarray]], world: int, seed: int,
    options: dict,
) -> float:
    """Run and return the time taken in seconds; SimError when the level fails."""
    runner = levels.get_level(level)
    started = time.perf_counter()
    try:
        runner(module, args, world=world, seed=seed, options=options)
    except PassFailedException as e:
        # The passes refuse the collective or the --lowering options.
        raise UsageError(f"cannot lower to the {level} level: {e}") from None
    except RuntimeRefused as e:
        raise Refused(_one_line(str(e))) from None
    except DiagnosticException as e:
        raise SimError(str(e)) from None
    return time.perf_counter() - started


def _report(summary: str, seconds: float | None, mismatch: Mismatch | str | None,
            differs: bool = False) -> int:
    """`differs`: a str `mismatch` is a wrong result, not a failure to run."""
    timing = f" time={seconds * 1e3:.3f}ms" if seconds is not None else ""
    if mismatch is None:
        print(f"{summary} result=match{timing}")
        return 0
    kind = "mismatch" if differs or isinstance(mismatch, Mismatch) else "error"
    print(f"{summary} result={kind}{timing}: {mismatch}")
    return 1


def _run_named(args: argparse.Namespace) -> int:
    case = _named_case(args)
    levels.get_level(args.level)
    summary = _summary(case.collective, case.world, case.dtype, case.op, case.bytes, _level(args))
    buffers = case.make_args(args.seed)
    inputs = [a.copy() for a in buffers[0]]
    expected = case.expected(buffers)
    try:
        seconds = _run_level(
            args.level, case.build_module(), buffers, case.world, args.seed, _options(args)
        )
    except SimError as e:
        return _report(summary, None, str(e))
    mismatch = compare(
        buffers[1], expected, case.dtype, case.op, case.contributions, _scale(inputs), "%out"
    ) or compare_ranks(buffers[1], expected, "%out") or compare(
        buffers[0], inputs, case.dtype, what="%in (inputs must not change)")
    return _report(summary, seconds, mismatch)


def _file_world(module: ModuleOp, requested: int | None) -> int:
    worlds = set()
    for op in module.walk():
        if isinstance(op, NamedCollective):
            worlds.add(op.world.data)
        elif isinstance(op, CollectiveOp):
            worlds.add(op.world)
    if not worlds:
        raise UsageError("the module holds no collective to run")
    if len(worlds) > 1:
        raise UsageError(f"the module mixes world sizes {sorted(worlds)}")
    (world,) = worlds
    if requested is not None and requested != world:
        raise UsageError(f"--world {requested} but the module's collectives are for world {world}")
    return world


def _counts_arguments(func) -> set[int]:
    """The arguments of `func` that collectives take as dynamic counts."""
    found = set()
    for op in func.walk():
        counts = getattr(op, "counts", None) if isinstance(op, (NamedCollective, CollectiveOp)) else None
        if isinstance(counts, BlockArgument) and counts.owner is func.body.block:
            found.add(counts.index)
    return found


def _run_file(args: argparse.Namespace) -> int:
    if args.collective or args.bytes is not None or args.dtype or args.op or args.dynamic:
        raise UsageError(
            "with FILE the collective, sizes, dtype and op come from the IR; "
            "drop --collective, --bytes, --dtype, --op and --dynamic"
        )
    try:
        data = args.file.read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read {args.file}: {e.strerror}") from None
    try:
        text = decode_source(data, str(args.file))
    except DiagnosticException as e:
        raise UsageError(str(e).strip()) from None
    if run_imported.is_imported(text):
        return _run_imported(args, text)
    try:
        module = parse_module(text, str(args.file))
    except (ParseError, DiagnosticException) as e:
        raise UsageError(str(e).strip()) from None
    try:
        func = entry_function(module, args.entry)
        types = arg_types(func)
    except (EntryError, SimError) as e:
        raise UsageError(str(e)) from None
    world = _file_world(module, args.world)
    op = run_imported.first_reduction(module)
    levels.get_level(args.level)
    rng = np.random.default_rng(args.seed)
    dtypes = []
    for i, t in enumerate(types):
        if any(d < 0 for d in t.get_shape()):
            raise UsageError(f"argument {i} has dynamic shape {t}; the simulator needs static sizes")
        try:
            dtypes.append(arg_numpy_dtype(t))
        except SimError as e:
            raise UsageError(f"argument {i}: {e}") from None
    _check_memory(world, sum(int(np.prod(t.get_shape())) * dt.itemsize for t, dt in zip(types, dtypes)))
    counts_args = _counts_arguments(func)
    buffers: list[list[np.ndarray]] = []
    for i, (t, dt) in enumerate(zip(types, dtypes)):
        shape = t.get_shape()
        if i in counts_args:
            if not args.counts:
                raise UsageError(f"argument {i} ({t}) holds counts: give their values with --counts")
            flat = [c for row in _parse_counts(args.counts) for c in row]
            if len(flat) != int(np.prod(shape)):
                raise UsageError(f"--counts has {len(flat)} values but argument {i} is {t}")
            value = np.array(flat, dtype=dt).reshape(shape)
            buffers.append([value.copy() for _ in range(world)])
        else:
            dtype = dtype_of_element_type(t.element_type)
            buffers.append([random_array(rng, dtype, int(np.prod(shape)), op) for _ in range(world)])
    data = [b for i, b in enumerate(buffers) if i not in counts_args]
    dtype = dtype_of_array(data[0][0]) if data else "-"
    nbytes = max((b[0].nbytes for b in data), default=0)
    summary = _summary(f"{args.file.name}@{func.sym_name.data}", world, dtype, op, nbytes, _level(args))
    options = {**_options(args), "entry": func.sym_name.data}
    expected = _copy(buffers)
    try:
        levels.get_level("coll")(module, expected, world=world, seed=args.seed, options=options)
    except SimError as e:
        raise UsageError(f"the coll level cannot run {args.file}: {e}") from None
    scale = _scale([a for b in data for a in b])
    try:
        seconds = _run_level(args.level, module, buffers, world, args.seed, options)
    except SimError as e:
        return _report(summary, None, str(e))
    for i, (got, want) in enumerate(zip(buffers, expected)):
        if i in counts_args:
            continue
        name = func.body.block.args[i].name_hint or str(i)
        mismatch = compare(got, want, dtype_of_array(got[0]), op, world, scale, f"%{name}") or compare_ranks(
            got, want, f"%{name}")
        if mismatch:
            return _report(summary, seconds, mismatch)
    return _report(summary, seconds, None)


def _run_imported(args: argparse.Namespace, text: str) -> int:
    """A StableHLO or shard file: each interpreter test case against its
    expectations, or the imported function against the coll level."""
    name = str(args.file)
    levels.get_level(args.level)
    status = 0

    def run(module: ModuleOp, buffers: list[list[np.ndarray]], world: int) -> float:
        (entry,) = [f for f in module.walk() if isinstance(f, FuncOp) and "purlin.inputs" in f.attributes]
        options = {**_options(args), "entry": entry.sym_name.data}
        return _run_level(args.level, module, buffers, world, args.seed, options)

    for chunk in run_imported.chunks(text):
        try:
            if "interpreter.run_parallel" in chunk.text:
                if args.world is not None:
                    raise UsageError("an interpreter test gives its processes: drop --world")
                case = run_imported.run_interpreter_case(chunk, name, run)
                summary = f"{case.label} world={case.world} level={_level(args)} expectations={case.checked}"
                status = max(status, _report(summary, case.seconds, case.mismatch, differs=True))
            else:
                status = max(status, _run_imported_plain(args, chunk, run))
        except run_imported.SpecError as e:
            print(f"purlin-run: error: {e}", file=sys.stderr)
            status = 2
        except Refused as e:
            print(f"purlin-run: error: {name}:{chunk.line + 1}: {e}", file=sys.stderr)
            status = 2
        except SimError as e:
            print(f"{name}:{chunk.line + 1} level={_level(args)} result=error: {e}")
            status = max(status, 1)
    return status


def _run_imported_plain(args: argparse.Namespace, chunk, run) -> int:
    case = run_imported.run_plain(chunk, str(args.file), args.world, args.seed, run, args.entry)
    summary = f"{case.label} world={case.world} {case.fields} level={_level(args)}"
    return _report(summary, case.seconds, case.mismatch)


def _check_backend(backend: str) -> None:
    from purlin import runtime

    if backend not in runtime.available_backends():
        raise UsageError(f"--backend {backend}: purlin was built without {backend.upper()}")
    if backend == "cuda" and runtime.default_backend() != "cuda":
        raise UsageError("--backend cuda: no CUDA GPU is visible")


def _check_devices(devices: list[int]) -> None:
    from purlin import _runtime

    visible = _runtime.cuda_device_count()
    if max(devices) >= visible:
        raise UsageError(f"--devices names GPU {max(devices)}, but {visible} GPU{'s are' if visible != 1 else ' is'} "
                         f"visible (0 to {visible - 1})")


def main(argv: Sequence[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    try:
        if (args.file is None) == (args.collective is None):
            raise UsageError("give either FILE or --collective NAME")
        if args.backend != "sim":
            if args.level not in (None, "plan"):
                raise UsageError(f"--backend {args.backend} runs plans: use --level plan")
            args.level = "plan"
            _check_backend(args.backend)
        args.level = args.level or "coll"
        if args.devices is not None:
            if args.backend != "cuda":
                raise UsageError("--devices places ranks on GPUs: it goes with --backend cuda")
            try:
                args.devices = [int(d) for d in args.devices.split(",")]
            except ValueError:
                raise UsageError(f"--devices takes GPU numbers separated by commas, got '{args.devices}'") from None
            if min(args.devices) < 0:
                raise UsageError("--devices are GPU numbers (>= 0)")
            _check_devices(args.devices)
        if args.lowering:
            try:
                pipeline(f"convert-coll-to-snac{{{args.lowering}}}")
            except ValueError as e:
                raise UsageError(f"--lowering '{args.lowering}': {_one_line(str(e))}") from None
        return _run_file(args) if args.file is not None else _run_named(args)
    except (UsageError, SimError) as e:
        print(f"purlin-run: error: {e}", file=sys.stderr)
        return 2
    except MemoryError as e:
        print(f"purlin-run: error: out of host memory: {e}", file=sys.stderr)
        return 2


def main_exit() -> None:
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
