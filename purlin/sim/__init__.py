"""Multi-rank simulation: numpy reference semantics, dtypes and the level executors.

Every level runs a module on per-rank numpy buffers (see `purlin.sim.levels`);
translation validation compares each level with `purlin.sim.reference`.
"""


class SimError(Exception):
    """A module cannot be executed: unsupported op, bad buffers, missing level."""
