"""Registry of purlin's dialects and passes, shared by `purlin-opt` and the
`xdsl.universe` entry point (so plain `xdsl-opt` knows them too)."""

from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe
from xdsl.utils.target import Target


def _coll() -> Dialect:
    from purlin.dialects.coll import Coll

    return Coll


def _snac() -> Dialect:
    from purlin.dialects.snac import Snac

    return Snac


def _atom() -> Dialect:
    from purlin.dialects.atom import Atom

    return Atom


def _convert_snac_to_atom() -> type[ModulePass]:
    from purlin.lowering.convert_snac_to_atom import ConvertSnacToAtomPass

    return ConvertSnacToAtomPass


def _coll_expand() -> type[ModulePass]:
    from purlin.lowering.coll_expand import CollExpandPass

    return CollExpandPass


def _convert_coll_to_snac() -> type[ModulePass]:
    from purlin.lowering.convert_coll_to_snac import ConvertCollToSnacPass

    return ConvertCollToSnacPass


def _snac_verify() -> type[ModulePass]:
    from purlin.lowering.snac_verify import SnacVerifyPass

    return SnacVerifyPass


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "coll": _coll,
    "snac": _snac,
    "atom": _atom,
}

PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "coll-expand": _coll_expand,
    "convert-coll-to-snac": _convert_coll_to_snac,
    "snac-verify": _snac_verify,
    "convert-snac-to-atom": _convert_snac_to_atom,
}

def _plan_json() -> type[Target]:
    from purlin.plan_target import PlanJsonTarget

    return PlanJsonTarget


def _plan_hex() -> type[Target]:
    from purlin.plan_target import PlanHexTarget

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
