"""Which default one-GPU kernels launch as programmatic dependents, without a GPU: every rank of the
world on one GPU of `--sms` SMs, the cost model's default lowering of each collective and size, its
registers from ptxas (`nvcc -Xptxas -v`, the CUDA toolkit's; NVRTC's may differ by a few), the blocks
an SM then holds, and whether two grids of every rank fit (the runtime's rule for the programmatic
launch, csrc/host/cuda/context.cpp check_devices).

    python bench/residency.py [--worlds 2,4,8] [--sizes 1048576,16777216] [--sms 132]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from purlin.compile import compile_collective
from purlin.cuda import nvrtc

COLLECTIVES = {"all_gather": None, "reduce_scatter": "sum", "all_reduce": "sum", "all_to_all": None}
THREADS_PER_SM, REGISTERS_PER_SM, SMEM_PER_SM, BLOCKS_PER_SM = 2048, 65536, 228 * 1024, 32
# Registers are allocated per warp in units of 256, shared memory per block with 1 KiB reserved.
REGISTER_UNIT, SMEM_RESERVED = 256, 1024


def registers(text: str, workdir: Path) -> int:
    src = workdir / "kernel.cu"
    src.write_text(text)
    run = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "--expt-relaxed-constexpr",
                          "-diag-suppress=177", f"-I{nvrtc.INCLUDE_DIR}", "-DNDEBUG", "-Xptxas", "-v",
                          "-o", str(workdir / "kernel.cubin"), str(src)], capture_output=True, text=True)
    if run.returncode:
        raise RuntimeError(f"nvcc failed:\n{run.stderr}")
    return max(int(r) for r in re.findall(r"Used (\d+) registers", run.stderr))


def blocks_per_sm(threads: int, regs: int, smem: int) -> int:
    warp_regs = -(-regs * 32 // REGISTER_UNIT) * REGISTER_UNIT
    fits = min(THREADS_PER_SM // threads, REGISTERS_PER_SM // (warp_regs * (threads // 32)), BLOCKS_PER_SM)
    return min(fits, SMEM_PER_SM // (smem + SMEM_RESERVED)) if smem else fits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worlds", default="2,4,8")
    ap.add_argument("--sizes", default="1048576,16777216", help="bytes of the larger per-rank buffer")
    ap.add_argument("--sms", type=int, default=132)
    args = ap.parse_args(argv)
    print(f"{'collective':>15} {'world':>5} {'bytes':>9} {'regime':>10} {'grid':>4} {'threads':>7} {'smem':>6} "
          f"{'regs':>4} {'per SM':>6} {'blocks':>6} {'room':>5} {'twice':>5}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, op in COLLECTIVES.items():
            for world in map(int, args.worlds.split(",")):
                for nbytes in map(int, args.sizes.split(",")):
                    elems = nbytes // 2  # bf16
                    count = elems if name == "all_reduce" else elems // world
                    program = compile_collective(name, world, "bf16", op, count, arch="sm_90", symmetric=True,
                                                 ranks_per_device=world, sms=args.sms).cuda
                    src = program.source(program.blocks_per_sm(world, args.sms))
                    regs = registers(src.text, Path(tmp))
                    per_sm = blocks_per_sm(src.threads, regs, src.smem)
                    need, room = world * src.grid, args.sms * per_sm
                    print(f"{name:>15} {world:>5} {nbytes:>9} {program.kernel.regime.data.value:>10} {src.grid:>4} "
                          f"{src.threads:>7} {src.smem:>6} {regs:>4} {per_sm:>6} "
                          f"{need:>6} {room:>5} {'yes' if 2 * need <= room else 'no':>5}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
