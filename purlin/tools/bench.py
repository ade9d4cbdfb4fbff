"""purlin-bench: purlin side by side with NCCL and torch symmetric memory.

    torchrun --nproc-per-node 2 -m purlin.tools.bench [--out DIR] [--max-bytes N]
    purlin-bench --single-process [--gpus N] [--backend cuda|cpu] [--out DIR]

For each collective and size (16 B to 1 GiB) every implementation first
checks its result, then is timed as CUDA-graph replays (PER_GRAPH calls per
graph, median of REPS replays, slowest rank). A size the collective cannot
take exactly (bf16 buffers grow in purlin-run's steps: world elements for
all_gather, reduce_scatter, all_to_all and the V forms at even counts, one
otherwise) runs rounded down to one it can, and its row says the size run.
Reported per size: latency
(us), algbw and busbw (GB/s, nccl-tests conventions: size is the larger
per-rank buffer; busbw = algbw x 2(n-1)/n for all_reduce and x (n-1)/n
otherwise). Writes bench.json and bench.png to --out. For all_reduce it
times every strategy, and with --lowering NAME=OPTIONS any collective in
other lowerings too, so the cost model can be tuned (bench/results/README.md
says how).

Under torchrun (one process per GPU) results are checked against NCCL's;
besides purlin.torch (staged through each rank's own memory) the row
"purlin-heap" runs the cost model's symmetric lowering through a
ProcessCommunicator whose buffers lie in a purlin.runtime.DeviceHeap, so the
ranks push into and pull from each other's buffers in place, and the row
"purlin-empty" runs purlin.torch on tensors of `pt.empty` (views of two
buffers made once for the largest size), which lowers the same way.
--single-process (the default without torchrun) drives every rank from one
process through one `purlin.runtime.Communicator`, compiled for that
placement (symmetric buffers; blocks sized for the ranks sharing a GPU). On
"cuda" results are checked on the GPUs against a torch reference
(`torch_expected`), the peer is NCCL through torch.cuda.nccl (all_reduce,
all_gather, reduce_scatter only) and one graph spans all GPUs; torch symmetric
memory needs one process per GPU and is left out. On "cpu" (CPU threads, no
peers, up to 1 MiB by default) results are checked against the numpy
reference (purlin.coll.reference) and calls are timed by the wall clock.
The V forms run at uneven counts, or with --even-counts at their fixed
forms' counts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

for _var in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
    # NVLink multicast stays off: it can take a shared host's GPUs down.
    os.environ[_var] = "0" if _var == "NCCL_NVLS_ENABLE" else "1"

SIZES = [16 << i for i in range(0, 27, 3)] + [1 << 30]  # 16 B, 128 B, ... 1 GiB
PER_GRAPH = 20
REPS = 5
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
               "all_gather_v", "reduce_scatter_v", "all_to_all_v", "all_reduce_v")
# purlin.torch has no all_reduce_v (its all_reduce runs one on the CPU backend): --single-process only.
SINGLE_PROCESS_ONLY = ("all_reduce_v",)
# Strategies timed for all_reduce, for tuning THRESHOLDS in purlin/conversion/cost_model.py.
ALL_REDUCE_STRATEGIES = {
    "latency": "regime=latency strategy=direct",
    "latency-b2": "regime=latency strategy=direct blocks=2",
    "direct": "regime=throughput strategy=direct",
    "composed": "regime=throughput strategy=composed",
    "composed-c1M-b32": "regime=throughput strategy=composed chunk-bytes=1048576 blocks=32",
    "composed-c4M-b64": "regime=throughput strategy=composed chunk-bytes=4194304 blocks=64",
}
# purlin-NAME of --specialise's rows: the ranks' tables compiled into the kernel, and loaded at run time
# (a Communicator's default specialises latency kernels of few ranks).
SPECIALISED = "specialised"
GENERIC = "generic"
SWEEP_MAX_BYTES = 64 << 20
SYMM_MAX_BYTES = 64 << 20
CPU_MAX_BYTES = 1 << 20  # CPU threads are slow
# Single-process NCCL (torch.cuda.nccl) has no all_to_all and no V forms.
SINGLE_PROCESS_NCCL = ("all_reduce", "all_gather", "reduce_scatter")


def busbw_factor(collective: str, world: int) -> float:
    if collective in ("all_reduce", "all_reduce_v"):
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
        if any(r.us is not None for r in rows if r.collective == coll):  # log scale needs a point
            axes[0][k].set_yscale("log")
        axes[0][k].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# -- shared by both modes ------------------------------------------------------


def _split(total: int, world: int) -> list[int]:
    """Uneven counts adding up to `total`: rank r gets a little more than rank r+1."""
    base, rest = divmod(total, world)
    counts = [base + (1 if r < rest else 0) for r in range(world)]
    if world > 1 and counts[-1] > 0:
        counts[0] += 1
        counts[-1] -= 1
    return counts


def _step(coll: str, world: int, even: bool = False) -> int:
    """The bytes the larger per-rank buffer of `coll` grows by, in bf16: purlin-run's
    steps (purlin.coll.builder.byte_step), the V forms at even counts in their fixed forms'."""
    from purlin.coll.builder import byte_step

    return byte_step(coll.removesuffix("_v") if even else coll, world, "bf16")


