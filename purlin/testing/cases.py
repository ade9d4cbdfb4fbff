"""Test cases for the seven named collectives: module, buffers, expected results.

A `Case` fixes a collective, world, dtype, reduction and sizes. It builds the
module `func.func @NAME(%in, %out[, %counts])` holding the named op, makes
seeded per-rank buffers (random inputs, NaN-filled outputs, the counts
argument when counts are dynamic) and computes what the buffers must hold
afterwards from `purlin.coll.reference`.

Sizes: `count` is the per-rank unit of the fixed forms (all_reduce: the
buffer; all_gather: the input; reduce_scatter: the output; all_to_all: one
block); the V forms take `counts` (a list, or for all_to_all_v the matrix
counts[sender][receiver]). Buffers are the smallest the op accepts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

from purlin.coll.dialect import AllGatherOp, canonical_dtype, AllGatherVOp, AllReduceOp, AllToAllOp, AllToAllVOp, REDUCE_KINDS_TEXT, NamedCollective, ReduceKind, ReduceScatterOp, ReduceScatterVOp, check_reduce_dtype
from purlin.coll.layouts import world_problem
from purlin.coll import reference
from purlin.dtypes import element_type, filler, itemsize, numpy_dtype, random_array


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
    )
}

Counts = tuple[int, ...] | tuple[tuple[int, ...], ...]


class CaseError(ValueError):
    """The case is not a valid use of the collective."""


def random_counts(rng: np.random.Generator, world: int, total: int) -> tuple[int, ...]:
    """`world` counts adding up to `total`, about a quarter of them (and at least one) zero.

    Zero-size ranks are the corner the V forms exist for; with world 1 or
    total 0 there is nothing to leave out.
    """
    if world == 1:
        return (total,)
    if total == 0:
        return (0,) * world
    zero = rng.random(world) < 0.25
    zero[rng.integers(world)] = True
    if zero.all():
        zero[rng.integers(world)] = False
    weights = np.where(zero, 0.0, rng.random(world) + 0.5)
    return tuple(int(c) for c in rng.multinomial(total, weights / weights.sum()))


def counts_for(collective: str, world: int, total: int, seed: int, balanced: bool = False) -> Counts:
    """Seeded counts of a V collective: a list adding up to `total`, or a
    matrix whose every row (one sender's buffer) adds up to `total`.

    `balanced` makes every column (one receiver's buffer) add up to `total`
    too: the senders split `total` the same way and send part j to receivers
    along a random Latin square, so each receiver gets each part once.
    """
    rng = np.random.default_rng(seed)
    if not COLLECTIVES[collective].matrix:
        return random_counts(rng, world, total)
    if not balanced:
        return tuple(random_counts(rng, world, total) for _ in range(world))
    parts = random_counts(rng, world, total)
    shift, receiver = rng.permutation(world), rng.permutation(world)
    rows = [[0] * world for _ in range(world)]
    for s in range(world):
        for j, c in enumerate(parts):
            rows[s][int(receiver[(shift[s] + j) % world])] = c
    return tuple(tuple(r) for r in rows)


def byte_step(collective: str, world: int, dtype: str) -> int:
    """The larger buffer of one rank grows in steps of this many bytes: one
    element for all_reduce and the V forms (whose counts are free), `world`
    elements for the other fixed forms (world slices of the per-rank count)."""
    info = COLLECTIVES[collective]
    if info.variable:
        return itemsize(dtype)
    op = None if not info.reduces else "sum"
    return Case(collective, world, dtype, op, count=1).bytes


@dataclass(frozen=True)
class Case:
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
            raise CaseError(
                f"unknown collective '{self.collective}', expected one of {', '.join(COLLECTIVES)}"
            )
        object.__setattr__(self, "info", info)
        numpy_dtype(self.dtype)
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
        if why := world_problem(self.world):
            raise CaseError(why)
        if info.reduces:
            if self.op is None:
                raise CaseError(f"{self.collective} needs a reduction op ({REDUCE_KINDS_TEXT})")
            if self.op not in ReduceKind.__members__.values():
                raise CaseError(f"unknown reduction '{self.op}', expected {REDUCE_KINDS_TEXT}")
            if why := check_reduce_dtype(ReduceKind(self.op), self.dtype):
                raise CaseError(why)
        elif self.op is not None:
            raise CaseError(f"{self.collective} is a copy and takes no reduction op")
        if info.variable:
            self._normalize_counts()
            self._check_counts()
        else:
            if self.counts is not None or self.dynamic:
                raise CaseError(f"{self.collective} takes no counts; use the _v form")
            if self.count < 0:
                raise CaseError(f"element count must be non-negative, got {self.count}")

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
            raise CaseError(f"malformed counts {self.counts!r}") from None
        object.__setattr__(self, "counts", counts)

    def _check_counts(self) -> None:
        w = self.world
        if self.counts is None:
            raise CaseError(f"{self.collective} needs counts")
        rows = self.counts if self.info.matrix else (self.counts,)
        shape = f"{w}x{w} matrix" if self.info.matrix else f"list of {w}"
        if len(rows) != (w if self.info.matrix else 1) or any(
            not isinstance(r, tuple) or len(r) != w for r in rows
        ):
            raise CaseError(f"{self.collective} on world {w} needs counts as a {shape}")
        if any(c < 0 for row in rows for c in row):
            raise CaseError(f"counts must be non-negative, got {self.counts}")

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
        return sum(counts), max(counts)  # type: ignore[arg-type]

    @property
    def bytes(self) -> int:
        """Bytes of the larger buffer of one rank."""
        return max(self.buffer_sizes()) * itemsize(self.dtype)

    # -- IR -------------------------------------------------------------------

    def build_module(self) -> ModuleOp:
        elem = element_type(self.dtype)
        n_in, n_out = self.buffer_sizes()
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

    # -- buffers --------------------------------------------------------------

    def make_args(self, seed: int) -> list[list[np.ndarray]]:
        """args[i][r]: random inputs, NaN outputs, and the counts when dynamic."""
        rng = np.random.default_rng(seed)
        n_in, n_out = self.buffer_sizes()
        w = self.world
        args = [
            [random_array(rng, self.dtype, n_in, self.op) for _ in range(w)],
            [filler(self.dtype, n_out) for _ in range(w)],
        ]
        if self.dynamic:
            counts = np.array(self.counts, dtype=np.int64)
            args.append([counts.copy() for _ in range(w)])
        return args

    def expected(self, args: list[list[np.ndarray]]) -> list[np.ndarray]:
        """The output buffers after the collective, from the numpy reference."""
        inputs, outputs = args[0], args[1]
        results = self._reference()(inputs)
        expected = [o.copy() for o in outputs]
        for e, res in zip(expected, results):
            e[: res.size] = res
        return expected

    def _reference(self) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
        op, counts = self.op, self.counts
        return {
            "all_reduce": lambda x: reference.all_reduce(x, op),
            "all_gather": reference.all_gather,
            "reduce_scatter": lambda x: reference.reduce_scatter(x, op),
            "all_to_all": reference.all_to_all,
            "all_gather_v": lambda x: reference.all_gather_v(x, counts),
            "reduce_scatter_v": lambda x: reference.reduce_scatter_v(x, counts, op),
            "all_to_all_v": lambda x: reference.all_to_all_v(x, counts),
        }[self.collective]
