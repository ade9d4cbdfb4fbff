"""Bad input to any tool is one error line and a documented exit status, never
a traceback: purlin-run 0 match / 1 mismatch / 2 usage or input error,
purlin-examples the same, purlin-opt 1 for input it cannot process."""

import subprocess
import sys
from pathlib import Path

import pytest

from purlin.tools.examples import main as examples_main
from purlin.tools.opt import main as opt_main
from purlin.tools.run import MEMORY_LIMIT
from purlin.tools.run import main as run_main

BINARY = bytes(range(0x80, 0x100)) * 4
ALL_REDUCE = ["--collective", "all_reduce", "--world", "2", "--bytes", "64", "--dtype", "f32"]


def binary_file(tmp_path: Path) -> Path:
    f = tmp_path / "garbage.mlir"
    f.write_bytes(b"// fine so far\n" + BINARY)
    return f


def refused(capsys, code: int, *needles: str) -> str:
    out, err = capsys.readouterr()
    assert code == 2, out + err
    assert out == "" and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    for n in needles:
        assert n in err, err
    return err


@pytest.mark.parametrize(
    "extra, needles",
    [
        (["--level", "snac", "--lowering", "foo=1"],
         ["--lowering 'foo=1'", 'Provided arguments ["foo"] not found']),
        (["--level", "snac", "--lowering", "regime=bogus"],
         ["cannot lower to the snac level", "unknown regime 'bogus'"]),
    ],
)
def test_bad_lowering_options_are_usage_errors(capsys, extra, needles):
    refused(capsys, run_main(ALL_REDUCE + extra), *needles)


def test_an_unparsable_lowering_spec_is_a_usage_error(capsys):
    code = run_main(ALL_REDUCE + ["--level", "snac", "--lowering", "x{"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.startswith("purlin-run: error: --lowering 'x{': invalid pass pipeline")


@pytest.mark.parametrize("option", ["--seed", "--bytes"])
def test_negative_numbers_are_refused_by_the_parser(capsys, option):
    argv = [a if a != "64" or option != "--bytes" else "-4" for a in ALL_REDUCE]
    if option == "--seed":
        argv += ["--seed", "-1"]
    with pytest.raises(SystemExit) as e:
        run_main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: must be non-negative" in err and "Traceback" not in err


def test_a_run_beyond_the_memory_limit_is_refused(capsys):
    nbytes = 99999999999996  # 182 TiB of int64 random bits were allocated before
    argv = ["--collective", "all_reduce", "--world", "2", "--bytes", str(nbytes), "--dtype", "f32"]
    refused(capsys, run_main(argv), "need", "of host memory, more than purlin-run's limit of 4 GiB")
    assert MEMORY_LIMIT == 4 << 30


def test_a_file_with_huge_buffers_is_refused(capsys, tmp_path):
    t = "memref<99999999999xf32>"
    f = tmp_path / "big.mlir"
    f.write_text(f"func.func @f(%a: {t}) {{\n  coll.all_reduce sum %a, %a world 2 : {t}, {t}\n"
                 "  func.return\n}\n")
    refused(capsys, run_main([str(f)]), "more than purlin-run's limit")


def test_binary_input_to_purlin_run(capsys, tmp_path):
    f = binary_file(tmp_path)
    refused(capsys, run_main([str(f)]), f"{f}:2:1: error: not UTF-8 text (byte 0x80")


def test_binary_input_to_purlin_examples(capsys, tmp_path):
    f = binary_file(tmp_path)
    assert examples_main([str(f)]) == 2
    out, err = capsys.readouterr()
    assert f"{f}:2:1: error: not UTF-8 text" in err and "Traceback" not in err
    assert "result=" not in out  # an example that does not lower is not run


def test_binary_input_to_purlin_opt_names_the_file(capsys, tmp_path):
    f = binary_file(tmp_path)
    assert opt_main([str(f)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip() == (
        f"{f}:2:1: error: not UTF-8 text (byte 0x80: invalid start byte); expected an MLIR source file"
    )


def test_binary_input_on_stdin_of_the_console_scripts(tmp_path):
    f = binary_file(tmp_path)
    bindir = Path(sys.executable).parent
    opt = subprocess.run([str(bindir / "purlin-opt")], input=f.read_bytes(), capture_output=True)
    assert opt.returncode == 1 and b"Traceback" not in opt.stderr
    assert opt.stderr.startswith(b"stdin:2:1: error: not UTF-8 text")
    run = subprocess.run([str(bindir / "purlin-run"), str(f)], capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr and "not UTF-8 text" in run.stderr


@pytest.mark.parametrize("main", [run_main, examples_main])
def test_help_documents_the_exit_status(capsys, main):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "exit status:" in out
    assert "\n  0  " in out and "\n  1  " in out and "\n  2  usage or input error" in out


def test_purlin_opt_help_documents_the_exit_status(capsys):
    with pytest.raises(SystemExit):
        opt_main(["--help"])
    out = capsys.readouterr().out
    assert "exit status:\n  0  every input chunk was processed\n  1  an error diagnostic" in out
    assert "\n  2  bad command-line arguments" in out


def test_an_invalid_regex_annotation_is_a_diagnostic(capsys, tmp_path):
    f = tmp_path / "re.mlir"
    f.write_text("func.func @f() {\n  // expected-error-re {{a {{(}} b}}\n  func.return\n}\n")
    assert opt_main([str(f), "--verify-diagnostics"]) == 1
    out, err = capsys.readouterr()
    assert "Traceback" not in err and err.strip() == (
        f"{f}:2:6: error: annotation 'expected-error-re' has an invalid regular expression '(': "
        "missing ), unterminated subpattern"
    )
