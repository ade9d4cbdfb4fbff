"""The `coll` dialect: what a collective means.

Named collectives (all_reduce, all_gather, ...) in destination-passing style on
per-rank memref buffers, and the generic `coll.collective` that names its input
and output through layout attributes (`purlin.coll.attributes`). `coll-expand`
turns the former into the latter; the layout semantics live in
`purlin.coll.layouts`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr, IntegerType, MemRefType, UnitAttr
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, opt_operand_def, opt_prop_def, prop_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from purlin.coll.attributes import (
    ELEMENT_TYPES_TEXT,
    REDUCE_KINDS_TEXT,
    V_SUFFIX,
    ConsumeAttr,
    LayoutAttr,
    ReduceKind,
    ReduceKindAttr,
    check_reduce_dtype,
    dtype_name,
    parse_int_list,
    parse_reduce_kind,
)
from purlin.coll.layouts import Layout, LayoutError, LayoutKind, check_collective, embed, groups_problem, world_problem

# -- shared op helpers -------------------------------------------------------


def _memref_elems(t: Attribute) -> int | None:
    """Static element count of a 1-D memref, None when dynamic."""
    assert isinstance(t, MemRefType)
    (dim,) = t.get_shape()
    return None if dim < 0 else dim


def _verify_buffers(op: Operation, inp: SSAValue, out: SSAValue) -> str:
    """Checks shared by all collectives; returns the dtype name."""
    for role, v in (("input", inp), ("output", out)):
        t = v.type
        if not isinstance(t, MemRefType) or len(t.get_shape()) != 1:
            raise VerifyException(
                f"'{op.name}': {role} must be a 1-D memref, got {t}"
            )
    assert isinstance(inp.type, MemRefType) and isinstance(out.type, MemRefType)
    if inp.type.element_type != out.type.element_type:
        raise VerifyException(
            f"'{op.name}': input and output element types differ "
            f"({inp.type.element_type} vs {out.type.element_type})"
        )
    dtype = dtype_name(inp.type.element_type)
    if dtype is None:
        raise VerifyException(
            f"'{op.name}': element type {inp.type.element_type} is not supported, "
            f"expected one of {ELEMENT_TYPES_TEXT}"
        )
    return dtype


def _verify_extent(op: Operation, role: str, v: SSAValue, layout: Layout) -> None:
    """A static buffer must hold what the layout covers on every rank; it may
    be larger, as with dynamic counts, where the counts of a call decide."""
    size = _memref_elems(v.type)
    if size is None or layout.is_dynamic:
        return
    need = layout.max_extent()
    if size < need:
        kind = layout.kind.value + (V_SUFFIX if layout.variable else "")
        raise VerifyException(
            f"'{op.name}': {role} buffer has {size} elements but the {kind} layout "
            f"for world {layout.world} needs at least {need} ({_extent_reason(layout)})"
        )


def _extent_reason(layout: Layout) -> str:
    """How a layout's extent is computed, for diagnostics."""
    if layout.kind == LayoutKind.NAMED:
        return "where the last slice on a rank ends"
    if not layout.variable:
        if layout.kind == LayoutKind.PACKED:
            return "one slice per rank"
        return f"{layout.world} slices of {layout.counts}"
    return {
        LayoutKind.PACKED: "the largest count",
        LayoutKind.SCATTERED: "the sum of the counts",
        LayoutKind.ADDRESSED: "the most any rank sends: the largest row sum of the counts",
        LayoutKind.TRANSPOSED: "the most any rank receives: the largest column sum of the counts",
    }[layout.kind]


# -- generic collective ------------------------------------------------------


