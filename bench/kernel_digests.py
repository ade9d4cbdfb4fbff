"""What `bench/one_gpu.py` would run at each point, as digests: per world,
collective and size (purlin-bench's bytes, the V forms at even counts as
one_gpu.py runs them, every rank sharing one GPU of --sms
multiprocessors), the generated kernel's grid, the blocks an SM holds for all
ranks' grids, and short digests of its source and of its ranks' tables, or why
the lowering refused the point (exit status 1). No GPU.

    PYTHONPATH=TREE python bench/kernel_digests.py --worlds 8 --sizes 1048576 > tree.txt

Run it on two trees and diff the outputs: a point whose line is the same in both
runs the same kernel in both, so whatever `bench/gpu_call.sh ab` measures there
is the machine's, not the change's (bench/results/1xh100-session-12-07f).
"""

from __future__ import annotations

import argparse
import hashlib
import sys

from purlin.tools import bench

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
               "all_gather_v", "reduce_scatter_v", "all_to_all_v")
SIZES = (16, 1024, 65536, 1 << 20, 16 << 20, 256 << 20)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def point(coll: str, world: int, nbytes: int, sms: int, arch: str, lowering: str) -> str:
    """One line: the point, then its kernel's grid, blocks an SM, source and tables digests."""
    from purlin.compile import compile_collective

    case, _ = bench._case(coll, nbytes, world, even=True)  # one_gpu.py runs the V forms --even-counts
    compiled = compile_collective(coll, world, "bf16", case.op, case.count, case.counts, arch=arch,
                                  lowering=lowering, symmetric=True, ranks_per_device=world, sms=sms)
    kernel = compiled.cuda
    per_sm = kernel.blocks_per_sm(world, sms)
    tables = repr([t.tolist() for t in kernel.tables.ranks])
    return (f"{world} {coll} {bench.size_run(coll, nbytes, world, even=True)} grid {kernel.grid} blocks/SM {per_sm} "
            f"source {digest(kernel.source(per_sm).text)} tables {digest(tables)}")


def _list(text: str, what: str, parse=int) -> list:
    try:
        return [parse(x) for x in text.split(",") if x]
    except ValueError:
        raise SystemExit(f"kernel_digests: {what} takes a comma-separated list, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worlds", default="2,3,4,5,6,7,8")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="bytes, comma-separated")
    ap.add_argument("--collectives", default=",".join(COLLECTIVES))
    ap.add_argument("--sms", type=int, default=132, help="the GPU's multiprocessors (H100 SXM: 132)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--lowering", default="", help="convert-coll-to-snac options instead of the cost model's")
    args = ap.parse_args(argv)
    worlds, sizes = _list(args.worlds, "--worlds"), _list(args.sizes, "--sizes")
    colls = _list(args.collectives, "--collectives", str)
    unknown = sorted(set(colls) - set(COLLECTIVES))
    if unknown:
        ap.error(f"unknown collective(s) {', '.join(unknown)}; expected some of {', '.join(COLLECTIVES)}")
    if args.sms < 1 or any(w < 2 for w in worlds) or any(n < 1 for n in sizes):
        ap.error("--sms and --sizes take positive numbers, --worlds worlds of 2 or more")
    from xdsl.utils.exceptions import PassFailedException, VerifyException

    failed = 0
    for world in worlds:
        for coll in colls:
            for nbytes in sizes:
                try:
                    line = point(coll, world, nbytes, args.sms, args.arch, args.lowering)
                except (PassFailedException, VerifyException, ValueError) as e:  # what the lowering refuses
                    failed += 1
                    line = f"{world} {coll} {bench.size_run(coll, nbytes, world, even=True)} failed: {e}"
                print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
