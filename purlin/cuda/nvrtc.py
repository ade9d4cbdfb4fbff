"""NVRTC: generated CUDA C++ to a cubin for one GPU generation, cached.

A cubin is kept in memory and on disk under a key of the source, the target,
the NVRTC version, the compile options and the device library's headers, so
a second process (or a second communicator of the same shape) pays nothing.
The cache lives in $PURLIN_CACHE_DIR, else $XDG_CACHE_HOME/purlin/kernels,
else ~/.cache/purlin/kernels; an unwritable one only costs recompiles.

NVRTC comes from the cuda-bindings and nvidia-cuda-nvrtc packages (no GPU
needed); the CUDA headers the device library includes (cuda_bf16.h,
cuda_fp16.h, cuda_fp8.h) from the toolkit: $PURLIN_CUDA_INCLUDE, $CUDA_HOME
or $CUDA_PATH, nvcc's installation, or /usr/local/cuda.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from purlin.cuda.abi import INCLUDE_DIR

ARCHS = ("sm_80", "sm_90", "sm_100")
# Generated code names values it may not use (snac.epoch's prev, say): no
# warning for unused variables (177).
OPTIONS = ("-std=c++17", "-default-device", "-DNDEBUG", "-diag-suppress=177")


class NvrtcError(Exception):
    """NVRTC is missing, or the source does not compile (the log says why)."""


@dataclass(frozen=True)
class Compiled:
    cubin: bytes
    log: str  # NVRTC's log: warnings, and the register report when asked for
    cached: bool
    seconds: float


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise NvrtcError(
            "NVRTC is not installed: `pip install cuda-bindings nvidia-cuda-nvrtc` "
            f"(purlin's [cuda] extra) provides it ({e})"
        ) from None
    return nvrtc


def _check(result, what: str):
    err, *rest = result
    if int(err) != 0:
        raise NvrtcError(f"{what}: {err}")
    return rest[0] if len(rest) == 1 else rest


@cache
def version() -> tuple[int, int]:
    major, minor = _check(_nvrtc().nvrtcVersion(), "nvrtcVersion")
    return int(major), int(minor)


@cache
def cuda_include_dir() -> Path:
    """The toolkit's include directory (it holds cuda_bf16.h)."""
    candidates = [os.environ.get(v) for v in ("PURLIN_CUDA_INCLUDE",)]
    candidates += [os.path.join(os.environ[v], "include") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(os.path.join(os.path.dirname(os.path.realpath(nvcc)), "..", "include"))
    candidates.append("/usr/local/cuda/include")
    for c in candidates:
        if c and os.path.isfile(os.path.join(c, "cuda_bf16.h")):
            return Path(c).resolve()
    raise NvrtcError(
        "the CUDA headers (cuda_bf16.h) were not found; set PURLIN_CUDA_INCLUDE or CUDA_HOME "
        f"(looked in: {', '.join(str(c) for c in candidates if c)})"
    )


@cache
def compiler_id() -> str:
    """The compiler version the cache is keyed on. The nvidia-cuda-nvrtc
    package's version when it is installed (the NVRTC that cuda-bindings loads
    first), read without loading the library, so that a cache hit costs no
    NVRTC start-up; otherwise NVRTC's own version."""
    try:
        return f"nvidia-cuda-nvrtc {metadata.version('nvidia-cuda-nvrtc')}"
    except metadata.PackageNotFoundError:
        return f"nvrtc {version()}"


@cache
def _library_digest() -> str:
    """Digest of the device library's files (names, sizes, modification
    times), so that a changed header invalidates the cache."""
    h = hashlib.sha256()
    for path in sorted(INCLUDE_DIR.rglob("*")):
        if path.is_file():
            st = path.stat()
            h.update(f"{path.relative_to(INCLUDE_DIR)} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def cache_dir() -> Path:
    if os.environ.get("PURLIN_CACHE_DIR"):
        return Path(os.environ["PURLIN_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "purlin" / "kernels"


def _options(arch: str, verbose: bool) -> list[str]:
    opts = [f"-arch={arch}", *OPTIONS, f"-I{INCLUDE_DIR}", f"-I{cuda_include_dir()}"]
    if verbose:
        opts.append("--ptxas-options=-v")
    return opts


def cache_key(source: str, arch: str, verbose: bool = False) -> str:
    h = hashlib.sha256()
    for part in (source, arch, compiler_id(), repr(_options(arch, verbose)), _library_digest()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


_memory: dict[str, Compiled] = {}


def compile_cubin(source: str, arch: str, name: str = "purlin.cu", verbose: bool = False) -> Compiled:
    """The cubin of `source` for `arch` (sm_80, sm_90 or sm_100), from the cache
    when it was compiled before; `verbose` adds ptxas's register report to the log."""
    if arch not in ARCHS:
        raise NvrtcError(f"unknown arch '{arch}', expected one of {', '.join(ARCHS)}")
    start = time.perf_counter()
    key = cache_key(source, arch, verbose)
    if key in _memory:
        hit = _memory[key]
        return Compiled(hit.cubin, hit.log, True, time.perf_counter() - start)
    path = cache_dir() / f"{key}.cubin"
    try:
        cubin = path.read_bytes()
        log_path = path.with_suffix(".log")
        log = log_path.read_text() if log_path.exists() else ""
        _memory[key] = Compiled(cubin, log, True, 0.0)
        return Compiled(cubin, log, True, time.perf_counter() - start)
    except OSError:
        pass
    cubin, log = _compile(source, _options(arch, verbose), name, "nvrtcGetCUBINSize", "nvrtcGetCUBIN")
    _memory[key] = Compiled(cubin, log, False, 0.0)
    _store(path, cubin, log)
    return Compiled(cubin, log, False, time.perf_counter() - start)


def compile_ptx(source: str, arch: str, name: str = "purlin.cu") -> str:
    """The PTX of `source` for the virtual architecture of `arch` (not cached):
    what reaches the machine code, for inspection without a disassembler."""
    if arch not in ARCHS:
        raise NvrtcError(f"unknown arch '{arch}', expected one of {', '.join(ARCHS)}")
    virtual = [f"-arch=compute_{arch.removeprefix('sm_')}", *_options(arch, False)[1:]]
    ptx, _ = _compile(source, virtual, name, "nvrtcGetPTXSize", "nvrtcGetPTX")
    return ptx.rstrip(b"\0").decode()


def _compile(source: str, options: list[str], name: str, size_fn: str, get_fn: str) -> tuple[bytes, str]:
    nvrtc = _nvrtc()
    prog = _check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []), "nvrtcCreateProgram")
    try:
        opts = [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        size = _check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        # A fresh buffer NVRTC may write into: a 1-byte bytes object is
        # CPython's shared singleton, and writing it corrupts the interpreter.
        raw = bytearray(size)
        _check(nvrtc.nvrtcGetProgramLog(prog, raw), "nvrtcGetProgramLog")
        log = raw.rstrip(b"\0").decode(errors="replace").strip()
        if int(err) != 0:
            raise NvrtcError(f"NVRTC could not compile {name} for {options[0].removeprefix('-arch=')}:\n{log}")
        size = _check(getattr(nvrtc, size_fn)(prog), size_fn)
        out = bytearray(size)
        _check(getattr(nvrtc, get_fn)(prog, out), get_fn)
        return bytes(out), log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _store(path: Path, cubin: bytes, log: str) -> None:
    """Write atomically, so that concurrent processes never read half a file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for data, target in ((log.encode(), path.with_suffix(".log")), (cubin, path)):
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
    except OSError:
        pass
