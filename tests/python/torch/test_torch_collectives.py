"""purlin.torch on CPU ranks (gloo processes, the CPU backend): the seven
collectives against torch.distributed, traced by torch.compile with
fullgraph=True, fake-tensor shapes, torch's vocabulary (ReduceOp, async_op
and Work, list forms, strided tensors, autograd of the in-place forms as
c10d's), torch's functional collectives routed to purlin, and every
collective over two simulated nodes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
from process_group import fork_gloo as spawn  # noqa: E402

from purlin.torch.groups import TORCH_OPS, all_gather_single, reduce_scatter_single  # noqa: E402

if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("needs torch.distributed with gloo", allow_module_level=True)



def _kernels(plans) -> set[str]:
    """The collectives of a group's cached communicators (a CPU regime kernel's is its V form)."""
    return {k[2] if k[1] == "regime" else k[1] for k in plans}

def _graphs(then: str = "aot_eager"):
    """A torch.compile backend that keeps the graphs it is given, then compiles
    them with `then` (both functionalize the mutating purlin ops)."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return torch._dynamo.lookup_backend(then)(gm, example_inputs)

    return graphs, backend


def _targets(graphs) -> set[str]:
    """The operators the graphs call, as namespace::name."""
    names = set()
    for g in graphs:
        for n in g.graph.nodes:
            if n.op == "call_function":
                schema = getattr(n.target, "_schema", None)
                names.add(schema.name if schema else getattr(n.target, "_qualified_op_name", str(n.target)))
    return names


def _layer(x: torch.Tensor, weight: torch.Tensor, lib) -> torch.Tensor:
    world = dist.get_world_size()
    h = x @ weight
    lib.all_reduce(h)
    g = h.new_empty(world * h.numel())
    lib.all_gather(g, h.reshape(-1))
    s = h.new_empty(h.numel())
    lib.reduce_scatter(s, g, "max")
    t = torch.empty_like(g)
    lib.all_to_all(t, g)
    return torch.relu(s).sum() + t.sum()


