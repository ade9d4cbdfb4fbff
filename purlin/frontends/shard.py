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
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure


@irdl_op_definition
class AllGatherOp(CollectiveCommunicationOp):
    """Each group member gets the inputs of the group concatenated along
    `gather_axis`, in group order."""

    name = "shard.all_gather"
    input = operand_def(TensorType)
    gather_axis = prop_def(IntegerAttr.constr(IndexTypeConstr))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `on` $grid (`grid_axes` `=` $grid_axes^)? `gather_axis` `=` $gather_axis "
        "attr-dict `:` type($input) `->` type($result)"
    )


@irdl_op_definition
class AllSliceOp(CollectiveCommunicationOp):
    """Each group member keeps its part of the input split along `slice_axis`
    (no data moves between devices)."""

    name = "shard.all_slice"
    input = operand_def(TensorType)
    slice_axis = prop_def(IntegerAttr.constr(IndexTypeConstr))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `on` $grid (`grid_axes` `=` $grid_axes^)? `slice_axis` `=` $slice_axis "
        "attr-dict `:` type($input) `->` type($result)"
    )


@irdl_op_definition
class AllToAllOp(CollectiveCommunicationOp):
    """Split along `split_axis`, part j to member j, parts received
    concatenated along `concat_axis` in group order."""

    name = "shard.all_to_all"
    input = operand_def(TensorType)
    split_axis = prop_def(IntegerAttr.constr(IndexTypeConstr))
    concat_axis = prop_def(IntegerAttr.constr(IndexTypeConstr))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `on` $grid (`grid_axes` `=` $grid_axes^)? `split_axis` `=` $split_axis "
        "`concat_axis` `=` $concat_axis attr-dict `:` type($input) `->` type($result)"
    )


@irdl_op_definition
class ReduceScatterOp(CollectiveCommunicationOp):
    """Reduce over the group, member j keeps part j along `scatter_axis`."""

    name = "shard.reduce_scatter"
    input = operand_def(TensorType)
    reduction = prop_def(ReductionKindAttr, default_value=ReductionKindAttr(ReductionKind.SUM))
    scatter_axis = prop_def(IntegerAttr.constr(IndexTypeConstr))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `on` $grid (`grid_axes` `=` $grid_axes^)? (`reduction` `=` $reduction^)? "
        "`scatter_axis` `=` $scatter_axis attr-dict `:` type($input) `->` type($result)"
    )


SHARD_OPS = (AllGatherOp, AllSliceOp, AllToAllOp, ReduceScatterOp)
