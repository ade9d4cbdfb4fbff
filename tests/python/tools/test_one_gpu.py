"""bench/one_gpu.py without a GPU: the floors, ratios and goals of both
sections, the no-collapse check, and a whole run against a stand-in floor
program, least-traffic module and purlin-bench."""

import json
import os
import stat
from dataclasses import asdict

import pytest
from bench_scripts import bench_script

from purlin.tools import bench

MiB = 1 << 20


@pytest.fixture(scope="module")
def one_gpu():
    with bench_script("one_gpu") as module:
        yield module


# Stand-in least traffic: microseconds per MiB by fixed collective; a V form has none of its own.
US_PER_MIB = {"all_reduce": 8.0, "all_gather": 2.0, "reduce_scatter": 3.0, "all_to_all": 5.0}


def least_traffic_us(coll: str, world: int, nbytes: int) -> float:
    return US_PER_MIB[coll] * world * nbytes / MiB


FLOOR = {(2, 16): 2.0, (2, 1024): 2.5, (3, 16): 3.0, (4, 16): 4.0}


def throughput_row(one_gpu, world, coll, nbytes, us, failure=""):
    [row] = one_gpu.throughput_rows([one_gpu.Measured(world, coll, nbytes, us, failure)], FLOOR, least_traffic_us)
    return row


@pytest.mark.parametrize("nbytes, goal", [(MiB, 2.0), (16 * MiB, 1.15), (256 * MiB, 1.15)])
def test_throughput_goal_at_each_size(one_gpu, nbytes, goal):
    floor = FLOOR[(2, 16)] + least_traffic_us("all_gather", 2, nbytes)
    met = throughput_row(one_gpu, 2, "all_gather", nbytes, floor * goal)
    missed = throughput_row(one_gpu, 2, "all_gather", nbytes, floor * (goal + 0.01))
    assert met["floor_us"] == pytest.approx(floor)
    assert met["least_traffic_us"] == pytest.approx(least_traffic_us("all_gather", 2, nbytes))
    assert (met["ratio"], met["goal"], met["verdict"]) == (pytest.approx(goal), goal, "met")
    assert (missed["ratio"], missed["verdict"]) == (pytest.approx(goal + 0.01), "missed")


def test_throughput_rows_outside_the_goals(one_gpu):
    other = throughput_row(one_gpu, 3, "all_reduce", 16 * MiB, 1000.0)
    assert other["ratio"] == pytest.approx(1000.0 / (3.0 + 8.0 * 3 * 16))
    assert other["verdict"] == "(not a goal world)"
    assert throughput_row(one_gpu, 2, "all_reduce", 4 * MiB, 100.0)["verdict"] == "(no goal at this size)"
    no_floor = throughput_row(one_gpu, 8, "all_reduce", MiB, 100.0)
    assert (no_floor["floor_us"], no_floor["ratio"], no_floor["verdict"]) == (None, None, "(no floor at this size)")
    failed = throughput_row(one_gpu, 4, "all_to_all", MiB, None, "all_to_all purlin 1 MiB: wrong result")
    assert (failed["us"], failed["ratio"]) == (None, None)
    assert failed["verdict"] == "failed: all_to_all purlin 1 MiB: wrong result"


@pytest.mark.parametrize("v, fixed", [("all_gather_v", "all_gather"), ("reduce_scatter_v", "reduce_scatter"),
                                      ("all_to_all_v", "all_to_all")])
def test_v_forms_have_their_fixed_forms_traffic(one_gpu, v, fixed):
    mine, theirs = throughput_row(one_gpu, 4, v, 16 * MiB, 500.0), throughput_row(one_gpu, 4, fixed, 16 * MiB, 500.0)
    assert mine["collective"] == v
    assert (mine["least_traffic_us"], mine["floor_us"]) == (theirs["least_traffic_us"], theirs["floor_us"])


def test_latency_rows_against_the_floor_of_the_size_asked(one_gpu):
    runs = [one_gpu.Measured(2, "all_gather", 16, 2.4), one_gpu.Measured(2, "all_gather", 1024, 3.5),
            one_gpu.Measured(3, "all_gather", 12, 3.0, asked=16), one_gpu.Measured(3, "all_gather", 12, 3.9, asked=16),
            one_gpu.Measured(2, "all_to_all", 65536, 9.0), one_gpu.Measured(9, "all_reduce", 16, 1.0)]
    rows = one_gpu.latency_rows(runs, {**FLOOR, (9, 16): 1.0})
    # Every world 2-8 is a latency goal world; a size rounded down meets the floor of the size asked.
    assert [(r["bytes"], r["floor_us"], r["ratio"], r["verdict"]) for r in rows] == [
        (16, 2.0, pytest.approx(1.2), "met"), (1024, 2.5, pytest.approx(1.4), "missed"),
        (12, 3.0, pytest.approx(1.0), "met"), (12, 3.0, pytest.approx(1.3), "missed"),
        (65536, None, None, "(no floor at this size)"), (16, 1.0, pytest.approx(1.0), "(not a goal world)")]


