"""Compiled collectives against the fused-kernel floor, all ranks on one GPU.

    nvcc -O3 -arch=sm_90 ../shared/reference/one_gpu_floor.cu -o floor
    python bench/one_gpu.py --floor ./floor --out bench/results/1xh200-compiled

Runs the floor program (an ideal fused LL all_reduce, one block chain per
rank, CUDA-graph replays) and, in the same process run, purlin-bench's
single-process mode with every rank on GPU 0 (`--devices 0,...,0`) for
worlds 2, 4 and 8: all_reduce, all_gather, reduce_scatter and all_to_all
at 16 B, 1 KiB and 64 KiB, results checked before timing. Prints latency
per call and the ratio to the floor's all_reduce of the same size, and
writes floor.txt, summary.json and the purlin-bench output of each world.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

from purlin.tools import bench

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
SIZES = (16, 1024, 65536)
GOAL = 1.25
FLOOR_LINE = re.compile(r"ideal LL all_reduce, (\d+) ranks on one GPU, +(\d+) B .*: ([\d.]+) us per call(.*)")


def run_floor(binary: str, worlds: list[int], out: str) -> dict[tuple[int, int], float]:
    text = subprocess.run([binary, *map(str, worlds)], check=True, capture_output=True, text=True).stdout
    with open(os.path.join(out, "floor.txt"), "w") as f:
        f.write(text)
    floor = {}
    for line in text.splitlines():
        m = FLOOR_LINE.search(line)
        if m:
            if "WRONG" in m.group(4):
                raise SystemExit(f"the floor program computed a wrong result: {line}")
            floor[(int(m.group(1)), int(m.group(2)))] = float(m.group(3))
    return floor


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--floor", required=True, help="the built one_gpu_floor.cu program")
    ap.add_argument("--out", required=True)
    ap.add_argument("--worlds", default="2,4,8")
    args = ap.parse_args(argv)
    worlds = [int(w) for w in args.worlds.split(",")]
    os.makedirs(args.out, exist_ok=True)
    floor = run_floor(args.floor, worlds, args.out)
    rows, failures = [], 0
    for w in worlds:
        out = os.path.join(args.out, f"world{w}")
        failures += bench.main(["--single-process", "--backend", "cuda", "--devices", ",".join(["0"] * w),
                                "--sizes", ",".join(map(str, SIZES)), "--collectives", ",".join(COLLECTIVES),
                                "--no-sweep", "--out", out])
        with open(os.path.join(out, "bench.json")) as f:
            doc = json.load(f)
        for r in doc["rows"]:
            if r["impl"] != "purlin":
                continue
            ref = floor.get((w, r["bytes"]))
            ratio = r["us"] / ref if r["us"] is not None and ref else None
            rows.append({"world": w, "collective": r["collective"], "bytes": r["bytes"], "us": r["us"],
                         "floor_us": ref, "ratio": ratio})
    lines = [f"{'world':>5} {'collective':>15} {'size':>8} {'purlin us':>10} {'floor us':>9} {'ratio':>6}  goal <= {GOAL}"]
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        met = "" if r["ratio"] is None else ("met" if r["ratio"] <= GOAL else "missed")
        us = "-" if r["us"] is None else f"{r['us']:.2f}"
        lines.append(f"{r['world']:>5} {r['collective']:>15} {bench.human(r['bytes']):>8} {us:>10} "
                     f"{r['floor_us'] or 0:>9.2f} {ratio:>6}  {met}")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"goal": GOAL, "rows": rows}, f, indent=1)
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(table + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
