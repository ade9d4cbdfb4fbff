"""The XLA FFI handlers (ffi/handlers.cc), compiled on first use and cached.

They include XLA's FFI headers, which ship with jaxlib (`jax.ffi.include_dir()`),
so they are built here, by the system's C++ compiler ($CXX, else c++ or g++),
against the jaxlib that will call them: purlin's own build needs no jax, and
the handlers never meet another jaxlib than their headers'. The library is
cached under a key of the sources, the jaxlib version and the compiler
(`$PURLIN_CACHE_DIR/jax`, else `$XDG_CACHE_HOME/purlin/jax`, else
`~/.cache/purlin/jax`), so only the first process on a machine compiles
(about 6 s here). Everything they run is in purlin._runtime, which hands them
its C table (purlin_jax_api.h) before they are registered with JAX.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

import jax
import jaxlib

from purlin.runtime.backend import _runtime

SOURCE_DIR = Path(__file__).resolve().parent / "ffi"
SOURCES = ("handlers.cc", "purlin_jax_api.h")
# The custom call target, one handler per platform (XLA picks the device's).
TARGET = "purlin_collective"
HANDLERS = {"cpu": "purlin_jax_cpu", "CUDA": "purlin_jax_cuda"}
# The loaded library: it must stay loaded for as long as XLA may call it.
_loaded: list[ctypes.CDLL] = []


class BuildError(RuntimeError):
    """The FFI handlers could not be compiled or loaded."""


def compiler() -> str:
    found = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not found:
        raise BuildError("purlin.jax compiles its XLA FFI handlers on first use and needs a C++17 compiler: "
                         "install one (g++ or clang++) or point $CXX at it")
    return found


def cache_dir() -> Path:
    if os.environ.get("PURLIN_CACHE_DIR"):
        return Path(os.environ["PURLIN_CACHE_DIR"]) / "jax"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "purlin" / "jax"


def _compiler_version(cxx: str) -> str:
    try:
        return subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise BuildError(f"cannot run the C++ compiler {cxx}: {e}") from None


def _command(cxx: str, out: Path) -> list[str]:
    return [cxx, "-std=c++17", "-O2", "-shared", "-fPIC", "-isystem", jax.ffi.include_dir(),
            f"-I{SOURCE_DIR}", str(SOURCE_DIR / "handlers.cc"), "-o", str(out)]


def cached_path(cxx: str) -> Path:
    """Where the handlers built by `cxx` for this jaxlib live in the cache."""
    h = hashlib.sha256()
    for part in (*(SOURCE_DIR.joinpath(s).read_text() for s in SOURCES), jaxlib.__version__,
                 _compiler_version(cxx), repr(_command(cxx, Path("out")))):
        h.update(part.encode())
        h.update(b"\0")
    return cache_dir() / f"purlin_jax_ffi-{h.hexdigest()[:24]}.so"


def library_path() -> Path:
    """The compiled handlers for this jaxlib and compiler, built if not cached."""
    cxx = compiler()
    path = cached_path(cxx)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    # Another process may compile the same library: each writes its own file, the last rename wins.
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        built = Path(tmp) / path.name
        try:
            done = subprocess.run(_command(cxx, built), capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as e:
            raise BuildError(f"compiling purlin.jax's FFI handlers with {cxx} failed: {e}") from None
        if done.returncode != 0:
            raise BuildError(f"compiling purlin.jax's FFI handlers with {cxx} failed:\n{done.stderr.strip()}")
        os.replace(built, path)
    return path


@cache
def registered() -> str:
    """Compile (or find) the handlers, give them purlin._runtime's table and
    register them with JAX for every platform; the custom call target's name."""
    lib = ctypes.CDLL(str(library_path()))
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = (ctypes.py_object, ctypes.c_char_p)
    table = get_pointer(_runtime.jax_api(), b"purlin_jax_api")
    lib.purlin_jax_connect.argtypes = (ctypes.c_void_p,)
    if (version := lib.purlin_jax_connect(table)) != 0:
        raise BuildError(f"purlin.jax's FFI handlers speak version {version} of purlin_jax_api.h, purlin._runtime "
                         "another: rebuild purlin (make install)")
    for platform, symbol in HANDLERS.items():
        jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(getattr(lib, symbol)), platform=platform)
    _loaded.append(lib)
    return TARGET
