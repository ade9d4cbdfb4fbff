"""bench/kernel_digests.py without a GPU: one line per point, purlin-bench's
sizes, the same digests for the same kernel, other digests where a lowering
option changes the kernel, and its refusals."""

import pytest
from bench_scripts import bench_script


@pytest.fixture(scope="module")
def digests():
    with bench_script("kernel_digests") as module:
        yield module


def run(digests, capsys, *argv):
    assert digests.main(list(argv)) == 0
    return capsys.readouterr().out.splitlines()


def fields(line: str) -> dict:
    world, coll, nbytes, *rest = line.split()
    return {"world": int(world), "collective": coll, "bytes": int(nbytes), **dict(zip(rest[::2], rest[1::2]))}


def test_a_line_per_point_at_the_bench_sizes(digests, capsys):
    lines = run(digests, capsys, "--worlds", "3,5", "--sizes", "16,65536", "--collectives", "all_gather,all_reduce")
    got = [fields(line) for line in lines]
    assert [(g["world"], g["collective"], g["bytes"]) for g in got] == [
        (3, "all_gather", 12), (3, "all_gather", 65532), (3, "all_reduce", 16), (3, "all_reduce", 65536),
        (5, "all_gather", 10), (5, "all_gather", 65530), (5, "all_reduce", 16), (5, "all_reduce", 65536)]
    for g in got:
        assert int(g["grid"]) >= 1 and int(g["blocks/SM"]) >= 1
        assert len(g["source"]) == 12 and len(g["tables"]) == 12
    assert len({g["tables"] for g in got}) == len(got)


def test_the_same_point_twice_has_the_same_digests(digests, capsys):
    argv = ("--worlds", "8", "--sizes", "1048576", "--collectives", "all_to_all")
    assert run(digests, capsys, *argv) == run(digests, capsys, *argv)


def test_v_forms_at_the_benchmarks_even_counts_run_their_fixed_forms_kernel(digests, capsys):
    # one_gpu.py times the V forms --even-counts: at world 8 and 2 MiB all_to_all_v's kernel and grid are
    # all_to_all's (uneven counts would compile another).
    lines = run(digests, capsys, "--worlds", "8", "--sizes", "2097152", "--collectives", "all_to_all,all_to_all_v")
    fixed, v = (fields(line) for line in lines)
    assert (v["bytes"], v["grid"], v["source"]) == (fixed["bytes"], fixed["grid"], fixed["source"])


def test_a_lowering_option_that_changes_the_kernel_changes_its_line(digests, capsys):
    argv = ("--worlds", "4", "--sizes", "1048576", "--collectives", "all_gather")
    default = fields(run(digests, capsys, *argv)[0])
    fewer = fields(run(digests, capsys, *argv, "--lowering", "blocks=4")[0])
    assert fewer["grid"] != default["grid"] and fewer["bytes"] == default["bytes"]


def test_a_point_the_lowering_refuses_is_a_line_that_says_why(digests, capsys):
    assert digests.main(["--worlds", "4", "--sizes", "1024", "--collectives", "all_gather",
                         "--lowering", "blocks=-3"]) == 1
    assert capsys.readouterr().out == (
        "4 all_gather 1024 failed: convert-coll-to-snac: chunk-bytes, slots, blocks and sms must be non-negative\n")


@pytest.mark.parametrize("argv, message", [
    (["--collectives", "all_gather,broadcast"], "unknown collective(s) broadcast"),
    (["--worlds", "1"], "--worlds worlds of 2 or more"),
    (["--sms", "0"], "--sms and --sizes take positive numbers"),
])
def test_bad_arguments_are_refused(digests, capsys, argv, message):
    with pytest.raises(SystemExit):
        digests.main(argv)
    assert message in capsys.readouterr().err


def test_a_list_that_is_not_numbers_is_refused(digests):
    with pytest.raises(SystemExit, match="--sizes takes a comma-separated list"):
        digests.main(["--sizes", "1M"])
