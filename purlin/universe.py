"""Registry of purlin's dialects and passes, shared by `purlin-opt` and the
`xdsl.universe` entry point (so plain `xdsl-opt` knows them too)."""

from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe


def _coll() -> Dialect:
    from purlin.dialects.coll import Coll

    return Coll


def _coll_expand() -> type[ModulePass]:
    from purlin.lowering.coll_expand import CollExpandPass

    return CollExpandPass


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "coll": _coll,
}

PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "coll-expand": _coll_expand,
}

PURLIN_UNIVERSE = Universe(all_dialects=DIALECTS, all_passes=PASSES)
