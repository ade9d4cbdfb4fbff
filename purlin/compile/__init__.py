"""One named collective compiled to what the runtime executes.

    plan = compile_plan("all_reduce", world=4, dtype="bf16", op="sum", count=1024)
    Communicator(plan, backend="cpu").run(inputs, outputs)

    compiled = compile_collective("all_reduce", world=4, dtype="bf16", op="sum", count=1024, arch="sm_90")
    Communicator(compiled.plan, backend="cuda", kernel=compiled.cuda).run(inputs, outputs)

The path is the pipeline's: CollectiveSpec -> coll module -> coll-expand,
convert-coll-to-snac{lowering}, convert-snac-to-atom{arch} -> atom.kernel,
then build_plan (the plan: the runtime contract, all the CPU backend and
the simulator run) and, for `compile_collective`, the CUDA program of the
same kernel beside it (built lazily: nothing is generated until a backend
asks). Counts are static (V forms take `counts`), so the plan is built at once.

    coll = compile_device_counts("all_to_all_v", world=8, dtype="bf16", input_elems=n, output_elems=m)

is a V collective whose counts are known only when it is called: its buffers
are bounds, its CUDA kernel (`coll.cuda`) reads every call's counts on the
device, and `coll.bind(counts)` is the plan of one set of counts (what the CPU
backend runs; `coll.bind_collective(counts)` that plan and its kernel).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

# xDSL's pattern rewriter imports it on its first rewrite: loaded with this
# module, as the passes below are, rather than by the first call.
import xdsl.transforms.dead_code_elimination  # noqa: F401
from xdsl.dialects.builtin import UnitAttr

# The passes every compile runs, loaded with this module rather than by the
# first call's pipeline (purlin-opt's registry loads them lazily).
import purlin.coll.expand  # noqa: F401
import purlin.conversion.coll_to_snac  # noqa: F401
import purlin.conversion.snac_to_atom  # noqa: F401
from purlin.atom import dialect as atom
from purlin.coll.builder import COLLECTIVES, CollectiveSpec, SpecError
from purlin.conversion.atom_to_plan import bind_phases, build_plan, build_rank_plan
from purlin.cuda.program import CudaProgram
from purlin.diagnostics import verify_located
from purlin.compile.pipeline import check_step, entry_function, lower, make_context, pipeline, pipeline_spec
from purlin.plan import ARCHS, Plan, RankPlan

# The CPU backend runs any generation's plan (it executes instructions, not
# mechanisms); sm_90 is the generation the tests use.
CPU_ARCH = "sm_90"


def arch_of_device(device: int | None = None) -> str:
    """The purlin generation of CUDA device `device` (default: the current one)."""
    import torch

    major, minor = torch.cuda.get_device_capability(device)
    if major >= 10:
        return "sm_100"
    if major == 9:
        return "sm_90"
    if major == 8:
        return "sm_80"
    raise RuntimeError(f"purlin needs an sm_80 or newer GPU, this one is sm_{major}{minor}")


@dataclass(frozen=True)
class Compiled:
    """A collective compiled for every backend: its plan (the runtime contract:
    what the CPU backend and the simulator run) and, beside it, the CUDA
    program of the same atom.kernel (what the CUDA backend launches)."""

    plan: Plan
    cuda: CudaProgram


@dataclass(frozen=True)
class CompiledRank:
    """One rank's part of a `Compiled`: its part of the plan and its kernel
    tables (int64 words, laid out as abi.h says; the kernel is every rank's)."""

    plan: RankPlan
    tables: np.ndarray = field(repr=False)


def compile_collective(collective: str, world: int, dtype: str, op: str | None, count: int = 0,
                       counts: Sequence | None = None, arch: str = CPU_ARCH, lowering: str = "",
                       deterministic: bool = False, in_place: bool = False, symmetric: bool = False,
                       ranks_per_device: int = 1, sms: int = 0, *, verify_steps: bool = True) -> Compiled:
    """The plan of `collective` on `world` ranks and its CUDA program;
    CollectiveSpec's rules for sizes and ops (SpecError on a bad combination),
    `lowering` the options of convert-coll-to-snac.
    `in_place`: the collective's input and output are one buffer (all_reduce).
    `symmetric`: every rank's buffers are addressable by its peers (a
    Communicator's ranks share one process), so large calls move data in place
    between them; `ranks_per_device` ranks share each GPU of `sms`
    multiprocessors (0: the generation's), which bounds the blocks of each rank.
    Options named in `lowering` win over these. `verify_steps` False verifies
    the module before the passes only (see `_kernel`): a caller lowering at
    run time, size by size, spares about 40 % of the time."""
    if arch not in ARCHS:
        raise ValueError(f"unknown arch {arch!r}, expected one of {', '.join(ARCHS)}")
    spec = CollectiveSpec(collective, world, dtype, op, count, counts=counts)
    if in_place and (sizes := spec.buffer_sizes())[0] != sizes[1]:
        raise SpecError(f"{collective}: in_place=True makes the input and output one buffer, but they hold "
                        f"{sizes[0]} and {sizes[1]} elements; in place takes a collective whose two are one size "
                        "(all_reduce); for an all_gather into the rank's own output slice, or a reduce_scatter into "
                        "its own input slice, pass that slice and lower as usual")
    module = spec.build_module()
    lowering = placement_options(lowering, symmetric, ranks_per_device, sms)
    kernel = _kernel(collective, module, arch, lowering, deterministic, in_place, verify_steps)
    return Compiled(build_plan(kernel), CudaProgram(kernel))


def compile_plan(collective: str, world: int, dtype: str, op: str | None, count: int = 0,
                 counts: Sequence | None = None, arch: str = CPU_ARCH, lowering: str = "",
                 deterministic: bool = False, in_place: bool = False, symmetric: bool = False,
                 ranks_per_device: int = 1, sms: int = 0) -> Plan:
    """`compile_collective`'s plan alone: what the CPU backend, the simulator
    and the tools run (its CUDA program, unused, is never generated)."""
    return compile_collective(collective, world, dtype, op, count, counts, arch, lowering, deterministic, in_place,
                              symmetric, ranks_per_device, sms).plan


def compile_rank_plan(collective: str, world: int, dtype: str, op: str | None, rank: int, count: int = 0,
                      counts: Sequence | None = None, arch: str = CPU_ARCH, lowering: str = "",
                      deterministic: bool = False, in_place: bool = False) -> RankPlan:
    """Rank `rank`'s part of `compile_plan`'s plan, built without the other
    ranks': what one process of a rank needs."""
    return build_rank_plan(_rank_kernel(collective, world, dtype, op, rank, count, counts, arch, lowering,
                                        deterministic, in_place), rank)


def compile_rank_collective(collective: str, world: int, dtype: str, op: str | None, rank: int, count: int = 0,
                            counts: Sequence | None = None, arch: str = CPU_ARCH, lowering: str = "",
                            deterministic: bool = False, in_place: bool = False) -> CompiledRank:
    """`compile_rank_plan`'s part of the plan and that rank's kernel tables side
    by side, neither built from the other ranks' records."""
    kernel = _rank_kernel(collective, world, dtype, op, rank, count, counts, arch, lowering, deterministic, in_place)
    # One binding of the phases for both: the rank's units and groups are built once.
    phases = bind_phases(kernel)
    return CompiledRank(build_rank_plan(kernel, rank, phases=phases), CudaProgram(kernel).rank_tables(rank, phases))


def _rank_kernel(collective: str, world: int, dtype: str, op: str | None, rank: int, count: int,
                 counts: Sequence | None, arch: str, lowering: str, deterministic: bool,
                 in_place: bool) -> atom.KernelOp:
    """The atom.kernel of `compile_rank_plan`'s arguments."""
    if arch not in ARCHS:
        raise ValueError(f"unknown arch {arch!r}, expected one of {', '.join(ARCHS)}")
    if not 0 <= rank < world:
        raise SpecError(f"{collective}: rank {rank} is outside world {world}")
    spec = CollectiveSpec(collective, world, dtype, op, count, counts=counts)
    return _kernel(collective, spec.build_module(), arch, lowering, deterministic, in_place, verify_steps=False)


def placement_options(lowering: str, symmetric: bool = False, ranks_per_device: int = 1, sms: int = 0) -> str:
    """`lowering` (options of convert-coll-to-snac) with the options that say
    where the ranks' buffers live and how many ranks share a GPU, unless it
    names them itself."""
    named = {word.partition("=")[0] for word in lowering.split()}
    extra = [f"{key}={value}" for key, value, default in (("symmetric", str(symmetric).lower(), "false"),
                                                           ("ranks-per-device", ranks_per_device, 1),
                                                           ("sms", sms, 0))
             if key not in named and value != default]
    return " ".join([lowering, *extra]).strip()


def _kernel(collective: str, module, arch: str, lowering: str, deterministic: bool = False,
            in_place: bool = False, verify_steps: bool = True) -> atom.KernelOp:
    """The atom.kernel of `module`'s collective. `verify_steps` False
    verifies the module once, before the passes, not after each: what the
    passes make from verified IR verifies (their tests check it after every
    pass), so one rank's plan skips those walks, whose layout checks cover
    every rank; the plan built from it is validated still."""
    for named in module.walk():
        if named.name == f"coll.{collective}":
            if deterministic:
                named.properties["deterministic"] = UnitAttr()
            if in_place:
                named.operands[1] = named.operands[0]
    passes = pipeline_spec("atom", lowering=lowering, arch=arch, verify=False)
    if verify_steps:
        lowered = lower(module, passes)
    else:
        verify_located(module)
        pipeline(passes, partial(check_step, verify=False)).apply(make_context(), module)
        lowered = module
    func = entry_function(lowered)
    kernels = [k for k in func.body.ops if isinstance(k, atom.KernelOp)]
    if len(kernels) != 1:
        raise RuntimeError(f"{collective}: lowering gave {len(kernels)} atom.kernel ops, expected one")
    return kernels[0]


@dataclass(frozen=True)
class DeviceCountsCollective:
    """A V collective lowered with dynamic counts over buffers of fixed size:
    the atom.kernel and, beside it, its CUDA program, which reads every
    call's counts on the device."""

    collective: str
    world: int
    dtype: str
    kernel: atom.KernelOp
    input_elems: int
    output_elems: int
    cuda: CudaProgram = field(repr=False)

    @property
    def elem_bytes(self) -> int:
        return self.cuda.elem_bytes

    @property
    def count_words(self) -> int:
        """Counts each rank passes per call: its row of the matrix (all_to_all_v's
        sends), or its own count (all_gather_v, reduce_scatter_v)."""
        return self.cuda.count_words

    def bind(self, counts: Sequence) -> Plan:
        """The plan for `counts`: the full list, or matrix (row = sender)."""
        return build_plan(self.kernel, counts)

    def bind_collective(self, counts: Sequence) -> Compiled:
        """`bind`'s plan and the kernel with these counts bound on the host, side by side."""
        return Compiled(self.bind(counts), CudaProgram(self.kernel, counts))

    def full_counts(self, rows: Sequence[Sequence[int]]) -> list:
        """The collective's counts from every rank's own (what each passes)."""
        if len(rows) != self.world or any(len(r) != self.count_words for r in rows):
            raise ValueError(f"{self.collective}: expected {self.world} ranks' counts of {self.count_words} each")
        if COLLECTIVES[self.collective].matrix:
            return [list(map(int, r)) for r in rows]
        return [int(r[0]) for r in rows]


def compile_device_counts(collective: str, world: int, dtype: str, op: str | None = None, *, input_elems: int,
                          output_elems: int, arch: str = CPU_ARCH, lowering: str = "",
                          counts_on_host: bool = False, in_place: bool = False) -> DeviceCountsCollective:
    """The V collective `collective` over buffers of `input_elems` and
    `output_elems` elements per rank (every call's counts must fit them),
    its counts given at each call. `counts_on_host`: every call's counts are
    bound on the host (bind, bind_collective), never read on the device, so a
    symmetric lowering moves them in place (its `cuda`, which would read them
    on the device, is refused) and a reduction whose slices several ranks
    receive (all_reduce_v) may be composed. `in_place`: the input and output
    are one buffer (all_reduce_v, whose input and output have one layout)."""
    if arch not in ARCHS:
        raise ValueError(f"unknown arch {arch!r}, expected one of {', '.join(ARCHS)}")
    info = COLLECTIVES.get(collective)
    if info is None or not info.variable:
        raise ValueError(f"{collective!r} is not a V collective; device counts are for "
                         f"{', '.join(n for n, c in COLLECTIVES.items() if c.variable)}")
    if input_elems < 0 or output_elems < 0:
        raise ValueError(f"{collective}: buffer sizes must be non-negative, got {input_elems} and {output_elems}")
    if in_place and input_elems != output_elems:
        raise SpecError(f"{collective}: in_place=True makes the input and output one buffer, but they are given "
                         f"{input_elems} and {output_elems} elements")
    # Any counts of the right shape: the module's layouts are dynamic.
    zeros = [[0] * world for _ in range(world)] if info.matrix else [0] * world
    spec = CollectiveSpec(collective, world, dtype, op, counts=zeros, dynamic=True)
    if counts_on_host:
        lowering = f"{lowering} counts-on-host=true".strip()
    kernel = _kernel(collective, spec.build_module((input_elems, output_elems)), arch, lowering, in_place=in_place)
    return DeviceCountsCollective(collective, world, spec.dtype, kernel, input_elems, output_elems, CudaProgram(kernel))