@irdl_op_definition
class CollectiveOp(IRDLOperation):
    """`coll.collective %in, %out in LAYOUT out LAYOUT consume CONSUME
    [world W groups [[..], ..]] [deterministic]`.

    With groups, the layouts are over the ranks of one group (their world is
    the group size) and every group runs the collective over its group-local
    ranks; `coll-expand` gives the layouts over the W ranks."""

    name = "coll.collective"

    input = operand_def(MemRefType)
    output = operand_def(MemRefType)
    counts = opt_operand_def(MemRefType)

    input_layout = prop_def(LayoutAttr)
    output_layout = prop_def(LayoutAttr)
    consume = prop_def(ConsumeAttr)
    deterministic = opt_prop_def(UnitAttr)
    group_world = opt_prop_def(IntAttr, prop_name="world")
    groups = opt_prop_def(ArrayAttr)

    def __init__(
        self,
        inp: SSAValue,
        out: SSAValue,
        input_layout: LayoutAttr,
        output_layout: LayoutAttr,
        consume: ConsumeAttr,
        deterministic: bool = False,
        counts: SSAValue | None = None,
        world: int | None = None,
        groups: Sequence[Sequence[int]] | None = None,
    ):
        props: dict[str, Attribute] = {
            "input_layout": input_layout,
            "output_layout": output_layout,
            "consume": consume,
        }
        if deterministic:
            props["deterministic"] = UnitAttr()
        if groups is not None:
            assert world is not None
            props["world"] = IntAttr(world)
            props["groups"] = groups_attr(groups)
        super().__init__(operands=[inp, out, counts], properties=props)

    @classmethod
    def of_layouts(cls, inp: SSAValue, out: SSAValue, layouts: tuple[Layout, Layout], consume: ConsumeAttr,
                   **options: Any) -> CollectiveOp:
        """The collective that moves `inp` named by `layouts[0]` to `out` named by `layouts[1]`."""
        return cls(inp, out, LayoutAttr.from_layout(layouts[0]), LayoutAttr.from_layout(layouts[1]), consume,
                   **options)

    @property
    def world(self) -> int:
        if self.group_world is not None:
            return self.group_world.data
        return self.input_layout.world.data

    def local_layouts(self) -> tuple[Layout, Layout]:
        """The layouts as written (with groups: over the ranks of one group)."""
        return self.input_layout.to_layout(), self.output_layout.to_layout()

    def layouts(self) -> tuple[Layout, Layout]:
        """The layouts over the world."""
        inp, out = self.local_layouts()
        groups = groups_of(self.groups)
        if groups is None:
            return inp, out
        return (embed(lambda _: inp, groups, self.world), embed(lambda _: out, groups, self.world))

    def _verify_grouping(self) -> None:
        if (self.groups is None) != (self.group_world is None):
            raise VerifyException(f"'{self.name}': 'world' and 'groups' come together")
        if self.groups is None:
            return
        if why := world_problem(self.world):
            raise VerifyException(f"'{self.name}': {why}")
        _verify_groups(self, self.groups, self.world, _SIZED_BY_GROUP)
        if self.counts is not None:
            raise VerifyException(
                f"'{self.name}': groups need static layouts: dynamic counts would leave the "
                "groups' slices unknown"
            )
        groups = groups_of(self.groups)
        assert groups is not None
        n = self.input_layout.world.data
        if len(groups[0]) != n:
            raise VerifyException(
                f"'{self.name}': the layouts are for {n} ranks, but the groups have "
                f"{len(groups[0])}: with groups, layouts name group-local ranks"
            )

    def verify_(self) -> None:
        self._verify_grouping()
        dtype = _verify_buffers(self, self.input, self.output)
        kind = self.consume.kind
        if kind is None and self.deterministic is not None:
            raise VerifyException(
                f"'{self.name}': 'deterministic' only applies to reductions, but consume is copy"
            )
        if kind is not None and (why := check_reduce_dtype(kind, dtype)):
            raise VerifyException(f"'{self.name}': {why}")
        inp, out = self.local_layouts()
        try:
            check_collective(inp, out, reduce=kind is not None)
        except LayoutError as e:
            raise VerifyException(f"'{self.name}': {e}") from e
        dynamic = inp.is_dynamic or out.is_dynamic
        if dynamic and self.counts is None:
            raise VerifyException(
                f"'{self.name}': a layout with dynamic counts '?' needs a counts operand"
            )
        if not dynamic and self.counts is not None:
            raise VerifyException(
                f"'{self.name}': a counts operand needs a layout with dynamic counts '?'"
            )
        if inp.is_dynamic and out.is_dynamic and inp.matrix_counts != out.matrix_counts:
            raise VerifyException(
                f"'{self.name}': dynamic {self.input_layout.kind.data} and "
                f"{self.output_layout.kind.data} layouts cannot share one counts operand "
                "(one takes a list, the other a matrix)"
            )
        if self.counts is not None:
            dyn = inp if inp.is_dynamic else out
            _verify_counts_operand(self, self.counts, dyn.world, dyn.matrix_counts)
        _verify_extent(self, "input", self.input, inp)
        _verify_extent(self, "output", self.output, out)

    @classmethod
    def parse(cls, parser: Parser) -> CollectiveOp:
        inp = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        out = parser.parse_unresolved_operand()
        props: list[Attribute] = []
        for keyword, what, typ in (
            ("in", "input layout", LayoutAttr),
            ("out", "output layout", LayoutAttr),
            ("consume", "consume", ConsumeAttr),
        ):
            parser.parse_keyword(keyword)
            start = parser.pos
            props.append(parser.parse_attribute())
            if not isinstance(props[-1], typ):
                parser.raise_error(
                    f"expected a #{typ.name} attribute as {what}, got {props[-1]}",
                    start,
                    parser.pos,
                )
        in_layout, out_layout, consume = props
        counts = None
        if parser.parse_optional_keyword("counts"):
            counts = parser.parse_unresolved_operand()
        world = groups = None
        if parser.parse_optional_keyword("world"):
            world = parser.parse_integer(allow_boolean=False)
            parser.parse_keyword("groups", " (a world is given with the groups that split it)")
            groups = _parse_groups(parser)
        deterministic = parser.parse_optional_keyword("deterministic") is not None
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = [parser.parse_type()]
        for _ in range(2 if counts is not None else 1):
            parser.parse_punctuation(",")
            types.append(parser.parse_type())
        names = [inp, out] + ([counts] if counts is not None else [])
        ops = [parser.resolve_operand(n, t) for n, t in zip(names, types)]
        op = cls(
            ops[0], ops[1], in_layout, out_layout, consume, deterministic,  # type: ignore[arg-type]
            ops[2] if counts is not None else None, world, groups,
        )
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(", ")
        printer.print_operand(self.output)
        printer.print_string(" in ")
        printer.print_attribute(self.input_layout)
        printer.print_string(" out ")
        printer.print_attribute(self.output_layout)
        printer.print_string(" consume ")
        printer.print_attribute(self.consume)
        if self.counts is not None:
            printer.print_string(" counts ")
            printer.print_operand(self.counts)
        if (groups := groups_of(self.groups)) is not None:
            printer.print_string(f" world {self.world}")
            _print_groups(printer, groups)
        if self.deterministic is not None:
            printer.print_string(" deterministic")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list(
            [o.type for o in self.operands], printer.print_attribute
        )