def series(one_gpu, world, coll, points):
    return [one_gpu.Measured(world, coll, n, us, "" if us else "timed out") for n, us in points]


def test_collapse_detection(one_gpu):
    latency = series(one_gpu, 2, "all_reduce", [(16, 3.0), (1024, 3.2), (65536, 4.0)])
    # 1 MiB to 16 MiB: 16x the bytes in 30x the time, a 1.88x rise per byte; 16 MiB to 256 MiB: 1.49x, allowed.
    throughput = (series(one_gpu, 2, "all_reduce", [(256 * MiB, 23900.0), (MiB, 33.3), (16 * MiB, 1000.0)])
                  + series(one_gpu, 2, "all_gather_v", [(MiB, 10.0), (16 * MiB, 150.0), (256 * MiB, 2400.0)])
                  + series(one_gpu, 4, "all_gather", [(MiB, 20.0), (16 * MiB, None), (256 * MiB, 9000.0)]))
    found = one_gpu.collapses(latency + throughput)
    assert list(found) == [2, 4]
    assert found[2] == ["world 2 all_reduce: time per byte rises 1.88x from 1 MiB (33.30 us) to 16 MiB (1000.00 us)"]
    # A failed size is a violation of its own; the sizes around it are compared with each other.
    assert found[4] == ["world 4 all_gather 16 MiB: failed: timed out",
                        "world 4 all_gather: time per byte rises 1.76x from 1 MiB (20.00 us) to 256 MiB (9000.00 us)"]
    report = one_gpu.format_collapses(found)
    assert report.splitlines()[-2:] == ["world 2: missed", "world 4: missed"]
    clean = one_gpu.collapses(series(one_gpu, 8, "all_to_all", [(16, 5.0), (MiB, 40.0), (16 * MiB, 600.0)]))
    assert clean == {8: []} and one_gpu.format_collapses(clean).splitlines()[-1] == "world 8: met"


def test_measured_takes_purlins_default_rows(one_gpu):
    doc = {"rows": [asdict(bench.make_row("all_gather", "purlin", 16, 3.0, 2)),
                    asdict(bench.make_row("all_gather", "nccl", 16, 1.0, 2)),
                    asdict(bench.make_row("all_gather", "purlin", 1024, None, 2, "no kernel"))],
           "failures": ["all_gather purlin 1 KiB: ProgramError: no kernel"]}
    runs = one_gpu.measured(doc, 2, ["all_gather"], [16, 1024, 65536], "CudaError: launch failed")
    assert runs == [one_gpu.Measured(2, "all_gather", 16, 3.0),
                    one_gpu.Measured(2, "all_gather", 1024, None, "ProgramError: no kernel"),
                    one_gpu.Measured(2, "all_gather", 65536, None, "CudaError: launch failed")]
    # At world 3 bf16 all_gather runs 12 B for 16 asked (three ranks of 2 elements), and remembers what was asked.
    doc3 = {"rows": [asdict(bench.make_row("all_gather", "purlin", 12, 3.5, 3))], "failures": []}
    assert one_gpu.measured(doc3, 3, ["all_gather"], [16]) == [one_gpu.Measured(3, "all_gather", 12, 3.5, asked=16)]


def test_floor_output_is_parsed(one_gpu):
    text = ("empty kernel in a graph: 0.65 us per kernel\n"
            "ideal LL all_reduce, 3 ranks on one GPU,      16 B (f32), 1 x 32 threads: 2.31 us per call\n"
            "ideal LL all_reduce, 3 ranks on one GPU, 1048576 B (f32), 16 x 512 threads: 40.50 us per call\n")
    assert one_gpu.parse_floor(text) == {(3, 16): 2.31, (3, 1048576): 40.5}
    with pytest.raises(SystemExit, match="wrong result"):
        one_gpu.parse_floor(text.replace("2.31 us per call", "2.31 us per call  WRONG RESULT"))


# -- a whole run, the GPU parts stood in for ---------------------------------------------


FLOOR_PROGRAM = """#!/bin/sh
for w in "$@"; do
  for b in 16 1024 65536 1048576; do
    echo "ideal LL all_reduce, $w ranks on one GPU, $b B (f32), 1 x 32 threads: $w.00 us per call"
  done
done
"""

