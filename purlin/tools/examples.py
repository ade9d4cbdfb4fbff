"""`purlin-examples`: the main job. Lowers every example through the full
pipeline and prints the result."""

import argparse
import sys
from pathlib import Path

from purlin.pipeline import pipeline_spec
from purlin.tools.opt import main as opt_main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("files", nargs="*", type=Path, help="examples (default: examples/*.mlir)")
    args = ap.parse_args(argv)
    files = args.files or sorted(Path("examples").glob("*.mlir"))
    if not files:
        print("error: no example files given and none in examples/", file=sys.stderr)
        return 1
    status = 0
    for f in files:
        print(f"// ===== {f} | {pipeline_spec()} =====", flush=True)
        status |= opt_main([str(f), "-p", pipeline_spec()])
        sys.stdout.flush()
    return status


def main_exit() -> None:
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
