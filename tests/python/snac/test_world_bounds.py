"""World sizes: up to MAX_WORLD the tools work, beyond it they refuse at once
(world 99999999999999999999 used to parse, and world 1000 ran out of memory
or for minutes); and the simulator's work grows with the protocol's steps,
not with the steps times the threads."""

import pytest

from purlin.coll.builder import SpecError
from purlin.coll.layouts import MAX_WORLD, Layout, LayoutError, LayoutKind
from purlin.compile.pipeline import lower, parse_module
from purlin.simulator import snac_machine as snac_exec
from purlin.simulator import symmetric_memory
from purlin.snac.dialect import ProgramOpBase
from purlin.testing.cases import Case
from purlin.tools.opt import main as opt_main
from purlin.tools.run import main as run_main


def all_reduce_text(world: int) -> str:
    t = f"memref<{world}xf32>"
    return (f"func.func @f(%a: {t}) {{\n  coll.all_reduce sum %a, %a world {world} : {t}, {t}\n"
            "  func.return\n}\n")


@pytest.mark.parametrize("world", ["1000", str(MAX_WORLD + 1), "99999999999999999999"])
def test_purlin_run_refuses_a_world_beyond_the_bound(capsys, world):
    code = run_main(["--collective", "all_reduce", "--world", world, "--bytes", "4096",
                     "--dtype", "f32", "--backend", "cpu"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert f"--world {world}: world size {world} is more than the {MAX_WORLD} ranks" in err


def test_purlin_opt_refuses_a_huge_world_where_it_is_written(capsys, tmp_path):
    f = tmp_path / "huge.mlir"
    f.write_text(all_reduce_text(2).replace("world 2", "world 99999999999999999999"))
    assert opt_main([str(f)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{f}:2:3: error: 'coll.all_reduce': world size 99999999999999999999 "
                          f"is more than the {MAX_WORLD} ranks purlin handles")


def test_the_largest_world_verifies_and_expands():
    module = lower(parse_module(all_reduce_text(MAX_WORLD)), "coll-expand")
    assert f"world {MAX_WORLD}" in str(module)


@pytest.mark.parametrize("world", [0, MAX_WORLD + 1])
def test_layouts_and_cases_share_the_bound(world):
    with pytest.raises(LayoutError, match="world size"):
        Layout.fixed(LayoutKind.SCATTERED, world, 1).check()
    with pytest.raises(SpecError, match="world size"):
        Case("all_gather", world, "f32", None, 1)


def _program(collective: str, world: int):
    op = None if collective == "all_to_all" else "sum"
    count = 64 * world if collective == "all_reduce" else 64
    module = lower(Case(collective, world, "bf16", op, count).build_module(),
                   "coll-expand,convert-coll-to-snac{regime=throughput}")
    return next(p for p in module.walk() if isinstance(p, ProgramOpBase))


def _signal_reads(monkeypatch, program) -> int:
    """How often snac-verify (one seed) reads a signal's value: each wait
    condition it checks is one read."""

    class Counting(snac_exec.Signal):
        reads = 0

        def __init__(self, value=0, clock=None):
            self._value, self.clock = value, clock

        @property
        def value(self):
            Counting.reads += 1
            return self._value

        @value.setter
        def value(self, v):
            self._value = v

    # World makes its signals from the memory module's class.
    monkeypatch.setattr(symmetric_memory, "Signal", Counting)
    snac_exec.verify_program(program, calls=3, seeds=(0,))
    return Counting.reads


@pytest.mark.parametrize("collective", ["all_reduce", "all_to_all"])
def test_wait_checks_grow_with_the_protocol_not_with_the_threads(monkeypatch, collective):
    # Both protocols take world^2 steps. A scheduler that rechecks every
    # blocked wait at every step reads signals 6-8 times as often at twice the
    # world; one that looks at a wait only when its signal is stored, 4 times.
    small = _signal_reads(monkeypatch, _program(collective, 16))
    large = _signal_reads(monkeypatch, _program(collective, 32))
    assert large <= 5 * small, (small, large)


def test_the_largest_world_verifies_and_compiles_one_rank():
    """At MAX_WORLD, snac-verify proves the direct all_reduce (on rank 0, the
    others being its rotations) and one rank's plan is built from its own
    records: a rank's units and groups, not the world's."""
    from purlin.coll.builder import CollectiveSpec
    from purlin.compile import compile_rank_plan

    module = lower(CollectiveSpec("all_reduce", MAX_WORLD, "bf16", "sum", 1024).build_module(),
                   "coll-expand,convert-coll-to-snac,snac-verify")
    assert f"world {MAX_WORLD}" in str(module)
    last = compile_rank_plan("all_reduce", MAX_WORLD, "bf16", "sum", MAX_WORLD - 1, 1 << 20)
    first = compile_rank_plan("all_reduce", MAX_WORLD, "bf16", "sum", 0, 1 << 20)
    assert last.rank == MAX_WORLD - 1 and first.instructions == last.instructions
    # Composed: a rank reduces its own slice from every peer and forwards it to
    # every peer, so its program grows with the world, once.
    assert first.instructions < 16 * MAX_WORLD
