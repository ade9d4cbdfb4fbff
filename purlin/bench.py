"""purlin-bench: purlin side by side with NCCL and torch symmetric memory.

    torchrun --nproc-per-node 2 -m purlin.bench [--out DIR] [--max-bytes N]

For each collective and size (16 B to 1 GiB) every implementation first
checks its result against NCCL's, then is timed as CUDA-graph replays
(PER_GRAPH calls per graph, median of REPS replays, slowest rank). Reported
per size: latency (us), algbw and busbw (GB/s, nccl-tests conventions: size
is the larger per-rank buffer; busbw = algbw x 2(n-1)/n for all_reduce and
x (n-1)/n otherwise). Writes bench.json and bench.png to --out, and for
all_reduce times every strategy so the cost model can be tuned
(bench/results/README.md says how).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass

for _var in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
    # NVLink multicast stays off: it can take a shared host's GPUs down.
    os.environ[_var] = "0" if _var == "NCCL_NVLS_ENABLE" else "1"

SIZES = [16 << i for i in range(0, 27, 3)] + [1 << 30]  # 16 B, 128 B, ... 1 GiB
PER_GRAPH = 20
REPS = 5
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
               "all_gather_v", "reduce_scatter_v", "all_to_all_v")
# Strategies timed for all_reduce, for tuning THRESHOLDS in purlin/cost_model.py.
ALL_REDUCE_STRATEGIES = {
    "latency": "regime=latency strategy=direct",
    "latency-b2": "regime=latency strategy=direct blocks=2",
    "direct": "regime=throughput strategy=direct",
    "composed": "regime=throughput strategy=composed",
    "composed-c1M-b32": "regime=throughput strategy=composed chunk-bytes=1048576 blocks=32",
    "composed-c4M-b64": "regime=throughput strategy=composed chunk-bytes=4194304 blocks=64",
}
SWEEP_MAX_BYTES = 64 << 20
SYMM_MAX_BYTES = 64 << 20


def busbw_factor(collective: str, world: int) -> float:
    if collective == "all_reduce":
        return 2 * (world - 1) / world
    return (world - 1) / world


@dataclass
class Row:
    collective: str
    impl: str
    bytes: int
    us: float | None
    algbw: float | None
    busbw: float | None
    note: str = ""


def make_row(collective: str, impl: str, nbytes: int, us: float | None, world: int, note: str = "") -> Row:
    if us is None or us <= 0:
        return Row(collective, impl, nbytes, None, None, None, note)
    alg = nbytes / (us * 1e-6) / 1e9
    return Row(collective, impl, nbytes, round(us, 2), round(alg, 2),
               round(alg * busbw_factor(collective, world), 2), note)


def human(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"


def format_table(rows: list[Row]) -> str:
    """One block per collective: a line per size, latency and busbw per implementation."""
    out = []
    for coll in dict.fromkeys(r.collective for r in rows):
        mine = [r for r in rows if r.collective == coll]
        impls = list(dict.fromkeys(r.impl for r in mine))
        out.append(f"== {coll}")
        out.append(f"{'size':>10} " + " ".join(f"{i + ' us':>16} {i + ' busbw':>16}" for i in impls))
        for nbytes in sorted({r.bytes for r in mine}):
            cells = []
            for impl in impls:
                r = next((r for r in mine if r.impl == impl and r.bytes == nbytes), None)
                us = "-" if r is None or r.us is None else f"{r.us:.2f}"
                bw = "-" if r is None or r.busbw is None else f"{r.busbw:.1f}"
                cells.append(f"{us:>16} {bw:>16}")
            out.append(f"{human(nbytes):>10} " + " ".join(cells))
    return "\n".join(out)


def plot(rows: list[Row], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colls = list(dict.fromkeys(r.collective for r in rows))
    fig, axes = plt.subplots(2, len(colls), figsize=(3.2 * len(colls), 6.5), squeeze=False)
    for k, coll in enumerate(colls):
        for impl in dict.fromkeys(r.impl for r in rows if r.collective == coll):
            pts = [r for r in rows if r.collective == coll and r.impl == impl and r.us is not None]
            xs = [r.bytes for r in pts]
            axes[0][k].plot(xs, [r.us for r in pts], marker=".", label=impl)
            axes[1][k].plot(xs, [r.busbw for r in pts], marker=".", label=impl)
        axes[0][k].set_title(coll, fontsize=9)
        for ax, ylabel in ((axes[0][k], "latency (us)"), (axes[1][k], "busbw (GB/s)")):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("bytes", fontsize=8)
            ax.tick_params(labelsize=7)
            if k == 0:
                ax.set_ylabel(ylabel, fontsize=8)
        axes[0][k].set_yscale("log")
        axes[0][k].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# -- the GPU part -------------------------------------------------------------


def _graph_time(fn: Callable[[], object]) -> float:
    """Median microseconds per call over CUDA-graph replays, slowest rank."""
    import torch
    import torch.distributed as dist

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    dist.barrier()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(PER_GRAPH):
            fn()
    for _ in range(2):
        graph.replay()
    torch.cuda.synchronize()
    dist.barrier()
    times = []
    for _ in range(REPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / PER_GRAPH)
    t = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def _split(total: int, world: int) -> list[int]:
    """Uneven counts adding up to `total`: rank r gets a little more than rank r+1."""
    base, rest = divmod(total, world)
    counts = [base + (1 if r < rest else 0) for r in range(world)]
    if world > 1 and counts[-1] > 0:
        counts[0] += 1
        counts[-1] -= 1
    return counts


class _Bench:
    def __init__(self, world: int, rank: int):
        import torch

        self.torch = torch
        self.world = world
        self.rank = rank
        self.rows: list[Row] = []
        self.failures: list[str] = []

    def values(self, n: int, salt: int):
        """Small integers: every order of summing them is exact, so results compare bit for bit."""
        t = self.torch
        idx = t.arange(n, device="cuda", dtype=t.int64)
        return (((idx * 7 + self.rank * 5 + salt) % 17) - 8).to(t.bfloat16)

    def record(self, coll: str, impl: str, nbytes: int, check: Callable[[], bool] | None,
               fn: Callable[[], object]) -> None:
        try:
            if check is not None and not check():
                self.failures.append(f"{coll} {impl} {human(nbytes)}: result differs from NCCL")
                self.rows.append(make_row(coll, impl, nbytes, None, self.world, "wrong result"))
                return
            us = _graph_time(fn)
            self.rows.append(make_row(coll, impl, nbytes, us, self.world))
        except Exception as e:  # one failing implementation must not stop the table
            self.failures.append(f"{coll} {impl} {human(nbytes)}: {type(e).__name__}: {e}")
            self.rows.append(make_row(coll, impl, nbytes, None, self.world, str(e)[:120]))

    def run(self, coll: str, nbytes: int) -> None:
        import torch.distributed as dist

        import purlin.torch as pt

        t, w = self.torch, self.world
        n = max(nbytes // 2, w)
        n -= n % w
        eq = t.equal
        if coll == "all_reduce":
            x, y = self.values(n, 0), t.empty(n, dtype=t.bfloat16, device="cuda")
            ref = x.clone()
            dist.all_reduce(ref)
            # NCCL reduces in place: time it on its own copy so x keeps its values.
            scratch = x.clone()
            self.record(coll, "nccl", nbytes, None, lambda: dist.all_reduce(scratch))
            self.record(coll, "purlin", nbytes, lambda: eq(pt.all_reduce(x, out=y), ref),
                        lambda: pt.all_reduce(x, out=y))
            for name, lowering in ALL_REDUCE_STRATEGIES.items():
                if nbytes > SWEEP_MAX_BYTES or (name.startswith("latency") and nbytes > 1 << 20):
                    continue
                self.record(coll, f"purlin-{name}", nbytes,
                            lambda lw=lowering: eq(pt.all_reduce(x, out=y, lowering=lw), ref),
                            lambda lw=lowering: pt.all_reduce(x, out=y, lowering=lw))
            if nbytes <= SYMM_MAX_BYTES:
                self.symmetric_memory(n, nbytes, ref)
        elif coll in ("all_gather", "all_gather_v"):
            counts = [n // w] * w if coll == "all_gather" else _split(n, w)
            x = self.values(counts[self.rank], 1)
            y, ref = t.empty(n, dtype=t.bfloat16, device="cuda"), t.empty(n, dtype=t.bfloat16, device="cuda")
            if coll == "all_gather":
                nccl = lambda: dist.all_gather_into_tensor(ref, x)  # noqa: E731
                mine = lambda: pt.all_gather(y, x)  # noqa: E731
            else:
                parts = list(ref.split(counts))
                nccl = lambda: dist.all_gather(parts, x)  # noqa: E731
                mine = lambda: pt.all_gather_v(y, x, counts)  # noqa: E731
            nccl()
            self.record(coll, "nccl", nbytes, None, nccl)
            self.record(coll, "purlin", nbytes, lambda: eq(mine(), ref), mine)
        elif coll in ("reduce_scatter", "reduce_scatter_v"):
            counts = [n // w] * w if coll == "reduce_scatter" else _split(n, w)
            x = self.values(n, 2)
            y = t.empty(counts[self.rank], dtype=t.bfloat16, device="cuda")
            ref = t.empty_like(y)
            if coll == "reduce_scatter":
                nccl = lambda: dist.reduce_scatter_tensor(ref, x)  # noqa: E731
                mine = lambda: pt.reduce_scatter(y, x)  # noqa: E731
            else:
                parts = list(x.split(counts))
                nccl = lambda: dist.reduce_scatter(ref, parts)  # noqa: E731
                mine = lambda: pt.reduce_scatter_v(y, x, counts)  # noqa: E731
            nccl()
            self.record(coll, "nccl", nbytes, None, nccl)
            self.record(coll, "purlin", nbytes, lambda: eq(mine(), ref), mine)
        else:
            if coll == "all_to_all":
                matrix = [[n // w] * w for _ in range(w)]
            else:
                matrix = [_split(n, w) for _ in range(w)]
            sends = matrix[self.rank]
            recvs = [matrix[s][self.rank] for s in range(w)]
            x = self.values(sum(sends), 3)
            y = t.empty(sum(recvs), dtype=t.bfloat16, device="cuda")
            ref = t.empty_like(y)
            if coll == "all_to_all":
                nccl = lambda: dist.all_to_all_single(ref, x)  # noqa: E731
                mine = lambda: pt.all_to_all(y, x)  # noqa: E731
            else:
                nccl = lambda: dist.all_to_all_single(ref, x, recvs, sends)  # noqa: E731
                mine = lambda: pt.all_to_all_v(y, x, matrix)  # noqa: E731
            nccl()
            self.record(coll, "nccl", nbytes, None, nccl)
            self.record(coll, "purlin", nbytes, lambda: eq(mine(), ref), mine)

    def symmetric_memory(self, n: int, nbytes: int, ref) -> None:
        import torch.distributed as dist
        import torch.distributed._symmetric_memory as symm_mem

        t = self.torch
        eq = t.equal
        group = dist.group.WORLD.group_name
        buf = symm_mem.empty(n, dtype=t.bfloat16, device="cuda")
        symm_mem.rendezvous(buf, group)
        buf.copy_(self.values(n, 0))
        one = lambda: t.ops.symm_mem.one_shot_all_reduce(buf, "sum", group)  # noqa: E731
        self.record("all_reduce", "symm-one-shot", nbytes, lambda: eq(one(), ref), one)

        def two():
            buf.copy_(self.values(n, 0))
            t.ops.symm_mem.two_shot_all_reduce_(buf, "sum", group)
            return eq(buf, ref)

        self.record("all_reduce", "symm-two-shot", nbytes, two,
                    lambda: t.ops.symm_mem.two_shot_all_reduce_(buf, "sum", group))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/results"), help="where bench.json and bench.png go")
    ap.add_argument("--max-bytes", type=int, default=1 << 30, help="largest size (default 1 GiB)")
    ap.add_argument("--collectives", default=",".join(COLLECTIVES), help="comma-separated subset")
    args = ap.parse_args(argv)
    import torch
    import torch.distributed as dist

    import purlin.torch as pt

    if "LOCAL_RANK" not in os.environ:
        print("purlin-bench: run it under torchrun, e.g. torchrun --nproc-per-node 2 -m purlin.bench",
              file=sys.stderr)
        return 2
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    pt.init()
    world, rank = dist.get_world_size(), dist.get_rank()
    bench = _Bench(world, rank)

    def save() -> None:
        os.makedirs(args.out, exist_ok=True)
        doc = {
            "command": f"torchrun --nproc-per-node {world} -m purlin.bench",
            "world": world,
            "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__,
            "nccl": ".".join(map(str, torch.cuda.nccl.version())),
            "per_graph": PER_GRAPH,
            "reps": REPS,
            "rows": [asdict(r) for r in bench.rows],
            "failures": bench.failures,
        }
        with open(os.path.join(args.out, "bench.json"), "w") as f:
            json.dump(doc, f, indent=1)

    for coll in args.collectives.split(","):
        for nbytes in (s for s in SIZES if s <= args.max_bytes):
            bench.run(coll, nbytes)
            if rank == 0:
                print(f"# {coll} {human(nbytes)} done", file=sys.stderr, flush=True)
        if rank == 0:
            save()  # a partial table survives a run cut short
    if rank == 0:
        plot(bench.rows, os.path.join(args.out, "bench.png"))
        print(format_table(bench.rows))
        for line in bench.failures:
            print("FAILED:", line)
    dist.barrier()
    dist.destroy_process_group()
    return 1 if bench.failures else 0


def main_exit() -> None:
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
