"""A purlin process group (pt.route(), or backend "purlin") against the gloo
group underneath: every torch.distributed collective and functional
collective gives the same result, or the same error, on both, and runs on
purlin exactly where purlin runs it; DTensor's defaults (distribute_tensor,
parallelize_module, init_device_mesh with backend "purlin") run unchanged,
eager and compiled with fullgraph, and equal the same program on gloo."""

from __future__ import annotations

import contextlib
import re
import time

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.distributed._functional_collectives as funcol  # noqa: E402
from process_group import fork_gloo, run_group  # noqa: E402

import purlin.torch  # noqa: E402, F401 - registers backend "purlin"

if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("needs torch.distributed with gloo", allow_module_level=True)

R = dist.ReduceOp


def _values(rank: int, shape, dtype=torch.float32, salt: int = 0) -> torch.Tensor:
    """Small integers (exact in every dtype and under any order of summing), different on every rank."""
    n = torch.Size(shape).numel()
    return ((torch.arange(n) * (rank + 2) + 3 * salt) % 7 - 2 + rank).to(dtype).view(shape)


def _ran(fn):
    """fn's result: what a call wrote or returned, or its error as (type, first line without c10's
    "[rankN]:[time and place] " prefix)."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the errors are what is compared
        return type(e).__name__, re.sub(r"^\[rank\d+\]:\[[^\]]*\] ", "", str(e).splitlines()[0])


def _into(call, *tensors):
    """Runs call(*tensors) (a torch.distributed call writing into them) and gives the tensors."""
    def run():
        work = call(*tensors)
        if isinstance(work, dist.Work):
            assert work.wait()
        return tensors
    return run


def _cases(rank: int, w: int):
    """(name, the collective purlin runs for it or None, call(group) -> what it produced)."""
    v = lambda *shape, dtype=torch.float32, salt=0: _values(rank, shape, dtype, salt)  # noqa: E731
    cases = []

    def case(name, runs, call):
        cases.append((name, runs, call))

    for op in (R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR):
        floating = op not in (R.BAND, R.BOR, R.BXOR)
        case(f"all_reduce {op.name} float32", "all_reduce" if floating else None,
             lambda g, op=op: _into(lambda t: dist.all_reduce(t, op, g), v(6))())
        case(f"all_reduce {op.name} int32", None if op == R.AVG else "all_reduce",
             lambda g, op=op: _into(lambda t: dist.all_reduce(t, op, g), v(6, dtype=torch.int32))())
    case("all_reduce bfloat16 2-D", "all_reduce", lambda g: _into(lambda t: dist.all_reduce(t, group=g),
                                                                  v(3, 4, dtype=torch.bfloat16))())
    case("all_reduce complex64 (torch views it as real)", "all_reduce",
         lambda g: _into(lambda t: dist.all_reduce(t, group=g), torch.complex(v(4), v(4, salt=1)))())
    case("all_reduce strided", None, lambda g: _into(lambda t: dist.all_reduce(t, group=g), v(4, 3).t())())
    case("all_reduce empty", None, lambda g: _into(lambda t: dist.all_reduce(t, group=g), v(0))())
    case("all_reduce premul_sum", None,
         lambda g: _into(lambda t: dist.all_reduce(t, dist._make_nccl_premul_sum(2.0), g), v(4))())
    case("all_reduce async_op", "all_reduce", lambda g: _into(lambda t: dist.all_reduce(t, group=g, async_op=True),
                                                              v(5))())
    case("all_reduce_coalesced", "all_reduce",
         lambda g: _into(lambda a, b: dist.all_reduce_coalesced([a, b], group=g), v(3), v(2, 2, salt=1))())

    case("all_gather into a list", "all_gather",
         lambda g: _into(lambda *ts: dist.all_gather(list(ts), v(2, 2), group=g), *torch.zeros(w, 2, 2))())
    case("all_gather into a list, async_op", "all_gather",
         lambda g: _into(lambda *ts: dist.all_gather(list(ts), v(3), group=g, async_op=True), *torch.zeros(w, 3))())
    case("all_gather into a list of other sizes", None,
         lambda g: _into(lambda *ts: dist.all_gather(list(ts), v(rank + 1), group=g),
                         *[torch.zeros(r + 1) for r in range(w)])())
    case("all_gather_into_tensor", "all_gather",
         lambda g: _into(lambda y: dist.all_gather_into_tensor(y, v(4), group=g), torch.zeros(4 * w))())
    case("all_gather_into_tensor 2-D, async_op", "all_gather",
         lambda g: _into(lambda y: dist.all_gather_into_tensor(y, v(2, 3), group=g, async_op=True),
                         torch.zeros(2 * w, 3))())
    case("all_gather_into_tensor strided", None,
         lambda g: _into(lambda y: dist.all_gather_into_tensor(y, v(3, 2).t(), group=g), torch.zeros(2 * w, 3))())
    case("all_gather_into_tensor too small", None,
         lambda g: _into(lambda y: dist.all_gather_into_tensor(y, v(4), group=g), torch.zeros(4))())
    case("all_gather_single", "all_gather",
         lambda g: _into(lambda y: dist.all_gather_single(y, v(2), group=g), torch.zeros(2 * w))())
    case("all_gather_coalesced", "all_gather",
         lambda g: _into(lambda *ts: dist.all_gather_coalesced([list(ts[2 * r:2 * r + 2]) for r in range(w)],
                                                                [v(2), v(3, salt=1)], group=g),
                         *[torch.zeros(n) for _ in range(w) for n in (2, 3)])())

    case("reduce_scatter from a list", "reduce_scatter",
         lambda g: _into(lambda y: dist.reduce_scatter(y, list(v(w, 2).unbind()), group=g), torch.zeros(2))())
    for op in (R.SUM, R.MAX, R.AVG):
        case(f"reduce_scatter_tensor {op.name}", "reduce_scatter",
             lambda g, op=op: _into(lambda y: dist.reduce_scatter_tensor(y, v(2 * w, 2), op, g), torch.zeros(2, 2))())
    case("reduce_scatter_tensor AVG int32", None,
         lambda g: _into(lambda y: dist.reduce_scatter_tensor(y, v(2 * w, dtype=torch.int32), R.AVG, g),
                         torch.zeros(2, dtype=torch.int32))())
    case("reduce_scatter_tensor of the wrong size", None,
         lambda g: _into(lambda y: dist.reduce_scatter_tensor(y, v(2 * w + 1), group=g), torch.zeros(2))())
    case("reduce_scatter_single, async_op", "reduce_scatter",
         lambda g: _into(lambda y: dist.reduce_scatter_single(y, v(3 * w), group=g, async_op=True),
                         torch.zeros(3))())

    case("all_to_all_single", "all_to_all",
         lambda g: _into(lambda y: dist.all_to_all_single(y, v(2 * w), group=g), torch.zeros(2 * w))())
    case("all_to_all_single 2-D, even splits", "all_to_all",
         lambda g: _into(lambda y: dist.all_to_all_single(y, v(w, 3), [1] * w, [1] * w, group=g),
                         torch.zeros(w, 3))())
    sends = [(rank + d) % 3 for d in range(w)]
    receives = [(s + rank) % 3 for s in range(w)]
    case("all_to_all_single, uneven splits", None,
         lambda g: _into(lambda y: dist.all_to_all_single(y, v(sum(sends), 2), receives, sends, group=g),
                         torch.zeros(sum(receives), 2))())
    case("all_to_all_single, rows not divisible by the world", None,
         lambda g: _into(lambda y: dist.all_to_all_single(y, v(w + 1, 2), group=g), torch.zeros(w + 1, 2))())
    case("all_to_all_single strided", None,
         lambda g: _into(lambda y: dist.all_to_all_single(y, v(2, w).t(), group=g), torch.zeros(w, 2))())
    case("all_to_all of lists", "all_to_all",
         lambda g: _into(lambda *ys: dist.all_to_all(list(ys), list(v(w, 2, 2).unbind()), group=g),
                         *torch.zeros(w, 2, 2))())
    case("all_to_all of lists, uneven", None,
         lambda g: _into(lambda *ys: dist.all_to_all(list(ys), [v(c) for c in sends], group=g),
                         *[torch.zeros(c) for c in receives])())

    case("broadcast", None, lambda g: _into(lambda t: dist.broadcast(t, 1, g), v(3))())
    case("reduce", None, lambda g: _into(lambda t: dist.reduce(t, 1, R.MAX, g), v(3))())
    case("gather", None, lambda g: _into(lambda *ts: dist.gather(v(2), list(ts) if rank == 0 else None, 0, g),
                                         *torch.zeros(w, 2))())
    case("scatter", None, lambda g: _into(lambda y: dist.scatter(y, list(v(w, 2).unbind()) if rank == 1 else None,
                                                                 1, g), torch.zeros(2))())
    case("barrier", None, lambda g: dist.barrier(g))
    case("send and recv", None,
         lambda g: _into(lambda t: dist.send(t, 1, g) if rank == 0 else dist.recv(t, 0, g) if rank == 1 else None,
                         v(3))())
    case("recv from any source", None,
         lambda g: _into(lambda t: dist.send(t, 2, g) if rank == 1 else (rank == 2 and dist.recv(t, None, g)),
                         v(3))())
    case("batch_isend_irecv", None, lambda g: _into(lambda y: [work.wait() for work in dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, v(2), (rank + 1) % w, g), dist.P2POp(dist.irecv, y, (rank - 1) % w, g)])],
        torch.zeros(2))())
    case("all_gather_object (a list all_gather of sizes, then of bytes)", "all_gather",
         lambda g: (lambda out: (dist.all_gather_object(out, {"rank": rank}, g), out)[1])([None] * w))
    case("broadcast_object_list", None,
         lambda g: (lambda objs: (dist.broadcast_object_list(objs, 2, g), objs)[1])([rank, "x" * rank]))

    case("funcol all_reduce", "all_reduce", lambda g: funcol.all_reduce(v(4), "sum", g))
    case("funcol all_reduce avg", "all_reduce", lambda g: funcol.all_reduce(v(4), "avg", g))
    case("funcol all_reduce_coalesced", "all_reduce",
         lambda g: funcol.all_reduce_coalesced([v(2), v(3, salt=1)], "max", g))
    case("funcol all_gather_tensor", "all_gather", lambda g: funcol.all_gather_tensor(v(2, 3), 0, g))
    case("funcol all_gather_tensor along dimension 1", "all_gather",
         lambda g: funcol.all_gather_tensor(v(2, 3), 1, g))
    case("funcol all_gather_into_tensor_coalesced", "all_gather",
         lambda g: funcol.all_gather_into_tensor_coalesced([v(2), v(3, salt=1)], g))
    case("funcol reduce_scatter_tensor", "reduce_scatter",
         lambda g: funcol.reduce_scatter_tensor(v(2 * w, 2), "sum", 0, g))
    case("funcol reduce_scatter_tensor_coalesced", "reduce_scatter",
         lambda g: funcol.reduce_scatter_tensor_coalesced([v(w), v(2 * w, salt=1)], "sum", [0, 0], g))
    case("funcol all_to_all_single 2-D", "all_to_all", lambda g: funcol.all_to_all_single(v(w, 2), None, None, g))
    case("funcol all_to_all_single uneven", None,
         lambda g: funcol.all_to_all_single(v(sum(sends)), receives, sends, g))
    case("funcol broadcast", None, lambda g: funcol.broadcast(v(3), 2, g))
    case("funcol permute_tensor", None, lambda g: funcol.permute_tensor(v(3), [(r + 1) % w for r in range(w)], g))
    return cases


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        b = funcol.wait_tensor(b) if isinstance(b, funcol.AsyncCollectiveTensor) else b
        a = funcol.wait_tensor(a) if isinstance(a, funcol.AsyncCollectiveTensor) else a
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@contextlib.contextmanager
def _purlin_calls():
    """The collectives purlin runs meanwhile, one entry a call."""
    from purlin.torch.groups import GroupState

    ran: list[str] = []
    communicator, run_sized = GroupState.communicator, GroupState.run_sized

    def spied(self, device, collective, *args, **kwargs):
        ran.append(collective)
        return communicator(self, device, collective, *args, **kwargs)

    def spied_sized(self, called, collective, *args, **kwargs):
        # A CPU all_reduce runs as two V collectives, its reduce_scatter_v and its all_gather_v: one call.
        if not (called[0] == "all_reduce" and collective == "all_gather_v"):
            ran.append(called[0])
        return run_sized(self, called, collective, *args, **kwargs)

    GroupState.communicator, GroupState.run_sized = spied, spied_sized
    try:
        yield ran
    finally:
        GroupState.communicator, GroupState.run_sized = communicator, run_sized


def _every_collective(rank: int, make: str) -> None:
    import purlin.torch as pt

    w = dist.get_world_size()
    pg = pt.route() if make == "route" else dist.new_group(list(range(w)), backend="purlin")
    with _purlin_calls() as ran:
        for name, runs, call in _cases(rank, w):
            want = _ran(lambda: call(dist.group.WORLD))
            assert not ran, f"{name}: purlin ran on the gloo group"
            got = _ran(lambda: call(pg))
            assert _same(want, got), f"{name}: gloo gave {want}, the purlin group {got}"
            assert set(ran) == ({runs} if runs else set()), f"{name}: expected purlin to run {runs}, it ran {ran}"
            ran.clear()
    # torch itself refuses a monitored_barrier on any backend not named gloo.
    dist.monitored_barrier(dist.group.WORLD)
    with pytest.raises(ValueError, match="only implemented for GLOO"):
        dist.monitored_barrier(pg)


@pytest.mark.parametrize("make", ["route", "backend"])
def test_every_collective_of_a_purlin_group_answers_as_the_gloo_group_does(make):
    fork_gloo(3, _every_collective, make)


def _plain(t: torch.Tensor) -> torch.Tensor:
    return (t.wait() if isinstance(t, funcol.AsyncCollectiveTensor) else t).detach().clone()


def _mlp(rank: int, backend: str, path: str) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    w = dist.get_world_size()
    # One mesh a process: DTensor takes meshes of one shape for one (it caches by mesh equality).
    mesh = init_device_mesh("cpu", (w,), backend_override={0: backend})
    assert dist.get_backend(mesh.get_group()) == backend
    # Sequence parallel: activations sharded by rows between the layers (all_gather and reduce_scatter).
    plans = {"tensor parallel": {"0": ColwiseParallel(), "2": RowwiseParallel()},
             "sequence parallel": {"0": ColwiseParallel(input_layouts=Shard(0)),
                                   "2": RowwiseParallel(output_layouts=Shard(0))}}
    torch.manual_seed(0)
    x = torch.randn(4 * w, 8)
    results = {}
    for plan_name, plan in plans.items():
        for compiled in (False, True):
            torch.manual_seed(1)
            model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8))
            parallelize_module(model, mesh, plan)
            # Inductor (torch.compile's default) for one, AOT autograd alone for the other: time.
            step = torch.compile(model, fullgraph=True, backend="inductor" if "tensor" in plan_name else "aot_eager") \
                if compiled else model
            inp = distribute_tensor(x, mesh, [Shard(0)]).to_local() if "sequence" in plan_name else x
            inp = inp.detach().requires_grad_()
            with _purlin_calls() as ran:
                y = step(inp)
                y.sum().backward()
            # Tensor parallel sums the row-parallel layer's outputs and the column-parallel one's input
            # gradients; sequence parallel gathers and scatters instead, and their adjoints backward.
            if backend == "purlin":
                want = ["all_reduce"] * 2 if "tensor" in plan_name else ["all_gather", "reduce_scatter"] * 2
                assert sorted(ran) == sorted(want), (plan_name, compiled, ran)
            results[plan_name, compiled] = [_plain(t) for t in
                                            (y, inp.grad, *(p.grad.full_tensor() for p in model.parameters()))]
    torch.save(results, f"{path}/{backend}-{rank}.pt")


def test_dtensor_tensor_and_sequence_parallel_mlps_on_purlin_equal_gloo_eager_and_compiled(tmp_path):
    world = 2
    for backend in ("gloo", "purlin"):
        fork_gloo(world, _mlp, backend, str(tmp_path))
    for rank in range(world):
        want, got = (torch.load(tmp_path / f"{b}-{rank}.pt") for b in ("gloo", "purlin"))
        for key, tensors in got.items():
            for a, b in zip(tensors, want[key]):
                torch.testing.assert_close(a, b, msg=lambda m: f"rank {rank}, {key}: {m}")
            for a, b in zip(tensors, want[key[0], False]):
                torch.testing.assert_close(a, b, msg=lambda m: f"rank {rank}, {key} against eager: {m}")


def _purlin_world_over_two_nodes(rank: int) -> None:
    import purlin.torch as pt
    from purlin.torch.groups import state

    world = dist.get_world_size()
    assert dist.get_backend() == "purlin"
    x = torch.arange(2 * world, dtype=torch.float32) + 10 * rank
    want = torch.arange(2 * world, dtype=torch.float32) * world + 10 * sum(range(world))
    # Until purlin.torch.init splits it into nodes, the world spanning them runs on gloo.
    with _purlin_calls() as ran:
        y = x.clone()
        dist.all_reduce(y)
    assert torch.equal(y, want) and not ran
    pt.init()
    with pytest.raises(ValueError, match="give arch, ranks_per_node and timeout_s to purlin.torch.route"):
        pt.init(ranks_per_node=2)
    with _purlin_calls() as ran:
        y = x.clone()
        dist.all_reduce(y)
        z = torch.empty_like(x)
        dist.all_to_all_single(z, x)
        assert torch.equal(pt.all_reduce(x.clone(), dist.ReduceOp.SUM), want)
    assert torch.equal(y, want) and ran == ["reduce_scatter", "all_gather", "all_to_all", "reduce_scatter",
                                            "all_gather"]
    assert torch.equal(z, torch.tensor([2 * rank + 10 * s + d for s in range(world) for d in range(2)]).float())
    assert state(dist.group.WORLD.group_name).nodes.count == 2


def test_a_world_of_backend_purlin_over_two_nodes_runs_hierarchically_once_bound(monkeypatch):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    run_group(4, "purlin", _purlin_world_over_two_nodes, start_method="fork")



def _waits_as_long_as_the_group(rank: int) -> None:
    import datetime

    import purlin.torch as pt
    from purlin.torch.groups import state

    ranks = list(range(dist.get_world_size()))
    short = dist.new_group(ranks, timeout=datetime.timedelta(seconds=1))
    own = dist.new_group(ranks, backend="purlin", timeout=datetime.timedelta(seconds=20))
    routed = pt.route(dist.new_group(ranks, timeout=datetime.timedelta(seconds=30)))
    pt.init(short)
    assert (own.purlin_state.timeout_s, routed.purlin_state.timeout_s, state(short.group_name).timeout_s) == \
        (20.0, 30.0, 1.0)
    for g in (own, short):
        pt.all_reduce(torch.ones(4), group=g)  # the call board made, the call cached
    # A rank late by more than purlin's own default (10 s) but within the group's timeout: no error, as on gloo.
    x = torch.ones(4)
    if rank == 1:
        time.sleep(10.5)
    dist.all_reduce(x, group=own)
    assert torch.equal(x, torch.full((4,), float(len(ranks))))
    # A rank that does not come: the others give up after the group's 1 s.
    if rank != 1:
        t = time.monotonic()
        with pytest.raises(pt.CallMismatchError, match=r"rank\(s\) \[1\] did not make purlin call #\d+ \(all_reduce of 4 f32.* within 1 s"):
            pt.all_reduce(torch.ones(4), group=short)
        assert time.monotonic() - t < 5
    dist.barrier()


def test_a_purlin_group_waits_for_a_late_rank_as_long_as_its_own_timeout():
    fork_gloo(3, _waits_as_long_as_the_group)


def _forwarded_back_to_back(rank: int) -> None:
    import datetime

    w = dist.get_world_size()
    pg = dist.new_group(list(range(w)), backend="purlin", timeout=datetime.timedelta(seconds=20))
    t = torch.zeros(4)
    for _ in range(1000):
        # The scatter's tensors die before its gloo worker lets the work go: the next call must not hold the GIL.
        dist.scatter(torch.zeros(2), list(torch.ones(w, 2).unbind()) if rank == 1 else None, 1, pg)
        dist.broadcast(t, 1, pg)
        dist.barrier(pg)
        if rank < 2:
            (dist.send if rank == 0 else dist.recv)(t, 1 - rank, pg)


def test_calls_forwarded_back_to_back_on_a_purlin_group_do_not_deadlock():
    fork_gloo(3, _forwarded_back_to_back)
