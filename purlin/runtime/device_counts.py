"""Running a V collective whose counts come with each call.

    coll = purlin.compile.compile_device_counts("all_to_all_v", 8, "bf16", input_elems=n, output_elems=m)
    comm = CountsCommunicator(coll, backend="cuda")
    comm.run(inputs, outputs, counts, recv_counts)   # one of each per rank

Rank r passes `counts[r]`, its own counts as int64: its row of the matrix
(all_to_all_v: what it sends to each rank) or its one count (all_gather_v:
what it contributes; reduce_scatter_v: what it receives), and optionally
`recv_counts[r]`, `world` int64s that receive what it learnt: all_to_all_v
the counts each rank sent it, the other forms every rank's count.

On "cuda" the counts are device tensors read by the kernel (the ranks
exchange them in its prologue): no host synchronisation, so calls can be
captured in CUDA graphs with counts written by earlier kernels. The buffers
are the collective's bounds: every call's counts must fit them, and counts
that do not are refused by the kernel (BadCountsError at synchronize; no rank
moves data). On "cpu" the counts are numpy arrays: the plan of each call's
counts is built on the host (the last few are kept) and run.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from purlin.runtime import Communicator
from purlin.runtime import backend as rt
from purlin.runtime.aliasing import AliasingError, check_ranks_apart
from purlin.runtime.backend import BadCountsError

__all__ = ["BadCountsError", "CountsCommunicator"]

# Plans of distinct counts a CPU communicator keeps.
CPU_PLANS = 8


class CountsCommunicator:
    """A device-counts collective (purlin.compile.DeviceCountsCollective) bound to a backend."""

    def __init__(self, coll, backend: str = "cpu", timeout_s: float = 10.0, name: str | None = None,
                 devices: Sequence[int] | None = None) -> None:
        if backend not in rt.BACKENDS:
            raise ValueError(f"unknown backend {backend!r}, expected one of {', '.join(rt.BACKENDS)}")
        if backend not in rt.available_backends():
            raise RuntimeError(f"purlin was built without {backend.upper()}")
        self.coll = coll
        self.backend = backend
        self.name = name or coll.collective
        self.timeout_s = timeout_s
        self.world = coll.world
        self._plans: OrderedDict[tuple, Communicator] = OrderedDict()
        if backend == "cuda":
            self.devices = list(devices) if devices is not None else list(range(self.world))
            if len(self.devices) != self.world:
                raise ValueError(f"{self.name}: the collective is for world {self.world}, got {len(self.devices)} "
                                 "devices (one per rank; a device may be listed several times)")
            extents = [(coll.input_elems, coll.output_elems)] * self.world
            spec = rt.kernel_spec(coll.cuda, self.devices, extents, self.name)
            self._impl = rt._runtime.CudaCommunicator(spec, self.devices, timeout_s, self.name)

    def run(self, inputs: Sequence, outputs: Sequence, counts: Sequence, recv_counts: Sequence | None = None,
            streams: Sequence | None = None) -> None:
        """One call on every rank with these counts (see the module's text)."""
        w = self.world
        if not len(inputs) == len(outputs) == len(counts) == w or (recv_counts is not None and len(recv_counts) != w):
            raise ValueError(f"{self.name}: one input, output and counts (and received counts, if any) per rank "
                             f"expected for world {w}")
        if self.backend == "cpu":
            self._run_cpu(inputs, outputs, counts, recv_counts)
            return
        ins = [rt.device_buffer(a, r, "input", self.coll.dtype, self.name, d, self.coll.input_elems)
               for r, (a, d) in enumerate(zip(inputs, self.devices))]
        outs = [rt.device_buffer(a, r, "output", self.coll.dtype, self.name, d, self.coll.output_elems)
                for r, (a, d) in enumerate(zip(outputs, self.devices))]
        self._check_apart([b[0] for b in ins], [b[0] for b in outs])
        cs = [rt.counts_pointer(c, r, "counts", self.coll.count_words, d, self.name)
              for r, (c, d) in enumerate(zip(counts, self.devices))]
        rs = [0] * w if recv_counts is None else [
            rt.counts_pointer(c, r, "received counts", w, d, self.name, writes=True)
            for r, (c, d) in enumerate(zip(recv_counts, self.devices))]
        if streams is None:
            handles = [rt.current_stream(d) for d in self.devices]
        elif len(streams) != w:
            raise ValueError(f"{self.name}: one stream per rank expected, got {len(streams)}")
        else:
            handles = [int(getattr(st, "cuda_stream", st)) for st in streams]
        self._impl.run([b[0] for b in ins], [b[0] for b in outs], handles, cs, rs)

    def synchronize(self) -> None:
        """Wait for every rank's GPU; CollectiveTimeout for a call that timed out,
        BadCountsError (a ValueError) for counts that did not fit."""
        if self.backend == "cuda":
            rt.cuda_synchronize(self._impl)

    def _check_apart(self, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        ib, ob = self.coll.input_elems * self.coll.elem_bytes, self.coll.output_elems * self.coll.elem_bytes
        for r, (i, o) in enumerate(zip(inputs, outputs)):
            if ib and ob and i < o + ob and o < i + ib:
                raise AliasingError(f"{self.name}: rank {r}'s input and output overlap; counts known only at "
                                    "run time cannot be checked for a safe overlap: pass distinct buffers")
        check_ranks_apart(self.name, [(i, ib, o, ob) for i, o in zip(inputs, outputs)])

    def _run_cpu(self, inputs, outputs, counts, recv_counts) -> None:
        rows = [_host_counts(c, r, self.coll.count_words, self.name) for r, c in enumerate(counts)]
        full = self.coll.full_counts(rows)
        key = tuple(map(tuple, rows))
        comm = self._plans.pop(key, None)
        if comm is None:
            comm = Communicator(self._bound_plan(full), "cpu", self.timeout_s, self.name)
            while len(self._plans) >= CPU_PLANS:
                self._plans.popitem(last=False)
        self._plans[key] = comm
        for r, (a, b) in enumerate(zip(inputs, outputs)):
            rt.host_buffer(a, r, "input", self.coll.dtype, self.name, self.coll.input_elems)
            rt.host_buffer(b, r, "output", self.coll.dtype, self.name, self.coll.output_elems)
        comm.run(inputs, outputs)
        if recv_counts is not None:
            matrix = np.asarray(full, dtype=np.int64)
            for r, out in enumerate(recv_counts):
                if not (isinstance(out, np.ndarray) and out.dtype == np.int64 and out.size >= self.world):
                    raise TypeError(f"{self.name}: received counts of rank {r} must be an int64 numpy array of "
                                    f"{self.world} elements")
                out[: self.world] = matrix[:, r] if matrix.ndim == 2 else matrix


    def _bound_plan(self, full):
        """The plan of these counts, refused as the kernel refuses them where they do not fit."""
        from purlin.coll.layouts import LayoutError
        from purlin.snac import dialect as snac

        coll = self.coll
        try:
            for ph in coll.kernel.body.block.ops:
                if not isinstance(ph, snac.PhaseOp):
                    continue
                src, dst = ph.src_layout.to_layout().bind(full), ph.dst_layout.to_layout().bind(full)
                from_output = ph.source.data == snac.PhaseSource.OUTPUT
                for r in range(self.world):
                    for what, need, have in (("output" if from_output else "input", src.extent(r),
                                              coll.output_elems if from_output else coll.input_elems),
                                             ("output", dst.extent(r), coll.output_elems)):
                        if need > have:
                            raise BadCountsError(f"{self.name}: rank {r}'s counts need {need} {what} elements, "
                                                 f"the collective was built for {have}")
        except LayoutError as e:
            raise BadCountsError(f"{self.name}: {e}") from None
        return coll.bind(full)


def _host_counts(c, rank: int, n: int, name: str) -> list[int]:
    a = np.asarray(c)
    if a.dtype.kind not in "iu" or a.size != n:
        raise TypeError(f"{name}: counts of rank {rank} must be {n} integers, got {a.dtype} of {a.size}")
    return [int(v) for v in a.reshape(-1)]
