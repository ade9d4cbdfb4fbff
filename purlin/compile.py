"""One named collective compiled to the plan the runtime executes.

    plan = compile_plan("all_reduce", world=4, dtype="bf16", op="sum", count=1024)
    Communicator(plan, backend="cpu").run(inputs, outputs)

The path is the pipeline's: CollectiveSpec -> coll module -> coll-expand,
convert-coll-to-snac{lowering}, convert-snac-to-atom{arch} -> build_plan.
Counts are static (V forms take `counts`), so the plan is built at once.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import UnitAttr

from purlin.atom import dialect as atom
from purlin.coll.builder import CollectiveSpec
from purlin.conversion.atom_to_plan import build_plan
from purlin.pipeline import entry_function, lower, pipeline_spec
from purlin.plan import ARCHS, Plan

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


def compile_plan(collective: str, world: int, dtype: str, op: str | None, count: int = 0,
                 counts: Sequence | None = None, arch: str = CPU_ARCH, lowering: str = "",
                 deterministic: bool = False, in_place: bool = False) -> Plan:
    """The plan of `collective` on `world` ranks; CollectiveSpec's rules for sizes
    and ops (SpecError on a bad combination), `lowering` the options of convert-coll-to-snac.
    `in_place`: the collective's input and output are one buffer (all_reduce)."""
    if arch not in ARCHS:
        raise ValueError(f"unknown arch {arch!r}, expected one of {', '.join(ARCHS)}")
    module = CollectiveSpec(collective, world, dtype, op, count, counts=counts).build_module()
    for named in module.walk():
        if named.name == f"coll.{collective}":
            if deterministic:
                named.properties["deterministic"] = UnitAttr()
            if in_place:
                named.operands[1] = named.operands[0]
    func = entry_function(lower(module, pipeline_spec("atom", lowering=lowering, arch=arch, verify=False)))
    kernels = [k for k in func.body.ops if isinstance(k, atom.KernelOp)]
    if len(kernels) != 1:
        raise RuntimeError(f"{collective}: lowering gave {len(kernels)} atom.kernel ops, expected one")
    return build_plan(kernels[0])
