"""What purlin.torch keeps between calls, and its bounds.

Two caches, both least-recently-used and bounded:

- lowered plans, per process, keyed by what the lowering reads (collective,
  world, dtype, op, sizes, arch, options): a plan evicted from a group's
  communicators and needed again is bound again without lowering again;
- communicators, per group (GroupState.plans): each holds shared memory (its
  staging buffers, packet windows and signals, mapped from every peer). At
  most `limits.communicators` of them, mapping about `limits.shared_bytes`
  in all (every rank's region), are kept; the least recently used one beyond either is closed.
  Every rank makes the same calls (the call board checks it), so every rank
  evicts the same communicator at the same call. Making one again that the
  limits closed lately warns once per group: the calls outgrow the limits,
  and each may then map and connect memory anew.

`release()` closes them all and empties the lowered plans; `stats()` counts
what was lowered, made, closed and is kept.

With `set_specialise_after(n)`, a CUDA latency communicator called n times
loads its kernel with this rank's tables compiled in (ProcessCommunicator.
specialise: one NVRTC compile, cached; the same protocol, so the peers need
not), at worlds up to the generation's measured `specialise_max_world`
(purlin.conversion.cost_model). Off by default (0) until the one case
measured wrong (a reduce_scatter of one bf16 element a rank, specialised, at
worlds 5-7 on an H200) is explained.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from purlin.plan import Plan


@dataclass
class Limits:
    communicators: int = 32  # per group
    shared_bytes: int = 256 << 20  # per group: what its kept communicators map here (every rank's region)
    plans: int = 256  # lowered plans per process
    bound: int = 64  # calls per group kept bound to their plans (a binding costs a few ms)
    specialise_after: int = 0  # calls of a CUDA latency communicator before it specialises (0: never)


limits = Limits()

_counts = {"lowerings": 0, "communicators made": 0, "communicators closed": 0}


def set_limits(communicators: int | None = None, shared_bytes: int | None = None, plans: int | None = None) -> None:
    """Bounds of what purlin.torch keeps (None: unchanged); lower bounds apply from the next miss."""
    for name, value in (("communicators", communicators), ("shared_bytes", shared_bytes), ("plans", plans)):
        if value is None:
            continue
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"purlin.torch.set_cache_limits: {name} must be a positive integer, got {value!r}")
        setattr(limits, name, value)


def set_specialise_after(calls: int) -> None:
    """Calls of a CUDA latency communicator after which this rank specialises
    its kernel (0: never); communicators made from then on count to it."""
    if not isinstance(calls, int) or isinstance(calls, bool) or calls < 0:
        raise ValueError(f"purlin.torch.set_specialise_after: calls must be an integer >= 0, got {calls!r}")
    limits.specialise_after = calls


# Communicators closed lately per group, remembered to tell when the calls keep
# making again what the limits just closed (each making maps and exchanges anew).
RECENTLY_CLOSED = 8


class Communicators(OrderedDict):
    """A group's communicators by call key, least recently used first."""

    def __init__(self) -> None:
        super().__init__()
        self.shared_bytes = 0
        self.closed: OrderedDict[tuple, None] = OrderedDict()
        self.warned = False

    def hit(self, key: tuple) -> Any:
        comm = self.get(key)
        if comm is not None:
            self.move_to_end(key)
        return comm

    def keep(self, key: tuple, comm: Any) -> None:
        """Keeps `comm`, closing the least recently used ones beyond the limits;
        warns (once per group) when `comm` is one the limits closed lately."""
        again = key in self.closed
        self.closed.pop(key, None)
        if again and not self.warned:
            self.warned = True
            warnings.warn(
                "purlin.torch: a communicator that the cache limits closed lately is made again: the calls "
                f"use more than the {limits.communicators} communicators or {limits.shared_bytes >> 20} MiB of "
                "shared memory the limits keep, so each call may map and connect its memory anew (milliseconds "
                "per call); raise them with purlin.torch.set_cache_limits", RuntimeWarning, stacklevel=5)
        self[key] = comm
        self.shared_bytes += region_bytes(comm.plan) * comm.world
        while len(self) > 1 and (len(self) > limits.communicators or self.shared_bytes > limits.shared_bytes):
            closed = next(iter(self))
            self._close(closed)
            self.closed[closed] = None
            while len(self.closed) > RECENTLY_CLOSED:
                self.closed.popitem(last=False)

    def key_of(self, comm: Any) -> tuple:
        return next(k for k, c in self.items() if c is comm)

    def release(self, comms: list | None = None) -> None:
        """Closes `comms` (default: every one kept)."""
        if comms is None:
            comms = list(self.values())
        for key in [k for k, c in self.items() if any(c is d for d in comms)]:
            self._close(key)

    def _close(self, key: tuple) -> None:
        comm = self.pop(key)
        self.shared_bytes -= region_bytes(comm.plan) * comm.world
        comm.close()
        _counts["communicators closed"] += 1


class RecentCalls(OrderedDict):
    """Calls of a group's regime kernels made lately, least recently used first, at most limits.bound."""

    def hit(self, counts: tuple) -> Any:
        bound = self.get(counts)
        if bound is not None:
            self.move_to_end(counts)
        return bound

    def keep(self, counts: tuple, bound: Any) -> None:
        self[counts] = bound
        while len(self) > limits.bound:
            self.popitem(last=False)


def region_bytes(plan: Plan | None) -> int:
    """About the shared memory a communicator of `plan` holds per rank: both
    halves of its buffers (packets carry 8 data bytes in 16) and its signals;
    0 for a device-counts kernel, which has no plan (its tables size
    themselves on the device)."""
    if plan is None:
        return 0
    eb = plan.elem_bytes
    data = sum(2 * b.slots * b.elems * eb * (2 if b.kind.name == "PACKETS" else 1) for b in plan.buffers)
    return data + sum(8 * s.slots for s in plan.signals)


_plans: OrderedDict[tuple, Any] = OrderedDict()


def lowered(key: tuple, lower) -> Any:
    """The plan of `key`, lowered by `lower()` on a miss."""
    plan = _plans.get(key)
    if plan is not None:
        _plans.move_to_end(key)
        return plan
    plan = lower()
    _counts["lowerings"] += 1
    _plans[key] = plan
    while len(_plans) > limits.plans:
        _plans.popitem(last=False)
    return plan


def made() -> None:
    _counts["communicators made"] += 1


def release_plans() -> None:
    _plans.clear()


def stats(groups: list) -> dict[str, int]:
    """What was lowered, made and closed since the process started, and what `groups` keep now."""
    return {**_counts, "communicators kept": sum(len(st.plans) for st in groups),
            "shared bytes mapped": sum(st.plans.shared_bytes for st in groups), "plans kept": len(_plans)}
