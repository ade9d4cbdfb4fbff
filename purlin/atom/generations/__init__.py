"""GPU generations for `convert-snac-to-atom`.

A generation says which mechanism each datapath step uses. The orchestration
is the same for all of them; adding a generation is one file here with a
subclass of `Generation`, plus its entry in GENERATIONS.
"""

from __future__ import annotations

from purlin.atom.generations.base import MAX_THREADS_PER_SM, Datapath, Generation
from purlin.atom.generations.sm80 import SM80
from purlin.atom.generations.sm90 import SM90
from purlin.atom.generations.sm100 import SM100

__all__ = ["GENERATIONS", "MAX_THREADS_PER_SM", "Datapath", "Generation"]

GENERATIONS: dict[str, Generation] = {"sm_80": SM80(), "sm_90": SM90(), "sm_100": SM100()}
