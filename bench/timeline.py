"""Summarises the `timeline` lines that bench/latency_probe.py's timeline
variant prints from the device (`timeline RANK BLOCK N t0 ... t15`: thread
0's global timer after the kernel's frame and after each of its N - 1 steps,
in ns). Blocks of one rank with the same number of steps are one role; for
each, the median and the latest block's time of each stamp, in us from the
earliest frame of any rank in that call.

    python bench/latency_probe.py ... --variants timeline | python bench/timeline.py
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict


def parse(lines) -> dict[tuple[int, int], list[int]]:
    rows = {}
    for line in lines:
        parts = line.split()
        if len(parts) < 4 or parts[0] != "timeline":
            continue
        rank, block, n = map(int, parts[1:4])
        rows[(rank, block)] = [int(t) for t in parts[4:4 + n]]
    return rows


def summary(rows: dict[tuple[int, int], list[int]]) -> list[str]:
    if not rows:
        return ["no timeline lines (did the probe reach its timed call?)"]
    t0 = min(ts[0] for ts in rows.values() if ts)
    roles: dict[tuple[int, int], list[tuple[int, list[int]]]] = defaultdict(list)
    for (rank, block), ts in sorted(rows.items()):
        roles[(rank, len(ts))].append((block, ts))
    out = [f"{'rank':>4} {'blocks':>9}  stamps in us from the first frame: median / latest block"]
    for (rank, n), members in sorted(roles.items(), key=lambda kv: (kv[0][0], kv[1][0][0])):
        blocks = [b for b, _ in members]
        cols = []
        for i in range(n):
            at = [(ts[i] - t0) / 1e3 for _, ts in members]
            cols.append(f"{statistics.median(at):7.2f}/{max(at):<7.2f}")
        out.append(f"{rank:>4} {min(blocks):>4}-{max(blocks):<4}  " + " ".join(cols))
    return out


def main() -> int:
    print("\n".join(summary(parse(sys.stdin))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