def _verify_counts_operand(op: Operation, counts: SSAValue, world: int, matrix: bool) -> None:
    t = counts.type
    want = [world, world] if matrix else [world]
    if (
        not isinstance(t, MemRefType)
        or list(t.get_shape()) != want
        or t.element_type != IntegerType(64)
    ):
        shape = "x".join(map(str, want))
        what = "a count per sender and receiver" if matrix else "a count per rank"
        raise VerifyException(
            f"'{op.name}': dynamic counts must be a memref<{shape}xi64> ({what}), got {t}"
        )


# -- sub-groups ---------------------------------------------------------------


def groups_attr(groups: Sequence[Sequence[int]]) -> ArrayAttr:
    return ArrayAttr(ArrayAttr(IntAttr(int(r)) for r in g) for g in groups)


def groups_of(attr: ArrayAttr | None) -> tuple[tuple[int, ...], ...] | None:
    if attr is None:
        return None
    return tuple(tuple(r.data for r in g.data) for g in attr.data)  # type: ignore[union-attr]


def _parse_groups(parser: Parser) -> list[list[int]]:
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parse_int_list(parser)
    )


def _print_groups(printer: Printer, groups: tuple[tuple[int, ...], ...]) -> None:
    body = ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups)
    printer.print_string(f" groups [{body}]")


