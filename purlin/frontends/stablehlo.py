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

from purlin.declarations import define_op, enum_attribute
from purlin.frontends.op_definitions import (
    DenseValueOp,
    field,
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


def _binary(cls_name: str, op_name: str) -> type[ElementwiseBinary]:
    return define_op(ElementwiseBinary, __name__, cls_name, op_name)


AddOp = _binary("AddOp", "stablehlo.add")
MaxOp = _binary("MaxOp", "stablehlo.maximum")
MinOp = _binary("MinOp", "stablehlo.minimum")
MulOp = _binary("MulOp", "stablehlo.multiply")
AndOp = _binary("AndOp", "stablehlo.and")
OrOp = _binary("OrOp", "stablehlo.or")
XorOp = _binary("XorOp", "stablehlo.xor")
SubtractOp = _binary("SubtractOp", "stablehlo.subtract")
DivideOp = _binary("DivideOp", "stablehlo.divide")
RemainderOp = _binary("RemainderOp", "stablehlo.remainder")
PowerOp = _binary("PowerOp", "stablehlo.power")
Atan2Op = _binary("Atan2Op", "stablehlo.atan2")
ShiftLeftOp = _binary("ShiftLeftOp", "stablehlo.shift_left")
ShiftRightArithmeticOp = _binary("ShiftRightArithmeticOp", "stablehlo.shift_right_arithmetic")
ShiftRightLogicalOp = _binary("ShiftRightLogicalOp", "stablehlo.shift_right_logical")
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


def _unary(cls_name: str, op_name: str, **body) -> type[_Unary]:
    return define_op(_Unary, __name__, cls_name, op_name, **body)


NegOp = _unary("NegOp", "stablehlo.negate")
AbsOp = _unary("AbsOp", "stablehlo.abs")
ExpOp = _unary("ExpOp", "stablehlo.exponential")
Expm1Op = _unary("Expm1Op", "stablehlo.exponential_minus_one")
LogOp = _unary("LogOp", "stablehlo.log")
Log1pOp = _unary("Log1pOp", "stablehlo.log_plus_one")
SqrtOp = _unary("SqrtOp", "stablehlo.sqrt")
RsqrtOp = _unary("RsqrtOp", "stablehlo.rsqrt")
CbrtOp = _unary("CbrtOp", "stablehlo.cbrt")
SineOp = _unary("SineOp", "stablehlo.sine")
CosineOp = _unary("CosineOp", "stablehlo.cosine")
TanOp = _unary("TanOp", "stablehlo.tan")
TanhOp = _unary("TanhOp", "stablehlo.tanh")
LogisticOp = _unary("LogisticOp", "stablehlo.logistic")
FloorOp = _unary("FloorOp", "stablehlo.floor")
CeilOp = _unary("CeilOp", "stablehlo.ceil")
SignOp = _unary("SignOp", "stablehlo.sign")
NotOp = _unary("NotOp", "stablehlo.not")
RoundEvenOp = _unary("RoundEvenOp", "stablehlo.round_nearest_even")
RoundAwayOp = _unary("RoundAwayOp", "stablehlo.round_nearest_afz")
IsFiniteOp = _unary("IsFiniteOp", "stablehlo.is_finite")
PopcntOp = _unary("PopcntOp", "stablehlo.popcnt")
ClzOp = _unary("ClzOp", "stablehlo.count_leading_zeros")
ConvertOp = _unary("ConvertOp", "stablehlo.convert", doc="Each element converted to the result's element type.")
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


@irdl_op_definition
class BroadcastInDimOp(TensorOp, _fields("broadcast_dimensions")):
    """`stablehlo.broadcast_in_dim %x, dims = [..] : (T) -> R`: operand
    dimension i is result dimension dims[i] (of the same size, or of size 1
    repeated); the others repeat the operand."""

    name = "stablehlo.broadcast_in_dim"

    @classmethod
    def parse(cls, parser: Parser) -> BroadcastInDimOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        parser.parse_keyword("dims")
        parser.parse_punctuation("=")
        dims = _parse_int_list(parser)
        attrs = parser.parse_optional_attr_dict()
        values, outs = _parse_operand_types(parser, [operand])
        op = cls(values, outs, {"broadcast_dimensions": _i64_array(dims)})
        return _with_attributes(op, attrs)

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
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        parser.parse_keyword("dims")
        parser.parse_punctuation("=")
        dims = _parse_int_list(parser)
        attrs = parser.parse_optional_attr_dict()
        values, outs = _parse_operand_types(parser, [operand])
        op = cls(values, outs, {"permutation": _i64_array(dims)})
        return _with_attributes(op, attrs)

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


PartitionIdOp = define_op(_ProcessId, __name__, "PartitionIdOp", "stablehlo.partition_id",
                          "The partition of the process running it.")
ReplicaIdOp = define_op(_ProcessId, __name__, "ReplicaIdOp", "stablehlo.replica_id",
                        "The replica of the process running it.")


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
            parser.parse_keyword("reducer")
            args = parser.parse_comma_separated_list(parser.Delimiter.PAREN,
                                                     lambda: parser.parse_argument(expect_type=True))
            region = parser.parse_region(args)
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

TENSOR_OPS = (*BINARY_OPS, *UNARY_OPS, BitcastConvertOp, ReshapeOp, BroadcastInDimOp, TransposeOp, SliceOp,
              DynamicSliceOp, ConcatenateOp, IotaOp, PartitionIdOp, ReplicaIdOp, CompareOp, SelectOp, ClampOp,
              ReduceOp, CustomCallOp)

StableHLO = Dialect(
    "stablehlo",
    [*COLLECTIVES, ConstantOp, *TENSOR_OPS, ReturnOp],
    [ChannelHandleAttr, MeshAxisAttr, MeshAttr, AxisRefAttr, ReplicaGroupMeshAxesAttr, ComparisonDirectionAttr,
     ComparisonTypeAttr],
)