LEAST_TRAFFIC = """
def copy_rate():
    return 2e12


def floor_us(collective, world, nbytes, rate):
    per_rank = {"all_reduce": 2, "all_gather": 1, "reduce_scatter": 1, "all_to_all": 2}[collective]
    return per_rank * world * nbytes / rate * 1e6
"""


@pytest.fixture
def stand_ins(tmp_path, monkeypatch, one_gpu):
    """The floor program and least_traffic.py, and a purlin-bench that writes rows
    without running anything: the all_to_all_v at 16 MiB fails, every other call
    takes 1.5 us plus 1 us per MiB."""
    floor = tmp_path / "floor"
    floor.write_text(FLOOR_PROGRAM)
    floor.chmod(floor.stat().st_mode | stat.S_IXUSR)
    least = tmp_path / "least_traffic.py"
    least.write_text(LEAST_TRAFFIC)
    calls = []

    def fake_bench(argv):
        calls.append(argv)
        opts, variants, words = {}, [], iter(argv)
        for word in words:
            if word == "--lowering":
                variants.append(next(words).partition("=")[0])
            elif word == "--specialise":
                variants += [bench.SPECIALISED, bench.GENERIC]
            elif word not in ("--single-process", "--no-sweep", "--even-counts"):
                opts[word] = next(words)
        world = len(opts["--devices"].split(","))
        rows, failures = [], []
        for coll in opts["--collectives"].split(","):
            for asked in map(int, opts["--sizes"].split(",")):
                # Labelled as purlin-bench labels its rows: by the size it ran.
                nbytes = bench.size_run(coll, asked, world, even=True)
                if (coll, asked) == ("all_to_all_v", 16 * MiB):
                    failures.append(f"{coll} purlin {bench.human(nbytes)}: CollectiveTimeout: timed out")
                    rows.append(bench.make_row(coll, "purlin", nbytes, None, world, "timed out"))
                else:
                    rows.append(bench.make_row(coll, "purlin", nbytes, 1.5 + asked / MiB, world))
                # Variants: reductions refused, copies half the default's time; specialised 0.8 of it,
                # generic 1.2.
                for name in variants:
                    impl = f"purlin-{name}"
                    if name in (bench.SPECIALISED, bench.GENERIC):
                        rows.append(bench.make_row(coll, impl, nbytes, (1.5 + asked / MiB) * SPEED[name], world))
                    elif coll.startswith(("all_reduce", "reduce_scatter")):
                        failures.append(f"{coll} {impl} {bench.human(nbytes)}: ProgramError: reduces")
                        rows.append(bench.make_row(coll, impl, nbytes, None, world, "reduces"))
                    else:
                        rows.append(bench.make_row(coll, impl, nbytes, (1.5 + asked / MiB) / 2, world))
        os.makedirs(opts["--out"], exist_ok=True)
        with open(os.path.join(opts["--out"], "bench.json"), "w") as f:
            json.dump({"world": world, "rows": [asdict(r) for r in rows], "failures": failures}, f)
        return 1 if failures else 0

    monkeypatch.setattr(one_gpu.bench, "main", fake_bench)
    return floor, least, calls


