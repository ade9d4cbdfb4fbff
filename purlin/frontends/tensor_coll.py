"""`tensor_coll.call`: a coll function called on the tensors of a program
that stays in tensor form, where convert-stablehlo-to-coll lowered a run of
its collectives but not the ops around them.

    %r = tensor_coll.call @main_coll0(%x) : (tensor<4x2xf32>) -> tensor<4x2xf32>

The callee is a coll function in destination-passing style on flat
row-major memrefs (`purlin.frontends.tensor_functions`): operand i is its
input i, result j its output j; outputs and scratch start zeroed. Every
process of the world makes the call together, as it would the collectives
the call replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects.builtin import FunctionType, IntegerAttr, MemRefType, StringAttr, SymbolRefAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, var_operand_def, var_result_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import VerifyException


def counts(func: FuncOp) -> tuple[int, int] | None:
    """(inputs, results) of a destination-passing coll function, or None."""
    n_in, n_out = func.attributes.get("purlin.inputs"), func.attributes.get("purlin.results")
    if isinstance(n_in, IntegerAttr) and isinstance(n_out, IntegerAttr):
        return n_in.value.data, n_out.value.data
    return None


@irdl_op_definition
class CallOp(IRDLOperation):
    name = "tensor_coll.call"

    callee = prop_def(SymbolRefAttr)
    args = var_operand_def(TensorType)
    outs = var_result_def(TensorType)

    def __init__(self, callee: str, args: Sequence[SSAValue], result_types: Sequence[Attribute]):
        super().__init__(operands=[args], result_types=[result_types],
                         properties={"callee": SymbolRefAttr(StringAttr(callee))})

    @classmethod
    def parse(cls, parser: Parser) -> CallOp:
        callee = parser.parse_symbol_name()
        operands = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        start = parser.pos
        t = parser.parse_type()
        if not isinstance(t, FunctionType) or len(t.inputs.data) != len(operands):
            parser.raise_error(f"expected a function type of {len(operands)} operands", start, parser.pos)
        op = cls(callee.data, [parser.resolve_operand(o, ty) for o, ty in zip(operands, t.inputs.data)],
                 t.outputs.data)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.callee)
        printer.print_operands(self.args)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type([a.type for a in self.args], [r.type for r in self.outs])

    def function(self) -> FuncOp | None:
        found = SymbolTable.lookup_symbol(self, self.callee)
        return found if isinstance(found, FuncOp) else None

    def verify_(self) -> None:
        name = self.callee.string_value()
        func = self.function()
        if func is None:
            raise VerifyException(f"'{self.name}': no function @{name}")
        n = counts(func)
        if n is None:
            raise VerifyException(f"'{self.name}': @{name} is not a coll function (purlin.inputs and purlin.results)")
        n_in, n_out = n
        types = func.function_type.inputs.data
        if len(self.args) != n_in or len(self.outs) != n_out or len(types) < n_in + n_out:
            raise VerifyException(f"'{self.name}': @{name} takes {n_in} inputs and gives {n_out} results, called "
                                  f"with {len(self.args)} and {len(self.outs)}")
        for what, values, buffers in (("operand", self.args, types[:n_in]),
                                      ("result", self.outs, types[n_in:n_in + n_out])):
            for k, (v, m) in enumerate(zip(values, buffers)):
                t = v.type
                assert isinstance(t, TensorType)
                if not (isinstance(m, MemRefType) and m.element_type == t.element_type
                        and prod(m.get_shape()) == prod(t.get_shape())):
                    raise VerifyException(f"'{self.name}': {what} {k} ({t}) does not fit @{name}'s buffer {m}")


TensorColl = Dialect("tensor_coll", [CallOp], [])
