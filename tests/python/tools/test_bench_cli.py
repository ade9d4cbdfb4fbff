"""purlin-bench's command line without GPUs: what it refuses up front (one
line, exit 2, never a traceback), the sizes its rows say they ran, and a
failure at one size that leaves the rest of the table."""

import json

import pytest

import purlin.runtime
from purlin.coll.layouts import MAX_WORLD
from purlin.cuda.program import ProgramError
from purlin.tools import bench


@pytest.fixture(autouse=True)
def few_calls(monkeypatch):
    monkeypatch.setattr(bench, "PER_GRAPH", 1)
    monkeypatch.setattr(bench, "REPS", 1)


def run(tmp_path, *argv: str) -> int:
    return bench.main(["--single-process", "--no-sweep", "--out", str(tmp_path), *argv])


def refused(capsys, code: int) -> str:
    out, err = capsys.readouterr()
    assert code == 2, out + err
    assert out == "" and "Traceback" not in err
    [line] = err.strip().splitlines()
    return line


@pytest.mark.parametrize("argv, message", [
    (["--backend", "cpu", "--gpus", "600"],
     f"--gpus: world size 600 is more than the {MAX_WORLD} ranks purlin handles"),
    (["--backend", "cpu", "--world", str(MAX_WORLD + 1)],
     f"--gpus: world size {MAX_WORLD + 1} is more than the {MAX_WORLD} ranks"),
    (["--backend", "cuda", "--devices", ",".join(["0"] * (MAX_WORLD + 1))],
     f"--devices: world size {MAX_WORLD + 1} is more than the {MAX_WORLD}"),
    (["--backend", "cpu", "--devices", "0,0,0,0"],
     "--devices places ranks on GPUs: it goes with --backend cuda; --gpus N runs N ranks on CPU threads"),
    (["--backend", "cpu", "--gpus", "3", "--devices", "0,0"], "--gpus 3 but --devices lists 2 ranks"),
    (["--backend", "cpu", "--lowering", "bad=regime=bogus"],
     "--lowering bad=regime=bogus: convert-coll-to-snac: unknown regime 'bogus', expected one of auto, latency, "
     "throughput"),
    (["--backend", "cpu", "--lowering", "bad=foo=1"],
     "--lowering bad=foo=1: invalid pass pipeline 'convert-coll-to-snac{foo=1}': Provided arguments [\"foo\"] not "
     "found"),
    (["--backend", "cpu", "--lowering", "bad=blocks=x{"], "--lowering bad=blocks=x{: invalid pass pipeline"),
    (["--backend", "cpu", "--lowering", "b=blocks=1", "--lowering", "b=blocks=2"], "--lowering b: the name is taken"),
    (["--backend", "cpu", "--lowering", "composed=blocks=1"], "--lowering composed: the name is taken"),
    (["--backend", "cpu", "--lowering", "generic=blocks=1"], "--lowering generic: the name is taken"),
    (["--backend", "cpu", "--max-bytes", "8"], "no size to run: the smallest, 16 B, is more than --max-bytes 8"),
    (["--backend", "cpu", "--max-bytes", "0"], "--max-bytes must be a positive byte count, got 0"),
    (["--backend", "cpu", "--sizes", "16,4194304"],
     "--sizes 4194304 is more than --max-bytes 1048576 (the default on --backend cpu); raise --max-bytes"),
])
def test_refused_up_front(tmp_path, capsys, argv, message):
    line = refused(capsys, run(tmp_path, *argv))
    assert line.startswith("purlin-bench: ") and message in line, line
    assert not (tmp_path / "bench.json").exists()


def test_devices_on_the_default_cpu_backend_say_why_it_is_cpu(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(purlin.runtime, "default_backend", lambda: "cpu")
    line = refused(capsys, run(tmp_path, "--devices", "0,0"))
    assert "(the default backend is cpu here: this build sees no CUDA GPU)" in line


def test_a_gpu_purlin_cannot_run_on_is_refused(tmp_path, capsys, monkeypatch):
    torch = pytest.importorskip("torch")
    import purlin.compile

    def old_gpu(device=None):
        raise RuntimeError("purlin needs an sm_80 or newer GPU, this one is sm_75")

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: None)
    monkeypatch.setattr(purlin.compile, "arch_of_device", old_gpu)
    line = refused(capsys, run(tmp_path, "--backend", "cuda", "--gpus", "2"))
    assert line == "purlin-bench: --backend cuda: purlin needs an sm_80 or newer GPU, this one is sm_75"


