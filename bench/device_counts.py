"""MoE-style all_to_all_v: counts on the device against counts on the host,
all ranks on one GPU.

    python bench/device_counts.py --out bench/results/1xh200-device-counts

For worlds 2, 4 and 8 and per-rank sends of 4 KiB to 4 MiB (bf16, skewed
random counts with zeros, the same every call), runs in one process:
- `device`: purlin.runtime.device_counts (one kernel for any counts; the
  ranks exchange the counts and build their tables on the GPU);
- `host`: the plan compiled for these counts (what a caller with counts on
  the host runs; a new set of counts costs a host round trip and a lowering).
Both lowered alike, results checked against the reference before timing;
each figure is the median over samples of CUDA-graph replays of one call of
every rank (ranks share the GPU, so a replay ends with the slowest rank).
Prints latency and busbw (nccl-tests' all_to_all: bytes sent per rank x
(world - 1) / world / time) and writes summary.json.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
import torch

from purlin.coll import reference
from purlin.compile import compile_device_counts
from purlin.runtime import Communicator
from purlin.runtime.device_counts import CountsCommunicator
from purlin.tools.bench import human

SIZES = (4096, 65536, 1 << 20, 4 << 20)
WORLDS = (2, 4, 8)
SAMPLES, REPLAYS = 15, 20


def lowering(per_rank_bytes: int, world: int) -> str:
    # Every rank's grid must fit on the one GPU next to the others'.
    return "regime=latency" if per_rank_bytes <= 65536 else f"regime=throughput blocks={max(4, 32 // world)}"


def skewed_counts(world: int, elems: int, rng: np.random.Generator) -> np.ndarray:
    """Rank s sends `elems` in all, more to low ranks, nothing to one rank."""
    weights = rng.random((world, world)) * np.linspace(2.0, 0.5, world)
    for s in range(world):
        weights[s, (s + 1) % world] = 0
    counts = np.floor(weights / weights.sum(1, keepdims=True) * elems).astype(np.int64)
    counts[:, 0] += elems - counts.sum(1)
    return counts


def time_graph(run) -> float:
    """Median microseconds of one captured call, over SAMPLES runs of REPLAYS replays."""
    stream = torch.cuda.Stream()
    run()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        run()
    times = []
    for _ in range(SAMPLES):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(REPLAYS):
            graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / REPLAYS)
    return float(np.median(times))


def check(outs, ins_host, counts) -> None:
    want = reference.all_to_all_v(ins_host, counts.tolist())
    for r, w in enumerate(want):
        got = outs[r][: len(w)].float().cpu().numpy()
        if not np.array_equal(got, w):
            raise SystemExit(f"rank {r}: wrong result")


def measure(world: int, per_rank_bytes: int, rng: np.random.Generator) -> dict:
    elems = per_rank_bytes // 2
    counts = skewed_counts(world, elems, rng)
    capacity = int(max(elems, counts.sum(0).max()))
    low = lowering(per_rank_bytes, world)
    coll = compile_device_counts("all_to_all_v", world, "bf16", input_elems=capacity, output_elems=capacity,
                                 arch="sm_90", lowering=low)
    ins_host = [rng.integers(-64, 64, capacity).astype(np.float32) for _ in range(world)]
    ins = [torch.from_numpy(a).cuda().to(torch.bfloat16) for a in ins_host]
    device_counts = [torch.from_numpy(c).cuda() for c in counts]
    recv = [torch.zeros(world, dtype=torch.int64, device="cuda") for _ in range(world)]
    row = {"world": world, "bytes": per_rank_bytes, "lowering": low}
    dev = CountsCommunicator(coll, "cuda", timeout_s=30.0, devices=[0] * world)
    bound = coll.bind_collective(counts.tolist())
    host = Communicator(bound.plan, "cuda", timeout_s=30.0, name="all_to_all_v", devices=[0] * world,
                        kernel=bound.cuda)
    for impl, run in (("device", lambda outs: dev.run(ins, outs, device_counts, recv)),
                      ("host", lambda outs: host.run(ins, outs))):
        outs = [torch.zeros(capacity, dtype=torch.bfloat16, device="cuda") for _ in range(world)]
        run(outs)
        torch.cuda.synchronize()
        check(outs, ins_host, counts)
        row[impl] = time_graph(lambda: run(outs))
        check(outs, ins_host, counts)
    dev.synchronize()
    if any(r.cpu().tolist() != counts[:, k].tolist() for k, r in enumerate(recv)):
        raise SystemExit("wrong received counts")
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--worlds", default=",".join(map(str, WORLDS)))
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(0)
    rows = [measure(w, s, rng) for w in map(int, args.worlds.split(",")) for s in SIZES]
    lines = [f"{'world':>5} {'size':>8} {'device us':>10} {'busbw':>7} {'host us':>9} {'busbw':>7} {'ratio':>6}  lowering"]
    for r in rows:
        bw = lambda us: r["bytes"] * (r["world"] - 1) / r["world"] / (us * 1e3)  # noqa: E731  GB/s
        lines.append(f"{r['world']:>5} {human(r['bytes']):>8} {r['device']:>10.2f} {bw(r['device']):>7.1f} "
                     f"{r['host']:>9.2f} {bw(r['host']):>7.1f} {r['device'] / r['host']:>6.2f}  {r['lowering']}")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"rows": rows}, f, indent=1)
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
