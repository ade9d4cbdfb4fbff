"""bench/ab_compare.py on two made-up summaries: per-point ratios, the
geometric mean, points only one run has, and the --only-beyond filter."""

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
        for name, s in (("a", a), ("b", b)):
            p = tmp_path / f"{name}.json"
            p.write_text(json.dumps(s))
            paths.append(str(p))
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
