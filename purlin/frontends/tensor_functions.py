"""Tensor functions of ML IRs as coll functions in destination-passing style.

An imported function takes flat row-major memrefs: its tensor arguments,
then one output buffer per result, then one scratch buffer per intermediate
value that a later collective reads (`purlin.inputs` and `purlin.results` on
the function count the first two). Shared by the StableHLO and shard
importers, which say how one collective op becomes coll ops.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

from xdsl.dialects.builtin import IntegerAttr, MemRefType, TensorType, UnregisteredOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException

from purlin.coll.attributes import ELEMENT_TYPES_TEXT, dtype_name
from purlin.diagnostics import op_error, where

# (op, input buffers, output buffers) -> the coll ops doing what op does.
Convert = Callable[[Operation, list[SSAValue], list[SSAValue]], list[Operation]]


def op_name(op: Operation) -> str:
    """The name `op` was written with (an unregistered op's own, not builtin.unregistered)."""
    return op.op_name.data if isinstance(op, UnregisteredOp) else op.name


def fail(op: Operation, message: str) -> PassFailedException:
    """A form purlin does not import, located at its op."""
    if isinstance(op, UnregisteredOp):
        return PassFailedException(f"{where(op)}: error: '{op_name(op)}': {message}")
    return PassFailedException(op_error(op, f"'{op.name}': {message}"))


def tensor_shape(op: Operation, t: Attribute) -> tuple[list[int], Attribute]:
    """The shape and element type of `op`'s tensor type `t`: ranked, static, of a supported dtype."""
    if not isinstance(t, TensorType):
        raise fail(op, f"takes ranked tensors, got {t}")
    shape = list(t.get_shape())
    if any(d < 0 for d in shape):
        raise fail(op, f"dynamic shapes are not supported, got {t}; purlin needs static sizes")
    if dtype_name(t.element_type) is None:
        raise fail(op, f"element type {t.element_type} is not supported, expected one of {ELEMENT_TYPES_TEXT}")
    return shape, t.element_type


def flat_memref(t: TensorType) -> MemRefType:
    """The flat row-major buffer of a tensor type."""
    return MemRefType(t.element_type, [prod(t.get_shape())])


def coll_function(name: str, ops: list[Operation], inputs: list[SSAValue], outputs: list[SSAValue],
                  views: dict[SSAValue, SSAValue], collective: type[Operation] | tuple[type[Operation], ...],
                  convert: Convert) -> FuncOp:
    """The destination-passing coll function doing what `ops` (in order) do:
    it takes `inputs` (the tensors they read from elsewhere) and gives
    `outputs` (results of collectives among them). `views` maps what a view
    among `ops` gives to the value it views: the same buffer, no data moved."""
    block = Block(arg_types=[flat_memref(v.type) for v in inputs] + [flat_memref(v.type) for v in outputs])  # type: ignore[arg-type]
    for i, arg in enumerate(block.args):
        hint = inputs[i].name_hint if i < len(inputs) else None
        arg.name_hint = hint if hint and hint.isidentifier() else (
            f"arg{i}" if i < len(inputs) else f"result{i - len(inputs)}")
    buffer: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args[: len(inputs)]))
    outs_of = dict(zip(outputs, block.args[len(inputs):]))
    made: list[Operation] = []
    for op in ops:
        if not isinstance(op, collective):
            for r in op.results:
                if r in views:
                    buffer[r] = buffer[views[r]]
            continue
        ins = []
        for v in op.operands:
            if v not in buffer:
                raise fail(op, "its operand is not an argument or the result of a collective")
            ins.append(buffer[v])
        outs = []
        for r in op.results:
            if r in outs_of:
                outs.append(outs_of[r])
            else:
                outs.append(block.insert_arg(flat_memref(r.type), len(block.args)))  # type: ignore[arg-type]
                outs[-1].name_hint = f"scratch{len(block.args) - len(inputs) - len(outputs) - 1}"
            buffer[r] = outs[-1]
        made += convert(op, ins, outs)
    block.add_ops([*made, ReturnOp()])
    new = FuncOp(name, ([a.type for a in block.args], []), Region(block))
    new.attributes["purlin.inputs"] = IntegerAttr(len(inputs), 64)
    new.attributes["purlin.results"] = IntegerAttr(len(outputs), 64)
    return new


def convert_function(func: FuncOp, collective: type[Operation] | tuple[type[Operation], ...], convert: Convert,
                     views: dict[SSAValue, SSAValue] | None = None) -> FuncOp:
    """The destination-passing coll function of a function of collectives
    (and views of their values, `views` as coll_function takes them)."""
    views = views or {}
    body = func.body.block
    ret = body.last_op
    if not isinstance(ret, ReturnOp):
        raise fail(func, f"@{func.sym_name.data} must end in a return")
    for t in func.function_type.inputs.data:
        tensor_shape(func, t)
    results = list(ret.arguments)
    for v in results:
        tensor_shape(ret, v.type)
    for k, v in enumerate(results):
        if v in body.args or not isinstance(v.owner, collective) or results.index(v) != k:
            raise fail(ret, f"result {k} is not computed by a collective; purlin imports functions whose "
                       "results are collectives")
    ops = [op for op in body.ops if op is not ret]
    for op in ops:
        if not isinstance(op, collective) and not all(r in views for r in op.results):
            raise fail(op, "is not a collective; purlin imports functions of collectives only")
    new = coll_function(func.sym_name.data, ops, list(body.args), results, views, collective, convert)
    new.location = func.location
    return new


def replace_function(old: FuncOp, new: FuncOp) -> None:
    parent = old.parent_block()
    assert parent is not None
    parent.insert_op_before(new, old)
    old.detach()
    old.erase()
