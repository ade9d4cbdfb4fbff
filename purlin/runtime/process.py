"""One rank per process (as under torchrun), on the CUDA or the CPU backend:

    dist.init_process_group("nccl", ...); torch.cuda.set_device(local_rank)
    compiled = purlin.compile.compile_collective(...)
    comm = ProcessCommunicator(compiled.plan, name="all_reduce", kernel=compiled.cuda)  # collective over the group
    comm.run(input, output)                               # this rank's tensors, current stream
    comm.synchronize()

    dist.init_process_group("gloo", ...)                  # gloo: the CPU backend
    comm = ProcessCommunicator(plan, name="all_reduce")
    comm.run(input, output)                               # numpy arrays or CPU tensors; blocks
    comm.close()

Each rank allocates its own symmetric memory; the constructor exchanges the
CUDA IPC handles (cuda) or POSIX shared memory names (cpu) through
`torch.distributed.all_gather_object`, so every rank of `group` must
construct its communicator, from the same plan, at the same point (on cpu a
different plan on some rank is refused there, on every rank; on cuda a rank
that cannot make or connect its communicator makes every rank raise, naming
why: purlin.runtime.exchange). The ranks must
share a node. On cuda `run` only launches (capturable in CUDA graphs); on cpu
it runs this rank's role threads and returns when the rank is done. Buffers
follow the rules of `purlin.runtime.Communicator`.

On cuda `kernel` is the plan's CUDA program, compiled beside it. A
device-counts collective's kernel (purlin.compile.compile_device_counts(...)
.cuda), given without a plan, runs on cuda with each call's counts given to
`run` as device tensors (see purlin.runtime.device_counts); its buffers are
the bounds.

A symmetric plan (compile_plan(symmetric=True)) reads and writes the peers'
buffers in place. Each rank's buffers then live in a heap its peers map,
which `alloc` hands out: on cpu shared memory, `heap_bytes` after the rank's
region (default: room for this plan's largest input and output); on cuda a
purlin.runtime.DeviceHeap, given as `heap` (which other communicators of the
group may share; or several, e.g. the user's tensors each registered with
DeviceHeap.register) or made for this one of `heap_bytes`:

    comm = ProcessCommunicator(compile_plan(..., symmetric=True), name="all_gather")
    x, y = comm.alloc(n_in), comm.alloc(n_out)   # numpy arrays (cpu) or CUDA tensors, every rank alike
    comm.run(x, y)

On cuda every rank passes buffers in the same heap at the same offsets in
each call (allocated alike, in the same order); the kernel checks each peer's
before it touches them, and a call where they differ raises BadBuffersError
at `synchronize` (no rank writes into such a peer; the communicator is then
spent). Copy-engine steps (mech=ce) are refused across processes.

or, with `buffers="anywhere"`, anywhere in its process: the peers then read
and write them by cross-memory attach (process_vm_readv / process_vm_writev,
one copy by the kernel), which the ranks must be allowed (the same user, and
ptrace permitted between them); where it is not, every rank's constructor
raises RuntimeError saying so.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from purlin.dtypes import DTYPE_BYTES, numpy_dtype
from purlin.plan import Plan, decode, validate
from purlin.runtime.aliasing import AliasingError, Buffers
from purlin.runtime.exchange import connected, gathered_by_rank
from purlin.runtime.heap import ALIGN, DeviceHeap
from purlin.runtime.backend import (
    BACKENDS,
    _runtime,
    allow_programmatic,
    available_backends,
    checked_kernel,
    counts_pointer,
    cuda_synchronize,
    current_stream,
    device_buffer,
    host_buffer,
    kernel_spec,
    specialise,
    use_binding,
)

if TYPE_CHECKING:
    from purlin.cuda.program import CudaProgram


# Where a symmetric plan's buffers may be on the cpu backend: in each rank's shared heap (alloc),
# or anywhere in its process, reached by the peers through cross-memory attach.
BUFFERS = ("heap", "anywhere")


class ProcessCommunicator:
    """This process's rank of a plan (on cuda, with `kernel`, its CUDA
    program), or of a device-counts kernel without a plan (`plan` None);
    peers are the other processes of `group`.

    `backend` "cuda" or "cpu"; by default "cpu" when the group's backend is gloo, else "cuda".
    `programmatic` (cuda): as Communicator's, for this rank's launches (False where ranks of other
    processes share its GPU: only this process's grids are counted when it checks that two fit)."""

    # Whether specialise() loaded the kernel with the tables compiled in.
    specialised = False

    def __init__(
        self,
        plan: Plan | np.ndarray | None,
        rank: int | None = None,
        group=None,
        device: int | None = None,
        timeout_s: float = 10.0,
        name: str = "collective",
        backend: str | None = None,
        heap_bytes: int | None = None,
        kernel: CudaProgram | None = None,
        buffers: str = "heap",
        heap: DeviceHeap | Sequence[DeviceHeap] | None = None,
        programmatic: bool | None = None,
    ) -> None:
        if isinstance(plan, np.ndarray):
            plan = decode(plan)
        elif plan is not None:
            validate(plan)
        import torch
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError(
                f"{name}: torch.distributed is not initialised; call torch.distributed.init_process_group "
                "first (the ranks exchange their memory handles through it)"
            )
        if backend is None:
            backend = "cpu" if dist.get_backend(group) == "gloo" else "cuda"
        if backend not in BACKENDS:
            raise ValueError(f"{name}: unknown backend {backend!r}, expected one of {', '.join(BACKENDS)}")
        if backend not in available_backends():
            raise RuntimeError(f"purlin was built without {backend.upper()}")
        if plan is None and backend != "cuda":
            raise ValueError(f"{name}: no plan given: only a device-counts kernel runs without one, on cuda; on cpu "
                             "give the counts to compile_plan")
        if backend == "cuda":
            kernel = checked_kernel(kernel, plan, name)
        size = dist.get_world_size(group)
        # Without a plan (device counts) the kernel's world, dtype and buffers stand for its header.
        self.world = kernel.world if plan is None else plan.world
        self.dtype = kernel.dtype if plan is None else plan.dtype
        self.elem_bytes = DTYPE_BYTES[self.dtype]
        if size != self.world:
            raise ValueError(f"{name}: the plan is for world {self.world}, the process group has {size} ranks")
        self.plan = plan
        self.name = name
        self.group = group
        self.backend = backend
        self.rank = dist.get_rank(group) if rank is None else rank
        self.count_words = kernel.count_words if plan is None else 0
        if plan is None:
            extents = [kernel.buffer_elems] * self.world
            self._overlaps = None
        else:
            extents = [(plan.input_extent(r), plan.output_extent(r)) for r in range(plan.world)]
            self._overlaps = Buffers(plan, name)
        self._extents = extents[self.rank]
        # A device-counts collective is never symmetric (its counts are known only on the device).
        symmetric = plan is not None and plan.symmetric
        if buffers not in BUFFERS:
            raise ValueError(f"{name}: buffers={buffers!r}, expected one of {', '.join(map(repr, BUFFERS))}")
        if buffers == "anywhere" and not (symmetric and backend == "cpu"):
            raise ValueError(f"{name}: buffers='anywhere' is for a symmetric plan on the cpu backend (its peers reach "
                             "the ranks' buffers in place); this communicator's buffers are its own")
        self.buffers = buffers
        if heap is not None and not (symmetric and backend == "cuda"):
            raise ValueError(f"{name}: a DeviceHeap is for a symmetric plan on cuda; this communicator's buffers "
                             + ("live in its own shared heap (heap_bytes)" if backend == "cpu" else
                                "may be any CUDA tensors"))
        if heap is not None and heap_bytes is not None:
            raise ValueError(f"{name}: give a heap or heap_bytes, not both")
        if heap_bytes is None:
            # Every rank's heap is one size: room for the largest rank's input and output.
            eb, align = self.elem_bytes, ALIGN if backend == "cuda" else 64
            in_heap = symmetric and buffers == "heap" and heap is None
            heap_bytes = max(_aligned(i * eb, align) + _aligned(o * eb, align) for i, o in extents) if in_heap else 0
        if heap_bytes < 0:
            raise ValueError(f"{name}: heap_bytes must be non-negative, got {heap_bytes}")
        if heap_bytes and backend == "cuda" and not symmetric:
            raise ValueError(f"{name}: heap_bytes is for a symmetric plan on cuda; this communicator's buffers may be "
                             "any CUDA tensors")
        self._heap_used = 0
        self._checked: set[tuple] = set()
        if backend == "cpu":
            if programmatic:
                raise ValueError(f"{name}: programmatic is the cuda backend's (the cpu backend has no kernel)")
            self.device = None
            self._connect_cpu(dist, size, timeout_s, heap_bytes)
            return
        self.device = torch.cuda.current_device() if device is None else device
        # A symmetric plan's own heap, where none is shared: collective, as the communicator is.
        self._own_heap = heap is None and heap_bytes > 0
        if self._own_heap:
            heap = DeviceHeap(heap_bytes, group=group, device=self.device, rank=self.rank, name=f"{name} heap")
        heaps = [] if heap is None else [heap] if isinstance(heap, DeviceHeap) else list(heap)
        if not all(isinstance(h, DeviceHeap) for h in heaps):
            raise TypeError(f"{name}: heap takes a DeviceHeap or a sequence of them")
        if symmetric and backend == "cuda" and heap is not None and not heaps:
            raise ValueError(f"{name}: heap is an empty sequence; a symmetric plan's buffers need a heap")
        # alloc carves the first heap purlin allocated; the communicator keeps every heap's memory mapped.
        self._heaps = heaps
        self._heap = next((h for h in heaps if h.tensor is None), None)
        handles = [h.handle() for h in heaps]

        self._kernel = kernel
        # rebind's uploaded bindings, by their program: (program, number); the kernel's own is 0.
        self._bindings: dict[int, tuple[CudaProgram, int]] = {id(kernel): (kernel, 0)}

        def make():
            spec = kernel_spec(kernel, [self.device], extents, name)
            return _runtime.CudaProcessCommunicator(spec, self.rank, self.device, timeout_s, name, handles)

        with torch.cuda.device(self.device):
            self._impl = connected(dist, group, self.rank, size, name, "communicators", make)
        allow_programmatic(self._impl, programmatic, name)

    def _gather(self, dist, size: int, *payload) -> list[tuple]:
        """(rank, *payload) of every process of the group, in rank order."""
        return gathered_by_rank(dist, self.group, self.rank, size, self.name, *payload)

    def _connect_cpu(self, dist, size: int, timeout_s: float, heap_bytes: int) -> None:
        words = self.plan.encode()
        self._impl = _runtime.CpuProcessCommunicator(
            _runtime.decode(words), self.rank, timeout_s, self.name,
            [s.name for s in self.plan.signals], [b.name for b in self.plan.buffers], heap_bytes,
            buffers_anywhere=self.buffers == "anywhere")
        digest = hashlib.sha256(words.tobytes()).hexdigest()
        try:
            gathered = self._gather(dist, size, self._impl.shm_name, digest)
            # Every rank sees every digest, so all of them refuse together instead of some waiting forever.
            others = [r for r, _, d in gathered if d != digest]
            if others:
                raise ValueError(
                    f"{self.name}: rank {self.rank}'s plan differs from that of rank(s) {others} (their plan "
                    "digests differ); every rank must construct the communicator from the same plan")
            try:
                self._impl.connect([shm for _, shm, _ in gathered])
                refused = ""
            except RuntimeError as e:  # buffers anywhere that the system does not let this rank reach
                refused = str(e)
            # Every rank learns every refusal, so that all of them raise instead of some waiting for the rest.
            # Once every rank has mapped every region the names can go: no crash leaks them afterwards.
            outcomes = self._gather(dist, size, refused)
            why = [f"rank {r}: {e}" for r, e in outcomes if e]
            if why:
                raise RuntimeError(f"{self.name}: the ranks could not connect: " + "; ".join(why))
            self._impl.unlink()
        except BaseException:
            self._impl.close()
            raise

    def alloc(self, elems: int):
        """`elems` elements of the plan's dtype in this rank's heap, where a
        symmetric plan's buffers must be: 64-byte aligned, never freed, valid
        until `close`. cpu: a numpy array in shared memory; each call tells
        the peers where in the heap its buffers are, so ranks may pass
        different ones. cuda: a CUDA tensor on the rank's GPU; every rank
        passes buffers at the same offsets, so allocate alike on every rank."""
        if self._impl is None:
            raise RuntimeError(f"{self.name}: the communicator is closed")
        if self.backend != "cpu":
            if self._heap is None:
                raise ValueError(f"{self.name}: this communicator has no heap to allocate from: alloc is for a "
                                 "symmetric plan, whose peers reach its buffers in place"
                                 + (", and its heaps are registered tensors (pass those or views of them)"
                                    if self._heaps else "; this plan's buffers may be any CUDA tensors"))
            return self._heap.alloc(elems, self.dtype)
        if self.buffers == "anywhere":
            raise ValueError(f"{self.name}: alloc gives memory of the shared heap; with buffers='anywhere' this "
                             "rank's buffers are any arrays of its process")
        nbytes = elems * self.elem_bytes
        if elems < 0 or self._heap_used + nbytes > self._impl.heap_bytes:
            raise ValueError(f"{self.name}: rank {self.rank}'s shared heap of {self._impl.heap_bytes} bytes has "
                             f"{self._impl.heap_bytes - self._heap_used} left, {nbytes} asked for; construct the "
                             "communicator with a larger heap_bytes")
        import ctypes

        raw = (ctypes.c_char * nbytes).from_address(self._impl.heap + self._heap_used)
        self._heap_used = _aligned(self._heap_used + nbytes)
        return np.frombuffer(raw, dtype=numpy_dtype(self.dtype), count=elems)

    @property
    def programmatic(self) -> bool:
        """Communicator.programmatic, for this rank's launches."""
        return self.backend == "cuda" and self._impl.programmatic

    def epoch(self) -> int:
        """This rank's epoch at the next call (on cuda, waits for the GPU)."""
        return self._impl.epoch()

    def run(self, input, output, stream=None, counts=None, recv_counts=None) -> None:
        """One call of the collective on this rank. cuda: `input` and `output` are CUDA tensors of
        the plan's dtype on this rank's device; `stream` a torch.cuda.Stream or cudaStream_t handle
        (default: torch's current stream). cpu: C-contiguous numpy arrays or contiguous CPU
        tensors of the plan's dtype, no stream; returns when this rank's part of the call is done
        (raises CollectiveTimeout when a wait runs out). A device-counts collective takes this
        rank's `counts` (and optionally `recv_counts`) as int64 CUDA tensors."""
        if self._impl is None:
            raise RuntimeError(f"{self.name}: the communicator is closed")
        if (counts is not None or recv_counts is not None) and not self.count_words:
            raise ValueError(f"{self.name}: this collective's counts are fixed; it takes no device counts")
        if self.count_words and counts is None:
            raise ValueError(f"{self.name}: this collective reads its counts on the device: pass counts=")
        if self.backend == "cpu":
            if stream is not None:
                raise ValueError(f"{self.name}: the cpu backend runs on no stream, got stream={stream!r}")
            ins = host_buffer(input, self.rank, "input", self.dtype, self.name, self._extents[0])
            outs = host_buffer(output, self.rank, "output", self.dtype, self.name, self._extents[1])
        else:
            ins = device_buffer(input, self.rank, "input", self.dtype, self.name, self.device, self._extents[0])
            outs = device_buffer(output, self.rank, "output", self.dtype, self.name, self.device, self._extents[1])
        eb = self.elem_bytes
        # Only this rank's buffers are here: its own overlap is what can be checked.
        buffers = [(0, 0, 0, 0)] * self.world
        buffers[self.rank] = (ins[0], self._extents[0] * eb, outs[0], self._extents[1] * eb)
        if self._overlaps is not None:
            self._overlaps.check(buffers)
        elif ins[0] < outs[0] + self._extents[1] * eb and outs[0] < ins[0] + self._extents[0] * eb:
            raise AliasingError(f"{self.name}: rank {self.rank}'s input and output overlap; with counts known "
                                "only at run time, pass distinct buffers")
        if self.backend == "cpu":
            self._impl.run(ins[0], outs[0])
            return
        if stream is None:
            stream = current_stream(self.device)
        handle = int(getattr(stream, "cuda_stream", stream))
        if not self.count_words:
            self._impl.run(ins[0], outs[0], handle)
            return
        c = counts_pointer(counts, self.rank, "counts", self.count_words, self.device, self.name)
        rc = 0 if recv_counts is None else counts_pointer(recv_counts, self.rank, "received counts", self.world,
                                                          self.device, self.name, writes=True)
        self._impl.run(ins[0], outs[0], handle, c, rc)

    def run_tensors(self, input, output) -> None:
        """`run(input, output)` of two torch tensors on the current stream, checked in
        full the first time each kind of call comes (dtypes, sizes, devices, one
        buffer or two), later only for contiguity and overlap: what an eager
        caller repeats costs no re-validation."""
        kind = (input.dtype, output.dtype, input.numel(), output.numel(), input.get_device(), output.get_device())
        i, o = input.data_ptr(), output.data_ptr()
        eb = self.elem_bytes
        # Where the buffers overlap, the output's place in the input decides (aliasing.Buffers).
        overlap = o - i if i < o + self._extents[1] * eb and o < i + self._extents[0] * eb else None
        if (kind, overlap) not in self._checked or not (input.is_contiguous() and output.is_contiguous()):
            self.run(input, output)
            self._checked.add((kind, overlap))
            return
        if self.backend == "cpu":
            self._impl.run(i, o)
        else:
            self._impl.run(i, o, current_stream(self.device))

    def rebind(self, plan: Plan, decoded=None, kernel: CudaProgram | None = None) -> None:
        """Runs `plan` from the next call on: another binding of this plan's
        kernel (purlin.compile.DeviceCountsCollective.bind: other sizes over the
        same buffers), whose memory is laid out as the current one's; every rank
        rebinds at the same call. cpu: `decoded` is `plan` as
        purlin._runtime.decode gives it, where the caller keeps it. cuda:
        `kernel` is the plan's program (bind_collective(counts).cuda), its
        tables uploaded on its first rebind and kept for the next ones."""
        if self._impl is None:
            raise RuntimeError(f"{self.name}: the communicator is closed")
        if self.backend == "cuda":
            if kernel is None:
                raise ValueError(f"{self.name}: rebind on cuda takes the plan's kernel (bind_collective(...).cuda)")
            validate(plan)
            extents = [(plan.input_extent(r), plan.output_extent(r)) for r in range(plan.world)]
            use_binding(self._impl, self._bindings, self._kernel, kernel, [self.device], extents, self.name)
        else:
            if decoded is None:
                validate(plan)
                decoded = _runtime.decode(plan.encode())
            self._impl.rebind(decoded)
        self.plan = plan
        self._extents = (plan.input_extent(self.rank), plan.output_extent(self.rank))
        self._overlaps = Buffers(plan, self.name)
        self._checked.clear()

    def specialise(self) -> None:
        """cuda: from this rank's next call on, the kernel with this rank's
        tables compiled in (purlin.cuda.program.CudaProgram.specialised): the
        same protocol over the same memory, so the peers need not do the same.
        One NVRTC compile (cached) per plan and rank: for calls made often.
        Call it between calls, not while a stream captures a graph. Refused
        for a kernel reducing fewer than SPECIALISED_REDUCE_MIN_BYTES a rank
        (purlin.runtime.backend: measured wrong, not yet explained)."""
        if self.backend != "cuda":
            raise ValueError(f"{self.name}: specialise is the cuda backend's (the cpu backend has no kernel)")
        specialise(self._impl, self._kernel, self.plan, [self.device], [self.rank], self.name)
        self.specialised = True

    def stop(self) -> None:
        """cpu: makes the peers' calls that wait on this rank in this communicator
        stop at once, as a failed call of this rank does (the communicator cannot
        run again)."""
        if self.backend != "cpu":
            raise ValueError(f"{self.name}: stop is the cpu backend's; a cuda kernel runs to its timeout")
        if self._impl is not None:
            self._impl.stop()

    def synchronize(self) -> None:
        """Wait for this rank's GPU; raises CollectiveTimeout for a timed-out call (on cpu, calls
        are done when `run` returns)."""
        if self.backend == "cuda":
            cuda_synchronize(self._impl)

    def close(self) -> None:
        """Release the memory. cuda: once every rank is done with it: waits for this GPU (raising a
        timeout as `synchronize` does), then for the group; dropping a communicator without
        `close` is safe only when the peers no longer run its plan. cpu: at once, with no barrier:
        peers keep their own mappings of this rank's memory."""
        if self.backend == "cpu":
            self._impl.close()
            self._impl = None
            return
        import torch
        import torch.distributed as dist

        try:
            self.synchronize()
        finally:
            with torch.cuda.device(self.device):
                dist.barrier(group=self.group)
            self._impl = None
            # Its own heap goes with it: the barrier above told every peer is done with it.
            if self._own_heap:
                self._heap._impl = None
            self._heap = None
            self._heaps = []


def _aligned(nbytes: int, align: int = 64) -> int:
    """`nbytes` rounded up to a heap's alignment (the cpu heap's 64 bytes, DeviceHeap's 256)."""
    return -(-nbytes // align) * align
