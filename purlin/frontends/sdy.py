"""The part of Shardy's `sdy` dialect that JAX prints around a program mapped
over a mesh: the mesh, tensor shardings, the manual computation whose body is
the per-device program, its return, and sharding constraints.

    sdy.mesh @mesh = <["x"=2, "y"=4]>
    %r = sdy.manual_computation(%a) in_shardings=[<@mesh, [{"x"}, {"y", ?}]>]
           out_shardings=[<@mesh, [{}, {"y"}]>] manual_axes={"x", "y"} (%local: tensor<4x2xf32>) {
      ...
      sdy.return %v : tensor<4x2xf32>
    } : (tensor<8x8xf32>) -> tensor<4x8xf32>

Pretty and generic forms parse (the generic form gives the fields as
properties: `#sdy.sharding_per_value<[..]>`, `#sdy<manual_axes{..}>`); ops
print in generic form, which parses back. A sharding names, per dimension of
the tensor, the mesh axes it is split over (major first; `"x":(1)2` a
sub-axis: of axis x, the part of size 2 after sub-axes of size 1), whether it
is closed (`?` leaves it open to propagation) and a priority (`p0`).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects.builtin import ArrayAttr, FunctionType, IntAttr, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute, Block, Dialect, OpaqueSyntaxAttribute, ParametrizedAttribute, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    param_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from purlin.frontends.op_definitions import ValuesTerminator


# -- attributes ----------------------------------------------------------------


def _braced(parser: AttrParser, item) -> list:
    """`{a, b, ..}` of items parsed by `item`."""
    return parser.parse_comma_separated_list(parser.Delimiter.BRACES, item)


def _print_braced(printer: Printer, items: Sequence, item) -> None:
    printer.print_string("{")
    printer.print_list(items, item)
    printer.print_string("}")


@irdl_attr_definition
class MeshAxisAttr(ParametrizedAttribute):
    """`"x"=2`: a named axis of a mesh and its size."""

    name = "sdy.mesh_axis"
    axis: StringAttr = param_def()
    size: IntAttr = param_def()

    @classmethod
    def parse_inline(cls, parser: AttrParser) -> MeshAxisAttr:
        axis = parser.parse_str_literal(" (a mesh axis name)")
        parser.parse_punctuation("=")
        return cls(StringAttr(axis), IntAttr(parser.parse_integer(allow_boolean=False, allow_negative=False)))

    def print_inline(self, printer: Printer) -> None:
        printer.print_string_literal(self.axis.data)
        printer.print_string(f"={self.size.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            axis = cls.parse_inline(parser)
        return (axis.axis, axis.size)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        self.print_inline(printer)
        printer.print_string(">")


@irdl_attr_definition
class MeshAttr(ParametrizedAttribute):
    """`<["x"=2, "y"=4], device_ids=[..]>`: devices numbered row-major over
    the axes (the first the most significant); `device_ids`, when given, is
    the device at each position."""

    name = "sdy.mesh"
    axes: ArrayAttr[MeshAxisAttr] = param_def()
    device_ids: ArrayAttr[IntAttr] = param_def()

    @classmethod
    def parse_inline(cls, parser: AttrParser) -> MeshAttr:
        with parser.in_angle_brackets():
            axes: list[MeshAxisAttr] = []
            ids: list[int] = []
            if parser.parse_optional_keyword("device_ids") is None:
                axes = parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                                         lambda: MeshAxisAttr.parse_inline(parser))
                if parser.parse_optional_punctuation(",") is not None:
                    parser.parse_keyword("device_ids")
                    ids = _device_ids(parser)
            else:
                ids = _device_ids(parser)
        return cls(ArrayAttr(axes), ArrayAttr(IntAttr(i) for i in ids))

    def print_inline(self, printer: Printer) -> None:
        printer.print_string("<[")
        printer.print_list(self.axes.data, lambda a: a.print_inline(printer))
        printer.print_string("]")
        if self.device_ids.data:
            printer.print_string(f", device_ids=[{', '.join(str(i.data) for i in self.device_ids.data)}]")
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        mesh = cls.parse_inline(parser)
        return (mesh.axes, mesh.device_ids)

    def print_parameters(self, printer: Printer) -> None:
        self.print_inline(printer)

    @property
    def shape(self) -> dict[str, int]:
        return {a.axis.data: a.size.data for a in self.axes.data}

    def problem(self) -> str | None:
        """What is wrong with the mesh, or None."""
        names = [a.axis.data for a in self.axes.data]
        if len(set(names)) != len(names):
            return f"axis names {', '.join(names)} repeat a name"
        if any(a.size.data < 1 for a in self.axes.data):
            return "axis sizes must be positive"
        n = prod(a.size.data for a in self.axes.data)
        ids = sorted(i.data for i in self.device_ids.data)
        if ids and ids != list(range(n)):
            return f"device_ids must be 0 to {n - 1}, each once, for {n} devices"
        return None


def _device_ids(parser: AttrParser) -> list[int]:
    parser.parse_punctuation("=")
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False, allow_negative=False))


@irdl_attr_definition
class AxisRefAttr(ParametrizedAttribute):
    """`"x"`, or `"x":(PRE)SIZE`: of axis x (size N), the sub-axis of SIZE
    after sub-axes of size PRE (index (major * SIZE + sub) * N / (PRE * SIZE)
    + minor); `pre` is 0 for the whole axis."""

    name = "sdy.axis_ref"
    axis: StringAttr = param_def()
    pre: IntAttr = param_def()
    size: IntAttr = param_def()

    @classmethod
    def parse_inline(cls, parser: AttrParser) -> AxisRefAttr:
        axis = parser.parse_str_literal(" (a mesh axis name)")
        pre = size = 0
        if parser.parse_optional_punctuation(":") is not None:
            parser.parse_punctuation("(")
            pre = parser.parse_integer(allow_boolean=False, allow_negative=False)
            parser.parse_punctuation(")")
            size = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return cls(StringAttr(axis), IntAttr(pre), IntAttr(size))

    def print_inline(self, printer: Printer) -> None:
        printer.print_string_literal(self.axis.data)
        if self.pre.data:
            printer.print_string(f":({self.pre.data}){self.size.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            ref = cls.parse_inline(parser)
        return (ref.axis, ref.pre, ref.size)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        self.print_inline(printer)
        printer.print_string(">")


def _parse_refs(parser: AttrParser) -> ArrayAttr[AxisRefAttr]:
    return ArrayAttr(_braced(parser, lambda: AxisRefAttr.parse_inline(parser)))


def _print_refs(printer: Printer, refs: ArrayAttr[AxisRefAttr]) -> None:
    _print_braced(printer, refs.data, lambda r: r.print_inline(printer))


@irdl_attr_definition
class DimShardingAttr(ParametrizedAttribute):
    """`{"x", "y"}`, `{"x", ?}` (open), `{}p1` (a priority): the axes one
    dimension is split over, major first."""

    name = "sdy.dim_sharding"
    axes: ArrayAttr[AxisRefAttr] = param_def()
    is_open: IntAttr = param_def()
    priority: IntAttr = param_def()  # -1: none

    @classmethod
    def parse_inline(cls, parser: AttrParser) -> DimShardingAttr:
        refs: list[AxisRefAttr] = []
        is_open = False
        parser.parse_punctuation("{")
        if parser.parse_optional_punctuation("}") is None:
            while True:
                if parser.parse_optional_punctuation("?") is not None:
                    is_open = True
                    parser.parse_punctuation("}")
                    break
                refs.append(AxisRefAttr.parse_inline(parser))
                if parser.parse_optional_punctuation("}") is not None:
                    break
                parser.parse_punctuation(",")
        priority = -1
        start = parser.pos
        word = parser.parse_optional_identifier()
        if word is not None:
            if not (word.startswith("p") and word[1:].isdigit()):
                parser.raise_error(f"expected a priority p<N>, got '{word}'", start, parser.pos)
            priority = int(word[1:])
        return cls(ArrayAttr(refs), IntAttr(int(is_open)), IntAttr(priority))

    def print_inline(self, printer: Printer) -> None:
        items: list = list(self.axes.data) + (["?"] if self.is_open.data else [])
        _print_braced(printer, items, lambda i: printer.print_string("?") if i == "?" else i.print_inline(printer))
        if self.priority.data >= 0:
            printer.print_string(f"p{self.priority.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            dim = cls.parse_inline(parser)
        return (dim.axes, dim.is_open, dim.priority)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        self.print_inline(printer)
        printer.print_string(">")


@irdl_attr_definition
class TensorShardingAttr(ParametrizedAttribute):
    """`#sdy.sharding<@mesh, [{"x"}, {}], replicated={"y"}, unreduced={"z"}>`:
    per dimension the axes it is split over, on the mesh named (or given
    inline: `mesh<[..]>`)."""

    name = "sdy.sharding"
    mesh: Attribute = param_def()  # SymbolRefAttr or MeshAttr
    dims: ArrayAttr[DimShardingAttr] = param_def()
    replicated: ArrayAttr[AxisRefAttr] = param_def()
    unreduced: ArrayAttr[AxisRefAttr] = param_def()

    @classmethod
    def parse_inline(cls, parser: AttrParser) -> TensorShardingAttr:
        with parser.in_angle_brackets():
            name = parser.parse_optional_symbol_name()
            if name is not None:
                mesh: Attribute = SymbolRefAttr(name)
            else:
                parser.parse_keyword("mesh", " (a mesh: @name or mesh<[..]>)")
                mesh = MeshAttr.parse_inline(parser)
            parser.parse_punctuation(",")
            dims = parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                                     lambda: DimShardingAttr.parse_inline(parser))
            extra = {"replicated": ArrayAttr([]), "unreduced": ArrayAttr([])}
            while parser.parse_optional_punctuation(",") is not None:
                key = parser.parse_keyword_in(tuple(extra), " (replicated or unreduced)")
                parser.parse_punctuation("=")
                extra[key] = _parse_refs(parser)
        return cls(mesh, ArrayAttr(dims), extra["replicated"], extra["unreduced"])

    def print_inline(self, printer: Printer) -> None:
        printer.print_string("<")
        if isinstance(self.mesh, MeshAttr):
            printer.print_string("mesh")
            self.mesh.print_inline(printer)
        else:
            printer.print_attribute(self.mesh)
        printer.print_string(", [")
        printer.print_list(self.dims.data, lambda d: d.print_inline(printer))
        printer.print_string("]")
        for key in ("replicated", "unreduced"):
            refs = getattr(self, key)
            if refs.data:
                printer.print_string(f", {key}=")
                _print_refs(printer, refs)
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        s = cls.parse_inline(parser)
        return (s.mesh, s.dims, s.replicated, s.unreduced)

    def print_parameters(self, printer: Printer) -> None:
        self.print_inline(printer)



def _parse_shardings(parser: AttrParser) -> ArrayAttr[TensorShardingAttr]:
    return ArrayAttr(parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                                       lambda: TensorShardingAttr.parse_inline(parser)))


def _print_shardings(printer: Printer, shardings: ArrayAttr[TensorShardingAttr]) -> None:
    printer.print_string("[")
    printer.print_list(shardings.data, lambda s: s.print_inline(printer))
    printer.print_string("]")


@irdl_attr_definition
class TensorShardingPerValueAttr(ParametrizedAttribute):
    """`#sdy.sharding_per_value<[<@mesh, [..]>, ..]>`: one sharding per value."""

    name = "sdy.sharding_per_value"
    shardings: ArrayAttr[TensorShardingAttr] = param_def()

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (_parse_shardings(parser),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        _print_shardings(printer, self.shardings)
        printer.print_string(">")


@irdl_attr_definition
class ManualAxesAttr(ParametrizedAttribute, OpaqueSyntaxAttribute):
    """`{"x", "y"}` (`#sdy<manual_axes{..}>` as an attribute of its own): the
    mesh axes a manual computation's body is written per device along."""

    name = "sdy.manual_axes"
    axes: ArrayAttr[StringAttr] = param_def()

    @classmethod
    def parse_inline(cls, parser: AttrParser) -> ManualAxesAttr:
        return cls(ArrayAttr(StringAttr(a) for a in _braced(parser, lambda: parser.parse_str_literal(" (an axis)"))))

    def print_inline(self, printer: Printer) -> None:
        _print_braced(printer, self.axes.data, lambda a: printer.print_string_literal(a.data))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        return (cls.parse_inline(parser).axes,)

    def print_parameters(self, printer: Printer) -> None:
        self.print_inline(printer)


