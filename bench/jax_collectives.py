"""Host time of purlin.jax's collectives against jax.lax's on CPU devices.

    python bench/jax_collectives.py [--devices 8] [--sizes 16,65536] [--calls 200]

Per (collective, devices, bytes per device): the median wall time of one
call of a jitted shard_map program holding that one collective (dispatch
included, results awaited), for purlin.jax, jax.lax and a program with no
collective (the dispatch floor); and the time of one collective inside a
program that runs it 50 times in a loop (no dispatch). Every result is
checked against jax.lax's first.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--devices", type=int, default=8)
parser.add_argument("--sizes", default="16,65536", help="bytes per device, comma-separated")
parser.add_argument("--calls", type=int, default=200)
args = parser.parse_args()
jax.config.update("jax_num_cpu_devices", args.devices)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import purlin.jax as pj  # noqa: E402

LOOP = 50
COLLECTIVES = {
    "psum": lambda L, u: L.psum(u, "i"),
    "all_gather": lambda L, u: L.all_gather(u, "i", tiled=True)[: u.shape[0]],
    "psum_scatter": lambda L, u: jnp.tile(L.psum_scatter(u, "i", tiled=True), args.devices),
}


def median_call(f, x) -> float:
    jax.block_until_ready(f(x))
    times = []
    for _ in range(args.calls):
        t = time.perf_counter()
        jax.block_until_ready(f(x))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def program(mesh, body):
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i"), check_vma=False))


def main() -> None:
    mesh = jax.make_mesh((args.devices,), ("i",))
    print(f"{args.devices} CPU devices, jax {jax.__version__}, median of {args.calls} calls (us)")
    print(f"{'collective':14}{'bytes':>8}{'no op':>9}{'jax.lax':>9}{'purlin':>9}{'extra':>9}"
          f"{'lax/loop':>10}{'purlin/loop':>12}")
    for size in (int(s) for s in args.sizes.split(",")):
        elems = max(args.devices, size // 4 // args.devices * args.devices)
        x = jax.device_put(np.arange(args.devices * elems, dtype=np.float32) % 7,
                           NamedSharding(mesh, P("i")))
        floor = median_call(program(mesh, lambda u: u + 1), x)
        for name, body in COLLECTIVES.items():
            lax_f, ours_f = program(mesh, lambda u: body(jax.lax, u)), program(mesh, lambda u: body(pj, u))
            np.testing.assert_array_equal(np.asarray(ours_f(x)), np.asarray(lax_f(x)))
            lax_t, ours_t = median_call(lax_f, x), median_call(ours_f, x)

            def looped(lib):
                return program(mesh, lambda u: jax.lax.fori_loop(0, LOOP, lambda _, v: body(lib, v) / 8, u))

            lax_loop, ours_loop = (median_call(looped(lib), x) / LOOP for lib in (jax.lax, pj))
            print(f"{name:14}{elems * 4:>8}{floor * 1e6:>9.1f}{lax_t * 1e6:>9.1f}{ours_t * 1e6:>9.1f}"
                  f"{(ours_t - lax_t) * 1e6:>9.1f}{lax_loop * 1e6:>10.1f}{ours_loop * 1e6:>12.1f}")


if __name__ == "__main__":
    main()
