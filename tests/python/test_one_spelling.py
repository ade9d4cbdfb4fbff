"""One spelling each: dtypes are named as printed (fp8e4m3) or as the IR's
element types (f8E4M3FN), and printed one way; static and dynamic V counts
size buffers by one rule; `-t plan-hex` says what it writes; several plans
form one JSON document."""

import json

import numpy as np
import pytest

from purlin import plan as P
from purlin.compile import compile_plan
from purlin.dtypes import numpy_dtype
from purlin.testing.cases import Case
from purlin.tools.opt import main as opt_main
from purlin.tools.run import main as run_main


@pytest.mark.parametrize("given, printed", [("f8E4M3FN", "fp8e4m3"), ("fp8e4m3", "fp8e4m3"),
                                            ("f8E5M2", "fp8e5m2"), ("bf16", "bf16")])
def test_purlin_run_takes_both_spellings_and_prints_one(capsys, given, printed):
    assert run_main(["--collective", "all_gather", "--world", "2", "--bytes", "8", "--dtype", given]) == 0
    assert f" dtype={printed} " in capsys.readouterr().out


def test_the_python_api_takes_both_spellings():
    assert Case("all_reduce", 2, "f8E4M3FN", "sum", 4).dtype == "fp8e4m3"
    assert numpy_dtype("f8E5M2") == numpy_dtype("fp8e5m2")
    assert compile_plan("all_gather", 2, "f8E5M2", None, 8).dtype == "fp8e5m2"


V_FORMS = {
    # name: (static op text, dynamic op text, input, output, counts, the buffer that
    # holds the sum of the counts)
    "all_gather_v": ("coll.all_gather_v %in, %out world 2 counts [3, 5]",
                     "coll.all_gather_v %in, %out world 2 counts %c", 5, 8, "3,5", "out"),
    "reduce_scatter_v": ("coll.reduce_scatter_v sum %in, %out world 2 counts [3, 5]",
                         "coll.reduce_scatter_v sum %in, %out world 2 counts %c", 8, 5, "3,5", "in"),
}


def _v_file(tmp_path, form: str, dynamic: bool, n_in: int, n_out: int):
    static_op, dynamic_op, *_ = V_FORMS[form]
    t_in, t_out = f"memref<{n_in}xf32>", f"memref<{n_out}xf32>"
    counts = ", %c: memref<2xi64>" if dynamic else ""
    types = f"{t_in}, {t_out}" + (", memref<2xi64>" if dynamic else "")
    f = tmp_path / f"{form}_{dynamic}_{n_in}_{n_out}.mlir"
    f.write_text(f"func.func @f(%in: {t_in}, %out: {t_out}{counts}) {{\n"
                 f"  {dynamic_op if dynamic else static_op} : {types}\n  func.return\n}}\n")
    return str(f)


@pytest.mark.parametrize("form", sorted(V_FORMS))
@pytest.mark.parametrize("extra, code", [(0, 0), (3, 0), (-1, 2)])
def test_static_and_dynamic_counts_size_buffers_alike(capsys, tmp_path, form, extra, code):
    # The buffer holding the sum of the counts may be larger than the sum, never smaller.
    *_, n_in, n_out, counts, total = V_FORMS[form]
    n_in, n_out = (n_in + extra, n_out) if total == "in" else (n_in, n_out + extra)
    static = run_main([_v_file(tmp_path, form, False, n_in, n_out)])
    dynamic = run_main([_v_file(tmp_path, form, True, n_in, n_out), "--counts", counts])
    assert (static, dynamic) == (code, code), capsys.readouterr()


TWO_KERNELS = """func.func @f(%a: memref<4xf32>, %b: memref<8xf32>) {
  coll.all_gather %a, %b world 2 : memref<4xf32>, memref<8xf32>
  coll.all_reduce sum %b, %b world 2 : memref<8xf32>, memref<8xf32>
  func.return
}
"""
PIPELINE = "coll-expand,convert-coll-to-snac,convert-snac-to-atom"


def test_several_plans_are_one_json_list(capsys, tmp_path):
    f = tmp_path / "two.mlir"
    f.write_text(TWO_KERNELS)
    assert opt_main([str(f), "-p", PIPELINE, "-t", "plan-json"]) == 0
    out = capsys.readouterr().out
    docs = json.loads(out)
    assert [d["world"] for d in docs] == [2, 2] and docs[0]["output_elems"] == 8
    plans = P.plans_from_json(out)
    assert P.plans_to_json(plans) + "\n" == out


def test_plan_hex_writes_the_encoded_words(capsys, tmp_path):
    f = tmp_path / "two.mlir"
    f.write_text(TWO_KERNELS)
    assert opt_main([str(f), "-p", PIPELINE, "-t", "plan-json"]) == 0
    plans = P.plans_from_json(capsys.readouterr().out)
    assert opt_main([str(f), "-p", PIPELINE, "-t", "plan-hex"]) == 0
    lines = capsys.readouterr().out.split()
    assert all(len(x) == 16 for x in lines)
    words = np.array([int(x, 16) for x in lines], dtype=np.uint64).view(np.int64)
    expected = np.concatenate([p.encode() for p in plans])
    assert np.array_equal(words, expected)


def test_plan_bin_is_no_more(capsys, tmp_path):
    f = tmp_path / "two.mlir"
    f.write_text(TWO_KERNELS)
    with pytest.raises(SystemExit) as e:
        opt_main([str(f), "-t", "plan-bin"])
    assert e.value.code == 2
    assert "invalid choice: 'plan-bin'" in capsys.readouterr().err


def test_plans_from_json_refuses_what_is_not_a_list():
    with pytest.raises(P.PlanError, match="expected a JSON list of plans"):
        P.plans_from_json('{"format": "purlin-plan"}')
    with pytest.raises(P.PlanError, match="malformed plan JSON"):
        P.plans_from_json("[{")
