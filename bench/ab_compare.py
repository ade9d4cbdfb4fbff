"""Two runs of bench/one_gpu.py side by side: each point's time in B over its
time in A, and the geometric mean per table.

    python bench/ab_compare.py A/summary.json B/summary.json [--only-beyond 0.05]

A and B are the `a/` and `b/` folders `bench/gpu_call.sh ab` writes (one
machine, one call). Points present in only one run are listed apart; a ratio
below 1 is B faster.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

TABLES = ("latency", "throughput")


def points(summary: dict, table: str) -> dict[tuple, float]:
    return {(r["world"], r["collective"], r["bytes"]): r["us"] for r in summary.get(table, [])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--only-beyond", type=float, default=0.0,
                        help="list only points whose ratio differs from 1 by more than this")
    args = parser.parse_args()
    with open(args.a) as f:
        a = json.load(f)
    with open(args.b) as f:
        b = json.load(f)
    for table in TABLES:
        pa, pb = points(a, table), points(b, table)
        both = sorted(pa.keys() & pb.keys())
        if not both:
            print(f"{table}: no point in both runs")
            continue
        print(f"{table}: B / A per point")
        print(f"{'world':>5} {'collective':>16} {'bytes':>10} {'A us':>9} {'B us':>9} {'B/A':>6}")
        ratios = []
        for key in both:
            r = pb[key] / pa[key]
            ratios.append(r)
            if abs(r - 1) > args.only_beyond:
                print(f"{key[0]:>5} {key[1]:>16} {key[2]:>10} {pa[key]:>9.2f} {pb[key]:>9.2f} {r:>6.3f}")
        mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"{table}: {len(both)} points, B / A geometric mean {mean:.3f}, least {min(ratios):.3f}, "
              f"most {max(ratios):.3f}")
        for name, only in (("A", pa.keys() - pb.keys()), ("B", pb.keys() - pa.keys())):
            if only:
                print(f"{table}: only in {name}: {', '.join(f'{w} {c} {n} B' for w, c, n in sorted(only))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
