"""purlin-bench --single-process on the CPU backend: every collective checked
against the numpy reference, the table, bench.json, and a wrong result caught."""

import json

import numpy as np
import pytest

from purlin.coll.builder import COLLECTIVES
from purlin.compile import compile_plan
from purlin.runtime import Communicator
from purlin.tools import bench


@pytest.fixture(autouse=True)
def few_calls(monkeypatch):
    # The checks are the point here; timings need only be taken.
    monkeypatch.setattr(bench, "PER_GRAPH", 2)
    monkeypatch.setattr(bench, "REPS", 1)


def run(tmp_path, *extra):
    return bench.main(["--single-process", "--backend", "cpu", "--max-bytes", "4096",
                       "--out", str(tmp_path), *extra])


@pytest.mark.parametrize("world", [2, 3])
def test_every_collective_matches_the_reference(tmp_path, capsys, world):
    assert run(tmp_path, "--gpus", str(world)) == 0
    out = capsys.readouterr().out
    assert f"backend cpu, world {world}" in out
    for coll in COLLECTIVES:
        assert f"== {coll}\n" in out
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert (doc["mode"], doc["backend"], doc["world"], doc["failures"]) == ("single-process", "cpu", world, [])
    sizes = [s for s in bench.SIZES if s <= 4096]
    for coll in COLLECTIVES:
        rows = [r for r in doc["rows"] if r["collective"] == coll and r["impl"] == "purlin"]
        # Rows say the size they ran: on 3 ranks the fixed forms but all_reduce take steps of 3 elements (6 B).
        ran = [12, 126, 1020] if world == 3 and coll in ("all_gather", "reduce_scatter", "all_to_all") else sizes
        assert [r["bytes"] for r in rows] == ran
        assert all(r["us"] > 0 and r["note"] == "cpu threads" for r in rows)
    assert {r["impl"] for r in doc["rows"]} == {"purlin"} | {f"purlin-{s}" for s in bench.ALL_REDUCE_STRATEGIES}
    assert (tmp_path / "bench.png").exists()


def test_single_process_without_torchrun(tmp_path, monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert bench.main(["--backend", "cpu", "--collectives", "all_gather", "--max-bytes", "16",
                       "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert (doc["mode"], len(doc["rows"])) == ("single-process", 1)


def test_a_wrong_result_is_a_failure(tmp_path, capsys, monkeypatch):
    real = Communicator.run

    def off_by_one(self, inputs, outputs):
        real(self, inputs, outputs)
        if self.name == "reduce_scatter purlin":
            outputs[1][0] += np.ones(1, outputs[1].dtype)[0]

    monkeypatch.setattr(Communicator, "run", off_by_one)
    assert run(tmp_path, "--collectives", "all_gather,reduce_scatter", "--max-bytes", "128") == 1
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert doc["failures"] == [f"reduce_scatter purlin {s}: result differs from the reference"
                               for s in ("16 B", "128 B")]
    wrong = [r for r in doc["rows"] if r["note"] == "wrong result"]
    assert [(r["collective"], r["us"]) for r in wrong] == [("reduce_scatter", None)] * 2
    assert "FAILED: reduce_scatter purlin 16 B" in capsys.readouterr().out
    assert (tmp_path / "bench.png").exists()  # a collective without timings still plots


@pytest.mark.parametrize("argv, message", [
    (["--gpus", "1"], "at least 2"),
    (["--collectives", "all_reduce,broadcast"], "unknown collective broadcast"),
    (["--lowering", "chunk-bytes"], "--lowering takes NAME=OPTIONS"),
    (["--lowering", "=blocks=1"], "--lowering takes NAME=OPTIONS"),
])
def test_usage_errors(tmp_path, capsys, argv, message):
    assert run(tmp_path, *argv) == 2
    assert message in capsys.readouterr().err


def test_torchrun_flags_are_not_single_process_flags(monkeypatch, capsys):
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert bench.main(["--gpus", "2"]) == 2
    assert "--single-process" in capsys.readouterr().err


def test_all_reduce_v_runs_single_process_only(monkeypatch, capsys):
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert bench.main(["--collectives", "all_reduce,all_reduce_v"]) == 2
    assert "all_reduce_v runs --single-process only: purlin.torch" in capsys.readouterr().err


def test_compile_plan_runs_on_cpu_threads():
    plan = compile_plan("all_reduce", 3, "f32", "sum", count=5)
    assert (plan.world, plan.arch, plan.input_elems) == (3, "sm_90", 5)
    inputs = [np.full(5, r + 1, np.float32) for r in range(3)]
    outputs = [np.zeros(5, np.float32) for _ in range(3)]
    Communicator(plan, backend="cpu", devices=[0, 1, 2]).run(inputs, outputs)
    assert all((o == 6).all() for o in outputs)
    with pytest.raises(ValueError, match="unknown arch"):
        compile_plan("all_gather", 2, "f32", None, count=1, arch="sm_70")


def test_lowering_variants_are_checked_and_timed(tmp_path):
    assert run(tmp_path, "--collectives", "all_gather,reduce_scatter", "--lowering", "b1=blocks=1",
               "--lowering", "thr=regime=throughput chunk-bytes=64") == 0
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert doc["failures"] == []
    sizes = [s for s in bench.SIZES if s <= 4096]
    for coll in ("all_gather", "reduce_scatter"):
        for impl in ("purlin-b1", "purlin-thr"):
            rows = [r for r in doc["rows"] if r["collective"] == coll and r["impl"] == impl]
            assert [r["bytes"] for r in rows] == sizes and all(r["us"] > 0 for r in rows)


def test_a_lowering_that_does_not_lower_is_a_failure(tmp_path, capsys):
    assert run(tmp_path, "--collectives", "all_gather", "--max-bytes", "16", "--lowering",
               "bad=strategy=composed") == 1
    assert "all_gather purlin-bad 16 B:" in capsys.readouterr().out
