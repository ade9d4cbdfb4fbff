"""What both communicators stand on: the C++ runtime module, the CUDA
kernel description of a plan, host buffers (numpy arrays, CPU tensors), and
device buffers, streams and copies (torch tensors, or cupy arrays where
torch is not installed)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from purlin.dtypes import DTYPES, numpy_dtype
from purlin.plan import Plan

try:
    from purlin import _runtime
except ImportError as e:  # pragma: no cover - depends on the build
    raise ImportError(
        "purlin's C++ runtime (purlin._runtime) is not built or does not load "
        f"({e}); reinstall the package with `pip install -e .` (or `make install`), "
        "which compiles csrc/ with CMake"
    ) from e

CollectiveTimeout = _runtime.CollectiveTimeout
# Orders this thread's earlier stores before its later loads (as seen by other processes).
fence = _runtime.fence

BACKENDS = ("cpu", "cuda")


def available_backends() -> tuple[str, ...]:
    """The backends this build of `purlin._runtime` holds ("cpu", and "cuda" when built with CUDA)."""
    return tuple(_runtime.backends)


def default_backend() -> str:
    """"cuda" when this build has the CUDA backend and a GPU is visible, else "cpu"."""
    if "cuda" in available_backends() and _runtime.cuda_device_count() > 0:
        return "cuda"
    return "cpu"


# -- CUDA ---------------------------------------------------------------------


def kernel_spec(plan: Plan, name: str, devices: Sequence[int], extents: Sequence[tuple[int, int]]):
    """The compiled kernel of `plan` for ranks on `devices`: registers sized so
    that the grids of all ranks sharing a GPU fit on it at once."""
    from collections import Counter

    program = plan.cuda
    if program is None:
        raise ValueError(
            f"{name}: this plan carries no compiled kernel (plans read from JSON or binary have none); "
            "build it from the IR (purlin.compile.compile_plan or purlin.conversion.atom_to_plan.build_plan)"
        )
    per_sm = max(program.blocks_per_sm(n, _runtime.cuda_device_sms(d)) for d, n in Counter(devices).items())
    eb = plan.elem_bytes
    return program.spec(per_sm, [i * eb for i, _ in extents], [o * eb for _, o in extents])



_TORCH_DTYPES = {d.name: d.array_name for d in DTYPES}


def device_buffer(a, rank: int, what: str, plan: Plan, name: str, device: int, elems: int) -> tuple[int, int]:
    """(device pointer, elements) of rank `rank`'s `what` ("input" or "output"), a torch tensor
    or a __cuda_array_interface__ array on `device` holding at least `elems` elements."""
    where = f"{name}: {what} of rank {rank}"
    if hasattr(a, "data_ptr") and hasattr(a, "is_cuda"):
        if not a.is_cuda:
            raise TypeError(f"{where} is a CPU tensor; the cuda backend takes CUDA tensors")
        _check_tensor(a, where, plan)
        if a.device.index != device:
            raise ValueError(f"{where} is on cuda:{a.device.index}, rank {rank} runs on cuda:{device}")
        ptr, n = a.data_ptr(), a.numel()
    elif hasattr(a, "__cuda_array_interface__"):
        iface = a.__cuda_array_interface__
        itemsize = int(iface["typestr"][2:])
        if itemsize != plan.elem_bytes:
            raise TypeError(f"{where} has {itemsize}-byte elements, the plan's {plan.dtype} has {plan.elem_bytes}")
        if iface.get("strides") not in (None, (itemsize,)):
            raise ValueError(f"{where} is not contiguous")
        ptr, n = iface["data"][0], int(np.prod(iface["shape"]))
    else:
        raise TypeError(f"{where} is a {type(a).__name__}; the cuda backend takes CUDA tensors or arrays")
    _check_elems(n, elems, where, rank)
    return ptr, n


def host_buffer(a, rank: int, what: str, plan: Plan, name: str, elems: int) -> tuple[int, int]:
    """(address, elements) of rank `rank`'s `what` ("input" or "output"), a C-contiguous numpy
    array or a contiguous CPU torch tensor of the plan's dtype holding at least `elems` elements."""
    where = f"{name}: {what} of rank {rank}"
    if isinstance(a, np.ndarray):
        want = numpy_dtype(plan.dtype)
        if a.dtype != want:
            raise TypeError(f"{where} has dtype {a.dtype}, the plan is {plan.dtype} ({want})")
        if not a.flags.c_contiguous:
            raise ValueError(f"{where} is not C-contiguous")
        _check_elems(a.size, elems, where, rank)
        if what == "output" and not a.flags.writeable:
            raise ValueError(f"{where} is read-only")
        return a.ctypes.data, a.size
    if hasattr(a, "data_ptr") and hasattr(a, "is_cuda"):
        if a.device.type != "cpu":
            raise TypeError(f"{where} is on {a.device}; the cpu backend takes CPU tensors")
        _check_tensor(a, where, plan)
        _check_elems(a.numel(), elems, where, rank)
        return a.data_ptr(), a.numel()
    raise TypeError(f"{where} is a {type(a).__name__}, the cpu backend takes numpy arrays or CPU torch tensors")


