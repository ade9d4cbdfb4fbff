"""What both communicators stand on: the C++ runtime module, the CUDA
kernel of a plan (checked against it, and described for the runtime), host
buffers (numpy arrays, CPU tensors), and device buffers, streams and copies
(torch tensors, or cupy arrays where torch is not installed)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from purlin.dtypes import DTYPE_BYTES, DTYPES, numpy_dtype
from purlin.plan import Plan
from purlin.plan.model import Op

if TYPE_CHECKING:
    from purlin.cuda.program import CudaProgram

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


def checked_kernel(kernel: CudaProgram | None, plan: Plan | None, name: str) -> CudaProgram:
    """`kernel`, the CUDA program (purlin.cuda.program.CudaProgram) a cuda
    communicator launches, checked to be `plan`'s: a program of its world,
    generation, dtype and buffers (a plan holds no kernel: the compiler
    gives it beside the plan). `plan` None: a device-counts kernel, whose
    counts come with every call."""
    if kernel is None:
        raise ValueError(f"{name}: the cuda backend launches the plan's compiled kernel, and none was given; pass "
                         "kernel=, the CUDA program compiled beside the plan (purlin.compile.compile_collective(...)"
                         ".cuda)")
    # Loaded already: a kernel was made from it.
    from purlin.cuda.program import CudaProgram

    if not isinstance(kernel, CudaProgram):
        raise TypeError(f"{name}: kernel= takes a purlin.cuda.program.CudaProgram (compile_collective(...).cuda), "
                        f"got a {type(kernel).__name__}")
    if plan is None:
        if not kernel.device_counts:
            raise ValueError(f"{name}: without a plan the kernel must read its counts on the device "
                             "(purlin.compile.compile_device_counts(...).cuda); give this one's plan")
        return kernel
    if kernel.device_counts:
        raise ValueError(f"{name}: the kernel reads its counts on the device at every call, the plan's are fixed; "
                         "give the kernel of the plan's counts (DeviceCountsCollective.bind_collective) or the "
                         "kernel without a plan")
    ins, outs = kernel.buffer_elems
    have = (kernel.world, kernel.arch, kernel.dtype, plan.input_elems if ins < 0 else ins,
            plan.output_elems if outs < 0 else outs)
    want = (plan.world, plan.arch, plan.dtype, plan.input_elems, plan.output_elems)
    if have != want:
        raise ValueError(f"{name}: the kernel is not the plan's: it is for world {have[0]}, {have[1]}, {have[2]}, "
                         f"buffers of {have[3]} and {have[4]} elements; the plan for world {want[0]}, {want[1]}, "
                         f"{want[2]}, {want[3]} and {want[4]}")
    return kernel


def blocks_per_sm(kernel: CudaProgram, devices: Sequence[int], name: str = "purlin") -> int:
    """Blocks of CUDA program `kernel` an SM must hold for the grids of all
    its ranks on `devices` that share a GPU to fit on it at once; ValueError
    where they cannot (CudaProgram.resident_blocks_per_sm)."""
    from collections import Counter

    return max(kernel.resident_blocks_per_sm(n, _runtime.cuda_device_sms(d), d, name)
               for d, n in Counter(devices).items())


def kernel_spec(kernel: CudaProgram, devices: Sequence[int], extents: Sequence[tuple[int, int]],
                name: str = "purlin"):
    """The runtime's description of CUDA program `kernel` for ranks on
    `devices`, each given its (input, output) elements: registers sized for
    blocks_per_sm."""
    eb = kernel.elem_bytes
    return kernel.spec(blocks_per_sm(kernel, devices, name), [i * eb for i, _ in extents],
                       [o * eb for _, o in extents])


def use_binding(impl, bindings: dict, loaded: CudaProgram, kernel: CudaProgram, devices: Sequence[int],
                extents: Sequence[tuple[int, int]], name: str) -> None:
    """Has runtime communicator `impl` launch with binding `kernel` from its
    next call on, uploaded on its first use (add_binding) and kept in
    `bindings` (id of the program -> (program, number))."""
    binding = bindings.get(id(kernel))
    if binding is None or binding[0] is not kernel:
        binding = bindings[id(kernel)] = (kernel, add_binding(impl, loaded, kernel, devices, extents, name))
    impl.use_binding(binding[1])


def binding_layout(kernel: CudaProgram) -> tuple:
    """What every binding one communicator runs shares: the symmetric
    allocation's bytes and arrival counters per signal site (laid out once,
    with the communicator), and per rank and phase the most units of any rank
    and each of its units' consumers. A ready or free signal slot counts one
    unit's announcements to one consumer over all calls and each wait expects
    every call to have made them, so a binding where a rank sends nothing, in
    fewer units, or a unit to another consumer would leave a slot behind and
    hang a later call."""
    from purlin.cuda import abi

    t = kernel.tables
    phases = [abi.GLOBAL_WORDS + kernel.world + k * abi.PHASE_WORDS for k in range(int(t.ranks[0][abi.PHASE_COUNT]))]

    def consumers(r, ph: int) -> tuple:
        units = (int(r[ph + abi.PH_UNITS_AT]) + u * abi.UNIT_WORDS for u in range(int(r[ph + abi.PH_UNITS])))
        return tuple(tuple(int(w) for w in r[int(r[u + abi.U_CONSUMERS_AT]):][:int(r[u + abi.U_CONSUMERS])])
                     for u in units)

    units = tuple((int(r[ph + abi.PH_MAX_UNITS]), consumers(r, ph)) for r in t.ranks for ph in phases)
    return t.symmetric_bytes, t.counter_stride, units


def add_binding(impl, loaded: CudaProgram, kernel: CudaProgram, devices: Sequence[int],
                extents: Sequence[tuple[int, int]], name: str) -> int:
    """Uploads `kernel`, another binding of the counts of runtime communicator
    `impl`'s `loaded` program (DeviceCountsCollective.bind_collective of other
    counts: the same code and memory), with every rank's (input, output)
    elements; returns the binding's number for impl.use_binding."""
    if kernel.kernel is not loaded.kernel or kernel.device_counts:
        raise ValueError(f"{name}: a binding is the communicator's own kernel with other counts bound on the host "
                         "(the same DeviceCountsCollective's bind_collective)")
    per_sm = blocks_per_sm(loaded, devices, name)
    src = kernel.source(per_sm)
    if src.text != loaded.source(per_sm).text:
        raise ValueError(f"{name}: the binding's counts give another kernel ({src.name}); lower it a communicator "
                         "of its own")
    if binding_layout(kernel) != binding_layout(loaded):
        raise ValueError(f"{name}: the binding's counts lay out the symmetric memory or the ranks' units "
                         "otherwise; lower it a communicator of its own")
    eb = kernel.elem_bytes
    smem = src.smem + (8 * kernel.tables.words if src.shared_tables else 0)
    return impl.add_binding([t.tolist() for t in kernel.tables.ranks], [i * eb for i, _ in extents],
                            [o * eb for _, o in extents], smem)


