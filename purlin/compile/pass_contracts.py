"""What each of purlin's passes takes and lowers, checked around every pass.

A collective goes through four forms; a pass takes some of them and a
lowering pass leaves none of its form (or an earlier one) behind. A pass
given none of what it takes would return its input unchanged, and a lowering
that leaves an op it should have lowered would hand it to a later pass that
ignores it: both are errors, located at the op and naming the passes that
were missing (e.g. convert-coll-to-snac takes coll.collective, so a named
coll.all_reduce needs coll-expand first).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from purlin.atom import dialect as atom
from purlin.coll.dialect import CollectiveOp, NamedCollective
from purlin.diagnostics import op_error
from purlin.snac import dialect as snac


@dataclass(frozen=True)
class Form:
    what: str
    op: type[Operation]
    lowered_by: str | None  # the pass that lowers this form to the next


# In lowering order.
FORMS: tuple[Form, ...] = (
    Form("a named collective", NamedCollective, "coll-expand"),
    Form("coll.collective", CollectiveOp, "convert-coll-to-snac"),
    Form("snac.program", snac.ProgramOp, "convert-snac-to-atom"),
    Form("atom.kernel", atom.KernelOp, None),
)

# The forms each pass takes (indices into FORMS). coll-expand takes the
# generic form too, which it leaves as it is.
TAKES: dict[str, tuple[int, ...]] = {
    "coll-expand": (0, 1),
    "convert-coll-to-snac": (1,),
    "snac-verify": (2, 3),
    "convert-snac-to-atom": (2,),
}


def _form(op: Operation) -> int | None:
    for i, f in enumerate(FORMS):
        if isinstance(op, f.op):
            return i
    return None


def _forms(module: ModuleOp) -> list[tuple[int, Operation]]:
    return [(i, op) for op in module.walk() if (i := _form(op)) is not None]


def _names(forms: tuple[int, ...]) -> str:
    return " or ".join(FORMS[i].what for i in forms)


def _passes_between(start: int, stop: int) -> str:
    """The passes that lower form `start` to form `stop`."""
    return ",".join(FORMS[i].lowered_by or "" for i in range(start, stop))


def check_applies(name: str, module: ModuleOp) -> None:
    """PassFailedException unless `module` holds something pass `name` takes."""
    takes = TAKES.get(name)
    if takes is None:
        return
    present = _forms(module)
    if any(i in takes for i, _ in present):
        return
    wants = _names(takes)
    if not present:
        raise PassFailedException(
            f"pass '{name}' does not apply: it takes {wants}, and the module holds no collective"
        )
    form, op = min(present, key=lambda p: p[0])
    if form < min(takes):
        raise PassFailedException(op_error(
            op, f"'{op.name}': pass '{name}' does not apply to it: it takes {wants}; run "
            f"{_passes_between(form, min(takes))} before it"
        ))
    raise PassFailedException(op_error(
        op, f"'{op.name}': pass '{name}' does not apply to it: it takes {wants}, and this "
        f"{FORMS[form].what} is lowered past that"
    ))


def check_pipeline_step(previous: ModulePass | None, module: ModuleOp,
                        following: ModulePass | None) -> None:
    """Between two passes of a pipeline (a PassPipeline callback's arguments):
    what `previous` should have lowered is gone, and `following` applies."""
    if previous is not None:
        check_lowered(previous.name, module)
    if following is not None:
        check_applies(following.name, module)


def check_lowered(name: str, module: ModuleOp) -> None:
    """PassFailedException when lowering pass `name` left its form, or an
    earlier one, in `module`."""
    lowers = next((i for i, f in enumerate(FORMS) if f.lowered_by == name), None)
    if lowers is None:
        return
    for form, op in _forms(module):
        if form < lowers:
            raise PassFailedException(op_error(
                op, f"'{op.name}': left unlowered by pass '{name}', which lowers "
                f"{FORMS[lowers].what}; run {_passes_between(form, lowers)} before it"
            ))
        if form == lowers:
            raise PassFailedException(op_error(op, f"'{op.name}': pass '{name}' left it unlowered"))
