"""Summarises the `timeline` lines that bench/latency_probe.py's timeline
variant prints from the device (`timeline CALL RANK BLOCK N t0 ... tN-1`:
thread 0's global timer at the kernel's entry, after its wait for the work
ahead, after its frame and after each of its steps, in ns). Blocks of one
rank with the same number of stamps are one role; for each role and call,
the median and the latest block's time of each stamp, in us from the
earliest entry of any rank in the first call. Then, per rank, how one call
hands over to the next: the previous call's last stamp (its end), the next
call's first entry and the latest return from its wait for the work ahead.

    python bench/latency_probe.py ... --variants timeline | python bench/timeline.py
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict

Rows = dict[tuple[int, int, int], list[int]]


def parse(lines) -> Rows:
    """(call, rank, block) -> stamps."""
    rows = {}
    for line in lines:
        parts = line.split()
        if len(parts) < 5 or parts[0] != "timeline":
            continue
        call, rank, block, n = map(int, parts[1:5])
        rows[(call, rank, block)] = [int(t) for t in parts[5:5 + n]]
    return rows


def summary(rows: Rows) -> list[str]:
    if not rows:
        return ["no timeline lines (did the probe reach its timed calls?)"]
    calls = sorted({call for call, _, _ in rows})
    t0 = min(ts[0] for (call, _, _), ts in rows.items() if ts and call == calls[0])

    def us(t: int) -> float:
        return (t - t0) / 1e3

    out = []
    for call in calls:
        roles: dict[tuple[int, int], list[tuple[int, list[int]]]] = defaultdict(list)
        for (c, rank, block), ts in sorted(rows.items()):
            if c == call and ts:
                roles[(rank, len(ts))].append((block, ts))
        out.append(f"call {call}: {'rank':>4} {'blocks':>9}  stamps in us (entry, waited, frame, steps): "
                   "median / latest block")
        for (rank, n), members in sorted(roles.items(), key=lambda kv: (kv[0][0], kv[1][0][0])):
            blocks = [b for b, _ in members]
            cols = [f"{statistics.median(us(ts[i]) for _, ts in members):7.2f}/"
                    f"{max(us(ts[i]) for _, ts in members):<7.2f}" for i in range(n)]
            out.append(f"{'':>9} {rank:>4} {min(blocks):>4}-{max(blocks):<4}  " + " ".join(cols))
    for before, after in zip(calls, calls[1:]):
        out.append(f"call {before} -> {after}, us: {'rank':>4} {'end':>8} {'entry':>8} {'waited':>8} {'gap':>7}")
        for rank in sorted({r for c, r, _ in rows if c in (before, after)}):
            ended = [ts[-1] for (c, r, _), ts in rows.items() if (c, r) == (before, rank) and ts]
            nxt = [ts for (c, r, _), ts in rows.items() if (c, r) == (after, rank) and len(ts) > 1]
            if not ended or not nxt:
                continue
            end, entry, waited = max(ended), min(ts[0] for ts in nxt), max(ts[1] for ts in nxt)
            out.append(f"{'':>19} {rank:>4} {us(end):8.2f} {us(entry):8.2f} {us(waited):8.2f} "
                       f"{(waited - end) / 1e3:7.2f}")
    return out


def main() -> int:
    print("\n".join(summary(parse(sys.stdin))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
