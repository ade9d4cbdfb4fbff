"""purlin-opt targets that write the lowered plans of a module's kernels:
`-t plan-json` (a JSON list of plans, one a line) and `-t plan-hex` (each
plan's int64 words, as `Plan.encode` gives them to the runtimes, one a line in
16 hex digits, two's complement; plans follow one another)."""

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from purlin.atom import dialect as atom
from purlin.conversion.atom_to_plan import PlanBuildError, build_plan
from purlin.plan import plans_to_json


def _plans(module: ModuleOp):
    kernels = atom.required_kernels(module, "write")
    try:
        return [build_plan(k) for k in kernels]
    except PlanBuildError as e:
        raise DiagnosticException(str(e)) from None


@dataclass(frozen=True)
class PlanJsonTarget(Target):
    name = "plan-json"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(plans_to_json(_plans(module)) + "\n")


@dataclass(frozen=True)
class PlanHexTarget(Target):
    name = "plan-hex"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        for plan in _plans(module):
            output.write("\n".join(f"{int(w) & (2**64 - 1):016x}" for w in plan.encode()) + "\n")
