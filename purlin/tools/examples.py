"""`purlin-examples`: the main job. Lowers every example through the full
pipeline, prints the result, then runs its plan on the runtime (CUDA when GPUs
are visible, else CPU threads) and checks it against the reference.

An example whose counts are dynamic gives them in a `// counts: ...` line.
"""

EXIT_STATUS = """exit status:
  0  every example lowered and its results match the reference
  1  some example's results differ (or its level failed to run it)
  2  usage or input error: no examples, or one that could not be read, parsed or lowered
     (it is not run)"""

import argparse
import re
import sys
from pathlib import Path

from purlin.compile.pipeline import pipeline_spec
from purlin.runtime import default_backend
from purlin.tools import run_imported
from purlin.tools.opt import main as opt_main
from purlin.tools.run import main as run_main

COUNTS = re.compile(r"^//\s*counts:\s*(.+)$", re.M)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="purlin-examples",
        description=__doc__, epilog=EXIT_STATUS, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("files", nargs="*", type=Path, help="examples (default: examples/*.mlir)")
    args = ap.parse_args(argv)
    files = args.files or sorted(Path("examples").glob("*.mlir"))
    if not files:
        print("error: no example files given and none in examples/", file=sys.stderr)
        return 2
    status = 0
    summaries = []
    backend = default_backend()
    for f in files:
        spec, extra = pipeline_spec(), []
        text = f.read_text(errors="replace") if f.is_file() else ""
        # StableHLO and shard examples are imported first (their modules give
        # the process grid); interpreter tests hold several modules.
        if run_imported.is_imported(text):
            importer = "convert-shard-to-coll" if "shard.grid" in text else "convert-stablehlo-to-coll"
            spec = f"{importer},{spec}"
            extra = ["--split-input-file"] if "// -----" in text else []
        print(f"// ===== {f} | {spec} =====", flush=True)
        lowered = opt_main([str(f), "-p", spec, *extra]) == 0
        sys.stdout.flush()
        if not lowered:
            status = 2
            continue
        # purlin-opt has read it: the file exists and is UTF-8 text.
        run_args = [str(f), "--backend", backend]
        if m := COUNTS.search(f.read_text()):
            run_args += ["--counts", m.group(1).replace(" ", "")]
        summaries.append(run_args)
    print(f"// ===== plans run on the {backend} backend, checked against the reference =====", flush=True)
    for run_args in summaries:
        status = max(status, run_main(run_args))
        sys.stdout.flush()
    return status


def main_exit() -> None:
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
