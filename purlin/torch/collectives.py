"""The seven collectives on torch tensors, shaped like torch.distributed's.

Each checks its tensors (at trace time too, on fake tensors) and calls its
torch.ops.purlin operator. `group` is a process group bound by
purlin.torch.init (default: the one bound last).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from purlin.torch.groups import group_name, state

_ops = torch.ops.purlin


def all_reduce(tensor: torch.Tensor, op: str = "sum", *, out: torch.Tensor | None = None, group: Any = None,
               deterministic: bool = False, lowering: str = "") -> torch.Tensor:
    """Like torch.distributed.all_reduce: in place (lowered in place: each slice
    is staged before it is overwritten), or into `out`."""
    g = group_name(group)
    _dense(tensor, "tensor")
    if out is None or out is tensor:
        _ops.all_reduce_(tensor, op, g, deterministic, lowering)
        return tensor
    _dense(out, "out")
    check(out.numel() == tensor.numel() and out.dtype == tensor.dtype, "out must have the tensor's size and dtype")
    _ops.all_reduce_out(tensor, out, op, g, deterministic, lowering)
    return out


def all_gather(output: torch.Tensor, input: torch.Tensor, *, group: Any = None, lowering: str = "") -> torch.Tensor:
    """Like torch.distributed.all_gather_into_tensor."""
    g = group_name(group)
    _pair(output, input)
    check(output.numel() == state(g).world * input.numel(), "output must hold world x input elements")
    _ops.all_gather_out(input, output, g, lowering)
    return output


def reduce_scatter(output: torch.Tensor, input: torch.Tensor, op: str = "sum", *, group: Any = None,
                   deterministic: bool = False, lowering: str = "") -> torch.Tensor:
    """Like torch.distributed.reduce_scatter_tensor."""
    g = group_name(group)
    _pair(output, input)
    check(input.numel() == state(g).world * output.numel(), "input must hold world x output elements")
    _ops.reduce_scatter_out(input, output, op, g, deterministic, lowering)
    return output


def all_to_all(output: torch.Tensor, input: torch.Tensor, *, group: Any = None, lowering: str = "") -> torch.Tensor:
    """Like torch.distributed.all_to_all_single with equal splits."""
    g = group_name(group)
    _pair(output, input)
    w = state(g).world
    check(input.numel() == output.numel() and input.numel() % w == 0,
           f"input and output must have the same size, divisible by world {w}")
    _ops.all_to_all_out(input, output, g, lowering)
    return output


def all_gather_v(output: torch.Tensor, input: torch.Tensor, counts: Sequence[int], *, group: Any = None,
                 lowering: str = "") -> torch.Tensor:
    """Rank r contributes counts[r] elements; output holds them in rank order."""
    g = group_name(group)
    _pair(output, input)
    rank = counted(g, counts)
    _check_size(input, counts[rank], f"input of rank {rank}", f"counts[{rank}]")
    _check_size(output, sum(counts), "output", "sum(counts)")
    _ops.all_gather_v_out(input, output, list(counts), g, lowering)
    return output


def reduce_scatter_v(output: torch.Tensor, input: torch.Tensor, counts: Sequence[int], op: str = "sum", *,
                     group: Any = None, lowering: str = "") -> torch.Tensor:
    """Rank r receives the reduction of slice r (counts[r] elements) of every input."""
    g = group_name(group)
    _pair(output, input)
    rank = counted(g, counts)
    _check_size(input, sum(counts), "input", "sum(counts)")
    _check_size(output, counts[rank], f"output of rank {rank}", f"counts[{rank}]")
    _ops.reduce_scatter_v_out(input, output, list(counts), op, g, lowering)
    return output


def all_to_all_v(output: torch.Tensor, input: torch.Tensor, counts: Sequence[Sequence[int]], *,
                 group: Any = None, lowering: str = "") -> torch.Tensor:
    """counts[s][d] elements go from rank s to rank d, packed in rank order on both sides."""
    g = group_name(group)
    _pair(output, input)
    rank = counted(g, counts)
    check(all(len(row) == len(counts) for row in counts), "counts must be a world x world matrix")
    _check_size(input, sum(counts[rank]), f"input of rank {rank}", f"sum(counts[{rank}])")
    _check_size(output, sum(row[rank] for row in counts), f"output of rank {rank}",
                f"column {rank} of counts summed")
    _ops.all_to_all_v_out(input, output, [c for row in counts for c in row], g, lowering)
    return output


def all_to_all_v_dev(output: torch.Tensor, input: torch.Tensor, counts: torch.Tensor,
                     recv_counts: torch.Tensor | None = None, *, group: Any = None, lowering: str = "") -> torch.Tensor:
    """MoE-style all_to_all_v whose counts live on the device: `counts[d]` (int64,
    `world` entries, on the input's device) elements go from this rank to rank d;
    `output` bounds what may come (every rank's tensors of one size); `recv_counts`
    receives how many came from each rank. On CUDA the kernel reads the counts: no
    host synchronisation, capturable in CUDA graphs."""
    return _v_dev("all_to_all_v", output, input, counts, recv_counts, None, group, lowering)


def all_gather_v_dev(output: torch.Tensor, input: torch.Tensor, count: torch.Tensor,
                     recv_counts: torch.Tensor | None = None, *, group: Any = None, lowering: str = "") -> torch.Tensor:
    """all_gather_v whose count (one int64 on the device) is this rank's contribution;
    `recv_counts` receives every rank's."""
    return _v_dev("all_gather_v", output, input, count, recv_counts, None, group, lowering)


def reduce_scatter_v_dev(output: torch.Tensor, input: torch.Tensor, count: torch.Tensor, op: str = "sum",
                         recv_counts: torch.Tensor | None = None, *, group: Any = None,
                         lowering: str = "") -> torch.Tensor:
    """reduce_scatter_v whose count (one int64 on the device) is what this rank
    receives; `recv_counts` receives every rank's."""
    return _v_dev("reduce_scatter_v", output, input, count, recv_counts, op, group, lowering)


def _v_dev(name: str, output: torch.Tensor, input: torch.Tensor, counts: torch.Tensor,
           recv_counts: torch.Tensor | None, op: str | None, group: Any, lowering: str) -> torch.Tensor:
    g = group_name(group)
    _pair(output, input)
    w = state(g).world
    words = w if name == "all_to_all_v" else 1
    for t, what, n in ((counts, "counts", words), (recv_counts, "recv_counts", w)):
        check(t is None or (t.dtype == torch.int64 and t.is_contiguous() and t.numel() == n
                            and t.device == input.device),
              f"{name}: {what} must be a contiguous int64 tensor of {n} elements on {input.device}")
    recv = recv_counts if recv_counts is not None else counts.new_empty(w)
    extra = () if op is None else (op,)
    getattr(_ops, f"{name}_dev_out")(input, output, counts, recv, *extra, g, lowering)
    return output


def _dense(t: torch.Tensor, what: str) -> None:
    check(t.is_contiguous() and t.device.type in ("cpu", "cuda"), f"{what} must be a contiguous CPU or CUDA tensor")


def _pair(output: torch.Tensor, input: torch.Tensor) -> None:
    _dense(input, "input")
    _dense(output, "output")
    check(output.dtype == input.dtype and output.device == input.device,
           f"output ({output.dtype}, {output.device}) and input ({input.dtype}, {input.device}) must match")


def counted(g: str, counts: Sequence) -> int:
    st = state(g)
    check(len(counts) == st.world, f"counts must have one entry per rank ({st.world}), got {len(counts)}")
    return st.rank


def _check_size(t: torch.Tensor, need: int, what: str, rule: str) -> None:
    """A rank's tensor of a V collective holds at least what this rank moves (its plan extent)."""
    check(t.numel() >= need, f"{what} must hold {rule} = {need} elements, it has {t.numel()}")


def check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(f"purlin.torch: {message}")