# -- ops -------------------------------------------------------------------------


@irdl_op_definition
class MeshOp(IRDLOperation):
    """`sdy.mesh @name = <["x"=2, ..]>`."""

    name = "sdy.mesh"
    sym_name = prop_def(StringAttr)
    mesh = prop_def(MeshAttr)
    traits = traits_def(SymbolOpInterface())

    def __init__(self, sym_name: str, mesh: MeshAttr):
        super().__init__(properties={"sym_name": StringAttr(sym_name), "mesh": mesh})

    def verify_(self) -> None:
        if why := self.mesh.problem():
            raise VerifyException(f"'{self.name}': {why}")

    @classmethod
    def parse(cls, parser: Parser) -> MeshOp:
        name = parser.parse_symbol_name()
        parser.parse_punctuation("=")
        op = cls(name.data, MeshAttr.parse_inline(parser))
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


def _parse_types(parser: Parser) -> FunctionType:
    parser.parse_punctuation(":")
    start = parser.pos
    t = parser.parse_type()
    if not isinstance(t, FunctionType):
        parser.raise_error("expected a function type (operands) -> results", start, parser.pos)
    return t


@irdl_op_definition
class ManualComputationOp(IRDLOperation):
    """The body runs on every device on its part of the operands (split by
    `in_shardings` along `manual_axes`); its results, put together by
    `out_shardings`, are the op's."""

    name = "sdy.manual_computation"
    tensors = var_operand_def()
    results_ = var_result_def()
    in_shardings = prop_def(TensorShardingPerValueAttr)
    out_shardings = prop_def(TensorShardingPerValueAttr)
    manual_axes = prop_def(ManualAxesAttr)
    body = region_def("single_block")

    def __init__(self, tensors: Sequence[SSAValue], result_types: Sequence[Attribute],
                 in_shardings: TensorShardingPerValueAttr, out_shardings: TensorShardingPerValueAttr,
                 manual_axes: ManualAxesAttr, body: Region):
        super().__init__(operands=[tensors], result_types=[result_types], regions=[body], properties={
            "in_shardings": in_shardings, "out_shardings": out_shardings, "manual_axes": manual_axes})

    @classmethod
    def parse(cls, parser: Parser) -> ManualComputationOp:
        operands = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        fields: dict[str, Attribute] = {}
        for key in ("in_shardings", "out_shardings"):
            parser.parse_keyword(key)
            parser.parse_punctuation("=")
            fields[key] = TensorShardingPerValueAttr(_parse_shardings(parser))
        parser.parse_keyword("manual_axes")
        parser.parse_punctuation("=")
        manual = ManualAxesAttr.parse_inline(parser)
        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN,
                                                 lambda: parser.parse_argument(expect_type=True))
        region = parser.parse_region(args)
        attrs = parser.parse_optional_attr_dict()
        t = _parse_types(parser)
        if len(t.inputs.data) != len(operands):
            parser.raise_error(f"{len(operands)} operands but {len(t.inputs.data)} operand types")
        values = [parser.resolve_operand(o, ty) for o, ty in zip(operands, t.inputs.data)]
        op = cls(values, t.outputs.data, fields["in_shardings"], fields["out_shardings"],  # type: ignore[arg-type]
                 manual, region)
        op.attributes.update(attrs)
        return op

    @property
    def block(self) -> Block:
        return self.body.block

    def verify_(self) -> None:
        block = self.body.block
        n_in, n_out = len(self.in_shardings.shardings.data), len(self.out_shardings.shardings.data)
        if n_in != len(self.tensors) or len(block.args) != len(self.tensors):
            raise VerifyException(f"'{self.name}': {len(self.tensors)} operands need as many in_shardings and body "
                                  f"arguments, got {n_in} and {len(block.args)}")
        if n_out != len(self.results):
            raise VerifyException(f"'{self.name}': {len(self.results)} results need as many out_shardings, got {n_out}")
        last = block.last_op
        if not isinstance(last, ReturnOp) or len(last.values) != len(self.results):
            raise VerifyException(f"'{self.name}': the body must end in sdy.return of {len(self.results)} values")


