"""Every lowering path (purlin-opt's driver and `purlin.compile.pipeline.lower`, which
the levels and compile_plan use) refuses a pass that does not apply and a
lowering that leaves ops behind."""

import pytest
from xdsl.utils.exceptions import PassFailedException

from purlin.compile.pipeline import lower, parse_module
from purlin.testing.cases import Case

NAMED = Case("all_reduce", 2, "f32", "sum", 8).build_module()


@pytest.mark.parametrize(
    "passes, message",
    [
        ("convert-coll-to-snac", "pass 'convert-coll-to-snac' does not apply to it: it takes "
                                 "coll.collective; run coll-expand before it"),
        ("coll-expand,convert-snac-to-atom", "pass 'convert-snac-to-atom' does not apply to it: it "
                                             "takes snac.program; run convert-coll-to-snac before it"),
        ("coll-expand,snac-verify", "pass 'snac-verify' does not apply to it"),
    ],
)
def test_lower_refuses_a_pass_that_does_not_apply(passes, message):
    with pytest.raises(PassFailedException, match="'coll.(all_reduce|collective)': " + message):
        lower(NAMED, passes)


def test_a_module_without_collectives():
    empty = parse_module("func.func @f() {\n  func.return\n}\n")
    with pytest.raises(PassFailedException, match="pass 'coll-expand' does not apply: it takes a "
                       "named collective or coll.collective, and the module holds no collective"):
        lower(empty, "coll-expand")


def test_passes_that_apply_lower_everything():
    lowered = lower(NAMED, "coll-expand,convert-coll-to-snac,snac-verify,convert-snac-to-atom,snac-verify")
    assert [op.name for op in lowered.walk() if op.name.startswith(("coll.", "snac.program"))] == []


def test_coll_expand_takes_the_generic_form_as_it_is():
    generic = lower(NAMED, "coll-expand")
    assert str(lower(generic, "coll-expand")) == str(generic)
