"""The struct-like attributes of process grouping: their text, defaults and refusals."""

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from purlin.frontends import stablehlo as shlo

AXIS_X = '#stablehlo.mesh_axis<name = "x", size = 2>'
MESH = f'#stablehlo.mesh<axes = [{AXIS_X}, #stablehlo.mesh_axis<name = "y", size = 4>]>'


def _parse(text: str):
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(shlo.StableHLO)
    return Parser(ctx, text).parse_attribute()


@pytest.mark.parametrize("text", [
    "#stablehlo.channel_handle<handle = 1, type = 2>",
    AXIS_X,
    MESH,
    '#stablehlo.axis_ref<name = "y">',
    '#stablehlo.axis_ref<name = "y", sub_axis_info = (2)2>',
    f'#stablehlo.replica_group_mesh_axes<mesh = {MESH}, axes = [#stablehlo.axis_ref<name = "x">]>',
])
def test_round_trip(text):
    attr = _parse(text)
    assert str(attr) == text
    assert _parse(str(attr)) == attr


def test_fields_in_any_order_and_defaults():
    attr = _parse("#stablehlo.channel_handle<type = 2>")
    assert isinstance(attr, shlo.ChannelHandleAttr)
    assert (attr.handle.data, attr.type.data) == (0, 2)
    axis = _parse('#stablehlo.mesh_axis<size = 3, name = "z">')
    assert isinstance(axis, shlo.MeshAxisAttr)
    assert (axis.axis.data, axis.size.data) == ("z", 3)


def test_unknown_field():
    with pytest.raises(ParseError, match="unknown field 'handel', expected one of handle, type"):
        _parse("#stablehlo.channel_handle<handel = 1>")


def test_negative_axis_size():
    with pytest.raises(ParseError, match="Expected integer literal"):
        _parse('#stablehlo.mesh_axis<name = "x", size = -2>')


@pytest.mark.parametrize("text, expected", [
    ("#stablehlo.mesh<axes = [1]>", "stablehlo.mesh_axis"),
    (f"#stablehlo.replica_group_mesh_axes<mesh = {MESH}, axes = [{AXIS_X}]>", "stablehlo.axis_ref"),
])
def test_lists_hold_their_kind(text, expected):
    with pytest.raises(VerifyException, match=expected):
        _parse(text)
