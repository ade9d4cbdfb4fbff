"""Registry of purlin's dialects and passes, shared by `purlin-opt` and the
`xdsl.universe` entry point (so plain `xdsl-opt` knows them too)."""

from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe
from xdsl.utils.target import Target


def _coll() -> Dialect:
    from purlin.coll.dialect import Coll

    return Coll


def _snac() -> Dialect:
    from purlin.snac.dialect import Snac

    return Snac


def _atom() -> Dialect:
    from purlin.atom.dialect import Atom

    return Atom


def _convert_snac_to_atom() -> type[ModulePass]:
    from purlin.conversion.snac_to_atom import ConvertSnacToAtomPass

    return ConvertSnacToAtomPass


def _coll_expand() -> type[ModulePass]:
    from purlin.coll.expand import CollExpandPass

    return CollExpandPass


def _convert_coll_to_snac() -> type[ModulePass]:
    from purlin.conversion.coll_to_snac import ConvertCollToSnacPass

    return ConvertCollToSnacPass


def _snac_verify() -> type[ModulePass]:
    from purlin.simulator.snac_verify import SnacVerifyPass

    return SnacVerifyPass


def _stablehlo() -> Dialect:
    from purlin.frontends.stablehlo import StableHLO

    return StableHLO


def _interpreter() -> Dialect:
    from purlin.frontends.interpreter import Interpreter

    return Interpreter


def _check() -> Dialect:
    from purlin.frontends.check import Check

    return Check


def _sdy() -> Dialect:
    from purlin.frontends.sdy import Sdy

    return Sdy


def _tensor_coll() -> Dialect:
    from purlin.frontends.tensor_coll import TensorColl

    return TensorColl


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "coll": _coll,
    "snac": _snac,
    "atom": _atom,
    "stablehlo": _stablehlo,
    "interpreter": _interpreter,
    "check": _check,
    "sdy": _sdy,
    "tensor_coll": _tensor_coll,
}


def _shard() -> Dialect:
    """xDSL's `shard` with the collectives purlin adds that xDSL 0.74 lacks
    (one namespace), built when a shard op is first parsed."""
    from xdsl.dialects.shard import Shard

    from purlin.frontends.shard import SHARD_OPS

    ops = list(Shard.operations)
    ops += [op for op in SHARD_OPS if op.name not in {o.name for o in ops}]
    return Dialect("shard", ops, list(Shard.attributes))


def dialect_factories() -> dict[str, Callable[[], Dialect]]:
    """Every dialect a purlin context knows: xDSL's and purlin's, with xDSL's
    `shard` extended (not in PURLIN_UNIVERSE, which may not redefine xDSL's).
    xDSL's own table, not the multiverse: scanning the entry points costs
    more than a small compile."""
    from xdsl.dialects import get_all_dialects

    return {**get_all_dialects(), **DIALECTS, "shard": _shard}


def _convert_stablehlo_to_coll() -> type[ModulePass]:
    from purlin.conversion.stablehlo_to_coll import ConvertStablehloToCollPass

    return ConvertStablehloToCollPass


def _convert_shard_to_coll() -> type[ModulePass]:
    from purlin.conversion.shard_to_coll import ConvertShardToCollPass

    return ConvertShardToCollPass


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "convert-stablehlo-to-coll": _convert_stablehlo_to_coll,
    "convert-shard-to-coll": _convert_shard_to_coll,
    "coll-expand": _coll_expand,
    "convert-coll-to-snac": _convert_coll_to_snac,
    "snac-verify": _snac_verify,
    "convert-snac-to-atom": _convert_snac_to_atom,
}

def _plan_json() -> type[Target]:
    from purlin.compile.plan_target import PlanJsonTarget

    return PlanJsonTarget


def _plan_hex() -> type[Target]:
    from purlin.compile.plan_target import PlanHexTarget

    return PlanHexTarget


def _cuda() -> type[Target]:
    from purlin.cuda.target import CudaTarget

    return CudaTarget


def _cubin() -> type[Target]:
    from purlin.cuda.target import CubinTarget

    return CubinTarget


TARGETS: dict[str, Callable[[], type[Target]]] = {
    "plan-json": _plan_json,
    "plan-hex": _plan_hex,
    "cuda": _cuda,
    "cubin": _cubin,
}

PURLIN_UNIVERSE = Universe(all_dialects=DIALECTS, all_passes=PASSES, all_targets=TARGETS)