# Reductions of fewer bytes a rank than this ran wrong specialised (a
# reduce_scatter of one bf16 element a rank, worlds 5-7, one H200): refused
# until that is explained.
SPECIALISED_REDUCE_MIN_BYTES = 4


def specialise_refusal(plan: Plan | None) -> str | None:
    """Why the kernel of `plan` is not specialised, or None."""
    bodies = [body for rank in plan.programs for body in rank] if plan is not None else []
    small = min((i.elems * plan.elem_bytes for body in bodies for i in body if i.op == Op.REDUCE and i.elems),
                default=None)
    if small is not None and small < SPECIALISED_REDUCE_MIN_BYTES:
        return (f"it reduces {small} bytes a rank, and reductions under {SPECIALISED_REDUCE_MIN_BYTES} bytes "
                "were measured wrong specialised (not yet explained)")
    return None


def specialises_by_default(kernel: CudaProgram, plan: Plan) -> bool:
    """Whether a Communicator of every rank of `kernel` compiles their tables
    in when it is made: a latency kernel of fixed counts (a V kernel's
    bindings need its tables loaded) of at most the cost model's
    specialise_max_world ranks, where that measured faster, and not refused."""
    from purlin.conversion.cost_model import THRESHOLDS
    from purlin.snac.vocabulary import Regime

    k = kernel.kernel
    return (k.counts is None and k.regime.data == Regime.LATENCY
            and kernel.world <= THRESHOLDS[kernel.arch].specialise_max_world and specialise_refusal(plan) is None)


