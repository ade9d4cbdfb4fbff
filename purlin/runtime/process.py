"""One rank per process (as under torchrun), on the CUDA backend:

    dist.init_process_group("nccl", ...); torch.cuda.set_device(local_rank)
    comm = ProcessCommunicator(plan, name="all_reduce")   # collective over the group
    comm.run(input, output)                               # this rank's tensors, current stream
    comm.synchronize()

Each rank allocates its own symmetric memory; the constructor exchanges the
CUDA IPC handles through `torch.distributed.all_gather_object`, so every
rank of `group` must construct its communicator, from the same plan, at the
same point. The ranks must share a node. `run` only launches (capturable in
CUDA graphs); buffers follow the rules of `purlin.runtime.Communicator`.
"""

from __future__ import annotations

import numpy as np

from purlin.plan import Plan, decode, validate
from purlin.runtime.aliasing import Buffers
from purlin.runtime.backend import (
    _runtime,
    available_backends,
    cuda_synchronize,
    current_stream,
    device_buffer,
    kernel_spec,
)


class ProcessCommunicator:
    """This process's rank of a plan; peers are the other processes of `group`."""

    def __init__(
        self,
        plan: Plan | np.ndarray,
        rank: int | None = None,
        group=None,
        device: int | None = None,
        timeout_s: float = 10.0,
        name: str = "collective",
    ) -> None:
        if isinstance(plan, np.ndarray):
            plan = decode(plan)
        else:
            validate(plan)
        if "cuda" not in available_backends():
            raise RuntimeError("purlin was built without CUDA")
        import torch
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError(
                f"{name}: torch.distributed is not initialised; call torch.distributed.init_process_group "
                "first (the ranks exchange their memory handles through it)"
            )
        size = dist.get_world_size(group)
        if size != plan.world:
            raise ValueError(f"{name}: the plan is for world {plan.world}, the process group has {size} ranks")
        self.plan = plan
        self.name = name
        self.group = group
        self.rank = dist.get_rank(group) if rank is None else rank
        self._extents = (plan.input_extent(self.rank), plan.output_extent(self.rank))
        self._overlaps = Buffers(plan, name)
        self.device = torch.cuda.current_device() if device is None else device
        extents = [(plan.input_extent(r), plan.output_extent(r)) for r in range(plan.world)]
        spec = kernel_spec(plan, name, [self.device], extents)
        self._impl = _runtime.CudaProcessCommunicator(spec, self.rank, self.device, timeout_s, name)
        # Gathered with their ranks, so a `rank` other than the group rank still connects in plan order.
        gathered: list = [None] * size
        with torch.cuda.device(self.device):
            dist.all_gather_object(gathered, (self.rank, self._impl.ipc_handle()), group=group)
        ranks = sorted(r for r, _ in gathered)
        if ranks != list(range(size)):
            raise ValueError(f"{name}: the group's processes claim ranks {ranks}, expected each of 0..{size - 1} once")
        self._impl.connect([handle for _, handle in sorted(gathered)])

    @property
    def world(self) -> int:
        return self.plan.world

    def epoch(self) -> int:
        """This rank's epoch at the next call (waits for the GPU)."""
        return self._impl.epoch()

    def run(self, input, output, stream=None) -> None:
        """One call of the collective on this rank: `input` and `output` are CUDA tensors of the
        plan's dtype on this rank's device; `stream` a torch.cuda.Stream or cudaStream_t handle
        (default: torch's current stream)."""
        ins = device_buffer(input, self.rank, "input", self.plan, self.name, self.device, self._extents[0])
        outs = device_buffer(output, self.rank, "output", self.plan, self.name, self.device, self._extents[1])
        eb = self.plan.elem_bytes
        # Only this rank's buffers are here: its own overlap is what can be checked.
        buffers = [(0, 0, 0, 0)] * self.plan.world
        buffers[self.rank] = (ins[0], self._extents[0] * eb, outs[0], self._extents[1] * eb)
        self._overlaps.check(buffers)
        if stream is None:
            stream = current_stream(self.device)
        self._impl.run(ins[0], outs[0], int(getattr(stream, "cuda_stream", stream)))

    def synchronize(self) -> None:
        """Wait for this rank's GPU; raises CollectiveTimeout for a timed-out call."""
        cuda_synchronize(self._impl)

    def close(self) -> None:
        """Release the memory once every rank is done with it: waits for this GPU (raising a
        timeout as `synchronize` does), then for the group. Dropping a communicator without
        `close` is safe only when the peers no longer run its plan."""
        import torch
        import torch.distributed as dist

        try:
            self.synchronize()
        finally:
            with torch.cuda.device(self.device):
                dist.barrier(group=self.group)
            self._impl = None
