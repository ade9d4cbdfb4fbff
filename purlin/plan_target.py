"""purlin-opt targets that write the lowered plan: `-t plan-json` and
`-t plan-bin` (the int64 words, little-endian, hex-encoded one word a line)."""

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from purlin.plan_builder import PlanBuildError, build_plan, kernels_in


def _plans(module: ModuleOp):
    kernels = kernels_in(module)
    if not kernels:
        raise DiagnosticException(
            "error: no atom.kernel to write; lower with convert-snac-to-atom first"
        )
    try:
        return [build_plan(k) for k in kernels]
    except PlanBuildError as e:
        raise DiagnosticException(f"error: {e}") from None


@dataclass(frozen=True)
class PlanJsonTarget(Target):
    name = "plan-json"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        for plan in _plans(module):
            output.write(plan.to_json() + "\n")


@dataclass(frozen=True)
class PlanBinTarget(Target):
    name = "plan-bin"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        for plan in _plans(module):
            output.write("\n".join(f"{int(w) & (2**64 - 1):016x}" for w in plan.encode()) + "\n")
