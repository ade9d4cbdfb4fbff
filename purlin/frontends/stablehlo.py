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
from enum import StrEnum
from math import prod
from typing import ClassVar, TypeVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FunctionType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, ParametrizedAttribute, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    opt_region_def,
    region_def,
    param_def,
    result_def,
    traits_def,
    var_operand_def,
    var_region_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from purlin.declarations import enum_attribute
from purlin.frontends.op_definitions import DenseValueOp, ValuesTerminator, field, parse_dense

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


@irdl_op_definition
class AllReduceOp(CollectiveBase):
    name = "stablehlo.all_reduce"
    REGION: ClassVar[bool] = True


@irdl_op_definition
class ReduceScatterOp(CollectiveBase):
    name = "stablehlo.reduce_scatter"
    REGION: ClassVar[bool] = True


@irdl_op_definition
class AllGatherOp(CollectiveBase):
    name = "stablehlo.all_gather"


@irdl_op_definition
class AllToAllOp(CollectiveBase):
    name = "stablehlo.all_to_all"


@irdl_op_definition
class CollectivePermuteOp(CollectiveBase):
    name = "stablehlo.collective_permute"


@irdl_op_definition
class CollectiveBroadcastOp(CollectiveBase):
    name = "stablehlo.collective_broadcast"


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
        return _with_attributes(op, attrs)

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)
        printer.print_string(" ")
        printer.print_attribute(self.value)  # type: ignore[arg-type]

    def verify_(self) -> None:
        self.verify_value(self.output.type, "needs a dense value of its result type")


def _parse_operand_types(parser: Parser, operands: list[UnresolvedOperand], results: int = 1
                         ) -> tuple[list[SSAValue], list[Attribute]]:
    """`: T` (every operand and result of type T) or `: (T, ..) -> R`."""
    parser.parse_punctuation(":")
    start = parser.pos
    t = parser.parse_type()
    if isinstance(t, FunctionType):
        ins, outs = list(t.inputs.data), list(t.outputs.data)
        if len(ins) != len(operands):
            parser.raise_error(f"{len(operands)} operands but {len(ins)} operand types", start, parser.pos)
        return [parser.resolve_operand(o, ty) for o, ty in zip(operands, ins)], outs
    return [parser.resolve_operand(o, t) for o in operands], [t] * results


def _shape(t: Attribute) -> tuple[int, ...] | None:
    return tuple(t.get_shape()) if isinstance(t, TensorType) else None


def _ints(op: Operation, name: str) -> list[int] | None:
    """The integers of field `name` (array<i64: ..>, dense<..> or a list of integers)."""
    attr = field(op, name)
    if isinstance(attr, DenseArrayBase):
        return [int(v) for v in attr.get_values()]
    if isinstance(attr, DenseIntOrFPElementsAttr):
        return [int(v) for v in attr.get_values()]
    if isinstance(attr, ArrayAttr) and all(isinstance(a, IntegerAttr) for a in attr.data):
        return [a.value.data for a in attr.data]  # type: ignore[attr-defined]
    return None


def _int(op: Operation, name: str) -> int | None:
    attr = field(op, name)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _parse_int_list(parser: Parser) -> list[int]:
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                             lambda: parser.parse_integer(allow_boolean=False))


def _fields(*names: str) -> type:
    """Optional properties `names`, so that the generic form may give them."""
    return type("_Fields", (), {n: opt_prop_def(Attribute, prop_name=n) for n in names})


class TensorOp(IRDLOperation):
    """A StableHLO op on tensors: purlin parses it in both forms, prints it
    in generic form, leaves it where it is when importing, and runs it on its
    numpy reference (`purlin.frontends.tensor_reference`)."""

    args = var_operand_def()
    outs = var_result_def()

    def __init__(self, operands: Sequence[SSAValue], result_types: Sequence[Attribute],
                 properties: dict[str, Attribute] | None = None, regions: Sequence[Region] = ()):
        super().__init__(operands=[operands], result_types=[result_types], properties=properties or {},
                         regions=list(regions))

    def need(self, ok: bool, what: str) -> None:
        if not ok:
            raise VerifyException(f"'{self.name}': {what}")


Op = TypeVar("Op", bound=IRDLOperation)


def _with_attributes(op: Op, attrs: dict[str, Attribute]) -> Op:
    """`op` with the attribute dictionary of its pretty form: the op's own
    fields among them become properties (as the generic form's parser makes
    them), so that both forms give one op."""
    declared = op.get_irdl_definition().properties
    for name, value in attrs.items():
        if name in declared:
            op.properties[name] = value
        else:
            op.attributes[name] = value
    return op


