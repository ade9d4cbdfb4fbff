"""purlin-opt targets of the compiled kernels: `-t cuda` prints the CUDA C++
of every atom.kernel (one translation unit each), `-t cubin` compiles the
one atom.kernel with NVRTC for its target generation (no GPU needed) and
writes the cubin, binary, to -o or stdout. Targets write text: the cubin's
bytes travel as latin-1 characters, one per byte, and purlin-opt opens its
output in that encoding for this target (BINARY_ENCODING)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from purlin.atom import dialect as atom
from purlin.cuda.codegen import KernelSource
from purlin.cuda.program import CudaProgram, ProgramError

BINARY_ENCODING = "latin-1"


def _source(program: CudaProgram) -> KernelSource:
    try:
        return program.source()
    except ProgramError as e:
        raise DiagnosticException(str(e)) from None


@dataclass(frozen=True)
class CudaTarget(Target):
    name = "cuda"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        for k, kernel in enumerate(atom.required_kernels(module, "compile")):
            if k:
                output.write("\n// -----\n\n")
            output.write(_source(CudaProgram(kernel)).text)


@dataclass(frozen=True)
class CubinTarget(Target):
    name = "cubin"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        kernels = atom.required_kernels(module, "compile")
        if len(kernels) > 1:
            raise DiagnosticException(
                f"error: the module holds {len(kernels)} atom.kernel ops and a cubin holds one; "
                "split the input (--split-input-file) or print them with -t cuda"
            )
        program = CudaProgram(kernels[0])
        _source(program)
        try:
            cubin = program.cubin()
        except ProgramError as e:
            raise DiagnosticException(str(e)) from None
        output.write(cubin.decode(BINARY_ENCODING))