def allow_programmatic(impl, programmatic: bool | None, name: str) -> None:
    """A cuda communicator's `programmatic` option: None (the default) and True let its calls launch
    as programmatic dependents where that fits (sm_90 on, a single kernel, two grids of every rank
    co-resident), False launches them in stream order; True refuses a kernel where it does not fit."""
    if programmatic is None:
        return
    if not impl.allow_programmatic(bool(programmatic)) and programmatic:
        raise ValueError(f"{name}: programmatic=True, but its calls cannot launch as programmatic dependents: the "
                         "kernel is for a GPU before sm_90, a copy-engine stream program, or two grids of its ranks "
                         "do not fit on their GPU at once")


def specialise(impl, kernel: CudaProgram, plan: Plan | None, devices: Sequence[int], ranks: Sequence[int],
               name: str) -> None:
    """Has runtime communicator `impl` of `plan` launch `kernel` with the
    tables of `ranks` (those it launches, on `devices`) compiled in from its
    next call on."""
    from purlin.cuda.program import ProgramError

    if impl is None:
        raise RuntimeError(f"{name}: the communicator is closed")
    if (why := specialise_refusal(plan)) is not None:
        raise ValueError(f"{name}: its kernel is not specialised: {why}")
    bps = blocks_per_sm(kernel, devices, name)
    # One kernel per rank, compiled side by side (NVRTC runs without the GIL).
    with ThreadPoolExecutor(max_workers=min(len(ranks), os.cpu_count() or 1) or 1) as pool:
        jobs = [pool.submit(kernel.specialised, bps, [r]) for r in ranks]
    try:
        compiled = [job.result() for job in jobs]
    except ProgramError as e:
        raise ValueError(f"{name}: its kernel cannot be specialised: {e}") from None
    impl.specialise([cubin for _, cubin in compiled], compiled[0][0].name)


_TORCH_DTYPES = {d.name: d.array_name for d in DTYPES}


def device_buffer(a, rank: int, what: str, dtype: str, name: str, device: int, elems: int) -> tuple[int, int]:
    """(device pointer, elements) of rank `rank`'s `what` ("input" or "output"), a torch tensor
    or a __cuda_array_interface__ array of `dtype` on `device` holding at least `elems` elements."""
    where = f"{name}: {what} of rank {rank}"
    if hasattr(a, "data_ptr") and hasattr(a, "is_cuda"):
        if not a.is_cuda:
            raise TypeError(f"{where} is a CPU tensor; the cuda backend takes CUDA tensors")
        _check_tensor(a, where, dtype)
        if a.device.index != device:
            raise ValueError(f"{where} is on cuda:{a.device.index}, rank {rank} runs on cuda:{device}")
        ptr, n = a.data_ptr(), a.numel()
    elif hasattr(a, "__cuda_array_interface__"):
        iface = a.__cuda_array_interface__
        itemsize = int(iface["typestr"][2:])
        if itemsize != DTYPE_BYTES[dtype]:
            raise TypeError(f"{where} has {itemsize}-byte elements, the plan's {dtype} has {DTYPE_BYTES[dtype]}")
        if iface.get("strides") not in (None, (itemsize,)):
            raise ValueError(f"{where} is not contiguous")
        ptr, n = iface["data"][0], int(np.prod(iface["shape"]))
    else:
        raise TypeError(f"{where} is a {type(a).__name__}; the cuda backend takes CUDA tensors or arrays")
    _check_elems(n, elems, where, rank)
    return ptr, n


