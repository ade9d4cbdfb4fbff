"""Sizes as arguments on CUDA: a fixed collective lowered for each size,
against its V form lowered once per regime and bound to each size on the host.

    python bench/bound_sizes.py [--worlds 2,4,8] [--sizes 16,1024,65536,1048576,16777216]
                                [--collectives all_gather,reduce_scatter,all_to_all,all_reduce]
                                [--staged] [--out DIR]

All ranks share GPU 0. For each world, collective and size (bytes of the larger
per-rank buffer, rounded down to what the collective takes in bf16, as
purlin-bench rounds it):
- `fixed`: compile_collective at that size, what CUDA purlin.torch lowers
  for every new size (about 7 ms each at world 4);
- `bound`: the V form from compile_device_counts, lowered once per regime that
  the fixed lowerings chose, over buffers of that regime's largest size in the
  sweep, its counts bound on the host (counts_on_host: symmetric, in place as
  the fixed one) to this size's equal counts, all_reduce's all_reduce_v to the
  size's world slices (DeviceCountsCollective.bind_collective: tables only,
  about 1 ms).
Both run as symmetric kernels (`--staged`: staged ones) through one Communicator, are checked against
the numpy reference, then timed as purlin-bench times (CUDA-graph replays,
the slowest rank's median). The table gives microseconds per call, bound /
fixed, and the host's milliseconds to lower (fixed) and to bind (bound):
whether purlin.torch can lower once per regime on CUDA, as it does on CPU,
without slowing the calls. Without CUDA it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

from purlin.coll import reference
from purlin.coll.builder import CollectiveSpec
from purlin.compile import Compiled, DeviceCountsCollective, compile_collective, compile_device_counts, \
    placement_options
from purlin.tools.bench import _ranks_timer, human, size_run
from purlin.torch.regimes import slices

COLLECTIVES = ("all_gather", "reduce_scatter", "all_to_all", "all_reduce")
SIZES = (16, 1024, 65536, 1 << 20, 16 << 20)
WORLDS = (2, 4, 8)


@dataclass
class Pair:
    """One size's two ways: lowered for it, and the V form of its regime bound to it."""

    collective: str
    world: int
    count: int
    fixed: Compiled
    bound: Compiled
    regime: str
    lower_ms: float
    bind_ms: float


def op_of(collective: str) -> str | None:
    return "sum" if "reduce" in collective else None


