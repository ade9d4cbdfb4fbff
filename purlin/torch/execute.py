"""What purlin.torch's ops do when they run: one purlin collective over a
group within a node, or, over a group spanning nodes, purlin inside each node
composed with torch.distributed between nodes:

    all_reduce      intra reduce_scatter -> inter all_reduce -> intra all_gather
    all_gather      intra all_gather -> inter all_gather
    reduce_scatter  intra reduce_scatter (slices regrouped by local rank) -> inter reduce_scatter

Tensors here are flat, contiguous and checked by the callers.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from purlin.coll.attributes import DTYPES
from purlin.runtime.backend import BadCountsError
from purlin.torch.groups import TORCH_OPS, GroupState, all_gather_single, reduce_scatter_single

# Every purlin dtype this torch build has.
TORCH_NAMES = {getattr(torch, d.array_name): d.name for d in DTYPES if hasattr(torch, d.array_name)}


def dtype_name(t: torch.Tensor) -> str:
    try:
        return TORCH_NAMES[t.dtype]
    except KeyError:
        raise TypeError(f"purlin does not move {t.dtype}; use one of {', '.join(map(str, TORCH_NAMES))}") from None


def _one_node(st: GroupState, what: str) -> None:
    if st.nodes is not None:
        raise NotImplementedError(f"purlin.torch: {what} over a group spanning {st.nodes.count} nodes is not "
                                  "composed with torch.distributed; run it on a group within one node")


# Across nodes an average is the sum of the nodes' averages divided by their
# count (every node holds `local` ranks), which also runs where the group
# underneath has no AVG (gloo).
def _inter_op(op: str):
    return dist.ReduceOp.SUM if op == "avg" else TORCH_OPS[op]


def _finish_inter(op: str, nodes, t: torch.Tensor) -> None:
    if op == "avg":
        t.div_(nodes.count)


def all_reduce(st: GroupState, x: torch.Tensor, y: torch.Tensor, op: str, deterministic: bool,
               lowering: str) -> None:
    n = x.numel()
    if n == 0:
        return
    if st.nodes is None:
        in_place = x.data_ptr() == y.data_ptr()
        st.communicator(x.device, "all_reduce", dtype_name(x), op, n, lowering=lowering,
                        deterministic=deterministic, in_place=in_place).run(x, y)
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
    if x.numel() == 0:
        return
    if st.nodes is None:
        st.communicator(x.device, "all_gather", dtype_name(x), None, x.numel(), lowering=lowering).run(x, y)
        return
    nodes = st.nodes
    block = x.new_empty(nodes.local * x.numel())
    all_gather(nodes.intra, x, block, lowering)
    all_gather_single(y, block, group=nodes.inter)


def reduce_scatter(st: GroupState, x: torch.Tensor, y: torch.Tensor, op: str, deterministic: bool,
                   lowering: str) -> None:
    m = y.numel()
    if m == 0:
        return
    if st.nodes is None:
        st.communicator(x.device, "reduce_scatter", dtype_name(x), op, m, lowering=lowering,
                        deterministic=deterministic).run(x, y)
        return
    nodes = st.nodes
    # Local rank l needs slice (n, l) of every node n: regroup them by l first.
    by_local = x.view(nodes.count, nodes.local, m).transpose(0, 1).contiguous().view(-1)
    mine = x.new_empty(nodes.count * m)
    reduce_scatter(nodes.intra, by_local, mine, op, deterministic, lowering)
    reduce_scatter_single(y, mine, op=_inter_op(op), group=nodes.inter)
    _finish_inter(op, nodes, y)


def all_to_all(st: GroupState, x: torch.Tensor, y: torch.Tensor, lowering: str) -> None:
    _one_node(st, "all_to_all")
    if x.numel():
        st.communicator(x.device, "all_to_all", dtype_name(x), None, x.numel() // st.world,
                        lowering=lowering).run(x, y)


def v_collective(st: GroupState, collective: str, x: torch.Tensor, y: torch.Tensor, counts: list,
                 op: str | None, lowering: str) -> None:
    _one_node(st, collective)
    st.communicator(x.device, collective, dtype_name(x), op, counts=counts, lowering=lowering).run(x, y)



def device_counts(st: GroupState, collective: str, x: torch.Tensor, y: torch.Tensor, counts: torch.Tensor,
                  recv: torch.Tensor, op: str | None, lowering: str) -> None:
    """A V collective whose counts are this rank's tensor `counts` (a row of
    sends, or its one count): on CUDA read by the kernel (no host sync); on
    CPU gathered over the group first, then the plan of those counts. `recv`
    receives what the rank learnt: the counts sent to it, or every rank's."""
    _one_node(st, collective)
    if x.device.type == "cuda":
        st.counts_communicator(x.device, collective, dtype_name(x), op, x.numel(), y.numel(),
                               lowering).run(x, y, counts=counts, recv_counts=recv)
        return
    rows = [torch.empty_like(counts) for _ in range(st.world)]
    dist.all_gather(rows, counts.contiguous(), group=st.group)
    matrix = collective == "all_to_all_v"
    full = [r.tolist() for r in rows] if matrix else [int(r[0]) for r in rows]
    comm = st.communicator(x.device, collective, dtype_name(x), op, counts=full, lowering=lowering)
    # Every rank checks every rank's counts against its bounds (alike on all), so all refuse together.
    for r in range(st.world):
        for what, need, have in (("input", comm.plan.input_extent(r), x.numel()),
                                 ("output", comm.plan.output_extent(r), y.numel())):
            if need > have:
                raise BadCountsError(f"purlin.torch: {collective}: rank {r}'s counts need {need} {what} elements, "
                                     f"the buffers hold {have}")
    comm.run(x, y)
    recv.copy_(torch.stack(rows)[:, st.rank] if matrix else torch.cat(rows)[: st.world])
