"""The StableHLO, shard and JAX examples run through purlin-run: every
interpreter-test expectation (or, for JAX's module, the coll level) holds on the CPU backend (and on one GPU, ranks
sharing it, where there is one); an unsupported form is exit status 2."""

import pytest

from purlin.levels.table import LEVELS
from purlin.tools import run, run_imported

EXAMPLES = ("examples/stablehlo_collectives.mlir", "examples/shard_grid.mlir", "examples/jax_shard_map_psum.mlir")


@pytest.mark.parametrize("path", EXAMPLES)
def test_examples_match_on_the_cpu_backend(path, capsys):
    assert run.main([path, "--backend", "cpu"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all("result=match" in line for line in lines)


def test_a_wrong_expectation_is_a_mismatch(tmp_path, capsys):
    text = open(EXAMPLES[0]).read().replace("%results#0, dense<[6, 60]>", "%results#0, dense<[6, 61]>", 1)
    path = tmp_path / "wrong.mlir"
    path.write_text(text)
    assert run.main([str(path), "--backend", "cpu"]) == 1
    out = capsys.readouterr().out
    assert "result=mismatch" in out and "expected [6, 61]" in out


def test_an_unsupported_case_is_a_diagnostic(tmp_path, capsys):
    text = open(EXAMPLES[0]).read().replace("stablehlo.add %a, %b : tensor<i32>", "stablehlo.subtract %a, %b : tensor<i32>")
    path = tmp_path / "region.mlir"
    path.write_text(text)
    assert run.main([str(path), "--backend", "cpu"]) == 2
    assert "an arbitrary reduction region is not supported" in capsys.readouterr().err


@pytest.mark.gpu
def test_stablehlo_example_on_one_gpu():
    runtime = pytest.importorskip("purlin.runtime")
    if runtime.default_backend() != "cuda":
        pytest.skip("needs the CUDA backend and a GPU")
    text = open(EXAMPLES[0]).read()

    def on_gpu(module, buffers, world):
        options = {"backend": "cuda", "devices": [0] * world, "lowering": "regime=latency",
                   "entry": next(f.sym_name.data for f in module.walk() if "purlin.inputs" in f.attributes)}
        LEVELS["plan"](module, buffers, world=world, seed=0, options=options)
        return 0.0

    for chunk in run_imported.chunks(text):
        case = run_imported.run_interpreter_case(chunk, EXAMPLES[0], on_gpu)
        assert case.mismatch is None, case.mismatch
