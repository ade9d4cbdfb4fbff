"""A lowered collective as the CUDA runtime runs it: the generated kernel
(codegen), its per-rank tables (tables) and NVRTC's cubin (nvrtc), built on
first use from the atom.kernel and the call's counts. A kernel with dynamic
counts and none bound here reads them on the device at every call
(`device_counts`): its tables hold only what no count changes.

`purlin.compile.compile_collective` builds one beside the plan of the same
atom.kernel; `purlin.runtime.Communicator(plan, backend="cuda", kernel=...)`
launches it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property

import numpy as np
from xdsl.dialects.builtin import MemRefType

from purlin.atom import dialect as atom
from purlin.atom.generations import MAX_THREADS_PER_SM
from purlin.cuda.abi import SHARED_TABLE_WORDS
from purlin.cuda.codegen import CodegenError, KernelSource, count_words, emit_cuda, grid_of
from purlin.cuda.nvrtc import NvrtcError, compile_cubin
from purlin.cuda.tables import TableError, Tables, build_counts_tables, build_rank_tables, build_tables
from purlin.diagnostics import op_error
from purlin.dtypes import DTYPE_BYTES, dtype_of_element_type
from purlin.snac.errors import SnacExecutionError
from purlin.snac.phase_binding import PhaseState, phase_states


class ProgramError(Exception):
    """The kernel cannot be generated, laid out or compiled (the message names the op)."""


class CudaProgram:
    """The compiled form of one atom.kernel with its counts bound."""

    def __init__(self, kernel: atom.KernelOp, counts: Sequence | None = None):
        self.kernel = kernel
        self.counts = counts
        self.arch = kernel.arch.value
        self.world = kernel.world_size
        self.grid = grid_of(kernel)
        self.threads = kernel.threads.value.data
        self._sources: dict[int, KernelSource] = {}

    @property
    def device_counts(self) -> bool:
        """Whether the kernel reads its counts on the device at each call."""
        return self.kernel.counts is not None and self.counts is None

    @property
    def count_words(self) -> int:
        """Counts each rank passes per call (0 unless `device_counts`)."""
        return count_words(self.kernel) if self.device_counts else 0

    @property
    def dtype(self) -> str:
        return dtype_of_element_type(self.kernel.input.type.element_type)

    @property
    def elem_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def buffer_elems(self) -> tuple[int, int]:
        """Elements of the input and output the kernel was built for: the
        bounds of a device-counts kernel (-1: a size set by bound counts)."""
        ins, outs = self.kernel.input.type, self.kernel.output.type
        assert isinstance(ins, MemRefType) and isinstance(outs, MemRefType)
        return ins.get_shape()[0], outs.get_shape()[0]

    @cached_property
    def tables(self) -> Tables:
        if self.device_counts:
            return self._laid_out(lambda: build_counts_tables(self.kernel, count_words(self.kernel)))
        return self._laid_out(lambda: build_tables(self.kernel, phase_states(self.kernel, self.world, self.counts)))

    def rank_tables(self, rank: int, phases: dict[str, PhaseState] | None = None) -> np.ndarray:
        """Rank `rank`'s row of `tables`, laid out without the other ranks'
        records: what one process running that rank launches with. `phases`:
        the kernel's phases bound to this program's counts, when the caller
        has them (the rank's plan is built from the same)."""
        return self._laid_out(lambda: build_rank_tables(
            self.kernel, phase_states(self.kernel, self.world, self.counts) if phases is None else phases,
            rank)).ranks[0]

    def _laid_out(self, build: Callable[[], Tables]) -> Tables:
        """`build()`, its errors as ProgramError naming the kernel."""
        try:
            return build()
        except SnacExecutionError as e:
            raise ProgramError(str(e)) from None
        except TableError as e:
            raise ProgramError(op_error(self.kernel, str(e))) from None

    @cached_property
    def shared_tables(self) -> bool:
        """Whether each block copies the tables into shared memory (when they are
        small enough); a code-shape constant of the kernel. Device counts build
        them there."""
        return self.device_counts or self.tables.words <= SHARED_TABLE_WORDS

    def source(self, blocks_per_sm: int = 1) -> KernelSource:
        """The generated translation unit, registers sized for `blocks_per_sm`."""
        if blocks_per_sm not in self._sources:
            try:
                self._sources[blocks_per_sm] = emit_cuda(self.kernel, self.shared_tables, blocks_per_sm,
                                                         self.device_counts)
            except CodegenError as e:
                raise ProgramError(str(e)) from None
        return self._sources[blocks_per_sm]

    def cubin(self, blocks_per_sm: int = 1) -> bytes:
        src = self.source(blocks_per_sm)
        try:
            return compile_cubin(src.text, src.arch, f"{src.name}.cu").cubin
        except NvrtcError as e:
            raise ProgramError(op_error(self.kernel, str(e))) from None

    def specialised(self, blocks_per_sm: int, ranks: Sequence[int]) -> tuple[KernelSource, bytes]:
        """The kernel with the tables of `ranks` (those one process launches)
        compiled in, and its cubin: the same protocol over the same tables as
        `source`, but a lookup at an index the compiler knows is a constant
        (purlin.runtime's specialise loads it in place of the generic one)."""
        if self.device_counts:
            raise ProgramError(op_error(self.kernel, "a kernel that reads its counts on the device has no tables "
                                                     "to compile in"))
        tables = {r: [int(w) for w in self.tables.ranks[r]] for r in ranks}
        try:
            src = emit_cuda(self.kernel, self.shared_tables, blocks_per_sm, False, tables)
            return src, compile_cubin(src.text, src.arch, f"{src.name}.cu").cubin
        except CodegenError as e:
            raise ProgramError(str(e)) from None
        except NvrtcError as e:
            raise ProgramError(op_error(self.kernel, str(e))) from None

    def blocks_per_sm(self, ranks_per_device: int, sms: int) -> int:
        """Blocks each SM must hold for `ranks_per_device` grids to be co-resident."""
        return max(1, -(-self.grid * ranks_per_device // sms))

    def resident_blocks_per_sm(self, ranks_per_device: int, sms: int, device: int, name: str) -> int:
        """blocks_per_sm, or ValueError where an SM cannot hold that many (the
        ranks' blocks wait for each other, so all must be resident at once):
        a grid sized for fewer ranks on the GPU than share it."""
        per_sm = self.blocks_per_sm(ranks_per_device, sms)
        if per_sm * self.threads > MAX_THREADS_PER_SM:
            raise ValueError(
                f"{name}: {ranks_per_device} ranks share GPU {device}, whose {sms} SMs cannot hold their grids at "
                f"once: {self.grid} blocks of {self.threads} threads a rank need {per_sm} blocks an SM, "
                f"{per_sm * self.threads} threads where an SM holds {MAX_THREADS_PER_SM}; lower it for "
                f"{ranks_per_device} ranks on a GPU of {sms} SMs (convert-coll-to-snac "
                f"ranks-per-device={ranks_per_device} sms={sms}; compile_collective's ranks_per_device and sms)")
        return per_sm

    def spec(self, blocks_per_sm: int, input_bytes: Sequence[int], output_bytes: Sequence[int]):
        """The runtime's description of the kernel (purlin._runtime.KernelSpec)."""
        from purlin import _runtime

        src = self.source(blocks_per_sm)
        s = _runtime.KernelSpec()
        s.cubin = self.cubin(blocks_per_sm)
        s.name = src.name
        s.arch = int(self.arch.removeprefix("sm_"))
        s.world = self.world
        s.threads = src.threads
        s.grid = src.grid
        # The pipelines' shared memory, then the tables'.
        s.smem = src.smem + (8 * self.tables.words if src.shared_tables else 0)
        s.sites = len(src.sites)
        s.site_names = list(src.sites)
        s.counter_stride = self.tables.counter_stride
        s.symmetric_bytes = self.tables.symmetric_bytes
        s.tables = [t.tolist() for t in self.tables.ranks]
        s.input_bytes = list(input_bytes)
        s.output_bytes = list(output_bytes)
        s.multimem = src.multimem
        s.count_words = src.count_words
        s.symmetric = src.symmetric
        s.gpu_scope = not src.system_scope
        s.stream = list(src.stream)
        return s
