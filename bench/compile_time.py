"""Time to generate and compile a collective's kernel, and to get it again.

    python bench/compile_time.py [--out bench/results/compile-time.txt]

For all_reduce and all_gather in both regimes, at worlds 2 to 72: the
codegen (purlin-opt -t cuda's work), the first NVRTC compile into an empty
cache, a second lookup in the same process (memory), and one from a fresh
process (disk). Runs on the CPU; NVRTC needs no GPU.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from purlin.compile import compile_collective
from purlin.cuda import nvrtc

FRESH = ("import sys, time; from purlin.cuda import nvrtc; src = sys.stdin.read(); t = time.perf_counter(); "
         "c = nvrtc.compile_cubin(src, sys.argv[1]); print(c.cached, time.perf_counter() - t)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None)
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args(argv)
    lines = [f"{'collective':>11} {'regime':>10} {'world':>5} {'codegen ms':>10} {'first s':>8} "
             f"{'memory ms':>9} {'disk ms':>8}"]
    with tempfile.TemporaryDirectory() as cache:
        os.environ["PURLIN_CACHE_DIR"] = cache
        for coll, op, count in (("all_reduce", "sum", 4096), ("all_gather", None, 512)):
            for regime in ("latency", "throughput"):
                for world in (2, 4, 8, 16, 72):
                    if regime == "latency" and world > 16:
                        continue
                    compiled = compile_collective(coll, world, "bf16", op, count, arch=args.arch,
                                                  lowering=f"regime={regime}")
                    t = time.perf_counter()
                    source = compiled.cuda.source().text
                    codegen = time.perf_counter() - t
                    nvrtc._memory.clear()
                    for f in os.listdir(cache):
                        os.remove(os.path.join(cache, f))
                    first = nvrtc.compile_cubin(source, args.arch)
                    again = nvrtc.compile_cubin(source, args.arch)
                    out = subprocess.run([sys.executable, "-c", FRESH, args.arch], input=source, text=True,
                                         capture_output=True, check=True).stdout.split()
                    assert not first.cached and again.cached and out[0] == "True"
                    lines.append(f"{coll:>11} {regime:>10} {world:>5} {codegen * 1e3:>10.1f} {first.seconds:>8.2f} "
                                 f"{again.seconds * 1e3:>9.3f} {float(out[1]) * 1e3:>8.2f}")
                    print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"# python bench/compile_time.py --arch {args.arch} (NVRTC {nvrtc.version()}, CPU only)\n")
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
