"""`coll-expand`: every named collective becomes its generic `coll.collective`."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from purlin.dialects.coll import CollectiveOp, LayoutAttr, NamedCollective
from purlin.diagnostics import op_error
from purlin.layouts import LayoutError


class ExpandNamedCollective(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: NamedCollective, rewriter: PatternRewriter) -> None:
        try:
            inp, out = op.layouts()
        except LayoutError as e:
            raise PassFailedException(
                op_error(op, f"'{op.name}': cannot expand to coll.collective: {e}")
            ) from e
        generic = CollectiveOp(
            op.input,
            op.output,
            LayoutAttr.from_layout(inp),
            LayoutAttr.from_layout(out),
            op.consume_attr(),
            deterministic=op.deterministic is not None,
            counts=op.counts,
        )
        # Discardable attributes (tags, hints) belong to the call, not its form.
        generic.attributes.update(op.attributes)
        # Later passes report errors at the source op.
        generic.location = op.location
        rewriter.replace(op, generic)


@dataclass(frozen=True)
class CollExpandPass(ModulePass):
    name = "coll-expand"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(ExpandNamedCollective(), apply_recursively=False).rewrite_module(op)
