"""The benchmark's formulas and report, without GPUs."""

import pytest

from purlin.tools import bench


def test_busbw_factors_follow_nccl_tests():
    assert bench.busbw_factor("all_reduce", 2) == 1.0
    assert bench.busbw_factor("all_reduce", 8) == pytest.approx(1.75)
    for coll in ("all_gather", "reduce_scatter", "all_to_all", "all_gather_v"):
        assert bench.busbw_factor(coll, 8) == pytest.approx(0.875)


def test_row_from_latency():
    row = bench.make_row("all_reduce", "purlin", 1 << 30, 3243.53, 2)
    assert row.algbw == pytest.approx((1 << 30) / 3243.53e-6 / 1e9, abs=0.01)
    assert row.busbw == row.algbw
    gather = bench.make_row("all_gather", "nccl", 1 << 20, 10.0, 2)
    assert gather.busbw == pytest.approx(gather.algbw / 2, abs=0.01)
    failed = bench.make_row("all_gather", "purlin", 16, None, 2, "wrong result")
    assert (failed.us, failed.algbw, failed.busbw, failed.note) == (None, None, None, "wrong result")


def test_sizes_span_16_bytes_to_1_gibibyte():
    assert bench.SIZES[0] == 16 and bench.SIZES[-1] == 1 << 30
    assert bench.SIZES == sorted(set(bench.SIZES))


@pytest.mark.parametrize("total,world", [(8, 2), (9, 2), (100, 3), (1, 4), (0, 2)])
def test_uneven_split_adds_up(total, world):
    counts = bench._split(total, world)
    assert len(counts) == world and sum(counts) == total and min(counts) >= 0
    if total >= 2 * world:
        assert len(set(counts)) > 1


def test_table_lists_every_size_and_implementation():
    rows = [
        bench.make_row("all_reduce", "purlin", 16, 4.0, 2),
        bench.make_row("all_reduce", "nccl", 16, 9.3, 2),
        bench.make_row("all_reduce", "nccl", 1 << 20, 18.0, 2),
        bench.make_row("all_gather", "purlin", 1 << 30, None, 2, "timeout"),
    ]
    table = bench.format_table(rows)
    lines = table.splitlines()
    assert lines[0] == "== all_reduce"
    assert "purlin us" in lines[1] and "nccl busbw" in lines[1]
    assert lines[2].split() == ["16", "B", "4.00", "0.0", "9.30", "0.0"]
    assert lines[3].split()[:4] == ["1", "MiB", "-", "-"]
    assert "== all_gather" in table and "1 GiB" in table


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    rows = [bench.make_row(c, i, s, 5.0 + s / 1e6, 2) for c in ("all_reduce", "all_gather")
            for i in ("purlin", "nccl") for s in (16, 1 << 20)]
    path = tmp_path / "bench.png"
    bench.plot(rows, str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

