"""`expected-error` annotations (purlin-opt --verify-diagnostics), and that
--split-input-file reports every chunk."""

import pytest

from purlin.tools.expected_diagnostics import check, expected_in
from purlin.tools.opt import main

BAD = """func.func @f(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 0 : memref<8xf32>, memref<8xf32>
  func.return
}
"""
GOOD = BAD.replace("world 0", "world 2")


def test_annotation_targets():
    text = "\n".join([
        "op1 // expected-error {{same line}}",
        "// expected-error@+2 {{two below}}",
        "// expected-error@below {{next unannotated}}",
        "op4",
        "// expected-error@above {{previous unannotated}}",
        "// expected-error@-5 {{five above}}",
        "// expected-warning@unknown {{nowhere}}",
    ])
    got = [(e.kind, e.text, e.line, e.at) for e in expected_in(text, line_offset=10)]
    assert got == [
        ("error", "same line", 11, (11, 8)),
        ("error", "two below", 14, (12, 4)),
        ("error", "next unannotated", 14, (13, 4)),
        ("error", "previous unannotated", 14, (15, 4)),
        ("error", "five above", 11, (16, 4)),
        ("warning", "nowhere", None, (17, 4)),
    ]


def test_regex_annotations_match_their_regex_parts_only():
    (e,) = expected_in("x // expected-error-re {{got {{[0-9]+}} (of 3)}}")
    assert e.pattern.search("world: got 17 (of 3) here")
    assert not e.pattern.search("got 17 of 3")


def test_check_reports_unexpected_and_unmet():
    expected = expected_in("a\nb // expected-error {{boom}}\nc // expected-error {{bang}}")
    problems = check("f.mlir", expected, [((2, 1), "it went boom"), ((1, 5), "surprise")])
    assert problems == [
        "f.mlir:1:5: error: unexpected error: surprise",
        'f.mlir:3:6: error: expected error "bang" was not produced',
    ]


def _write(tmp_path, text):
    f = tmp_path / "in.mlir"
    f.write_text(text)
    return str(f)


def test_split_input_file_reports_every_failing_chunk(tmp_path, capsys):
    f = _write(tmp_path, BAD + "// -----\n" + GOOD + "// -----\n" + BAD)
    assert main([f, "--split-input-file"]) == 1
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"{f}:2:3: error: 'coll.all_reduce': world size must be at least 1, got 0",
        f"{f}:12:3: error: 'coll.all_reduce': world size must be at least 1, got 0",
    ]
    assert out.count("// -----") == 2 and out.count("func.func @f") == 1


ANNOTATED = """func.func @f(%a: memref<8xf32>) {
  // expected-error@+1 {{EXPECTED}}
  coll.all_reduce sum %a, %a world WORLD : memref<8xf32>, memref<8xf32>
  func.return
}
"""


def test_annotations_that_hold_exit_0(tmp_path, capsys):
    text = ANNOTATED.replace("EXPECTED", "world size must be at least 1").replace("WORLD", "0")
    assert main([_write(tmp_path, text + "// -----\n" + GOOD), "--split-input-file",
                 "--verify-diagnostics"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "func.func @f" in out


@pytest.mark.parametrize("expected, world, problem", [
    ("at least 3", "0", "3:3: error: unexpected error: 'coll.all_reduce': world size must be"),
    ("at least 1", "2", '2:6: error: expected error "at least 1" was not produced'),
])
def test_annotations_that_do_not_hold_exit_1(tmp_path, capsys, expected, world, problem):
    text = ANNOTATED.replace("EXPECTED", expected).replace("WORLD", world)
    assert main([_write(tmp_path, text), "--verify-diagnostics"]) == 1
    assert problem in capsys.readouterr().err


def test_without_annotations_verify_diagnostics_follows_xdsl(tmp_path, capsys):
    assert main([_write(tmp_path, BAD + "// -----\n" + BAD), "--split-input-file",
                 "--verify-diagnostics"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.count("world size must be at least 1, got 0") == 2
