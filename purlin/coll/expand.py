"""`coll-expand`: every named collective becomes its generic `coll.collective`,
and a grouped `coll.collective` (layouts over group-local ranks) the one whose
named layouts cover the world."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from purlin.coll.dialect import CollectiveOp, NamedCollective
from purlin.coll.layouts import LayoutError
from purlin.diagnostics import op_error


class ExpandNamedCollective(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: NamedCollective, rewriter: PatternRewriter) -> None:
        try:
            inp, out = op.layouts()
        except LayoutError as e:
            raise PassFailedException(
                op_error(op, f"'{op.name}': cannot expand to coll.collective: {e}")
            ) from e
        generic = CollectiveOp.of_layouts(op.input, op.output, (inp, out), op.consume_attr(),
                                          deterministic=op.deterministic is not None, counts=op.counts)
        # Discardable attributes (tags, hints) belong to the call, not its form.
        generic.attributes.update(op.attributes)
        # Later passes report errors at the source op.
        generic.location = op.location
        rewriter.replace(op, generic)


class ExpandGroups(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CollectiveOp, rewriter: PatternRewriter) -> None:
        if op.groups is None:
            return
        generic = CollectiveOp.of_layouts(op.input, op.output, op.layouts(), op.consume,
                                          deterministic=op.deterministic is not None)
        generic.attributes.update(op.attributes)
        generic.location = op.location
        rewriter.replace(op, generic)


@dataclass(frozen=True)
class CollExpandPass(ModulePass):
    name = "coll-expand"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([ExpandNamedCollective(), ExpandGroups()]),
            apply_recursively=False,
        ).rewrite_module(op)
