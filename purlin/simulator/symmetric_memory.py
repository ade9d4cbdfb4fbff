"""The simulated ranks' shared state: signals, and the staging and window
locations with the accesses that the race checks look at."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(slots=True)
class Signal:
    value: int = 0
    clock: np.ndarray | None = None  # clock of the last release store


@dataclass(slots=True)
class Access:
    tid: int
    stamp: int
    who: str
    epoch: int

    @property
    def what(self) -> str:
        return f"{self.who} at epoch {self.epoch}"


@dataclass(slots=True)
class Location:
    """A staging slot or a window region, for race and staleness checks."""

    tag: tuple | None = None  # (phase, producer, unit, epoch) last written
    write: Access | None = None
    write_clock: np.ndarray | None = None  # packets: the put's clock, joined by waits
    reads: dict[int, Access] = field(default_factory=dict)


class World:
    """Symmetric memory, signals and epochs of all ranks, kept across calls."""

    def __init__(self, world: int, data: bool):
        self.world = world
        self.data = data
        self.epoch = [0] * world
        self.prev = [0] * world
        self.signals: dict[tuple[str, int], list[Signal]] = {}
        self.buffers: dict[tuple[str, int], np.ndarray] = {}
        self.locations: dict[tuple, Location] = {}

    def signal(self, sym: str, owner: int, slot: int) -> Signal:
        return self.slots(sym, owner)[slot]

    def slots(self, sym: str, owner: int) -> list[Signal]:
        """Rank `owner`'s signal array `sym`."""
        slots = self.signals.get((sym, owner))
        if slots is None:
            slots = self.signals[(sym, owner)] = [Signal() for _ in range(self.world)]
        return slots

    def location(self, key: tuple) -> Location:
        loc = self.locations.get(key)
        if loc is None:
            loc = self.locations[key] = Location()
        return loc