def size_run(coll: str, nbytes: int, world: int, even: bool = False) -> int:
    """The bytes of the larger per-rank buffer that `coll` runs for `nbytes`:
    `nbytes` rounded down to a whole step (`_step`), at least one."""
    step = _step(coll, world, even)
    return max(step, nbytes - nbytes % step)


def _counts(coll: str, n: int, world: int, even: bool = False) -> list:
    """Per-rank counts over n elements: a list, or for all_to_all(_v) the matrix
    counts[sender][receiver]; even for the fixed forms (all_reduce: its own
    split, larger slices first), uneven for the V forms unless `even`."""
    if coll.endswith("_v") and not even:
        row = _split(n, world)
    elif coll.startswith("all_reduce"):
        row = [n // world + (r < n % world) for r in range(world)]
    else:
        row = [n // world] * world
    return [list(row) for _ in range(world)] if coll.startswith("all_to_all") else row


def _case(coll: str, nbytes: int, world: int, even: bool = False):
    """The bf16 Case that single-process mode runs for `nbytes`, and its `_counts`."""
    from purlin.coll import builder
    from purlin.testing.cases import Case

    n = size_run(coll, nbytes, world, even) // 2
    op = "sum" if builder.COLLECTIVES[coll].reduces else None
    counts = _counts(coll, n, world, even)
    if coll.endswith("_v"):
        return Case(coll, world, "bf16", op, counts=counts), counts
    return Case(coll, world, "bf16", op, n if coll == "all_reduce" else n // world), counts


def _small_ints(idx, rank: int, salt: int):
    """Integers in [-8, 8] (numpy or torch): every order of summing them is exact,
    so results compare bit for bit."""
    return ((idx * 7 + rank * 5 + salt) % 17) - 8


def torch_expected(coll: str, inputs: list, before: list, counts: list) -> list:
    """Every rank's output buffer after `coll` on torch tensors (CUDA or CPU):
    `before[r]` with rank r's result written over its start. Written from the
    collectives' definitions, independent of purlin; `counts` as `_counts` gives
    them; reductions sum in rank order in f32 and round once, as the numpy
    reference does."""
    import torch

    w, home = len(inputs), inputs[0].device
    if coll.startswith(("all_reduce", "reduce_scatter")):
        n = inputs[0].numel() if coll == "all_reduce" else sum(counts)
        acc = inputs[0][:n].to(torch.float32, copy=True)
        for x in inputs[1:]:
            acc += x[:n].to(home, torch.float32)
        total = acc.to(inputs[0].dtype)
        results = [total] * w if coll.startswith("all_reduce") else list(total.split(counts))
    elif coll.startswith("all_gather"):
        results = [torch.cat([x[:c].to(home) for x, c in zip(inputs, counts)])] * w
    else:
        sends = [x[:sum(row)].split(row) for x, row in zip(inputs, counts)]
        results = [torch.cat([sends[s][d].to(home) for s in range(w)]) for d in range(w)]
    expected = []
    for b, res in zip(before, results):
        e = b.clone()
        e[:res.numel()] = res
        expected.append(e)
    return expected


def _same_bits(a, b) -> bool:
    """Whether torch tensors `a` and `b` hold the same bits (NaN fillers included)."""
    import torch

    return a.shape == b.shape and torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def _variants(coll: str, nbytes: int, extra: list[tuple[str, str]], sweep: bool = True):
    """(name, lowering) of the purlin variants timed besides the default: the
    all_reduce strategies (up to SWEEP_MAX_BYTES, unless not `sweep`), then the
    --lowering ones."""
    if coll == "all_reduce" and sweep:
        for name, lowering in ALL_REDUCE_STRATEGIES.items():
            if nbytes > SWEEP_MAX_BYTES or (name.startswith("latency") and nbytes > 1 << 20):
                continue
            yield name, lowering
    yield from extra


Timer = Callable[[Callable[[], object]], tuple[float, str]]


class _Recorder:
    """Rows and failures: each implementation is checked, then timed by `timer`
    (microseconds per call and a note, "" when nothing is special)."""

    sweep = True  # time all_reduce in every strategy of ALL_REDUCE_STRATEGIES
    even_counts = False  # the V forms at their fixed forms' counts

    def __init__(self, world: int, timer: Timer, reference: str, note: str = ""):
        self.world = world
        self.timer = timer
        self.reference = reference
        self.note = note
        self.rows: list[Row] = []
        self.failures: list[str] = []

    def record(self, coll: str, impl: str, nbytes: int, check: Callable[[], bool] | None,
               fn: Callable[[], object]) -> None:
        try:
            if check is not None and not check():
                self.failures.append(f"{coll} {impl} {human(nbytes)}: result differs from {self.reference}")
                self.rows.append(make_row(coll, impl, nbytes, None, self.world, "wrong result"))
                return
            us, extra = self.timer(fn)
        except Exception as e:  # one failing implementation must not stop the table
            self.fail(coll, impl, nbytes, e)
            return
        if extra:
            print(f"# {coll} {impl} {human(nbytes)}: {extra}", file=sys.stderr, flush=True)
        note = "; ".join(x for x in (self.note, extra) if x)
        self.rows.append(make_row(coll, impl, nbytes, us, self.world, note[:120]))

    def fail(self, coll: str, impl: str, nbytes: int, e: Exception) -> None:
        why = _one_line(str(e))
        self.failures.append(f"{coll} {impl} {human(nbytes)}: {type(e).__name__}: {why}")
        self.rows.append(make_row(coll, impl, nbytes, None, self.world, why[:120]))


def _one_line(text: str) -> str:
    """`text` on one line (NVRTC's log, say, comes a line per message; a parser's
    caret under the source line means nothing once the lines are joined)."""
    return "; ".join(line.strip() for line in text.splitlines() if line.strip().strip("^"))


def _event_median(launch: Callable[[], object]) -> float:
    """Median microseconds per call over REPS launches of PER_GRAPH calls, timed
    by CUDA events on the current stream."""
    import torch

    times = []
    for _ in range(REPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / PER_GRAPH)
    return statistics.median(times)


def _sweep(args: argparse.Namespace, bench, meta: dict, lead: bool = True) -> None:
    """Every size of every collective, each labelled with the size it runs
    (`size_run`); the lead rank saves bench.json after each collective (a
    partial table survives a run cut short) and reports."""
    for coll in args.collectives:
        done = set()
        for asked in _sizes(args):
            nbytes = size_run(coll, asked, bench.world, bench.even_counts)
            if lead and nbytes != asked:
                print(f"# {coll} {human(asked)} runs as {human(nbytes)}: its buffers on {bench.world} ranks grow "
                      f"in steps of {_step(coll, bench.world, bench.even_counts)} bytes", file=sys.stderr, flush=True)
            if nbytes in done:
                continue
            done.add(nbytes)
            bench.run(coll, nbytes)
            if lead:
                print(f"# {coll} {human(nbytes)} done", file=sys.stderr, flush=True)
        if lead:
            _save(args.out, meta, bench)
    if lead:
        print(format_table(bench.rows))
        for line in bench.failures:
            print("FAILED:", line)
        plot(bench.rows, os.path.join(args.out, "bench.png"))


def _sizes(args: argparse.Namespace) -> list[int]:
    return [s for s in args.sizes or SIZES if s <= args.max_bytes]


def _save(out: str, meta: dict, bench: _Recorder) -> None:
    os.makedirs(out, exist_ok=True)
    doc = {**meta, "per_graph": PER_GRAPH, "reps": REPS, "rows": [asdict(r) for r in bench.rows],
           "failures": bench.failures}
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump(doc, f, indent=1)


def _torch_meta(torch) -> dict:
    return {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "nccl": ".".join(map(str, torch.cuda.nccl.version()))}


# -- torchrun: one process per GPU ----------------------------------------------


def _fixed_count(coll: str, x, y, world: int) -> int:
    """compile_collective's count of a fixed collective of this rank's input x and output y."""
    return {"all_gather": x.numel(), "reduce_scatter": y.numel(), "all_to_all": x.numel() // world}.get(
        coll, x.numel())


def _graph_time(fn: Callable[[], object]) -> tuple[float, str]:
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
    t = torch.tensor([_event_median(graph.replay)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item(), ""


class _Bench(_Recorder):
    def __init__(self, world: int, rank: int, lowerings: list[tuple[str, str]]):
        import torch

        super().__init__(world, _graph_time, "NCCL")
        self.torch = torch
        self.rank = rank
        self.lowerings = lowerings

    def purlin(self, coll: str, nbytes: int, mine: Callable[[str], object], ref) -> None:
        """The default lowering, then every variant, each checked against `ref`."""
        eq = self.torch.equal
        self.record(coll, "purlin", nbytes, lambda: eq(mine(""), ref), lambda: mine(""))
        for name, lowering in _variants(coll, nbytes, self.lowerings, self.sweep):
            self.record(coll, f"purlin-{name}", nbytes, lambda lw=lowering: eq(mine(lw), ref),
                        lambda lw=lowering: mine(lw))

    def values(self, n: int, salt: int):
        t = self.torch
        return _small_ints(t.arange(n, device="cuda", dtype=t.int64), self.rank, salt).to(t.bfloat16)

    def run(self, coll: str, nbytes: int) -> None:
        import torch.distributed as dist

        import purlin.torch as pt

        t, w = self.torch, self.world
        n = size_run(coll, nbytes, w, self.even_counts) // 2
        counts = _counts(coll, n, w, self.even_counts)
        if coll == "all_reduce":
            x, y = self.values(n, 0), t.empty(n, dtype=t.bfloat16, device="cuda")
            ref = x.clone()
            dist.all_reduce(ref)
            # NCCL reduces in place: time it on its own copy so x keeps its values.
            scratch = x.clone()
            self.record(coll, "nccl", nbytes, None, lambda: dist.all_reduce(scratch))
            self.purlin(coll, nbytes, lambda lw: pt.all_reduce(x, out=y, lowering=lw), ref)
            self.heap(coll, nbytes, x, y, ref, _fixed_count(coll, x, y, w))
            self.mapped(coll, nbytes, lambda a, b: pt.all_reduce(a, out=b), x, y, ref)
            if nbytes <= SYMM_MAX_BYTES:
                self.symmetric_memory(n, nbytes, ref)
            return
        # The rest write `ref` out of place: NCCL's first call makes the reference.
        if coll in ("all_gather", "all_gather_v"):
            x = self.values(counts[self.rank], 1)
            y, ref = t.empty(n, dtype=t.bfloat16, device="cuda"), t.empty(n, dtype=t.bfloat16, device="cuda")
            if coll == "all_gather":
                nccl = lambda: dist.all_gather_into_tensor(ref, x)  # noqa: E731
            else:
                parts = list(ref.split(counts))
                nccl = lambda: dist.all_gather(parts, x)  # noqa: E731
        elif coll in ("reduce_scatter", "reduce_scatter_v"):
            x = self.values(n, 2)
            y = t.empty(counts[self.rank], dtype=t.bfloat16, device="cuda")
            ref = t.empty_like(y)
            if coll == "reduce_scatter":
                nccl = lambda: dist.reduce_scatter_tensor(ref, x)  # noqa: E731
            else:
                parts = list(x.split(counts))
                nccl = lambda: dist.reduce_scatter(ref, parts)  # noqa: E731
        else:
            sends = counts[self.rank]
            recvs = [counts[s][self.rank] for s in range(w)]
            x = self.values(sum(sends), 3)
            y = t.empty(sum(recvs), dtype=t.bfloat16, device="cuda")
            ref = t.empty_like(y)
            if coll == "all_to_all":
                nccl = lambda: dist.all_to_all_single(ref, x)  # noqa: E731
            else:
                nccl = lambda: dist.all_to_all_single(ref, x, recvs, sends)  # noqa: E731
        # purlin.torch names each function as the collective; the V forms take the counts too.
        purlin_fn = getattr(pt, coll)
        v_counts = (counts,) if coll.endswith("_v") else ()
        nccl()
        self.record(coll, "nccl", nbytes, None, nccl)
        self.purlin(coll, nbytes, lambda lw: purlin_fn(y, x, *v_counts, lowering=lw), ref)
        self.heap(coll, nbytes, x, y, ref, counts if coll.endswith("_v") else _fixed_count(coll, x, y, w))
        self.mapped(coll, nbytes, lambda a, b: purlin_fn(b, a, *v_counts), x, y, ref)

    def mapped(self, coll: str, nbytes: int, call: Callable, x, y, ref) -> None:
        """The row "purlin-empty": `call(input, output)` of purlin.torch on views of
        the two pt.empty buffers (made by _main_torchrun for the largest size)."""
        xm, ym = self.mapped_in[:x.numel()], self.mapped_out[:y.numel()]
        xm.copy_(x)

        def check() -> bool:
            call(xm, ym)
            return self.torch.equal(ym, ref)

        self.record(coll, "purlin-empty", nbytes, check, lambda: call(xm, ym))

    def heap(self, coll: str, nbytes: int, x, y, ref, count) -> None:
        """The row "purlin-heap": the symmetric lowering, its buffers in a DeviceHeap
        made for this call (every rank makes it, then its communicator, together)."""
        from purlin.compile import arch_of_device, compile_collective
        from purlin.runtime import DeviceHeap, ProcessCommunicator

        op = "sum" if "reduce" in coll else None
        counts = count if isinstance(count, list) else None
        try:
            compiled = compile_collective(coll, self.world, "bf16", op, 0 if counts else count, counts=counts,
                                          arch=arch_of_device(), symmetric=True)
        except Exception as e:  # the same on every rank: none makes the heap
            self.fail(coll, "purlin-heap", nbytes, e)
            return
        heap = DeviceHeap(2 * 256 + 2 * (x.numel() + y.numel()), name=f"{coll} heap")
        comm = ProcessCommunicator(compiled.plan, kernel=compiled.cuda, heap=heap, name=coll)
        try:
            xh, yh = heap.alloc(x.numel(), "bf16"), heap.alloc(y.numel(), "bf16")
            xh.copy_(x)

            def check() -> bool:
                comm.run(xh, yh)
                comm.synchronize()
                return self.torch.equal(yh, ref)

            self.record(coll, "purlin-heap", nbytes, check, lambda: comm.run(xh, yh))
        finally:
            comm.close()
            heap.close()

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


def _main_torchrun(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist

    import purlin.torch as pt

    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    pt.init()
    world, rank = dist.get_world_size(), dist.get_rank()
    bench = _Bench(world, rank, args.lowerings)
    bench.sweep = args.sweep
    bench.even_counts = args.even_counts
    if args.specialise and backend != "cuda":
        return _usage("--specialise is the cuda backend's (it compiles the ranks' tables into the kernel)")
    bench.specialise = args.specialise
    # Every call's buffers are views of these, of the largest per-rank buffer any call runs.
    largest = max(size_run(c, s, world, args.even_counts) for c in args.collectives for s in _sizes(args)) // 2
    bench.mapped_in = pt.empty(largest, dtype=torch.bfloat16)
    bench.mapped_out = pt.empty(largest, dtype=torch.bfloat16)
    meta = {"command": f"torchrun --nproc-per-node {world} -m purlin.tools.bench", "mode": "torchrun",
            "backend": "cuda", "world": world, "even_counts": args.even_counts, **_torch_meta(torch)}
    _sweep(args, bench, meta, lead=rank == 0)
    dist.barrier()
    dist.destroy_process_group()
    return 1 if bench.failures else 0


# -- single process: every rank driven from here ---------------------------------


def _cpu_time(fn: Callable[[], object]) -> tuple[float, str]:
    """Median wall-clock microseconds per call over REPS runs of PER_GRAPH calls."""
    fn()
    times = []
    for _ in range(REPS):
        start = time.perf_counter()
        for _ in range(PER_GRAPH):
            fn()
        times.append((time.perf_counter() - start) * 1e6 / PER_GRAPH)
    return statistics.median(times), ""


@contextlib.contextmanager
def _fork_join(streams: list, devices: list[int]):
    """Inside the block, rank r's stream streams[r] follows streams[0] as it
    was on entry, and each device's current stream is its first rank's; on
    exit streams[0] waits for every rank: work on it after the block follows
    all of them."""
    import torch

    for s in streams[1:]:
        s.wait_stream(streams[0])
    with contextlib.ExitStack() as current:
        for r, s in enumerate(streams):
            if devices.index(devices[r]) == r:
                current.enter_context(torch.cuda.stream(s))
        yield
    for s in streams[1:]:
        streams[0].wait_stream(s)


def _ranks_timer(devices: list[int]) -> tuple[Timer, list]:
    """Times a callable that launches each rank on its own stream (the streams
    returned; several may share a device): one CUDA graph over all of them,
    each rank's calls a chain of its own joined at the end, replayed and timed
    on rank 0's stream (the join makes that the slowest rank); eager launches
    when the capture fails."""
    import torch

    streams = [torch.cuda.Stream(device=d) for d in devices]

    def calls(fn: Callable[[], object], k: int) -> None:
        with _fork_join(streams, devices):
            for _ in range(k):
                fn()

    def timer(fn: Callable[[], object]) -> tuple[float, str]:
        calls(fn, 3)
        for s in streams:
            s.synchronize()
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.device(devices[0]), torch.cuda.graph(graph, stream=streams[0]):
                calls(fn, PER_GRAPH)
            launch, note = graph.replay, ""
        except Exception as e:  # not every driver/torch captures across devices
            launch = lambda: calls(fn, PER_GRAPH)  # noqa: E731
            note = f"eager: multi-device graph capture failed ({type(e).__name__}: {e})"
        with torch.cuda.device(devices[0]), torch.cuda.stream(streams[0]):
            for _ in range(2):
                launch()
            streams[0].synchronize()
            return _event_median(launch), note

    return timer, streams


class _SingleBench(_Recorder):
    """All ranks in this process: purlin through one Communicator over `world`
    devices (or CPU threads), NCCL through torch.cuda.nccl, both checked
    against the reference (`torch_expected` on the GPUs, numpy on CPU threads)."""

    def __init__(self, devices: list[int], backend: str, arch: str, lowerings: list[tuple[str, str]]):
        from collections import Counter

        from purlin.dtypes import numpy_dtype

        world = len(devices)
        self.devices = devices
        self.streams: list | None = None
        if backend == "cpu":
            super().__init__(world, _cpu_time, "the reference", "cpu threads")
            # CPU ranks are threads of this process: their buffers are peer-addressable too.
            self.placement = {"symmetric": True, "ranks_per_device": 1, "sms": 0}
        else:
            from purlin import _runtime

            timer, self.streams = _ranks_timer(devices)
            shared = "" if len(set(devices)) == world else f"ranks on GPUs {','.join(map(str, devices))}"
            super().__init__(world, timer, "the reference", shared)
            busiest, ranks = Counter(devices).most_common(1)[0]
            self.placement = {"symmetric": True, "ranks_per_device": ranks,
                              "sms": _runtime.cuda_device_sms(busiest)}
        self.backend = backend
        self.arch = arch
        self.lowerings = lowerings
        self.specialise = False
        self.bf16 = numpy_dtype("bf16")

    def values(self, n: int, rank: int):
        period = _small_ints(np.arange(17), rank, 0).astype(np.float32).astype(self.bf16)
        return np.resize(period, n)

    def device_values(self, n: int, rank: int):
        """`values` made on rank `rank`'s GPU."""
        import torch

        idx = torch.arange(n, device=f"cuda:{self.devices[rank]}")
        return _small_ints(idx, rank, 0).to(torch.bfloat16)

    def buffers(self, before: list) -> list:
        """Fresh output buffers of every rank, copies of `before`; on "cuda" with
        all work queued so far done (inputs included), since the ranks' streams
        do not wait for the devices' current streams."""
        if self.backend == "cpu":
            return [b.copy() for b in before]
        import torch

        outs = [b.clone() for b in before]
        for d in set(self.devices):
            torch.cuda.synchronize(d)
        return outs

    def same(self, outs: list, expected: list) -> bool:
        from purlin.testing.data import compare

        if self.backend == "cpu":
            return compare(outs, expected, "bf16") is None  # bit for bit
        return all(_same_bits(o, e) for o, e in zip(outs, expected))

    def run(self, coll: str, nbytes: int) -> None:
        """Every implementation at `nbytes`; a size whose buffers or reference cannot
        be made (out of memory, say) is a failed row, and the next size still runs."""
        try:
            self._run(coll, nbytes)
        except Exception as e:  # one size must not stop the table
            self.fail(coll, "purlin", nbytes, e)

    def _run(self, coll: str, nbytes: int) -> None:
        from purlin.testing.data import filler

        w = self.world
        case, counts = _case(coll, nbytes, w, self.even_counts)
        n_in, n_out = case.buffer_sizes()
        if self.backend == "cpu":
            ins = [self.values(n_in, r) for r in range(w)]
            before = [filler("bf16", n_out) for _ in range(w)]
            expected = case.expected([ins, before])
        else:
            import torch

            # Copying 1 GiB buffers of 8 ranks to the host to check them takes far longer than the calls.
            ins = [self.device_values(n_in, r) for r in range(w)]
            nan = {d: torch.full((n_out,), float("nan"), dtype=torch.bfloat16, device=f"cuda:{d}")
                   for d in set(self.devices)}
            before = [nan[d] for d in self.devices]
            expected = torch_expected(coll, ins, before, counts)
            self.nccl(coll, nbytes, ins, before, expected)
        self.purlin(case, "purlin", nbytes, "", ins, before, expected)
        if self.specialise:
            self.purlin(case, f"purlin-{SPECIALISED}", nbytes, "", ins, before, expected, specialise=True)
            self.purlin(case, f"purlin-{GENERIC}", nbytes, "", ins, before, expected, specialise=False)
        for name, lowering in _variants(coll, nbytes, self.lowerings, self.sweep):
            self.purlin(case, f"purlin-{name}", nbytes, lowering, ins, before, expected)

    def purlin(self, case, impl: str, nbytes: int, lowering: str, ins: list, before: list,
               expected: list, specialise: bool | None = None) -> None:
        from purlin.compile import compile_collective
        from purlin.runtime import Communicator

        coll, w = case.collective, self.world
        try:
            compiled = compile_collective(coll, w, "bf16", case.op, case.count, case.counts, arch=self.arch,
                                          lowering=lowering, **self.placement)
            comm = Communicator(compiled.plan, backend=self.backend, devices=self.devices, name=f"{coll} {impl}",
                                kernel=compiled.cuda, specialise=specialise)
        except Exception as e:  # a strategy that does not lower is a failure, not a crash
            self.fail(coll, impl, nbytes, e)
            return
        outs = self.buffers(before)

        def call() -> None:
            if self.streams is None:
                comm.run(ins, outs)
            else:
                comm.run(ins, outs, self.streams)

        def check() -> bool:
            call()
            comm.synchronize()
            return self.same(outs, expected)

        self.record(coll, impl, nbytes, check, call)

    def nccl(self, coll: str, nbytes: int, ins: list, before: list, expected: list) -> None:
        import torch.cuda.nccl as nccl

        if coll not in SINGLE_PROCESS_NCCL or len(set(self.devices)) < self.world:
            why = "no single-process NCCL" if coll not in SINGLE_PROCESS_NCCL else "NCCL needs a GPU per rank"
            self.rows.append(make_row(coll, "nccl", nbytes, None, self.world, why))
            return
        outs = self.buffers(before)
        call = getattr(nccl, coll)

        def check() -> bool:
            call(ins, outs)
            return self.same(outs, expected)

        self.record(coll, "nccl", nbytes, check, lambda: call(ins, outs))


def _main_single(args: argparse.Namespace) -> int:
    from purlin.coll.layouts import world_problem
    from purlin.compile import CPU_ARCH, arch_of_device
    from purlin.runtime import available_backends

    backend = args.backend
    gpu: dict = {}
    if args.gpus is not None and args.gpus < 2:
        return _usage(f"--gpus must be at least 2 (a collective needs two ranks), got {args.gpus}")
    if args.devices is not None and len(args.devices) < 2:
        return _usage(f"--devices needs at least two ranks, got {len(args.devices)}")
    asked = len(args.devices) if args.devices is not None else args.gpus
    if asked is not None and (why := world_problem(asked)):
        return _usage(f"--{'devices' if args.devices is not None else 'gpus'}: {why}")
    if backend == "cpu":
        world, arch = args.gpus or 2, CPU_ARCH
        devices = list(range(world))
        peers = "CPU threads, wall clock; no peers"
    else:
        if "cuda" not in available_backends():
            return _usage("this purlin was built without its CUDA backend; use --backend cpu")
        try:
            import torch
        except ImportError:
            return _usage("--backend cuda needs torch (CUDA tensors, graphs and NCCL)")
        visible = torch.cuda.device_count()
        if args.devices is not None:
            devices = args.devices
            if max(devices) >= visible:
                return _usage(f"--devices names GPU {max(devices)}, {visible} visible")
        else:
            world = args.gpus or visible
            if world > visible or world < 2:
                return _usage(f"--backend cuda needs {max(world, 2)} GPUs, {visible} visible; --devices 0,0 "
                              "runs two ranks on one GPU, --backend cpu on CPU threads")
            devices = list(range(world))
        world = len(devices)
        try:
            torch.cuda.set_device(devices[0])
            arch = arch_of_device(devices[0])
            gpu = _torch_meta(torch)
        except RuntimeError as e:  # an old GPU, a broken driver: nothing can run
            return _usage(f"--backend cuda: {_one_line(str(e))}")
        peers = ("NCCL through torch.cuda.nccl (all_reduce, all_gather, reduce_scatter; one GPU per rank); "
                 "torch symmetric memory omitted: it needs one process per GPU")
    where = f"--devices {','.join(map(str, devices))}" if args.devices else f"--gpus {world}"
    bench = _SingleBench(devices, backend, arch, args.lowerings)
    bench.sweep = args.sweep
    bench.even_counts = args.even_counts
    if args.specialise and backend != "cuda":
        return _usage("--specialise is the cuda backend's (it compiles the ranks' tables into the kernel)")
    bench.specialise = args.specialise
    meta = {"command": f"purlin-bench --single-process --backend {backend} {where}",
            "mode": "single-process", "backend": backend, "world": world, "devices": devices,
            "placement": bench.placement, "even_counts": args.even_counts, **gpu}
    print(f"# purlin-bench single-process: backend {backend}, world {world} on {where}, {arch}; {peers}",
          flush=True)
    _sweep(args, bench, meta)
    return 1 if bench.failures else 0


def _usage(message: str) -> int:
    print(f"purlin-bench: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/results"), help="where bench.json and bench.png go")
    ap.add_argument("--max-bytes", type=int, default=None,
                    help=f"largest size (default 1 GiB; {human(CPU_MAX_BYTES)} on --backend cpu)")
    ap.add_argument("--collectives", default=None,
                    help=f"comma-separated subset (default: all of {', '.join(COLLECTIVES)}; under torchrun all but "
                         f"{', '.join(SINGLE_PROCESS_ONLY)})")
    ap.add_argument("--single-process", action="store_true",
                    help="drive every rank from this process (the default outside torchrun)")
    ap.add_argument("--gpus", "--world", dest="gpus", type=int, default=None,
                    help="single-process world (default: every visible GPU on cuda, 2 on cpu)")
    ap.add_argument("--devices", default=None, metavar="LIST",
                    help="single-process: the GPU of each rank, e.g. 0,0,0,0 (four ranks sharing GPU 0)")
    ap.add_argument("--sizes", default=None, metavar="LIST",
                    help=f"comma-separated sizes in bytes (default: {human(SIZES[0])}, x8 each, up to --max-bytes); "
                         "each collective runs a size rounded down to one it takes exactly, and says so")
    ap.add_argument("--backend", choices=("cuda", "cpu"), default=None,
                    help="single-process backend (default: cuda when a GPU is visible, else cpu)")
    ap.add_argument("--no-sweep", dest="sweep", action="store_false",
                    help="time all_reduce in the cost model's lowering only, not in every strategy")
    ap.add_argument("--even-counts", action="store_true",
                    help="run the V forms at even counts (their fixed forms' traffic), not uneven ones")
    ap.add_argument("--lowering", action="append", default=[], metavar="NAME=OPTIONS",
                    help="also time purlin lowered with these convert-coll-to-snac options, as purlin-NAME "
                         "(repeatable; e.g. c16M='chunk-bytes=16777216 blocks=32')")
    ap.add_argument("--specialise", action="store_true",
                    help=f"--single-process on cuda: also time the default lowering with the ranks' tables compiled "
                         f"into its kernel (Communicator.specialise), as purlin-{SPECIALISED}, and loaded at run "
                         f"time, as purlin-{GENERIC}")
    args = ap.parse_args(argv)
    args.lowerings = []
    for spec in args.lowering:
        name, sep, options = spec.partition("=")
        if not sep or not name or not options or any(c.isspace() for c in name):
            return _usage(f"--lowering takes NAME=OPTIONS, e.g. c16M='chunk-bytes=16777216'; got {spec!r}")
        if name in ALL_REDUCE_STRATEGIES or name in dict(args.lowerings) or name in (SPECIALISED, GENERIC):
            return _usage(f"--lowering {name}: the name is taken (by another --lowering, --specialise or an "
                          f"all_reduce strategy: {', '.join(ALL_REDUCE_STRATEGIES)}); each names its own rows")
        if why := _lowering_problem(options):
            return _usage(f"--lowering {spec}: {why}")
        args.lowerings.append((name, options))
    try:
        args.devices = [int(d) for d in args.devices.split(",")] if args.devices else None
        args.sizes = [int(b) for b in args.sizes.split(",")] if args.sizes else None
    except ValueError:
        return _usage("--devices and --sizes take comma-separated whole numbers")
    if args.devices and min(args.devices) < 0 or args.sizes and min(args.sizes) < 1:
        return _usage("--devices are GPU indices (>= 0), --sizes positive byte counts")
    if args.max_bytes is not None and args.max_bytes < 1:
        return _usage(f"--max-bytes must be a positive byte count, got {args.max_bytes}")
    if args.gpus is not None and args.devices is not None and args.gpus != len(args.devices):
        return _usage(f"--gpus {args.gpus} but --devices lists {len(args.devices)} ranks; give one of them")
    single = args.single_process or "LOCAL_RANK" not in os.environ
    if args.collectives is None:
        args.collectives = [c for c in COLLECTIVES if single or c not in SINGLE_PROCESS_ONLY]
    else:
        args.collectives = args.collectives.split(",")
    unknown = [c for c in args.collectives if c not in COLLECTIVES]
    if unknown:
        return _usage(f"unknown collective {', '.join(unknown)}; expected some of {', '.join(COLLECTIVES)}")
    if not single and (only := [c for c in args.collectives if c in SINGLE_PROCESS_ONLY]):
        return _usage(f"{', '.join(only)} runs --single-process only: purlin.torch, which torchrun runs, has no "
                      "such function")
    if not single and (args.gpus is not None or args.backend is not None or args.devices is not None
                       or args.specialise):
        return _usage("--gpus, --devices, --backend and --specialise are for --single-process; under torchrun "
                      "the world is --nproc-per-node and the backend cuda")
    chosen = args.backend
    if single and args.backend is None:
        from purlin.runtime import default_backend

        args.backend = default_backend()
    if single and args.devices is not None and args.backend != "cuda":
        # As purlin-run: --devices places ranks on GPUs, CPU threads have none.
        return _usage("--devices places ranks on GPUs: it goes with --backend cuda"
                      + ("" if chosen else " (the default backend is cpu here: this build sees no CUDA GPU)")
                      + "; --gpus N runs N ranks on CPU threads")
    default_max = args.max_bytes is None
    if default_max:
        args.max_bytes = CPU_MAX_BYTES if args.backend == "cpu" else 1 << 30
    if args.sizes and max(args.sizes) > args.max_bytes:
        return _usage(f"--sizes {max(args.sizes)} is more than --max-bytes {args.max_bytes}"
                      + (f" (the default on --backend {args.backend})" if default_max else "")
                      + "; raise --max-bytes or drop the size")
    if not _sizes(args):
        return _usage(f"no size to run: the smallest, {human(SIZES[0])}, is more than --max-bytes {args.max_bytes}")
    return _main_single(args) if single else _main_torchrun(args)


def _lowering_problem(options: str) -> str | None:
    """Why `options` are not options of convert-coll-to-snac, or None: parsed as
    purlin-run parses its --lowering, their values checked by the pass on an empty module."""
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.utils.exceptions import PassFailedException

    from purlin.compile.pipeline import make_context, pipeline

    try:
        for lowering in pipeline(f"convert-coll-to-snac{{{options}}}").passes:
            lowering.apply(make_context(), ModuleOp([]))
    except (ValueError, PassFailedException) as e:
        return _one_line(str(e))
    return None


def main_exit() -> None:
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
