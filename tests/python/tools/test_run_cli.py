"""`purlin-run`: exit codes, the summary line, and that a broken level is caught."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from purlin.levels import coll as coll_level
from purlin.levels import table as levels
from purlin.levels.base import SimError
from purlin.tools.run import main

SUMMARY = re.compile(
    r"^(?P<what>\S+) world=(?P<world>\d+) dtype=(?P<dtype>\S+) op=(?P<op>\S+) "
    r"bytes=(?P<bytes>\d+) level=(?P<level>\S+) result=(?P<result>\w+)"
)


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def summary(out):
    lines = out.splitlines()
    assert len(lines) == 1, out
    m = SUMMARY.match(lines[0])
    assert m, lines[0]
    return m


def gather_v_file(f: Path, func: str, tin: str, tout: str) -> Path:
    """Write to `f` a function @FUNC running all_gather_v over world 2 from
    %in: TIN to %out: TOUT, its counts a %c argument."""
    f.write_text(f"""
    func.func @{func}(%in: {tin}, %out: {tout}, %c: memref<2xi64>) {{
      coll.all_gather_v %in, %out world 2 counts %c : {tin}, {tout}, memref<2xi64>
      func.return
    }}""")
    return f


@pytest.mark.parametrize(
    "argv, fields",
    [
        (["--collective", "all_reduce", "--world", "8", "--bytes", "4096", "--dtype", "bf16"],
         dict(what="all_reduce", world="8", dtype="bf16", op="sum", bytes="4096")),
        (["--collective", "reduce_scatter", "--world", "3", "--bytes", "996", "--dtype", "f32",
          "--op", "prod"],
         dict(what="reduce_scatter", op="prod", bytes="996")),
        (["--collective", "all_gather", "--world", "4", "--bytes", "64", "--dtype", "fp8e5m2"],
         dict(what="all_gather", op="-", bytes="64")),
        (["--collective", "all_to_all", "--world", "16", "--bytes", "0", "--dtype", "f16"],
         dict(what="all_to_all", bytes="0")),
        (["--collective", "all_gather_v", "--world", "5", "--bytes", "300", "--dtype", "fp8e4m3",
          "--seed", "7"],
         dict(what="all_gather_v", bytes="300")),
        (["--collective", "reduce_scatter_v", "--world", "3", "--counts", "2,0,5", "--dtype",
          "bf16", "--op", "min", "--dynamic"],
         dict(what="reduce_scatter_v", op="min", bytes="14")),
        (["--collective", "all_to_all_v", "--world", "2", "--counts", "1,2;0,3", "--dtype", "f32"],
         dict(what="all_to_all_v", bytes="20")),
    ],
)
def test_match_exits_0_with_one_summary_line(capsys, argv, fields):
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, out + err
    m = summary(out)
    assert m["result"] == "match" and m["level"] == "coll"
    for k, v in fields.items():
        assert m[k] == v, (k, out)
    assert re.search(r" time=\d+\.\d+ms$", out.strip())


def test_file_mode(capsys, tmp_path):
    f = gather_v_file(tmp_path / "ag.mlir", "gather", "memref<3xbf16>", "memref<6xbf16>")
    code, out, _ = run_cli(capsys, str(f), "--counts", "3,0", "--world", "2")
    assert code == 0
    m = summary(out)
    assert (m["what"], m["world"], m["dtype"], m["op"]) == ("ag.mlir@gather", "2", "bf16", "-")


def drop_one_element(module, args, *, world, seed, options):
    """The coll level, except rank 1 never receives output element 3."""
    before = args[1][1][3].copy()
    coll_level.run(module, args, world=world, seed=seed, options=options)
    args[1][1][3] = before


@pytest.mark.parametrize("collective, op", [("all_gather", None), ("all_reduce", "sum")])
def test_broken_level_exits_1_naming_rank_and_offset(capsys, monkeypatch, collective, op):
    monkeypatch.setitem(levels.LEVELS, "coll", drop_one_element)
    argv = ["--collective", collective, "--world", "4", "--bytes", "256", "--dtype", "bf16"]
    code, out, _ = run_cli(capsys, *argv, *(["--op", op] if op else []))
    assert code == 1
    assert summary(out)["result"] == "mismatch"
    assert "rank 1 offset 3 of %out: got nan" in out


def test_level_that_writes_its_input_is_caught(capsys, monkeypatch):
    def clobber(module, args, *, world, seed, options):
        coll_level.run(module, args, world=world, seed=seed, options=options)
        args[0][2][0] = np.float32(0.25).astype(args[0][2].dtype)

    monkeypatch.setitem(levels.LEVELS, "coll", clobber)
    code, out, _ = run_cli(
        capsys, "--collective", "all_to_all", "--world", "3", "--bytes", "36", "--dtype", "f32"
    )
    assert code == 1
    assert "rank 2 offset 0 of %in" in out


def test_level_failure_exits_1(capsys, monkeypatch):
    def fails(module, args, *, world, seed, options):
        raise SimError("deadlock: rank 0 waits for slot 3")

    monkeypatch.setitem(levels.LEVELS, "coll", fails)
    code, out, _ = run_cli(
        capsys, "--collective", "all_gather", "--world", "2", "--bytes", "8", "--dtype", "f32"
    )
    assert code == 1
    assert "result=error: deadlock: rank 0 waits for slot 3" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "give either FILE or --collective NAME"),
        (["--collective", "all_reduce", "--world", "2", "--dtype", "bf16"], "needs --bytes"),
        (["--collective", "all_reduce", "--bytes", "8", "--dtype", "bf16"], "needs --world"),
        (["--collective", "all_reduce", "--world", "0", "--bytes", "8", "--dtype", "bf16"],
         "at least 1"),
        (["--collective", "all_reduce", "--world", "2", "--bytes", "8", "--dtype", "fp8e4m3",
          "--op", "prod"], "'prod' is not supported for fp8e4m3"),
        (["--collective", "all_gather", "--world", "2", "--bytes", "8", "--dtype", "f32",
          "--op", "sum"], "takes no reduction op"),
        (["--collective", "all_gather", "--world", "2", "--bytes", "8", "--dtype", "f32",
          "--counts", "1,2"], "takes no counts"),
        (["--collective", "all_gather_v", "--world", "3", "--counts", "1,2", "--dtype", "f32"],
         "needs 3 counts, got 2"),
        (["--collective", "all_to_all_v", "--world", "2", "--counts", "1,2,3", "--dtype", "f32"],
         "needs a 2x2 count matrix"),
        (["--collective", "all_gather_v", "--world", "2", "--counts", "1,x", "--dtype", "f32"],
         "must be integers"),
        (["--collective", "all_reduce", "--world", "2", "--bytes", "8", "--dtype", "bf16",
          "--level", "nope"], "unknown level 'nope'"),
        (["missing.mlir"], "cannot read missing.mlir"),
    ],
)
def test_usage_errors_exit_2(capsys, monkeypatch, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert out == ""
    assert message in err
    assert "Traceback" not in err


def test_bad_file_exits_2_with_a_located_diagnostic(capsys, tmp_path):
    f = tmp_path / "bad.mlir"
    f.write_text("""func.func @f(%a: memref<4xf8E4M3FN>) {
  coll.all_reduce prod %a, %a world 2 : memref<4xf8E4M3FN>, memref<4xf8E4M3FN>
  func.return
}""")
    code, _, err = run_cli(capsys, str(f))
    assert code == 2
    assert f"{f}:2:3: error:" in err and "prod" in err
    f.write_text("func.func @f(")
    code, _, err = run_cli(capsys, str(f))
    assert code == 2 and "Traceback" not in err


def test_file_mode_needs_counts_for_a_counts_argument(capsys, tmp_path):
    f = gather_v_file(tmp_path / "v.mlir", "f", "memref<2xf32>", "memref<4xf32>")
    code, _, err = run_cli(capsys, str(f))
    assert code == 2 and "give their values with --counts" in err
    code, _, err = run_cli(capsys, str(f), "--counts", "3,0")
    assert code == 2 and "the coll level cannot run" in err


def test_argparse_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--collective", "all_reduce", "--bytes", "x"])
    assert e.value.code == 2
    assert "invalid int value" in capsys.readouterr().err


def test_console_script():
    exe = shutil.which("purlin-run") or str(Path(sys.executable).parent / "purlin-run")
    ok = subprocess.run(
        [exe, "--collective", "all_reduce", "--world", "4", "--bytes", "64", "--dtype", "f16"],
        capture_output=True, text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("all_reduce world=4 dtype=f16 op=sum bytes=64 level=coll result=match")
    bad = subprocess.run([exe, "--world", "4"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stdout == ""
    assert "purlin-run: error:" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("argv,message", [
    (["--backend", "cpu", "--devices", "0,0"], "--devices places ranks on GPUs: it goes with --backend cuda"),
    (["--backend", "sim", "--devices", "0,x"], "--devices places ranks on GPUs"),
])
def test_devices_belong_to_the_cuda_backend(argv, message, capsys):
    from purlin.tools.run import main

    assert main(["--collective", "all_reduce", "--world", "2", "--bytes", "64", "--dtype", "f32", "--op", "sum",
                 *argv]) == 2
    assert message in capsys.readouterr().err
