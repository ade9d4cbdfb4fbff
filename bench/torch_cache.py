"""What purlin.torch keeps and compiles when a program calls one collective at
many sizes: gloo processes, their tensors on CPU (the CPU backend) or on CUDA
(`--device cuda`: the CUDA backend, rank r on GPU r % GPUs), every result
checked against torch.distributed's (gloo, on the CPU).

    python bench/torch_cache.py [--world 4] [--sizes 200] [--collective all_reduce] [--dtype float32]
                                [--device cpu|cuda]

Each rank calls `pt.all_reduce` (or the collective named) once at each of
`--sizes` sizes spread from 1 element to 4 MiB per rank (odd ones included),
then prints, on rank 0: lowerings run (the xDSL pipeline, the expensive
compile), communicators made, closed and kept, the shared memory they map,
lowered plans kept, wall time of purlin's calls in the sweep, resident memory before and after, and this
process's memory mappings (shared-memory regions included).
"""

from __future__ import annotations

import argparse
import datetime
import os
import socket
import time

import torch
import torch.distributed as dist

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "int32": torch.int32}


def sizes(count: int, world: int, elem: int) -> list[int]:
    """`count` distinct element counts from 1 to 4 MiB per rank, geometric, nudged odd, multiples of world."""
    top = (4 << 20) // elem
    out: list[int] = []
    for i in range(count):
        n = max(1, round(top ** (i / max(1, count - 1))))
        n = n | 1 if n > 2 else n
        n *= world
        while n in out:
            n += world
        out.append(n)
    return out


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def _mappings() -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


def _call(x: torch.Tensor, collective: str, world: int, pt=None) -> torch.Tensor:
    """One call's result on `x`: purlin.torch's (`pt`), else torch.distributed's."""
    if collective == "all_reduce":
        out = x.clone()
        pt.all_reduce(out) if pt else dist.all_reduce(out)
    elif collective == "all_gather":
        out = x.new_empty(world * x.numel())
        pt.all_gather(out, x) if pt else dist.all_gather_into_tensor(out, x)
    elif collective == "reduce_scatter":
        out = x.new_empty(x.numel() // world)
        pt.reduce_scatter(out, x) if pt else dist.reduce_scatter_tensor(out, x)
    else:
        out = torch.empty_like(x)
        pt.all_to_all(out, x) if pt else dist.all_to_all_single(out, x)
    return out


def _worker(rank: int, world: int, port: int, args) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=300))
    import purlin.torch as pt
    from purlin.torch.groups import cache_stats

    if args.device == "cuda":
        torch.cuda.set_device(rank % torch.cuda.device_count())
    pt.init()
    dtype = DTYPES[args.dtype]
    ns = sizes(args.sizes, world, torch.empty(0, dtype=dtype).element_size())
    rss0, maps0 = _rss_kib(), _mappings()
    g = torch.Generator().manual_seed(rank)
    spent = 0.0
    for n in ns:
        x = (torch.randint(-8, 8, (n,), generator=g)).to(dtype)
        on = x.to(args.device)
        dist.barrier()
        t = time.perf_counter()
        got = _call(on, args.collective, world, pt)
        if on.is_cuda:
            torch.cuda.synchronize()
        spent += time.perf_counter() - t
        if not torch.equal(got.cpu(), _call(x, args.collective, world)):
            raise SystemExit(f"rank {rank}: {args.collective} of {n} elements differs from torch.distributed's")
    stats = cache_stats()
    rss1, maps1 = _rss_kib(), _mappings()
    if rank == 0:
        print(f"{args.collective} {args.dtype} world {world} on {args.device}: {len(ns)} sizes from {ns[0]} to "
              f"{ns[-1]} elements, all equal to torch.distributed's")
        for key, value in stats.items():
            print(f"  {key:<22} {value}")
        print(f"  {'wall (purlin)':<22} {spent:.2f} s")
        print(f"  {'rss':<22} {rss0 / 1024:.1f} -> {rss1 / 1024:.1f} MiB")
        print(f"  {'mappings':<22} {maps0} -> {maps1}")
    pt.release()
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world", type=int, default=4)
    parser.add_argument("--sizes", type=int, default=200)
    parser.add_argument("--collective", choices=COLLECTIVES, default="all_reduce")
    parser.add_argument("--dtype", choices=tuple(DTYPES), default="float32")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("torch_cache: --device cuda needs a GPU")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.multiprocessing.start_processes(_worker, args=(args.world, port, args), nprocs=args.world, join=True,
                                          start_method="spawn")


if __name__ == "__main__":
    main()
