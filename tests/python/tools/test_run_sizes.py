"""`purlin-run --bytes` runs exactly the size asked for, or refuses it naming
the nearest sizes it can run (it used to round 2 bytes of an all_gather down
to 0 and report a match)."""

import pytest

from purlin.coll.builder import byte_step
from purlin.testing.cases import counts_for
from purlin.tools.run import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "collective, world, nbytes, dtype, nearest",
    [
        ("all_gather", 3, 2, "f32", "0 and 12"),
        ("all_reduce", 3, 1001, "f32", "1000 and 1004"),
        ("reduce_scatter", 4, 100, "bf16", "96 and 104"),
        ("all_to_all", 2, 6, "f32", "0 and 8"),
        ("all_gather_v", 3, 7, "f16", "6 and 8"),
        ("all_to_all_v", 2, 5, "f32", "4 and 8"),
    ],
)
def test_a_size_that_cannot_be_met_is_refused(capsys, collective, world, nbytes, dtype, nearest):
    code, out, err = run(capsys, "--collective", collective, "--world", str(world),
                         "--bytes", str(nbytes), "--dtype", dtype)
    assert code == 2 and out == ""
    assert f"--bytes {nbytes} cannot be met exactly" in err
    assert f"the nearest valid sizes are {nearest}" in err


@pytest.mark.parametrize(
    "collective, world, nbytes, dtype",
    [("all_gather", 3, 12, "f32"), ("all_reduce", 3, 1000, "f32"), ("all_to_all", 4, 0, "bf16"),
     ("all_gather_v", 5, 14, "f16"), ("reduce_scatter_v", 3, 12, "f32"),
     ("all_to_all_v", 5, 400, "f32"), ("all_to_all_v", 3, 9, "fp8e4m3")],
)
def test_a_size_that_can_be_met_runs_exactly(capsys, collective, world, nbytes, dtype):
    code, out, _ = run(capsys, "--collective", collective, "--world", str(world),
                       "--bytes", str(nbytes), "--dtype", dtype)
    assert code == 0, out
    assert f" bytes={nbytes} " in out and "result=match" in out


def test_byte_steps():
    assert byte_step("all_reduce", 8, "bf16") == 2
    assert byte_step("all_gather", 8, "bf16") == 16
    assert byte_step("reduce_scatter", 3, "f32") == 12
    assert byte_step("all_to_all", 5, "fp8e5m2") == 5
    assert byte_step("all_to_all_v", 5, "f32") == 4


@pytest.mark.parametrize("world, total, seed", [(1, 9, 0), (2, 0, 1), (4, 100, 2), (7, 33, 3)])
def test_balanced_matrices_send_and_receive_the_total_everywhere(world, total, seed):
    rows = counts_for("all_to_all_v", world, total, seed, balanced=True)
    assert [sum(r) for r in rows] == [total] * world
    assert [sum(r[d] for r in rows) for d in range(world)] == [total] * world


@pytest.mark.parametrize("collective, world, counts, nbytes, made", [
    ("all_gather_v", 3, "1,2,3", 4, 24), ("reduce_scatter_v", 3, "4,0,2", 8, 24),
    ("all_to_all_v", 2, "1,2;3,0", 4, 16)])
def test_bytes_that_disagree_with_the_counts_are_refused(capsys, collective, world, counts, nbytes, made):
    argv = ["--collective", collective, "--world", str(world), "--counts", counts, "--dtype", "f32"]
    code, out, err = run(capsys, *argv, "--bytes", str(nbytes))
    assert code == 2 and out == ""
    assert (f"--bytes {nbytes} and --counts {counts} disagree: those counts make the larger buffer of a rank "
            f"{made} bytes; give --counts alone") in err
    code, out, _ = run(capsys, *argv, "--bytes", str(made))
    assert code == 0 and f" bytes={made} " in out
