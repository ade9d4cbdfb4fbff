"""What purlin.torch's ops do when they run: one purlin collective over a
group within a node, or, over a group spanning nodes, purlin inside each node
composed with torch.distributed between nodes:

    all_reduce        intra reduce_scatter -> inter all_reduce -> intra all_gather
    all_gather        intra all_gather -> inter all_gather
    reduce_scatter    intra reduce_scatter (slices regrouped by local rank) -> inter reduce_scatter
    all_to_all        intra all_to_all (chunks regrouped by local rank) -> inter all_to_all
    all_gather_v      intra all_gather_v -> inter all_gather of the node blocks (padded to the largest)
    reduce_scatter_v  intra reduce_scatter_v (slices regrouped by local rank) -> inter reduce_scatter (padded)
    all_to_all_v      intra all_to_all_v (segments regrouped by local rank) -> inter all_to_all_single

Tensors here are flat, contiguous and checked by the callers; ranks are
node-major (rank = node * local + local rank).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from purlin.dtypes import DTYPES
from purlin.runtime.backend import BadCountsError
from purlin.torch.groups import TORCH_OPS, GroupState, all_gather_single, reduce_scatter_single
from purlin.torch.regimes import slices

# Every purlin dtype this torch build has.
TORCH_NAMES = {getattr(torch, d.array_name): d.name for d in DTYPES if hasattr(torch, d.array_name)}


def dtype_name(t: torch.Tensor) -> str:
    try:
        return TORCH_NAMES[t.dtype]
    except KeyError:
        raise TypeError(f"purlin does not move {t.dtype}; use one of {', '.join(map(str, TORCH_NAMES))}") from None


def v_extents(collective: str, counts: list, rank: int) -> tuple[int, int]:
    """The elements rank `rank`'s input and output of a V collective hold at least."""
    if collective == "all_gather_v":
        return counts[rank], sum(counts)
    if collective == "reduce_scatter_v":
        return sum(counts), counts[rank]
    return sum(counts[rank]), sum(row[rank] for row in counts)


# Across nodes an average is the sum of the nodes' averages divided by their
# count (every node holds `local` ranks), which also runs where the group
# underneath has no AVG (gloo).
def _inter_op(op: str):
    return dist.ReduceOp.SUM if op == "avg" else TORCH_OPS[op]


def _finish_inter(op: str, nodes, t: torch.Tensor) -> None:
    if op == "avg":
        t.div_(nodes.count)


def _nothing(st: GroupState, x: torch.Tensor, elems: int, collective: str, op: str | None) -> bool:
    """Whether the call moves no element: one within a node runs nothing but
    still meets its peers' calls."""
    if elems:
        return False
    if st.nodes is None:
        st.agree(x.device, collective, dtype_name(x), op)
    return True


