"""StableHLO's own interpreter tests of its collectives, run by purlin.

    python bench/stablehlo_conformance.py STABLEHLO/stablehlo/tests/interpret
    python bench/stablehlo_conformance.py DIR --backend cpu   # the plans on purlin's CPU backend

DIR is the `stablehlo/tests/interpret` directory of a StableHLO checkout (or
the checkout itself). Every case (module) of all_gather, all_reduce,
all_to_all, collective_broadcast, collective_permute and reduce_scatter.mlir
is imported and run by purlin with one rank per process, and each of its
`check.expect_eq_const` expectations checked: one line a case (PASS or FAIL,
with why), then how many pass. Exit status 0 when all do.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from purlin.levels.base import SimError
from purlin.tools import run_imported

FILES = ("all_gather", "all_reduce", "all_to_all", "collective_broadcast", "collective_permute", "reduce_scatter")


def tests_dir(path: Path) -> Path:
    for candidate in (path, path / "stablehlo" / "tests" / "interpret", path / "tests" / "interpret"):
        if (candidate / "all_reduce.mlir").is_file():
            return candidate
    raise SystemExit(f"stablehlo_conformance: no {FILES[1]}.mlir under {path} (give stablehlo/tests/interpret)")


def run_file(path: Path, run: run_imported.Runner) -> list[tuple[str, str | None]]:
    """(case, None when it passes or why it fails) for each case of the file."""
    out = []
    for chunk in run_imported.chunks(path.read_text()):
        label = f"{path.name}:{chunk.line + 1}"
        try:
            case = run_imported.run_interpreter_case(chunk, str(path), run)
        except (run_imported.SpecError, SimError) as e:
            out.append((label, str(e).splitlines()[0]))
            continue
        label = case.label.replace(str(path), path.name)
        if case.mismatch is not None:
            out.append((label, case.mismatch))
        elif case.checked == 0:
            out.append((label, "no expectation checked"))
        else:
            out.append((label, None))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tests", type=Path, help="stablehlo/tests/interpret of a StableHLO checkout")
    ap.add_argument("--backend", default="sim", choices=("sim", "cpu"),
                    help="sim: the coll level; cpu: the lowered plans on purlin's CPU backend")
    args = ap.parse_args(argv)
    root = tests_dir(args.tests)
    run = run_imported.level_runner("coll" if args.backend == "sim" else "plan", args.backend)
    results = []
    for name in FILES:
        results += run_file(root / f"{name}.mlir", run)
    for label, why in results:
        print(f"PASS {label}" if why is None else f"FAIL {label}: {why}")
    passed = sum(why is None for _, why in results)
    print(f"{passed} of {len(results)} cases pass")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