@irdl_op_definition
class ReturnOp(ValuesTerminator):
    """`sdy.return %v, .. : T, ..`: the body's per-device results."""

    name = "sdy.return"


class _Constraint(IRDLOperation):
    """`OP %x <@mesh, [..]> : T`: the value, with a sharding to have."""

    input = operand_def()
    output = result_def()
    sharding = prop_def(TensorShardingAttr)

    def __init__(self, value: SSAValue, sharding: TensorShardingAttr):
        super().__init__(operands=[value], result_types=[value.type], properties={"sharding": sharding})

    @classmethod
    def parse(cls, parser: Parser):
        operand = parser.parse_unresolved_operand()
        sharding = TensorShardingAttr.parse_inline(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        op = cls(parser.resolve_operand(operand, parser.parse_type()), sharding)
        op.attributes.update(attrs)
        return op

    def verify_(self) -> None:
        if self.input.type != self.output.type:
            raise VerifyException(f"'{self.name}': the result type {self.output.type} must be the operand's "
                                  f"{self.input.type}")


@irdl_op_definition
class ShardingConstraintOp(_Constraint):
    name = "sdy.sharding_constraint"


@irdl_op_definition
class ReshardOp(_Constraint):
    name = "sdy.reshard"


# Ops that pass their operand through: a sharding is a placement, not a value.
IDENTITIES = (ShardingConstraintOp, ReshardOp)

Sdy = Dialect(
    "sdy",
    [MeshOp, ManualComputationOp, ReturnOp, ShardingConstraintOp, ReshardOp],
    [MeshAxisAttr, MeshAttr, AxisRefAttr, DimShardingAttr, TensorShardingAttr, TensorShardingPerValueAttr,
     ManualAxesAttr],
)
