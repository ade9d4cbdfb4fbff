"""purlin's CPU backend against gloo, side by side in one run.

    python bench/cpu_vs_gloo.py [--world 4] [--sizes 4096,...,4194304] [--reps 7] [--out FILE]

Both sides run on the same `world` processes (spawned here, one gloo
process group among them), on the same fp32 tensors, call after call:

  gloo     torch.distributed's all_reduce (in place), all_gather_into_tensor,
           reduce_scatter_tensor and all_to_all_single on the gloo group:
           ranks exchange data over loopback TCP.
  purlin   purlin.torch's all_reduce (in place), all_gather, reduce_scatter and
           all_to_all on the same group, as a user calls them (pt.init() over
           gloo): the torch op, its checks and the cached ProcessCommunicator,
           whose ranks are these processes and whose memory is POSIX shared
           memory mapped by every rank (gloo only exchanges the names once).
  runtime  that ProcessCommunicator's run() called directly on the same
           tensors (the same plan purlin.torch compiles): the CPU backend
           alone, without purlin.torch's layer.

Sizes are the larger buffer of one rank (as purlin-run's --bytes): the
all_reduce buffer, all_gather's output, reduce_scatter's input, all_to_all's
buffer. First every side's result is checked against gloo's (integer-valued
floats, so sums are exact); then each rep times `iters` back-to-back calls
of each side on every rank after a barrier (sides in a rotating order), the
per-call time of a rep being the slowest rank's; the table gives the median
over reps. Timed data are zeros, so repeated in-place sums stay finite.
Goal (issue 24): purlin / gloo <= 1.0 at every size, <= 0.5 from 64 KiB up.
On a machine shared with other work the figures are noisy: take the
medians of several runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import subprocess
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
SIDES = ("gloo", "purlin", "runtime")
DEFAULT_SIZES = ",".join(str(4096 * 4**k) for k in range(6))  # 4 KiB .. 4 MiB


def iterations(nbytes: int) -> int:
    """Calls per rep: enough to dwarf the timer at small sizes, few at large ones."""
    return max(4, min(200, (1 << 22) // nbytes * 2))


def build(coll: str, world: int, rank: int, nbytes: int, timed: bool):
    """(gloo call, purlin call, runtime call, tensors written) of one rank; the tensors hold
    integer-valued test data, or zeros when `timed`."""
    import purlin.torch as pt
    from purlin.compile import CPU_ARCH, compile_plan
    from purlin.runtime import ProcessCommunicator

    n = nbytes // 4
    small = n // world  # all_gather's input, reduce_scatter's output, all_to_all's block x world / world

    def data(m: int, salt: int) -> torch.Tensor:
        if timed:
            return torch.zeros(m)
        g = torch.Generator().manual_seed(1000 * rank + salt)
        return torch.randint(-8, 8, (m,), generator=g).float()

    op = "sum" if "reduce" in coll else None
    count = {"all_reduce": n, "all_gather": small, "reduce_scatter": small, "all_to_all": n // world}[coll]
    comm = _comm_cache.get((coll, nbytes))
    if comm is None:
        # As purlin.torch compiles it: an in-place all_reduce is lowered in place.
        plan = compile_plan(coll, world, "f32", op, count, arch=CPU_ARCH, in_place=coll == "all_reduce")
        comm = _comm_cache[(coll, nbytes)] = ProcessCommunicator(plan, name=coll)
    if coll == "all_reduce":
        x = data(n, 1)
        xs = [x.clone() for _ in SIDES]
        return (lambda: dist.all_reduce(xs[0]), lambda: pt.all_reduce(xs[1]), lambda: comm.run(xs[2], xs[2]), xs)
    if coll == "all_gather":
        x = data(small, 2)
        ys = [torch.empty(n) for _ in SIDES]
        return (lambda: dist.all_gather_into_tensor(ys[0], x), lambda: pt.all_gather(ys[1], x),
                lambda: comm.run(x, ys[2]), ys)
    if coll == "reduce_scatter":
        x = data(n, 3)
        ys = [torch.empty(small) for _ in SIDES]
        return (lambda: dist.reduce_scatter_tensor(ys[0], x), lambda: pt.reduce_scatter(ys[1], x),
                lambda: comm.run(x, ys[2]), ys)
    x = data(n, 4)
    ys = [torch.empty(n) for _ in SIDES]
    return (lambda: dist.all_to_all_single(ys[0], x), lambda: pt.all_to_all(ys[1], x),
            lambda: comm.run(x, ys[2]), ys)


_comm_cache: dict = {}


def worker(rank: int, world: int, port: int, sizes: list[int], reps: int, colls: list[str], queue) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    import purlin.torch as pt

    pt.init()
    rows = []
    for coll in colls:
        for nbytes in sizes:
            # Checked first: purlin's and the runtime's results equal gloo's, bit for bit.
            *calls, outs = build(coll, world, rank, nbytes, timed=False)
            for call in calls:
                call()
            for side, out in zip(SIDES[1:], outs[1:]):
                if not torch.equal(out, outs[0]):
                    raise AssertionError(f"rank {rank}: {coll} {nbytes} B: {side} differs from gloo")
            *calls, _ = build(coll, world, rank, nbytes, timed=True)
            iters = iterations(nbytes)
            for call in calls:  # warm: plans compiled, pages touched
                call()
            times = {s: [] for s in SIDES}
            for rep in range(reps):
                order = [(rep + k) % len(SIDES) for k in range(len(SIDES))]
                for k in order:
                    dist.barrier()
                    t = time.perf_counter()
                    for _ in range(iters):
                        calls[k]()
                    times[SIDES[k]].append((time.perf_counter() - t) / iters)
            every = [None] * world
            dist.all_gather_object(every, times)
            slowest = {s: [max(r[s][i] for r in every) for i in range(reps)] for s in SIDES}
            rows.append((coll, nbytes, iters, {s: statistics.median(v) for s, v in slowest.items()}))
    if rank == 0:
        queue.put(rows)
    dist.barrier()
    for comm in _comm_cache.values():
        comm.close()
    dist.destroy_process_group()


def size_name(nbytes: int) -> str:
    return f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


def table(rows, world: int, reps: int) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or "?"
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    lines = [f"world {world}, fp32, {os.cpu_count()} cores (load {load}), torch {torch.__version__}, "
             f"{platform.machine()}, purlin {commit}",
             f"us per call of the slowest rank, median of {reps} reps; ratio = side / gloo; "
             "goal purlin <= 1.0, <= 0.5 from 64 KiB",
             f"{'collective':15}{'size':>8}{'iters':>6}{'gloo':>10}{'purlin':>10}{'runtime':>10}"
             f"{'purlin/g':>10}{'runtime/g':>10}  goal"]
    for coll, nbytes, iters, t in rows:
        goal = 0.5 if nbytes >= 64 << 10 else 1.0
        ratio = t["purlin"] / t["gloo"]
        lines.append(f"{coll:15}{size_name(nbytes):>8}{iters:>6}" + "".join(f"{t[s] * 1e6:10.1f}" for s in SIDES)
                     + f"{ratio:10.2f}{t['runtime'] / t['gloo']:10.2f}  <= {goal}: "
                     + ("met" if ratio <= goal else "missed"))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world", type=int, default=4)
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="bytes of a rank's larger buffer, comma-separated")
    parser.add_argument("--collectives", default=",".join(COLLECTIVES))
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    colls = args.collectives.split(",")
    for c in colls:
        if c not in COLLECTIVES:
            parser.error(f"unknown collective {c!r}, expected some of {', '.join(COLLECTIVES)}")
    for s in sizes:
        if s <= 0 or s % (4 * args.world * args.world):
            parser.error(f"size {s} must be a positive multiple of 4 x world^2 bytes")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    procs = [ctx.Process(target=worker, args=(r, args.world, port, sizes, args.reps, colls, queue))
             for r in range(args.world)]
    for p in procs:
        p.start()
    while queue.empty():
        if any(p.exitcode for p in procs):
            for p in procs:
                p.kill()
            raise SystemExit("a rank failed (its traceback is above)")
        time.sleep(0.2)
    rows = queue.get()
    for p in procs:
        p.join()
        if p.exitcode:
            raise SystemExit(f"a rank exited with status {p.exitcode}")
    text = table(rows, args.world, args.reps)
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write(text + "\n\n")


if __name__ == "__main__":
    main()
