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

from xdsl.dialects.builtin import IntegerAttr, MemRefType, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException

from purlin.coll.attributes import ELEMENT_TYPES_TEXT, dtype_name
from purlin.diagnostics import op_error

# (op, input buffers, output buffers) -> the coll ops doing what op does.
Convert = Callable[[Operation, list[SSAValue], list[SSAValue]], list[Operation]]


def fail(op: Operation, message: str) -> PassFailedException:
    """A form purlin does not import, located at its op."""
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


def _memref(t: TensorType) -> MemRefType:
    return MemRefType(t.element_type, [prod(t.get_shape())])


def convert_function(func: FuncOp, collective: type[Operation], convert: Convert) -> FuncOp:
    """The destination-passing coll function of a StableHLO function."""
    body = func.body.block
    ret = body.last_op
    if not isinstance(ret, ReturnOp):
        raise fail(func, f"@{func.sym_name.data} must end in a return")
    for t in func.function_type.inputs.data:
        tensor_shape(func, t)
    inputs = list(func.function_type.inputs.data)
    results = list(ret.arguments)
    for v in results:
        tensor_shape(ret, v.type)
    block = Block(arg_types=[_memref(t) for t in inputs] + [_memref(v.type) for v in results])  # type: ignore[arg-type]
    for i, arg in enumerate(block.args):
        arg.name_hint = body.args[i].name_hint if i < len(inputs) else f"result{i - len(inputs)}"
    buffer: dict[SSAValue, SSAValue] = dict(zip(body.args, block.args[: len(inputs)]))
    for k, v in enumerate(results):
        if v in buffer or not isinstance(v.owner, collective):
            raise fail(ret, f"result {k} is not computed by a collective; purlin imports functions whose "
                       "results are collectives")
    outputs = {v: block.args[len(inputs) + k] for k, v in enumerate(results)}
    ops: list[Operation] = []
    for op in body.ops:
        if op is ret:
            continue
        if not isinstance(op, collective):
            raise fail(op, "is not a collective; purlin imports functions of collectives only")
        ins = []
        for v in op.operands:
            if v not in buffer:
                raise fail(op, "its operand is not an argument or the result of a collective")
            ins.append(buffer[v])
        outs = []
        for r in op.results:
            if r in outputs:
                outs.append(outputs[r])
            else:
                outs.append(block.insert_arg(_memref(r.type), len(block.args)))  # type: ignore[arg-type]
                outs[-1].name_hint = f"scratch{len(block.args) - len(inputs) - len(results) - 1}"
            buffer[r] = outs[-1]
        ops += convert(op, ins, outs)
    block.add_ops([*ops, ReturnOp()])
    new = FuncOp(func.sym_name.data, ([a.type for a in block.args], []), Region(block))
    new.attributes["purlin.inputs"] = IntegerAttr(len(inputs), 64)
    new.attributes["purlin.results"] = IntegerAttr(len(results), 64)
    new.location = func.location
    return new




def replace_function(old: FuncOp, new: FuncOp) -> None:
    parent = old.parent_block()
    assert parent is not None
    parent.insert_op_before(new, old)
    old.detach()
    old.erase()