_SIZED_BY_GROUP = "its buffers are sized by the group"


def _verify_groups(op: Operation, attr: ArrayAttr | None, world: int, equal: str | None) -> None:
    """Groups are well formed, and of one size where the collective needs it
    (`equal`: why, else None)."""
    if attr is None:
        return
    if not all(isinstance(g, ArrayAttr) and all(isinstance(r, IntAttr) for r in g.data)
               for g in attr.data):
        raise VerifyException(f"'{op.name}': groups must be lists of ranks")
    groups = groups_of(attr)
    assert groups is not None
    if why := groups_problem(groups, world):
        raise VerifyException(f"'{op.name}': {why}")
    sizes = sorted({len(g) for g in groups})
    if equal and len(sizes) > 1:
        raise VerifyException(
            f"'{op.name}': groups have sizes {', '.join(map(str, sizes))}, but {equal}: "
            "every group needs the same number of ranks"
        )


# -- named collectives -------------------------------------------------------


class NamedCollective(IRDLOperation):
    """Shared structure of the named collectives.

    Syntax: `coll.NAME [OP] %in, %out world W [counts [..] | counts %c]
    [deterministic] attr-dict : type(%in), type(%out)[, type(%c)]`.
    """

    REDUCES: ClassVar[bool] = False
    VARIABLE: ClassVar[bool] = False
    MATRIX: ClassVar[bool] = False

    input = operand_def(MemRefType)
    output = operand_def(MemRefType)
    counts = opt_operand_def(MemRefType)

    world = prop_def(IntAttr)
    groups = opt_prop_def(ArrayAttr)
    static_counts = opt_prop_def(ArrayAttr[IntAttr])
    op = opt_prop_def(ReduceKindAttr)
    deterministic = opt_prop_def(UnitAttr)

    # Whether every group must have the same size (the buffers' sizes follow it).
    EQUAL_GROUPS: ClassVar[bool] = True

    def __init__(
        self,
        inp: SSAValue,
        out: SSAValue,
        world: int,
        op: ReduceKind | None = None,
        counts: Sequence[int] | SSAValue | None = None,
        deterministic: bool = False,
        groups: Sequence[Sequence[int]] | None = None,
    ):
        props: dict[str, Attribute] = {"world": IntAttr(world)}
        if groups is not None:
            props["groups"] = groups_attr(groups)
        if op is not None:
            props["op"] = ReduceKindAttr(op)
        if deterministic:
            props["deterministic"] = UnitAttr()
        counts_operand = None
        if isinstance(counts, SSAValue):
            counts_operand = counts
        elif counts is not None:
            props["static_counts"] = ArrayAttr(IntAttr(int(c)) for c in counts)
        super().__init__(operands=[inp, out, counts_operand], properties=props)

    @property
    def group_list(self) -> tuple[tuple[int, ...], ...] | None:
        return groups_of(self.groups)

    @property
    def group_size(self) -> int:
        """The ranks one collective spans: the world, or the (first) group."""
        groups = self.group_list
        return self.world.data if groups is None else len(groups[0])

    def layouts(self) -> tuple[Layout, Layout]:
        """The layouts over the world: with groups, each group's collective
        over its group-local ranks (`layouts.embed`)."""
        groups = self.group_list
        if groups is None:
            return self.local_layouts(self.world.data)
        w = self.world.data
        return (
            embed(lambda n: self.local_layouts(n)[0], groups, w),
            embed(lambda n: self.local_layouts(n)[1], groups, w),
        )

    # Layouts of this collective over `w` ranks; subclasses give the kinds and sizes.
    def local_layouts(self, w: int) -> tuple[Layout, Layout]:
        raise NotImplementedError

    def consume_attr(self) -> ConsumeAttr:
        return ConsumeAttr.of(None if self.op is None else self.op.data)

    def _counts(self) -> list[int] | list[list[int]] | None:
        if self.static_counts is None:
            return None
        vals = [c.data for c in self.static_counts.data]
        w = self.group_size
        if self.MATRIX:
            return [vals[i * w : (i + 1) * w] for i in range(w)]
        return vals

    def verify_(self) -> None:
        if why := world_problem(self.world.data):
            raise VerifyException(f"'{self.name}': {why}")
        equal = None
        if self.EQUAL_GROUPS:
            equal = "its counts give one slice per rank of a group" if self.VARIABLE else _SIZED_BY_GROUP
        _verify_groups(self, self.groups, self.world.data, equal)
        dtype = _verify_buffers(self, self.input, self.output)
        if self.REDUCES and self.op is None:
            raise VerifyException(
                f"'{self.name}': a reduction op ({REDUCE_KINDS_TEXT}) is required"
            )
        if not self.REDUCES and self.op is not None:
            raise VerifyException(
                f"'{self.name}': is a copy and takes no reduction op, got '{self.op.data.value}'"
            )
        if self.deterministic is not None and not self.REDUCES:
            raise VerifyException(
                f"'{self.name}': 'deterministic' only applies to reductions, and this is a copy"
            )
        if self.op is not None and (why := check_reduce_dtype(self.op.data, dtype)):
            raise VerifyException(f"'{self.name}': {why}")
        if not self.VARIABLE:
            if self.static_counts is not None or self.counts is not None:
                raise VerifyException(f"'{self.name}': takes no counts; use '{self.name}_v' for per-rank counts")
        else:
            self._verify_counts()
        self._verify_sizes()

    def _verify_counts(self) -> None:
        w = self.group_size
        if self.static_counts is None and self.counts is None:
            raise VerifyException(
                f"'{self.name}': needs counts, either static (counts [..]) or "
                "dynamic (counts %operand)"
            )
        if self.static_counts is not None and self.counts is not None:
            raise VerifyException(
                f"'{self.name}': has both static and dynamic counts; give one of them"
            )
        if self.counts is not None:
            if self.groups is not None:
                raise VerifyException(
                    f"'{self.name}': groups need static counts (counts [..]): dynamic counts "
                    "would leave the groups' slices unknown"
                )
            _verify_counts_operand(self, self.counts, w, self.MATRIX)
            return
        vals = [c.data for c in self.static_counts.data]  # type: ignore[union-attr]
        want = w * w if self.MATRIX else w
        if len(vals) != want:
            what = f"{w}x{w} = {want}" if self.MATRIX else str(w)
            per = "world" if self.groups is None else "each group of"
            raise VerifyException(
                f"'{self.name}': expected {what} counts for {per} {w} ranks, got {len(vals)}"
            )
        if any(v < 0 for v in vals):
            raise VerifyException(
                f"'{self.name}': counts must be non-negative, got {vals}"
            )

    def _verify_sizes(self) -> None:
        raise NotImplementedError

    def _size(self, v: SSAValue) -> int | None:
        return _memref_elems(v.type)

    def _require(self, ok: bool, msg: str) -> None:
        if not ok:
            raise VerifyException(f"'{self.name}': {msg}")

    @classmethod
    def parse(cls, parser: Parser):
        op = None
        if cls.REDUCES:
            op = parse_reduce_kind(parser, f"'{cls.name}'")
        inp = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        out = parser.parse_unresolved_operand()
        parser.parse_keyword("world")
        world = parser.parse_integer(allow_boolean=False)
        groups = _parse_groups(parser) if parser.parse_optional_keyword("groups") else None
        counts: list[int] | None = None
        counts_name = None
        if parser.parse_optional_keyword("counts"):
            if parser.parse_optional_punctuation("["):
                counts = []
                if not parser.parse_optional_punctuation("]"):
                    counts = [parser.parse_integer(allow_boolean=False)]
                    while parser.parse_optional_punctuation(","):
                        counts.append(parser.parse_integer(allow_boolean=False))
                    parser.parse_punctuation("]")
            else:
                counts_name = parser.parse_unresolved_operand()
        deterministic = parser.parse_optional_keyword("deterministic") is not None
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t_in = parser.parse_type()
        parser.parse_punctuation(",")
        t_out = parser.parse_type()
        counts_val: Sequence[int] | SSAValue | None = counts
        if counts_name is not None:
            parser.parse_punctuation(",")
            counts_val = parser.resolve_operand(counts_name, parser.parse_type())
        result = cls(
            parser.resolve_operand(inp, t_in),
            parser.resolve_operand(out, t_out),
            world,
            op,
            counts_val,
            deterministic,
            groups,
        )
        result.attributes.update(attrs)
        return result

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if self.op is not None:
            printer.print_string(f"{self.op.data.value} ")
        printer.print_operand(self.input)
        printer.print_string(", ")
        printer.print_operand(self.output)
        printer.print_string(f" world {self.world.data}")
        if (groups := self.group_list) is not None:
            _print_groups(printer, groups)
        if self.static_counts is not None:
            vals = ", ".join(str(c.data) for c in self.static_counts.data)
            printer.print_string(f" counts [{vals}]")
        if self.counts is not None:
            printer.print_string(" counts ")
            printer.print_operand(self.counts)
        if self.deterministic is not None:
            printer.print_string(" deterministic")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list([o.type for o in self.operands], printer.print_attribute)


