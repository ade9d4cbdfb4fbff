"""purlin's collectives as torch operators (torch.ops.purlin.*), so that
torch.compile(fullgraph=True) traces them as graph nodes, fake tensors give
their shapes, and their mutations are declared:

    purlin::NAME(Tensor input, ARGS) -> Tensor           a new output
    purlin::NAME_out(Tensor input, Tensor(a!) out, ARGS) into `out`
    purlin::all_reduce_(Tensor(a!) tensor, ARGS)         in place
    purlin::NAME_dev_out(Tensor input, Tensor(a!) out, Tensor counts,
                         Tensor(b!) recv_counts, ARGS)   V forms, counts on the device

ARGS carry the group as its torch group_name, and all_to_all_v's counts
flattened row-major (counts[s][d] at s * world + d). The functional forms
return flat tensors and are differentiable for sums.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from purlin.torch.execute import all_gather, all_reduce, all_to_all, device_counts, reduce_scatter, v_collective
from purlin.torch.groups import GroupState, state


@dataclass(frozen=True)
class _Collective:
    args: tuple[tuple[str, str], ...]  # (schema type, name) after the input, the group among them
    out_elems: Callable[..., int]  # (state, input elements, **args) -> output elements
    run: Callable[..., None]  # (state, flat input, flat output, **args)


def _matrix(st: GroupState, counts: list[int]) -> list[list[int]]:
    w = st.world
    if len(counts) != w * w:
        raise ValueError(f"purlin.torch: all_to_all_v needs world x world = {w * w} counts, got {len(counts)}")
    return [counts[s * w:(s + 1) * w] for s in range(w)]


_RED = (("str", "op"), ("str", "group"), ("bool", "deterministic"), ("str", "lowering"))
_MOVE = (("str", "group"), ("str", "lowering"))
_V_MOVE = (("int[]", "counts"), *_MOVE)

COLLECTIVES = {
    "all_reduce": _Collective(_RED, lambda st, n, **_: n, all_reduce),
    "all_gather": _Collective(_MOVE, lambda st, n, **_: st.world * n, all_gather),
    "reduce_scatter": _Collective(_RED, lambda st, n, **_: n // st.world, reduce_scatter),
    "all_to_all": _Collective(_MOVE, lambda st, n, **_: n, all_to_all),
    "all_gather_v": _Collective(
        _V_MOVE, lambda st, n, counts, **_: sum(counts),
        lambda st, x, y, counts, lowering: v_collective(st, "all_gather_v", x, y, list(counts), None,
                                                                lowering)),
    "reduce_scatter_v": _Collective(
        (("int[]", "counts"), ("str", "op"), *_MOVE), lambda st, n, counts, **_: counts[st.rank],
        lambda st, x, y, counts, op, lowering: v_collective(st, "reduce_scatter_v", x, y, list(counts),
                                                                    op, lowering)),
    "all_to_all_v": _Collective(
        _V_MOVE, lambda st, n, counts, **_: sum(row[st.rank] for row in _matrix(st, counts)),
        lambda st, x, y, counts, lowering: v_collective(st, "all_to_all_v", x, y, _matrix(st, counts),
                                                                None, lowering)),
}

_lib = torch.library.Library("purlin", "DEF")


def _named(c: _Collective, values: tuple) -> tuple[GroupState, dict]:
    kw = {name: v for (_, name), v in zip(c.args, values)}
    return state(kw.pop("group")), kw


def _register(name: str, c: _Collective) -> None:
    args = ", ".join(f"{t} {n}" for t, n in c.args)
    _lib.define(f"{name}(Tensor input, {args}) -> Tensor")
    _lib.define(f"{name}_out(Tensor input, Tensor(a!) out, {args}) -> ()")

    def functional(x: torch.Tensor, *values) -> torch.Tensor:
        st, kw = _named(c, values)
        y = x.new_empty(c.out_elems(st, x.numel(), **kw))
        c.run(st, x.reshape(-1), y, **kw)
        return y

    def out(x: torch.Tensor, y: torch.Tensor, *values) -> None:
        run_out(name, x, y, *values)

    def fake(x: torch.Tensor, *values) -> torch.Tensor:
        st, kw = _named(c, values)
        return x.new_empty(c.out_elems(st, x.numel(), **kw))

    _lib.impl(name, functional, "CompositeExplicitAutograd")
    _lib.impl(f"{name}_out", out, "CompositeExplicitAutograd")
    torch.library.register_fake(f"purlin::{name}", fake, lib=_lib)
    torch.library.register_fake(f"purlin::{name}_out", lambda *a: None, lib=_lib)


for _name, _c in COLLECTIVES.items():
    _register(_name, _c)


def flat(t: torch.Tensor) -> torch.Tensor:
    """`t` as one dimension; a 1-D tensor as it is (a view costs an eager call as much as a launch's tenth)."""
    return t if t.dim() == 1 else t.view(-1)


def run_out(name: str, x: torch.Tensor, y: torch.Tensor, *values) -> None:
    """purlin::NAME_out's implementation: NAME of `x` into `y` (ARGS as its schema orders them)."""
    c = COLLECTIVES[name]
    st, kw = _named(c, values)
    c.run(st, flat(x), flat(y), **kw)

_lib.define("all_reduce_(Tensor(a!) tensor, " + ", ".join(f"{t} {n}" for t, n in _RED) + ") -> ()")


def all_reduce_in_place(x: torch.Tensor, op: str, group: str, deterministic: bool, lowering: str) -> None:
    """purlin::all_reduce_'s implementation."""
    x = flat(x)
    all_reduce(state(group), x, x, op, deterministic, lowering)


_lib.impl("all_reduce_", all_reduce_in_place, "CompositeExplicitAutograd")
torch.library.register_fake("purlin::all_reduce_", lambda *a: None, lib=_lib)

# V forms whose counts are a tensor of this rank's (read on the device): the
# output is a bound the caller sizes; `recv_counts` receives what came here.
DEVICE_COUNTS = {"all_gather_v": (), "reduce_scatter_v": (("str", "op"),), "all_to_all_v": ()}


def _register_device_counts(name: str, extra: tuple[tuple[str, str], ...]) -> None:
    args = (*extra, *_MOVE)
    _lib.define(f"{name}_dev_out(Tensor input, Tensor(a!) out, Tensor counts, Tensor(b!) recv_counts, "
                + ", ".join(f"{t} {n}" for t, n in args) + ") -> ()")

    def run(x: torch.Tensor, y: torch.Tensor, counts: torch.Tensor, recv: torch.Tensor, *values) -> None:
        kw = {n: v for (_, n), v in zip(args, values)}
        device_counts(state(kw["group"]), name, flat(x), flat(y), counts, recv, kw.get("op"), kw["lowering"])

    _lib.impl(f"{name}_dev_out", run, "CompositeExplicitAutograd")
    torch.library.register_fake(f"purlin::{name}_dev_out", lambda *a: None, lib=_lib)


for _name, _extra in DEVICE_COUNTS.items():
    _register_device_counts(_name, _extra)


# -- autograd of the functional forms ------------------------------------------
# The adjoint of each data movement, for sums: an all_reduce's gradient is
# all-reduced, an all_gather's reduce-scattered and back, an all_to_all's
# exchanged back with the counts transposed.


def _adjoint(name: str, grad: torch.Tensor, args: tuple) -> torch.Tensor:
    c = COLLECTIVES[name]
    kw = {n: v for (_, n), v in zip(c.args, args)}
    if kw.get("op", "sum") != "sum":
        raise RuntimeError(f"purlin::{name} with op {kw['op']!r} has no gradient (only sums are differentiable)")
    g, lowering = kw["group"], kw["lowering"]
    ops = torch.ops.purlin
    grad = grad.contiguous()
    if name == "all_reduce":
        return ops.all_reduce(grad, "sum", g, kw["deterministic"], lowering)
    if name == "all_gather":
        return ops.reduce_scatter(grad, "sum", g, False, lowering)
    if name == "reduce_scatter":
        return ops.all_gather(grad, g, lowering)
    if name == "all_to_all":
        return ops.all_to_all(grad, g, lowering)
    if name == "all_gather_v":
        return ops.reduce_scatter_v(grad, kw["counts"], "sum", g, lowering)
    if name == "reduce_scatter_v":
        return ops.all_gather_v(grad, kw["counts"], g, lowering)
    w = state(g).world
    counts = kw["counts"]
    return ops.all_to_all_v(grad, [counts[s * w + d] for d in range(w) for s in range(w)], g, lowering)


def _register_autograd(name: str) -> None:
    def setup_context(ctx, inputs, output) -> None:
        ctx.shape, ctx.args = inputs[0].shape, inputs[1:]

    def backward(ctx, grad):
        g = _adjoint(name, grad, ctx.args)
        # A V input may be longer than what its rank sends: the rest has no gradient.
        rest = ctx.shape.numel() - g.numel()
        g = torch.cat([g, g.new_zeros(rest)]) if rest else g
        return (g.view(ctx.shape), *([None] * len(ctx.args)))

    torch.library.register_autograd(f"purlin::{name}", backward, setup_context=setup_context, lib=_lib)


for _name in COLLECTIVES:
    _register_autograd(_name)


# -- the forms that write into tensors -----------------------------------------
# As torch.distributed's in-place collectives do: the written tensors keep their
# history (a gradient passes through unchanged) and backpropagating warns.


class _NoGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name: str, written: int, *tensors: torch.Tensor):
        ctx.name, ctx.written, ctx.read = name, written, len(tensors) - written
        ctx.mark_dirty(*tensors[:written])
        return tensors[:written]

    @staticmethod
    def backward(ctx, *grads):
        warnings.warn(f"{ctx.name} writes into its tensors and has no gradient: backpropagating through it passes "
                      "the gradient on unchanged (as torch.distributed's in-place collectives do); "
                      "purlin.torch.functional has the differentiable forms", stacklevel=2)
        return (None, None, *grads, *([None] * ctx.read))


def not_differentiable(name: str, written: Sequence[torch.Tensor], read: Sequence[torch.Tensor] = ()) -> None:
    """Eagerly marks the tensors collective `name` wrote (from `read`) as
    torch.distributed marks those of its in-place collectives, where autograd
    records them (under torch.compile the callers run the functional forms)."""
    if not (wants_grad(written) or wants_grad(read)) or not torch.is_grad_enabled() \
            or torch.compiler.is_compiling():
        return
    kept = [t for t in written if not (t.is_leaf and t.requires_grad)]
    if kept:
        _NoGradient.apply(name, len(kept), *kept, *(t for t in read if t.requires_grad
                                                    and all(t is not w for w in written)))


def wants_grad(tensors: Sequence[torch.Tensor]) -> bool:
    for t in tensors:
        if t.requires_grad:
            return True
    return False
