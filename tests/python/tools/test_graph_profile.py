"""bench/graph_profile.py's trace summary without a GPU: the kernels of each
stream in start order, their median duration, period and start skew over the
last calls, filtered by name and threads per block."""

import pytest
from bench_scripts import bench_script

HEADER = "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,Strm,Name\n"


@pytest.fixture(scope="module")
def graph_profile():
    with bench_script("graph_profile") as module:
        yield module


def trace(tmp_path, rows: list[tuple[int, int, int, int, str]]) -> str:
    path = tmp_path / "trace.csv"
    lines = [f"{start},{dur},0,1,1,1,{block},1,1,32,{stream},{name}\n" for start, dur, block, stream, name in rows]
    path.write_text("Generating SQLite file\nProcessing [trace.sqlite]\n\n" + HEADER + "".join(lines))
    return str(path)


def test_durations_periods_and_skews_of_the_last_calls(graph_profile, tmp_path):
    rows = [(0, 900, 32, 7, "purlin_latency_direct"), (100, 800, 32, 8, "purlin_latency_direct"),  # dropped
            (4000, 2000, 32, 8, "purlin_latency_direct"), (1000, 2000, 32, 7, "purlin_latency_direct"),
            (1500, 2100, 32, 8, "purlin_latency_direct"), (4200, 2100, 32, 7, "purlin_latency_direct"),
            (5000, 100, 128, 8, "purlin_latency_direct"), (5100, 50, 32, 7, "other_kernel")]
    got = graph_profile.summarize_trace(trace(tmp_path, rows), "purlin_", 32, 2)
    # Stream 7: 1000, 4200; stream 8: 1500, 4000. Periods 3200 and 2500, skews 500 and 200.
    assert got == ("purlin_* on 2 streams, last 2 each: duration 2.05 us, period 2.85 us, "
                   "start skew 0.35 us (medians)")
    every_block = graph_profile.summarize_trace(trace(tmp_path, rows), "purlin_", 0, 3)
    assert every_block.startswith("purlin_* on 2 streams, last 3 each:")


def test_no_matching_kernel(graph_profile, tmp_path):
    path = trace(tmp_path, [(0, 10, 32, 7, "other_kernel")])
    assert graph_profile.summarize_trace(path, "purlin_", 0, 20) == f"no kernel named purlin_* in {path}"
