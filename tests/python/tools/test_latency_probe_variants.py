"""bench/latency_probe.py's source edits without a GPU: each cut-down variant
changes only what it names in a generated kernel."""

import pytest
from bench_scripts import bench_script

from purlin.compile import compile_collective


@pytest.fixture(scope="module")
def probe():
    with bench_script("latency_probe") as module:
        yield module


def source(collective: str, world: int, count: int):
    op = "sum" if "reduce" in collective else None
    program = compile_collective(collective, world, "bf16", op, count, symmetric=True, ranks_per_device=world,
                                 sms=132).cuda
    return program.source(program.blocks_per_sm(world, 132))


def test_notify_every_block_drops_the_count(probe):
    src = source("all_gather", 2, 1 << 19)  # beyond its packets
    assert "notify<64, true, true>" in src.text
    wait = next(ln for ln in src.text.splitlines() if "wait_ready<true, 64>" in ln)
    edited = probe.VARIANTS["notify every block"](src.text, src.name)
    assert "notify<64," not in edited and "notify<1, true>" in edited and "wait_ready<true, 64>" not in edited
    plain = wait.replace("wait_ready<true, 64>", "wait_ready<true>").replace(", v7);", ");")
    assert edited == src.text.replace("notify<64, true, true>", "notify<1, true>").replace(wait, plain)


def test_prefetch_input_asks_before_the_frame(probe):
    src = source("all_reduce", 2, 8)
    edited = probe.VARIANTS["prefetch input"](src.text, src.name)
    hint, frame = edited.index("prefetch.global.L1"), edited.index("  K k(")
    assert hint < frame and edited.count("prefetch.global.L1") == 1
    assert edited.replace(edited[edited.rindex("\n", 0, hint) + 1:edited.index("\n", hint) + 1], "") == src.text


def test_rank_tables_compile_each_rank_s_tables_in(probe):
    program = compile_collective("all_gather", 3, "bf16", None, 300, symmetric=True, ranks_per_device=3,
                                 sms=132).cuda
    src = probe.BUILT["rank tables"](program, program.blocks_per_sm(3, 132))
    assert probe.VARIANTS["rank tables"] is None  # a collective still: the probe checks its results
    assert "switch (p.rank)" in src.text and all(f"case {r}:" in src.text for r in range(3))
    words = [int(w) for w in program.tables.ranks[2]]
    assert f"kRank2Words[{len(words)}] = {{{', '.join(f'{w}ll' for w in words)}}};" in src.text
    assert src.shared_tables == program.shared_tables


def test_rank_tables_global_reads_no_tables_into_shared_memory(probe):
    program = compile_collective("all_reduce", 2, "bf16", "sum", 8, symmetric=True, ranks_per_device=2,
                                 sms=132).cuda
    assert program.shared_tables
    src = probe.BUILT["rank tables global"](program, program.blocks_per_sm(2, 132))
    assert probe.VARIANTS["rank tables global"] is None
    assert not src.shared_tables and "constexpr bool kSharedTables = false;" in src.text
    assert "switch (p.rank)" in src.text
