"""Runs a test's job in several CPU processes of one gloo process group (torch
multiprocessing spawn). Spawned workers import the job's module by name, so
jobs live at a test module's top level."""

from __future__ import annotations

import datetime
import os
import tempfile

import torch


def spawn(world: int, job, *args, timeout_s: float = 120.0) -> None:
    """job(rank, *args) on ranks 0..world-1; the first failure is raised here."""
    with tempfile.TemporaryDirectory() as tmp:
        init = f"file://{os.path.join(tmp, 'rendezvous')}"
        torch.multiprocessing.spawn(_worker, args=(world, init, timeout_s, job, args), nprocs=world, join=True)


def _worker(rank: int, world: int, init: str, timeout_s: float, job, args) -> None:
    import torch.distributed as dist

    # Each rank is one CPU process; threads beyond one only contend on CI's two cores.
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout_s))
    try:
        job(rank, *args)
    finally:
        dist.destroy_process_group()
