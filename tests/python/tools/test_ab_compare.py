"""bench/ab_compare.py on made-up summaries: per-point ratios, the geometric
mean, points only one run has, the --only-beyond filter, and several runs a
side (medians, and which points moved beyond the runs' own spread)."""

import json
import sys

import pytest
from bench_scripts import bench_script


def row(world, collective, nbytes, us):
    return {"world": world, "collective": collective, "bytes": nbytes, "us": us}


def summary(latency, throughput=()):
    return {"latency": [row(*r) for r in latency], "throughput": [row(*r) for r in throughput]}


@pytest.fixture
def compare(tmp_path, monkeypatch, capsys):
    def run(a, b, *flags):
        paths = []
        for name, runs in (("a", a), ("b", b)):
            names = []
            for k, s in enumerate(runs if isinstance(runs, list) else [runs]):
                p = tmp_path / f"{name}{k}.json"
                p.write_text(json.dumps(s))
                names.append(str(p))
            paths.append(",".join(names))
        monkeypatch.setattr(sys, "argv", ["ab_compare.py", *paths, *flags])
        with bench_script("ab_compare") as module:
            assert module.main() == 0
        return capsys.readouterr().out

    return run


def test_ratios_and_their_geometric_mean(compare):
    out = compare(summary([(2, "all_reduce", 16, 2.0), (4, "all_reduce", 16, 4.0), (8, "all_gather", 16, 5.0)]),
                  summary([(2, "all_reduce", 16, 1.0), (4, "all_reduce", 16, 8.0), (3, "all_gather", 12, 5.0)]))
    assert "    2       all_reduce         16      2.00      1.00  0.500" in out
    assert "    4       all_reduce         16      4.00      8.00  2.000" in out
    assert "latency: 2 points, B / A geometric mean 1.000, least 0.500, most 2.000" in out
    assert "latency: only in A: 8 all_gather 16 B" in out
    assert "latency: only in B: 3 all_gather 12 B" in out
    assert "throughput: no point in both runs" in out


def test_only_beyond_lists_the_points_that_moved(compare):
    out = compare(summary([], [(2, "all_gather", 1 << 20, 10.0), (2, "all_to_all", 1 << 20, 10.0)]),
                  summary([], [(2, "all_gather", 1 << 20, 10.2), (2, "all_to_all", 1 << 20, 8.0)]),
                  "--only-beyond", "0.05")
    assert "all_to_all" in out and "all_gather    1048576" not in out
    assert "throughput: 2 points, B / A geometric mean 0.903" in out


def test_a_failed_point_is_only_in_the_side_that_timed_it(compare):
    out = compare(summary([(2, "all_reduce", 16, None), (4, "all_reduce", 16, 4.0)]),
                  summary([(2, "all_reduce", 16, 3.0), (4, "all_reduce", 16, 4.0)]))
    assert "latency: 1 points, B / A geometric mean 1.000" in out
    assert "latency: only in B: 2 all_reduce 16 B" in out


def test_rounds_take_medians_and_mark_what_their_spread_covers(compare):
    a = [summary([(8, "all_to_all", 1 << 20, 21.0), (5, "all_gather", 65530, 6.0)]),
         summary([(8, "all_to_all", 1 << 20, 18.0), (5, "all_gather", 65530, 5.9)]),
         summary([(8, "all_to_all", 1 << 20, 20.0), (5, "all_gather", 65530, 6.1)])]
    b = [summary([(8, "all_to_all", 1 << 20, 17.9), (5, "all_gather", 65530, 4.8)]),
         summary([(8, "all_to_all", 1 << 20, 19.0), (5, "all_gather", 65530, 4.9)])]
    out = compare(a, b)
    assert "latency: B / A per point (medians of the runs)" in out
    # all_to_all: A's runs span 21 / 18, wider than 18.45 / 20: within, marked.
    assert "    8       all_to_all    1048576     20.00     18.45  0.922  1.167 ~" in out
    # all_gather: 4.85 / 6.0 is beyond both sides' spreads (6.1 / 5.9, 4.9 / 4.8).
    assert "    5       all_gather      65530      6.00      4.85  0.808  1.034\n" in out
    assert "; 1 beyond their runs' spread" in out


def test_a_missing_run_file_is_an_error(tmp_path, monkeypatch, capsys):
    present = tmp_path / "a.json"
    present.write_text(json.dumps(summary([])))
    monkeypatch.setattr(sys, "argv", ["ab_compare.py", f"{present},{tmp_path / 'nowhere.json'}", str(present)])
    with bench_script("ab_compare") as module, pytest.raises(SystemExit):
        module.main()
    err = capsys.readouterr().err
    assert "cannot read a run's summary" in err and "nowhere.json" in err