def all_reduce(st: GroupState, x: torch.Tensor, y: torch.Tensor, op: str, deterministic: bool,
               lowering: str) -> None:
    n = x.numel()
    if _nothing(st, x, n, "all_reduce", op):
        return
    if st.nodes is None:
        in_place = x.data_ptr() == y.data_ptr()
        # One kernel of the regime: all_reduce_v of the elements' world slices.
        if not deterministic and st.run_sized(("all_reduce", n), "all_reduce_v", dtype_name(x), op,
                                                           slices(n, st.world), x, y, lowering, in_place):
            return
        st.call(x, y, "all_reduce", dtype_name(x), op, n, lowering=lowering, deterministic=deterministic,
                in_place=in_place)
        return
    nodes = st.nodes
    shard = -(-n // nodes.local)
    padded = x if n == shard * nodes.local else torch.cat([x, x.new_zeros(shard * nodes.local - n)])
    part = x.new_empty(shard)
    reduce_scatter(nodes.intra, padded, part, op, deterministic, lowering)
    dist.all_reduce(part, op=_inter_op(op), group=nodes.inter)
    _finish_inter(op, nodes, part)
    if padded is x:
        all_gather(nodes.intra, part, y, lowering)
    else:
        whole = x.new_empty(shard * nodes.local)
        all_gather(nodes.intra, part, whole, lowering)
        y.copy_(whole[:n])


def all_gather(st: GroupState, x: torch.Tensor, y: torch.Tensor, lowering: str) -> None:
    if _nothing(st, x, x.numel(), "all_gather", None):
        return
    if st.nodes is None:
        if not st.run_sized(("all_gather", x.numel()), "all_gather_v", dtype_name(x), None, [x.numel()] * st.world,
                            x, y, lowering):
            st.call(x, y, "all_gather", dtype_name(x), None, x.numel(), lowering=lowering)
        return
    nodes = st.nodes
    block = x.new_empty(nodes.local * x.numel())
    all_gather(nodes.intra, x, block, lowering)
    all_gather_single(y, block, group=nodes.inter)


def reduce_scatter(st: GroupState, x: torch.Tensor, y: torch.Tensor, op: str, deterministic: bool,
                   lowering: str) -> None:
    m = y.numel()
    if _nothing(st, x, m, "reduce_scatter", op):
        return
    if st.nodes is None:
        if deterministic or not st.run_sized(("reduce_scatter", m), "reduce_scatter_v", dtype_name(x), op,
                                             [m] * st.world, x, y, lowering):
            st.call(x, y, "reduce_scatter", dtype_name(x), op, m, lowering=lowering, deterministic=deterministic)
        return
    nodes = st.nodes
    # Local rank l needs slice (n, l) of every node n: regroup them by l first.
    by_local = x.view(nodes.count, nodes.local, m).transpose(0, 1).contiguous().view(-1)
    mine = x.new_empty(nodes.count * m)
    reduce_scatter(nodes.intra, by_local, mine, op, deterministic, lowering)
    reduce_scatter_single(y, mine, op=_inter_op(op), group=nodes.inter)
    _finish_inter(op, nodes, y)


def all_to_all(st: GroupState, x: torch.Tensor, y: torch.Tensor, lowering: str) -> None:
    if _nothing(st, x, x.numel(), "all_to_all", None):
        return
    if st.nodes is None:
        c = x.numel() // st.world
        if not st.run_sized(("all_to_all", c), "all_to_all_v", dtype_name(x), None, [[c] * st.world] * st.world,
                            x, y, lowering):
            st.call(x, y, "all_to_all", dtype_name(x), None, c, lowering=lowering)
        return
    nodes = st.nodes
    n, local, c = nodes.count, nodes.local, x.numel() // st.world
    # Chunk (node m, local l) goes first to this node's local rank l, with the chunks of every other node's l ...
    by_local = x.view(n, local, c).transpose(0, 1).contiguous().view(-1)
    mid = torch.empty_like(x)
    all_to_all(nodes.intra, by_local, mid, lowering)
    # ... which holds them by source local rank, then destination node, and sends each node its own.
    by_node = mid.view(local, n, c).transpose(0, 1).contiguous().view(-1)
    dist.all_to_all_single(y, by_node, group=nodes.inter)


def v_collective(st: GroupState, collective: str, x: torch.Tensor, y: torch.Tensor, counts: list,
                 op: str | None, lowering: str) -> None:
    if st.nodes is None:
        if not st.run_sized((collective, 0), collective, dtype_name(x), op, counts, x, y, lowering):
            st.call(x, y, collective, dtype_name(x), op, counts=counts, lowering=lowering)
        return
    {"all_gather_v": _all_gather_v_nodes, "reduce_scatter_v": _reduce_scatter_v_nodes,
     "all_to_all_v": _all_to_all_v_nodes}[collective](st, x, y, counts, op, lowering)


def _segments(x: torch.Tensor, sizes: list[int]) -> list[torch.Tensor]:
    return list(torch.split(x[:sum(sizes)], sizes))


def _all_gather_v_nodes(st: GroupState, x: torch.Tensor, y: torch.Tensor, counts: list, op: None,
                        lowering: str) -> None:
    nodes = st.nodes
    local, node = nodes.local, st.rank // nodes.local
    per_node = [counts[m * local:(m + 1) * local] for m in range(nodes.count)]
    totals = [sum(c) for c in per_node]
    widest = max(totals)
    if widest == 0:
        return
    block = x.new_empty(widest)
    v_collective(nodes.intra, "all_gather_v", x, block, per_node[node], None, lowering)
    blocks = x.new_empty(nodes.count * widest)
    all_gather_single(blocks, block, group=nodes.inter)
    torch.cat([b[:t] for b, t in zip(blocks.view(nodes.count, widest), totals)], out=y[:sum(totals)])


def _reduce_scatter_v_nodes(st: GroupState, x: torch.Tensor, y: torch.Tensor, counts: list, op: str,
                            lowering: str) -> None:
    nodes = st.nodes
    n, local, mine = nodes.count, nodes.local, st.rank % nodes.local
    # Local rank l reduces slices (m, l) of every node m within its node first.
    slices = _segments(x, counts)
    order = [m * local + l for l in range(local) for m in range(n)]
    by_local = torch.cat([slices[r] for r in order])
    intra_counts = [sum(counts[m * local + l] for m in range(n)) for l in range(local)]
    partial = x.new_empty(intra_counts[mine])
    v_collective(nodes.intra, "reduce_scatter_v", by_local, partial, intra_counts, op, lowering)
    # Then across nodes, each slice padded to the largest of this local rank's.
    sizes = [counts[m * local + mine] for m in range(n)]
    widest = max(sizes)
    if widest == 0:
        return
    padded = x.new_zeros(n, widest)
    for row, part, size in zip(padded, _segments(partial, sizes), sizes):
        row[:size] = part
    out = x.new_empty(widest)
    reduce_scatter_single(out, padded.view(-1), op=_inter_op(op), group=nodes.inter)
    _finish_inter(op, nodes, out)
    y[:counts[st.rank]] = out[:counts[st.rank]]


def _all_to_all_v_nodes(st: GroupState, x: torch.Tensor, y: torch.Tensor, counts: list, op: None,
                        lowering: str) -> None:
    nodes = st.nodes
    n, local = nodes.count, nodes.local
    node, mine = divmod(st.rank, local)

    def rank(m: int, l: int) -> int:
        return m * local + l

    # To this node's local rank l go the segments for (m, l) of every node m, in node order ...
    sent = _segments(x, counts[st.rank])
    by_local = torch.cat([sent[rank(m, l)] for l in range(local) for m in range(n)])
    intra = [[sum(counts[rank(node, s)][rank(m, d)] for m in range(n)) for d in range(local)]
             for s in range(local)]
    mid = x.new_empty(sum(row[mine] for row in intra))
    v_collective(nodes.intra, "all_to_all_v", by_local, mid, intra, None, lowering)
    # ... which holds them by source local rank, then destination node: regrouped by destination node.
    got = _segments(mid, [counts[rank(node, s)][rank(m, mine)] for s in range(local) for m in range(n)])
    by_node = torch.cat([got[s * n + m] for m in range(n) for s in range(local)])
    send = [sum(counts[rank(node, s)][rank(m, mine)] for s in range(local)) for m in range(n)]
    recv = [sum(counts[rank(m, s)][st.rank] for s in range(local)) for m in range(n)]
    dist.all_to_all_single(y[:sum(recv)], by_node, recv, send, group=nodes.inter)


def device_counts(st: GroupState, collective: str, x: torch.Tensor, y: torch.Tensor, counts: torch.Tensor,
                  recv: torch.Tensor, op: str | None, lowering: str) -> None:
    """A V collective whose counts are this rank's tensor `counts` (a row of
    sends, or its one count): on CUDA within a node read by the kernel (no host
    sync); on CPU, or across nodes, gathered over the group first, then the
    collective of those counts. `recv` receives what the rank learnt: the counts
    sent to it, or every rank's."""
    if x.is_cuda and st.nodes is None:
        st.counts_communicator(x.device, collective, dtype_name(x), op, x.numel(), y.numel(),
                               lowering).run(x, y, counts=counts, recv_counts=recv)
        return
    rows = [torch.empty_like(counts) for _ in range(st.world)]
    dist.all_gather(rows, counts.contiguous(), group=st.group)
    matrix = collective == "all_to_all_v"
    full = [r.tolist() for r in rows] if matrix else [int(r[0]) for r in rows]
    # Every rank checks every rank's counts against its bounds (alike on all), so all refuse together.
    for r in range(st.world):
        for what, need, have in zip(("input", "output"), v_extents(collective, full, r), (x.numel(), y.numel())):
            if need > have:
                raise BadCountsError(f"purlin.torch: {collective}: rank {r}'s counts need {need} {what} elements, "
                                     f"the buffers hold {have}")
    v_collective(st, collective, x, y, full, op, lowering)
    recv.copy_(torch.stack(rows)[:, st.rank] if matrix else torch.cat(rows)[: st.world])
