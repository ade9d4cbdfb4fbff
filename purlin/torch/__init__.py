"""purlin collectives on torch tensors, one process per GPU (torchrun), or per
CPU rank over gloo (the CPU backend):

    import purlin.torch as pt
    pt.init()                       # after torch.distributed.init_process_group
    pt.all_reduce(x)                # instead of torch.distributed.all_reduce(x)

Each call is a torch.ops.purlin operator (traced by torch.compile with
fullgraph=True), runs on the current CUDA stream and is capturable in CUDA
graphs. The V collectives take each rank's tensors at that rank's own size
and run on them directly, with no scratch copies. Plans are compiled once per
(collective, sizes, dtype, op, world, generation, lowering) and cached with
their shared memory (least recently used first out, bounded: see
purlin.torch.cache; `pt.release()` frees them); the first call with a new
shape is collective (every rank must make it), later ones cost no
compilation. Ranks whose calls differ (shape, dtype, op) raise
CallMismatchError on every rank, naming each rank's call.

`pt.empty(...)` (and `pt.free`) and `pt.register(tensor)` give CUDA memory
every rank maps (purlin.torch.memory): a collective whose buffers lie there
moves data in place between the ranks' tensors, with no staging.

`pt.all_to_all_v_dev(out, x, counts, recv_counts)` (and the all_gather_v /
reduce_scatter_v forms) take this rank's counts as a tensor: on CUDA the
kernel reads them (no host synchronisation, capturable with counts written by
a router's kernels), `out` bounds what may come, `recv_counts` receives what
came; on gloo the counts are gathered on the host first.

Reductions are named as purlin or torch names them (torch.distributed.ReduceOp
too); `async_op=True` returns a torch.distributed Work; all_gather,
reduce_scatter and all_to_all take lists as torch's list forms do; strided
tensors are copied to contiguous ones and back.

purlin is a torch.distributed backend: `pt.route(group)`, or backend "purlin"
wherever torch takes one (new_group, init_device_mesh's backend_override,
init_process_group), gives a process group on which torch's own collectives
(torch.distributed.*, the functional collectives, DTensor) run on purlin
where purlin runs them and on the group underneath otherwise. Over a world
spanning nodes (`init(ranks_per_node=...)` or torchrun's LOCAL_WORLD_SIZE),
every collective runs purlin within each node and torch.distributed between
nodes.
"""

from purlin.torch import functional, ops
from purlin.torch.collectives import (
    all_gather,
    all_gather_v,
    all_gather_v_dev,
    all_reduce,
    all_to_all,
    all_to_all_v,
    all_to_all_v_dev,
    reduce_scatter,
    reduce_scatter_v,
    reduce_scatter_v_dev,
)
from purlin.torch.board import CallMismatchError
from purlin.torch.cache import set_limits as set_cache_limits
from purlin.torch.cache import set_specialise_after
from purlin.torch.groups import cache_stats, init, release
from purlin.torch.memory import empty, free, register
from purlin.torch.process_group import PurlinProcessGroup, route
from purlin.torch.work import Work

__all__ = [
    "CallMismatchError", "PurlinProcessGroup", "Work", "cache_stats", "all_gather", "all_gather_v", "all_gather_v_dev", "all_reduce", "all_to_all",
    "all_to_all_v", "all_to_all_v_dev", "empty", "free", "functional", "init", "ops", "reduce_scatter", "reduce_scatter_v",
    "reduce_scatter_v_dev", "register", "release", "route", "set_cache_limits", "set_specialise_after",
]
