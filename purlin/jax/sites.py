"""The collectives of lowered programs, registered with purlin._runtime.

Each custom call a program's lowering emits is a *site*: its own communicator
per group of devices (so that collectives a device runs in another order
than its peers, or at once, never share one), the plan of (collective,
world, dtype, op, count) and its CUDA program compiled once and shared by
every site of that shape. A device's FFI handler finds its group and rank
by (site, device). Sites live as long as the process: a compiled program
may run again at any time.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import lru_cache

from purlin.compile import CPU_ARCH, Compiled, compile_collective
from purlin.jax.layouts import Layout
from purlin.runtime.backend import _runtime, kernel_spec

# Longer than the threaded CPU backend's 10 s: the devices of one program
# reach a collective after their own compute, on a machine they share.
TIMEOUT_S = 60.0

_site_ids = itertools.count()
_communicators: list = []  # what the runtime's registry points at


@lru_cache(maxsize=None)
def compiled(collective: str, world: int, dtype: str, op: str | None, count: int,
             counts: tuple[tuple[int, ...], ...] | None, arch: str) -> Compiled:
    """The plan and its CUDA program (generated only where a GPU site launches it)."""
    return compile_collective(collective, world, dtype, op, count=count,
                              counts=[list(row) for row in counts] if counts else None, arch=arch)


def cuda_arch(device) -> str:
    """purlin's generation of a JAX GPU device."""
    major = int(str(device.compute_capability).split(".")[0])
    if major >= 10:
        return "sm_100"
    if major in (8, 9):
        return f"sm_{major}0"
    raise RuntimeError(f"purlin needs an sm_80 or newer GPU, {device} is sm_{device.compute_capability}")


def register(name: str, layout: Layout, dtype: str, platform: str, groups: Sequence[Sequence]) -> int:
    """A new site running `layout` on every group (devices, in rank order); its id."""
    site = next(_site_ids)
    members = []
    for g, devices in enumerate(groups):
        who = f"{name} (site {site}, group {g})"
        arch = CPU_ARCH if platform == "cpu" else cuda_arch(devices[0])
        c = compiled(layout.collective, len(devices), dtype, layout.op, layout.count, layout.counts, arch)
        p = c.plan
        eb = p.elem_bytes
        if platform == "cpu":
            comm = _runtime.CpuRankCommunicator(_runtime.decode(p.encode()), TIMEOUT_S, who,
                                                [s.name for s in p.signals], [b.name for b in p.buffers])
            keys = [d.id for d in devices]
        else:
            cuda = [d.local_hardware_id for d in devices]
            extents = [(p.input_extent(r), p.output_extent(r)) for r in range(p.world)]
            comm = _runtime.CudaCommunicator(kernel_spec(c.cuda, cuda, extents, who), cuda, TIMEOUT_S, who)
            keys = cuda
        _communicators.append(comm)
        members += [(key, comm, r, p.input_extent(r) * eb, p.output_extent(r) * eb) for r, key in enumerate(keys)]
    _runtime.jax_register(site, members)
    return site
