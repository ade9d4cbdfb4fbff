"""The registry of simulation levels.

A level runs a module on per-rank buffers (purlin.levels.base.LevelRunner):

    run(module, args, *, world, seed, options) -> None

`module` is the module as written (named collectives and/or coll.collective);
the level lowers it as far as it needs with `purlin.compile.pipeline.lower`. args[i][r]
is the numpy buffer of entry-function argument i on rank r; the level writes
results into them in place. `seed` drives any scheduling choices a level
makes (interleavings, delays); `options` carries level-specific settings
("entry" names the function to run). A level raises `purlin.levels.base.SimError`
when the module cannot be executed.

A new level registers itself by adding an entry to LEVELS.
"""

from __future__ import annotations

from purlin.levels import atom as atom_level
from purlin.levels import coll as coll_level
from purlin.levels import snac as snac_level
from purlin.levels.base import LevelRunner, SimError

LEVELS: dict[str, LevelRunner] = {
    "coll": coll_level.run,
    "snac": snac_level.run,
    "atom": atom_level.run_atom,
    "plan": atom_level.run_plan,
}

def get_level(name: str) -> LevelRunner:
    """The runner of level `name`; SimError naming the levels when it is unknown."""
    runner = LEVELS.get(name)
    if runner is None:
        raise SimError(f"unknown level '{name}', expected one of {', '.join(LEVELS)}")
    return runner
