"""A named collective at given sizes: its checks and its coll module.

A `CollectiveSpec` fixes a collective, world, dtype, reduction and sizes,
refuses a combination the collective does not take (SpecError, naming what
is wrong), and builds the module `func.func @NAME(%in, %out[, %counts])`
holding the named op. purlin.compile lowers it to a plan; purlin.testing
adds seeded buffers and expected results.

Sizes: `count` is the per-rank unit of the fixed forms (all_reduce: the
buffer; all_gather: the input; reduce_scatter: the output; all_to_all: one
block); the V forms take `counts` (a list, or for all_to_all_v the matrix
counts[sender][receiver]; all_reduce_v's list is the ranks' slices of the
buffer it reduces, sum(counts) elements). Buffers are the smallest the op accepts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

from purlin.coll.attributes import REDUCE_KINDS_TEXT, ReduceKind, check_reduce_dtype
from purlin.coll.dialect import (
    AllGatherOp,
    AllGatherVOp,
    AllReduceOp,
    AllReduceVOp,
    AllToAllOp,
    AllToAllVOp,
    NamedCollective,
    ReduceScatterOp,
    ReduceScatterVOp,
)
from purlin.coll.layouts import world_problem
from purlin.dtypes import element_type, itemsize, known_dtype


@dataclass(frozen=True)
class Collective:
    op: type[NamedCollective]
    reduces: bool = False
    variable: bool = False
    matrix: bool = False

    @property
    def name(self) -> str:
        return self.op.name.removeprefix("coll.")


COLLECTIVES: dict[str, Collective] = {
    c.name: c
    for c in (
        Collective(AllReduceOp, reduces=True),
        Collective(AllGatherOp),
        Collective(ReduceScatterOp, reduces=True),
        Collective(AllToAllOp),
        Collective(AllGatherVOp, variable=True),
        Collective(ReduceScatterVOp, reduces=True, variable=True),
        Collective(AllToAllVOp, variable=True, matrix=True),
        Collective(AllReduceVOp, reduces=True, variable=True),
    )
}

Counts = tuple[int, ...] | tuple[tuple[int, ...], ...]


class SpecError(ValueError):
    """The sizes, dtype or op are not a valid use of the collective."""


def byte_step(collective: str, world: int, dtype: str) -> int:
    """The larger buffer of one rank grows in steps of this many bytes: one
    element for all_reduce and the V forms (whose counts are free), `world`
    elements for the other fixed forms (world slices of the per-rank count)."""
    info = COLLECTIVES[collective]
    if info.variable:
        return itemsize(dtype)
    op = None if not info.reduces else "sum"
    return CollectiveSpec(collective, world, dtype, op, count=1).bytes


@dataclass(frozen=True)
class CollectiveSpec:
    collective: str
    world: int
    dtype: str
    op: str | None = None
    count: int = 0
    counts: Counts | None = None
    dynamic: bool = False
    info: Collective = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        info = COLLECTIVES.get(self.collective)
        if info is None:
            raise SpecError(
                f"unknown collective '{self.collective}', expected one of {', '.join(COLLECTIVES)}"
            )
        object.__setattr__(self, "info", info)
        object.__setattr__(self, "dtype", known_dtype(self.dtype))
        if why := world_problem(self.world):
            raise SpecError(why)
        if info.reduces:
            if self.op is None:
                raise SpecError(f"{self.collective} needs a reduction op ({REDUCE_KINDS_TEXT})")
            if self.op not in ReduceKind.__members__.values():
                raise SpecError(f"unknown reduction '{self.op}', expected {REDUCE_KINDS_TEXT}")
            if why := check_reduce_dtype(ReduceKind(self.op), self.dtype):
                raise SpecError(why)
        elif self.op is not None:
            raise SpecError(f"{self.collective} is a copy and takes no reduction op")
        if info.variable:
            self._normalize_counts()
            self._check_counts()
        else:
            if self.counts is not None or self.dynamic:
                raise SpecError(f"{self.collective} takes no counts; use the _v form")
            if self.count < 0:
                raise SpecError(f"element count must be non-negative, got {self.count}")

    def _normalize_counts(self) -> None:
        """Counts as (nested) tuples of ints, so cases compare and hash."""
        if self.counts is None:
            return
        try:
            if self.info.matrix:
                counts = tuple(tuple(int(c) for c in row) for row in self.counts)
            else:
                counts = tuple(int(c) for c in self.counts)
        except (TypeError, ValueError):
            raise SpecError(f"malformed counts {self.counts!r}") from None
        object.__setattr__(self, "counts", counts)

    def _check_counts(self) -> None:
        w = self.world
        if self.counts is None:
            raise SpecError(f"{self.collective} needs counts")
        rows = self.counts if self.info.matrix else (self.counts,)
        shape = f"{w}x{w} matrix" if self.info.matrix else f"list of {w}"
        if len(rows) != (w if self.info.matrix else 1) or any(
            not isinstance(r, tuple) or len(r) != w for r in rows
        ):
            raise SpecError(f"{self.collective} on world {w} needs counts as a {shape}")
        if any(c < 0 for row in rows for c in row):
            raise SpecError(f"counts must be non-negative, got {self.counts}")

    # -- sizes ----------------------------------------------------------------

    @property
    def contributions(self) -> int:
        """How many values each reduced output element combines (1 for copies)."""
        return self.world if self.info.reduces else 1

    def buffer_sizes(self) -> tuple[int, int]:
        """Elements of the input and output buffers (the same on every rank)."""
        w, c = self.world, self.count
        name = self.collective
        if name == "all_reduce":
            return c, c
        if name == "all_gather":
            return c, w * c
        if name == "reduce_scatter":
            return w * c, c
        if name == "all_to_all":
            return w * c, w * c
        counts = self.counts
        assert counts is not None
        if self.info.matrix:
            rows = [sum(r) for r in counts]  # type: ignore[arg-type]
            cols = [sum(r[d] for r in counts) for d in range(w)]  # type: ignore[index]
            return max(rows), max(cols)
        if name == "all_gather_v":
            return max(counts), sum(counts)  # type: ignore[arg-type]
        if name == "all_reduce_v":
            return sum(counts), sum(counts)  # type: ignore[arg-type]
        return sum(counts), max(counts)  # type: ignore[arg-type]

    @property
    def bytes(self) -> int:
        """Bytes of the larger buffer of one rank."""
        return max(self.buffer_sizes()) * itemsize(self.dtype)

    # -- IR -------------------------------------------------------------------

    def build_module(self, sizes: tuple[int, int] | None = None) -> ModuleOp:
        """The module of the collective; `sizes`: the input and output buffers'
        elements, if not the smallest (a bound for dynamic counts)."""
        elem = element_type(self.dtype)
        n_in, n_out = sizes or self.buffer_sizes()
        types = [MemRefType(elem, [n_in]), MemRefType(elem, [n_out])]
        if self.dynamic:
            shape = [self.world] * (2 if self.info.matrix else 1)
            types.append(MemRefType(IntegerType(64), shape))
        block = Block(arg_types=types)
        for arg, name in zip(block.args, ("in", "out", "counts")):
            arg.name_hint = name
        counts = None
        if self.dynamic:
            counts = block.args[2]
        elif self.counts is not None:
            counts = self.flat_counts()
        block.add_ops(
            [
                self.info.op(
                    block.args[0],
                    block.args[1],
                    self.world,
                    None if self.op is None else ReduceKind(self.op),
                    counts,
                ),
                ReturnOp(),
            ]
        )
        func = FuncOp(self.collective, (types, []), Region(block))
        return ModuleOp([func])

    def flat_counts(self) -> list[int]:
        assert self.counts is not None
        if self.info.matrix:
            return [c for row in self.counts for c in row]  # type: ignore[union-attr]
        return list(self.counts)  # type: ignore[arg-type]