_NO_STATIC_LAYOUT = "both buffers have dynamic sizes, so slice sizes are unknown; make one static"


def _balanced(total: int, world: int) -> list[int]:
    """Split `total` elements into `world` near-equal parts, larger ones first."""
    q, r = divmod(total, world)
    return [q + (1 if i < r else 0) for i in range(world)]


def _same_size(op: NamedCollective) -> int | None:
    """The element count of the op's buffers, which must agree: the input's,
    or the output's when the input is dynamic."""
    a, b = op._size(op.input), op._size(op.output)
    op._require(
        a is None or b is None or a == b,
        f"input and output must have the same number of elements, got {a} and {b}",
    )
    return a if a is not None else b


def _static_size(op: NamedCollective) -> int:
    """The element count of the input, or of the output when the input is
    dynamic; a LayoutError when both are."""
    n = op._size(op.input)
    if n is None:
        n = op._size(op.output)
    if n is None:
        raise LayoutError(_NO_STATIC_LAYOUT)
    return n


@irdl_op_definition
class AllReduceOp(NamedCollective):
    name = "coll.all_reduce"
    REDUCES: ClassVar[bool] = True
    # Every rank keeps its whole buffer: groups of any sizes.
    EQUAL_GROUPS: ClassVar[bool] = False

    def _verify_sizes(self) -> None:
        _same_size(self)

    def local_layouts(self, w: int) -> tuple[Layout, Layout]:
        n = _static_size(self)
        if n % w == 0:
            layout = Layout.fixed(LayoutKind.SCATTERED, w, n // w)
        else:
            layout = Layout.vector(LayoutKind.SCATTERED, w, _balanced(n, w))
        return layout, layout


class SliceCollective(NamedCollective):
    """A collective between one buffer of a single slice per rank (PART, packed)
    and one of world slices (WHOLE, scattered): all_gather gathers input
    slices into the output, reduce_scatter scatters the input into output
    slices."""

    PART: ClassVar[str]
    WHOLE: ClassVar[str]

    def _verify_sizes(self) -> None:
        part, whole = self._size(getattr(self, self.PART)), self._size(getattr(self, self.WHOLE))
        w = self.group_size
        span = "world" if self.groups is None else "group size"
        self._require(
            part is None or whole is None or whole == w * part,
            f"{self.WHOLE} must have {span} x {self.PART} = {w} x {part} = {w * (part or 0)} elements, got {whole}",
        )
        # With a dynamic part the slice size comes from the whole alone.
        self._require(
            part is not None or whole is None or whole % w == 0,
            f"{self.WHOLE} of {whole} elements is not divisible by {'world' if self.groups is None else 'group'} size {w}",
        )

    def local_layouts(self, w: int) -> tuple[Layout, Layout]:
        c = self._size(getattr(self, self.PART))
        if c is None:
            whole = self._size(getattr(self, self.WHOLE))
            if whole is None:
                raise LayoutError(_NO_STATIC_LAYOUT)
            c = whole // w
        part, whole = Layout.fixed(LayoutKind.PACKED, w, c), Layout.fixed(LayoutKind.SCATTERED, w, c)
        return (part, whole) if self.PART == "input" else (whole, part)


@irdl_op_definition
class AllGatherOp(SliceCollective):
    name = "coll.all_gather"
    PART: ClassVar[str] = "input"
    WHOLE: ClassVar[str] = "output"


@irdl_op_definition
class ReduceScatterOp(SliceCollective):
    name = "coll.reduce_scatter"
    REDUCES: ClassVar[bool] = True
    PART: ClassVar[str] = "output"
    WHOLE: ClassVar[str] = "input"


@irdl_op_definition
class AllToAllOp(NamedCollective):
    name = "coll.all_to_all"

    def _verify_sizes(self) -> None:
        n = _same_size(self)
        w = self.group_size
        span = "world" if self.groups is None else "group"
        self._require(
            n is None or n % w == 0,
            f"buffer of {n} elements is not divisible by {span} size {w}",
        )

    def local_layouts(self, w: int) -> tuple[Layout, Layout]:
        c = _static_size(self) // w
        return Layout.fixed(LayoutKind.ADDRESSED, w, c), Layout.fixed(LayoutKind.TRANSPOSED, w, c)


class VariableCollective(NamedCollective):
    VARIABLE: ClassVar[bool] = True
    IN_KIND: ClassVar[LayoutKind]
    OUT_KIND: ClassVar[LayoutKind]

    def local_layouts(self, w: int) -> tuple[Layout, Layout]:
        counts = self._counts()
        return (
            Layout.vector(self.IN_KIND, w, counts),
            Layout.vector(self.OUT_KIND, w, counts),
        )

    def _verify_sizes(self) -> None:
        if self.static_counts is None:
            return
        inp, out = self.layouts()
        _verify_extent(self, "input", self.input, inp)
        _verify_extent(self, "output", self.output, out)


@irdl_op_definition
class AllGatherVOp(VariableCollective):
    name = "coll.all_gather_v"
    IN_KIND: ClassVar[LayoutKind] = LayoutKind.PACKED
    OUT_KIND: ClassVar[LayoutKind] = LayoutKind.SCATTERED


@irdl_op_definition
class ReduceScatterVOp(VariableCollective):
    name = "coll.reduce_scatter_v"
    REDUCES: ClassVar[bool] = True
    IN_KIND: ClassVar[LayoutKind] = LayoutKind.SCATTERED
    OUT_KIND: ClassVar[LayoutKind] = LayoutKind.PACKED


@irdl_op_definition
class AllToAllVOp(VariableCollective):
    name = "coll.all_to_all_v"
    MATRIX: ClassVar[bool] = True
    IN_KIND: ClassVar[LayoutKind] = LayoutKind.ADDRESSED
    OUT_KIND: ClassVar[LayoutKind] = LayoutKind.TRANSPOSED


@irdl_op_definition
class AllReduceVOp(VariableCollective):
    """all_reduce whose buffer is split into the ranks' slices by the counts
    (slice r, counts[r] elements, is rank r's): every rank's output is the
    whole reduced buffer, sum(counts) elements. The counts name which rank's
    slice is which, as all_reduce's near-equal split does."""

    name = "coll.all_reduce_v"
    REDUCES: ClassVar[bool] = True
    IN_KIND: ClassVar[LayoutKind] = LayoutKind.SCATTERED
    OUT_KIND: ClassVar[LayoutKind] = LayoutKind.SCATTERED


NAMED_COLLECTIVES: tuple[type[NamedCollective], ...] = (
    AllReduceOp,
    AllGatherOp,
    ReduceScatterOp,
    AllToAllOp,
    AllGatherVOp,
    ReduceScatterVOp,
    AllToAllVOp,
    AllReduceVOp,
)

Coll = Dialect(
    "coll",
    [CollectiveOp, *NAMED_COLLECTIVES],
    [LayoutAttr, ConsumeAttr, ReduceKindAttr],
)
