"""Two runs of bench/one_gpu.py side by side: each point's time in B over its
time in A, and the geometric mean per table.

    python bench/ab_compare.py A/summary.json B/summary.json [--only-beyond 0.05]
    python bench/ab_compare.py a1/summary.json,a2/summary.json b1/summary.json,b2/summary.json

A and B are the `a/` and `b/` folders `bench/gpu_call.sh ab` writes (one
machine, one call), or with AB_ROUNDS=N its `a1/`..`aN/` and `b1/`..`bN/`,
comma-separated: each side's time of a point is then the median of its runs,
and `spread` the larger of the two sides' slowest run over their fastest. A
point whose ratio lies within that spread is marked `~`: the same tree moved as
far between its own runs. Points present in only one side are listed apart; a
ratio below 1 is B faster.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys

TABLES = ("latency", "throughput")

Key = tuple[int, str, int]


def points(summary: dict, table: str) -> dict[Key, float]:
    return {(r["world"], r["collective"], r["bytes"]): r["us"] for r in summary.get(table, []) if r["us"]}


def load(paths: str) -> list[dict]:
    runs = []
    for path in paths.split(","):
        with open(path) as f:
            runs.append(json.load(f))
    return runs


def side(runs: list[dict], table: str) -> dict[Key, list[float]]:
    """Each point's times over the runs that have it."""
    times: dict[Key, list[float]] = {}
    for run in runs:
        for key, us in points(run, table).items():
            times.setdefault(key, []).append(us)
    return times


def compare(a: list[dict], b: list[dict], table: str, only_beyond: float) -> None:
    ta, tb = side(a, table), side(b, table)
    both = sorted(ta.keys() & tb.keys())
    if not both:
        print(f"{table}: no point in both runs")
        return
    rounds = len(a) > 1 or len(b) > 1
    print(f"{table}: B / A per point" + (" (medians of the runs)" if rounds else ""))
    print(f"{'world':>5} {'collective':>16} {'bytes':>10} {'A us':>9} {'B us':>9} {'B/A':>6}"
          + (f" {'spread':>6}" if rounds else ""))
    ratios, moved = [], 0
    for key in both:
        ma, mb = statistics.median(ta[key]), statistics.median(tb[key])
        r = mb / ma
        ratios.append(r)
        line = f"{key[0]:>5} {key[1]:>16} {key[2]:>10} {ma:>9.2f} {mb:>9.2f} {r:>6.3f}"
        if rounds:
            spread = max(max(t) / min(t) for t in (ta[key], tb[key]))
            beyond = abs(math.log(r)) > math.log(spread)
            moved += beyond
            line += f" {spread:>6.3f}" + ("" if beyond else " ~")
        if abs(r - 1) > only_beyond:
            print(line)
    mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"{table}: {len(both)} points, B / A geometric mean {mean:.3f}, least {min(ratios):.3f}, "
          f"most {max(ratios):.3f}" + (f"; {moved} beyond their runs' spread" if rounds else ""))
    for name, only in (("A", ta.keys() - tb.keys()), ("B", tb.keys() - ta.keys())):
        if only:
            print(f"{table}: only in {name}: {', '.join(f'{w} {c} {n} B' for w, c, n in sorted(only))}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", help="A's summary.json, or several comma-separated (its runs)")
    parser.add_argument("b", help="B's summary.json, or several comma-separated (its runs)")
    parser.add_argument("--only-beyond", type=float, default=0.0,
                        help="list only points whose ratio differs from 1 by more than this")
    args = parser.parse_args()
    try:
        a, b = load(args.a), load(args.b)
    except (OSError, json.JSONDecodeError) as e:
        parser.error(f"cannot read a run's summary: {e}")
    for table in TABLES:
        compare(a, b, table, args.only_beyond)
    return 0


if __name__ == "__main__":
    sys.exit(main())