def _model(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    import purlin.torch as pt

    return _layer(x, weight, pt)


class _TorchDistributed:
    """torch.distributed's calls in purlin.torch's shapes: the reference."""

    all_reduce = staticmethod(dist.all_reduce)
    all_gather = staticmethod(all_gather_single)
    all_to_all = staticmethod(dist.all_to_all_single)

    @staticmethod
    def reduce_scatter(out, x, op):
        reduce_scatter_single(out, x, op=TORCH_OPS[op])


def _compiled_model(rank: int, then: str) -> None:
    import purlin.torch as pt
    from purlin.torch.groups import group_name, state

    pt.init()
    torch.manual_seed(rank)
    x, weight = torch.randn(4, 8), torch.randn(8, 6)
    graphs, backend = _graphs(then)
    compiled = torch.compile(_model, fullgraph=True, backend=backend)
    want = _layer(x, weight, _TorchDistributed)
    for _ in range(3):
        torch.testing.assert_close(compiled(x, weight), want)
    torch.testing.assert_close(_model(x, weight), want)
    assert len(graphs) == 1, f"{len(graphs)} graphs: a graph break"
    assert {"purlin::all_reduce_", "purlin::all_gather_out", "purlin::reduce_scatter_out",
            "purlin::all_to_all_out"} <= _targets(graphs), _targets(graphs)
    # On CPU each runs its V form's regime kernel (an all_reduce its all_reduce_v).
    assert _kernels(state(group_name()).plans) == {"all_reduce_v", "all_gather_v", "reduce_scatter_v", "all_to_all_v"}


def _exact_and_v_forms(rank: int) -> None:
    import purlin.torch as pt

    pt.init()
    world = dist.get_world_size()
    torch.manual_seed(10 + rank)
    x = torch.randn(5, 3)
    ref = x.clone()
    dist.all_reduce(ref)
    out = torch.empty_like(x)
    pt.all_reduce(x, out=out)
    # Every rank's reduction has the same bits (purlin sums in one order everywhere).
    gathered = [torch.empty_like(out) for _ in range(world)]
    dist.all_gather(gathered, out)
    assert all(torch.equal(g, gathered[0]) for g in gathered)
    torch.testing.assert_close(out, ref)
    mean = pt.all_reduce(x.clone(), "avg")
    torch.testing.assert_close(mean, ref / world)
    assert pt.all_reduce(torch.ones(3, dtype=torch.bfloat16) * (rank + 1), "avg").tolist() == [(world + 1) / 2] * 3
    y = x.clone()
    assert pt.all_reduce(y, "min") is y
    dist.all_reduce(x, op=dist.ReduceOp.MIN)
    assert torch.equal(y, x)

    counts = [r + 1 for r in range(world)]
    mine = torch.full((counts[rank],), float(rank))
    got = pt.all_gather_v(torch.empty(sum(counts)), mine, counts)
    assert torch.equal(got, torch.cat([torch.full((c,), float(r)) for r, c in enumerate(counts)]))
    summed = pt.reduce_scatter_v(torch.empty(counts[rank]), torch.ones(sum(counts)), counts)
    assert torch.equal(summed, torch.full((counts[rank],), float(world)))
    matrix = [[(s + d) % 3 for d in range(world)] for s in range(world)]
    send = torch.cat([torch.full((matrix[rank][d],), float(100 * rank + d)) for d in range(world)])
    recv = pt.all_to_all_v(torch.empty(sum(row[rank] for row in matrix)), send, matrix)
    assert torch.equal(recv, torch.cat([torch.full((matrix[s][rank],), float(100 * s + rank))
                                        for s in range(world)]))


def _fake_shapes_and_errors(rank: int) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    import purlin.torch as pt
    from purlin.torch.groups import group_name

    pt.init()
    world, g = dist.get_world_size(), group_name()
    ops = torch.ops.purlin
    with FakeTensorMode():
        x = torch.empty(6, dtype=torch.bfloat16)
        assert ops.all_reduce(x, "sum", g, False, "").shape == (6,)
        assert ops.all_gather(x, g, "").shape == (6 * world,)
        assert ops.reduce_scatter(x, "sum", g, False, "").shape == (6 // world,)
        assert ops.all_to_all(x, g, "").shape == (6,)
        assert ops.all_gather_v(x, [2] * world, g, "").shape == (2 * world,)
        assert ops.reduce_scatter_v(x, [rank + 1] * world, "sum", g, "").shape == (rank + 1,)
        assert ops.all_to_all_v(x, [1] * world * world, g, "").shape == (world,)
    with pytest.raises(ValueError, match="output must hold world x input elements"):
        pt.all_gather(torch.empty(3), torch.empty(2))
    with pytest.raises(ValueError, match="must match"):
        pt.all_gather(torch.empty(2 * world, dtype=torch.float64), torch.empty(2))
    with pytest.raises(ValueError, match="must be a dense CPU or CUDA tensor"):
        pt.all_reduce(torch.zeros(4).to_sparse())
    with pytest.raises(ValueError, match=r"unknown reduction 'mean', expected one of sum, .* \(or torch's product"):
        pt.all_reduce(torch.empty(4), "mean")
    with pytest.raises(ValueError, match="purlin has no reduction .*PREMUL_SUM"):
        pt.all_reduce(torch.empty(4), dist._make_nccl_premul_sum(2.0))
    with pytest.raises(ValueError, match="a list output takes 2 tensors of the input's 3 elements"):
        pt.all_gather([torch.empty(3)], torch.empty(3))
    with pytest.raises(ValueError, match="two tensors or two lists"):
        pt.all_to_all([torch.empty(2)] * world, torch.empty(2 * world))
    with pytest.raises(RuntimeError, match="is not bound"):
        pt.all_reduce(torch.empty(4), group=dist.new_group(list(range(world))))
    with pytest.raises(TypeError, match="does not move torch.complex64"):
        pt.all_reduce(torch.empty(4, dtype=torch.complex64))


def _torch_vocabulary(rank: int) -> None:
    import purlin.torch as pt
    from purlin.torch import functional as F

    pt.init()
    w, R = dist.get_world_size(), dist.ReduceOp
    x = ((torch.arange(6 * w) * (rank + 2)) % 5 - 1 + rank).float()  # small integers: exact in any order
    # A ReduceOp, or torch's spelling, wherever purlin.torch takes an op.
    for op, spelt in ((R.SUM, "sum"), (R.PRODUCT, "product"), (R.MIN, "min"), (R.MAX, "max"), (R.AVG, "avg")):
        ref = x.clone()
        dist.all_reduce(ref, op)
        for given in (op, spelt, dist.ReduceOp(op)):
            assert torch.equal(pt.all_reduce(x.clone(), given), ref), (op, given)
        assert torch.equal(F.all_reduce(x, op), ref)
        part = torch.empty(6)
        reduce_scatter_single(part, x, op=op)
        assert torch.equal(pt.reduce_scatter(torch.empty(6), x, op), part)
        assert torch.equal(F.reduce_scatter(x, spelt), part)
        assert torch.equal(pt.reduce_scatter_v(torch.empty(6), x, [6] * w, op), part)
    ints = x.int()
    for op, spelt in ((R.BAND, "band"), (R.BOR, "bor"), (R.BXOR, "bxor")):
        ref = ints.clone()
        dist.all_reduce(ref, op)
        for given in (op, spelt):
            assert torch.equal(pt.all_reduce(ints.clone(), given), ref), given

    # async_op: a Work, done when the call returns (CPU), its future holding what was written.
    ref = x.clone()
    dist.all_reduce(ref)
    y = x.clone()
    work = pt.all_reduce(y, async_op=True)
    assert isinstance(work, dist.Work) and work.is_completed() and work.wait()
    assert work.get_future().wait()[0] is y and work.result() == [y] and torch.equal(y, ref)
    out = torch.empty(w * x.numel())
    work = pt.all_gather(out, x, async_op=True)
    work.wait()
    ref = torch.empty_like(out)
    all_gather_single(ref, x)
    assert torch.equal(out, ref)

    # The list forms, against torch.distributed's.
    parts, want = [torch.empty(2, 3) for _ in range(w)], [torch.empty(2, 3) for _ in range(w)]
    dist.all_gather(want, x[:6].view(2, 3))
    assert pt.all_gather(parts, x[:6].view(2, 3)) == parts and all(map(torch.equal, parts, want))
    chunks = list(x.view(w, 6).unbind())
    want = torch.empty(6)
    dist.reduce_scatter(want, chunks, op=R.MAX)
    assert torch.equal(pt.reduce_scatter(torch.empty(6), chunks, "max"), want)
    for sizes in ([2] * w, [(rank + d) % 3 for d in range(w)]):  # even, then uneven (exchanged on the host)
        dist.all_to_all_single(counts := torch.empty(w, dtype=torch.int64), torch.tensor(sizes))
        receive = [torch.empty(int(c)) for c in counts]
        sends = [torch.full((c,), 10.0 * rank + d) for d, c in enumerate(sizes)]
        want = torch.empty(int(counts.sum()))  # gloo's list all_to_all takes one size only
        dist.all_to_all_single(want, torch.cat(sends), counts.tolist(), sizes)
        assert pt.all_to_all(receive, sends) == receive and torch.equal(torch.cat(receive), want), sizes

    # Strided tensors: copied to contiguous ones and back, as gloo and the functional collectives do.
    base = x.view(w, 6).clone()
    ref = base.t().contiguous()
    dist.all_reduce(ref)
    assert torch.equal(pt.all_reduce(base.t()), ref) and torch.equal(base.t(), ref)
    wide = torch.zeros(3, 2 * w).t()  # a strided output
    pt.all_gather(wide, x[:6].view(3, 2).t())
    ref = torch.empty(2 * w, 3)
    all_gather_single(ref, x[:6].view(3, 2).t().contiguous())
    assert torch.equal(wide, ref)
    counts = [r + 1 for r in range(w)]
    bound = torch.full((2, sum(counts) + 1), -1.0)[0]  # strided, longer than what comes: the rest stays
    pt.all_gather_v(bound, torch.full((counts[rank],), float(rank)), counts)
    assert bound.tolist() == [float(r) for r, c in enumerate(counts) for _ in range(c)] + [-1.0]


def _in_place_gradients(rank: int) -> None:
    import warnings

    import purlin.torch as pt

    pt.init()
    scale = float(rank + 2)

    def through(all_reduce):
        def loss(a):
            h = a * scale
            all_reduce(h)
            return (h * h).sum()
        return loss

    def ours(h):
        pt.all_reduce(h)

    # Eagerly, as c10d: the gradient passes through unchanged, and backward warns.
    grads = {}
    for name, fn in (("c10d", dist.all_reduce), ("purlin", ours)):
        a = torch.ones(3, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            through(fn)(a).backward()
        assert any("has no gradient" in str(c.message) or "autograd kernel was not registered" in str(c.message)
                   for c in caught), (name, [str(c.message) for c in caught])
        grads[name] = a.grad
    assert torch.equal(grads["purlin"], grads["c10d"])
    # Compiled, as torch.compile runs c10d's: the functional all_reduce, whose gradient is all-reduced.
    for name, fn in (("c10d", dist.all_reduce), ("purlin", ours)):
        a = torch.ones(3, requires_grad=True)
        torch.compile(through(fn), fullgraph=True, backend="aot_eager")(a).backward()
        grads[name, "compiled"] = a.grad
    assert torch.equal(grads["purlin", "compiled"], grads["c10d", "compiled"])
    assert not torch.equal(grads["c10d", "compiled"], grads["c10d"])
    # The out forms: the output carries the input's history no further, with the warning.
    x = torch.ones(2, requires_grad=True)
    out = pt.all_gather(torch.empty(2 * dist.get_world_size()), x * 2)
    with pytest.warns(UserWarning, match="purlin::all_gather_out writes into its tensors and has no gradient"):
        out.sum().backward()
    assert x.grad is None
    # No gradient wanted: nothing recorded.
    with torch.no_grad():
        h = torch.ones(3, requires_grad=True) * 1
    assert pt.all_reduce(h).grad_fn is None


def _functional_collectives_routed(rank: int) -> None:
    import torch.distributed._functional_collectives as funcol

    import purlin.torch as pt
    from purlin.torch.groups import state

    world = dist.get_world_size()
    pg = pt.route()
    torch.manual_seed(20 + rank)
    x = torch.randn(world * 4)

    def step(x):
        a = funcol.all_reduce(x, "sum", pg)
        b = funcol.all_gather_tensor(a, 0, pg)
        c = funcol.reduce_scatter_tensor(b, "sum", 0, pg)
        d = funcol.all_to_all_single(c, None, None, pg)
        return a, b, c, d

    def reference(x):
        a = x.clone()
        dist.all_reduce(a)
        b = torch.empty(world * a.numel())
        all_gather_single(b, a)
        c = torch.empty(a.numel())
        reduce_scatter_single(c, b)
        d = torch.empty_like(c)
        dist.all_to_all_single(d, c)
        return a, b, c, d

    graphs, backend = _graphs()
    want = reference(x)
    for got in (step(x), torch.compile(step, fullgraph=True, backend=backend)(x)):
        for g, w in zip(got, want):
            torch.testing.assert_close(torch.ops._c10d_functional.wait_tensor(g), w)
    assert {"_c10d_functional::all_reduce", "_c10d_functional::all_gather_into_tensor",
            "_c10d_functional::reduce_scatter_tensor", "_c10d_functional::all_to_all_single"} <= _targets(graphs), \
        _targets(graphs)
    assert _kernels(state(dist.group.WORLD.group_name).plans) == {"all_reduce_v", "all_gather_v", "reduce_scatter_v",
                                                                  "all_to_all_v"}
    # torch's AVG runs on purlin; what purlin does not run (broadcast, an
    # average of integers) goes to the group underneath.
    z = torch.full((2,), float(rank))
    dist.all_reduce(z, op=dist.ReduceOp.AVG, group=pg)
    assert torch.equal(z, torch.full((2,), (world - 1) / 2))
    assert "avg" in {k[4] if k[1] == "regime" else k[3] for k in state(dist.group.WORLD.group_name).plans}
    y = torch.full((3,), float(rank))
    dist.broadcast(y, src=1, group=pg)
    assert torch.equal(y, torch.ones(3))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):  # gloo's answer
        dist.all_reduce(torch.zeros(2, dtype=torch.int64), op=dist.ReduceOp.AVG, group=pg)


def _gradients(rank: int) -> None:
    import purlin.torch as pt
    from purlin.torch import functional as F

    pt.init()
    world = dist.get_world_size()
    torch.manual_seed(50 + rank)
    x = torch.randn(2 * world, 3, requires_grad=True)
    weights = {k: torch.randn(shape) for k, shape in
               (("ar", (2 * world, 3)), ("ag", (2 * world * world, 3)), ("rs", (2, 3)), ("a2a", (2 * world, 3)))}

    def loss(x):
        return ((F.all_reduce(x) * weights["ar"]).sum() + (F.all_gather(x) * weights["ag"]).sum()
                + (F.reduce_scatter(x) * weights["rs"]).sum() + (F.all_to_all(x) * weights["a2a"]).sum())

    # Each collective's gradient is its adjoint applied to the loss's weights, on torch.distributed.
    want = weights["ar"].clone()
    dist.all_reduce(want)
    part = torch.empty(2 * world, 3)
    reduce_scatter_single(part, weights["ag"])
    want += part
    whole = torch.empty(2 * world, 3)
    all_gather_single(whole, weights["rs"])
    want += whole
    back = torch.empty(2 * world, 3)
    dist.all_to_all_single(back, weights["a2a"])
    want += back
    for fn in (loss, torch.compile(loss, fullgraph=True, backend="aot_eager")):
        x.grad = None
        fn(x).backward()
        torch.testing.assert_close(x.grad, want)

    # The V forms' adjoints, against the forward V collectives (checked above).
    counts = [r + 1 for r in range(world)]
    v = torch.randn(counts[rank] + 2, requires_grad=True)  # longer than it sends
    g = torch.randn(sum(counts))
    (F.all_gather_v(v, counts) * g).sum().backward()
    want_v = torch.zeros(counts[rank] + 2)
    pt.reduce_scatter_v(want_v[:counts[rank]], g, counts)
    torch.testing.assert_close(v.grad, want_v)
    matrix = [[(s + 2 * d) % 3 + 1 for d in range(world)] for s in range(world)]
    u = torch.randn(sum(matrix[rank]), requires_grad=True)
    h = torch.randn(sum(row[rank] for row in matrix))
    (F.all_to_all_v(u, matrix) * h).sum().backward()
    transposed = [[matrix[d][s] for d in range(world)] for s in range(world)]
    torch.testing.assert_close(u.grad, pt.all_to_all_v(torch.empty(sum(matrix[rank])), h, transposed))
    with pytest.raises(RuntimeError, match="op 'max' has no gradient"):
        F.all_reduce(x, "max").sum().backward()


def _two_nodes(rank: int) -> None:
    import purlin.torch as pt
    from purlin.torch.groups import group_name, state

    pt.init(ranks_per_node=2)
    st = state(group_name())
    assert (st.nodes.count, st.nodes.local, st.nodes.intra.world) == (2, 2, 2)
    world = dist.get_world_size()
    torch.manual_seed(30 + rank)
    for n in (6, 7):  # 7: the intra-node shards are padded
        x = torch.randint(-50, 50, (n,), dtype=torch.int32)
        ref = x.clone()
        dist.all_reduce(ref)
        assert torch.equal(pt.all_reduce(x.clone()), ref)
        g = pt.all_gather(torch.empty(world * n, dtype=torch.int32), x)
        ref_g = torch.empty_like(g)
        all_gather_single(ref_g, x)
        assert torch.equal(g, ref_g)
        big = torch.randint(-50, 50, (world * n,), dtype=torch.int32)
        s = pt.reduce_scatter(torch.empty(n, dtype=torch.int32), big, "max")
        ref_s = torch.empty_like(s)
        reduce_scatter_single(ref_s, big, op=dist.ReduceOp.MAX)
        assert torch.equal(s, ref_s)
        # An average over both nodes: each node's, summed across nodes, halved.
        f = torch.randint(-8, 9, (n,)).float() / 4
        total = f.clone()
        dist.all_reduce(total)
        assert torch.equal(pt.all_reduce(f.clone(), "avg"), total / world)
        ref_a = torch.empty(n)
        reduce_scatter_single(ref_a, big.float())
        assert torch.equal(pt.reduce_scatter(torch.empty(n), big.float(), "avg"), ref_a / world)
    # all_to_all and the V forms: purlin within each node, torch.distributed between them.
    x = torch.arange(3 * world, dtype=torch.float32) + 100 * rank
    ref = torch.empty_like(x)
    dist.all_to_all_single(ref, x)
    assert torch.equal(pt.all_to_all(torch.empty_like(x), x), ref)
    counts = [(2 * r + 1) % 4 for r in range(world)]  # a zero among them
    bound = torch.full((sum(counts) + 2,), -1.0)
    pt.all_gather_v(bound, torch.full((counts[rank],), float(rank)), counts)
    assert bound.tolist() == [float(r) for r, c in enumerate(counts) for _ in range(c)] + [-1.0] * 2
    for op in ("sum", "max", "avg"):
        big = (torch.arange(sum(counts)) * (rank + 1) % 7).float()
        ref = big.clone()
        dist.all_reduce(ref, op=TORCH_OPS[op])
        ref = torch.split(ref, counts)[rank]
        assert torch.equal(pt.reduce_scatter_v(torch.empty(counts[rank]), big, counts, op), ref), op
    matrix = [[(s * 3 + d) % 4 for d in range(world)] for s in range(world)]
    send = torch.cat([torch.full((matrix[rank][d],), float(10 * rank + d)) for d in range(world)])
    column = [matrix[s][rank] for s in range(world)]
    ref = torch.empty(sum(column))
    dist.all_to_all_single(ref, send, column, matrix[rank])
    assert torch.equal(pt.all_to_all_v(torch.empty(sum(column)), send, matrix), ref)
    # Counts as tensors: gathered on the host across nodes, then the same.
    recv = torch.empty(world, dtype=torch.int64)
    got = pt.all_to_all_v_dev(torch.full((16,), -1.0), send, torch.tensor(matrix[rank]), recv)
    assert recv.tolist() == column and torch.equal(got[:ref.numel()], ref)
    assert _kernels(st.nodes.intra.plans) == {"all_gather_v", "reduce_scatter_v", "all_to_all_v"}
    # A routed group over the nodes runs them so too.
    pg = pt.route(ranks_per_node=2)
    y = torch.empty(2 * world, 3)
    dist.all_to_all_single(y, torch.arange(6 * world).view(2 * world, 3).float() + rank, group=pg)
    ref = torch.empty_like(y)
    dist.all_to_all_single(ref, torch.arange(6 * world).view(2 * world, 3).float() + rank)
    assert torch.equal(y, ref)
    assert "all_to_all_v" in _kernels(state(group_name(pg)).nodes.intra.plans)


def _device_counts(rank: int) -> None:
    import purlin.torch as pt
    from purlin.runtime.backend import BadCountsError

    pt.init()
    world, bound = dist.get_world_size(), 12

    def exchange(send: torch.Tensor, counts: torch.Tensor):
        out, recv = torch.full((bound,), -1.0), torch.empty(world, dtype=torch.int64)
        pt.all_to_all_v_dev(out, send, counts, recv)
        return out, recv

    compiled = torch.compile(exchange, fullgraph=True, backend=(graphs := _graphs())[1])
    for call in range(4):
        # MoE-style: this rank's sends per rank known only as a tensor, changing every call, zeros included.
        g = torch.Generator().manual_seed(100 * call + rank)
        counts = torch.randint(0, 4, (world,), generator=g) * (torch.arange(world) != (rank + call) % world)
        send = torch.randn(bound, generator=g)
        want_recv = torch.empty(world, dtype=torch.int64)
        dist.all_to_all_single(want_recv, counts)
        want = torch.empty(int(want_recv.sum()))
        dist.all_to_all_single(want, send[: int(counts.sum())], want_recv.tolist(), counts.tolist())
        for run in (exchange, compiled):
            out, recv = run(send, counts)
            assert torch.equal(recv, want_recv) and torch.equal(out[: want.numel()], want)
            assert (out[want.numel():] == -1).all(), "wrote past what the counts give"
    assert len(graphs[0]) == 1 and "purlin::all_to_all_v_dev_out" in _targets(graphs[0])

    mine = torch.full((bound,), float(rank))
    count = torch.tensor([rank + 1])
    every = torch.empty(world, dtype=torch.int64)
    got = pt.all_gather_v_dev(torch.zeros(bound), mine, count, every)
    assert every.tolist() == [r + 1 for r in range(world)]
    assert torch.equal(got[: sum(every.tolist())], torch.cat([torch.full((r + 1,), float(r)) for r in range(world)]))
    summed = pt.reduce_scatter_v_dev(torch.zeros(bound), torch.ones(bound), count, "sum", every)
    assert torch.equal(summed[: rank + 1], torch.full((rank + 1,), float(world)))

    too_many = torch.full((world,), bound // world + 1) if rank == 0 else torch.zeros(world, dtype=torch.int64)
    with pytest.raises(BadCountsError, match="rank 0's counts need 15 input elements, the buffers hold 12"):
        pt.all_to_all_v_dev(torch.empty(bound), torch.empty(bound), too_many)
    with pytest.raises(ValueError, match="counts must be a contiguous int64 tensor of 3 elements"):
        pt.all_to_all_v_dev(torch.empty(bound), torch.empty(bound), torch.zeros(world, dtype=torch.int32))


# Inductor (torch.compile's default) generates and builds C++: once, at world 2.
@pytest.mark.parametrize("world, then", [(2, "inductor"), (3, "aot_eager")])
def test_a_model_calling_purlin_compiles_with_fullgraph_and_matches_torch(world, then):
    spawn(world, _compiled_model, then)


@pytest.mark.parametrize("world", [3])
def test_out_in_place_and_v_forms_match(world):
    spawn(world, _exact_and_v_forms)


def test_fake_tensors_give_shapes_and_bad_calls_are_errors():
    spawn(2, _fake_shapes_and_errors)


def test_functional_forms_have_the_adjoint_collectives_as_gradients():
    spawn(3, _gradients)


def test_reduce_ops_async_work_list_forms_and_strided_tensors_as_torch_distributed():
    spawn(3, _torch_vocabulary)


def test_in_place_forms_under_autograd_as_c10d_eager_and_compiled():
    spawn(2, _in_place_gradients)


def test_functional_collectives_of_a_routed_group_run_on_purlin():
    spawn(2, _functional_collectives_routed)


def test_hierarchical_collectives_on_two_simulated_nodes_match_torch_distributed():
    spawn(4, _two_nodes)


def test_device_counts_forms_match_torch_distributed_and_compile_with_fullgraph():
    spawn(3, _device_counts)
