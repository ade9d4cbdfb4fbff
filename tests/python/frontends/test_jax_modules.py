"""The modules JAX emits for collectives in shard_map and pmap, generated here
with JAX (a sample of bench/jax_corpus.py's corpus: every collective, both
partitioners, pretty and generic form): each imports, and its run by purlin
(collectives on the CPU backend, each call checked against the coll level)
equals JAX's own outputs. purlin-run runs such a file, and no mutant of one
gives a traceback."""

import random
import re

import numpy as np
import pytest
from bench_scripts import bench_script

jax = pytest.importorskip("jax")

from purlin.frontends.spmd import Global  # noqa: E402
from purlin.tools import run_imported  # noqa: E402
from purlin.tools.opt import main as opt_main  # noqa: E402
from purlin.tools.run import main as run_main  # noqa: E402

try:
    jax.config.update("jax_num_cpu_devices", 8)
except RuntimeError:  # a backend started already: the fixture says whether it has the devices
    pass



@pytest.fixture(scope="module")
def corpus():
    if len(jax.devices("cpu")) < 8:
        pytest.skip("needs 8 CPU devices; JAX started with fewer before this module set jax_num_cpu_devices")
    with bench_script("jax_corpus") as module:
        yield module


# (name prefix, mesh): the first case of the corpus of each. Every collective,
# one axis, both, three axes, part of the mesh, ranks 0 to 3, pmap.
SAMPLE = [
    ("psum_x_r2", (2, 4)), ("pmax_xy_r3", (2, 4)), ("pmin_y_r1", (4, 2)), ("pmean_xy_r2", (2, 4)),
    ("psum_x_r0", (8,)), ("all_gather_y_r2", (2, 4)), ("all_gather_x_r1", (3,)), ("psum_scatter_y_r2", (2, 4)),
    ("psum_scatter_xyz_r3", (2, 2, 2)), ("all_to_all_x_r2", (4, 2)), ("ppermute_x_r1_partial", (2, 4)),
    ("ppermute_yz_r2_shift", (2, 2, 2)), ("partial_psum", (2, 4)), ("mixed_axis_index", (2, 3)),
    ("mixed_pmean_int", (2, 4)), ("pmap_all_to_all_", (4,)), ("pmap_psum_scatter_", (8,)),
    # Programs around the collectives: dot_general, a while holding a permute,
    # a case holding an all_reduce, pad, gather, scatter, sort, a two-operand
    # reduce, reduce_window.
    ("prog_matmul_psum", (2, 4)), ("prog_ring_sum", (2, 2, 2)), ("prog_cond_psum", (2, 4)),
    ("prog_indexing_psum", (2, 4)), ("prog_argmax_pmax", (8,)), ("prog_cumsum_psum", (3,)),
]


def _sample(corpus):
    cases = corpus.cases()
    picked = []
    for prefix, mesh in SAMPLE:
        found = [c for c in cases if c.name.startswith(prefix) and c.mesh == mesh]
        assert found, (prefix, mesh)
        picked.append(found[0])
    return picked


def _cpu():
    return run_imported.level_runner("plan", "cpu")


@pytest.mark.parametrize("partitioner", ["shardy", "gspmd"])
@pytest.mark.parametrize("form", ["pretty", "generic"])
def test_jax_modules_import_and_run_as_jax_computes(corpus, partitioner, form):
    run = _cpu()
    for case in _sample(corpus):
        text = case.lower(partitioner, form)
        program = run_imported.import_program(text, case.name)
        inputs = case.inputs(seed=3)
        result = run_imported.run_program(program, inputs, run)
        assert result.mismatch is None, (case.name, result.mismatch)
        assert result.calls >= 1, case.name
        want = case.expected(inputs)
        assert len(result.outputs) == len(want)
        for got, w in zip(result.outputs, want):
            assert isinstance(got, Global), case.name
            assert corpus._equal(got.value, w), (case.name, got.value, w)


