"""The `coll` dialect's attributes: the reduction kind (over purlin.dtypes'
table of the element types and reductions every layer shares), the naming
layouts (`#coll.layout`) and what a collective does with the slices a name
gathers (`#coll.consume`). What a layout means lives
in `purlin.coll.layouts`; the ops that take these are in `purlin.coll.dialect`.
"""

from __future__ import annotations

from typing import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition, param_def
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from purlin.coll.layouts import Layout, LayoutError, LayoutKind, Slice, format_name, world_problem
from purlin.declarations import enum_attribute
# The element types and reductions are purlin.dtypes' table; the dialects take them from here with the attributes.
from purlin.dtypes import (  # noqa: F401
    BITWISE,
    DTYPE_ALIASES,
    DTYPE_BYTES,
    DTYPE_INFO,
    DTYPES,
    ELEMENT_TYPES_TEXT,
    REDUCE_KINDS_TEXT,
    DType,
    ReduceKind,
    canonical_dtype,
    check_reduce_computable,
    check_reduce_dtype,
    dtype_name,
    element_bytes,
)

ReduceKindAttr = enum_attribute(ReduceKind, "coll.reduce_kind", __name__)


# -- layouts -----------------------------------------------------------------

V_SUFFIX = "_v"


def _int_array(data: list[int]) -> ArrayAttr[IntAttr]:
    """`data` as an ArrayAttr, one IntAttr per distinct value: a V layout's
    world of counts holds few (building an attribute costs more than looking one up)."""
    ints = {v: IntAttr(v) for v in set(data)}
    return ArrayAttr(ints[v] for v in data)


@irdl_attr_definition
class LayoutAttr(ParametrizedAttribute):
    """`#coll.layout<KIND, world W, COUNTS>`.

    KIND is packed, scattered, addressed, transposed (slice count COUNTS), their
    `_v` forms (COUNTS a list, a matrix for addressed/transposed, or `?` when
    dynamic), or named (COUNTS a list of (rank, offset, size, name) slices,
    where a name is an integer or a parenthesised tuple of integers).
    """

    name = "coll.layout"

    kind: StringAttr = param_def()
    world: IntAttr = param_def()
    # Flattened integers; their shape follows from kind (see `to_layout`).
    data: ArrayAttr[IntAttr] = param_def()
    dynamic: IntAttr = param_def()

    @staticmethod
    def from_layout(layout: Layout) -> LayoutAttr:
        kind = layout.kind.value + (V_SUFFIX if layout.variable else "")
        data: list[int] = []
        if layout.kind == LayoutKind.NAMED:
            for s in layout.slices_:
                data += [s.rank, s.offset, s.size, len(s.name), *s.name]
        elif not layout.variable:
            assert isinstance(layout.counts, int)
            data = [layout.counts]
        elif layout.counts is not None:
            for row in layout.counts:
                data += list(row) if isinstance(row, tuple) else [row]
        return LayoutAttr(
            StringAttr(kind),
            IntAttr(layout.world),
            _int_array(data),
            IntAttr(int(layout.is_dynamic)),
        )

    def to_layout(self) -> Layout:
        return _decode(
            self.kind.data, self.world.data, [v.data for v in self.data.data], self.dynamic.data
        )

    def verify(self) -> None:
        if why := _layout_problem(self.kind.data, self.world.data, self.data, self.dynamic.data):
            raise VerifyException(why)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            kind_s = parser.parse_identifier(" layout kind")
            base = kind_s.removesuffix(V_SUFFIX)
            if base not in LayoutKind.__members__.values() or kind_s == "named_v":
                parser.raise_error(
                    f"unknown layout kind '{kind_s}', expected one of packed, scattered, "
                    "addressed, transposed (each optionally with _v) or named",
                    pos,
                    parser.pos,
                )
            parser.parse_punctuation(",")
            parser.parse_keyword("world")
            world = parser.parse_integer(allow_negative=False, allow_boolean=False)
            # Before the data, whose shape follows the world size.
            if why := world_problem(world):
                parser.raise_error(f"invalid {kind_s} layout: {why}", pos, parser.pos)
            parser.parse_punctuation(",")
            dynamic = 0
            data: list[int] = []
            if base == LayoutKind.NAMED:
                for r, off, size, name in parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, lambda: _parse_named_slice(parser)
                ):
                    data += [r, off, size, len(name), *name]
            elif not kind_s.endswith(V_SUFFIX):
                data = [parser.parse_integer(allow_boolean=False)]
            elif parser.parse_optional_punctuation("?"):
                dynamic = 1
            elif base in (LayoutKind.ADDRESSED, LayoutKind.TRANSPOSED):
                rows = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, lambda: parse_int_list(parser)
                )
                if any(len(row) != world for row in rows) or len(rows) != world:
                    parser.raise_error(
                        f"invalid {kind_s} layout: counts must be a {world}x{world} matrix "
                        "(row = sender)",
                        pos,
                        parser.pos,
                    )
                data = [c for row in rows for c in row]
            else:
                data = parse_int_list(parser)
            array = _int_array(data)
            # Checked here too so that a bad layout is reported where it is written.
            if why := _layout_problem(kind_s, world, array, dynamic):
                parser.raise_error(why, pos, parser.pos)
        return (StringAttr(kind_s), IntAttr(world), array, IntAttr(dynamic))

    def print_parameters(self, printer: Printer) -> None:
        layout = self.to_layout()
        kind_s = self.kind.data
        printer.print_string(f"<{kind_s}, world {layout.world}, ")
        if layout.kind == LayoutKind.NAMED:
            body = ", ".join(
                f"({s.rank}, {s.offset}, {s.size}, {format_name(s.name)})"
                for s in layout.slices_
            )
            printer.print_string(f"[{body}]")
        elif not layout.variable:
            printer.print_string(str(layout.counts))
        elif layout.is_dynamic:
            printer.print_string("?")
        elif layout.matrix_counts:
            rows = ", ".join("[" + ", ".join(map(str, r)) + "]" for r in layout.counts)  # type: ignore[union-attr]
            printer.print_string(f"[{rows}]")
        else:
            printer.print_string("[" + ", ".join(map(str, layout.counts)) + "]")  # type: ignore[arg-type]
        printer.print_string(">")


