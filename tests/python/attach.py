"""Whether this system lets one process read another's memory by
cross-memory attach (process_vm_readv), as the CPU backend's ranks with
buffers anywhere must: tests of it skip where it is refused."""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os

import pytest


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _reads_parent(pid: int, addr: int, out) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    got = ctypes.create_string_buffer(8)
    mine, theirs = _Iovec(ctypes.addressof(got), 8), _Iovec(addr, 8)
    out.send(libc.process_vm_readv(pid, ctypes.byref(mine), 1, ctypes.byref(theirs), 1, 0) == 8
             and got.raw == b"purlin!!")


def attach_allowed() -> bool:
    """Whether a child process may read its parent's memory (ranks under one launcher are alike)."""
    buf = ctypes.create_string_buffer(b"purlin!!", 8)
    mine, theirs = mp.Pipe()
    p = mp.get_context("fork").Process(target=_reads_parent, args=(os.getpid(), ctypes.addressof(buf), theirs))
    p.start()
    ok = mine.recv() if mine.poll(30) else False
    p.join()
    return ok


needs_attach = pytest.mark.skipif(not attach_allowed(), reason="process_vm_readv between processes is refused here")
