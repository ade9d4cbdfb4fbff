"""Counted ready signals (purlin.cuda.tables.counted_ready): a phase that one
role of several blocks notifies gets a slot per (rank, unit) that each block
adds one to, laid out in the symmetric allocation, and its notifies and
waits are generated so; everything else keeps one slot per rank."""

from __future__ import annotations

import re

import pytest

from purlin.compile import compile_collective, compile_device_counts
from purlin.cuda import abi
from purlin.cuda.tables import build_tables, counted_ready
from purlin.snac import dialect as snac
from purlin.snac.phase_binding import phase_states

COMPOSED = "regime=throughput strategy=composed chunk-bytes=1024 slots=2 blocks=4"


def program(name: str, world: int, count: int, lowering: str = "", **options):
    op = "sum" if "reduce" in name else None
    return compile_collective(name, world, "bf16", op, count, arch="sm_90", lowering=lowering, **options).cuda


@pytest.mark.parametrize("name,world,count,lowering,options,want", [
    ("all_reduce", 4, 1 << 16, COMPOSED, {}, {"reduce": 4, "forward": 4}),
    ("all_gather", 2, 1 << 19, "", {"symmetric": True, "ranks_per_device": 2, "sms": 132}, {"exchange": 64}),
    # The reduce phase's owners notify from a one-block role: one slot per rank (1 MiB a rank: one
    # block an SM of the ranks' share).
    ("all_reduce", 4, 1 << 19, "strategy=composed", {"symmetric": True, "ranks_per_device": 4, "sms": 132},
     {"forward": 31}),
    ("all_reduce", 4, 8, "regime=latency", {}, {}),
], ids=["staged-composed", "push", "pull-then-push", "packets"])
def test_phases_notified_by_a_role_of_several_blocks_count(name, world, count, lowering, options, want):
    cuda = program(name, world, count, lowering, **options)
    assert counted_ready(cuda.kernel) == want
    text = cuda.source(cuda.blocks_per_sm(world, 132) if options else 1).text
    (advance,) = re.findall(r"advance\(k, (v\d+)\);", text)
    phases = [op.sym_name.data for op in cuda.kernel.body.block.ops if isinstance(op, snac.PhaseOp)]
    for index, phase in enumerate(phases):
        notifies = re.findall(rf"notify<(\d+), \w+(, true)?>\(k, {index},", text)
        waits = re.findall(rf"wait_ready<\w+(?:, (\d+))?>\(k, {index}, [^;]*?(, {advance})?\);", text)
        if phase in want:
            assert notifies and all(b == str(want[phase]) and c for b, c in notifies)
            assert waits and all(b == str(want[phase]) and a for b, a in waits)
        else:
            assert not any(c for _, c in notifies) and not any(b or a for b, a in waits)


def test_counted_ready_signals_hold_a_slot_per_rank_and_unit():
    cuda = program("all_reduce", 4, 1 << 16, COMPOSED)
    kernel, world = cuda.kernel, 4
    states = phase_states(kernel, world, None)
    counted, plain = build_tables(kernel, states), build_tables(kernel, states, counted=False)
    assert counted.symmetric_bytes > plain.symmetric_bytes
    words = counted.ranks[0]
    starts = sorted({int(words[abi.GLOBAL_WORDS + world + k * abi.PHASE_WORDS + f])
                     for k in range(int(words[abi.PHASE_COUNT])) for f in (abi.PH_BUFFER, abi.PH_READY, abi.PH_FREE)})
    for k, op in enumerate(op for op in kernel.body.block.ops if isinstance(op, snac.PhaseOp)):
        head = abi.GLOBAL_WORDS + world + k * abi.PHASE_WORDS
        ready, units = int(words[head + abi.PH_READY]), int(words[head + abi.PH_MAX_UNITS])
        assert units > 1
        # Nothing else starts inside the phase's world x units slots.
        assert not [s for s in starts if ready < s < ready + 8 * world * units]
        assert ready + 8 * world * units <= counted.symmetric_bytes


def test_a_kernel_that_reads_its_counts_on_the_device_never_counts():
    coll = compile_device_counts("all_gather_v", 4, "bf16", input_elems=4096, output_elems=16384, arch="sm_90",
                                 lowering=COMPOSED.replace("strategy=composed ", ""))
    assert counted_ready(coll.cuda.kernel)
    text = coll.cuda.source().text
    assert re.findall(r"notify<\d+, \w+(?:, \w+)?>", text) == ["notify<4, true>"]
    assert set(re.findall(r"wait_ready<[^>]*>", text)) == {"wait_ready<true>"}
