"""The atom and plan levels.

atom: lower to Atom IR for options["arch"] and execute the kernels with the
SNAC scheduler (atom ops are snac ops with a mechanism). plan: build each
kernel's plan and execute it on options["backend"]: "sim" (the plan machine,
default), or a runtime backend of purlin.runtime ("cpu", "cuda"; options
["devices"] gives each rank's GPU, several ranks may share one).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.func import FuncOp, ReturnOp

from purlin.atom import dialect as atom
from purlin.compile.pipeline import pipeline_spec
from purlin.conversion.atom_to_plan import PlanBuildError, build_plan
from purlin.levels.base import SimError, check_args, level
from purlin.levels.snac import arg_index, counts_of, run_programs
from purlin.simulator.plan_machine import PlanExecutionError, PlanMachine


def atom_passes(options: dict[str, Any]) -> str:
    return pipeline_spec("atom", lowering=options.get("lowering", ""), arch=options.get("arch", "sm_90"), verify=False)


@level(atom_passes)
def run_atom(func: FuncOp, args: list[list[np.ndarray]], world: int, seed: int, options: dict[str, Any]) -> None:
    run_programs(func, args, world=world, seed=seed, calls=options.get("calls", 1))


@level(atom_passes)
def run_plan(func: FuncOp, args: list[list[np.ndarray]], world: int, seed: int, options: dict[str, Any]) -> None:
    check_args(func, args, world)
    for op in func.body.ops:
        if isinstance(op, ReturnOp):
            return
        if not isinstance(op, atom.KernelOp):
            raise SimError(f"the plan level cannot execute '{op.name}'")
        counts = counts_of(func, op, args)
        try:
            plan = build_plan(op, counts)
        except PlanBuildError as e:
            raise SimError(str(e)) from None
        if plan.world != world:
            raise SimError(f"the plan is for world {plan.world}, run on {world} ranks")
        inputs = args[arg_index(func, op.input, op)]
        outputs = args[arg_index(func, op.output, op)]
        backend = options.get("backend", "sim")
        if backend != "sim":
            _run_backend(plan, op, counts, backend, inputs, outputs, options)
            continue
        machine = PlanMachine(plan)
        try:
            for call in range(options.get("calls", 1)):
                machine.run(inputs, outputs, seed=seed + call)
        except PlanExecutionError as e:
            raise SimError(str(e)) from None


class RuntimeRefused(SimError):
    """The runtime refuses the plan before running it: its kernel cannot be
    generated, compiled or placed on the devices, or the buffers cannot reach them."""


def _run_backend(plan, kernel: atom.KernelOp, counts, backend: str, inputs: list[np.ndarray],
                 outputs: list[np.ndarray], options: dict[str, Any]) -> None:
    """`plan` of `kernel` (its counts bound to `counts`) on runtime backend `backend`."""
    from purlin import runtime
    from purlin.cuda.program import CudaProgram, ProgramError

    devices = options.get("devices") or list(range(plan.world))
    if len(devices) != plan.world:
        raise RuntimeRefused(f"the {backend} backend refuses the plan: {len(devices)} devices for a world of "
                             f"{plan.world} (one per rank)")
    # Setting up refuses what cannot run at all; what fails after that is the level failing.
    try:
        comm = runtime.Communicator(plan, backend, timeout_s=options.get("timeout_s", 10.0),
                                    name=options.get("name", "collective"),
                                    devices=devices if backend == "cuda" else None,
                                    kernel=CudaProgram(kernel, counts) if backend == "cuda" else None)
        if backend == "cuda":
            device_in = [runtime.to_device(a, d) for a, d in zip(inputs, devices)]
            device_out = [runtime.to_device(a, d) for a, d in zip(outputs, devices)]
    except (ProgramError, RuntimeError, ValueError, TypeError, ImportError) as e:
        raise RuntimeRefused(f"the {backend} backend refuses the plan: {e}") from None
    try:
        if backend == "cpu":
            for _ in range(options.get("calls", 1)):
                comm.run(inputs, outputs)
            return
        for _ in range(options.get("calls", 1)):
            comm.run(device_in, device_out)
        comm.synchronize()
        for r, d in enumerate(device_out):
            outputs[r][...] = runtime.to_host(d, outputs[r].dtype)
    except (runtime.CollectiveTimeout, RuntimeError, ValueError, TypeError) as e:
        raise SimError(f"{backend} backend: {e}") from None
