"""`convert-stablehlo-to-coll`: StableHLO collectives become coll collectives.

Every function holding StableHLO collectives becomes one in destination
passing style (`purlin.frontends.tensor_functions`). Outputs start zeroed:
what no process sends (a collective_permute target nobody sends to, ranks
outside a collective_broadcast's groups) stays zero, as StableHLO says. Each
operand of a variadic op is its own collective.

Processes are replicas x partitions (options `replicas`, `partitions`, or the
module's `mhlo.num_replicas` / `mhlo.num_partitions`), rank = replica *
partitions + partition, grouped as `purlin.frontends.process_groups` says. Tensors of
any rank: along a non-leading dimension a gather or scatter is a strided
named layout (`purlin.frontends.tensor_layouts`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntAttr, IntegerAttr, ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from purlin.coll import dialect as coll
from purlin.coll.attributes import ConsumeAttr, ReduceKind, check_reduce_dtype, dtype_name
from purlin.coll.layouts import MAX_WORLD, Layout
from purlin.diagnostics import op_error
from purlin.frontends import stablehlo as shlo
from purlin.frontends import tensor_layouts as tl
from purlin.frontends.process_groups import (
    GroupingError,
    check_mesh_axes,
    exchange_strategy,
    permute_groups,
    reduction_strategy,
    stablehlo_groups,
)
from purlin.frontends.tensor_functions import convert_function, fail, replace_function, tensor_shape


def _int(attr: Attribute | None) -> int | None:
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if isinstance(attr, IntAttr):
        return attr.data
    return None


def _dense_rows(op: Operation, name: str) -> list[list[int]] | None:
    attr = shlo.field(op, name)
    if attr is None:
        return None
    if not isinstance(attr, DenseIntOrFPElementsAttr):
        raise fail(op, f"{name} must be a dense integer tensor, got {attr}")
    shape = attr.get_shape() or ()
    values = [int(v) for v in attr.get_values()]
    if len(shape) != 2:
        raise fail(op, f"{name} must be 2-dimensional, got shape {list(shape)}")
    rows, cols = shape
    return [values[i * cols:(i + 1) * cols] for i in range(rows)]


@dataclass
class _Grid:
    replicas: int
    partitions: int

    @property
    def world(self) -> int:
        return self.replicas * self.partitions


def _reduction(op: Operation, dtype: str) -> ReduceKind:
    """The coll reduction of a region `^bb0(%a, %b): %r = COMBINER %a, %b; return %r`."""
    assert op.regions
    block = op.regions[0].blocks.first
    ops = list(block.ops) if block is not None else []
    what = "an arbitrary reduction region is not supported: expected one of " + ", ".join(
        f"stablehlo.{c.name.split('.')[1]}" for c in shlo.COMBINERS) + " of the two block arguments, returned"
    if block is None or len(block.args) != 2 or len(ops) != 2:
        raise fail(op, what)
    combine, ret = ops
    if (type(combine) not in shlo.COMBINERS or not isinstance(ret, shlo.ReturnOp)
            or set(combine.operands) != set(block.args) or list(ret.values) != [combine.results[0]]):
        raise fail(op, what)
    kind = ReduceKind(shlo.COMBINERS[type(combine)])  # type: ignore[index]
    if why := check_reduce_dtype(kind, dtype):
        raise fail(op, why)
    return kind


class _Importer:
    def __init__(self, grid: _Grid):
        self.grid = grid

    def groups(self, op: Operation, reduction: bool) -> list[list[int]]:
        channel = shlo.field(op, "channel_handle")
        channel_id = channel.handle.data if isinstance(channel, shlo.ChannelHandleAttr) else 0
        rg = shlo.field(op, "replica_groups")
        try:
            if isinstance(rg, shlo.ReplicaGroupMeshAxesAttr):
                axes = [(a.axis.data, a.size.data) for a in rg.mesh.axes.data]
                refs = [(r.axis.data, r.pre_size.data, r.sub_size.data) for r in rg.axes.data]
                return check_mesh_axes(axes, refs, self.grid.world)
            rows = _dense_rows(op, "replica_groups") or []
            use_global = shlo.field(op, "use_global_device_ids") is not None
            strategy = (reduction_strategy(channel_id, use_global) if reduction
                        else exchange_strategy(channel_id))
            return stablehlo_groups(strategy, rows, self.grid.replicas, self.grid.partitions)
        except GroupingError as e:
            raise fail(op, f"replica_groups: {e}") from None

    def convert(self, op: shlo.CollectiveBase, ins: list[SSAValue], outs: list[SSAValue]) -> list[Operation]:
        if shlo.field(op, "has_dynamic_root") is not None:
            raise fail(op, "has_dynamic_root is not supported: purlin needs the root when it compiles")
        if len(op.inputs) != len(op.results):
            raise fail(op, f"has {len(op.inputs)} operands but {len(op.results)} results")
        made: list[Operation] = []
        for value, result, src, dst in zip(op.inputs, op.results, ins, outs):
            shape, elem = tensor_shape(op, value.type)
            out_shape, out_elem = tensor_shape(op, result.type)
            if out_elem != elem:
                raise fail(op, f"result element type {out_elem} differs from the operand's {elem}")
            made += self.one(op, shape, out_shape, dtype_name(elem) or "", src, dst)
        for m in made:
            m.location = op.location
        return made

    def one(self, op: Operation, shape: list[int], out_shape: list[int], dtype: str,
            src: SSAValue, dst: SSAValue) -> list[Operation]:
        convert = _CONVERT.get(type(op))
        if convert is None:
            raise fail(op, "is not a collective purlin imports")
        return convert(self, _Operand(op, shape, out_shape, dtype, src, dst, self.grid.world))

    def _all_reduce(self, c: _Operand) -> list[Operation]:
        kind = _reduction(c.op, c.dtype)
        c.need(c.out_shape == c.shape, f"result shape {c.out_shape} must equal the operand's {c.shape}")
        groups = self.groups(c.op, True)
        return [coll.AllReduceOp(c.src, c.dst, c.w, kind, groups=_explicit(groups, c.w))]

    def _all_gather(self, c: _Operand) -> list[Operation]:
        d = c.dim("all_gather_dim")
        groups = self.groups(c.op, True)
        g = c.equal(groups)
        want = list(c.shape)
        want[d] *= g
        c.need(c.out_shape == want, f"result shape {c.out_shape} must be {want}: dimension {d} times the "
               f"group size {g}")
        if tl.leading(c.shape, d):
            return [coll.AllGatherOp(c.src, c.dst, c.w, groups=_explicit(groups, c.w))]
        return [_generic(c.src, c.dst, tl.gather(c.shape, d, g), None, c.w, groups)]

    def _reduce_scatter(self, c: _Operand) -> list[Operation]:
        kind = _reduction(c.op, c.dtype)
        d = c.dim("scatter_dimension")
        groups = self.groups(c.op, True)
        g = c.equal(groups)
        c.need(c.shape[d] % g == 0, f"dimension {d} of size {c.shape[d]} is not divisible by the group size {g}")
        want = list(c.shape)
        want[d] //= g
        c.need(c.out_shape == want, f"result shape {c.out_shape} must be {want}")
        if tl.leading(c.shape, d):
            return [coll.ReduceScatterOp(c.src, c.dst, c.w, kind, groups=_explicit(groups, c.w))]
        return [_generic(c.src, c.dst, tl.scatter(c.shape, d, g), kind, c.w, groups)]

    def _all_to_all(self, c: _Operand) -> list[Operation]:
        split, concat = c.dim("split_dimension"), c.dim("concat_dimension")
        groups = self.groups(c.op, False)
        g = c.equal(groups)
        count = _int(shlo.field(c.op, "split_count"))
        c.need(count == g, f"split_count {count} must equal the group size {g}")
        c.need(c.shape[split] % g == 0, f"dimension {split} of size {c.shape[split]} is not divisible by "
               f"split_count {g}")
        want = list(c.shape)
        want[split] //= g
        want[concat] *= g
        c.need(c.out_shape == want, f"result shape {c.out_shape} must be {want}")
        if split == concat and tl.leading(c.shape, split):
            return [coll.AllToAllOp(c.src, c.dst, c.w, groups=_explicit(groups, c.w))]
        return [_generic(c.src, c.dst, tl.all_to_all(c.shape, split, concat, g), None, c.w, groups)]

    def _collective_permute(self, c: _Operand) -> list[Operation]:
        c.need_same_shape()
        channel = shlo.field(c.op, "channel_handle")
        channel_id = channel.handle.data if isinstance(channel, shlo.ChannelHandleAttr) else 0
        strategy = exchange_strategy(channel_id)
        groups = permute_groups(strategy, self.grid.replicas, self.grid.partitions)
        g = len(groups[0])
        pairs = _dense_rows(c.op, "source_target_pairs")
        c.need(pairs is not None and all(len(p) == 2 for p in pairs),
               "source_target_pairs must be an Nx2 dense tensor")
        assert pairs is not None
        what = "replica" if strategy == "cross_replica" else "partition"
        for s, t in pairs:
            c.need(0 <= s < g and 0 <= t < g, f"source_target_pairs names {what} {s if not 0 <= s < g else t}, "
                   f"outside [0, {g})")
        c.need(len({s for s, _ in pairs}) == len(pairs) and len({t for _, t in pairs}) == len(pairs),
               "source_target_pairs must name every source and every target at most once")
        if not pairs:
            return []
        return [_generic(c.src, c.dst, tl.permute([tuple(p) for p in pairs], g, c.elems), None, c.w, groups)]

    def _collective_broadcast(self, c: _Operand) -> list[Operation]:
        c.need_same_shape()
        groups = self.groups(c.op, False)
        made: list[Operation] = []
        # One collective per group size (ragged groups).
        for g in sorted({len(x) for x in groups}):
            same = [x for x in groups if len(x) == g]
            made.append(_generic(c.src, c.dst, tl.broadcast(g, c.elems), None, c.w, same))
        return made


@dataclass(frozen=True)
class _Operand:
    """One operand of a collective being imported, with the checks its
    conversion makes (each a diagnostic naming the op)."""

    op: Operation
    shape: list[int]
    out_shape: list[int]
    dtype: str
    src: SSAValue
    dst: SSAValue
    w: int

    @property
    def elems(self) -> int:
        return prod(self.shape)

    def need(self, ok: bool, what: str) -> None:
        if not ok:
            raise fail(self.op, what)

    def need_same_shape(self) -> None:
        self.need(self.out_shape == self.shape, f"result shape {self.out_shape} must equal the operand's {self.shape}")

    def dim(self, name: str) -> int:
        d = _int(shlo.field(self.op, name))
        self.need(d is not None and 0 <= d < len(self.shape),
                  f"{name} must be a dimension of the operand (0 to {len(self.shape) - 1}), got {d}")
        return d  # type: ignore[return-value]

    def equal(self, groups: list[list[int]]) -> int:
        sizes = sorted({len(g) for g in groups})
        self.need(len(sizes) == 1, f"its groups have sizes {sizes}; its result shape needs groups of one size")
        return sizes[0]


# The conversion of each StableHLO collective, by its class.
_CONVERT: dict[type[Operation], Callable[[_Importer, _Operand], list[Operation]]] = {
    shlo.AllReduceOp: _Importer._all_reduce,
    shlo.AllGatherOp: _Importer._all_gather,
    shlo.ReduceScatterOp: _Importer._reduce_scatter,
    shlo.AllToAllOp: _Importer._all_to_all,
    shlo.CollectivePermuteOp: _Importer._collective_permute,
    shlo.CollectiveBroadcastOp: _Importer._collective_broadcast,
}


def _explicit(groups: list[list[int]], world: int) -> list[list[int]] | None:
    """None when the one group is the whole world in rank order."""
    return None if groups == [list(range(world))] else groups


def _generic(src: SSAValue, dst: SSAValue, layouts: tuple[Layout, Layout], kind: ReduceKind | None,
             world: int, groups: list[list[int]]) -> coll.CollectiveOp:
    explicit = _explicit(groups, world)
    return coll.CollectiveOp.of_layouts(src, dst, layouts, ConsumeAttr.of(kind), world=world if explicit else None,
                                        groups=explicit)


def _module_int(module: ModuleOp, name: str) -> int | None:
    return _int(module.attributes.get(name))


@dataclass(frozen=True)
class ConvertStablehloToCollPass(ModulePass):
    """Options: replicas and partitions of the process grid (0: the module's
    mhlo.num_replicas / mhlo.num_partitions; partitions default to 1)."""

    name = "convert-stablehlo-to-coll"

    replicas: int = 0
    partitions: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = [f for f in op.walk() if isinstance(f, FuncOp)
                 and any(isinstance(o, shlo.CollectiveBase) for o in f.walk())]
        if not funcs:
            raise PassFailedException(f"pass '{self.name}' does not apply: the module holds no StableHLO collective")
        replicas = self.replicas or _module_int(op, "mhlo.num_replicas")
        partitions = self.partitions or _module_int(op, "mhlo.num_partitions") or 1
        if not replicas:
            # Several modules without --split-input-file come inside one module, which lacks their attributes.
            nested = sum(isinstance(o, ModuleOp) for o in op.body.ops)
            advice = (f"the input holds {nested} modules and mhlo.num_replicas is read from the one module around "
                      "them, which has none; split the input (--split-input-file, '// -----' between the modules) "
                      "or give the option replicas=N" if nested > 1
                      else "give the option replicas=N or the module attribute mhlo.num_replicas")
            raise PassFailedException(op_error(
                funcs[0], f"{self.name}: the number of replicas is not known; {advice}"))
        if replicas < 1 or partitions < 1 or replicas * partitions > MAX_WORLD:
            raise PassFailedException(
                f"{self.name}: {replicas} replicas x {partitions} partitions is not a world purlin handles "
                f"(1 to {MAX_WORLD} processes)")
        importer = _Importer(_Grid(replicas, partitions))
        for func in funcs:
            new = convert_function(func, shlo.CollectiveBase, importer.convert)
            replace_function(func, new)

