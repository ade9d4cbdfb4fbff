"""Summarises the `timeline` lines that bench/latency_probe.py's timeline
variant prints from the device (`timeline RANK BLOCK N PREVIOUS t0 ...
tN-1`: thread 0's global timer at the kernel's entry, after its wait for the
work ahead, after its frame and after each of its steps, and the block's
last stamp in the call before, in ns). Blocks of one rank with the same
number of stamps are one role; for each, the median and the latest block's
time of each stamp, in us from the earliest entry of any rank. Then, per
rank, how the call before handed over to this one: its end (the rank's
latest last stamp), this call's first entry and the latest return from its
wait for the work ahead.

    python bench/latency_probe.py ... --variants timeline | python bench/timeline.py
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict

Rows = dict[tuple[int, int], tuple[int, list[int]]]


def parse(lines) -> Rows:
    """(rank, block) -> (the previous call's last stamp, this call's stamps)."""
    rows = {}
    for line in lines:
        parts = line.split()
        if len(parts) < 5 or parts[0] != "timeline":
            continue
        rank, block, n, previous = map(int, parts[1:5])
        rows[(rank, block)] = (previous, [int(t) for t in parts[5:5 + n]])
    return rows


def summary(rows: Rows) -> list[str]:
    if not rows:
        return ["no timeline lines (did the probe reach its timed call?)"]
    t0 = min(ts[0] for _, ts in rows.values() if ts)

    def us(t: int) -> float:
        return (t - t0) / 1e3

    roles: dict[tuple[int, int], list[tuple[int, list[int]]]] = defaultdict(list)
    for (rank, block), (_, ts) in sorted(rows.items()):
        if ts:
            roles[(rank, len(ts))].append((block, ts))
    out = [f"{'rank':>4} {'blocks':>9}  stamps in us (entry, waited, frame, steps): median / latest block"]
    for (rank, n), members in sorted(roles.items(), key=lambda kv: (kv[0][0], kv[1][0][0])):
        blocks = [b for b, _ in members]
        cols = [f"{statistics.median(us(ts[i]) for _, ts in members):7.2f}/"
                f"{max(us(ts[i]) for _, ts in members):<7.2f}" for i in range(n)]
        out.append(f"{rank:>4} {min(blocks):>4}-{max(blocks):<4}  " + " ".join(cols))
    out.append(f"handover, us: {'rank':>4} {'ended':>8} {'entry':>8} {'waited':>8} {'gap':>7}")
    for rank in sorted({r for r, _ in rows}):
        mine = [(prev, ts) for (r, _), (prev, ts) in rows.items() if r == rank and len(ts) > 1]
        if not mine:
            continue
        ended = max(prev for prev, _ in mine)
        entry, waited = min(ts[0] for _, ts in mine), max(ts[1] for _, ts in mine)
        out.append(f"{'':>13} {rank:>4} {us(ended):8.2f} {us(entry):8.2f} {us(waited):8.2f} "
                   f"{(waited - ended) / 1e3:7.2f}")
    return out


def main() -> int:
    print("\n".join(summary(parse(sys.stdin))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
