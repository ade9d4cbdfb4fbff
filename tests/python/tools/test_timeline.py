"""bench/latency_probe.py's timeline variant and bench/timeline.py without a
GPU: the stamps go at the kernel's entry, after its wait for the work ahead,
after the frame and after every step of a generated kernel, one printf per
block for each of two calls, and the summary groups a rank's blocks by role
per call and sets one call's end beside the next one's entry and wait."""

import re

import pytest
from bench_scripts import bench_script

from purlin.compile import compile_collective

@pytest.fixture(scope="module")
def probe():
    with bench_script("latency_probe") as module:
        yield module


@pytest.fixture(scope="module")
def timeline():
    with bench_script("timeline") as module:
        yield module


def test_the_timeline_variant_stamps_entry_wait_and_every_step_and_prints_two_calls(probe):
    program = compile_collective("all_reduce", 4, "bf16", "sum", 1 << 20, symmetric=True, ranks_per_device=4,
                                 sms=132).cuda
    src = program.source(program.blocks_per_sm(4, 132))
    text = probe._timeline(src.text, src.name)
    lines = text.splitlines()
    steps = [i for i, line in enumerate(lines) if line.strip().startswith(probe.STEPS)]
    assert steps and all(lines[i + 1].strip() == "stamp();" for i in steps)
    # One at entry, one after the wait for the work ahead, one after the frame.
    assert text.count("stamp();") == len(steps) + 3
    body = lines.index(next(line for line in lines if "auto stamp = " in line))
    assert lines[body + 1].strip() == "stamp();" and body < text[:text.index("follow_previous(")].count("\n")
    waited = next(i for i, line in enumerate(lines) if line.strip().startswith("follow_previous("))
    assert lines[waited + 1].strip() == "stamp();"
    printfs = [line for line in lines if "printf(" in line]
    assert len(printfs) == len(probe.TIMELINE_CALLS)
    assert all(line.count("%llu") == probe.STAMPS for line in printfs)
    step = re.search(r"advance\(k, (v\d+)\);", text).group(1)
    for call in probe.TIMELINE_CALLS:
        assert f"k.epoch == {call}ull * {step}" in text and f'"timeline {call} %d' in text
    assert text.rindex("printf(") < text.index("advance(k,")


def test_the_summary_groups_roles_per_call_and_hands_one_call_to_the_next(timeline):
    lines = [
        "noise",
        "timeline 99 0 0 3 1000 3000 9000 0 0",
        "timeline 99 0 1 2 2000 4000 0",
        "timeline 99 0 2 2 2000 6000",
        "timeline 99 1 0 3 1500 2500 8000",
        "timeline 100 0 0 3 7000 9500 12000",
        "timeline 100 1 0 3 6000 8500 11000",
    ]
    rows = timeline.parse(lines)
    assert rows[(99, 0, 0)] == [1000, 3000, 9000] and rows[(99, 0, 2)] == [2000, 6000]
    out = timeline.summary(rows)
    first = out[1:out.index(next(line for line in out if line.startswith("call 100:")))]
    by_role = {line.split()[0] + ":" + line.split()[1]: line.split()[2:] for line in first}
    assert set(by_role) == {"0:0-0", "0:1-2", "1:0-0"}
    assert by_role["0:1-2"] == ["1.00/1.00", "4.00/5.00"]  # median / latest, us from 1000 ns
    assert by_role["0:0-0"][-1] == "8.00/8.00"
    handover = out[out.index(next(line for line in out if line.startswith("call 99 -> 100"))) + 1:]
    # rank 0: call 99 ends at 9000 ns, call 100 enters at 7000 and its wait returns at 9500.
    assert handover[0].split() == ["0", "8.00", "6.00", "8.50", "0.50"]
    assert handover[1].split() == ["1", "7.00", "5.00", "7.50", "0.50"]
    assert timeline.summary({}) == ["no timeline lines (did the probe reach its timed calls?)"]
