"""The copy-engine lowering (convert-coll-to-snac{copy-engine=true}) on the
CPU: snac-verify proves its stream role at worlds 2 to 16 and catches each
of its steps taken away; the plan of it runs on the CPU backend and equals
the reference at odd sizes; what it cannot take is refused. (Translation
validation of every level is in tests/python/levels through
collective_cases' copy-engine strategies; the GPU in
tests/python/runtime/test_runtime_cuda.py.)"""

from __future__ import annotations

import pytest
from xdsl.utils.exceptions import PassFailedException

from purlin.coll.builder import COLLECTIVES
from purlin.compile import compile_collective
from purlin.compile.pipeline import lower, make_context
from purlin.runtime import Communicator
from purlin.simulator.snac_verify import SnacVerifyPass
from purlin.snac import dialect as snac
from purlin.testing.cases import Case, counts_for
from purlin.testing.data import compare

COPIES = [n for n, c in COLLECTIVES.items() if not c.reduces]
OPTIONS = "symmetric=true copy-engine=true"


def case(name: str, world: int, elems: int, seed: int = 0) -> Case:
    if COLLECTIVES[name].variable:
        return Case(name, world, "bf16", None, counts=counts_for(name, world, elems, seed=seed))
    return Case(name, world, "bf16", None, elems)


def program(c: Case, options: str = OPTIONS):
    return lower(c.build_module(), f"coll-expand,convert-coll-to-snac{{{options}}}")


@pytest.mark.parametrize("world", [2, 3, 5, 8, 13, 16])
@pytest.mark.parametrize("name", COPIES)
def test_snac_verify_proves_the_stream_role(name, world):
    module = program(case(name, world, 37, seed=world))
    (prog,) = [op for op in module.walk() if isinstance(op, snac.ProgramOp)]
    (role,) = [op for op in prog.body.block.ops if isinstance(op, snac.RoleOp)]
    assert role.kind.data == snac.RoleKind.STREAM and role.blocks.value.data == 1
    SnacVerifyPass().apply(make_context(), module)


@pytest.mark.parametrize("step, error", [
    (snac.GrantOp, "missing notify: rank 0 \\(stream\\) waits for exchange_free"),
    (snac.ReclaimOp, "race: rank \\d \\(stream\\) writes rank \\d's output .* before rank \\d's call may have begun"),
    (snac.NotifyOp, "missing notify: rank 0 \\(stream\\) waits for exchange_ready"),
    (snac.WaitOp, "race: rank \\d \\(stream\\) writes rank \\d's output .* after rank \\d's call may have returned"),
], ids=lambda v: v.__name__ if isinstance(v, type) else "")
def test_each_step_taken_away_is_caught(step, error):
    module = program(case("all_gather", 3, 64))
    for op in [op for op in module.walk() if isinstance(op, step)]:
        op.detach()
        op.erase(safe_erase=False)
    with pytest.raises(PassFailedException, match=error):
        SnacVerifyPass().apply(make_context(), module)


@pytest.mark.parametrize("options", [OPTIONS, f"{OPTIONS} chunk-bytes=6"])
@pytest.mark.parametrize("world", [2, 3, 7])
@pytest.mark.parametrize("name", COPIES)
def test_the_cpu_backend_runs_the_plan(name, world, options):
    c = case(name, world, 301, seed=world)
    compiled = compile_collective(c.collective, world, c.dtype, None, c.count, c.counts, lowering=options)
    assert compiled.plan.symmetric
    args = c.make_args(seed=world)
    comm = Communicator(compiled.plan, backend="cpu")
    for _ in range(2):
        comm.run(*args)
    mismatch = compare(args[1], c.expected(args), c.dtype, None, 1, 1.0, "%out")
    assert mismatch is None, mismatch


def test_the_cost_model_never_picks_it_unasked():
    compiled = compile_collective("all_gather", 4, "bf16", None, 1 << 26, symmetric=True, ranks_per_device=4)
    assert compiled.cuda.source().stream == ()
