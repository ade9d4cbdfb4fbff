"""bench/residency.py: the blocks an SM holds, and its table of the default kernels (with nvcc)."""

import shutil

import pytest
from bench_scripts import bench_script


@pytest.fixture(scope="module")
def residency():
    with bench_script("residency") as module:
        yield module


@pytest.mark.parametrize("threads,regs,smem,want", [
    (512, 80, 0, 1),       # 80 registers: 40 KiB a block of the SM's 64 Ki
    (512, 64, 0, 2),
    (512, 32, 0, 4),       # threads bound it
    (32, 40, 0, 32),       # the SM's block limit
    (128, 32, 32768, 6),   # shared memory bounds it (32 KiB + 1 KiB reserved a block)
])
def test_blocks_an_sm_holds(residency, threads, regs, smem, want):
    assert residency.blocks_per_sm(threads, regs, smem) == want


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs the CUDA toolkit's nvcc")
def test_the_table_says_whether_two_grids_fit(residency, capsys):
    assert residency.main(["--worlds", "2", "--sizes", "16"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [r[0] for r in rows] == list(residency.COLLECTIVES)
    for r in rows:
        blocks, room, twice = int(r[9]), int(r[10]), r[11]
        assert r[3] == "latency" and twice == ("yes" if 2 * blocks <= room else "no")