def test_a_whole_run(one_gpu, stand_ins, tmp_path, capsys):
    floor, least, calls = stand_ins
    out = tmp_path / "out"
    assert one_gpu.main(["--floor", str(floor), "--least-traffic", str(least), "--out", str(out),
                         "--worlds", "2,3"]) == 1
    assert sorted(os.listdir(out)) == ["bench.json", "floor.txt", "summary.json", "summary.txt"]
    assert all((out / name).is_file() for name in os.listdir(out))
    assert all("--even-counts" in argv and "--no-sweep" in argv for argv in calls)
    assert [argv[argv.index("--devices") + 1] for argv in calls] == ["0,0", "0,0", "0,0,0", "0,0,0"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["copy_rate"] == 2e12
    assert len(summary["latency"]) == 2 * 4 * 3 and len(summary["throughput"]) == 2 * 7 * 3
    row = next(r for r in summary["throughput"]
               if (r["world"], r["collective"], r["bytes"]) == (2, "all_reduce", 256 * MiB))
    traffic = 2 * 2 * 256 * MiB / 2e12 * 1e6
    assert row["least_traffic_us"] == pytest.approx(traffic)
    assert row["floor_us"] == pytest.approx(2.0 + traffic)
    assert row["ratio"] == pytest.approx((1.5 + 256) / (2.0 + traffic))
    assert row["verdict"] == ("met" if row["ratio"] <= 1.15 else "missed")
    failed = [r for r in summary["throughput"] if r["verdict"].startswith("failed")]
    assert [(r["world"], r["collective"]) for r in failed] == [(2, "all_to_all_v"), (3, "all_to_all_v")]
    assert summary["collapse"]["2"] == {
        "verdict": "missed", "violations": ["world 2 all_to_all_v 16 MiB: failed: CollectiveTimeout: timed out"]}
    assert {r["verdict"] for r in summary["throughput"] if r["world"] == 3} >= {"(not a goal world)"}
    runs = json.loads((out / "bench.json").read_text())["runs"]
    assert [(r["section"], r["world"]) for r in runs] == [("latency", 2), ("throughput", 2), ("latency", 3),
                                                           ("throughput", 3)]
    text = (out / "summary.txt").read_text()
    assert text in capsys.readouterr().out
    assert "world 2: missed" in text and "least-traffic us" in text
    assert (out / "floor.txt").read_text().count("ideal LL all_reduce") == 8


def test_subsets(one_gpu, stand_ins, tmp_path):
    floor, least, calls = stand_ins
    out = tmp_path / "out"
    assert one_gpu.main(["--floor", str(floor), "--least-traffic", str(least), "--out", str(out), "--worlds", "4",
                         "--collectives", "all_gather_v", "--sizes", "", "--throughput-sizes", "1048576"]) == 0
    assert len(calls) == 1 and calls[0][calls[0].index("--collectives") + 1] == "all_gather_v"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["latency"] == [] and [r["collective"] for r in summary["throughput"]] == ["all_gather_v"]


def test_lowering_variants_beside_the_default(one_gpu, stand_ins, tmp_path):
    floor, least, calls = stand_ins
    out = tmp_path / "out"
    assert one_gpu.main(["--floor", str(floor), "--least-traffic", str(least), "--out", str(out), "--worlds", "2",
                         "--collectives", "all_gather,reduce_scatter", "--lowering", "ce=copy-engine=true"]) == 0
    # Only the throughput section runs the variant.
    assert [argv.count("--lowering") for argv in calls] == [0, 1]
    assert calls[1][calls[1].index("--lowering") + 1] == "ce=copy-engine=true"
    summary = json.loads((out / "summary.json").read_text())
    rows = summary["variants"]["ce"]
    assert [(r["collective"], r["bytes"]) for r in rows] == [(r["collective"], r["bytes"]) for r in
                                                              summary["throughput"]]
    gather = next(r for r in rows if (r["collective"], r["bytes"]) == ("all_gather", 16 * MiB))
    assert gather["us"] == pytest.approx((1.5 + 16) / 2) and gather["default_us"] == pytest.approx(1.5 + 16)
    assert gather["vs_default"] == pytest.approx(0.5)
    assert gather["ratio"] == pytest.approx(gather["us"] / gather["floor_us"])
    refused = next(r for r in rows if r["collective"] == "reduce_scatter")
    assert refused["us"] is None and refused["verdict"] == "failed: ProgramError: reduces"
    # No goal and no collapse check for a variant: the default's tallies stand alone.
    assert summary["collapse"]["2"]["verdict"] == "met"
    text = (out / "summary.txt").read_text()
    assert "lowering ce: purlin-ce / the same floor, and / the default lowering (no goal)" in text
    assert "failed: ProgramError: reduces" in text


SPEED = {bench.SPECIALISED: 0.8, bench.GENERIC: 1.2}


def test_specialised_latency_beside_the_default(one_gpu, stand_ins, tmp_path):
    floor, least, calls = stand_ins
    out = tmp_path / "out"
    assert one_gpu.main(["--floor", str(floor), "--least-traffic", str(least), "--out", str(out), "--worlds", "2",
                         "--collectives", "all_reduce,all_gather", "--specialise"]) == 0
    # Only the latency section runs the specialised kernels.
    assert [argv.count("--specialise") for argv in calls] == [1, 0]
    summary = json.loads((out / "summary.json").read_text())
    text = (out / "summary.txt").read_text()
    for name, what in ((bench.SPECIALISED, "compiled into the kernel"), (bench.GENERIC, "loaded at run time")):
        rows = summary["variants"][name]
        assert [(r["collective"], r["bytes"]) for r in rows] == [(r["collective"], r["bytes"]) for r in
                                                                  summary["latency"]]
        for r, default in zip(rows, summary["latency"]):
            assert r["us"] == pytest.approx(default["us"] * SPEED[name], abs=0.01)
            assert r["vs_default"] == pytest.approx(SPEED[name], abs=0.01)
            assert r["floor_us"] == default["floor_us"] and r["verdict"] in ("met", "missed")
            assert r["verdict"] == ("met" if r["ratio"] <= one_gpu.LATENCY_GOAL else "missed")
        assert f"{name}: purlin-{name} (the ranks' tables {what}) / the same floor" in text
        assert f"{name}: {len(rows) - sum(r['verdict'] == 'missed' for r in rows)} met" in text


@pytest.mark.parametrize("argv, message", [
    (["--worlds", "1,2"], "--worlds needs worlds of at least 2 ranks"),
    (["--lowering", "specialised=blocks=1"], "--lowering takes NAME=OPTIONS with a new name (not 'specialised'"),
    (["--lowering", "generic=blocks=1"], "--lowering takes NAME=OPTIONS with a new name (not 'specialised' or "
                                         "'generic')"),
    (["--sizes", "16,a"], "--sizes takes comma-separated whole numbers"),
    (["--collectives", "broadcast"], "unknown collective broadcast"),
    (["--least-traffic", "/nonexistent/least_traffic.py"], "cannot load it"),
    (["--floor", "/nonexistent/floor"], "is not an executable program"),
    (["--lowering", "ce copy-engine=true"], "--lowering takes NAME=OPTIONS"),
])
def test_usage_errors(one_gpu, stand_ins, tmp_path, capsys, argv, message):
    floor, least, calls = stand_ins
    base = {"--floor": str(floor), "--least-traffic": str(least), "--out": str(tmp_path / "out")}
    base.update(zip(argv[::2], argv[1::2]))
    assert one_gpu.main([x for kv in base.items() for x in kv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert calls == [] and not (tmp_path / "out").exists()


def test_a_least_traffic_module_without_its_functions(one_gpu, stand_ins, tmp_path, capsys):
    floor, _, _ = stand_ins
    empty = tmp_path / "empty.py"
    empty.write_text("RATE = 1\n")
    assert one_gpu.main(["--floor", str(floor), "--least-traffic", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert "defines no copy_rate or floor_us" in capsys.readouterr().err


# -- judging an earlier run again -------------------------------------------------------


def test_rejudge_reproduces_a_run_and_reads_the_older_format(one_gpu, stand_ins, tmp_path, capsys):
    floor, least, calls = stand_ins
    out = tmp_path / "out"
    one_gpu.main(["--floor", str(floor), "--least-traffic", str(least), "--out", str(out), "--worlds", "2,3",
                  "--lowering", "ce=copy-engine=true"])
    ran = len(calls)
    original = (out / "summary.txt").read_text()
    doc = json.loads((out / "bench.json").read_text())
    assert doc["copy_rate"] == 2e12
    assert doc["runs"][1]["asked"] == {"collectives": list(one_gpu.THROUGHPUT_COLLECTIVES),
                                       "sizes": list(one_gpu.THROUGHPUT_SIZES), "lowerings": ["ce"]}
    again = tmp_path / "again"
    assert one_gpu.main(["--least-traffic", str(least), "--rejudge", str(out), "--out", str(again)]) == 0
    assert (again / "summary.txt").read_text() == original and len(calls) == ran
    assert sorted(os.listdir(again)) == ["summary.json", "summary.txt"]
    # A run from before bench.json kept what it asked: the rate from its summary.json, the sizes from the options.
    for d in doc["runs"]:
        del d["asked"]
    del doc["copy_rate"]
    (out / "bench.json").write_text(json.dumps(doc))
    capsys.readouterr()
    assert one_gpu.main(["--least-traffic", str(least), "--rejudge", str(out)]) == 0
    assert (out / "summary.txt").read_text() == original
    (out / "summary.json").unlink()
    assert one_gpu.main(["--least-traffic", str(least), "--rejudge", str(out)]) == 2
    assert "has no copy rate and no summary.json gives one" in capsys.readouterr().err


def test_rejudge_usage_errors(one_gpu, stand_ins, tmp_path, capsys):
    floor, least, calls = stand_ins
    assert one_gpu.main(["--least-traffic", str(least), "--rejudge", str(tmp_path)]) == 2
    assert "holds no bench.json or floor.txt of an earlier run" in capsys.readouterr().err
    assert one_gpu.main(["--least-traffic", str(least), "--rejudge", str(tmp_path), "--floor", str(floor)]) == 2
    assert "--rejudge runs nothing: it takes no --floor" in capsys.readouterr().err
    assert one_gpu.main(["--least-traffic", str(least), "--out", str(tmp_path / "o")]) == 2
    assert "a run needs --floor and --out" in capsys.readouterr().err
    assert calls == []
