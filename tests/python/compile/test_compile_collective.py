"""compile_collective's verify_steps: without the verification after each
pass (what purlin.torch lowers at run time, size by size) the plan, the
tables and the kernel are the same, and the module is verified once."""

import importlib

import pytest

from purlin import compile as purlin_compile
from purlin.compile import compile_collective

# The module: purlin.compile's attribute of that name is its pipeline function.
pipeline_module = importlib.import_module("purlin.compile.pipeline")

CASES = [
    ("all_reduce", 4, "bf16", "sum", 1024, ""),
    ("all_reduce", 3, "f32", "max", 4096, "regime=throughput strategy=composed chunk-bytes=1024 slots=2"),
    ("all_gather", 5, "f16", None, 64, "regime=latency"),
    ("reduce_scatter", 8, "bf16", "sum", 1 << 16, "symmetric=true ranks-per-device=8 sms=132"),
    ("all_to_all", 6, "f32", None, 300, "regime=throughput"),
]


@pytest.mark.parametrize("collective, world, dtype, op, count, lowering", CASES)
def test_without_step_checks_the_lowering_is_the_same(collective, world, dtype, op, count, lowering):
    checked = compile_collective(collective, world, dtype, op, count, arch="sm_90", lowering=lowering)
    quick = compile_collective(collective, world, dtype, op, count, arch="sm_90", lowering=lowering,
                               verify_steps=False)
    assert quick.plan == checked.plan
    assert [t.tolist() for t in quick.cuda.tables.ranks] == [t.tolist() for t in checked.cuda.tables.ranks]
    assert quick.cuda.source().text == checked.cuda.source().text


def test_without_step_checks_the_module_is_verified_once(monkeypatch):
    calls = []

    def counting(module, after=None):
        calls.append(after)

    monkeypatch.setattr(purlin_compile, "verify_located", counting)
    monkeypatch.setattr(pipeline_module, "verify_located", counting)
    compile_collective("all_reduce", 4, "bf16", "sum", 999 * 4, verify_steps=False)
    assert calls == [None]
    calls.clear()
    compile_collective("all_reduce", 4, "bf16", "sum", 999 * 4)
    assert len(calls) > 2 and calls[0] is None and all(calls[1:])
