"""The memory every rank of a purlin.torch group maps (purlin.torch.memory):
its heaps, where each call's buffers are looked up, and the arenas `empty`
carves, first fit. Ranks make the same requests in the same order (the
call board checks), so every rank's allocator takes the same steps and
hands out the same offsets, which the symmetric kernels require."""

from __future__ import annotations

import bisect

import torch

from purlin.dtypes import DTYPE_BYTES
from purlin.runtime.backend import device_view
from purlin.runtime.heap import ALIGN, DeviceHeap


class GroupMemory:
    """A group's heaps: arenas purlin allocates and the registered tensors."""

    def __init__(self) -> None:
        self.heaps: list[DeviceHeap] = []
        # (start, end, heap) of every heap, for the lookups of each call.
        self._spans: list[tuple[int, int, DeviceHeap]] = []
        # Per arena (by serial): its free blocks as sorted (offset, bytes).
        self._free: dict[int, list[tuple[int, int]]] = {}
        # Every block handed out and not freed: its address -> (arena, offset, bytes).
        self._live: dict[int, tuple[DeviceHeap, int, int]] = {}

    def add(self, heap: DeviceHeap, arena: bool = False) -> None:
        start = heap.handle().base
        self.heaps.append(heap)
        self._spans.append((start, start + heap.nbytes, heap))
        if arena:
            self._free[heap.serial] = [(0, heap.nbytes)]

    def holding(self, *tensors: torch.Tensor) -> tuple[DeviceHeap, ...] | None:
        """The heap holding each of `tensors` (their bytes whole), None unless every one lies in one."""
        found = []
        for t in tensors:
            start = t.data_ptr()
            end = start + t.numel() * t.element_size()
            heap = next((h for lo, hi, h in self._spans if lo <= start and end <= hi), None)
            if heap is None:
                return None
            found.append(heap)
        return tuple(found)

    def carve(self, elems: int, dtype: str, device: int) -> torch.Tensor | None:
        """`elems` of `dtype` from the first arena on `device` with room, first fit; None where none has."""
        nbytes = _rounded(elems * DTYPE_BYTES[dtype])
        for heap in self.heaps:
            free = self._free.get(heap.serial)
            if free is None or heap.device != device:
                continue
            for k, (offset, size) in enumerate(free):
                if size < nbytes:
                    continue
                if size == nbytes:
                    del free[k]
                else:
                    free[k] = (offset + nbytes, size - nbytes)
                at = heap.handle().base + offset
                self._live[at] = (heap, offset, nbytes)
                return device_view(at, elems, dtype, device)
        return None

    def free(self, ptr: int) -> bool:
        """Returns the block at `ptr` to its arena (merged with its free neighbours); False where none starts there."""
        block = self._live.pop(ptr, None)
        if block is None:
            return False
        heap, offset, nbytes = block
        free = self._free[heap.serial]
        k = bisect.bisect(free, (offset, 0))
        free.insert(k, (offset, nbytes))
        if k + 1 < len(free) and free[k][0] + free[k][1] == free[k + 1][0]:
            free[k] = (offset, free[k][1] + free.pop(k + 1)[1])
        if k > 0 and free[k - 1][0] + free[k - 1][1] == free[k][0]:
            free[k - 1] = (free[k - 1][0], free[k - 1][1] + free.pop(k)[1])
        return True


def _rounded(nbytes: int) -> int:
    """`nbytes` as a block takes them: a multiple of ALIGN, at least one."""
    return max(ALIGN, -(-nbytes // ALIGN) * ALIGN)

