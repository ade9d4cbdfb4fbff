"""purlin-opt's main() on malformed input: exit status 1, a short diagnostic on
stderr, nothing on stdout, never a traceback; empty input and standard input
as mlir-opt takes them."""

import io
import sys

import pytest

from purlin.tools.opt import main

GOOD = """func.func @f(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 2 : memref<8xf32>, memref<8xf32>
  func.return
}
"""


def _file(tmp_path, text: str) -> str:
    path = tmp_path / "input.mlir"
    path.write_text(text)
    return str(path)


def _fails(capsys, argv: list[str]) -> str:
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "Traceback" not in err
    assert 1 <= len(err.splitlines()) <= 6, err  # one screen, one diagnostic
    return err


BAD_INPUTS = {
    "syntax": (
        GOOD.replace("%a, %a world", "%a %a world"),
        "Expected ','",
    ),
    "sizes": (
        GOOD.replace("coll.all_reduce sum %a, %a world 2", "coll.all_to_all %a, %a world 3"),
        "input.mlir:2:3: error: 'coll.all_to_all': buffer of 8 elements is not divisible by world size 3",
    ),
    "counts": (
        GOOD.replace("coll.all_reduce sum %a, %a world 2", "coll.all_gather_v %a, %a world 2 counts [4]"),
        "input.mlir:2:3: error: 'coll.all_gather_v': expected 2 counts for world 2 ranks, got 1",
    ),
    "layout": (
        GOOD.replace(
            "coll.all_reduce sum %a, %a world 2",
            "coll.collective %a, %a in #coll.layout<named, world 2, [(0, 0, 4, 0), (0, 3, 4, 1)]> "
            "out #coll.layout<packed, world 2, 4> consume #coll.consume<copy>",
        ),
        "invalid named layout: slices 0 [0, 4) and 1 [3, 7) overlap on rank 0",
    ),
    "unknown op": (
        GOOD.replace("coll.all_reduce", "coll.allreduce"),
        "Operation coll.allreduce is not registered",
    ),
    "reduction": (
        GOOD.replace(
            "coll.all_reduce sum %a, %a world 2",
            "coll.collective %a, %a in #coll.layout<packed, world 2, 4> out #coll.layout<packed, world 2, 4> "
            "consume #coll.consume<reduce mean>",
        ),
        "expected a reduction op after 'reduce': sum, max, min, prod, and, or, xor or avg, got 'mean'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_malformed_input(tmp_path, capsys, case):
    text, message = BAD_INPUTS[case]
    err = _fails(capsys, [_file(tmp_path, text)])
    assert message in err


@pytest.mark.parametrize(
    "pipeline,message",
    [
        ("nope", "invalid pass pipeline 'nope': Unrecognized passes: ['nope']"),
        ("coll-expand{world=2}", 'Provided arguments ["world"] not found'),
        ("coll-expand{world", "Error parsing pass pipeline specification"),
        # Options named as pipelines spell them, not as the pass's fields.
        ("convert-coll-to-snac{chunkbytes=4}", '"chunk-bytes", "slots", "blocks", "symmetric", "ranks-per-device"'),
    ],
)
def test_bad_pipeline(tmp_path, capsys, pipeline, message):
    assert message in _fails(capsys, [_file(tmp_path, GOOD), "-p", pipeline])


def test_missing_file(tmp_path, capsys):
    err = _fails(capsys, [str(tmp_path / "absent.mlir")])
    assert "No such file or directory" in err and "absent.mlir" in err


def test_pass_failure_is_located(tmp_path, capsys):
    text = GOOD.replace("memref<8xf32>", "memref<?xf32>")
    err = _fails(capsys, [_file(tmp_path, text), "-p", "coll-expand"])
    assert "input.mlir:2:3: error: 'coll.all_reduce': cannot expand to coll.collective" in err


def test_split_input_file_reports_file_lines(tmp_path, capsys):
    bad = GOOD.replace("world 2", "world 0")
    text = GOOD + "// -----\n" + bad
    assert main([_file(tmp_path, text), "--split-input-file", "--verify-diagnostics"]) == 0
    out, _ = capsys.readouterr()
    assert "input.mlir:7:3: error: 'coll.all_reduce': world size must be at least 1, got 0" in out


def test_good_input_succeeds(tmp_path, capsys):
    assert main([_file(tmp_path, GOOD), "-p", "coll-expand"]) == 0
    out, err = capsys.readouterr()
    assert "coll.collective" in out and err == ""


def test_a_parse_error_is_one_line_then_the_source_and_a_caret(tmp_path, capsys):
    # As mlir-opt prints it: FILE:LINE:COL: error: MESSAGE, the line, a caret under the column.
    f = _file(tmp_path, GOOD.replace("%a, %a world", "%a %a world"))
    assert main([f]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"{f}:2:26: error: Expected ','",
        "  coll.all_reduce sum %a %a world 2 : memref<8xf32>, memref<8xf32>",
        "                         ^",
    ]


def test_the_caret_follows_tabs_as_llvm_expands_them(tmp_path, capsys):
    f = _file(tmp_path, GOOD.replace("  coll.all_reduce sum %a, %a", "\tcoll.all_reduce\tsum %a %a"))
    assert main([f]) == 1
    assert capsys.readouterr().err.splitlines()[1:] == [
        "        coll.all_reduce sum %a %a world 2 : memref<8xf32>, memref<8xf32>",
        "                               ^",
    ]


def test_a_parse_error_at_the_end_of_the_input(tmp_path, capsys):
    f = _file(tmp_path, "func.func @f() {\n")
    assert main([f]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{f}:2:1: error: ") and err[1:] == ["", "^"]


def test_a_parse_error_with_a_reference_ends_with_a_located_note(tmp_path, capsys):
    f = _file(tmp_path, "func.func @f() {\n^bb0:\n  func.return\n^bb0:\n  func.return\n}\n")
    assert main([f]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{f}:4:1: error: re-declaration of block 'bb0'",
        "^bb0:",
        "^",
        f"{f}:2:1: note: originally declared here",
        "^bb0:",
        "^",
    ]


def test_parse_errors_under_split_input_file_name_file_lines(tmp_path, capsys):
    f = _file(tmp_path, GOOD + "// -----\n" + GOOD.replace("%a, %a world", "%a %a world"))
    assert main([f, "--split-input-file"]) == 1
    assert capsys.readouterr().err.splitlines()[0] == f"{f}:7:26: error: Expected ','"


@pytest.mark.parametrize("text", ["", "\n\n", "// only a comment\n", "#map = affine_map<(d0) -> (d0)>\n"])
def test_empty_input_is_an_empty_module(tmp_path, capsys, text):
    assert main([_file(tmp_path, text)]) == 0
    out, err = capsys.readouterr()
    assert out == "builtin.module {\n}\n\n" and err == ""  # xDSL ends every module with a blank line


def test_empty_chunks_are_empty_modules(tmp_path, capsys):
    assert main([_file(tmp_path, "// -----\n"), "--split-input-file"]) == 0
    assert capsys.readouterr().out == "builtin.module {\n}\n\n// -----\nbuiltin.module {\n}\n\n"


def _stdin(monkeypatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


@pytest.mark.parametrize("argv", [["-"], []])
def test_standard_input(monkeypatch, capsys, argv):
    _stdin(monkeypatch, GOOD)
    assert main(argv + ["-p", "coll-expand"]) == 0
    out, err = capsys.readouterr()
    assert "coll.collective" in out and err == ""


def test_errors_on_standard_input_name_it(monkeypatch, capsys):
    _stdin(monkeypatch, GOOD.replace("world 2", "world 0"))
    err = _fails(capsys, ["-"])
    assert err.startswith("stdin:2:3: error: 'coll.all_reduce': world size must be at least 1, got 0")
