"""Functional collectives: each returns a new tensor and, for sums, has a
gradient (an all_reduce's is all-reduced, an all_gather's reduce-scattered,
a reduce_scatter's gathered, an all_to_all's exchanged back), so models
trained under torch.compile can call them (`op` as purlin or torch names it):

    from purlin.torch import functional as F
    y = F.all_reduce(x)              # x's shape
    g = F.all_gather(x)              # ranks stacked along dimension 0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from purlin.torch.collectives import check, counted
from purlin.torch.groups import group_name, op_name, state

_ops = torch.ops.purlin


def all_reduce(x: torch.Tensor, op: Any = "sum", *, group: Any = None, deterministic: bool = False,
               lowering: str = "") -> torch.Tensor:
    return _ops.all_reduce(x, op_name(op), group_name(group), deterministic, lowering).view(x.shape)


def all_gather(x: torch.Tensor, *, group: Any = None, lowering: str = "") -> torch.Tensor:
    g = group_name(group)
    y = _ops.all_gather(x, g, lowering)
    return y.view(state(g).world * x.shape[0], *x.shape[1:]) if x.dim() else y


def reduce_scatter(x: torch.Tensor, op: Any = "sum", *, group: Any = None, deterministic: bool = False,
                   lowering: str = "") -> torch.Tensor:
    g, op = group_name(group), op_name(op)
    w = state(g).world
    check(x.dim() > 0 and x.shape[0] % w == 0, f"dimension 0 of the input must divide into world {w} parts")
    return _ops.reduce_scatter(x, op, g, deterministic, lowering).view(x.shape[0] // w, *x.shape[1:])


def all_to_all(x: torch.Tensor, *, group: Any = None, lowering: str = "") -> torch.Tensor:
    g = group_name(group)
    w = state(g).world
    check(x.numel() % w == 0, f"the input's {x.numel()} elements must divide into world {w} parts")
    return _ops.all_to_all(x, g, lowering).view(x.shape)


def all_gather_v(x: torch.Tensor, counts: Sequence[int], *, group: Any = None, lowering: str = "") -> torch.Tensor:
    g = group_name(group)
    rank = counted(g, counts)
    check(x.numel() >= counts[rank], f"the input of rank {rank} must hold counts[{rank}] = {counts[rank]} elements")
    return _ops.all_gather_v(x, list(counts), g, lowering)


def reduce_scatter_v(x: torch.Tensor, counts: Sequence[int], op: Any = "sum", *, group: Any = None,
                     lowering: str = "") -> torch.Tensor:
    g, op = group_name(group), op_name(op)
    counted(g, counts)
    check(x.numel() >= sum(counts), f"the input must hold sum(counts) = {sum(counts)} elements")
    return _ops.reduce_scatter_v(x, list(counts), op, g, lowering)


def all_to_all_v(x: torch.Tensor, counts: Sequence[Sequence[int]], *, group: Any = None,
                 lowering: str = "") -> torch.Tensor:
    g = group_name(group)
    rank = counted(g, counts)
    check(all(len(row) == len(counts) for row in counts), "counts must be a world x world matrix")
    check(x.numel() >= sum(counts[rank]), f"the input of rank {rank} must hold sum(counts[{rank}]) elements")
    return _ops.all_to_all_v(x, [c for row in counts for c in row], g, lowering)
