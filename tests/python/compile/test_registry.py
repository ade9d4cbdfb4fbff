"""Every dialect imports and registers, in purlin-opt and through xDSL's universe."""

from xdsl.universe import Universe

from purlin.compile.universe import DIALECTS, PASSES
from purlin.tools.opt import PurlinOptMain


def test_dialects_register_in_purlin_opt():
    main = PurlinOptMain(args=[])
    for name in DIALECTS:
        assert name in main.ctx.registered_dialect_names
    for name in PASSES:
        assert name in main.available_passes


def test_universe_entry_point_is_discovered():
    multiverse = Universe.get_multiverse()
    assert set(DIALECTS) <= set(multiverse.all_dialects)
    assert set(PASSES) <= set(multiverse.all_passes)
    for factory in DIALECTS.values():
        assert factory().name in DIALECTS
