"""The torch.distributed Work of a purlin call: what `async_op=True` returns,
and what a routed group gives torch. A purlin call is done (CPU) or enqueued
on the caller's current stream (CUDA) when it returns; `wait()` makes the
stream current at that point wait for it, as NCCL's Work does."""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch.futures import Future


class Work(dist.Work):
    def __init__(self, result: list[torch.Tensor]) -> None:
        super().__init__()
        self._result = result
        devices = sorted({t.device for t in result if t.is_cuda}, key=str)
        self._event = None
        if devices:
            self._device = devices[0]
            self._event = torch.cuda.Event()
            self._event.record(torch.cuda.current_stream(self._device))
        # A CUDA future orders its readers' streams after the streams current here.
        self._future: Future = Future(devices=devices) if devices else Future()
        self._future.set_result(result)

    def wait(self, timeout: Any = None) -> bool:
        if self._event is not None:
            torch.cuda.current_stream(self._device).wait_event(self._event)
        return True

    def is_completed(self) -> bool:
        return self._event is None or self._event.query()

    def is_success(self) -> bool:
        return True

    def exception(self) -> None:
        return None

    def result(self) -> list[torch.Tensor]:
        return self._result

    def get_future(self) -> Future:
        return self._future
