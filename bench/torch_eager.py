"""Host time of one eager `purlin.torch.all_reduce` against NCCL's
`torch.distributed.all_reduce`, side by side in one process on one GPU.

    python bench/torch_eager.py [--bytes 16] [--dtype bfloat16] [--calls 2000]

Rows: `x.add_(1)` (the yardstick: one kernel launch), `torch.distributed.all_reduce`
on an NCCL process group of world 1, `purlin.torch.all_reduce` on that group
(a purlin plan of world 1 on the GPU), and `purlin.runtime.Communicator.run` of
two ranks sharing the GPU (devices 0, 0). Each: the best over 7 repeats of
the mean host time per call over `--calls` calls after a warm-up,
torch.cuda.synchronize() at the end of each repeat (launches queue up, so
this is the time to issue them). Results are checked first. Then the steps of
purlin's eager call, timed alone with its C++ launch stubbed out. Without
CUDA it says so and exits 0.

Where the time went, measured on CPU (gloo world 1, a loaded 2-core machine,
C++ run stubbed; per call): before this bench, torch.ops.purlin's dispatch
of a Python implementation about 30 % of purlin's Python time,
ProcessCommunicator.run's buffer checks (dtype, contiguity, extents, the
aliasing rule) about 45 %, the cache lookup about 5 %. Now an eager call on a
plain tensor calls the implementation directly (the operator is still what
torch.compile traces), the buffers of a call already checked once are only
checked for contiguity and overlap (ProcessCommunicator.run_tensors), the
stream comes from torch's C++ query, and a hit on CUDA only posts its header
to the call board (about 1 us; on CPU the board also waits for the peers).
"""

from __future__ import annotations

import argparse
import datetime
import os
import socket
import sys
import time

import torch
import torch.distributed as dist

DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16}


def _best(f, calls: int) -> float:
    """Microseconds per call: the best of 7 repeats of `calls` calls, the GPU awaited at the end of each."""
    for _ in range(50):
        f()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(calls):
            f()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t) / calls * 1e6)
    return best


class _Stub:
    """A C++ communicator that launches nothing: what is left is purlin's Python."""

    def run(self, *args) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", type=int, default=16)
    parser.add_argument("--dtype", choices=tuple(DTYPES), default="bfloat16")
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_eager: no CUDA device; this benchmark runs on one GPU (skipped)")
        return 0
    from purlin.runtime import available_backends

    if "cuda" not in available_backends():
        print("torch_eager: purlin._runtime was built without CUDA (skipped)")
        return 0

    import purlin.torch as pt
    from purlin.compile import arch_of_device, compile_collective
    from purlin.runtime import Communicator
    from purlin.torch import collectives, execute
    from purlin.torch.groups import group_name, state

    dtype = DTYPES[args.dtype]
    n = max(1, args.bytes // torch.empty(0, dtype=dtype).element_size())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=60))
    pt.init()
    x = torch.arange(n, device="cuda").to(dtype)

    # Results first: world 1 leaves the tensor as it is; two ranks on one GPU sum theirs.
    a, b = x.clone(), x.clone()
    pt.all_reduce(a)
    dist.all_reduce(b)
    assert torch.equal(a, x) and torch.equal(b, x), "world-1 all_reduce changed its tensor"
    compiled = compile_collective("all_reduce", 2, execute.dtype_name(x), "sum", n, arch=arch_of_device(0),
                                  ranks_per_device=2)
    comm2 = Communicator(compiled.plan, backend="cuda", devices=[0, 0], kernel=compiled.cuda)
    ins, outs = [x.clone(), x.clone() + 1], [torch.empty_like(x), torch.empty_like(x)]
    comm2.run(ins, outs)
    comm2.synchronize()
    assert all(torch.equal(o, ins[0] + ins[1]) for o in outs), "two-rank all_reduce differs from the sum"

    y = x.clone()
    rows = [
        ("x.add_(1)", lambda: y.add_(1)),
        ("torch.distributed.all_reduce (nccl, world 1)", lambda: dist.all_reduce(y)),
        ("purlin.torch.all_reduce (world 1)", lambda: pt.all_reduce(y)),
        ("Communicator.run (2 ranks on cuda:0)", lambda: comm2.run(ins, outs)),
    ]
    print(f"host time per call, {n * x.element_size()} B {args.dtype}, {torch.cuda.get_device_name(0)}")
    times = {}
    for name, f in rows:
        times[name] = _best(f, args.calls)
        print(f"  {name:<48} {times[name]:8.2f} us")
    ratio = times["purlin.torch.all_reduce (world 1)"] / times["torch.distributed.all_reduce (nccl, world 1)"]
    print(f"  purlin / nccl: {ratio:.2f}")

    st = state(group_name())
    comm = next(c for k, c in st.plans.items() if k[1] == "all_reduce")
    real, comm._impl = comm._impl, _Stub()
    g = group_name()
    steps = [
        ("pt.all_reduce, C++ launch stubbed", lambda: pt.all_reduce(y)),
        ("  checks of collectives.all_reduce", lambda: (pt.groups.op_name("sum"), collectives._dense(y, "t"),
                                                       y.contiguous(), collectives._plain(y))),
        ("  execute.all_reduce", lambda: execute.all_reduce(st, y, y, "sum", False, "")),
        ("  GroupState.communicator (hit, board post)",
         lambda: st.communicator(y.device, "all_reduce", execute.dtype_name(y), "sum", n, in_place=True)),
        ("  ProcessCommunicator.run_tensors", lambda: comm.run_tensors(y, y)),
        ("  torch.ops.purlin.all_reduce_ (dispatch)", lambda: torch.ops.purlin.all_reduce_(y, "sum", g, False, "")),
    ]
    print("purlin's eager call, step by step (C++ launch stubbed)")
    for name, f in steps:
        print(f"  {name:<48} {_best(f, args.calls):8.2f} us")
    comm._impl = real
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    sys.exit(main())
