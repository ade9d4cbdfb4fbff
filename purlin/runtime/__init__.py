"""Running a lowered collective: one `Communicator` over the C++ backends.

    comm = Communicator(plan, backend="cpu", timeout_s=10.0, name="all_gather")
    comm.run(inputs, outputs)   # one array per rank

    compiled = purlin.compile.compile_collective(...)
    comm = Communicator(compiled.plan, backend="cuda", kernel=compiled.cuda)

"cpu" executes the plan's instructions on threads, one per (rank, role).
"cuda" launches `kernel`, the CUDA program compiled from the same atom.kernel
beside the plan (purlin.cuda.program: generated, NVRTC-compiled and cached on
first use; a plan alone, as read from JSON or binary, has none), one launch
per rank on that rank's stream; `devices[r]` is rank r's GPU and a GPU may
host several ranks (each then runs on a stream of its own), as long as all
their blocks fit on it at once (refused up front otherwise).

Buffers: one input and one output array per rank, C-contiguous, of the
plan's dtype (numpy arrays on "cpu"; torch tensors or arrays exposing
`__cuda_array_interface__`, such as cupy's, on "cuda"). Rank r's need only
hold `plan.input_extent(r)`/`plan.output_extent(r)` elements, what its
instructions touch: a V collective's smaller ranks pass buffers of their own
size, not the largest rank's (`input_elems`/`output_elems`). Larger buffers
are fine: the call reads and writes only those elements, so callers can
reuse one large allocation. Buffers of different ranks must not overlap
(inputs may be shared), and a rank's input and output only where the
collective is right in place (purlin.runtime.aliasing: all_reduce lowered
in place, all_gather into the rank's own output slice, reduce_scatter into
its own input slice); other overlaps raise AliasingError. A plan must
not change once a communicator holds it: the backend runs its own copy, and
the extents are computed once.

Every spin of the call is bounded by `timeout_s`; when one runs out all
ranks stop and `run` raises `CollectiveTimeout` naming the collective, rank,
the op that waited (cuda) or role and instruction (cpu), the signal or
packet awaited, the value and the epoch. The communicator cannot be used
after that (its flags no longer match).

One rank per process (torchrun): `ProcessCommunicator` (purlin.runtime.process)
runs one rank, its peers' memory mapped through CUDA IPC (cuda) or POSIX
shared memory (cpu).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from purlin.dtypes import numpy_dtype
from purlin.plan import Plan, decode, validate
from purlin.runtime import aliasing
from purlin.runtime.backend import (
    BACKENDS,
    BadBuffersError,
    CollectiveTimeout,
    _runtime,
    allow_programmatic,
    available_backends,
    checked_kernel,
    cuda_synchronize,
    current_stream,
    default_backend,
    device_buffer,
    host_buffer,
    kernel_spec,
    specialise,
    specialises_by_default,
    to_device,
    to_host,
    use_binding,
)
from purlin.runtime.heap import DeviceHeap
from purlin.runtime.process import ProcessCommunicator

if TYPE_CHECKING:
    from purlin.cuda.program import CudaProgram

__all__ = ["BACKENDS", "BadBuffersError", "CollectiveTimeout", "Communicator", "DeviceHeap", "ProcessCommunicator",
           "available_backends", "default_backend", "kernel_spec", "to_device", "to_host"]

class Communicator:
    """A plan bound to a backend's symmetric memory, epochs kept across calls;
    on "cuda" with `kernel`, the plan's CUDA program (purlin.compile.Compiled.cuda).
    `specialise` (cuda): compile every rank's tables into the kernel when it is
    made (see specialise()); None: where that measured faster
    (purlin.runtime.backend.specialises_by_default: latency kernels of fixed
    counts, up to the cost model's specialise_max_world ranks), at the cost of
    one NVRTC compile per plan (cached on disk). `programmatic` (cuda): None
    or True launch calls as programmatic dependents where two grids of every
    rank fit (see the `programmatic` property), False in stream order; True
    refuses a kernel where it does not fit."""

    # Whether specialise() loaded the kernel with the tables compiled in.
    specialised = False

    def __init__(
        self,
        plan: Plan | np.ndarray,
        backend: str = "cpu",
        timeout_s: float = 10.0,
        name: str = "collective",
        devices: Sequence[int] | None = None,
        kernel: CudaProgram | None = None,
        specialise: bool | None = None,
        programmatic: bool | None = None,
    ) -> None:
        if isinstance(plan, np.ndarray):
            plan = decode(plan)
        else:
            validate(plan)
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}, expected one of {', '.join(BACKENDS)}")
        if backend not in available_backends():
            raise RuntimeError(f"purlin was built without {backend.upper()}")
        self.plan = plan
        self.backend = backend
        self.name = name
        self.dtype = numpy_dtype(plan.dtype)
        # Per rank (input, output) elements the plan touches; the backend runs
        # its own copy of the plan, so these stay right.
        self._extents = [(plan.input_extent(r), plan.output_extent(r)) for r in range(plan.world)]
        self._overlaps = aliasing.Buffers(plan, name)
        if backend == "cpu":
            if specialise or programmatic:
                what = "specialise" if specialise else "programmatic"
                raise ValueError(f"{name}: {what} is the cuda backend's (the cpu backend has no kernel)")
            handle = _runtime.decode(plan.encode())
            signal_names = [s.name for s in plan.signals]
            buffer_names = [b.name for b in plan.buffers]
            self._impl = _runtime.CpuCommunicator(handle, timeout_s, name, signal_names, buffer_names)
        else:
            self.devices = list(devices) if devices is not None else list(range(plan.world))
            if len(self.devices) != plan.world:
                raise ValueError(f"{name}: the plan is for world {plan.world}, got {len(self.devices)} devices "
                                 "(one per rank; a device may be listed several times)")
            self._kernel = checked_kernel(kernel, plan, name)
            # rebind's uploaded bindings, by their program: (program, number); the kernel's own is 0.
            self._bindings: dict[int, tuple[CudaProgram, int]] = {id(self._kernel): (self._kernel, 0)}
            spec = kernel_spec(self._kernel, self.devices, self._extents, name)
            self._impl = _runtime.CudaCommunicator(spec, self.devices, timeout_s, name)
            if specialise or (specialise is None and specialises_by_default(self._kernel, plan)):
                self.specialise()
            allow_programmatic(self._impl, programmatic, name)

    @property
    def programmatic(self) -> bool:
        """cuda: whether calls launch as programmatic dependents (sm_90 on, and two grids of every
        rank fit on its GPU at once): a call may start while the work ahead of it on its stream
        runs, and waits for that work on the device. False on cpu."""
        return self.backend == "cuda" and self._impl.programmatic

    @property
    def world(self) -> int:
        return self.plan.world

    def epoch(self, rank: int) -> int:
        """Rank `rank`'s epoch at the next call."""
        return self._impl.epoch(rank)

    def run(self, inputs: Sequence, outputs: Sequence, streams: Sequence | None = None) -> None:
        """One call of the collective on every rank. On "cuda", rank r launches on
        streams[r] (torch.cuda.Stream or cudaStream_t handle; default: the current
        stream of its device); ranks given the same stream run on streams of their
        own, forked from it and joined back into it."""
        self._check_world(inputs, outputs)
        if self.backend == "cpu":
            ins = [self._check_numpy(a, r, "input", self._extents[r][0]) for r, a in enumerate(inputs)]
            outs = [self._check_numpy(a, r, "output", self._extents[r][1]) for r, a in enumerate(outputs)]
            self._check_overlaps([a.ctypes.data for a in ins], [a.ctypes.data for a in outs])
            self._impl.run(ins, outs)
        else:
            ins = [device_buffer(a, r, "input", self.plan.dtype, self.name, d, self._extents[r][0]) for r, (a, d) in
                   enumerate(zip(inputs, self.devices))]
            outs = [device_buffer(a, r, "output", self.plan.dtype, self.name, d, self._extents[r][1]) for r, (a, d) in
                    enumerate(zip(outputs, self.devices))]
            self._check_overlaps([b[0] for b in ins], [b[0] for b in outs])
            if streams is None:
                handles = [current_stream(d) for d in self.devices]
            elif len(streams) != self.world:
                raise ValueError(f"{self.name}: one stream per rank expected, got {len(streams)}")
            else:
                handles = [int(getattr(st, "cuda_stream", st)) for st in streams]
            self._impl.run([b[0] for b in ins], [b[0] for b in outs], handles)

    def rebind(self, plan: Plan, kernel: CudaProgram | None = None) -> None:
        """Runs `plan` from the next call on, on the same memory and epochs:
        another binding of the counts of this communicator's kernel
        (DeviceCountsCollective.bind, or on cuda bind_collective of other counts:
        the same code and memory). cuda: `kernel` is the binding's program, its
        tables uploaded on its first rebind and kept for the next ones."""
        validate(plan)
        extents = [(plan.input_extent(r), plan.output_extent(r)) for r in range(plan.world)]
        if self.backend == "cuda":
            if kernel is None:
                raise ValueError(f"{self.name}: rebind on cuda takes the plan's kernel (bind_collective(...).cuda)")
            use_binding(self._impl, self._bindings, self._kernel, kernel, self.devices, extents, self.name)
        else:
            self._impl.rebind(_runtime.decode(plan.encode()))
        self.plan = plan
        self._extents = extents
        self._overlaps = aliasing.Buffers(plan, self.name)

    def specialise(self) -> None:
        """cuda: from the next call on, each rank launches the kernel with its
        own tables compiled in (purlin.cuda.program.CudaProgram.specialised):
        the same protocol over the same memory, but each lookup at an index
        the compiler knows is a constant. One NVRTC compile (cached) per rank
        and plan: for calls made often. Call it between calls, not while a stream
        captures a graph (graphs captured before keep the kernel they hold).
        Refused for a kernel reducing fewer than SPECIALISED_REDUCE_MIN_BYTES
        a rank (purlin.runtime.backend: measured wrong, not yet explained)."""
        if self.backend != "cuda":
            raise ValueError(f"{self.name}: specialise is the cuda backend's (the cpu backend has no kernel)")
        specialise(self._impl, self._kernel, self.plan, self.devices, range(self.world), self.name)
        self.specialised = True

    def _check_overlaps(self, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        eb = self.plan.elem_bytes
        self._overlaps.check([(i, n_in * eb, o, n_out * eb) for i, o, (n_in, n_out)
                              in zip(inputs, outputs, self._extents)])

    def synchronize(self) -> None:
        """Wait for every rank's GPU; raises CollectiveTimeout for a timed-out call."""
        if self.backend == "cuda":
            cuda_synchronize(self._impl)

    def _check_world(self, inputs: Sequence, outputs: Sequence) -> None:
        w = self.plan.world
        if len(inputs) != w or len(outputs) != w:
            raise ValueError(
                f"{self.name}: the plan is for world {w}, got {len(inputs)} inputs and "
                f"{len(outputs)} outputs (one array per rank expected)"
            )

    def _check_numpy(self, a, rank: int, what: str, elems: int) -> np.ndarray:
        if not isinstance(a, np.ndarray):
            raise TypeError(f"{self.name}: {what} of rank {rank} is a {type(a).__name__}, the cpu backend takes "
                            "numpy arrays")
        host_buffer(a, rank, what, self.plan.dtype, self.name, elems)
        return a
