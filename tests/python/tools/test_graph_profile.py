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
                   "start skew 0.35 us (medians); a stream's median duration 2.05-2.05 us")
    every_block = graph_profile.summarize_trace(trace(tmp_path, rows), "purlin_", 0, 3)
    assert every_block.startswith("purlin_* on 2 streams, last 3 each:")


def test_each_streams_own_median_duration(graph_profile, tmp_path):
    # Uncoupled ranks (their waits taken out): stream 9 moves its share more slowly than stream 7.
    rows = [(k * 5000 + s, d, 512, s, "purlin_throughput") for k in range(3)
            for s, d in ((7, 3000 + 10 * k), (9, 4000 + 10 * k))]
    got = graph_profile.summarize_trace(trace(tmp_path, rows), "purlin_", 512, 3)
    assert got.endswith("duration 3.51 us, period 5.00 us, start skew 0.00 us (medians); "
                        "a stream's median duration 3.01-4.01 us")


def test_no_matching_kernel(graph_profile, tmp_path):
    path = trace(tmp_path, [(0, 10, 32, 7, "other_kernel")])
    assert graph_profile.summarize_trace(path, "purlin_", 0, 20) == f"no kernel named purlin_* in {path}"


NCU_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
              '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n')


def ncu_csv(tmp_path, graphs: list[tuple[str, dict[str, str]]]) -> str:
    path = tmp_path / "ncu.csv"
    lines = ['==PROF== Connected to process 1\n', NCU_HEADER]
    for i, (name, metrics) in enumerate(graphs):
        for metric, value in metrics.items():
            lines.append(f'"{i}","1","python3","127.0.0.1","{name}","1","13","(32, 1, 1)","(1, 1, 1)","0","9.0",'
                         f'"Command line profiler metrics","{metric}","inst","{value}"\n')
    path.write_text("".join(lines))
    return str(path)


def test_ncu_graphs_per_rank_and_call(graph_profile, tmp_path):
    path = ncu_csv(tmp_path, [
        ("void at::elementwise_kernel", {"smsp__inst_executed.sum": "201"}),  # not a graph: left out
        ("graph", {"smsp__inst_executed.sum": "28,400", "lts__t_sectors_srcunit_tex_op_write.sum": "120"}),
        ("graph", {"smsp__inst_executed.sum": "27,600", "lts__t_sectors_srcunit_tex_op_write.sum": "120"}),
        ("graph", {"smsp__inst_executed.sum": "9,600", "lts__t_sectors_srcunit_tex_op_write.sum": "80"})])
    assert graph_profile.summarize_ncu(path, 40, (20000, 30000)).splitlines() == [
        "2 graph workloads, per rank and call (medians, / 40):",
        "  lts__t_sectors_srcunit_tex_op_write.sum: 3.0", "  smsp__inst_executed.sum: 700.0"]
    assert graph_profile.summarize_ncu(path, 40).splitlines()[0].startswith("3 graph workloads")
    assert graph_profile.summarize_ncu(path, 40, (1, 2)) == f"no graph workload in {path} with 1-2 warp instructions"
    (tmp_path / "empty.csv").write_text("==PROF== nothing profiled\n")
    assert graph_profile.summarize_ncu(str(tmp_path / "empty.csv"), 40) == f"no ncu metrics in {tmp_path / 'empty.csv'}"


@pytest.mark.parametrize("argv", [["--ncu", "x.csv"], ["--ncu", "x.csv", "--per-graph", "40", "--insts", "5"],
                                  ["--ncu", "x.csv", "--per-graph", "40", "--insts", "a:b"]])
def test_ncu_usage_errors(graph_profile, argv, capsys):
    with pytest.raises(SystemExit) as e:
        graph_profile.main(argv)
    assert e.value.code == 2 and "--ncu needs --per-graph N" in capsys.readouterr().err


def test_torch_profiler_kernels_read_back_as_a_trace(graph_profile, tmp_path):
    """--timeline's table (from torch.profiler's chrome trace, where nsys is missing) is one summarize_trace reads."""
    events = [{"cat": "kernel", "name": "purlin_throughput_copy", "ts": 10.0 + 5 * k + s * 0.5, "dur": 3.0,
               "args": {"block": [512, 1, 1], "stream": 7 + s}} for k in range(3) for s in range(2)]
    events.append({"cat": "cpu_op", "name": "aten::copy_", "ts": 1.0, "dur": 1.0})
    events.append({"cat": "kernel", "name": "other_kernel", "ts": 2.0, "dur": 1.0, "args": {"block": [32, 1, 1],
                                                                                          "stream": 7}})
    path = str(tmp_path / "timeline.csv")
    graph_profile.write_trace(events, path)
    assert graph_profile.summarize_trace(path, "purlin_", 512, 3) == (
        "purlin_* on 2 streams, last 3 each: duration 3.00 us, period 5.00 us, start skew 0.50 us (medians); "
        "a stream's median duration 3.00-3.00 us")
    assert graph_profile.summarize_trace(path, "other", 0, 3).startswith("other* on 1 streams, last 1 each")


def test_steps_taken_out_of_the_generated_kernel(graph_profile):
    from purlin.compile import compile_collective

    def program():
        # A direct pull: its data (consume), free (drain) and ready waits, and signals (notify, finish).
        return compile_collective("all_reduce", 8, "bf16", "sum", 1 << 14, arch="sm_90", symmetric=True,
                                  ranks_per_device=8, sms=132, lowering="regime=throughput strategy=direct").cuda

    full = program().source(1).text
    for kinds, gone, kept in [(["data"], ["consume<"], ["drain<", "wait_ready<", "notify<", "finish<"]),
                              (["free"], ["drain<"], ["consume<", "wait_ready<"]),
                              (["ready"], ["wait_ready<"], ["consume<", "drain<", "notify<"]),
                              (["waits", "signals"], ["drain<", "wait_ready<", "notify<", "finish<"], ["consume<"])]:
        p = program()
        taken = graph_profile.without_steps(p, 1, graph_profile.step_kinds(",".join(kinds)))
        text = p.source(1).text
        assert taken == sum(full.count(f"  {c}") for c in gone) > 0, kinds
        assert not any(c in text for c in gone) and all(c in text for c in kept), kinds
        assert "advance(k," in text and "follow_previous(p);" in text


@pytest.mark.parametrize("without, error", [
    ("data,nothing", "--without takes data, free, ready, signals, waits, got 'data,nothing'"),
    ("signals", "--without signals takes the waits out too"),
    ("signals,free", "--without signals takes the waits out too")])
def test_steps_that_would_hang_or_do_not_exist_are_refused(graph_profile, without, error, capsys):
    with pytest.raises(SystemExit) as e:
        graph_profile.main(["--without", without])
    assert e.value.code == 2 and error in capsys.readouterr().err
    assert graph_profile.step_kinds("free,ready,signals") == ["free", "ready", "signals"]


def test_a_lowering_given_is_the_one_timed(graph_profile):
    """--lowering's options reach the kernel over the placement's: the staged protocol, where the
    cost model would push in place."""
    _, default = graph_profile.compile_for("all_gather", 8, 1 << 17, "", "sm_90", 132)
    _, staged = graph_profile.compile_for("all_gather", 8, 1 << 17, "symmetric=false regime=throughput", "sm_90", 132)
    assert "abi::Moves::Staging" not in default.cuda.source(1).text
    assert "abi::Moves::Staging" in staged.cuda.source(2).text and not staged.plan.symmetric
    with pytest.raises(ValueError, match="nonsense"):
        graph_profile.compile_for("all_gather", 8, 1 << 17, "nonsense=1", "sm_90", 132)
