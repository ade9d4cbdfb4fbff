"""Device memory that every rank of a process group maps, for symmetric
kernels whose ranks are in different processes (one rank per GPU, as under
torchrun):

    heap = DeviceHeap(64 << 20)                  # collective over the group
    x, y = heap.alloc(n_in, "bf16"), heap.alloc(n_out, "bf16")   # CUDA tensors
    comm = ProcessCommunicator(compiled.plan, kernel=compiled.cuda, heap=heap)
    comm.run(x, y)                               # the peers push and pull in place

Each rank allocates its heap on its GPU and exports it as a CUDA IPC handle;
the constructor gathers every rank's through `torch.distributed` and maps
them. `alloc` carves tensors in order, 256-byte aligned, never freed: ranks
that allocate the same sizes in the same order get the same offsets, which is
what a symmetric kernel needs (it checks each peer's offsets before it
touches them, and a call where they differ raises BadBuffersError). Any
number of communicators of the group may share one heap.

Memory the caller already has registers instead, as NCCL's buffer
registration does: every rank's tensor of the same size, mapped by its peers

    xs = DeviceHeap.register(x)                   # collective; x stays the caller's
    ys = DeviceHeap.register(y)
    comm = ProcessCommunicator(plan, kernel=kernel, heap=[xs, ys])
    comm.run(x, y)                                # or views at the same offsets on every rank

Every rank passes its buffers in the same heap at the same offsets: each
heap has a serial number the ranks agree on, and the kernel's check covers
both."""

from __future__ import annotations

from purlin.dtypes import DTYPE_BYTES
from purlin.runtime.backend import _runtime, available_backends, device_view
from purlin.runtime.exchange import connected

# Every allocation starts at a multiple of this: any element type and the kernels' widest access.
ALIGN = 256


class DeviceHeap:
    """`nbytes` of device memory on this rank's GPU that every rank of `group`
    maps; constructed by every rank of the group at the same point, each with
    the same size. `rank`: this process's rank in the plans that use it
    (default: its group rank)."""

    def __init__(self, nbytes: int, group=None, device: int | None = None, rank: int | None = None,
                 name: str = "heap") -> None:
        if nbytes <= 0:
            raise ValueError(f"{name}: a heap needs a positive size, got {nbytes} bytes")
        self._setup(group, rank, device, name, "heaps",
                    lambda r, size, dev: _runtime.CudaDeviceHeap(r, size, dev, nbytes, name))
        self.nbytes = nbytes
        self.used = 0
        self.tensor = None

    @classmethod
    def register(cls, tensor, group=None, rank: int | None = None, name: str = "registered") -> DeviceHeap:
        """A heap over `tensor`'s memory (a contiguous CUDA tensor, from cudaMalloc as
        torch's allocator gives without expandable_segments), which every rank of
        `group` maps; collective, every rank's tensor of the same size in bytes. The
        heap keeps the tensor alive; its buffers are the tensor and its views."""
        import torch
        import torch.distributed as dist

        if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cuda":
            got = f"one on {tensor.device.type}" if isinstance(tensor, torch.Tensor) else type(tensor).__name__
            raise TypeError(f"{name}: register takes a CUDA tensor, got {got}")
        if not tensor.is_contiguous():
            raise ValueError(f"{name}: register takes a contiguous tensor (its memory is one span); "
                             "register the tensor it is a view of")
        nbytes = tensor.numel() * tensor.element_size()
        heap = cls.__new__(cls)
        heap._setup(group, rank, tensor.device.index, name, "registered memory",
                    lambda r, size, device: _runtime.CudaDeviceHeap(r, size, device, memory=tensor.data_ptr(),
                                                                    bytes=nbytes, name=name))
        heap.nbytes = nbytes
        heap.used = nbytes
        heap.tensor = tensor
        return heap

    @property
    def serial(self) -> int:
        """The heap's number, the same on every rank of its group."""
        return self.handle().serial

    def _setup(self, group, rank: int | None, device: int | None, name: str, what: str, make) -> None:
        """Makes this rank's C++ heap with make(rank, world, device), connected to every rank's."""
        import torch
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError(f"{name}: torch.distributed is not initialised; call "
                               "torch.distributed.init_process_group first (the ranks exchange their heaps through it)")
        if "cuda" not in available_backends():
            raise RuntimeError("purlin was built without CUDA")
        self.name = name
        self.group = group
        size = dist.get_world_size(group)
        self.rank = dist.get_rank(group) if rank is None else rank
        self.device = torch.cuda.current_device() if device is None else device
        with torch.cuda.device(self.device):
            self._impl = connected(dist, group, self.rank, size, name, what,
                                   lambda: make(self.rank, size, self.device))

    def alloc(self, elems: int, dtype: str):
        """A CUDA tensor of `elems` elements of purlin dtype `dtype` (bf16, f32, ...)
        at the heap's next 256-byte boundary, valid until `close`."""
        if self._impl is None:
            raise RuntimeError(f"{self.name}: the heap is closed")
        if self.tensor is not None:
            raise ValueError(f"{self.name}: a registered heap is the tensor given to register: pass it or views of "
                             "it; alloc carves a heap purlin allocated (DeviceHeap(nbytes))")
        if dtype not in DTYPE_BYTES:
            raise ValueError(f"{self.name}: unknown dtype {dtype!r}, expected one of {', '.join(DTYPE_BYTES)}")
        nbytes = elems * DTYPE_BYTES[dtype]
        if elems < 0 or self.used + nbytes > self.nbytes:
            raise ValueError(f"{self.name}: rank {self.rank}'s heap of {self.nbytes} bytes has "
                             f"{self.nbytes - self.used} left, {nbytes} asked for; make a larger one")
        at = self._impl.base + self.used
        self.used = -(-(self.used + nbytes) // ALIGN) * ALIGN
        return device_view(at, elems, dtype, self.device)

    def handle(self):
        """The C++ heap, for communicators that keep it alive while they run."""
        if self._impl is None:
            raise RuntimeError(f"{self.name}: the heap is closed")
        return self._impl

    def close(self) -> None:
        """Once every rank is done with it (a barrier over the group), drops this
        rank's heap; communicators that use it keep it until they are closed."""
        import torch
        import torch.distributed as dist

        if self._impl is None:
            return
        with torch.cuda.device(self.device):
            torch.cuda.synchronize()
            dist.barrier(group=self.group)
        self._impl = None