def _decode(kind_s: str, w: int, vals: list[int], dynamic: int) -> Layout:
    """The layout that a LayoutAttr's flattened parameters stand for."""
    variable = kind_s.endswith(V_SUFFIX)
    kind = LayoutKind(kind_s.removesuffix(V_SUFFIX))
    if kind == LayoutKind.NAMED:
        slices: list[Slice] = []
        i = 0
        while i < len(vals):
            r, off, size, n = vals[i : i + 4]
            if n < 1 or i + 4 + n > len(vals):
                raise ValueError("truncated named slice")
            slices.append(Slice(r, off, size, tuple(vals[i + 4 : i + 4 + n])))
            i += 4 + n
        return Layout.named(w, slices)
    if not variable:
        return Layout.fixed(kind, w, vals[0])
    if dynamic:
        return Layout.vector(kind, w, None)
    if kind in (LayoutKind.ADDRESSED, LayoutKind.TRANSPOSED):
        if len(vals) != w * w:
            raise ValueError("count matrix of the wrong size")
        return Layout.vector(kind, w, [vals[i * w : (i + 1) * w] for i in range(w)])
    return Layout.vector(kind, w, vals)


def _layout_problem(kind_s: str, world: int, data: ArrayAttr[IntAttr], dynamic: int) -> str | None:
    """What is wrong with a layout attribute's parameters, or None."""
    base = kind_s.removesuffix(V_SUFFIX)
    if base not in LayoutKind.__members__.values() or kind_s == "named_v":
        return f"unknown layout kind '{kind_s}'"
    # Before decoding, which splits the data by the world size.
    if why := world_problem(world):
        return f"invalid {kind_s} layout: {why}"
    try:
        _decode(kind_s, world, [v.data for v in data.data], dynamic).check()
    except LayoutError as e:
        return f"invalid {kind_s} layout: {e}"
    except (ValueError, IndexError):
        return f"malformed {kind_s} layout data"
    return None



def parse_int_list(parser: AttrParser) -> list[int]:
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
    )


def _parse_named_slice(parser: AttrParser) -> tuple[int, int, int, tuple[int, ...]]:
    with parser.in_parens():
        r = parser.parse_integer(allow_boolean=False)
        parser.parse_punctuation(",")
        off = parser.parse_integer(allow_boolean=False)
        parser.parse_punctuation(",")
        size = parser.parse_integer(allow_boolean=False)
        parser.parse_punctuation(",")
        if parser.parse_optional_punctuation("("):
            name = [parser.parse_integer(allow_boolean=False)]
            while parser.parse_optional_punctuation(","):
                name.append(parser.parse_integer(allow_boolean=False))
            parser.parse_punctuation(")")
        else:
            name = [parser.parse_integer(allow_boolean=False)]
    return r, off, size, tuple(name)


@irdl_attr_definition
class ConsumeAttr(ParametrizedAttribute):
    """`#coll.consume<copy>` or `#coll.consume<reduce sum>`."""

    name = "coll.consume"

    reduce: StringAttr = param_def()

    @staticmethod
    def copy() -> ConsumeAttr:
        return ConsumeAttr(StringAttr(""))

    @staticmethod
    def of(kind: ReduceKind | None) -> ConsumeAttr:
        """Copy when `kind` is None, else reduce with it."""
        return ConsumeAttr(StringAttr("" if kind is None else kind.value))

    @property
    def kind(self) -> ReduceKind | None:
        return ReduceKind(self.reduce.data) if self.reduce.data else None

    def verify(self) -> None:
        if self.reduce.data and self.reduce.data not in ReduceKind.__members__.values():
            raise VerifyException(f"unknown reduction '{self.reduce.data}'")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            if parser.parse_optional_keyword("copy"):
                return (StringAttr(""),)
            parser.parse_keyword("reduce", " (consume is 'copy' or 'reduce OP')")
            return (StringAttr(parse_reduce_kind(parser, "'reduce'").value),)

    def print_parameters(self, printer: Printer) -> None:
        text = f"reduce {self.reduce.data}" if self.reduce.data else "copy"
        printer.print_string(f"<{text}>")


def parse_reduce_kind(parser: AttrParser, after: str) -> ReduceKind:
    start = parser.pos
    word = parser.parse_optional_identifier()
    if word is None:
        parser.raise_error(f"expected a reduction op after {after}: {REDUCE_KINDS_TEXT}")
    if word not in ReduceKind.__members__.values():
        parser.raise_error(
            f"expected a reduction op after {after}: {REDUCE_KINDS_TEXT}, got '{word}'",
            start,
            parser.pos,
        )
    return ReduceKind(word)
