"""Test cases of the named collectives: a CollectiveSpec with seeded
per-rank buffers (random inputs, NaN-filled outputs, the counts argument when
counts are dynamic) and what the buffers must hold afterwards, from
`purlin.coll.reference`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from purlin.coll import reference
from purlin.coll.builder import COLLECTIVES, CollectiveSpec, Counts
from purlin.testing.data import filler, random_array


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


@dataclass(frozen=True)
class Case(CollectiveSpec):
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
            "all_reduce_v": lambda x: reference.all_reduce_v(x, counts, op),
        }[self.collective]
