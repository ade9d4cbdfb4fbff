"""purlin-opt's main() on malformed input: exit status 1, a short diagnostic on
stderr, nothing on stdout, never a traceback."""

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
        "expected a reduction op after 'reduce': sum, max, min, prod, and, or or xor, got 'mean'",
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