def host_buffer(a, rank: int, what: str, dtype: str, name: str, elems: int) -> tuple[int, int]:
    """(address, elements) of rank `rank`'s `what` ("input" or "output"), a C-contiguous numpy
    array or a contiguous CPU torch tensor of `dtype` holding at least `elems` elements."""
    where = f"{name}: {what} of rank {rank}"
    if isinstance(a, np.ndarray):
        want = numpy_dtype(dtype)
        if a.dtype != want:
            raise TypeError(f"{where} has dtype {a.dtype}, the plan is {dtype} ({want})")
        if not a.flags.c_contiguous:
            raise ValueError(f"{where} is not C-contiguous")
        _check_elems(a.size, elems, where, rank)
        if what == "output" and not a.flags.writeable:
            raise ValueError(f"{where} is read-only")
        return a.ctypes.data, a.size
    if hasattr(a, "data_ptr") and hasattr(a, "is_cuda"):
        if a.device.type != "cpu":
            raise TypeError(f"{where} is on {a.device}; the cpu backend takes CPU tensors")
        _check_tensor(a, where, dtype)
        _check_elems(a.numel(), elems, where, rank)
        return a.data_ptr(), a.numel()
    raise TypeError(f"{where} is a {type(a).__name__}, the cpu backend takes numpy arrays or CPU torch tensors")


def _check_tensor(a, where: str, dtype: str) -> None:
    want = _TORCH_DTYPES[dtype]
    if str(a.dtype).removeprefix("torch.") != want:
        raise TypeError(f"{where} has dtype {a.dtype}, the plan is {dtype} (torch.{want})")
    if not a.is_contiguous():
        raise ValueError(f"{where} is not contiguous")


def _check_elems(n: int, elems: int, where: str, rank: int) -> None:
    if n < elems:
        raise ValueError(f"{where} has {n} elements, the plan needs at least {elems} for rank {rank}")


def current_stream(device: int) -> int:
    """The handle of the current stream on `device`: torch's, else cupy's (0,
    the default stream, with neither)."""
    return (_stream_query or _find_stream_query())(device)


# What current_stream calls, found on its first call: an eager launch asks it every time.
_stream_query: Callable[[int], int] | None = None


def _find_stream_query() -> Callable[[int], int]:
    global _stream_query
    try:
        import torch

        # torch's own C++ query (inductor's): torch.cuda.current_stream(device).cuda_stream without its
        # objects; a torch without it (private, so not promised) takes the public path.
        raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
        _stream_query = raw if raw is not None else lambda d: torch.cuda.current_stream(d).cuda_stream
        return _stream_query
    except ImportError:
        pass
    try:
        import cupy
    except ImportError:
        _stream_query = _default_stream
        return _stream_query

    def cupy_stream(d: int) -> int:
        with cupy.cuda.Device(d):
            return cupy.cuda.get_current_stream().ptr

    _stream_query = cupy_stream
    return _stream_query


def _default_stream(device: int) -> int:
    return 0


class BadCountsError(ValueError):
    """A call's device counts do not fit the buffers the collective was built for."""


class BadBuffersError(ValueError):
    """One rank per process, symmetric plan: a peer's buffers of a call sit at
    other offsets of its heap than this rank's."""


def cuda_synchronize(impl) -> None:
    """`impl.synchronize()` of a CUDA communicator, a recorded timeout raised as
    CollectiveTimeout, counts a kernel refused as BadCountsError, peers' buffers
    at other heap offsets as BadBuffersError."""
    try:
        impl.synchronize()
    except _runtime.CudaTimeoutError as e:
        raise CollectiveTimeout(str(e)) from None
    except _runtime.BadCountsError as e:
        raise BadCountsError(str(e)) from None
    except _runtime.BadBuffersError as e:
        raise BadBuffersError(str(e)) from None


class _DeviceBytes:
    """`nbytes` of device memory at `ptr` as __cuda_array_interface__ (bytes),
    for torch.as_tensor to view without copying."""

    def __init__(self, ptr: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 3, "strides": None}


def device_view(ptr: int, elems: int, dtype: str, device: int):
    """A torch tensor of `elems` elements of purlin dtype `dtype` over the device
    memory at `ptr` (which the caller keeps alive), its data_ptr() `ptr` even
    when empty."""
    import torch

    eb = DTYPE_BYTES[dtype]
    raw = torch.as_tensor(_DeviceBytes(ptr, max(elems, 1) * eb), device=f"cuda:{device}")
    return raw.view(getattr(torch, _TORCH_DTYPES[dtype]))[:elems]


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