def equal_counts(collective: str, world: int, n_in: int, n_out: int) -> list:
    """The V form's counts that make it the fixed collective of these buffers."""
    if collective == "all_to_all":
        return [[n_in // world] * world for _ in range(world)]
    if collective == "all_reduce":
        return slices(n_in, world)
    return [n_in] * world if collective == "all_gather" else [n_out] * world


def pairs(collective: str, world: int, sizes: list[int], arch: str, sms: int, symmetric: bool = True) -> list[Pair]:
    """Each size's fixed lowering, and its regime's V form (lowered once, over that
    regime's largest buffers) bound to it; in place between the ranks' buffers
    (`symmetric`), or staged."""
    op = op_of(collective)
    fixed = {}
    for nbytes in sizes:
        # The collective's larger buffer, rounded down as purlin-bench rounds it; its count per peer
        # (all_reduce: its elements).
        count = size_run(collective, nbytes, world) // 2 // (1 if collective == "all_reduce" else world)
        if count in fixed:
            continue
        t = time.perf_counter()
        compiled = compile_collective(collective, world, "bf16", op, count, arch=arch, symmetric=symmetric,
                                      ranks_per_device=world, sms=sms)
        fixed[count] = (compiled, (time.perf_counter() - t) * 1e3)
    regimes: dict[str, tuple[int, int]] = {}
    for count, (compiled, _) in fixed.items():
        regime = compiled.cuda.kernel.regime.data.value
        n_in, n_out = CollectiveSpec(collective, world, "bf16", op, count).buffer_sizes()
        lo, hi = regimes.get(regime, (0, 0))
        regimes[regime] = (max(lo, n_in), max(hi, n_out))
    lowered: dict[str, DeviceCountsCollective] = {
        regime: compile_device_counts(f"{collective}_v", world, "bf16", op, input_elems=n_in, output_elems=n_out,
                                      arch=arch, lowering=placement_options(f"regime={regime}", symmetric, world, sms),
                                      counts_on_host=True)
        for regime, (n_in, n_out) in regimes.items()}
    out = []
    for count, (compiled, lower_ms) in fixed.items():
        regime = compiled.cuda.kernel.regime.data.value
        n_in, n_out = CollectiveSpec(collective, world, "bf16", op, count).buffer_sizes()
        t = time.perf_counter()
        bound = lowered[regime].bind_collective(equal_counts(collective, world, n_in, n_out))
        out.append(Pair(collective, world, count, compiled, bound, regime, lower_ms, (time.perf_counter() - t) * 1e3))
    return out


def sameness(p: Pair, world: int, sms: int) -> str:
    """What the bound V form shares with the fixed lowering: "code+tables"
    (the very kernel and tables), "code", or "-"."""
    per_sm = p.fixed.cuda.blocks_per_sm(world, sms)
    if p.bound.cuda.source(per_sm).text != p.fixed.cuda.source(per_sm).text:
        return "-"
    same = all(np.array_equal(b, f) for b, f in zip(p.bound.cuda.tables.ranks, p.fixed.cuda.tables.ranks))
    return "code+tables" if same else "code"


def expected(collective: str, ins: list[np.ndarray]) -> list[np.ndarray]:
    if collective in ("reduce_scatter", "all_reduce"):
        return getattr(reference, collective)(ins, "sum")
    return getattr(reference, collective)(ins)


def check(collective: str, outs: list[np.ndarray], ins: list[np.ndarray], which: str) -> None:
    for r, want in enumerate(expected(collective, ins)):
        if not np.array_equal(outs[r][:len(want)], want):
            raise SystemExit(f"bound_sizes: {collective} {which}: rank {r} differs from the reference")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worlds", default=",".join(map(str, WORLDS)))
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--collectives", default=",".join(COLLECTIVES))
    ap.add_argument("--out", help="where bound-sizes.json goes")
    ap.add_argument("--staged", action="store_true",
                    help="both forms staged, not in place between the ranks' buffers")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("bound_sizes: no CUDA device; this benchmark runs on one GPU (skipped)")
        return 0
    from purlin import _runtime
    from purlin.compile import arch_of_device
    from purlin.runtime import Communicator

    arch, sms = arch_of_device(0), _runtime.cuda_device_sms(0)
    print(f"fixed lowering per size against the V form bound per size, {'staged' if args.staged else 'in place'}, "
          f"bf16, every rank on GPU 0 ({torch.cuda.get_device_name(0)}); us per call, slowest rank's median of graph "
          "replays; same: what the bound form shares with the fixed one")
    print(f"{'world':>5} {'collective':>15} {'size':>9} {'regime':>10} {'fixed us':>9} {'bound us':>9} {'ratio':>6} "
          f"{'lower ms':>9} {'bind ms':>8} {'same':>11}")
    rows = []
    for world in map(int, args.worlds.split(",")):
        timer, streams = _ranks_timer([0] * world)
        for collective in args.collectives.split(","):
            for p in pairs(collective, world, [int(s) for s in args.sizes.split(",")], arch, sms, not args.staged):
                n_in, n_out = CollectiveSpec(collective, world, "bf16", op_of(collective), p.count).buffer_sizes()
                rng = np.random.default_rng(world * 1000 + p.count)
                host = [rng.integers(-8, 8, n_in).astype(np.float32) for _ in range(world)]
                ins = [torch.from_numpy(a).to("cuda:0", torch.bfloat16) for a in host]
                us = {}
                for which, compiled in (("fixed", p.fixed), ("bound", p.bound)):
                    # Tables loaded in both (a bound kernel's change each call), as purlin.torch runs them.
                    comm = Communicator(compiled.plan, backend="cuda", devices=[0] * world, name=which,
                                        kernel=compiled.cuda, specialise=False)
                    outs = [torch.zeros(n_out, dtype=torch.bfloat16, device="cuda:0") for _ in range(world)]
                    torch.cuda.synchronize()
                    comm.run(ins, outs, streams)
                    comm.synchronize()
                    check(collective, [o.float().cpu().numpy() for o in outs], host, which)
                    us[which], _ = timer(lambda: comm.run(ins, outs, streams))
                    del comm
                row = {"world": world, "collective": collective, "bytes": max(n_in, n_out) * 2, "regime": p.regime,
                       "fixed_us": us["fixed"], "bound_us": us["bound"], "ratio": us["bound"] / us["fixed"],
                       "lower_ms": p.lower_ms, "bind_ms": p.bind_ms, "same": sameness(p, world, sms)}
                rows.append(row)
                print(f"{world:>5} {collective:>15} {human(row['bytes']):>9} {p.regime:>10} {us['fixed']:>9.2f} "
                      f"{us['bound']:>9.2f} {row['ratio']:>6.2f} {p.lower_ms:>9.1f} {p.bind_ms:>8.1f} "
                      f"{row['same']:>11}", flush=True)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "bound-sizes.json"), "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