def rows(tmp_path) -> dict[str, list[int]]:
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert doc["failures"] == []
    found: dict[str, list[int]] = {}
    for r in doc["rows"]:
        found.setdefault(r["collective"], []).append(r["bytes"])
    return found


def test_rows_say_the_size_they_ran(tmp_path, capsys, monkeypatch):
    ran = []
    real = bench._SingleBench.purlin

    def seen(self, case, impl, nbytes, *args):
        ran.append((case.collective, nbytes, case.bytes))
        real(self, case, impl, nbytes, *args)

    monkeypatch.setattr(bench._SingleBench, "purlin", seen)
    assert run(tmp_path, "--backend", "cpu", "--gpus", "3", "--sizes", "7,12,13,16",
               "--collectives", "all_reduce,all_gather,all_gather_v") == 0
    # all_reduce and the V forms grow by one bf16 element, all_gather on 3 ranks by 3; a size once.
    assert rows(tmp_path) == {"all_reduce": [6, 12, 16], "all_gather": [6, 12], "all_gather_v": [6, 12, 16]}
    assert all(label == size for _, label, size in ran)
    out, err = capsys.readouterr()
    assert [line.split()[:2] for line in out.splitlines()].count(["6", "B"]) == 3 and "7 B" not in out
    assert "# all_gather 16 B runs as 12 B: its buffers on 3 ranks grow in steps of 6 bytes" in err


def test_even_counts_take_the_fixed_forms_steps(tmp_path):
    assert run(tmp_path, "--backend", "cpu", "--gpus", "3", "--sizes", "16", "--even-counts",
               "--collectives", "all_gather_v,reduce_scatter_v,all_to_all_v") == 0
    assert rows(tmp_path) == {"all_gather_v": [12], "reduce_scatter_v": [12], "all_to_all_v": [12]}


@pytest.mark.parametrize("coll, nbytes, world, even, size", [
    ("all_gather", 16, 3, False, 12), ("all_gather", 2, 16, False, 32), ("all_reduce", 7, 3, False, 6),
    ("all_to_all_v", 15, 4, False, 14), ("all_to_all_v", 15, 4, True, 8),
    ("reduce_scatter", 1 << 20, 2, False, 1 << 20),
])
def test_size_run(coll, nbytes, world, even, size):
    assert bench.size_run(coll, nbytes, world, even) == size


def test_a_size_that_cannot_be_set_up_fails_alone(tmp_path, capsys, monkeypatch):
    real = bench._case

    def no_memory(coll, nbytes, world, even=False):
        if nbytes == 128:
            raise MemoryError("cannot allocate 1 GiB")
        return real(coll, nbytes, world, even)

    monkeypatch.setattr(bench, "_case", no_memory)
    assert run(tmp_path, "--backend", "cpu", "--sizes", "16,128,1024", "--collectives", "all_gather") == 1
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert doc["failures"] == ["all_gather purlin 128 B: MemoryError: cannot allocate 1 GiB"]
    assert [(r["bytes"], r["us"] is None) for r in doc["rows"]] == [(16, False), (128, True), (1024, False)]
    assert "Traceback" not in capsys.readouterr().err


def test_a_kernel_the_runtime_refuses_is_a_one_line_failure(tmp_path, capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise ProgramError("<atom.kernel>: error: 'atom.kernel': NVRTC could not compile k.cu for sm_90:\n"
                           "k.cu(12): error: identifier \"x\" is undefined")

    monkeypatch.setattr(purlin.runtime, "Communicator", refuse)
    assert run(tmp_path, "--backend", "cpu", "--sizes", "16", "--collectives", "all_gather") == 1
    out = capsys.readouterr().out
    [failed] = [line for line in out.splitlines() if "FAILED" in line or "k.cu(12)" in line]
    assert failed == ("FAILED: all_gather purlin 16 B: ProgramError: <atom.kernel>: error: 'atom.kernel': NVRTC could "
                      "not compile k.cu for sm_90:; k.cu(12): error: identifier \"x\" is undefined")
