"""Jobs on every rank of a torch.distributed process group of local
processes, shared by the one-rank-per-process runtime tests (nccl on GPUs,
gloo on the CPU backend)."""

from __future__ import annotations

import datetime
import socket

import torch


def run_group(world: int, backend: str, job, args=(), start_method: str = "spawn") -> None:
    """Runs job(rank, *args) in `world` processes of one `backend` process group; with nccl each
    rank first takes GPU `rank`. A worker's exception fails the call."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch.multiprocessing.start_processes(_worker, args=(world, port, backend, start_method == "fork", job, args),
                                          nprocs=world, join=True, start_method=start_method)


def fork_gloo(world: int, job, *args) -> None:
    """run_group over gloo, forked: the workers start with torch and purlin imported, most of a spawn's time."""
    run_group(world, "gloo", job, args, start_method="fork")


def _worker(rank: int, world: int, port: int, backend: str, forked: bool, job, args) -> None:
    import torch.distributed as dist

    if backend == "nccl":
        torch.cuda.set_device(rank)
    if forked:
        # A forked child must not enter the OpenMP pool its parent may have started.
        torch.set_num_threads(1)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    try:
        job(rank, *args)
    finally:
        dist.destroy_process_group()
