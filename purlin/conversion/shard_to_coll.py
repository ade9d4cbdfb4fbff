"""`convert-shard-to-coll`: MLIR `shard` collectives on a `shard.grid`
become sub-group coll collectives.

The devices of a grid are numbered row-major over its shape (the rank);
a collective's groups are the devices varying along its `grid_axes`, their
group-local rank row-major over those axes in the order listed
(`purlin.frontends.process_groups.grid_groups`). Functions become coll functions in
destination-passing style (`purlin.frontends.tensor_functions`); the grids
stay (they name nothing the coll ops need).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import shard as xshard
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from purlin.coll import dialect as coll
from purlin.coll.layouts import MAX_WORLD
from purlin.diagnostics import op_error
from purlin.frontends import shard
from purlin.frontends import tensor_layouts as tl
from purlin.frontends.process_groups import GroupingError, grid_groups
from purlin.frontends.tensor_functions import convert_function, replace_function

_REDUCTIONS = {
    xshard.ReductionKind.SUM: coll.ReduceKind.SUM, xshard.ReductionKind.MAX: coll.ReduceKind.MAX,
    xshard.ReductionKind.MIN: coll.ReduceKind.MIN, xshard.ReductionKind.PRODUCT: coll.ReduceKind.PROD,
    xshard.ReductionKind.BITWISE_AND: coll.ReduceKind.AND, xshard.ReductionKind.BITWISE_OR: coll.ReduceKind.OR,
    xshard.ReductionKind.BITWISE_XOR: coll.ReduceKind.XOR,
}
IMPORTED = (xshard.AllReduceOp, *shard.SHARD_OPS)


def _fail(op: Operation, message: str) -> PassFailedException:
    return PassFailedException(op_error(op, f"'{op.name}': {message}"))


def _check_type(op: Operation, t: Attribute) -> None:
    if not isinstance(t, TensorType):
        raise _fail(op, f"takes ranked tensors, got {t}")
    if any(d < 0 for d in t.get_shape()):
        raise _fail(op, f"dynamic shapes are not supported, got {t}; purlin needs static sizes")
    if coll.dtype_name(t.element_type) is None:
        raise _fail(op, f"element type {t.element_type} is not supported, expected one of {coll.ELEMENT_TYPES_TEXT}")


class _Importer:
    def __init__(self, grids: dict[str, list[int]]):
        self.grids = grids

    def convert(self, op: Operation, ins: list[SSAValue], outs: list[SSAValue]) -> list[Operation]:
        made = self.one(op, ins[0], outs[0])
        for m in made:
            m.location = op.location
        return made

    def one(self, op: Operation, src: SSAValue, dst: SSAValue) -> list[Operation]:
        assert isinstance(op, IMPORTED)
        name = op.grid.root_reference.data
        if name not in self.grids:
            raise _fail(op, f"no shard.grid @{name} in the module")
        shape = self.grids[name]
        world = 1
        for n in shape:
            world *= n
        if world > MAX_WORLD:
            raise _fail(op, f"grid @{name} has {world} devices, more than the {MAX_WORLD} purlin handles")
        try:
            groups = grid_groups(shape, list(op.grid_axes.get_values()))
        except GroupingError as e:
            raise _fail(op, str(e)) from None
        g = len(groups[0])
        explicit = None if groups == [list(range(world))] else groups
        t_in, t_out = op.input.type, op.result.type
        assert isinstance(t_in, TensorType) and isinstance(t_out, TensorType)
        s_in, s_out = list(t_in.get_shape()), list(t_out.get_shape())

        def need(ok: bool, what: str) -> None:
            if not ok:
                raise _fail(op, what)

        def axis(attr_name: str) -> int:
            a = getattr(op, attr_name).value.data
            need(0 <= a < len(s_in), f"{attr_name} {a} is not a dimension of the operand (0 to {len(s_in) - 1})")
            return a

        def reduction() -> coll.ReduceKind:
            kind = op.reduction.data
            need(kind in _REDUCTIONS, f"reduction '{kind.value}' is not supported, expected one of "
                 + ", ".join(k.value for k in _REDUCTIONS))
            red = _REDUCTIONS[kind]
            dtype = coll.dtype_name(t_in.element_type) or ""
            if why := coll.check_reduce_dtype(red, dtype):
                raise _fail(op, why)
            return red

        def shaped(want: list[int]) -> None:
            need(s_out == want, f"result shape {s_out} must be {want}")

        def generic(layouts, kind) -> coll.CollectiveOp:
            consume = coll.ConsumeAttr.copy() if kind is None else coll.ConsumeAttr.reduction(kind)
            return coll.CollectiveOp(src, dst, coll.LayoutAttr.from_layout(layouts[0]),
                                     coll.LayoutAttr.from_layout(layouts[1]), consume,
                                     world=world if explicit else None, groups=explicit)

        if isinstance(op, xshard.AllReduceOp):
            kind = reduction()
            shaped(s_in)
            return [coll.AllReduceOp(src, dst, world, kind, groups=explicit)]
        if isinstance(op, shard.AllGatherOp):
            d = axis("gather_axis")
            want = list(s_in)
            want[d] *= g
            shaped(want)
            if tl.leading(s_in, d):
                return [coll.AllGatherOp(src, dst, world, groups=explicit)]
            return [generic(tl.gather(s_in, d, g), None)]
        if isinstance(op, (shard.ReduceScatterOp, shard.AllSliceOp)):
            d = axis("scatter_axis" if isinstance(op, shard.ReduceScatterOp) else "slice_axis")
            need(s_in[d] % g == 0, f"dimension {d} of size {s_in[d]} is not divisible by the group size {g}")
            want = list(s_in)
            want[d] //= g
            shaped(want)
            if isinstance(op, shard.AllSliceOp):
                return [generic(tl.slice_own(s_in, d, g), None)]
            kind = reduction()
            if tl.leading(s_in, d):
                return [coll.ReduceScatterOp(src, dst, world, kind, groups=explicit)]
            return [generic(tl.scatter(s_in, d, g), kind)]
        split, concat = axis("split_axis"), axis("concat_axis")
        need(s_in[split] % g == 0, f"dimension {split} of size {s_in[split]} is not divisible by the group size {g}")
        want = list(s_in)
        want[split] //= g
        want[concat] *= g
        shaped(want)
        if split == concat and tl.leading(s_in, split):
            return [coll.AllToAllOp(src, dst, world, groups=explicit)]
        return [generic(tl.all_to_all(s_in, split, concat, g), None)]


@dataclass(frozen=True)
class ConvertShardToCollPass(ModulePass):
    name = "convert-shard-to-coll"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        grids = {g.sym_name.data: list(g.shape.get_values()) for g in op.walk() if isinstance(g, xshard.GridOp)}
        for o in op.walk():
            if isinstance(o, xshard.CollectiveCommunicationOp) and not isinstance(o, IMPORTED):
                raise _fail(o, "is not a collective purlin imports: expected shard.all_reduce, all_gather, "
                            "all_slice, all_to_all or reduce_scatter")
        funcs = [f for f in op.walk() if isinstance(f, FuncOp) and any(isinstance(o, IMPORTED) for o in f.walk())]
        if not funcs:
            raise PassFailedException(f"pass '{self.name}' does not apply: the module holds no shard collective")
        importer = _Importer(grids)
        for func in funcs:
            replace_function(func, convert_function(func, IMPORTED, importer.convert, _check_type))
