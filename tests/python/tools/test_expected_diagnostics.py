"""`expected-error` annotations (purlin-opt --verify-diagnostics), parsed as
mlir-opt parses them, and that --split-input-file reports every chunk."""

import pytest

from purlin.diagnostics import check_expected, parse_annotations
from purlin.tools.opt import main

BAD = """func.func @f(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 0 : memref<8xf32>, memref<8xf32>
  func.return
}
"""
GOOD = BAD.replace("world 0", "world 2")


def expected_in(text, line_offset=0):
    expected, problems = parse_annotations(text, "f.mlir", line_offset)
    assert problems == []
    return expected


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


def test_spaces_around_the_location_as_mlir_allows():
    text = "\n".join([
        "// expected-error @+1 {{spaced}}",
        "op2",
        "// expected-note   @above   {{wide}}   ",
        "// expected-remark-re @below{{tight {{[0-9]+}}}}",
        "op5 // expected-error  {{no location}}",
    ])
    got = [(e.kind, e.text, e.line) for e in expected_in(text)]
    assert got == [
        ("error", "spaced", 2),
        ("note", "wide", 2),
        ("remark", "tight {{[0-9]+}}", 5),
        ("error", "no location", 5),
    ]


def test_mlir_edge_cases_of_targets():
    # @above with no plain line above targets line 1; a dangling @below the last line.
    text = "// expected-error@above {{first}}\nop\n// expected-error@below {{dangling}}"
    assert [e.line for e in expected_in(text)] == [1, 3]


@pytest.mark.parametrize("line, problem", [
    ("// expected-error @+ {{x}}",
     "f.mlir:3:4: error: annotation 'expected-error' has a malformed location '@+': "
     "expected @+N, @-N, @above, @below or @unknown"),
    ("// expected-error@+1x {{x}}", "malformed location '@+1x'"),
    ("// expected-error@next {{x}}", "malformed location '@next'"),
    ("// expected-error @+1 world size}}",
     "f.mlir:3:4: error: annotation 'expected-error' has no '{{': expected the message between '{{' and '}}'"),
    ("// expected-error world size}}", "f.mlir:3:4: error: annotation 'expected-error' has no '{{'"),
    ("// expected-error",
     "f.mlir:3:4: error: annotation 'expected-error' has no '{{'"),
    ("// expected-error {{world size",
     "f.mlir:3:4: error: annotation 'expected-error' does not end with '}}': "
     "expected the message between '{{' and '}}' at the end of the line"),
    ("// expected-error {{world size}} and more", "does not end with '}}'"),
    ("// expected-eror {{world size}}",
     "f.mlir:3:4: error: unknown annotation 'expected-eror': expected expected-error, expected-warning, "
     "expected-note or expected-remark, each optionally with -re"),
    ("// expected-error-ree@+1 {{x}}", "unknown annotation 'expected-error-ree'"),
    ("  //expected-errors", "f.mlir:3:5: error: unknown annotation 'expected-errors'"),
    ("// expected-error-re {{a {{[0-9]+ b}}",
     "f.mlir:3:4: error: annotation 'expected-error-re' has a regular expression without its end '}}'"),
    ("// expected-error-re {{a {{(}} b}}",
     "f.mlir:3:4: error: annotation 'expected-error-re' has an invalid regular expression '(': "
     "missing ), unterminated subpattern"),
])
def test_malformed_annotations_are_errors_naming_their_line(line, problem):
    expected, problems = parse_annotations(f"a\nb\n{line}\nc", "f.mlir")
    assert expected == [] and len(problems) == 1
    assert problem in problems[0]


@pytest.mark.parametrize("line", [
    "// With `expected-error` annotations, every diagnostic must be annotated",
    "// the expected-output layout",
    "// an expected-error annotation names expected-error, expected-note and more",
    "// unexpected-errors are reported",
])
def test_prose_is_not_an_annotation(line):
    assert parse_annotations(line, "f.mlir") == ([], [])


def test_regex_annotations_match_their_regex_parts_only():
    (e,) = expected_in("x // expected-error-re {{got {{[0-9]+}} (of 3)}}")
    assert e.matches("world: got 17 (of 3) here")
    assert not e.matches("got 17 of 3")


def test_check_reports_unexpected_and_unmet():
    expected = expected_in("a\nb // expected-error {{boom}}\nc // expected-error {{bang}}")
    problems = check_expected("f.mlir", expected, [("error", (2, 1), "it went boom"), ("error", (1, 5), "surprise")])
    assert problems == [
        "f.mlir:1:5: error: unexpected error: surprise",
        'f.mlir:3:6: error: expected error "bang" was not produced',
    ]


def test_check_reports_a_diagnostic_of_another_kind_as_mlir_does():
    expected = expected_in("a // expected-warning {{boom}}\nb // expected-error@unknown {{bang}}")
    problems = check_expected("f.mlir", expected, [("error", (1, 1), "it went boom"), ("error", None, "bang!")])
    assert problems == [
        "f.mlir:1:6: error: 'error' diagnostic emitted when expecting a 'warning'",
        'f.mlir:1:6: error: expected warning "boom" was not produced',
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
@pytest.mark.parametrize("spelling", ["expected-error@+1", "expected-error @+1"])
def test_annotations_that_do_not_hold_exit_1(tmp_path, capsys, expected, world, problem, spelling):
    text = ANNOTATED.replace("EXPECTED", expected).replace("WORLD", world).replace("expected-error@+1", spelling)
    assert main([_write(tmp_path, text), "--verify-diagnostics"]) == 1
    assert problem in capsys.readouterr().err


def test_a_malformed_annotation_fails_the_run(tmp_path, capsys):
    # The error is annotated correctly; the second annotation cannot be read.
    text = ANNOTATED.replace("EXPECTED", "at least 1").replace("WORLD", "0")
    text = text.replace("  func.return", "  // expected-error @+ {{x}}\n  func.return")
    f = _write(tmp_path, text)
    assert main([f, "--verify-diagnostics"]) == 1
    out, err = capsys.readouterr()
    assert err == f"{f}:4:6: error: annotation 'expected-error' has a malformed location '@+': " \
        "expected @+N, @-N, @above, @below or @unknown\n"


def test_a_malformed_annotation_alone_turns_checking_on(tmp_path, capsys):
    f = _write(tmp_path, BAD.replace("  func.return", "  // expected-eror {{world size}}\n  func.return"))
    assert main([f, "--verify-diagnostics"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"{f}:3:6: error: unknown annotation 'expected-eror': expected expected-error, expected-warning, "
        "expected-note or expected-remark, each optionally with -re",
        f"{f}:2:3: error: unexpected error: 'coll.all_reduce': world size must be at least 1, got 0",
    ]


def test_notes_of_parse_errors_are_checked(tmp_path, capsys):
    text = "func.func @f() {\n^bb0:\n  func.return\n^bb0:  // expected-error {{re-declaration of block 'bb0'}}\n" \
        "  func.return\n}\n"
    f = _write(tmp_path, text)
    assert main([f, "--verify-diagnostics"]) == 1
    assert capsys.readouterr().err == f"{f}:2:1: error: unexpected note: originally declared here\n"
    f = _write(tmp_path, text.replace("^bb0:\n  func", "^bb0:  // expected-note {{originally declared}}\n  func", 1))
    assert main([f, "--verify-diagnostics"]) == 0


def test_without_annotations_verify_diagnostics_follows_xdsl(tmp_path, capsys):
    assert main([_write(tmp_path, BAD + "// -----\n" + BAD), "--split-input-file",
                 "--verify-diagnostics"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.count("world size must be at least 1, got 0") == 2
