"""The part of the `stablehlo` dialect that purlin imports: the collective ops,
the element-wise ops a reduction region uses, constants and returns, and the
attributes of process grouping (channel handles, meshes of named axes).

Collectives are accepted in generic form (`"stablehlo.all_reduce"(%x) ...`,
their fields as properties `<{..}>` or attributes `{..}`) and in pretty form
(`stablehlo.all_reduce(%x) ({..}) {..} : (types) -> types`); they print in
generic form. Fields are read with `field(op, name)` wherever they were given.
`convert-stablehlo-to-coll` gives them their process semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    FunctionType,
    IntAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    opt_region_def,
    param_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from purlin.declarations import define_op
from purlin.frontends.op_definitions import (
    DenseValueOp,
    field,  # noqa: F401  (read as shlo.field by the importers)
    parse_dense,
)

# -- attributes ----------------------------------------------------------------


def _parse_fields(parser: AttrParser, fields: dict[str, Callable[[], object]]) -> dict[str, object]:
    """`<name = value, ...>` where fields maps each name to its value parser."""
    values: dict[str, object] = {}

    def one() -> None:
        start = parser.pos
        key = parser.parse_identifier(" (a field name)")
        if key not in fields:
            parser.raise_error(f"unknown field '{key}', expected one of {', '.join(fields)}", start, parser.pos)
        parser.parse_punctuation("=")
        values[key] = fields[key]()

    with parser.in_angle_brackets():
        parser.parse_comma_separated_list(parser.Delimiter.NONE, one)
    return values


@dataclass(frozen=True)
class _Field:
    """One `key = value` of a struct-like attribute, filling parameter `param`."""

    key: str
    param: str
    parse: Callable[[AttrParser], Attribute]
    print: Callable[[Printer, Attribute], None]
    default: Attribute


def _int_field(key: str, param: str | None = None, *, negative: bool = True) -> _Field:
    return _Field(key, param or key,
                  lambda p: IntAttr(p.parse_integer(allow_boolean=False, allow_negative=negative)),
                  lambda pr, a: pr.print_string(str(a.data)), IntAttr(0))  # type: ignore[attr-defined]


def _str_field(key: str, param: str) -> _Field:
    return _Field(key, param, lambda p: StringAttr(p.parse_str_literal()),
                  lambda pr, a: pr.print_string_literal(a.data), StringAttr(""))  # type: ignore[attr-defined]


def _attr_field(key: str, default: Attribute) -> _Field:
    return _Field(key, key, lambda p: p.parse_attribute(), Printer.print_attribute, default)


def _list_field(key: str) -> _Field:
    def parse(p: AttrParser) -> Attribute:
        return ArrayAttr(p.parse_comma_separated_list(p.Delimiter.SQUARE, p.parse_attribute))

    def print_(pr: Printer, a: Attribute) -> None:
        pr.print_string("[")
        pr.print_list(a.data, pr.print_attribute)  # type: ignore[attr-defined]
        pr.print_string("]")

    return _Field(key, key, parse, print_, ArrayAttr([]))


class _StructAttr(ParametrizedAttribute):
    """`<key = value, ...>`: fields in any order, each optional (its default
    stands in), printed all and in the order of FIELDS."""

    FIELDS: ClassVar[tuple[_Field, ...]]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        given = _parse_fields(parser, {f.key: (lambda f=f: f.parse(parser)) for f in cls.FIELDS})
        by_param = {f.param: given.get(f.key, f.default) for f in cls.FIELDS}
        return tuple(by_param[name] for name, _ in cls.get_irdl_definition().parameters)  # type: ignore[misc]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        for i, f in enumerate(self.FIELDS):
            printer.print_string(f"{', ' if i else ''}{f.key} = ")
            f.print(printer, getattr(self, f.param))
        printer.print_string(">")


@irdl_attr_definition
class ChannelHandleAttr(_StructAttr):
    """`#stablehlo.channel_handle<handle = H, type = T>`."""

    name = "stablehlo.channel_handle"
    handle: IntAttr = param_def()
    type: IntAttr = param_def()
    FIELDS: ClassVar[tuple[_Field, ...]] = (_int_field("handle"), _int_field("type"))


@irdl_attr_definition
class MeshAxisAttr(_StructAttr):
    """`#stablehlo.mesh_axis<name = "x", size = 2>`."""

    name = "stablehlo.mesh_axis"
    axis: StringAttr = param_def()
    size: IntAttr = param_def()
    FIELDS: ClassVar[tuple[_Field, ...]] = (_str_field("name", "axis"), _int_field("size", negative=False))


@irdl_attr_definition
class MeshAttr(_StructAttr):
    """`#stablehlo.mesh<axes = [#stablehlo.mesh_axis<..>, ..]>`: devices
    numbered row-major over the axes, the first the most significant."""

    name = "stablehlo.mesh"
    axes: ArrayAttr[MeshAxisAttr] = param_def()
    FIELDS: ClassVar[tuple[_Field, ...]] = (_list_field("axes"),)


@irdl_attr_definition
class AxisRefAttr(ParametrizedAttribute):
    """`#stablehlo.axis_ref<name = "y">`, or a sub-axis of it with
    `sub_axis_info = (PRE)SIZE`: of an axis of size N, index
    (major * SIZE + sub) * (N / (PRE * SIZE)) + minor, the sub-axis is `sub`
    (PRE is the size of the sub-axes before it)."""

    name = "stablehlo.axis_ref"
    axis: StringAttr = param_def()
    pre_size: IntAttr = param_def()  # 0: the whole axis
    sub_size: IntAttr = param_def()

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        def sub() -> tuple[int, int]:
            parser.parse_punctuation("(")
            pre = parser.parse_integer(allow_boolean=False, allow_negative=False)
            parser.parse_punctuation(")")
            return pre, parser.parse_integer(allow_boolean=False, allow_negative=False)

        v = _parse_fields(parser, {"name": parser.parse_str_literal, "sub_axis_info": sub})
        pre, size = v.get("sub_axis_info", (0, 0))  # type: ignore[misc]
        return (StringAttr(v.get("name", "")), IntAttr(pre), IntAttr(size))  # type: ignore[arg-type]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<name = ")
        printer.print_string_literal(self.axis.data)
        if self.pre_size.data:
            printer.print_string(f", sub_axis_info = ({self.pre_size.data}){self.sub_size.data}")
        printer.print_string(">")


@irdl_attr_definition
class ReplicaGroupMeshAxesAttr(_StructAttr):
    """`#stablehlo.replica_group_mesh_axes<mesh = MESH, axes = [AXIS_REF, ..]>`:
    one group per position on the other axes, its members along `axes`."""

    name = "stablehlo.replica_group_mesh_axes"
    mesh: MeshAttr = param_def()
    axes: ArrayAttr[AxisRefAttr] = param_def()
    FIELDS: ClassVar[tuple[_Field, ...]] = (_attr_field("mesh", MeshAttr(ArrayAttr([]))), _list_field("axes"))


# -- ops -------------------------------------------------------------------------


def _parse_functional(parser: Parser, operands: list[UnresolvedOperand]) -> tuple[list[SSAValue], list[Attribute]]:
    """`: (T, ..) -> (R, ..)` resolving `operands`; results may be one bare type."""
    parser.parse_punctuation(":")
    start = parser.pos
    t = parser.parse_type()
    if not isinstance(t, FunctionType):
        parser.raise_error("expected a function type (operands) -> results", start, parser.pos)
    ins, outs = list(t.inputs.data), list(t.outputs.data)
    if len(ins) != len(operands):
        parser.raise_error(f"{len(operands)} operands but {len(ins)} operand types", start, parser.pos)
    return [parser.resolve_operand(o, ty) for o, ty in zip(operands, ins)], outs


# The collectives' fields, declared so that the generic form may give them
# as properties; `field` reads them wherever they were given.
_FIELDS = ("replica_groups", "channel_handle", "use_global_device_ids", "all_gather_dim",
           "scatter_dimension", "split_dimension", "concat_dimension", "split_count",
           "source_target_pairs", "has_dynamic_root")
_Fields = type("_Fields", (), {name: opt_prop_def(Attribute) for name in _FIELDS})


class CollectiveBase(IRDLOperation, _Fields):
    """A StableHLO collective on variadic tensors."""

    REGION: ClassVar[bool] = False

    inputs = var_operand_def()
    results_ = var_result_def()
    body = opt_region_def()

    def __init__(self, inputs: Sequence[SSAValue], result_types: Sequence[Attribute],
                 fields: dict[str, Attribute], body: Region | None = None):
        super().__init__(operands=[inputs], result_types=[result_types], attributes=fields,
                         regions=[body])

    @classmethod
    def parse(cls, parser: Parser) -> CollectiveBase:
        operands = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        body = None
        if parser.parse_optional_punctuation("("):
            body = parser.parse_region()
            parser.parse_punctuation(")")
        fields = parser.parse_optional_attr_dict()
        values, outs = _parse_functional(parser, operands)
        return cls(values, outs, fields, body)

    def verify_(self) -> None:
        if self.REGION and (self.body is None or not self.body.blocks):
            raise VerifyException(f"'{self.name}': needs its reduction region")
        if not self.REGION and self.body is not None and self.body.blocks:
            raise VerifyException(f"'{self.name}': takes no region")


AllReduceOp = define_op(CollectiveBase, __name__, "AllReduceOp", "stablehlo.all_reduce", REGION=True)
ReduceScatterOp = define_op(CollectiveBase, __name__, "ReduceScatterOp", "stablehlo.reduce_scatter", REGION=True)
AllGatherOp = define_op(CollectiveBase, __name__, "AllGatherOp", "stablehlo.all_gather")
AllToAllOp = define_op(CollectiveBase, __name__, "AllToAllOp", "stablehlo.all_to_all")
CollectivePermuteOp = define_op(CollectiveBase, __name__, "CollectivePermuteOp", "stablehlo.collective_permute")
CollectiveBroadcastOp = define_op(CollectiveBase, __name__, "CollectiveBroadcastOp",
                                  "stablehlo.collective_broadcast")

COLLECTIVES: tuple[type[CollectiveBase], ...] = (
    AllReduceOp, ReduceScatterOp, AllGatherOp, AllToAllOp, CollectivePermuteOp, CollectiveBroadcastOp,
)


@irdl_op_definition
class ConstantOp(DenseValueOp):
    """`stablehlo.constant dense<..> : tensor<..>`."""

    name = "stablehlo.constant"
    output = result_def(TensorType)

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(result_types=[value.type], properties={"value": value})

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attrs = parser.parse_optional_attr_dict()
        op = cls(parse_dense(parser, "constant"))
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)  # type: ignore[arg-type]

    def verify_(self) -> None:
        self.verify_value(self.output.type, "needs a dense value of its result type")


class ElementwiseBinary(IRDLOperation):
    """`stablehlo.OP %lhs, %rhs : T`, the combiners of a reduction region."""

    lhs = operand_def()
    rhs = operand_def()
    output = result_def()

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])

    @classmethod
    def parse(cls, parser: Parser) -> ElementwiseBinary:
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls(parser.resolve_operand(lhs, t), parser.resolve_operand(rhs, t))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        printer.print_string(" : ")
        printer.print_attribute(self.output.type)


AddOp = define_op(ElementwiseBinary, __name__, "AddOp", "stablehlo.add")
MaxOp = define_op(ElementwiseBinary, __name__, "MaxOp", "stablehlo.maximum")
MinOp = define_op(ElementwiseBinary, __name__, "MinOp", "stablehlo.minimum")
MulOp = define_op(ElementwiseBinary, __name__, "MulOp", "stablehlo.multiply")
AndOp = define_op(ElementwiseBinary, __name__, "AndOp", "stablehlo.and")
OrOp = define_op(ElementwiseBinary, __name__, "OrOp", "stablehlo.or")
XorOp = define_op(ElementwiseBinary, __name__, "XorOp", "stablehlo.xor")
SubtractOp = define_op(ElementwiseBinary, __name__, "SubtractOp", "stablehlo.subtract",
                       """Parsed so that a region using it is refused by the importer with a
    diagnostic, not by the parser.""")


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """`stablehlo.return %v, .. : T, ..`, the terminator of a region."""

    name = "stablehlo.return"
    values = var_operand_def()
    traits = traits_def(IsTerminator())

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])

    @classmethod
    def parse(cls, parser: Parser) -> ReturnOp:
        names = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand) or []
        values = []
        if names:
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            values = [parser.resolve_operand(n, t) for n, t in zip(names, types)]
        return cls(values)

    def print(self, printer: Printer) -> None:
        if self.values:
            printer.print_string(" ")
            printer.print_list(self.values, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list([v.type for v in self.values], printer.print_attribute)


# Which coll reduction each combiner is (the importer maps a region to it).
COMBINERS: dict[type[ElementwiseBinary], str] = {
    AddOp: "sum", MaxOp: "max", MinOp: "min", MulOp: "prod", AndOp: "and", OrOp: "or", XorOp: "xor",
}

StableHLO = Dialect(
    "stablehlo",
    [*COLLECTIVES, ConstantOp, AddOp, MaxOp, MinOp, MulOp, AndOp, OrOp, XorOp, SubtractOp, ReturnOp],
    [ChannelHandleAttr, MeshAxisAttr, MeshAttr, AxisRefAttr, ReplicaGroupMeshAxesAttr],
)
