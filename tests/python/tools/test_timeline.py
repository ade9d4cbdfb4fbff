"""bench/latency_probe.py's timeline variant and bench/timeline.py without a
GPU: the stamps go at the kernel's entry, after its wait for the work ahead,
after the frame and after every step of a generated kernel, one printf per
block for one call beside its last stamp in the call before, and the summary
groups a rank's blocks by role and sets the call before's end beside this
one's entry and wait."""

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


def test_the_timeline_variant_stamps_entry_wait_and_every_step_and_prints_one_call(probe):
    program = compile_collective("all_reduce", 4, "bf16", "sum", 1 << 20, symmetric=True, ranks_per_device=4,
                                 sms=132).cuda
    src = program.source(program.blocks_per_sm(4, 132))
    text = probe._timeline(src.text, src.name)
    lines = text.splitlines()
    steps = [i for i, line in enumerate(lines) if line.strip().startswith(probe.STEPS)]
    assert steps and all(lines[i + 1].strip() == "stamp();" for i in steps)
    # One at entry, one after the wait for the work ahead, one after the frame.
    assert text.count("stamp();") == len(steps) + 3
    first = next(i for i, line in enumerate(lines) if "auto stamp = " in line)
    waited = next(i for i, line in enumerate(lines) if line.strip().startswith("follow_previous("))
    assert lines[first + 1].strip() == "stamp();" and first < waited and lines[waited + 1].strip() == "stamp();"
    # Each block's last stamp is kept for the next call, which prints it beside its own.
    assert text.index("__device__ unsigned long long probe_end[") < text.index('extern "C"')
    (printf,) = [line for line in lines if "printf(" in line]
    assert printf.count("%llu") == probe.STAMPS + 1
    step = re.search(r"advance\(k, (v\d+)\);", text).group(1)
    assert f"k.epoch == {probe.TIMELINE_CALL}ull * {step}" in text
    assert text.index("printf(") < text.index("] = probe_t[probe_n - 1];") < text.index("advance(k,")


def test_the_summary_groups_roles_and_hands_the_call_before_over(timeline):
    lines = [
        "noise",
        "timeline 0 0 3 500 1000 3000 9000 0 0",
        "timeline 0 1 2 900 2000 4000 0",
        "timeline 0 2 2 700 2000 6000",
        "timeline 1 0 3 400 1500 2500 8000",
    ]
    rows = timeline.parse(lines)
    assert rows[(0, 0)] == (500, [1000, 3000, 9000]) and rows[(0, 2)] == (700, [2000, 6000])
    out = timeline.summary(rows)
    handover = out.index(next(line for line in out if line.startswith("handover")))
    by_role = {line.split()[0] + ":" + line.split()[1]: line.split()[2:] for line in out[1:handover]}
    assert set(by_role) == {"0:0-0", "0:1-2", "1:0-0"}
    assert by_role["0:1-2"] == ["1.00/1.00", "4.00/5.00"]  # median / latest, us from 1000 ns
    assert by_role["0:0-0"][-1] == "8.00/8.00"
    # rank 0: the call before ended at 900 ns (its latest block), this one entered at 1000, waited till 6000.
    assert out[handover + 1].split() == ["0", "-0.10", "0.00", "5.00", "5.10"]
    assert out[handover + 2].split() == ["1", "-0.60", "0.50", "1.50", "2.10"]
    assert timeline.summary({}) == ["no timeline lines (did the probe reach its timed call?)"]