class ElementwiseBinary(TensorOp):
    """`stablehlo.OP %lhs, %rhs : T` (or `: (T, T) -> R`): elementwise on
    operands and a result of one shape."""

    @classmethod
    def parse(cls, parser: Parser) -> ElementwiseBinary:
        operands = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        values, outs = _parse_operand_types(parser, operands)
        op = cls(values, outs)
        return _with_attributes(op, attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        types = {v.type for v in (*self.operands, *self.results)}
        if len(types) == 1:
            printer.print_attribute(self.results[0].type)
        else:
            printer.print_function_type([v.type for v in self.operands], [r.type for r in self.results])

    def verify_(self) -> None:
        self.need(len(self.operands) == 2 and len(self.results) == 1, "takes two operands and gives one result")
        shapes = {_shape(v.type) for v in (*self.operands, *self.results)}
        self.need(len(shapes) == 1 and None not in shapes,
                  f"operands and result must be tensors of one shape, got "
                  f"{', '.join(str(v.type) for v in (*self.operands, *self.results))}")


@irdl_op_definition
class AddOp(ElementwiseBinary):
    name = "stablehlo.add"


@irdl_op_definition
class MaxOp(ElementwiseBinary):
    name = "stablehlo.maximum"


@irdl_op_definition
class MinOp(ElementwiseBinary):
    name = "stablehlo.minimum"


@irdl_op_definition
class MulOp(ElementwiseBinary):
    name = "stablehlo.multiply"


@irdl_op_definition
class AndOp(ElementwiseBinary):
    name = "stablehlo.and"


@irdl_op_definition
class OrOp(ElementwiseBinary):
    name = "stablehlo.or"


@irdl_op_definition
class XorOp(ElementwiseBinary):
    name = "stablehlo.xor"


@irdl_op_definition
class SubtractOp(ElementwiseBinary):
    name = "stablehlo.subtract"


@irdl_op_definition
class DivideOp(ElementwiseBinary):
    name = "stablehlo.divide"


@irdl_op_definition
class RemainderOp(ElementwiseBinary):
    name = "stablehlo.remainder"


@irdl_op_definition
class PowerOp(ElementwiseBinary):
    name = "stablehlo.power"


@irdl_op_definition
class Atan2Op(ElementwiseBinary):
    name = "stablehlo.atan2"


@irdl_op_definition
class ShiftLeftOp(ElementwiseBinary):
    name = "stablehlo.shift_left"


@irdl_op_definition
class ShiftRightArithmeticOp(ElementwiseBinary):
    name = "stablehlo.shift_right_arithmetic"


@irdl_op_definition
class ShiftRightLogicalOp(ElementwiseBinary):
    name = "stablehlo.shift_right_logical"


BINARY_OPS = (AddOp, MaxOp, MinOp, MulOp, AndOp, OrOp, XorOp, SubtractOp, DivideOp, RemainderOp, PowerOp, Atan2Op,
              ShiftLeftOp, ShiftRightArithmeticOp, ShiftRightLogicalOp)


class _Unary(TensorOp):
    """`stablehlo.OP %x : T` or `: (T) -> R`."""

    SAME_TYPE: ClassVar[bool] = True

    @classmethod
    def parse(cls, parser: Parser) -> _Unary:
        operand = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        values, outs = _parse_operand_types(parser, [operand])
        op = cls(values, outs)
        return _with_attributes(op, attrs)

    def verify_(self) -> None:
        self.need(len(self.operands) == 1 and len(self.results) == 1, "takes one operand and gives one result")
        shape_in, shape_out = _shape(self.operands[0].type), _shape(self.results[0].type)
        self.need(shape_in is not None and shape_in == shape_out,
                  f"the result must be a tensor of the operand's shape, got {self.operands[0].type} -> "
                  f"{self.results[0].type}")


@irdl_op_definition
class NegOp(_Unary):
    name = "stablehlo.negate"


@irdl_op_definition
class AbsOp(_Unary):
    name = "stablehlo.abs"


@irdl_op_definition
class ExpOp(_Unary):
    name = "stablehlo.exponential"


@irdl_op_definition
class Expm1Op(_Unary):
    name = "stablehlo.exponential_minus_one"


@irdl_op_definition
class LogOp(_Unary):
    name = "stablehlo.log"


@irdl_op_definition
class Log1pOp(_Unary):
    name = "stablehlo.log_plus_one"


@irdl_op_definition
class SqrtOp(_Unary):
    name = "stablehlo.sqrt"


@irdl_op_definition
class RsqrtOp(_Unary):
    name = "stablehlo.rsqrt"


@irdl_op_definition
class CbrtOp(_Unary):
    name = "stablehlo.cbrt"


@irdl_op_definition
class SineOp(_Unary):
    name = "stablehlo.sine"


@irdl_op_definition
class CosineOp(_Unary):
    name = "stablehlo.cosine"


@irdl_op_definition
class TanOp(_Unary):
    name = "stablehlo.tan"


@irdl_op_definition
class TanhOp(_Unary):
    name = "stablehlo.tanh"


@irdl_op_definition
class LogisticOp(_Unary):
    name = "stablehlo.logistic"


@irdl_op_definition
class FloorOp(_Unary):
    name = "stablehlo.floor"


@irdl_op_definition
class CeilOp(_Unary):
    name = "stablehlo.ceil"


@irdl_op_definition
class SignOp(_Unary):
    name = "stablehlo.sign"


@irdl_op_definition
class NotOp(_Unary):
    name = "stablehlo.not"


@irdl_op_definition
class RoundEvenOp(_Unary):
    name = "stablehlo.round_nearest_even"


@irdl_op_definition
class RoundAwayOp(_Unary):
    name = "stablehlo.round_nearest_afz"


@irdl_op_definition
class IsFiniteOp(_Unary):
    name = "stablehlo.is_finite"


@irdl_op_definition
class PopcntOp(_Unary):
    name = "stablehlo.popcnt"


@irdl_op_definition
class ClzOp(_Unary):
    name = "stablehlo.count_leading_zeros"


@irdl_op_definition
class ConvertOp(_Unary):
    """Each element converted to the result's element type."""

    name = "stablehlo.convert"


UNARY_OPS = (NegOp, AbsOp, ExpOp, Expm1Op, LogOp, Log1pOp, SqrtOp, RsqrtOp, CbrtOp, SineOp, CosineOp, TanOp, TanhOp,
             LogisticOp, FloorOp, CeilOp, SignOp, NotOp, RoundEvenOp, RoundAwayOp, IsFiniteOp, PopcntOp, ClzOp,
             ConvertOp)


@irdl_op_definition
class BitcastConvertOp(_Unary):
    """The bytes of each element read as the result's element type (of the same width here)."""

    name = "stablehlo.bitcast_convert"


@irdl_op_definition
class ReshapeOp(_Unary):
    """The row-major elements in a new shape: no data moves."""

    name = "stablehlo.reshape"

    def verify_(self) -> None:
        t_in, t_out = self.operands[0].type, self.results[0].type
        self.need(isinstance(t_in, TensorType) and isinstance(t_out, TensorType)
                  and t_in.element_type == t_out.element_type
                  and prod(t_in.get_shape()) == prod(t_out.get_shape()),
                  f"the result must hold the operand's elements, got {t_in} -> {t_out}")


def _parse_with_dims(cls: type[Op], parser: Parser, prop: str) -> Op:
    """`%x, dims = [..] {attrs} : (T) -> R`, the dimensions into property `prop`."""
    operand = parser.parse_unresolved_operand()
    parser.parse_punctuation(",")
    parser.parse_keyword("dims")
    parser.parse_punctuation("=")
    dims = _parse_int_list(parser)
    attrs = parser.parse_optional_attr_dict()
    values, outs = _parse_operand_types(parser, [operand])
    return _with_attributes(cls(values, outs, {prop: _i64_array(dims)}), attrs)


@irdl_op_definition
class BroadcastInDimOp(TensorOp, _fields("broadcast_dimensions")):
    """`stablehlo.broadcast_in_dim %x, dims = [..] : (T) -> R`: operand
    dimension i is result dimension dims[i] (of the same size, or of size 1
    repeated); the others repeat the operand."""

    name = "stablehlo.broadcast_in_dim"

    @classmethod
    def parse(cls, parser: Parser) -> BroadcastInDimOp:
        return _parse_with_dims(cls, parser, "broadcast_dimensions")

    @property
    def dims(self) -> list[int]:
        return _ints(self, "broadcast_dimensions") or []

    def verify_(self) -> None:
        shape_in, shape_out = _shape(self.operands[0].type), _shape(self.results[0].type)
        dims = self.dims
        self.need(shape_in is not None and shape_out is not None and len(dims) == len(shape_in),
                  f"needs tensors and one broadcast dimension per operand dimension, got {dims} for "
                  f"{self.operands[0].type}")
        assert shape_in is not None and shape_out is not None
        for i, d in enumerate(dims):
            self.need(0 <= d < len(shape_out) and shape_in[i] in (1, shape_out[d]),
                      f"operand dimension {i} (size {shape_in[i]}) cannot be result dimension {d} of "
                      f"{self.results[0].type}")


@irdl_op_definition
class TransposeOp(TensorOp, _fields("permutation")):
    """`stablehlo.transpose %x, dims = [..] : (T) -> R`: result dimension i
    is operand dimension dims[i]."""

    name = "stablehlo.transpose"

    @classmethod
    def parse(cls, parser: Parser) -> TransposeOp:
        return _parse_with_dims(cls, parser, "permutation")

    @property
    def perm(self) -> list[int]:
        return _ints(self, "permutation") or []

    def verify_(self) -> None:
        shape_in, shape_out = _shape(self.operands[0].type), _shape(self.results[0].type)
        perm = self.perm
        self.need(shape_in is not None and sorted(perm) == list(range(len(shape_in))),
                  f"the permutation {perm} must order the operand's {len(shape_in or ())} dimensions")
        assert shape_in is not None
        self.need(shape_out == tuple(shape_in[p] for p in perm),
                  f"the result must be {list(shape_in[p] for p in perm)}, got {self.results[0].type}")


@irdl_op_definition
class SliceOp(TensorOp, _fields("start_indices", "limit_indices", "strides")):
    """`stablehlo.slice %x [a:b, c:d:s] : (T) -> R`."""

    name = "stablehlo.slice"

    @classmethod
    def parse(cls, parser: Parser) -> SliceOp:
        operand = parser.parse_unresolved_operand()

        def bound() -> tuple[int, int, int]:
            start = parser.parse_integer(allow_boolean=False)
            parser.parse_punctuation(":")
            limit = parser.parse_integer(allow_boolean=False)
            stride = 1
            if parser.parse_optional_punctuation(":") is not None:
                stride = parser.parse_integer(allow_boolean=False)
            return start, limit, stride

        bounds = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, bound)
        attrs = parser.parse_optional_attr_dict()
        values, outs = _parse_operand_types(parser, [operand])
        op = cls(values, outs, {k: _i64_array([b[i] for b in bounds])
                                for i, k in enumerate(("start_indices", "limit_indices", "strides"))})
        return _with_attributes(op, attrs)

    def bounds(self) -> list[tuple[int, int, int]]:
        starts, limits = _ints(self, "start_indices") or [], _ints(self, "limit_indices") or []
        strides = _ints(self, "strides") or [1] * len(starts)
        return list(zip(starts, limits, strides))

    def verify_(self) -> None:
        shape_in, shape_out = _shape(self.operands[0].type), _shape(self.results[0].type)
        bounds = self.bounds()
        self.need(shape_in is not None and len(bounds) == len(shape_in)
                  and all(0 <= a <= b <= n and s > 0 for (a, b, s), n in zip(bounds, shape_in)),
                  f"start:limit:stride {[f'{a}:{b}:{s}' for a, b, s in bounds]} must lie in {self.operands[0].type}")
        want = tuple(-(-(b - a) // s) for a, b, s in bounds)
        self.need(shape_out == want, f"the result must be {list(want)}, got {self.results[0].type}")


@irdl_op_definition
class DynamicSliceOp(TensorOp, _fields("slice_sizes")):
    """`stablehlo.dynamic_slice %x, %i0, .., sizes = [..] : (T, ..) -> R`:
    the block of `sizes` at the (clamped) start indices."""

    name = "stablehlo.dynamic_slice"

    @classmethod
    def parse(cls, parser: Parser) -> DynamicSliceOp:
        operands = [parser.parse_unresolved_operand()]
        while parser.parse_optional_punctuation(","):
            if parser.parse_optional_keyword("sizes") is not None:
                break
            operands.append(parser.parse_unresolved_operand())
        parser.parse_punctuation("=")
        sizes = _parse_int_list(parser)
        attrs = parser.parse_optional_attr_dict()
        values, outs = _parse_operand_types(parser, operands)
        op = cls(values, outs, {"slice_sizes": _i64_array(sizes)})
        return _with_attributes(op, attrs)

    def verify_(self) -> None:
        shape_in = _shape(self.operands[0].type)
        sizes = _ints(self, "slice_sizes") or []
        self.need(shape_in is not None and len(self.operands) == 1 + len(shape_in) == 1 + len(sizes)
                  and all(0 <= k <= n for k, n in zip(sizes, shape_in)),
                  f"needs one start index and one size (at most the dimension) per dimension of "
                  f"{self.operands[0].type}, got sizes {sizes}")
        self.need(_shape(self.results[0].type) == tuple(sizes), f"the result must be {sizes}")


@irdl_op_definition
class ConcatenateOp(TensorOp, _fields("dimension")):
    """`stablehlo.concatenate %a, %b, .., dim = D : (..) -> R`."""

    name = "stablehlo.concatenate"

    @classmethod
    def parse(cls, parser: Parser) -> ConcatenateOp:
        operands = [parser.parse_unresolved_operand()]
        while parser.parse_optional_punctuation(","):
            if parser.parse_optional_keyword("dim") is not None:
                break
            operands.append(parser.parse_unresolved_operand())
        parser.parse_punctuation("=")
        dim = parser.parse_integer(allow_boolean=False)
        attrs = parser.parse_optional_attr_dict()
        values, outs = _parse_operand_types(parser, operands)
        op = cls(values, outs, {"dimension": IntegerAttr(dim, i64)})
        return _with_attributes(op, attrs)

    def verify_(self) -> None:
        d = _int(self, "dimension")
        shapes = [_shape(v.type) for v in self.operands]
        self.need(bool(shapes) and None not in shapes and d is not None and all(0 <= d < len(s) for s in shapes),
                  f"dimension {d} must be a dimension of every operand")
        assert d is not None
        want = list(shapes[0])  # type: ignore[arg-type]
        want[d] = sum(s[d] for s in shapes)  # type: ignore[index]
        self.need(all(s[:d] + s[d + 1:] == shapes[0][:d] + shapes[0][d + 1:] for s in shapes)  # type: ignore[index]
                  and _shape(self.results[0].type) == tuple(want),
                  f"operands must agree but along dimension {d}, the result being {want}")


@irdl_op_definition
class IotaOp(TensorOp, _fields("iota_dimension")):
    """`stablehlo.iota dim = D : T`: each element its index along D."""

    name = "stablehlo.iota"

    @classmethod
    def parse(cls, parser: Parser) -> IotaOp:
        parser.parse_keyword("dim")
        parser.parse_punctuation("=")
        dim = parser.parse_integer(allow_boolean=False)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        op = cls([], [parser.parse_type()], {"iota_dimension": IntegerAttr(dim, i64)})
        return _with_attributes(op, attrs)

    def verify_(self) -> None:
        shape, d = _shape(self.results[0].type), _int(self, "iota_dimension")
        self.need(shape is not None and d is not None and 0 <= d < len(shape),
                  f"iota_dimension {d} must be a dimension of {self.results[0].type}")


class _ProcessId(TensorOp):
    """`stablehlo.OP : tensor<ui32>`."""

    @classmethod
    def parse(cls, parser: Parser) -> _ProcessId:
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        op = cls([], [parser.parse_type()])
        return _with_attributes(op, attrs)


@irdl_op_definition
class PartitionIdOp(_ProcessId):
    """The partition of the process running it."""

    name = "stablehlo.partition_id"


@irdl_op_definition
class ReplicaIdOp(_ProcessId):
    """The replica of the process running it."""

    name = "stablehlo.replica_id"


class ComparisonDirection(StrEnum):
    EQ = "EQ"
    NE = "NE"
    GE = "GE"
    GT = "GT"
    LE = "LE"
    LT = "LT"


class ComparisonType(StrEnum):
    NOTYPE = "NOTYPE"
    FLOAT = "FLOAT"
    TOTALORDER = "TOTALORDER"
    SIGNED = "SIGNED"
    UNSIGNED = "UNSIGNED"


ComparisonDirectionAttr = enum_attribute(ComparisonDirection, "stablehlo.comparison_direction", __name__)
ComparisonTypeAttr = enum_attribute(ComparisonType, "stablehlo.comparison_type", __name__)


@irdl_op_definition
class CompareOp(TensorOp, _fields("comparison_direction", "compare_type")):
    """`stablehlo.compare EQ, %a, %b[, TYPE] : (T, T) -> tensor<..xi1>`."""

    name = "stablehlo.compare"

    @classmethod
    def parse(cls, parser: Parser) -> CompareOp:
        direction = ComparisonDirection(parser.parse_keyword_in([d.value for d in ComparisonDirection]))
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        props: dict[str, Attribute] = {"comparison_direction": ComparisonDirectionAttr(direction)}
        if parser.parse_optional_punctuation(","):
            props["compare_type"] = ComparisonTypeAttr(
                ComparisonType(parser.parse_keyword_in([t.value for t in ComparisonType])))
        attrs = parser.parse_optional_attr_dict()
        values, outs = _parse_operand_types(parser, [lhs, rhs])
        op = cls(values, outs, props)
        return _with_attributes(op, attrs)

    @property
    def direction(self) -> ComparisonDirection:
        attr = field(self, "comparison_direction")
        assert isinstance(attr, ComparisonDirectionAttr)
        return attr.data  # type: ignore[return-value]

    def verify_(self) -> None:
        self.need(isinstance(field(self, "comparison_direction"), ComparisonDirectionAttr),
                  "needs a comparison_direction")
        t = self.results[0].type
        self.need(isinstance(t, TensorType) and t.element_type == IntegerType(1)
                  and _shape(t) == _shape(self.operands[0].type) == _shape(self.operands[1].type),
                  f"gives i1 of the operands' shape, got {t}")


@irdl_op_definition
class SelectOp(TensorOp):
    """`stablehlo.select %pred, %a, %b : (P, T, T) -> T` (or `: P, T`)."""

    name = "stablehlo.select"

    @classmethod
    def parse(cls, parser: Parser) -> SelectOp:
        operands = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        start = parser.pos
        t = parser.parse_type()
        if isinstance(t, FunctionType):
            ins, outs = list(t.inputs.data), list(t.outputs.data)
        elif parser.parse_optional_punctuation(","):
            value = parser.parse_type()
            ins, outs = [t, value, value], [value]
        else:
            ins, outs = [t] * 3, [t]
        if len(ins) != len(operands):
            parser.raise_error(f"{len(operands)} operands but {len(ins)} operand types", start, parser.pos)
        op = cls([parser.resolve_operand(o, ty) for o, ty in zip(operands, ins)], outs)
        return _with_attributes(op, attrs)


@irdl_op_definition
class ClampOp(ElementwiseBinary):
    """`stablehlo.clamp %min, %x, %max : T`."""

    name = "stablehlo.clamp"

    def verify_(self) -> None:
        self.need(len(self.operands) == 3 and len(self.results) == 1, "takes min, operand and max")


@irdl_op_definition
class ReduceOp(TensorOp, _fields("dimensions")):
    """`stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions
    = [..] : (T, C) -> R`, or with a `reducer(%a: .., %b: ..) {..}` region:
    the operands combined along `dimensions`, from the init values."""

    name = "stablehlo.reduce"
    body = opt_region_def()

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        pairs = []

        def pair() -> None:
            value = parser.parse_unresolved_operand()
            parser.parse_keyword("init")
            parser.parse_punctuation(":")
            pairs.append((value, parser.parse_unresolved_operand()))

        parser.parse_comma_separated_list(parser.Delimiter.PAREN, pair)
        while parser.parse_optional_punctuation(","):
            parser.parse_comma_separated_list(parser.Delimiter.PAREN, pair)
        combiner = None
        if parser.parse_optional_keyword("applies") is not None:
            start = parser.pos
            name = parser.parse_identifier(" (the combining op)")
            combiner = parser.ctx.get_optional_op(name)
            if combiner is None or not issubclass(combiner, ElementwiseBinary):
                parser.raise_error(f"'{name}' is not an elementwise binary op", start, parser.pos)
        parser.parse_keyword("across")
        parser.parse_keyword("dimensions")
        parser.parse_punctuation("=")
        dims = _parse_int_list(parser)
        attrs = parser.parse_optional_attr_dict()
        operands = [v for v, _ in pairs] + [i for _, i in pairs]
        values, outs = _parse_operand_types(parser, operands)
        if combiner is not None:
            scalars = [TensorType(v.type.element_type, []) for v in values[len(pairs):]]  # type: ignore[attr-defined]
            block = Block(arg_types=scalars + scalars)
            combined = [combiner([a, b], [a.type]) for a, b in zip(block.args[: len(pairs)], block.args[len(pairs):])]
            block.add_ops([*combined, ReturnOp([c.results[0] for c in combined])])
            region = Region(block)
        else:
            # One (accumulator, element) pair per operand; the block takes the accumulators, then the elements.
            parser.parse_keyword("reducer")
            start = parser.pos
            groups = []
            while parser.parse_optional_punctuation("("):
                groups.append(parser.parse_comma_separated_list(parser.Delimiter.NONE,
                                                                lambda: parser.parse_argument(expect_type=True)))
                parser.parse_punctuation(")")
            if len(groups) != len(pairs) or any(len(g) != 2 for g in groups):
                parser.raise_error(f"the reducer takes {len(pairs)} (accumulator, element) pairs, one per operand",
                                   start, parser.pos)
            region = parser.parse_region([g[0] for g in groups] + [g[1] for g in groups])
        op = cls(values, outs, {"dimensions": _i64_array(dims)}, [region])
        return _with_attributes(op, attrs)

    @property
    def reduce_dims(self) -> list[int]:
        return _ints(self, "dimensions") or []

    def verify_(self) -> None:
        n = len(self.results)
        self.need(len(self.operands) == 2 * n and n >= 1, "takes one init value per operand and gives one result each")
        shape = _shape(self.operands[0].type)
        dims = self.reduce_dims
        self.need(shape is not None and len(set(dims)) == len(dims) and all(0 <= d < len(shape) for d in dims),
                  f"dimensions {dims} must be distinct dimensions of {self.operands[0].type}")
        self.need(self.body is not None and bool(self.body.blocks), "needs its reduction region")


# -- linear algebra, windows, padding, control flow ---------------------------


def _ints_field(key: str) -> _Field:
    """`key = [1, 2]`, held as an array of IntAttr."""
    def parse(p: AttrParser) -> Attribute:
        return ArrayAttr([IntAttr(v) for v in p.parse_comma_separated_list(
            p.Delimiter.SQUARE, lambda: p.parse_integer(allow_boolean=False))])

    def print_(pr: Printer, a: Attribute) -> None:
        pr.print_string("[" + ", ".join(str(v.data) for v in a.data) + "]")  # type: ignore[attr-defined]

    return _Field(key, key, parse, print_, ArrayAttr([]))


def int_list(attr: Attribute) -> list[int]:
    return [v.data for v in attr.data]  # type: ignore[attr-defined]


@irdl_attr_definition
class DotAttr(_StructAttr):
    """`#stablehlo.dot<lhs_batching_dimensions = [..], rhs_batching_dimensions
    = [..], lhs_contracting_dimensions = [..], rhs_contracting_dimensions = [..]>`."""

    name = "stablehlo.dot"
    lhs_batching_dimensions: ArrayAttr = param_def()
    rhs_batching_dimensions: ArrayAttr = param_def()
    lhs_contracting_dimensions: ArrayAttr = param_def()
    rhs_contracting_dimensions: ArrayAttr = param_def()
    FIELDS: ClassVar[tuple[_Field, ...]] = tuple(_ints_field(k) for k in (
        "lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
        "rhs_contracting_dimensions"))


@irdl_attr_definition
class GatherAttr(_StructAttr):
    """`#stablehlo.gather<offset_dims = [..], collapsed_slice_dims = [..],
    operand_batching_dims = [..], start_indices_batching_dims = [..],
    start_index_map = [..], index_vector_dim = D>`."""

    name = "stablehlo.gather"
    offset_dims: ArrayAttr = param_def()
    collapsed_slice_dims: ArrayAttr = param_def()
    operand_batching_dims: ArrayAttr = param_def()
    start_indices_batching_dims: ArrayAttr = param_def()
    start_index_map: ArrayAttr = param_def()
    index_vector_dim: IntAttr = param_def()
    FIELDS: ClassVar[tuple[_Field, ...]] = (
        *(_ints_field(k) for k in ("offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                                   "start_indices_batching_dims", "start_index_map")),
        _int_field("index_vector_dim", negative=False))


@irdl_attr_definition
class ScatterAttr(_StructAttr):
    """`#stablehlo.scatter<update_window_dims = [..], inserted_window_dims =
    [..], input_batching_dims = [..], scatter_indices_batching_dims = [..],
    scatter_dims_to_operand_dims = [..], index_vector_dim = D>`."""

    name = "stablehlo.scatter"
    update_window_dims: ArrayAttr = param_def()
    inserted_window_dims: ArrayAttr = param_def()
    input_batching_dims: ArrayAttr = param_def()
    scatter_indices_batching_dims: ArrayAttr = param_def()
    scatter_dims_to_operand_dims: ArrayAttr = param_def()
    index_vector_dim: IntAttr = param_def()
    FIELDS: ClassVar[tuple[_Field, ...]] = (
        *(_ints_field(k) for k in ("update_window_dims", "inserted_window_dims", "input_batching_dims",
                                   "scatter_indices_batching_dims", "scatter_dims_to_operand_dims")),
        _int_field("index_vector_dim", negative=False))


class Precision(StrEnum):
    DEFAULT = "DEFAULT"
    HIGH = "HIGH"
    HIGHEST = "HIGHEST"


PrecisionAttr = enum_attribute(Precision, "stablehlo.precision", __name__)


def _dims_pair(parser: Parser) -> tuple[list[int], list[int]]:
    """`[..] x [..]`."""
    lhs = _parse_int_list(parser)
    parser.parse_keyword("x")
    return lhs, _parse_int_list(parser)


def _distinct_dims(dims: Sequence[int], rank: int) -> bool:
    return len(set(dims)) == len(dims) and all(0 <= d < rank for d in dims)


@irdl_op_definition
class DotGeneralOp(TensorOp, _fields("dot_dimension_numbers", "precision_config", "algorithm")):
    """`stablehlo.dot_general %a, %b, [batching_dims = [..] x [..],]
    contracting_dims = [..] x [..][, precision = [..]] : (A, B) -> R`: the
    result's dimensions are the batching ones, then the free ones of %a, then %b's."""

    name = "stablehlo.dot_general"

    @classmethod
    def parse(cls, parser: Parser) -> DotGeneralOp:
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        batch: tuple[list[int], list[int]] = ([], [])
        contract: tuple[list[int], list[int]] = ([], [])
        props: dict[str, Attribute] = {}
        while parser.parse_optional_punctuation(","):
            start = parser.pos
            key = parser.parse_identifier(" (batching_dims, contracting_dims or precision)")
            parser.parse_punctuation("=")
            if key == "batching_dims":
                batch = _dims_pair(parser)
            elif key == "contracting_dims":
                contract = _dims_pair(parser)
            elif key == "precision":
                props["precision_config"] = ArrayAttr(parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, lambda: PrecisionAttr(
                        Precision(parser.parse_keyword_in([p.value for p in Precision])))))
            elif key == "algorithm":
                props["algorithm"] = parser.parse_attribute()
            else:
                parser.raise_error(f"unknown field '{key}' of stablehlo.dot_general, expected batching_dims, "
                                   "contracting_dims, precision or algorithm", start, parser.pos)
        props["dot_dimension_numbers"] = DotAttr(*(ArrayAttr([IntAttr(v) for v in d])
                                                   for d in (*batch, *contract)))
        attrs = parser.parse_optional_attr_dict()
        values, outs = _parse_functional(parser, [lhs, rhs])
        op = cls(values, outs, props)
        return _with_attributes(op, attrs)

    def dims(self) -> tuple[list[int], list[int], list[int], list[int]]:
        """(lhs batching, rhs batching, lhs contracting, rhs contracting)."""
        d = field(self, "dot_dimension_numbers")
        assert isinstance(d, DotAttr)
        return (int_list(d.lhs_batching_dimensions), int_list(d.rhs_batching_dimensions),
                int_list(d.lhs_contracting_dimensions), int_list(d.rhs_contracting_dimensions))

    def verify_(self) -> None:
        self.need(len(self.operands) == 2 and len(self.results) == 1, "takes two operands and gives one result")
        self.need(isinstance(field(self, "dot_dimension_numbers"), DotAttr), "needs its dot_dimension_numbers")
        a, b = _shape(self.operands[0].type), _shape(self.operands[1].type)
        self.need(a is not None and b is not None, "takes tensors")
        assert a is not None and b is not None
        lb, rb, lc, rc = self.dims()
        self.need(_distinct_dims(lb + lc, len(a)) and _distinct_dims(rb + rc, len(b))
                  and len(lb) == len(rb) and len(lc) == len(rc),
                  f"batching dimensions {lb} x {rb} and contracting dimensions {lc} x {rc} must be distinct "
                  f"dimensions of {self.operands[0].type} and {self.operands[1].type}, as many on each side")
        self.need(all(a[i] == b[j] for i, j in zip(lb + lc, rb + rc)),
                  "paired batching and contracting dimensions must have one size")
        want = [a[i] for i in lb] + [n for i, n in enumerate(a) if i not in lb + lc] + [
            n for j, n in enumerate(b) if j not in rb + rc]
        self.need(_shape(self.results[0].type) == tuple(want), f"the result must be {want}, got {self.results[0].type}")


@irdl_op_definition
class DynamicUpdateSliceOp(TensorOp):
    """`stablehlo.dynamic_update_slice %x, %update, %i0, .. : (..) -> T`: %x
    with the block at the (clamped) start indices replaced by %update."""

    name = "stablehlo.dynamic_update_slice"

    @classmethod
    def parse(cls, parser: Parser) -> DynamicUpdateSliceOp:
        operands = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        values, outs = _parse_functional(parser, operands)
        return _with_attributes(cls(values, outs), attrs)

    def verify_(self) -> None:
        shape = _shape(self.operands[0].type) if self.operands else None
        update = _shape(self.operands[1].type) if len(self.operands) > 1 else None
        self.need(shape is not None and update is not None and len(update) == len(shape)
                  and len(self.operands) == 2 + len(shape) and all(u <= n for u, n in zip(update, shape)),
                  "takes an operand, an update of its rank no larger, and one start index per dimension")
        self.need(len(self.results) == 1 and self.results[0].type == self.operands[0].type,
                  f"the result must be of the operand's type {self.operands[0].type}")


@irdl_op_definition
class PadOp(TensorOp, _fields("edge_padding_low", "edge_padding_high", "interior_padding")):
    """`stablehlo.pad %x, %value, low = [..], high = [..], interior = [..]`:
    %x with `interior` values between its elements and `low`/`high` at the
    edges (negative: cut)."""

    name = "stablehlo.pad"

    @classmethod
    def parse(cls, parser: Parser) -> PadOp:
        x = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        value = parser.parse_unresolved_operand()
        props = {}
        for key, name in (("low", "edge_padding_low"), ("high", "edge_padding_high"),
                          ("interior", "interior_padding")):
            parser.parse_punctuation(",")
            parser.parse_keyword(key)
            parser.parse_punctuation("=")
            props[name] = _i64_array(_parse_int_list(parser))
        attrs = parser.parse_optional_attr_dict()
        values, outs = _parse_functional(parser, [x, value])
        return _with_attributes(cls(values, outs, props), attrs)

    def padding(self) -> list[tuple[int, int, int]]:
        """(low, high, interior) per dimension."""
        return list(zip(*(_ints(self, k) or [] for k in ("edge_padding_low", "edge_padding_high",
                                                           "interior_padding"))))

    def verify_(self) -> None:
        shape = _shape(self.operands[0].type) if self.operands else None
        self.need(len(self.operands) == 2 and shape is not None and _shape(self.operands[1].type) == (),
                  "takes an operand and a rank-0 padding value")
        assert shape is not None
        pads = self.padding()
        self.need(len(pads) == len(shape) and all(i >= 0 for _, _, i in pads),
                  f"needs low, high and interior (not negative) padding per dimension of {self.operands[0].type}")
        want = [lo + hi + n + max(n - 1, 0) * i for (lo, hi, i), n in zip(pads, shape)]
        self.need(all(w >= 0 for w in want) and _shape(self.results[0].type) == tuple(want),
                  f"the result must be {want}, got {self.results[0].type}")


def _region_returns(op: TensorOp, region: Region, types: Sequence[Attribute], what: str) -> None:
    block = region.blocks.first
    ret = block.last_op if block is not None else None
    op.need(isinstance(ret, ReturnOp) and [v.type for v in ret.operands] == list(types),
            f"its {what} must return {', '.join(map(str, types)) or 'nothing'}")


_WINDOW = ("window_dimensions", "window_strides", "base_dilations", "window_dilations", "padding")


@irdl_op_definition
class ReduceWindowOp(TensorOp, _fields(*_WINDOW)):
    """`"stablehlo.reduce_window"(%x.., %init..) <{window_dimensions, ..}>
    ({reducer})`: each window of the (padded, dilated) operands folded from
    the init values, as reduce does."""

    name = "stablehlo.reduce_window"
    body = opt_region_def()

    def window(self) -> list[tuple[int, int, int, int, int, int]]:
        """(size, stride, base dilation, window dilation, pad low, pad high) per dimension."""
        rank = len(_shape(self.operands[0].type) or ())
        sizes = _ints(self, "window_dimensions") or []
        ones = [1] * rank
        strides, base, dil = (_ints(self, k) or ones for k in ("window_strides", "base_dilations",
                                                               "window_dilations"))
        pad = _ints(self, "padding") or [0] * (2 * rank)
        return [(sizes[k], strides[k], base[k], dil[k], pad[2 * k], pad[2 * k + 1])
                for k in range(min(rank, len(sizes), len(strides), len(base), len(dil), len(pad) // 2))]

    def verify_(self) -> None:
        n = len(self.results)
        self.need(n >= 1 and len(self.operands) == 2 * n, "takes one init value per operand and gives one result each")
        shape = _shape(self.operands[0].type)
        self.need(shape is not None and all(_shape(v.type) == shape for v in self.operands[:n])
                  and all(_shape(v.type) == () for v in self.operands[n:]),
                  "operands must be tensors of one shape, the init values rank 0")
        assert shape is not None
        win = self.window()
        self.need(len(win) == len(shape) and all(s > 0 and st > 0 and b > 0 and d > 0 for s, st, b, d, _, _ in win),
                  f"needs a positive window size, stride and dilations per dimension of {self.operands[0].type}")
        want = []
        for (size, stride, base, dil, lo, hi), d in zip(win, shape):
            padded = lo + hi + (d - 1) * base + 1 if d else lo + hi
            span = (size - 1) * dil + 1
            want.append(0 if padded < span else (padded - span) // stride + 1)
        self.need(all(_shape(r.type) == tuple(want) for r in self.results), f"results must be {want}")
        self.need(self.body is not None and bool(self.body.blocks), "needs its reduction region")


@irdl_op_definition
class SortOp(TensorOp, _fields("dimension", "is_stable")):
    """`"stablehlo.sort"(%x, ..) <{dimension, is_stable}> ({comparator})`:
    the operands ordered together along the dimension by the comparator of
    (lhs, rhs) element pairs."""

    name = "stablehlo.sort"
    body = opt_region_def()

    def verify_(self) -> None:
        shape = _shape(self.operands[0].type) if self.operands else None
        self.need(shape is not None and all(_shape(v.type) == shape for v in self.operands)
                  and [r.type for r in self.results] == [v.type for v in self.operands],
                  "takes tensors of one shape and gives results of their types")
        assert shape is not None
        d = _int(self, "dimension")
        self.need(d is not None and -len(shape) <= d < max(len(shape), 1),
                  f"dimension {d} must be a dimension of {self.operands[0].type}")
        self.need(self.body is not None and bool(self.body.blocks), "needs its comparator region")


@irdl_op_definition
class WhileOp(TensorOp):
    """`stablehlo.while(%a = %x, ..) : T, .. cond {..} do {..}`: the body
    runs on the values while the cond region returns true."""

    name = "stablehlo.while"
    cond = region_def()
    body = region_def()

    @classmethod
    def parse(cls, parser: Parser) -> WhileOp:
        names, operands = [], []

        def one() -> None:
            names.append(parser.parse_argument(expect_type=False))
            parser.parse_punctuation("=")
            operands.append(parser.parse_unresolved_operand())

        parser.parse_comma_separated_list(parser.Delimiter.PAREN, one)
        attrs = parser.parse_optional_attr_dict()
        types: list[Attribute] = []
        if operands:
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(types) != len(operands):
            parser.raise_error(f"{len(operands)} operands but {len(types)} types")
        args = [n.resolve(t) for n, t in zip(names, types)]  # type: ignore[union-attr]
        parser.parse_keyword("cond")
        cond = parser.parse_region(args)
        parser.parse_keyword("do")
        body = parser.parse_region(args)
        values = [parser.resolve_operand(o, t) for o, t in zip(operands, types)]
        return _with_attributes(cls(values, types, regions=[cond, body]), attrs)

    def verify_(self) -> None:
        types = [v.type for v in self.operands]
        self.need([r.type for r in self.results] == types, "its results must be of its operands' types")
        self.need(bool(self.cond.blocks) and bool(self.body.blocks), "needs a cond and a body region")
        for region, what in ((self.cond, "cond"), (self.body, "body")):
            self.need([a.type for a in region.block.args] == types, f"its {what} must take its operands' types")
        _region_returns(self, self.cond, [TensorType(IntegerType(1), [])], "cond")
        _region_returns(self, self.body, types, "body")


@irdl_op_definition
class CaseOp(TensorOp):
    """`"stablehlo.case"(%index) ({..}, {..}, ..)`: the branch of the index
    (the last where it is out of range) runs; its returns are the results."""

    name = "stablehlo.case"
    branches = var_region_def()

    def __init__(self, operands: Sequence[SSAValue], result_types: Sequence[Attribute],
                 properties: dict[str, Attribute] | None = None, regions: Sequence[Region] = ()):
        super().__init__(operands, result_types, properties, [list(regions)])  # type: ignore[list-item]

    def verify_(self) -> None:
        self.need(len(self.operands) == 1 and self.operands[0].type == TensorType(IntegerType(32), []),
                  "takes one index, a tensor<i32>")
        self.need(len(self.branches) >= 1, "needs a branch")
        for k, branch in enumerate(self.branches):
            self.need(bool(branch.blocks) and not branch.block.args, f"branch {k} takes no arguments")
            _region_returns(self, branch, [r.type for r in self.results], f"branch {k}")


@irdl_op_definition
class IfOp(TensorOp):
    """`"stablehlo.if"(%pred) ({true branch}, {false branch})`."""

    name = "stablehlo.if"
    true_branch = region_def()
    false_branch = region_def()

    @property
    def branches(self) -> list[Region]:
        return [self.true_branch, self.false_branch]

    def verify_(self) -> None:
        self.need(len(self.operands) == 1 and self.operands[0].type == TensorType(IntegerType(1), []),
                  "takes one predicate, a tensor<i1>")
        for what, branch in zip(("true branch", "false branch"), self.branches):
            _region_returns(self, branch, [r.type for r in self.results], what)


def _gather_dims(attr: Attribute) -> GatherAttr | None:
    return attr if isinstance(attr, GatherAttr) else None


@irdl_op_definition
class GatherOp(TensorOp, _fields("dimension_numbers", "slice_sizes", "indices_are_sorted")):
    """`"stablehlo.gather"(%x, %indices) <{dimension_numbers, slice_sizes}>`:
    slices of %x at the start indices %indices holds."""

    name = "stablehlo.gather"

    def verify_(self) -> None:
        self.need(len(self.operands) == 2 and len(self.results) == 1, "takes an operand and indices")
        dims = field(self, "dimension_numbers")
        self.need(isinstance(dims, GatherAttr), "needs its dimension_numbers, a #stablehlo.gather")
        assert isinstance(dims, GatherAttr)
        shape, index = _shape(self.operands[0].type), _shape(self.operands[1].type)
        self.need(shape is not None and index is not None, "takes tensors")
        assert shape is not None and index is not None
        sizes = _ints(self, "slice_sizes") or []
        collapsed = int_list(dims.collapsed_slice_dims) + int_list(dims.operand_batching_dims)
        starts = int_list(dims.start_index_map)
        ivd = dims.index_vector_dim.data
        vector = index[ivd] if ivd < len(index) else 1
        self.need(len(sizes) == len(shape) and all(0 <= k <= n for k, n in zip(sizes, shape))
                  and _distinct_dims(collapsed, len(shape)) and all(sizes[d] <= 1 for d in collapsed)
                  and _distinct_dims(starts, len(shape)) and len(starts) == vector and ivd <= len(index),
                  f"slice_sizes {sizes}, collapsed_slice_dims and start_index_map must fit {self.operands[0].type} "
                  f"and indices {self.operands[1].type}")
        batch = [n for k, n in enumerate(index) if k != ivd]
        offsets = [n for k, n in enumerate(sizes) if k not in collapsed]
        offset_dims = int_list(dims.offset_dims)
        rank = len(batch) + len(offsets)
        self.need(len(offset_dims) == len(offsets) and _distinct_dims(offset_dims, rank)
                  and offset_dims == sorted(offset_dims),
                  f"offset_dims {offset_dims} must be {len(offsets)} increasing dimensions of the result")
        want, b, o = [], iter(batch), iter(offsets)
        for k in range(rank):
            want.append(next(o) if k in offset_dims else next(b))
        self.need(_shape(self.results[0].type) == tuple(want), f"the result must be {want}, got {self.results[0].type}")


@irdl_op_definition
class ScatterOp(TensorOp, _fields("scatter_dimension_numbers", "indices_are_sorted", "unique_indices")):
    """`"stablehlo.scatter"(%x.., %indices, %updates..) <{scatter_dimension_numbers}>
    ({combiner})`: %x with each update combined into it where the indices say."""

    name = "stablehlo.scatter"
    body = opt_region_def()

    def verify_(self) -> None:
        n = len(self.results)
        self.need(n >= 1 and len(self.operands) == 2 * n + 1
                  and [r.type for r in self.results] == [v.type for v in self.operands[:n]],
                  "takes operands, indices and one update per operand, and gives results of the operands' types")
        dims = field(self, "scatter_dimension_numbers")
        self.need(isinstance(dims, ScatterAttr), "needs its scatter_dimension_numbers, a #stablehlo.scatter")
        assert isinstance(dims, ScatterAttr)
        shape, index, update = (_shape(v.type) for v in (self.operands[0], self.operands[n], self.operands[n + 1]))
        self.need(shape is not None and index is not None and update is not None, "takes tensors")
        assert shape is not None and index is not None and update is not None
        window = int_list(dims.update_window_dims)
        inserted = int_list(dims.inserted_window_dims) + int_list(dims.input_batching_dims)
        to_operand = int_list(dims.scatter_dims_to_operand_dims)
        ivd = dims.index_vector_dim.data
        vector = index[ivd] if ivd < len(index) else 1
        self.need(_distinct_dims(window, len(update)) and _distinct_dims(inserted, len(shape))
                  and len(window) + len(inserted) == len(shape) and _distinct_dims(to_operand, len(shape))
                  and len(to_operand) == vector and ivd <= len(index)
                  and len(update) == len(window) + len(index) - (ivd < len(index)),
                  f"update_window_dims, inserted_window_dims and scatter_dims_to_operand_dims must fit "
                  f"{self.operands[0].type}, indices {self.operands[n].type} and updates {self.operands[n + 1].type}")
        self.need(self.body is not None and bool(self.body.blocks), "needs its combiner region")


_CUSTOM_CALL_FIELDS = ("call_target_name", "has_side_effect", "backend_config", "api_version",
                       "called_computations", "operand_layouts", "result_layouts", "output_operand_aliases")


@irdl_op_definition
class CustomCallOp(TensorOp, _fields(*_CUSTOM_CALL_FIELDS)):
    """`stablehlo.custom_call @target(%x, ..) {..} : (T, ..) -> R`: a call
    into the compiler or a library, by name (JAX's shardings are
    `@Sharding`, `@SPMDFullToShardShape` and `@SPMDShardToFullShape`, with a
    `mhlo.sharding` attribute)."""

    name = "stablehlo.custom_call"

    @classmethod
    def parse(cls, parser: Parser) -> CustomCallOp:
        target = parser.parse_symbol_name()
        operands = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        values, outs = _parse_functional(parser, operands)
        op = cls(values, outs, {"call_target_name": target})
        return _with_attributes(op, attrs)

    @property
    def target(self) -> str:
        attr = field(self, "call_target_name")
        return attr.data if isinstance(attr, StringAttr) else ""

    def verify_(self) -> None:
        self.need(isinstance(field(self, "call_target_name"), StringAttr), "needs a call_target_name")


@irdl_op_definition
class ReturnOp(ValuesTerminator):
    """`stablehlo.return %v, .. : T, ..`, the terminator of a region."""

    name = "stablehlo.return"

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

TENSOR_OPS = (*BINARY_OPS, *UNARY_OPS, BitcastConvertOp, ReshapeOp, BroadcastInDimOp, TransposeOp, SliceOp,
              DynamicSliceOp, ConcatenateOp, IotaOp, PartitionIdOp, ReplicaIdOp, CompareOp, SelectOp, ClampOp,
              ReduceOp, CustomCallOp, DotGeneralOp, DynamicUpdateSliceOp, PadOp, ReduceWindowOp, SortOp, WhileOp,
              CaseOp, IfOp, GatherOp, ScatterOp)

StableHLO = Dialect(
    "stablehlo",
    [*COLLECTIVES, ConstantOp, *TENSOR_OPS, ReturnOp],
    [ChannelHandleAttr, MeshAxisAttr, MeshAttr, AxisRefAttr, ReplicaGroupMeshAxesAttr, ComparisonDirectionAttr,
     ComparisonTypeAttr, DotAttr, GatherAttr, ScatterAttr, PrecisionAttr],
)
