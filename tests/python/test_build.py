"""The package's own build compiled the runtime it could: the CUDA backend
(host code linked against the CUDA runtime; its kernels are generated and
compiled by NVRTC at run time) wherever the CUDA toolkit (nvcc) is installed,
so a CI machine without GPUs still proves the CUDA code compiles."""

import shutil

import pytest

from purlin import runtime


def test_cpu_backend_is_always_built():
    assert "cpu" in runtime.available_backends()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc: the build is CPU-only by design")
def test_cuda_backend_is_built_where_nvcc_exists():
    assert "cuda" in runtime.available_backends()
    assert hasattr(runtime._runtime, "CudaCommunicator")
    assert hasattr(runtime._runtime, "CudaProcessCommunicator")


def test_default_backend_without_gpus_is_cpu():
    if "cuda" in runtime.available_backends() and runtime._runtime.cuda_device_count() > 0:
        pytest.skip("GPUs are visible")
    assert runtime.default_backend() == "cpu"