def test_a_pmean_is_one_average_and_an_integer_one_a_sum(corpus):
    by_name = {c.name: c for c in _sample(corpus)}
    mean = next(c for n, c in by_name.items() if n.startswith("pmean_xy_r2"))
    program = run_imported.import_program(mean.lower("shardy", "pretty"), mean.name)
    text = str(program.module)
    assert "coll.all_reduce avg" in text and "stablehlo.divide" not in text
    integer = next(c for n, c in by_name.items() if n.startswith("mixed_pmean_int"))
    text = str(run_imported.import_program(integer.lower("gspmd", "pretty"), integer.name).module)
    assert "coll.all_reduce sum" in text and "stablehlo.divide" in text


def test_purlin_run_runs_a_jax_file(corpus, tmp_path, capsys):
    case = next(c for c in _sample(corpus) if c.name.startswith("psum_scatter_y_r2"))
    path = tmp_path / "scatter.mlir"
    path.write_text(case.lower("gspmd", "generic"))
    assert run_main([str(path), "--backend", "cpu", "--seed", "2"]) == 0
    out = capsys.readouterr().out.strip()
    assert re.fullmatch(r"scatter\.mlir@main world=8 dtype=\w+ op=sum bytes=\d+ level=plan backend=cpu "
                        r"result=match time=[\d.]+ms", out), out


def _mutants(text: str, rng: random.Random, n: int) -> list[str]:
    lines = text.splitlines()
    numbers = [m.start() for m in re.finditer(r"\d+", text)]
    out = []
    for _ in range(n):
        kind = rng.randrange(4)
        if kind == 0:  # a line dropped
            k = rng.randrange(len(lines))
            out.append("\n".join(lines[:k] + lines[k + 1:]))
        elif kind == 1:  # cut short
            out.append(text[: rng.randrange(len(text))])
        elif kind == 2:  # a number changed
            at = rng.choice(numbers)
            out.append(text[:at] + str(rng.choice([0, 1, 3, 7, 64])) + text[at:].lstrip("0123456789"))
        else:  # two lines swapped
            a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
            swapped = list(lines)
            swapped[a], swapped[b] = swapped[b], swapped[a]
            out.append("\n".join(swapped))
    return out


def test_no_mutant_of_a_jax_module_gives_a_traceback(corpus, tmp_path, capsys):
    rng = random.Random(7)
    sample = _sample(corpus)
    path = tmp_path / "m.mlir"
    modules = [(sample[3], "shardy", "pretty", 12), (sample[6], "gspmd", "generic", 12),
               (sample[13], "gspmd", "pretty", 12)]
    # The ops around the collectives: while, case, dot_general, pad, gather, scatter, sort, reduce_window.
    modules += [(next(c for c in sample if c.name.startswith(n)), p, f, 8) for n, p, f in (
        ("prog_ring_sum", "shardy", "generic"), ("prog_cond_psum", "gspmd", "pretty"),
        ("prog_matmul_psum", "shardy", "pretty"), ("prog_indexing_psum", "gspmd", "generic"),
        ("prog_argmax_pmax", "shardy", "pretty"), ("prog_cumsum_psum", "gspmd", "pretty"))]
    for case, partitioner, form, n in modules:
        for text in _mutants(case.lower(partitioner, form), rng, n):
            path.write_text(text)
            assert run_main([str(path)]) in (0, 1, 2)
            assert opt_main([str(path), "-p", "convert-stablehlo-to-coll"]) in (0, 1, 2)
            captured = capsys.readouterr()
            assert "Traceback" not in captured.out + captured.err


def test_inputs_split_and_outputs_put_back_as_the_shardings_say(corpus):
    """A global input whose devices each hold a distinct box: the program (a
    psum over x) sees each device's own box, and the output holds every box."""
    case = next(c for c in _sample(corpus) if c.name.startswith("psum_x_r2"))
    for partitioner in ("shardy", "gspmd"):
        program = run_imported.import_program(case.lower(partitioner, "pretty"), case.name)
        assert program.global_inputs
        shape = case.shapes[0]
        x = np.arange(np.prod(shape)).reshape(shape).astype(case.inputs()[0].dtype)
        (out,) = run_imported.run_program(program, [x], run_imported.level_runner()).outputs
        assert corpus._equal(out.value, case.expected([x])[0])
