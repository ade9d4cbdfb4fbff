"""One kernel per regime, sizes given at run time.

A call of the CPU backend runs a V collective's kernel lowered once with its
counts dynamic (purlin.compile.compile_device_counts) over buffers of its
regime's capacity: each call's sizes bind that kernel on the host
(DeviceCountsCollective.bind: no lowering) and the group's one communicator
of that kernel runs the bound plan (ProcessCommunicator.rebind: its memory is
laid out alike for every binding, so nothing is mapped or exchanged again).

    all_gather of n       all_gather_v of [n] * world
    reduce_scatter of m   reduce_scatter_v of [m] * world
    all_to_all of c       all_to_all_v of c from every rank to every rank
    all_reduce of n       all_reduce_v of n's world near-equal slices (in place too)
    the V forms           themselves

On cuda both regimes run so too: the V kernel lowered once with its counts
bound on the host (compile_device_counts(counts_on_host=True)), each size's
binding (bind_collective) uploaded to the communicator of its layout once and
chosen at each call (ProcessCommunicator.rebind). Measured against each size's
own lowering (bench/bound_sizes.py, one H100): throughput 0.96-1.02x, latency
0.98-1.07x since flag-only units for empty slices removed the per-call
handshake (bench/results/1xh100-session-12-06b). An all_reduce's throughput
bindings are the fixed all_reduce's very kernels and tables (symmetric, in
place too; 0.98-1.01x); in the latency regime all_reduce_v's exchange
coalesces once bound (snac.PhaseOp.coalesce), so that its slices move as the
fixed all_reduce's one unit: 0.98-1.11x of each size's own lowering at
16 B-64 KiB, worlds 2-8, where a unit per slice took 1.06-1.48x
(bench/results/1xh100-session-12-06c, -06d). Every rank on one GPU, a fixed
throughput call of at most 2 MiB a rank (copies), 16 MiB (all_reduce) or
4 MiB (reduce_scatter) takes one block an SM (the cost model's
sparse_shared_*_max_bytes); a binding keeps the blocks of its kernel,
lowered for the regime's capacity: two (measured 0.70-0.97x for the fixed
ones, bench/results/1xh100-session-12-06f, -06g; not yet a regime of its own
here). Where hot latency calls
specialise (purlin.torch.set_specialise_after), a latency size keeps a
lowering of its own: a specialised kernel has one binding's tables compiled
in.

Regimes are the cost model's: latency while the largest rank's input holds at
most its latency bound (and the world is small enough), throughput above,
up to CAPACITY elements; a call larger than that compiles a plan of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from purlin.conversion.cost_model import LATENCY_MAX_WORLD, THRESHOLDS
from purlin.dtypes import itemsize

# Elements a rank's buffers of a throughput kernel may hold: its staging is
# chunked, so the bound costs no memory.
CAPACITY = 1 << 30
# The throughput kernels' chunk: staging of 4 slots x 1 MiB per rank, not the
# cost model's GPU-sized 4 MiB ones (which would map 32 MiB a rank per kernel).
CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class Regime:
    """A kernel's regime and the elements its rank's input and output may hold."""

    name: str
    input_elems: int
    output_elems: int


def regime(collective: str, world: int, dtype: str, input_extent: int, arch: str) -> Regime | None:
    """The regime of a V collective whose largest rank's input holds `input_extent`
    elements; None beyond CAPACITY."""
    bound = THRESHOLDS[arch].latency_max_bytes // itemsize(dtype)
    if input_extent <= bound and world <= LATENCY_MAX_WORLD:
        name, cap = "latency", bound
    elif input_extent <= CAPACITY:
        name, cap = "throughput", CAPACITY
    else:
        return None
    # What a rank receives: reduce_scatter_v a slice of what it sends, all_reduce_v as much, the others up to
    # world x that.
    return Regime(name, cap, cap if collective in ("reduce_scatter_v", "all_reduce_v") else world * cap)


def options(lowering: str, rg: Regime, cuda: bool = False, symmetric: bool = False) -> str:
    """The lowering of regime `rg`'s kernel: `lowering` with the regime (and a
    CPU throughput kernel's chunk; on cuda the cost model's) unless it names
    them; `symmetric` where every rank's buffers lie in memory all map."""
    named = {word.partition("=")[0] for word in lowering.split()}
    extra = [f"regime={rg.name}"] if "regime" not in named else []
    if rg.name == "throughput" and not cuda and "chunk-bytes" not in named:
        extra.append(f"chunk-bytes={CHUNK_BYTES}")
    if symmetric and "symmetric" not in named:
        extra.append("symmetric=true")
    return " ".join([lowering, *extra]).strip()


def slices(n: int, world: int) -> list[int]:
    """`n` elements in `world` slices as even as they go, the larger ones first."""
    q, r = divmod(n, world)
    return [q + (k < r) for k in range(world)]


def input_extent(collective: str, counts: list) -> int:
    """The largest rank's input of a V collective's `counts`."""
    if collective == "all_gather_v":
        return max(counts)
    if collective in ("reduce_scatter_v", "all_reduce_v"):
        return sum(counts)
    return max(sum(row) for row in counts)
