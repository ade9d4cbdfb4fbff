"""purlin-bench's single-process checks without GPUs: the torch reference it
checks CUDA results with agrees with the numpy one, --even-counts gives the V
forms even counts, and purlin is compiled for the placement of its ranks."""

import json

import numpy as np
import pytest

from purlin.coll.builder import COLLECTIVES
from purlin.testing.data import filler
from purlin.tools import bench

torch = pytest.importorskip("torch")


def as_torch(a: np.ndarray):
    """A CPU bf16 tensor holding the bits of numpy bf16 array `a`."""
    return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)


@pytest.mark.parametrize("even", [False, True])
@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("coll", COLLECTIVES)
def test_torch_reference_matches_numpy(coll, world, even):
    case, counts = bench._case(coll, 96, world, even)
    n_in, n_out = case.buffer_sizes()
    single = bench._SingleBench(list(range(world)), "cpu", "sm_90", [])
    inputs = [single.values(n_in, r) for r in range(world)]
    before = [filler("bf16", n_out) for _ in range(world)]
    numpy_expected = case.expected([inputs, before])
    torch_expected = bench.torch_expected(coll, [as_torch(a) for a in inputs], [as_torch(b) for b in before],
                                          counts)
    assert len(torch_expected) == world
    for mine, want in zip(torch_expected, numpy_expected):
        assert bench._same_bits(mine, as_torch(want))


def test_torch_reference_is_not_trivially_equal():
    # The comparison must see a single flipped bit, NaN fillers included.
    case, counts = bench._case("reduce_scatter_v", 96, 3)
    n_in, n_out = case.buffer_sizes()
    inputs = [as_torch(bench._SingleBench([0, 1, 2], "cpu", "sm_90", []).values(n_in, r)) for r in range(3)]
    before = [torch.full((n_out,), float("nan"), dtype=torch.bfloat16) for _ in range(3)]
    expected = bench.torch_expected("reduce_scatter_v", inputs, before, counts)
    assert bench._same_bits(expected[2], expected[2].clone())
    assert expected[2][counts[2]:].isnan().all()  # past rank 2's count: the filler stays
    wrong = expected[2].clone()
    wrong.view(torch.int16)[0] ^= 1
    assert not bench._same_bits(wrong, expected[2])


@pytest.mark.parametrize("coll", ["all_gather_v", "reduce_scatter_v", "all_to_all_v", "all_reduce_v"])
def test_even_counts_are_the_fixed_forms(coll):
    uneven = bench._counts(coll, 12, 3)
    even = bench._counts(coll, 12, 3, even=True)
    fixed = bench._counts(coll.removesuffix("_v"), 12, 3)
    assert even == fixed
    rows = even if coll == "all_to_all_v" else [even]
    assert all(row == [4, 4, 4] for row in rows)
    assert uneven != even


def test_all_reduce_v_at_even_counts_is_all_reduce_s_split():
    # Any number of elements (all_reduce's steps are one element), larger slices first.
    assert bench._counts("all_reduce_v", 14, 4, even=True) == [4, 4, 3, 3]
    case, _ = bench._case("all_reduce_v", 28, 4, even=True)
    assert case.buffer_sizes() == (14, 14)


def test_even_counts_option(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "PER_GRAPH", 1)
    monkeypatch.setattr(bench, "REPS", 1)
    runs = []
    real = bench._SingleBench.purlin

    def seen(self, case, *args):
        runs.append((case.collective, case.counts))
        real(self, case, *args)

    monkeypatch.setattr(bench._SingleBench, "purlin", seen)
    assert bench.main(["--single-process", "--backend", "cpu", "--gpus", "4", "--even-counts", "--sizes", "64",
                       "--collectives", "all_gather_v,reduce_scatter_v,all_to_all_v", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert (doc["even_counts"], doc["failures"]) == (True, [])
    assert runs == [("all_gather_v", (8, 8, 8, 8)), ("reduce_scatter_v", (8, 8, 8, 8)),
                    ("all_to_all_v", ((8, 8, 8, 8),) * 4)]


def test_purlin_is_compiled_for_the_placement(tmp_path, monkeypatch):
    import purlin.compile

    monkeypatch.setattr(bench, "PER_GRAPH", 1)
    monkeypatch.setattr(bench, "REPS", 1)
    calls = []
    real = purlin.compile.compile_collective

    def recorded(*args, **kwargs):
        calls.append({k: kwargs[k] for k in ("lowering", "symmetric", "ranks_per_device", "sms")})
        return real(*args, **kwargs)

    monkeypatch.setattr(purlin.compile, "compile_collective", recorded)
    assert bench.main(["--single-process", "--backend", "cpu", "--sizes", "16", "--collectives", "all_gather",
                       "--lowering", "b1=blocks=1", "--out", str(tmp_path)]) == 0
    cpu = {"symmetric": True, "ranks_per_device": 1, "sms": 0}
    assert calls == [{"lowering": "", **cpu}, {"lowering": "blocks=1", **cpu}]
    assert json.loads((tmp_path / "bench.json").read_text())["placement"] == cpu
