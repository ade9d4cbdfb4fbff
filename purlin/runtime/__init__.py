"""Running a lowered plan: one `Communicator` over the C++ backends.

    comm = Communicator(plan, backend="cpu", timeout_s=10.0, name="all_gather")
    comm.run(inputs, outputs)   # one array per rank

Buffers: one input and one output array per rank, C-contiguous, of the
plan's dtype (numpy arrays on "cpu"; CUDA arrays exposing
`__cuda_array_interface__` or DLPack on "cuda"). They may be larger than
the plan's `input_elems`/`output_elems`: the call reads and writes only
the first that many elements, so callers can reuse one large allocation.
A rank's input and output must not overlap (peers may still read the input
while the output is written).

Every spin of the call is bounded by `timeout_s`; when one runs out all
ranks stop and `run` raises `CollectiveTimeout` naming the collective, rank,
role, the signal array or window awaited, the value and the epoch. The
communicator cannot be used after that (its flags no longer match).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from purlin.plan import Plan, decode, validate
from purlin.sim.dtypes import numpy_dtype

try:
    from purlin import _runtime
except ImportError as e:  # pragma: no cover - depends on the build
    raise ImportError(
        "purlin's C++ runtime (purlin._runtime) is not built or does not load "
        f"({e}); reinstall the package with `pip install -e .` (or `make install`), "
        "which compiles csrc/ with CMake"
    ) from e

CollectiveTimeout = _runtime.CollectiveTimeout

BACKENDS = ("cpu", "cuda")


def available_backends() -> tuple[str, ...]:
    """The backends this build of `purlin._runtime` holds ("cpu", and "cuda" when built with CUDA)."""
    return tuple(_runtime.backends)


class Communicator:
    """A plan bound to a backend's symmetric memory, epochs kept across calls."""

    def __init__(
        self,
        plan: Plan | np.ndarray,
        backend: str = "cpu",
        timeout_s: float = 10.0,
        name: str = "collective",
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
        handle = _runtime.decode(plan.encode())
        signal_names = [s.name for s in plan.signals]
        buffer_names = [b.name for b in plan.buffers]
        if backend == "cpu":
            self._impl = _runtime.CpuCommunicator(handle, timeout_s, name, signal_names, buffer_names)
        else:
            self._impl = _runtime.CudaCommunicator(handle, timeout_s, name, signal_names, buffer_names)

    @property
    def world(self) -> int:
        return self.plan.world

    def epoch(self, rank: int) -> int:
        """Rank `rank`'s epoch at the next call."""
        return self._impl.epoch(rank)

    def run(self, inputs: Sequence, outputs: Sequence) -> None:
        """One call of the collective on every rank."""
        self._check_world(inputs, outputs)
        if self.backend == "cpu":
            ins = [self._check_numpy(a, r, "input", self.plan.input_elems) for r, a in enumerate(inputs)]
            outs = [self._check_numpy(a, r, "output", self.plan.output_elems) for r, a in enumerate(outputs)]
            for r, (i, o) in enumerate(zip(ins, outs)):
                if np.shares_memory(i, o):
                    raise ValueError(f"{self.name}: input and output of rank {r} overlap")
            self._impl.run(ins, outs)
        else:
            self._impl.run(list(inputs), list(outputs))

    def _check_world(self, inputs: Sequence, outputs: Sequence) -> None:
        w = self.plan.world
        if len(inputs) != w or len(outputs) != w:
            raise ValueError(
                f"{self.name}: the plan is for world {w}, got {len(inputs)} inputs and "
                f"{len(outputs)} outputs (one array per rank expected)"
            )

    def _check_numpy(self, a, rank: int, what: str, elems: int) -> np.ndarray:
        where = f"{self.name}: {what} of rank {rank}"
        if not isinstance(a, np.ndarray):
            raise TypeError(f"{where} is a {type(a).__name__}, the cpu backend takes numpy arrays")
        if a.dtype != self.dtype:
            raise TypeError(f"{where} has dtype {a.dtype}, the plan is {self.plan.dtype} ({self.dtype})")
        if not a.flags.c_contiguous:
            raise ValueError(f"{where} is not C-contiguous")
        if a.size < elems:
            raise ValueError(f"{where} has {a.size} elements, the plan needs at least {elems}")
        if what == "output" and not a.flags.writeable:
            raise ValueError(f"{where} is read-only")
        return a
