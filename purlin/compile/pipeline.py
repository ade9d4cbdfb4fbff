"""The default lowering pipeline and the IR plumbing every path shares:
context, parsing, lowering with the pass contracts checked, entry function."""

from __future__ import annotations

import re
from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import ArgSpecParseError

from purlin.compile.pass_contracts import check_pipeline_step
from purlin.compile.universe import PASSES, dialect_factories
from purlin.diagnostics import LocatedParser, verify_located

FULL_PIPELINE: tuple[str, ...] = (
    "coll-expand",
    "convert-coll-to-snac",
    "snac-verify",
    "convert-snac-to-atom",
)
# Where each level's IR is complete: how many passes of FULL_PIPELINE it takes.
LEVEL_DEPTH = {"coll": 1, "snac": 3, "atom": 4}


def pipeline_spec(to: str = "atom", *, lowering: str = "", arch: str | None = None,
                  multimem: bool = False, verify: bool = True) -> str:
    """The default pipeline as far as level `to` ("coll": expanded, "snac",
    "atom"): `lowering` the options of convert-coll-to-snac, `arch` and
    `multimem` those of convert-snac-to-atom; `verify` keeps snac-verify
    (the interpreters leave it out: they check each schedule they run)."""
    if to not in LEVEL_DEPTH:
        raise ValueError(f"unknown level '{to}', expected one of {', '.join(LEVEL_DEPTH)}")
    atom_options = " ".join(([f"arch={arch}"] if arch else []) + (["multimem=true"] if multimem else []))
    options = {"convert-coll-to-snac": lowering, "convert-snac-to-atom": atom_options}
    passes = [p for p in FULL_PIPELINE[: LEVEL_DEPTH[to]] if verify or p != "snac-verify"]
    return ",".join(f"{p}{{{options[p]}}}" if options.get(p) else p for p in passes)


class EntryError(Exception):
    """The module has no function of the name asked for, or not exactly one to take."""


PipelineCallback = Callable[[ModulePass | None, ModuleOp, ModulePass | None], None]


def make_context() -> Context:
    """xDSL's dialects plus purlin's, loaded lazily."""
    ctx = Context()
    for name, factory in dialect_factories().items():
        ctx.register_dialect(name, factory)
    return ctx


def parse_module(text: str, filename: str = "<input>") -> ModuleOp:
    """Parse and verify; errors are located diagnostics (ParseError, VerifyException)."""
    module = LocatedParser(make_context(), text, filename).parse_module()
    verify_located(module)
    return module


def pipeline(passes: str, callback: PipelineCallback | None = None) -> PassPipeline:
    """The pass pipeline `passes` of purlin's passes; ValueError naming it
    when a pass or an option is unknown or the text does not parse."""
    try:
        return PassPipeline.parse_spec(PASSES, passes, callback)
    except (ArgSpecParseError, ValueError) as e:
        # ArgSpecParseError is a BaseException in xDSL, which would escape every handler.
        raise ValueError(f"invalid pass pipeline '{passes}': {option_names(str(e))}") from None


def option_names(message: str) -> str:
    """xDSL's message with the options named as a pipeline spells them
    (chunk-bytes, not the field chunk_bytes)."""
    return re.sub(r'"(\w+)"', lambda m: '"' + m.group(1).replace("_", "-") + '"', message)


def check_step(previous: ModulePass | None, module: ModuleOp, following: ModulePass | None,
               verify: bool = True) -> None:
    """Every pipeline's callback, before the first pass and after each: the IR
    verifies (located diagnostics naming the pass that made it; `verify`
    False skips this, as purlin-opt's --disable-verify does), each pass is
    given something it takes and leaves nothing it should have lowered."""
    if verify:
        verify_located(module, previous.name if previous else None)
    check_pipeline_step(previous, module, following)


def lower(module: ModuleOp, passes: str) -> ModuleOp:
    """A copy of `module` after the comma-separated pass pipeline `passes`,
    checked between the passes (check_step)."""
    lowered = module.clone()
    pipeline(passes, check_step).apply(make_context(), lowered)
    return lowered


def entry_function(module: ModuleOp, name: str | None = None) -> FuncOp:
    """The function named `name`, or the module's only function."""
    funcs = [op for op in module.walk() if isinstance(op, FuncOp)]
    if name is not None:
        for f in funcs:
            if f.sym_name.data == name:
                return f
        raise EntryError(f"no function @{name} in the module")
    if len(funcs) != 1:
        names = ", ".join("@" + f.sym_name.data for f in funcs) or "none"
        raise EntryError(f"expected exactly one function to run, found {names}; name one")
    return funcs[0]
