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

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import shard as xshard
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from purlin.coll import dialect as coll
from purlin.coll.attributes import ConsumeAttr, ReduceKind, check_reduce_dtype, dtype_name
from purlin.coll.layouts import MAX_WORLD
from purlin.frontends import shard
from purlin.frontends import tensor_layouts as tl
from purlin.frontends.process_groups import GroupingError, grid_groups
from purlin.frontends.tensor_functions import convert_function, fail, replace_function

_REDUCTIONS = {
    xshard.ReductionKind.SUM: ReduceKind.SUM, xshard.ReductionKind.MAX: ReduceKind.MAX,
    xshard.ReductionKind.MIN: ReduceKind.MIN, xshard.ReductionKind.PRODUCT: ReduceKind.PROD,
    xshard.ReductionKind.BITWISE_AND: ReduceKind.AND, xshard.ReductionKind.BITWISE_OR: ReduceKind.OR,
    xshard.ReductionKind.BITWISE_XOR: ReduceKind.XOR,
}
IMPORTED = (xshard.AllReduceOp, *shard.SHARD_OPS)


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
            raise fail(op, f"no shard.grid @{name} in the module")
        shape = self.grids[name]
        world = 1
        for n in shape:
            world *= n
        if world > MAX_WORLD:
            raise fail(op, f"grid @{name} has {world} devices, more than the {MAX_WORLD} purlin handles")
        try:
            groups = grid_groups(shape, list(op.grid_axes.get_values()))
        except GroupingError as e:
            raise fail(op, str(e)) from None
        g = len(groups[0])
        explicit = None if groups == [list(range(world))] else groups
        t_in, t_out = op.input.type, op.result.type
        assert isinstance(t_in, TensorType) and isinstance(t_out, TensorType)
        c = _Operand(op, src, dst, world, g, explicit, list(t_in.get_shape()), list(t_out.get_shape()), t_in)
        return _CONVERT[type(op)](c)


@dataclass(frozen=True)
class _Operand:
    """A shard collective being imported: its operands, its group (size `g`,
    `explicit` unless the whole world), and the checks its conversion makes."""

    op: Operation
    src: SSAValue
    dst: SSAValue
    world: int
    g: int
    explicit: list[list[int]] | None
    s_in: list[int]
    s_out: list[int]
    t_in: TensorType

    def need(self, ok: bool, what: str) -> None:
        if not ok:
            raise fail(self.op, what)

    def axis(self, attr_name: str) -> int:
        a = getattr(self.op, attr_name).value.data
        self.need(0 <= a < len(self.s_in),
                  f"{attr_name} {a} is not a dimension of the operand (0 to {len(self.s_in) - 1})")
        return a

    def reduction(self) -> ReduceKind:
        kind = self.op.reduction.data  # type: ignore[attr-defined]
        self.need(kind in _REDUCTIONS, f"reduction '{kind.value}' is not supported, expected one of "
                  + ", ".join(k.value for k in _REDUCTIONS))
        red = _REDUCTIONS[kind]
        dtype = dtype_name(self.t_in.element_type) or ""
        if why := check_reduce_dtype(red, dtype):
            raise fail(self.op, why)
        return red

    def shaped(self, want: list[int]) -> None:
        self.need(self.s_out == want, f"result shape {self.s_out} must be {want}")

    def generic(self, layouts, kind) -> coll.CollectiveOp:
        return coll.CollectiveOp.of_layouts(self.src, self.dst, layouts, ConsumeAttr.of(kind),
                                            world=self.world if self.explicit else None, groups=self.explicit)


def _all_reduce(c: _Operand) -> list[Operation]:
    kind = c.reduction()
    c.shaped(c.s_in)
    return [coll.AllReduceOp(c.src, c.dst, c.world, kind, groups=c.explicit)]


def _all_gather(c: _Operand) -> list[Operation]:
    d = c.axis("gather_axis")
    want = list(c.s_in)
    want[d] *= c.g
    c.shaped(want)
    if tl.leading(c.s_in, d):
        return [coll.AllGatherOp(c.src, c.dst, c.world, groups=c.explicit)]
    return [c.generic(tl.gather(c.s_in, d, c.g), None)]


def _split(c: _Operand, attr_name: str) -> int:
    """The dimension `attr_name` names, checked divisible; the result shape checked."""
    d = c.axis(attr_name)
    c.need(c.s_in[d] % c.g == 0, f"dimension {d} of size {c.s_in[d]} is not divisible by the group size {c.g}")
    want = list(c.s_in)
    want[d] //= c.g
    c.shaped(want)
    return d


def _all_slice(c: _Operand) -> list[Operation]:
    d = _split(c, "slice_axis")
    return [c.generic(tl.slice_own(c.s_in, d, c.g), None)]


def _reduce_scatter(c: _Operand) -> list[Operation]:
    d = _split(c, "scatter_axis")
    kind = c.reduction()
    if tl.leading(c.s_in, d):
        return [coll.ReduceScatterOp(c.src, c.dst, c.world, kind, groups=c.explicit)]
    return [c.generic(tl.scatter(c.s_in, d, c.g), kind)]


def _all_to_all(c: _Operand) -> list[Operation]:
    split, concat = c.axis("split_axis"), c.axis("concat_axis")
    c.need(c.s_in[split] % c.g == 0,
           f"dimension {split} of size {c.s_in[split]} is not divisible by the group size {c.g}")
    want = list(c.s_in)
    want[split] //= c.g
    want[concat] *= c.g
    c.shaped(want)
    if split == concat and tl.leading(c.s_in, split):
        return [coll.AllToAllOp(c.src, c.dst, c.world, groups=c.explicit)]
    return [c.generic(tl.all_to_all(c.s_in, split, concat, c.g), None)]


# The conversion of each imported collective, by its class.
_CONVERT: dict[type[Operation], Callable[[_Operand], list[Operation]]] = {
    xshard.AllReduceOp: _all_reduce,
    shard.AllGatherOp: _all_gather,
    shard.AllSliceOp: _all_slice,
    shard.ReduceScatterOp: _reduce_scatter,
    shard.AllToAllOp: _all_to_all,
}


@dataclass(frozen=True)
class ConvertShardToCollPass(ModulePass):
    name = "convert-shard-to-coll"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        grids = {g.sym_name.data: list(g.shape.get_values()) for g in op.walk() if isinstance(g, xshard.GridOp)}
        for o in op.walk():
            if isinstance(o, xshard.CollectiveCommunicationOp) and not isinstance(o, IMPORTED):
                raise fail(o, "is not a collective purlin imports: expected shard.all_reduce, all_gather, "
                            "all_slice, all_to_all or reduce_scatter")
        funcs = [f for f in op.walk() if isinstance(f, FuncOp) and any(isinstance(o, IMPORTED) for o in f.walk())]
        if not funcs:
            raise PassFailedException(f"pass '{self.name}' does not apply: the module holds no shard collective")
        importer = _Importer(grids)
        for func in funcs:
            replace_function(func, convert_function(func, IMPORTED, importer.convert))
