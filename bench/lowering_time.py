"""How long lowering an all_reduce to verified SNAC takes, and how big the IR is.

    python bench/lowering_time.py [--runs N] [--budget SECONDS]

Table 1 times `purlin-opt FILE -p coll-expand,convert-coll-to-snac,snac-verify`
as a subprocess (what a user waits for, interpreter start and imports
included) for an 8-rank bf16 sum all_reduce of 32 B, 1 MiB and 1 GiB, then
each pass in-process on an already parsed module. Medians of up to N runs;
sizes whose runs exceed the budget get fewer (at least one), and the table
says how many.

Table 2 counts the operations of the lowered (unverified) module for world
8, 16 and 64 at the same sizes: the SNAC program is rank-generic, so the
count does not grow with the world (it depends on the regime and strategy
the cost model picks). It also gives the length of the printed IR, which
the named layouts inside snac.phase attributes do make grow.

Timings vary from run to run; the format does not.
"""

from __future__ import annotations

import argparse
import io
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from xdsl.passes import PassPipeline
from xdsl.printer import Printer

from purlin.compile.pipeline import make_context, parse_module
from purlin.compile.universe import PASSES

PASS_NAMES = ("coll-expand", "convert-coll-to-snac", "snac-verify")
PIPELINE = ",".join(PASS_NAMES)
SIZES = (("32 B", 32), ("1 MiB", 1 << 20), ("1 GiB", 1 << 30))
WORLDS = (8, 16, 64)
ITEMSIZE = 2  # bf16


def module_text(world: int, nbytes: int) -> str:
    n = nbytes // ITEMSIZE
    t = f"memref<{n}xbf16>"
    return (
        f"func.func @all_reduce(%in: {t}, %out: {t}) {{\n"
        f"  coll.all_reduce sum %in, %out world {world} : {t}, {t}\n"
        "  func.return\n}\n"
    )


def purlin_opt() -> str:
    # The venv's console script next to this interpreter, else the one on PATH.
    local = Path(sys.executable).with_name("purlin-opt")
    found = str(local) if local.exists() else shutil.which("purlin-opt")
    if found is None:
        sys.exit("purlin-opt not found: install purlin into this interpreter's environment")
    return found


def timed_runs(fn: Callable[[], None], runs: int, budget: float) -> list[float]:
    """Up to `runs` timings of fn, stopping once `budget` seconds are spent."""
    times: list[float] = []
    while len(times) < runs and sum(times) < budget:
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return times


def run_subprocess(cmd: list[str]) -> None:
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr}")


def apply(spec: str, module) -> None:
    PassPipeline.parse_spec(PASSES, spec).apply(make_context(), module)


def pass_times(text: str, runs: int, budget: float) -> tuple[dict[str, float], str]:
    """Median in-process seconds of each pass, each on the previous pass's output;
    and the strategy the pass chose."""
    medians: dict[str, float] = {}
    module = parse_module(text)
    for name in PASS_NAMES:
        times: list[float] = []
        result = module
        while len(times) < runs and sum(times) < budget:
            result = module.clone()
            started = time.perf_counter()
            apply(name, result)
            times.append(time.perf_counter() - started)
        medians[name] = statistics.median(times)
        module = result
    return medians, strategy_of(module)


def strategy_of(module) -> str:
    program = next(op for op in module.walk() if op.name == "snac.program")
    return f"{program.regime.data.value}/{program.strategy.data.value}"


def op_count(module) -> int:
    return sum(1 for _ in module.walk())


def printed_chars(module) -> int:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return len(out.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per measurement (median)")
    ap.add_argument("--budget", type=float, default=30.0,
                    help="seconds after which a measurement stops repeating")
    args = ap.parse_args(argv)
    opt = purlin_opt()

    print(f"all_reduce sum bf16, world 8: purlin-opt -p {PIPELINE}")
    header = (f"{'size':>6}  {'regime/strategy':<20} {'runs':>4}  {'subprocess':>10}  "
              + "  ".join(f"{n:>20}" for n in PASS_NAMES))
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for label, nbytes in SIZES:
            text = module_text(8, nbytes)
            path = Path(tmp) / f"all_reduce_{nbytes}.mlir"
            path.write_text(text)
            cmd = [opt, str(path), "-p", PIPELINE]
            wall = timed_runs(lambda: run_subprocess(cmd), args.runs, args.budget)
            passes, choice = pass_times(text, args.runs, args.budget)
            cells = "  ".join(f"{passes[n]:>19.3f}s" for n in PASS_NAMES)
            print(f"{label:>6}  {choice:<20} {len(wall):>4}  "
                  f"{statistics.median(wall):>9.3f}s  {cells}")

    print()
    print("lowered module (coll-expand,convert-coll-to-snac), all_reduce sum bf16")
    header = f"{'size':>6}  {'world':>5}  {'regime/strategy':<20} {'operations':>10}  {'printed chars':>13}"
    print(header)
    print("-" * len(header))
    for label, nbytes in SIZES:
        for world in WORLDS:
            module = parse_module(module_text(world, nbytes))
            apply("coll-expand,convert-coll-to-snac", module)
            print(f"{label:>6}  {world:>5}  {strategy_of(module):<20} {op_count(module):>10}  "
                  f"{printed_chars(module):>13}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
