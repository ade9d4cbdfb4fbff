"""The seven collectives on torch tensors, shaped like torch.distributed's.

Each checks its tensors (at trace time too, on fake tensors) and calls its
torch.ops.purlin operator. `group` is a process group bound by
purlin.torch.init (default: the one bound last); `op` a reduction as purlin
or torch names it ("sum", "product", torch.distributed.ReduceOp.MAX).
Tensors need not be contiguous: a strided one is copied to a contiguous
tensor and, when written, back (as gloo and the functional collectives do).
all_gather, reduce_scatter and all_to_all also take lists of tensors, one
per rank, as torch.distributed's list forms do. With `async_op=True` a call
returns a torch.distributed Work (see purlin.torch.work) instead of its output.
Autograd sees a call as it sees torch.distributed's: eagerly the written
tensors keep their history (a gradient passes through unchanged, with a
warning); under torch.compile a call on tensors that need a gradient runs as
its functional form (purlin.torch.functional, differentiable for sums),
copied into place, as torch.compile runs torch.distributed's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist

from purlin.torch.execute import v_extents
from purlin.torch.groups import group_name, op_name, state
from purlin.torch.ops import all_reduce_in_place, not_differentiable, run_out, wants_grad
from purlin.torch.work import Work

_ops = torch.ops.purlin

Tensors = torch.Tensor | Sequence[torch.Tensor]


def all_reduce(tensor: torch.Tensor, op: Any = "sum", *, out: torch.Tensor | None = None, group: Any = None,
               async_op: bool = False, deterministic: bool = False, lowering: str = "") -> Any:
    """Like torch.distributed.all_reduce: in place (lowered in place: each slice
    is staged before it is overwritten), or into `out`."""
    g, op = group_name(group), op_name(op)
    _dense(tensor, "tensor")
    if out is None or out is tensor:
        t = tensor.contiguous()
        if _plain(t):
            # Eagerly on a plain tensor the operator's dispatch would only reach its own implementation.
            all_reduce_in_place(t, op, g, deterministic, lowering)
        elif _differentiated(t):
            t.copy_(_ops.all_reduce(t, op, g, deterministic, lowering).view(t.shape))
        else:
            _ops.all_reduce_(t, op, g, deterministic, lowering)
        return _written("purlin::all_reduce_", [(tensor, t)], [], async_op)
    _dense(out, "out")
    check(out.numel() == tensor.numel() and out.dtype == tensor.dtype, "out must have the tensor's size and dtype")
    y = _output(out)
    _run("all_reduce", tensor.contiguous(), y, op, g, deterministic, lowering)
    return _written("purlin::all_reduce_out", [(out, y)], [tensor], async_op)


def all_gather(output: Tensors, input: torch.Tensor, *, group: Any = None, async_op: bool = False,
               lowering: str = "") -> Any:
    """Like torch.distributed.all_gather_into_tensor, or all_gather into a list of world tensors."""
    g = group_name(group)
    w = state(g).world
    out = _one(output, w, input.numel(), "output", "input")
    _pair(out, input)
    check(out.numel() == w * input.numel(), "output must hold world x input elements")
    y = _output(out)
    _run("all_gather", input.contiguous(), y, g, lowering)
    return _spread("purlin::all_gather_out", output, y, [input], async_op)


def reduce_scatter(output: torch.Tensor, input: Tensors, op: Any = "sum", *, group: Any = None,
                   async_op: bool = False, deterministic: bool = False, lowering: str = "") -> Any:
    """Like torch.distributed.reduce_scatter_tensor, or reduce_scatter from a list of world tensors."""
    g, op = group_name(group), op_name(op)
    w = state(g).world
    x = _one(input, w, output.numel(), "input", "output")
    _pair(output, x)
    check(x.numel() == w * output.numel(), "input must hold world x output elements")
    y = _output(output)
    _run("reduce_scatter", x.contiguous(), y, op, g, deterministic, lowering)
    return _written("purlin::reduce_scatter_out", [(output, y)], _listed(input), async_op)


def all_to_all(output: Tensors, input: Tensors, *, group: Any = None, async_op: bool = False,
               lowering: str = "") -> Any:
    """Like torch.distributed.all_to_all_single with equal splits, or all_to_all of
    lists of world tensors (of any sizes: uneven ones exchange their sizes on the
    host first and run as all_to_all_v)."""
    g = group_name(group)
    st = state(g)
    w = st.world
    ins, outs = _listed(input), _listed(output)
    if isinstance(input, torch.Tensor) != isinstance(output, torch.Tensor):
        raise ValueError("purlin.torch: all_to_all takes two tensors or two lists of world tensors")
    if not isinstance(input, torch.Tensor):
        check(len(ins) == w and len(outs) == w, f"all_to_all of lists takes {w} input and {w} output tensors")
        _alike(ins + outs, "input and output")
        if len({t.numel() for t in ins + outs}) > 1:
            return _uneven_all_to_all(st, g, outs, ins, async_op, lowering)
    x = input if isinstance(input, torch.Tensor) else torch.cat([t.reshape(-1) for t in ins])
    out = output if isinstance(output, torch.Tensor) else x.new_empty(x.numel())
    _pair(out, x)
    check(x.numel() == out.numel() and x.numel() % w == 0,
          f"input and output must have the same size, divisible by world {w}")
    y = _output(out)
    _run("all_to_all", x.contiguous(), y, g, lowering)
    return _spread("purlin::all_to_all_out", output, y, ins, async_op)


def _uneven_all_to_all(st, g: str, outs: list[torch.Tensor], ins: list[torch.Tensor], async_op: bool,
                       lowering: str) -> Any:
    sizes = torch.tensor([t.numel() for t in ins], device=ins[0].device)
    rows = [torch.empty_like(sizes) for _ in range(st.world)]
    dist.all_gather(rows, sizes, group=st.group)
    matrix = [r.tolist() for r in rows]
    check([row[st.rank] for row in matrix] == [t.numel() for t in outs],
          "the output tensors must hold what each rank sends this rank")
    x = torch.cat([t.reshape(-1) for t in ins])
    y = x.new_empty(sum(t.numel() for t in outs))
    _pair(y, x)
    _run("all_to_all_v", x, y, [c for row in matrix for c in row], g, lowering)
    for o, part in zip(outs, torch.split(y, [t.numel() for t in outs])):
        o.copy_(part.view(o.shape))
    return _written("purlin::all_to_all_v_out", [(o, o) for o in outs], ins, async_op)


def all_gather_v(output: torch.Tensor, input: torch.Tensor, counts: Sequence[int], *, group: Any = None,
                 async_op: bool = False, lowering: str = "") -> Any:
    """Rank r contributes counts[r] elements; output holds them in rank order."""
    g = group_name(group)
    _pair(output, input)
    _check_v(g, "all_gather_v", output, input, counts)
    y = _output(output)
    _run("all_gather_v", input.contiguous(), y, list(counts), g, lowering)
    return _written("purlin::all_gather_v_out", [(output, y)], [input], async_op)


def reduce_scatter_v(output: torch.Tensor, input: torch.Tensor, counts: Sequence[int], op: Any = "sum", *,
                     group: Any = None, async_op: bool = False, lowering: str = "") -> Any:
    """Rank r receives the reduction of slice r (counts[r] elements) of every input."""
    g, op = group_name(group), op_name(op)
    _pair(output, input)
    _check_v(g, "reduce_scatter_v", output, input, counts)
    y = _output(output)
    _run("reduce_scatter_v", input.contiguous(), y, list(counts), op, g, lowering)
    return _written("purlin::reduce_scatter_v_out", [(output, y)], [input], async_op)


def all_to_all_v(output: torch.Tensor, input: torch.Tensor, counts: Sequence[Sequence[int]], *,
                 group: Any = None, async_op: bool = False, lowering: str = "") -> Any:
    """counts[s][d] elements go from rank s to rank d, packed in rank order on both sides."""
    g = group_name(group)
    _pair(output, input)
    check(all(len(row) == len(counts) for row in counts), "counts must be a world x world matrix")
    _check_v(g, "all_to_all_v", output, input, counts)
    y = _output(output)
    _run("all_to_all_v", input.contiguous(), y, [c for row in counts for c in row], g, lowering)
    return _written("purlin::all_to_all_v_out", [(output, y)], [input], async_op)


def all_to_all_v_dev(output: torch.Tensor, input: torch.Tensor, counts: torch.Tensor,
                     recv_counts: torch.Tensor | None = None, *, group: Any = None, async_op: bool = False,
                     lowering: str = "") -> Any:
    """MoE-style all_to_all_v whose counts live on the device: `counts[d]` (int64,
    `world` entries, on the input's device) elements go from this rank to rank d;
    `output` bounds what may come (every rank's tensors of one size); `recv_counts`
    receives how many came from each rank. On CUDA within a node the kernel reads
    the counts: no host synchronisation, capturable in CUDA graphs."""
    return _v_dev("all_to_all_v", output, input, counts, recv_counts, None, group, async_op, lowering)


def all_gather_v_dev(output: torch.Tensor, input: torch.Tensor, count: torch.Tensor,
                     recv_counts: torch.Tensor | None = None, *, group: Any = None, async_op: bool = False,
                     lowering: str = "") -> Any:
    """all_gather_v whose count (one int64 on the device) is this rank's contribution;
    `recv_counts` receives every rank's."""
    return _v_dev("all_gather_v", output, input, count, recv_counts, None, group, async_op, lowering)


def reduce_scatter_v_dev(output: torch.Tensor, input: torch.Tensor, count: torch.Tensor, op: Any = "sum",
                         recv_counts: torch.Tensor | None = None, *, group: Any = None, async_op: bool = False,
                         lowering: str = "") -> Any:
    """reduce_scatter_v whose count (one int64 on the device) is what this rank
    receives; `recv_counts` receives every rank's."""
    return _v_dev("reduce_scatter_v", output, input, count, recv_counts, op_name(op), group, async_op, lowering)


def _v_dev(name: str, output: torch.Tensor, input: torch.Tensor, counts: torch.Tensor,
           recv_counts: torch.Tensor | None, op: str | None, group: Any, async_op: bool, lowering: str) -> Any:
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
    y = _output(output)
    getattr(_ops, f"{name}_dev_out")(input.contiguous(), y, counts, recv, *extra, g, lowering)
    return _written(f"purlin::{name}_dev_out", [(output, y)], [input], async_op)


_C = torch._C


def _plain(*tensors: torch.Tensor) -> bool:
    """Whether torch.ops.purlin's dispatch of `tensors` would reach the eager implementation
    unchanged: plain tensors that need no gradient, no mode, transform or compiler active."""
    # is_compiling first: under torch.compile the rest is not traced.
    if torch.compiler.is_compiling() or _C._len_torch_dispatch_stack() or _C._is_torch_function_mode_enabled() \
            or _C._are_functorch_transforms_active():
        return False
    for t in tensors:
        if type(t) is not torch.Tensor or t.requires_grad:
            return False
    return True


def _differentiated(*tensors: torch.Tensor) -> bool:
    """Whether a call runs as its functional form: under torch.compile, on tensors that need a gradient."""
    return wants_grad(tensors) and torch.is_grad_enabled() and torch.compiler.is_compiling()


def _run(name: str, x: torch.Tensor, y: torch.Tensor, *args) -> None:
    """purlin::NAME_out(x, y, *args), or differentiably, purlin::NAME(x, *args) copied into y's first elements."""
    if _plain(x, y):
        # Eagerly on plain tensors the operator's dispatch would only reach its own implementation.
        run_out(name, x, y, *args)
    elif _differentiated(x, y):
        got = getattr(_ops, name)(x, *args)
        y.view(-1)[:got.numel()].copy_(got)
    else:
        getattr(_ops, f"{name}_out")(x, y, *args)


def _dense(t: torch.Tensor, what: str) -> None:
    check(t.layout is torch.strided and (t.is_cpu or t.is_cuda), f"{what} must be a dense CPU or CUDA tensor")


def _pair(output: torch.Tensor, input: torch.Tensor) -> None:
    _dense(input, "input")
    _dense(output, "output")
    check(output.dtype == input.dtype and output.device == input.device,
          f"output ({output.dtype}, {output.device}) and input ({input.dtype}, {input.device}) must match")


def _listed(tensors: Tensors) -> list[torch.Tensor]:
    return [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)


def _one(tensors: Tensors, world: int, each: int, what: str, other: str) -> torch.Tensor:
    """A list form's world tensors (each of the other side's size) as one flat tensor to run on."""
    if isinstance(tensors, torch.Tensor):
        return tensors
    parts = list(tensors)
    check(len(parts) == world and all(t.numel() == each for t in parts),
          f"a list {what} takes {world} tensors of the {other}'s {each} elements")
    _alike(parts, what)
    return parts[0].new_empty(world * each) if what == "output" else torch.cat([t.reshape(-1) for t in parts])


def _alike(parts: list[torch.Tensor], what: str) -> None:
    for t in parts:
        _dense(t, what)
        check(t.dtype == parts[0].dtype and t.device == parts[0].device,
              f"the {what} tensors must have one dtype and device, got {t.dtype} on {t.device} and "
              f"{parts[0].dtype} on {parts[0].device}")


def _output(out: torch.Tensor) -> torch.Tensor:
    """Where a call writes: `out` itself, or a contiguous copy of it (a V form's
    output may hold more than it receives), copied back after."""
    return out.contiguous()


def _spread(name: str, output: Tensors, y: torch.Tensor, read: list[torch.Tensor], async_op: bool) -> Any:
    """The result of a call that wrote `y`, copied into `output` (a tensor or a list of world tensors)."""
    if isinstance(output, torch.Tensor):
        return _written(name, [(output, y)], read, async_op)
    outs = list(output)
    for o, part in zip(outs, y.view(len(outs), -1)):
        o.copy_(part.view(o.shape))
    return _written(name, [(o, o) for o in outs], read, async_op)


def _written(name: str, pairs: list[tuple[torch.Tensor, torch.Tensor]], read: list[torch.Tensor],
             async_op: bool) -> Any:
    """Each (tensor, what was written for it) copied back where they differ; the
    written tensors marked for autograd; the call's result (its Work with async_op)."""
    for t, y in pairs:
        if y is not t:
            t.copy_(y)
    written = [t for t, _ in pairs]
    not_differentiable(name, written, read)
    if async_op:
        return Work(written)
    return written[0] if len(written) == 1 else written


def _check_v(g: str, collective: str, output: torch.Tensor, input: torch.Tensor, counts: Sequence) -> None:
    """A rank's tensors of a V collective hold at least what this rank moves (its plan extent)."""
    rank = counted(g, counts)
    rows = [list(r) for r in counts] if collective == "all_to_all_v" else list(counts)
    for t, what, need in zip((input, output), ("input", "output"), v_extents(collective, rows, rank)):
        check(t.numel() >= need, f"{what} of rank {rank} must hold {need} elements for these counts, it has "
                                 f"{t.numel()}")


def counted(g: str, counts: Sequence) -> int:
    st = state(g)
    check(len(counts) == st.world, f"counts must have one entry per rank ({st.world}), got {len(counts)}")
    return st.rank


def check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(f"purlin.torch: {message}")
