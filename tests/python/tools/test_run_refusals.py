"""`purlin-run --backend`: a plan the runtime refuses (a kernel that cannot be
generated, compiled or placed) is one error line and exit 2, never a traceback;
a call that fails once running stays result=error and exit 1. No GPU is
needed: the runtime's refusals are stood in for."""

from pathlib import Path

import pytest

import purlin.runtime
from purlin import _runtime
from purlin.cuda.program import ProgramError
from purlin.tools.run import main

ALL_REDUCE = ["--collective", "all_reduce", "--world", "2", "--bytes", "64", "--dtype", "f32"]
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "stablehlo_collectives.mlir"
NVRTC_MISSING = ProgramError("<atom.kernel>: error: 'atom.kernel': NVRTC could not compile k.cu for sm_90:\n"
                             "k.cu(12): error: identifier \"x\" is undefined\n1 error detected")
NOT_RESIDENT = _runtime.CudaBackendError(
    "all_reduce: 8 ranks on GPU 0 need 1056 co-resident blocks of 512 threads (0 bytes of shared memory each); "
    "the GPU holds 4 per SM x 132 SMs; use fewer blocks per role (blocks=N) or fewer ranks per GPU")


@pytest.fixture
def one_gpu(monkeypatch):
    """A build that sees one GPU."""
    monkeypatch.setattr(purlin.runtime, "default_backend", lambda: "cuda")
    monkeypatch.setattr(_runtime, "cuda_device_count", lambda: 1)


@pytest.fixture
def cuda(one_gpu, monkeypatch):
    """One GPU of 132 multiprocessors; `refuse(error)` makes every Communicator raise `error`."""
    monkeypatch.setattr(_runtime, "cuda_device_sms", lambda device: 132)

    def refuse(error: Exception) -> None:
        def communicator(*args, **kwargs):
            raise error

        monkeypatch.setattr(purlin.runtime, "Communicator", communicator)

    return refuse


def refused(capsys, code: int) -> list[str]:
    out, err = capsys.readouterr()
    assert code == 2, out + err
    assert out == "" and "Traceback" not in err
    return err.strip().splitlines()


@pytest.mark.parametrize("error, needle", [
    (NVRTC_MISSING, "NVRTC could not compile k.cu for sm_90:; k.cu(12): error: identifier \"x\" is undefined; "
                    "1 error detected"),
    (NOT_RESIDENT, "8 ranks on GPU 0 need 1056 co-resident blocks"),
])
def test_a_kernel_the_runtime_refuses_is_one_line_and_exit_2(capsys, cuda, error, needle):
    cuda(error)
    [line] = refused(capsys, main([*ALL_REDUCE, "--backend", "cuda"]))
    assert line.startswith("purlin-run: error: the cuda backend refuses the plan: ")
    assert needle in line


def test_each_case_of_an_imported_file_is_refused_on_its_own_line(capsys, cuda):
    cuda(NVRTC_MISSING)
    lines = refused(capsys, main([str(EXAMPLE), "--backend", "cuda"]))
    assert [line.split(": the cuda backend refuses")[0] for line in lines] == [
        f"purlin-run: error: {EXAMPLE}:{n}" for n in (1, 43, 66, 91, 114, 139)]


def test_devices_for_another_world_are_refused(capsys, cuda):
    [line] = refused(capsys, main([*ALL_REDUCE, "--backend", "cuda", "--devices", "0,0,0"]))
    assert line == "purlin-run: error: the cuda backend refuses the plan: 3 devices for a world of 2 (one per rank)"


def test_devices_beyond_the_visible_gpus_are_refused(capsys, one_gpu):
    [line] = refused(capsys, main([*ALL_REDUCE, "--backend", "cuda", "--devices", "0,3"]))
    assert line == "purlin-run: error: --devices names GPU 3, but 1 GPU is visible (0 to 0)"


def test_a_call_that_fails_once_running_is_result_error(capsys, monkeypatch):
    class TimesOut(purlin.runtime.Communicator):
        def run(self, inputs, outputs, streams=None):
            raise purlin.runtime.CollectiveTimeout("all_reduce: rank 1 waited 10 s for signal 'ready' (epoch 1)")

    monkeypatch.setattr(purlin.runtime, "Communicator", TimesOut)
    code = main([*ALL_REDUCE, "--backend", "cpu"])
    out, err = capsys.readouterr()
    assert code == 1 and err == ""
    assert "result=error: cpu backend: all_reduce: rank 1 waited 10 s" in out


def test_a_module_without_collectives_says_so(capsys, tmp_path):
    f = tmp_path / "none.mlir"
    f.write_text('module attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {\n'
                 '  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n'
                 '    %0 = stablehlo.add %a, %a : tensor<4xf32>\n'
                 '    return %0 : tensor<4xf32>\n  }\n}\n')
    [line] = refused(capsys, main([str(f), "--backend", "cpu"]))
    assert f"{f}: the module holds no collective purlin runs" in line
