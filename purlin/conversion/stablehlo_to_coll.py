"""`convert-stablehlo-to-coll`: StableHLO collectives become coll collectives.

A *program* is the body of a function or of an `sdy.manual_computation`
(what every device runs), or a region of a `stablehlo.while`, `case` or `if`
in one, holding StableHLO collectives. In a program, a run
of collectives with what moves no data between them (reshapes, broadcasts
and transposes that only add or move unit dimensions, sharding constraints,
`custom_call @Sharding`) becomes one coll function in destination-passing
style (`purlin.frontends.tensor_functions`), called where the run was by
`tensor_coll.call`; the views become buffers shared, and every other op stays
as it was. A function that is one run, and that nothing refers to, becomes
the coll function itself. Functions keep their signatures, so their callers
(`func.call`, JAX's `call @shmap_body`, `interpreter.run_parallel`) stay
valid. JAX's `pmean` (an all_reduce sum, then a divide by the group size,
broadcast from a constant) becomes one all_reduce avg.

Outputs start zeroed: what no process sends (a collective_permute target
nobody sends to, ranks outside a collective_broadcast's groups) stays zero,
as StableHLO says. Each operand of a variadic op is its own collective. A
collective_broadcast with `has_dynamic_root` gathers within its groups and
each process then selects the root it reads from the operand
(`stablehlo.dynamic_slice`): purlin's collectives whose sizes are read on the
device take no groups, and a root is per group.

Processes are replicas x partitions (options `replicas`, `partitions`, or the
module's `mhlo.num_replicas` / `mhlo.num_partitions`; with neither, the
devices of its `sdy.mesh`), rank = replica * partitions + partition, grouped
as `purlin.frontends.process_groups` says. Tensors of any rank: along a
non-leading dimension a gather or scatter is a strided named layout
(`purlin.frontends.tensor_layouts`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from math import prod

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from purlin.coll import dialect as coll
from purlin.coll.attributes import ConsumeAttr, ReduceKind, check_reduce_dtype, dtype_name
from purlin.coll.layouts import MAX_WORLD, Layout
from purlin.diagnostics import op_error
from purlin.frontends import sdy
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
from purlin.frontends.tensor_coll import CallOp
from purlin.frontends.tensor_functions import coll_function, fail, flat_memref, op_name, replace_function, tensor_shape


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
    if len(values) == 1 and rows * cols != 1:
        values = values * (rows * cols)  # a splat
    return [values[i * cols:(i + 1) * cols] for i in range(rows)]


@dataclass
class _Grid:
    replicas: int
    partitions: int

    @property
    def world(self) -> int:
        return self.replicas * self.partitions


def view_source(op: Operation) -> SSAValue | None:
    """The operand whose row-major elements `op`'s result is, unchanged in
    order (a view: no data moves), or None."""
    if len(op.operands) != 1 or len(op.results) != 1:
        return None
    src, t_in, t_out = op.operands[0], op.operands[0].type, op.results[0].type
    if not (isinstance(t_in, TensorType) and isinstance(t_out, TensorType)
            and t_in.element_type == t_out.element_type
            and prod(t_in.get_shape()) == prod(t_out.get_shape())):
        return None
    if isinstance(op, (shlo.ReshapeOp, *sdy.IDENTITIES)):
        return src
    if isinstance(op, shlo.CustomCallOp) and op.target == "Sharding":
        return src if t_in == t_out else None
    if isinstance(op, shlo.BroadcastInDimOp):
        dims = [d for d, n in zip(op.dims, t_in.get_shape()) if n != 1]
        return src if dims == sorted(dims) else None
    if isinstance(op, shlo.TransposeOp):
        kept = [p for p in op.perm if t_in.get_shape()[p] != 1]
        return src if kept == sorted(kept) else None
    if isinstance(op, shlo.ConvertOp):
        return src if t_in == t_out else None
    return None


def _reduction(op: Operation, dtype: str) -> ReduceKind:
    """The coll reduction of a region `^bb0(%a, %b): %r = COMBINER %a, %b;
    return %r`, sharding constraints on %r allowed."""
    assert op.regions
    block = op.regions[0].blocks.first
    ops = list(block.ops) if block is not None else []
    what = "an arbitrary reduction region is not supported: expected one of " + ", ".join(
        f"stablehlo.{c.name.split('.')[1]}" for c in shlo.COMBINERS) + " of the two block arguments, returned"
    if block is None or len(block.args) != 2 or len(ops) < 2:
        raise fail(op, what)
    combine, *identities, ret = ops
    value = combine.results[0] if combine.results else None
    for ident in identities:
        if view_source(ident) is not value or ident.results[0].type != ident.operands[0].type:
            raise fail(op, what)
        value = ident.results[0]
    if (type(combine) not in shlo.COMBINERS or not isinstance(ret, shlo.ReturnOp)
            or set(combine.operands) != set(block.args) or list(ret.values) != [value]):
        raise fail(op, what)
    kind = ReduceKind(shlo.COMBINERS[type(combine)])  # type: ignore[index]
    if why := check_reduce_dtype(kind, dtype):
        raise fail(op, why)
    return kind


class _Importer:
    def __init__(self, grid: _Grid, averages: set[Operation]):
        self.grid = grid
        self.averages = averages  # all_reduce sums that are averages (pmean)

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

    def convert(self, op: Operation, ins: list[SSAValue], outs: list[SSAValue]) -> list[Operation]:
        assert isinstance(op, shlo.CollectiveBase)
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
        if c.op in self.averages:
            kind = ReduceKind.AVG
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


# -- programs and their runs of collectives --------------------------------------


def _splat(op: Operation | None) -> float | None:
    """The one value of a splat constant, or of a broadcast of one."""
    if isinstance(op, shlo.BroadcastInDimOp):
        op = op.operands[0].owner if isinstance(op.operands[0].owner, Operation) else None
    if isinstance(op, shlo.ConstantOp) and isinstance(op.value, DenseIntOrFPElementsAttr):
        values = set(op.value.get_values())
        if len(values) == 1:
            return float(values.pop())
    return None


def _averages(block: Block, importer: _Importer) -> dict[Operation, Operation]:
    """The divides of a block that make an all_reduce sum an average: the
    sum's only use, by a splat constant (broadcast or not) equal to the
    group size, on floats. Maps each such divide to its all_reduce."""
    found = {}
    for op in block.ops:
        if not (isinstance(op, shlo.DivideOp) and isinstance(op.operands[0].owner, shlo.AllReduceOp)):
            continue
        reduce = op.operands[0].owner
        total = op.operands[0]
        if (len(reduce.results) != 1 or not total.has_one_use() or op.results[0].type != total.type
                or op.operands[1].type != total.type):
            continue
        dtype = dtype_name(total.type.element_type) or ""  # type: ignore[attr-defined]
        if dtype not in ("bf16", "f16", "f32", "f64") or _reduction(reduce, dtype) != ReduceKind.SUM:
            continue
        divisor = _splat(op.operands[1].owner if isinstance(op.operands[1].owner, Operation) else None)
        sizes = {len(g) for g in importer.groups(reduce, True)}
        if len(sizes) == 1 and divisor == float(sizes.pop()):
            found[op] = reduce
    return found


@dataclass
class _Run:
    """Consecutive ops of a program block that one coll function does: the
    collectives, and the views and averages between them."""

    ops: list[Operation] = field(default_factory=list)
    views: dict[SSAValue, SSAValue] = field(default_factory=dict)  # a view's value -> what it views

    def root(self, v: SSAValue) -> SSAValue:
        while v in self.views:
            v = self.views[v]
        return v


def _top(op: Operation, block: Block) -> Operation | None:
    """The op of `block` that holds `op` (itself, or an op whose regions it is in)."""
    while op.parent_block() is not block:
        parent = op.parent_op()
        if parent is None:
            return None
        op = parent
    return op


def _runs(block: Block, divides: dict[Operation, Operation]) -> list[_Run]:
    """The runs of a program block, in order. An op that is neither a
    collective nor a view ends a run when it reads what the run computes,
    else it stays where it is (before the call that replaces the run)."""
    runs: list[_Run] = []
    current = _Run()
    produced: set[SSAValue] = set()

    def close() -> None:
        nonlocal current
        if any(isinstance(o, shlo.CollectiveBase) for o in current.ops):
            runs.append(_trim(current))
        current = _Run()
        produced.clear()

    for op in block.ops:
        if op is block.last_op:
            break
        source = divides[op].results[0] if op in divides else view_source(op)
        if isinstance(op, shlo.CollectiveBase) or source is not None:
            if source is not None:
                current.views[op.results[0]] = source
            current.ops.append(op)
            produced.update(op.results)
            continue
        reads = {v for inner in op.walk() for v in inner.operands}
        if reads & produced:
            close()
    close()
    return runs


def _trim(run: _Run) -> _Run:
    """The run without the views that neither follow its collectives nor
    only feed them: those stay as they are."""
    derived: set[SSAValue] = set()
    for op in run.ops:
        if isinstance(op, shlo.CollectiveBase) or (op.results and run.views[op.results[0]] in derived):
            derived.update(op.results)
    kept: set[Operation] = set()
    for op in reversed(run.ops):
        if isinstance(op, shlo.CollectiveBase) or op.results[0] in derived or (
                op.results[0].uses and all(_user(u.operation, op) in kept for u in op.results[0].uses)):
            kept.add(op)
    ops = [op for op in run.ops if op in kept]
    return _Run(ops, {r: s for r, s in run.views.items() if r.owner in kept})


def _user(op: Operation, of: Operation) -> Operation | None:
    block = of.parent_block()
    return _top(op, block) if block is not None else None


def _outside_uses(value: SSAValue, members: set[Operation], block: Block) -> bool:
    return any(_top(u.operation, block) not in members for u in value.uses)


# Ops whose regions are part of the program around them: a run of collectives
# in one becomes a coll function called there.
_CONTROL = (shlo.WhileOp, shlo.CaseOp, shlo.IfOp)


def _program_blocks(module: ModuleOp) -> Iterator[tuple[Block, Operation]]:
    """Each program block with the op owning it (a func.func, an
    sdy.manual_computation, or a while, case or if inside one), in module
    order; a collective elsewhere is a diagnostic."""
    seen: list[Block] = []
    for op in module.walk():
        if not isinstance(op, shlo.CollectiveBase):
            continue
        block = op.parent_block()
        owner = block.parent_op() if block is not None else None
        around = owner
        while isinstance(around, _CONTROL):
            around = around.parent_op()
        if not isinstance(around, FuncOp | sdy.ManualComputationOp):
            raise fail(op, "purlin imports collectives in the body of a function or of an sdy.manual_computation "
                       "(or in the regions of a stablehlo.while, case or if there), not in the region of "
                       f"'{op_name(owner) if owner else 'nothing'}'")
        assert block is not None
        if block not in seen:
            seen.append(block)
            yield block, owner


def _symbol_uses(module: ModuleOp) -> set[str]:
    """The symbols something in the module refers to."""
    names: set[str] = set()

    def visit(attr: Attribute) -> None:
        if isinstance(attr, SymbolRefAttr):
            names.add(attr.root_reference.data)
        elif isinstance(attr, ArrayAttr):
            for a in attr.data:
                visit(a)

    for op in module.walk():
        for attr in (*op.properties.values(), *op.attributes.values()):
            visit(attr)
    return names


class _Names:
    """Fresh function names: `base_collK`."""

    def __init__(self, module: ModuleOp):
        self.taken = {op.sym_name.data for op in module.walk() if isinstance(op, FuncOp)}

    def fresh(self, base: str) -> str:
        k = 0
        while f"{base}_coll{k}" in self.taken:
            k += 1
        self.taken.add(f"{base}_coll{k}")
        return f"{base}_coll{k}"


def _function_of(op: Operation) -> FuncOp:
    while not isinstance(op, FuncOp):
        parent = op.parent_op()
        assert parent is not None
        op = parent
    return op


@dataclass
class _Lowering:
    """Lowers the programs of one module."""

    module: ModuleOp
    importer: _Importer
    names: _Names
    used: set[str]
    last: dict[FuncOp, Operation] = field(default_factory=dict)  # the last coll function made for each

    def add_function(self, new: FuncOp, next_to: FuncOp) -> None:
        """`new` after `next_to` and the coll functions made for it before."""
        Rewriter.insert_op(new, InsertPoint.after(self.last.get(next_to, next_to)))
        self.last[next_to] = new

    def program(self, block: Block, owner: Operation) -> None:
        self.dynamic_roots(block, owner)
        divides = _averages(block, self.importer)
        self.importer.averages.update(divides.values())
        runs = _runs(block, divides)
        if not runs:
            return
        divisors = [d.operands[1].owner for d in divides]
        if isinstance(owner, FuncOp) and self.whole(owner, runs):
            return
        for run in runs:
            self.call(run, block, owner)
        _erase_unused(divisors)

    def whole(self, func: FuncOp, runs: list[_Run]) -> bool:
        """Turns `func` into the coll function itself, where it is one run
        returning distinct results of collectives and nothing refers to it."""
        body = func.body.block
        ret = body.last_op
        if len(runs) != 1 or func.sym_name.data in self.used or not isinstance(ret, ReturnOp):
            return False
        run = runs[0]
        members = set(run.ops)
        rest = [op for op in body.ops if op is not ret and op not in members]
        # What the run does not hold may only be the divisors of its averages.
        if any(not isinstance(op, shlo.ConstantOp | shlo.BroadcastInDimOp)
               or any(_top(u.operation, body) not in members | set(rest) for r in op.results for u in r.uses)
               for op in rest):
            return False
        roots = [run.root(v) for v in ret.arguments]
        if len(set(roots)) != len(roots) or not all(isinstance(r.owner, shlo.CollectiveBase) for r in roots):
            return False
        for t in func.function_type.inputs.data:
            tensor_shape(func, t)
        new = coll_function(func.sym_name.data, run.ops, list(body.args), roots, run.views,
                            shlo.CollectiveBase, self.importer.convert)
        new.location = func.location
        replace_function(func, new)
        return True

    def call(self, run: _Run, block: Block, owner: Operation) -> None:
        """Replaces `run` by a tensor_coll.call of its coll function."""
        members = set(run.ops)
        inputs: list[SSAValue] = []
        for op in run.ops:
            # A view (or an average's divide) reads only what it views.
            reads = [run.views[op.results[0]]] if op.results and op.results[0] in run.views else op.operands
            for v in reads:
                if v.owner not in members and v not in inputs:
                    tensor_shape(op, v.type)
                    inputs.append(v)
        escaping = [r for op in run.ops for r in op.results if _outside_uses(r, members, block)]
        roots: list[SSAValue] = []
        for v in escaping:
            r = run.root(v)
            if r not in roots:
                roots.append(r)
        for r in roots:
            tensor_shape(r.owner, r.type)  # type: ignore[arg-type]
        func = _function_of(owner)
        name = self.names.fresh(func.sym_name.data)
        new = coll_function(name, run.ops, inputs, roots, run.views, shlo.CollectiveBase, self.importer.convert)
        new.sym_visibility = StringAttr("private")
        new.location = run.ops[0].location
        self.add_function(new, func)
        call = CallOp(name, inputs, [r.type for r in roots])
        call.location = run.ops[0].location
        Rewriter.insert_op(call, InsertPoint.after(run.ops[-1]))
        made: list[Operation] = [call]
        for v in escaping:
            result = call.results[roots.index(run.root(v))]
            if v.type != result.type:
                view = shlo.ReshapeOp([result], [v.type])
                view.location = v.owner.location  # type: ignore[union-attr]
                Rewriter.insert_op(view, InsertPoint.after(made[-1]))
                made.append(view)
                result = view.results[0]
            v.replace_uses_with_if(result, lambda use: _top(use.operation, block) not in members)
        for op in reversed(run.ops):
            for r in op.results:
                if r.uses:
                    raise PassFailedException(op_error(op, f"'{op.name}': its value is read where the call that "
                                                       "replaces it cannot reach"))
            op.detach()
            op.erase()

    def dynamic_roots(self, block: Block, owner: Operation) -> None:
        """Each collective_broadcast with has_dynamic_root becomes, per data
        operand, a gather within its groups (a coll function) and the root's
        part of it, selected on each process."""
        for op in list(block.ops):
            if not (isinstance(op, shlo.CollectiveBroadcastOp) and shlo.field(op, "has_dynamic_root") is not None):
                continue
            self.dynamic_root(op, owner)

    def dynamic_root(self, op: shlo.CollectiveBroadcastOp, owner: Operation) -> None:
        data, root = list(op.inputs[:-1]), op.inputs[-1] if op.inputs else None
        root_t = root.type if root is not None else None
        if (root is None or not data or not isinstance(root_t, TensorType) or root_t.get_shape() != (len(data),)
                or not isinstance(root_t.element_type, IntegerType)):
            raise fail(op, f"has_dynamic_root takes the data operands, then the roots: a tensor<{len(data)}xi32>, "
                       "one per data operand")
        if len(op.results) != len(data):
            raise fail(op, f"has {len(data)} data operands but {len(op.results)} results")
        groups = self.importer.groups(op, False)
        sizes = sorted({len(g) for g in groups})
        if len(sizes) != 1:
            raise fail(op, f"has_dynamic_root needs groups of one size, got sizes {sizes}")
        g = sizes[0]
        world = self.importer.grid.world
        func = _function_of(owner)
        made: list[Operation] = []
        for j, (value, result) in enumerate(zip(data, op.results)):
            shape, elem = tensor_shape(op, value.type)
            if result.type != value.type:
                raise fail(op, f"result {j} ({result.type}) must be of its operand's type {value.type}")
            gathered = TensorType(elem, [g, *shape])
            name = self.names.fresh(func.sym_name.data)
            inner = Block(arg_types=[flat_memref(value.type), flat_memref(gathered)])
            inner.args[0].name_hint, inner.args[1].name_hint = "operand", "gathered"
            gather = coll.AllGatherOp(inner.args[0], inner.args[1], world, groups=_explicit(groups, world))
            gather.location = op.location
            inner.add_ops([gather, ReturnOp()])
            fn = FuncOp(name, ([a.type for a in inner.args], []), Region(inner), "private")
            fn.attributes["purlin.inputs"] = IntegerAttr(1, 64)
            fn.attributes["purlin.results"] = IntegerAttr(1, 64)
            fn.location = op.location
            self.add_function(fn, func)
            call = CallOp(name, [value], [gathered])
            index_t = TensorType(root_t.element_type, [])
            part = shlo.SliceOp([root], [TensorType(root_t.element_type, [1])], {
                "start_indices": shlo._i64_array([j]), "limit_indices": shlo._i64_array([j + 1]),
                "strides": shlo._i64_array([1])})
            index = shlo.ReshapeOp([part.results[0]], [index_t])
            zero = shlo.ConstantOp(DenseIntOrFPElementsAttr.from_list(index_t, [0]))
            picked = shlo.DynamicSliceOp([call.results[0], index.results[0], *[zero.results[0]] * len(shape)],
                                         [TensorType(elem, [1, *shape])], {"slice_sizes": shlo._i64_array([1, *shape])})
            own = shlo.ReshapeOp([picked.results[0]], [value.type])
            for m in (call, part, index, zero, picked, own):
                m.location = op.location
            made += [call, part, index, zero, picked, own]
            result.replace_all_uses_with(own.results[0])
        Rewriter.insert_op(made, InsertPoint.before(op))
        op.detach()
        op.erase()


def _erase_unused(ops: list) -> None:
    """`ops` (an average's divisor: a broadcast, or a constant) and their
    constant operands, where nothing else reads them."""
    while ops:
        op = ops.pop()
        if not isinstance(op, shlo.ConstantOp | shlo.BroadcastInDimOp) or any(r.uses for r in op.results):
            continue
        ops += [v.owner for v in op.operands if isinstance(v.owner, Operation)]
        op.detach()
        op.erase()


def _module_int(module: ModuleOp, name: str) -> int | None:
    return _int(module.attributes.get(name))


def mesh_devices(module: ModuleOp) -> int | None:
    """The devices of the module's sdy meshes (None: it has none), all the same number."""
    counts = {prod(m.mesh.shape.values()) for m in module.walk() if isinstance(m, sdy.MeshOp)}
    return counts.pop() if len(counts) == 1 else None


@dataclass(frozen=True)
class ConvertStablehloToCollPass(ModulePass):
    """Options: replicas and partitions of the process grid (0: the module's
    mhlo.num_replicas / mhlo.num_partitions; partitions default to 1)."""

    name = "convert-stablehlo-to-coll"

    replicas: int = 0
    partitions: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        collectives = [o for o in op.walk() if isinstance(o, shlo.CollectiveBase)]
        if not collectives:
            raise PassFailedException(f"pass '{self.name}' does not apply: the module holds no StableHLO collective")
        grid = self.grid(op, _function_of(collectives[0]))
        lowering = _Lowering(op, _Importer(grid, set()), _Names(op), _symbol_uses(op))
        for block, owner in list(_program_blocks(op)):
            lowering.program(block, owner)

    def grid(self, module: ModuleOp, first: Operation) -> _Grid:
        replicas = self.replicas or _module_int(module, "mhlo.num_replicas")
        partitions = self.partitions or _module_int(module, "mhlo.num_partitions")
        devices = mesh_devices(module)
        if not replicas and not partitions and devices:
            replicas, partitions = 1, devices
        partitions = partitions or 1
        if not replicas:
            # Several modules without --split-input-file come inside one module, which lacks their attributes.
            nested = sum(isinstance(o, ModuleOp) for o in module.body.ops)
            advice = (f"the input holds {nested} modules and mhlo.num_replicas is read from the one module around "
                      "them, which has none; split the input (--split-input-file, '// -----' between the modules) "
                      "or give the option replicas=N" if nested > 1
                      else "give the option replicas=N or the module attribute mhlo.num_replicas")
            raise PassFailedException(op_error(
                first, f"{self.name}: the number of replicas is not known; {advice}"))
        if replicas < 1 or partitions < 1 or replicas * partitions > MAX_WORLD:
            raise PassFailedException(
                f"{self.name}: {replicas} replicas x {partitions} partitions is not a world purlin handles "
                f"(1 to {MAX_WORLD} processes)")
        if devices is not None and devices != replicas * partitions:
            raise PassFailedException(
                f"{self.name}: the module's sdy.mesh has {devices} devices but its processes are {replicas} "
                f"replicas x {partitions} partitions")
        return _Grid(replicas, partitions)
