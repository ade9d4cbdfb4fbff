"""Where the process grid of a StableHLO module comes from, and what the
tools say when it is not known: purlin-run's advice names its own --world, and
several modules without '// -----' between them (one module around them, none
of their attributes) are named as such by purlin-run and purlin-opt alike."""

from pathlib import Path

import pytest

from purlin.tools.opt import main as opt_main
from purlin.tools.run import main as run_main

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "stablehlo_collectives.mlir"


def module(name: str, attributes: str = "mhlo.num_replicas = 4 : i32") -> str:
    """A module whose @NAME sums a tensor<2xf32> over replicas 0, 1 and 2, 3 (per partition)."""
    attrs = f" attributes {{{attributes}}}" if attributes else ""
    return f"""module @{name}{attrs} {{
  func.func @{name}(%x: tensor<2xf32>) -> tensor<2xf32> {{
    %r = "stablehlo.all_reduce"(%x) ({{
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %c = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %c : tensor<f32>
    }}) {{replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>}} : (tensor<2xf32>) -> tensor<2xf32>
    return %r : tensor<2xf32>
  }}
}}
"""


def run(capsys, tmp_path, text: str, *argv: str) -> tuple[int, str, str]:
    f = tmp_path / "m.mlir"
    f.write_text(text)
    code = run_main([str(f), *argv])
    out, err = capsys.readouterr()
    return code, out, err.replace(str(f), "m.mlir")


def error_line(code: int, out: str, err: str) -> str:
    assert code == 2 and out == "" and "Traceback" not in err, out + err
    [line] = err.strip().splitlines()
    return line


def test_modules_split_by_dashes_run_one_by_one(capsys, tmp_path):
    code, out, err = run(capsys, tmp_path, module("a") + "// -----\n" + module("b"))
    assert code == 0, err
    assert [line.split()[0] for line in out.splitlines()] == ["m.mlir@a", "m.mlir@b"]


def test_modules_without_dashes_between_them_are_named(capsys, tmp_path):
    line = error_line(*run(capsys, tmp_path, module("a") + module("b")))
    assert line == ("purlin-run: error: m.mlir:11:1: a second module in the same chunk; purlin-run runs one module "
                    "at a time: put a line '// -----' before it")


def test_a_module_inside_a_module_is_named(capsys, tmp_path):
    line = error_line(*run(capsys, tmp_path, "module {\n" + module("a") + "}\n"))
    assert line.startswith("purlin-run: error: m.mlir:2:1: a module inside a module")


def test_unknown_replicas_advise_purlin_runs_world(capsys, tmp_path):
    line = error_line(*run(capsys, tmp_path, module("a", attributes="")))
    assert line == ("purlin-run: error: m.mlir:3:5: the number of replicas is not known: give --world N (N "
                    "processes: replicas x partitions) or the module attribute mhlo.num_replicas")
    code, out, err = run(capsys, tmp_path, module("a", attributes=""), "--world", "4")
    assert code == 0 and " world=4 " in out and "result=match" in out, err


def test_world_counts_the_processes_of_every_partition(capsys, tmp_path):
    text = module("a", attributes="mhlo.num_partitions = 2 : i32")
    code, out, err = run(capsys, tmp_path, text, "--world", "8")
    assert code == 0 and " world=8 " in out and "result=match" in out, err
    line = error_line(*run(capsys, tmp_path, text, "--world", "5"))
    assert line == ("purlin-run: error: m.mlir: --world 5 is not a multiple of the module's mhlo.num_partitions = 2 "
                    "(processes are replicas x partitions)")


def test_world_must_agree_with_the_modules_grid(capsys, tmp_path):
    text = module("a", attributes="mhlo.num_replicas = 4 : i32, mhlo.num_partitions = 2 : i32")
    line = error_line(*run(capsys, tmp_path, text, "--world", "4"))
    assert line == ("purlin-run: error: m.mlir: --world 4 but the module's processes are 8 (mhlo.num_replicas = 4 x "
                    "mhlo.num_partitions = 2)")
    code, out, _ = run(capsys, tmp_path, text, "--world", "8")
    assert code == 0 and " world=8 " in out


@pytest.mark.parametrize("split, message", [
    ([], "the input holds 6 modules and mhlo.num_replicas is read from the one module around them, which has "
         "none; split the input (--split-input-file, '// -----' between the modules) or give the option replicas=N"),
    (["--split-input-file"], None),
])
def test_purlin_opt_says_the_input_holds_several_modules(capsys, split, message):
    code = opt_main([str(EXAMPLE), *split, "-p", "convert-stablehlo-to-coll"])
    out, err = capsys.readouterr()
    if message is None:
        assert code == 0 and len([line for line in out.splitlines() if " coll." in line]) == 6, err
    else:
        assert code == 1 and err.strip() == f"{EXAMPLE}:8:3: error: 'func.func': convert-stablehlo-to-coll: the number of " \
                                            f"replicas is not known; {message}"
