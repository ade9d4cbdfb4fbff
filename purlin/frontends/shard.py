"""The collectives of MLIR's `shard` dialect that xDSL 0.74 lacks:
`shard.all_gather`, `shard.all_slice`, `shard.all_to_all` and
`shard.reduce_scatter`, as upstream defines them. They join xDSL's own
`shard` ops (grid, all_reduce, ...) in purlin's contexts (`SHARD_OPS`,
which `purlin.compile.universe` adds to its `shard` dialect): one dialect namespace.

    %g = shard.all_gather %x on @grid grid_axes = [1] gather_axis = 1 : tensor<2x2xf32> -> tensor<2x8xf32>
"""

from __future__ import annotations

from xdsl.dialects.builtin import IndexTypeConstr, IntegerAttr, TensorType
from xdsl.dialects.shard import CollectiveCommunicationOp, ReductionKind, ReductionKindAttr
from xdsl.irdl import operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from purlin.declarations import define_op

_PREFIX = "$input `on` $grid (`grid_axes` `=` $grid_axes^)? "
_SUFFIX = "attr-dict `:` type($input) `->` type($result)"


def _collective(cls_name: str, op_name: str, doc: str, *axes: str, reduction: bool = False):
    """A shard collective on one tensor, with an index property per axis
    (and an optional reduction kind), printed in upstream's syntax."""
    fields: dict = {"input": operand_def(TensorType)}
    middle = ""
    if reduction:
        fields["reduction"] = prop_def(ReductionKindAttr, default_value=ReductionKindAttr(ReductionKind.SUM))
        middle = "(`reduction` `=` $reduction^)? "
    for axis in axes:
        fields[axis] = prop_def(IntegerAttr.constr(IndexTypeConstr))
        middle += f"`{axis}` `=` ${axis} "
    return define_op(
        CollectiveCommunicationOp, __name__, cls_name, op_name, doc,
        **fields, result=result_def(TensorType), traits=traits_def(Pure()),
        assembly_format=_PREFIX + middle + _SUFFIX,
    )


AllGatherOp = _collective("AllGatherOp", "shard.all_gather", """Each group member gets the inputs of the group concatenated along
    `gather_axis`, in group order.""", "gather_axis")
AllSliceOp = _collective("AllSliceOp", "shard.all_slice", """Each group member keeps its part of the input split along `slice_axis`
    (no data moves between devices).""", "slice_axis")
AllToAllOp = _collective("AllToAllOp", "shard.all_to_all", """Split along `split_axis`, part j to member j, parts received
    concatenated along `concat_axis` in group order.""", "split_axis", "concat_axis")
ReduceScatterOp = _collective(
    "ReduceScatterOp", "shard.reduce_scatter",
    "Reduce over the group, member j keeps part j along `scatter_axis`.", "scatter_axis", reduction=True,
)


SHARD_OPS = (AllGatherOp, AllSliceOp, AllToAllOp, ReduceScatterOp)
