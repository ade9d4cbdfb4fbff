"""One collective's calls, every rank on GPU 0, as a workload for a profiler:
captured into one CUDA graph before any eager launch, then replayed. A
profiler that runs kernels one at a time (ncu's default) would run one rank's
kernel alone, and it would wait for its peers until the timeout; as a graph
(`ncu --graph-profiling graph`, `nsys --cuda-graph-trace=node`) the ranks run
together, as purlin-bench times them.

    CUDA_MODULE_LOADING=EAGER nsys profile --cuda-graph-trace=node -o prof \\
        python bench/graph_profile.py --world 2 --bytes 16 --collective all_reduce
    CUDA_MODULE_LOADING=EAGER ncu --graph-profiling graph --metrics ... python bench/graph_profile.py ...

The result is checked after the replays (the last call's outputs against
the reference); the time per call printed is the median replay's.

    python bench/graph_profile.py --ncu ncu.csv --per-graph 40 [--insts 8000:12000]

summarises `ncu --graph-profiling graph --csv`'s results: per graph workload
(the median over the graphs kept; --insts keeps those whose warp instructions
fall in that range, to pick one configuration out of a program that launches
several), every metric divided by --per-graph (calls x ranks in a graph: per
rank and call).

    python bench/graph_profile.py --trace trace.csv --kernel purlin_

reads that table; where nsys is missing, `--timeline trace.csv` writes one
like it from torch.profiler's record of the replays (CUPTI, kernels of graphs
included).

    python bench/graph_profile.py --world 8 --bytes 131072 --collective all_gather --without data,waits

times the kernel with those kinds of steps taken out of its generated source
(data: the moves; free: the waits for a peer's leave to write or its being
done reading; ready: the waits for a peer's data; waits: both; signals:
every signal to a peer, only with both kinds of waits, which would hang
without them): where a call's time goes. Its results are then wrong by
design and not checked. `--lowering 'symmetric=false regime=throughput'`
(convert-coll-to-snac's options) times another lowering than the cost
model's, here the staged protocol, with or without its steps.

summarises `nsys stats --report cuda_gpu_trace --format csv`'s table: of the
kernels whose name starts with --kernel (and, with --block, have that many
threads per block), per stream in start order, the median duration, the
median period (one start to the next on a stream) and the median skew (the
spread of the streams' k-th starts) over the last --calls kernels of each,
and the least and the most of the streams' own median durations.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import statistics
import sys
import tempfile
from collections import defaultdict

import numpy as np


def _column(header: list[str], prefix: str) -> int:
    return next(i for i, name in enumerate(header) if name.startswith(prefix))


def summarize_ncu(path: str, per_graph: int, insts: tuple[float, float] | None = None) -> str:
    with open(path) as f:
        rows = [r for r in csv.reader(f) if len(r) > 10]
    at = next((i for i, r in enumerate(rows) if "Metric Name" in r), None)
    if at is None:
        return f"no ncu metrics in {path}"
    header = rows[at]
    rid, name, metric, value = (header.index(c) for c in ("ID", "Kernel Name", "Metric Name", "Metric Value"))
    graphs: dict[str, dict[str, float]] = {}
    for r in rows[at + 1:]:
        if r[name] == "graph":
            graphs.setdefault(r[rid], {})[r[metric]] = float(r[value].replace(",", ""))
    kept = [g for g in graphs.values()
            if insts is None or insts[0] <= g.get("smsp__inst_executed.sum", -1) <= insts[1]]
    if not kept:
        return f"no graph workload in {path}" + (f" with {insts[0]:g}-{insts[1]:g} warp instructions" if insts else "")
    metrics = sorted({m for g in kept for m in g})
    lines = [f"{len(kept)} graph workloads, per rank and call (medians, / {per_graph}):"]
    for m in metrics:
        lines.append(f"  {m}: {statistics.median(g[m] for g in kept if m in g) / per_graph:.1f}")
    return "\n".join(lines)


def summarize_trace(path: str, kernel: str, block: int, calls: int) -> str:
    with open(path) as f:
        rows = [r for r in csv.reader(f) if r]
    at = next(i for i, r in enumerate(rows) if any(c.startswith("Start") for c in r))
    header, rows = rows[at], rows[at + 1:]
    start, dur, blk, strm, name = (_column(header, p) for p in ("Start", "Duration", "BlkX", "Strm", "Name"))
    streams: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r in rows:
        if r[name].startswith(kernel) and (not block or int(r[blk]) == block):
            streams[r[strm]].append((int(r[start]), int(r[dur])))
    if not streams:
        return f"no kernel named {kernel}* in {path}"
    last = [sorted(ks)[-calls:] for ks in streams.values()]
    n = min(map(len, last))
    durations = [d for ks in last for _, d in ks]
    periods = [b[0] - a[0] for ks in last for a, b in zip(ks, ks[1:])]
    skews = [max(ks[i][0] for ks in last) - min(ks[i][0] for ks in last) for i in range(n)]
    us = lambda xs: f"{statistics.median(xs) / 1e3:.2f}" if xs else "-"  # noqa: E731
    # Each stream's own median: with the waits taken out the ranks run uncoupled, and
    # the spread is how much slower the slowest rank's share of the GPU moves its data.
    own = sorted(statistics.median(d for _, d in ks) for ks in last)
    return (f"{kernel}* on {len(last)} streams, last {n} each: duration {us(durations)} us, period {us(periods)} us, "
            f"start skew {us(skews)} us (medians); a stream's median duration {us(own[:1])}-{us(own[-1:])} us")


# The generated code's calls of each kind of step (purlin/cuda/codegen.py).
STEPS = {
    "data": ("push<", "consume<", "reduce_push<", "stage<", "put_units("),
    "free": ("wait_free<", "drain<"),
    # A packet wait fused with the copy of what it waited for goes with the waits.
    "ready": ("wait_ready<", "wait_packets<", "role_barrier<", "poll_consume<"),
    "signals": ("notify<", "grant<", "finish<", "ack<"),
}
STEPS["waits"] = STEPS["free"] + STEPS["ready"]


def step_kinds(without: str) -> list[str]:
    """The kinds of --without, refused (ValueError) where unknown or where a wait would hang."""
    kinds = [k for k in without.split(",") if k]
    if any(k not in STEPS for k in kinds):
        raise ValueError(f"--without takes {', '.join(STEPS)}, got {without!r}")
    calls = {c for k in kinds for c in STEPS[k]}
    if "signals" in kinds and not calls >= set(STEPS["waits"]):
        raise ValueError("--without signals takes the waits out too (free and ready, or waits): they would never end")
    return kinds


def compile_for(collective: str, world: int, nbytes: int, lowering: str, arch: str, sms: int):
    """(spec, compiled) of the collective as this tool times it: `nbytes` of bf16 a rank's input,
    symmetric, every rank on one GPU of `sms` multiprocessors, in the cost model's lowering or in
    convert-coll-to-snac's options `lowering` (e.g. 'symmetric=false regime=throughput': the staged
    protocol), which win over the placement's."""
    from purlin.coll.builder import CollectiveSpec
    from purlin.compile import compile_collective

    count = max(1, nbytes // 2)
    spec = CollectiveSpec(collective, world, "bf16", "sum" if "reduce" in collective else None, count)
    return spec, compile_collective(collective, world, "bf16", spec.op, count, arch=arch, lowering=lowering,
                                    symmetric=True, ranks_per_device=world, sms=sms)


def without_steps(program, blocks_per_sm: int, kinds: list[str]) -> int:
    """Takes the calls of `kinds` (STEPS) out of `program`'s generated source
    for `blocks_per_sm` (the one its communicator will compile); returns how many."""
    from dataclasses import replace

    calls = tuple(c for k in kinds for c in STEPS[k])
    src = program.source(blocks_per_sm)
    kept = [line for line in src.text.split("\n") if not line.lstrip().startswith(calls)]
    program._sources[blocks_per_sm] = replace(src, text="\n".join(kept))
    return src.text.count("\n") + 1 - len(kept)


@contextlib.contextmanager
def _timeline(path: str | None):
    """Records the kernels run inside into `path` (nsys cuda_gpu_trace's columns that
    summarize_trace reads), or nothing without a path."""
    if not path:
        yield
        return
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        yield
    trace = os.path.join(tempfile.mkdtemp(), "trace.json")
    prof.export_chrome_trace(trace)
    with open(trace) as f:
        write_trace(json.load(f)["traceEvents"], path)


def write_trace(events: list[dict], path: str) -> None:
    """The kernels among chrome-trace `events` (torch.profiler's export) as the
    columns of nsys cuda_gpu_trace that summarize_trace reads."""
    events = [e for e in events if e.get("cat") == "kernel"]
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["Start (ns)", "Duration (ns)", "BlkX", "Strm", "Name"])
        for e in sorted(events, key=lambda e: e["ts"]):
            a = e.get("args", {})
            out.writerow([round(e["ts"] * 1e3), round(e["dur"] * 1e3), a.get("block", [0])[0],
                          a.get("stream", e.get("tid")), e["name"]])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--bytes", type=int, default=16, help="per rank input, bf16")
    ap.add_argument("--collective", default="all_reduce")
    ap.add_argument("--calls", type=int, default=20, help="calls per graph")
    ap.add_argument("--replays", type=int, default=5)
    ap.add_argument("--lowering", default="", metavar="OPTIONS",
                    help="convert-coll-to-snac options, e.g. 'symmetric=false regime=throughput' (the staged protocol)")
    ap.add_argument("--without", default="", help="comma-separated step kinds to take out: " + ", ".join(STEPS))
    ap.add_argument("--timeline", help="write the replays' kernels (torch.profiler) as a cuda_gpu_trace-like CSV")
    ap.add_argument("--trace", help="summarise this nsys cuda_gpu_trace CSV instead of running")
    ap.add_argument("--ncu", help="summarise this ncu --graph-profiling graph --csv output instead of running")
    ap.add_argument("--per-graph", type=int, default=0, help="with --ncu: calls x ranks per graph")
    ap.add_argument("--insts", help="with --ncu: LO:HI warp instructions of the graphs to keep")
    ap.add_argument("--kernel", default="purlin_", help="with --trace: the kernels' name prefix")
    ap.add_argument("--block", type=int, default=0, help="with --trace: only kernels of this many threads")
    args = ap.parse_args(argv)
    if args.trace:
        print(summarize_trace(args.trace, args.kernel, args.block, args.calls))
        return 0
    if args.ncu:
        try:
            insts = tuple(float(x) for x in args.insts.split(":")) if args.insts else None
        except ValueError:
            insts = ()
        if args.per_graph < 1 or (insts is not None and len(insts) != 2):
            ap.error("--ncu needs --per-graph N (calls x ranks, at least 1) and --insts as LO:HI")
        print(summarize_ncu(args.ncu, args.per_graph, insts))
        return 0

    try:
        kinds = step_kinds(args.without)
    except ValueError as e:
        ap.error(str(e))

    import torch

    if not torch.cuda.is_available():
        print("graph_profile: no CUDA device", file=sys.stderr)
        return 1
    from latency_probe import _reference

    from xdsl.utils.exceptions import PassFailedException

    from purlin import _runtime
    from purlin.compile import arch_of_device
    from purlin.runtime import Communicator

    world = args.world
    try:
        spec, compiled = compile_for(args.collective, world, args.bytes, args.lowering, arch_of_device(0),
                                     _runtime.cuda_device_sms(0))
    except (PassFailedException, ValueError) as e:  # options the pass refuses, or no option of it
        ap.error(f"--lowering {args.lowering!r}: {e}")
    if kinds:
        from purlin.runtime.backend import blocks_per_sm

        taken = without_steps(compiled.cuda, blocks_per_sm(compiled.cuda, [0] * world), kinds)
        print(f"without {', '.join(kinds)}: {taken} calls taken out")
    n_in, n_out = spec.buffer_sizes()
    ins = [torch.arange(n_in, device="cuda:0").remainder(7).to(torch.bfloat16) + r for r in range(world)]
    outs = [torch.zeros(n_out, dtype=torch.bfloat16, device="cuda:0") for _ in range(world)]
    comm = Communicator(compiled.plan, backend="cuda", devices=[0] * world, name="graph_profile",
                        kernel=compiled.cuda)
    streams = [torch.cuda.Stream(device=0) for _ in range(world)]
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=streams[0]):
        for s in streams[1:]:
            s.wait_stream(streams[0])
        for _ in range(args.calls):
            comm.run(ins, outs, streams)
        for s in streams[1:]:
            streams[0].wait_stream(s)
    times = []
    with _timeline(args.timeline):
        for _ in range(args.replays):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / args.calls)
    comm.synchronize()
    want = _reference(args.collective, [i.float().cpu().numpy() for i in ins], n_out)
    if not kinds and not all(np.array_equal(o.float().cpu().numpy(), w) for o, w in zip(outs, want)):
        print(f"graph_profile: {args.collective} world {world}: wrong result", file=sys.stderr)
        return 1
    print(f"{args.collective} {args.bytes} B bf16, world {world} on GPU 0"
          f"{f' [{args.lowering}]' if args.lowering else ''}{' without ' + '+'.join(kinds) if kinds else ''}: {statistics.median(times):.2f} us per call "
          f"(median of {args.replays} replays of {args.calls} calls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
