"""The chunking rule is written once in Python (purlin/snac/protocol.py's
_chunks, which the PhasePlan cuts units and groups by) and once in C++
(include/purlin/counts_tables.h's chunks, chunk_step and chunk_at, which a
device-counts kernel cuts them by): a small harness compiled here with the
host compiler, from the header as it is in the tree (no rebuild of
purlin._runtime), prints the C++ chunks of every (size, chunk) asked, and
they must be Python's."""

from __future__ import annotations

import os
import random
import shlex
import shutil
import subprocess

import pytest

from purlin.cuda.abi import INCLUDE_DIR
from purlin.snac.protocol import _chunks

HARNESS = r"""
#include <cstdio>
#include "purlin/counts_tables.h"

// Each line "size chunk" in, its chunks' "lo hi" out, then "end".
int main() {
  long long size, chunk;
  while (std::scanf("%lld %lld", &size, &chunk) == 2) {
    const purlin::i64 m = purlin::counts::chunks(size, chunk), step = purlin::counts::chunk_step(size, chunk);
    for (purlin::i64 i = 0; i < m; ++i)
      std::printf("%lld %lld ", i * step, i * step + purlin::counts::chunk_at(size, chunk, i * step));
    std::printf("end\n");
  }
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    """The harness binary; the compiler that builds purlin._runtime (CXX, else c++) builds it."""
    cxx = shlex.split(os.environ.get("CXX", "c++"))
    if shutil.which(cxx[0]) is None:
        pytest.fail(f"no host C++ compiler '{cxx[0]}' (set CXX): purlin._runtime needs one too")
    d = tmp_path_factory.mktemp("chunks")
    (d / "chunks.cpp").write_text(HARNESS)
    subprocess.run([*cxx, "-std=c++17", f"-I{INCLUDE_DIR}", str(d / "chunks.cpp"), "-o", str(d / "chunks")],
                   check=True, capture_output=True, text=True)
    return d / "chunks"


def cpp_chunks(binary, cases: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    out = subprocess.run([str(binary)], input="".join(f"{s} {c}\n" for s, c in cases), check=True,
                         capture_output=True, text=True).stdout.splitlines()
    assert len(out) == len(cases)
    result = []
    for line in out:
        words = line.split()
        assert words[-1] == "end"
        nums = list(map(int, words[:-1]))
        result.append(list(zip(nums[::2], nums[1::2])))
    return result


def test_cpp_chunks_are_pythons(harness):
    rng = random.Random(7)
    cases = [(size, chunk) for size in range(40) for chunk in range(18)]
    # Large slices cut into a few chunks, a chunk past the slice, and odd remainders.
    cases += [(rng.randint(1, 1 << 20), 0) for _ in range(20)]
    cases += [(size, rng.randint(size // 50 + 1, 2 * size)) for size in (rng.randint(1, 1 << 20) for _ in range(200))]
    cases += [(1 << 40, 1 << 38), ((1 << 40) + 3, 1 << 38)]
    for (size, chunk), got in zip(cases, cpp_chunks(harness, cases), strict=True):
        assert got == _chunks(size, chunk), f"size {size}, chunk {chunk}"