def _check_tensor(a, where: str, plan: Plan) -> None:
    want = _TORCH_DTYPES[plan.dtype]
    if str(a.dtype).removeprefix("torch.") != want:
        raise TypeError(f"{where} has dtype {a.dtype}, the plan is {plan.dtype} (torch.{want})")
    if not a.is_contiguous():
        raise ValueError(f"{where} is not contiguous")


def _check_elems(n: int, elems: int, where: str, rank: int) -> None:
    if n < elems:
        raise ValueError(f"{where} has {n} elements, the plan needs at least {elems} for rank {rank}")


def current_stream(device: int) -> int:
    """The handle of the current stream on `device`: torch's, else cupy's (0,
    the default stream, with neither)."""
    try:
        import torch

        # torch's own C++ query (inductor's): torch.cuda.current_stream(device).cuda_stream without its
        # objects; a torch without it (private, so not promised) takes the public path.
        raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
        return raw(device) if raw is not None else torch.cuda.current_stream(device).cuda_stream
    except ImportError:
        pass
    try:
        import cupy
    except ImportError:
        return 0
    with cupy.cuda.Device(device):
        return cupy.cuda.get_current_stream().ptr


class BadCountsError(ValueError):
    """A call's device counts do not fit the buffers the collective was built for."""


def cuda_synchronize(impl) -> None:
    """`impl.synchronize()` of a CUDA communicator, a recorded timeout raised as
    CollectiveTimeout, counts a kernel refused as BadCountsError."""
    try:
        impl.synchronize()
    except _runtime.CudaTimeoutError as e:
        raise CollectiveTimeout(str(e)) from None
    except _runtime.BadCountsError as e:
        raise BadCountsError(str(e)) from None


def to_device(a: np.ndarray, device: int):
    """A CUDA copy of numpy array `a` (bf16 and fp8 included) on `device`: a torch
    tensor, or where torch is not installed a cupy array of the same bytes."""
    raw = np.ascontiguousarray(a).view(np.uint8)
    try:
        import torch
    except ImportError:
        import cupy

        with cupy.cuda.Device(device):
            return cupy.asarray(raw.copy()).view(_cupy_dtype(a.dtype))
    dtype = getattr(torch, _TORCH_DTYPES[_dtype_name(a.dtype)])
    return torch.from_numpy(raw.copy()).to(f"cuda:{device}").view(dtype)


def to_host(t, dtype: np.dtype) -> np.ndarray:
    """The numpy copy of a CUDA array made by `to_device`."""
    if hasattr(t, "is_cuda"):
        import torch

        return t.view(torch.uint8).cpu().numpy().view(dtype)
    return t.view(np.uint8).get().view(dtype)


def _cupy_dtype(dtype: np.dtype) -> np.dtype:
    """cupy has no bf16 or fp8: such arrays hold their bits as unsigned integers of the same size."""
    return dtype if dtype.name in ("float32", "float16") else np.dtype(f"u{dtype.itemsize}")


def _dtype_name(dtype: np.dtype) -> str:
    from purlin.dtypes import dtype_of_array

    return dtype_of_array(np.empty(0, dtype))


def counts_pointer(t, rank: int, what: str, n: int, device: int, name: str, writes: bool = False) -> int:
    """The device address of rank `rank`'s int64 counts (`n` of them)."""
    where = f"{name}: {what} of rank {rank}"
    if not (hasattr(t, "data_ptr") and hasattr(t, "is_cuda")):
        raise TypeError(f"{where} is a {type(t).__name__}; the cuda backend takes int64 CUDA tensors")
    if not t.is_cuda or t.device.index != device:
        raise ValueError(f"{where} is on {t.device}, rank {rank} runs on cuda:{device}")
    if str(t.dtype) != "torch.int64" or not t.is_contiguous() or t.numel() < n:
        raise TypeError(f"{where} must be a contiguous int64 tensor of at least {n} elements, got {t.dtype} "
                        f"of {t.numel()}")
    if writes and t.requires_grad:
        raise ValueError(f"{where} requires grad; the kernel writes it")
    return t.data_ptr()
