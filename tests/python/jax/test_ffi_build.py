"""The FFI handlers are compiled on first use, against the running jaxlib's
headers, and cached: a second build is the same file, a changed source or
jaxlib another one, and a missing compiler a clear error."""

import ctypes

import pytest

from purlin.jax import build


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PURLIN_CACHE_DIR", str(tmp_path))
    return tmp_path / "jax"


def test_compiled_once_then_cached(cache, monkeypatch):
    path = build.library_path()
    assert path.parent == cache and path.exists()
    lib = ctypes.CDLL(str(path))
    for symbol in ("purlin_jax_connect", *build.HANDLERS.values()):
        assert hasattr(lib, symbol)
    built = path.stat().st_mtime_ns
    assert build.library_path() == path and path.stat().st_mtime_ns == built
    # Another jaxlib gets a library of its own.
    monkeypatch.setattr(build.jaxlib, "__version__", "0.0.0-other")
    assert build.cached_path(build.compiler()) != path


def test_the_handlers_refuse_another_table_version(cache):
    lib = ctypes.CDLL(str(build.library_path()))
    wrong = (ctypes.c_uint32 * 8)(0)
    lib.purlin_jax_connect.argtypes = (ctypes.c_void_p,)
    assert lib.purlin_jax_connect(ctypes.addressof(wrong)) != 0


def test_without_a_compiler(cache, monkeypatch, tmp_path):
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-c++"))
    with pytest.raises(build.BuildError, match="cannot run the C\\+\\+ compiler"):
        build.library_path()


def test_a_compile_error_shows_the_compiler_output(cache, monkeypatch, tmp_path):
    fake = tmp_path / "fail-c++"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && exit 0\necho 'handlers.cc:1: error: no' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CXX", str(fake))
    with pytest.raises(build.BuildError, match="(?s)failed:\nhandlers.cc:1: error: no"):
        build.library_path()
    assert list(cache.iterdir()) == []
