"""A deliberately broken protocol or lowering must fail `purlin-run --level
snac` loudly: exit 1, naming the rank and offset that went wrong."""

import dataclasses
import re

import pytest

from purlin.coll.layouts import Layout
from purlin.conversion import coll_to_snac as convert_coll_to_snac
from purlin.snac import protocol
from purlin.tools.run import main

MISMATCH = re.compile(r"result=mismatch[^:]*: rank (\d+) offset (\d+) of %out: got (\S+)")


def run_snac(capsys, collective, world, nbytes, lowering):
    code = main(["--collective", collective, "--world", str(world), "--bytes", str(nbytes),
                 "--dtype", "f32", "--level", "snac", "--lowering", lowering])
    out, err = capsys.readouterr()
    return code, out + err


def run_mismatch(capsys, collective, world, nbytes, lowering) -> re.Match:
    """The first mismatch that `run_snac` reports; it must exit 1 with one."""
    code, out = run_snac(capsys, collective, world, nbytes, lowering)
    assert code == 1, out
    m = MISMATCH.search(out)
    assert m, out
    return m


@pytest.mark.parametrize("lowering", ["regime=latency", "regime=throughput strategy=direct"])
def test_reduction_that_drops_a_source(monkeypatch, capsys, lowering):
    build = protocol.rank_groups

    def drop_last(plan, rank):
        return tuple(dataclasses.replace(g, sources=g.sources[:-1]) for g in build(plan, rank))

    # The protocol is shared by the pass and the simulator, so they agree
    # on the broken one: only the reference can tell.
    monkeypatch.setattr(protocol, "rank_groups", drop_last)
    m = run_mismatch(capsys, "all_reduce", 4, 64, lowering)
    assert (m[1], m[2]) == ("0", "0")


def test_skipped_unit_leaves_nan_where_it_belonged(monkeypatch, capsys):
    chunks = protocol._chunks

    def skip_second(size, chunk):
        return [c for i, c in enumerate(chunks(size, chunk)) if i != 1]

    monkeypatch.setattr(protocol, "_chunks", skip_second)
    # all_gather of 8 f32 per rank in 16-byte chunks: elements 4..7 of every
    # slice are never staged nor consumed, so rank 0's output keeps its NaN.
    m = run_mismatch(capsys, "all_gather", 2, 64, "regime=throughput chunk-bytes=16 slots=2")
    assert (m[1], m[2], m[3]) == ("0", "4", "nan")


def test_forward_that_misses_a_destination(monkeypatch, capsys):
    owner_layouts = protocol.owner_layouts

    def lose_one(dst):
        owned, rest = owner_layouts(dst)
        return owned, Layout.named(rest.world, [s for n in rest.names() for s in rest.slices_named(n)][1:])

    monkeypatch.setattr(protocol, "owner_layouts", lose_one)
    # Composed all_reduce of 4x4 f32: rank 0 owns slice 0 and forwards it to
    # ranks 1, 2, 3; without the first of those, rank 1 never receives it.
    m = run_mismatch(capsys, "all_reduce", 4, 64, "regime=throughput strategy=composed")
    assert (m[1], m[2], m[3]) == ("1", "0", "nan")


def test_missing_notify_is_reported_as_such(monkeypatch, capsys):
    produce = convert_coll_to_snac._Gen._produce

    def no_notify(self, b, phase, unit):
        produce(self, b, phase, unit)
        b.insertion_point.block.last_op.detach()  # the snac.notify just built

    monkeypatch.setattr(convert_coll_to_snac._Gen, "_produce", no_notify)
    code, out = run_snac(capsys, "all_gather", 3, 48, "regime=throughput")
    assert code == 1, out
    assert re.search(r"result=error: .*missing notify: rank \d+ \(consumer\) waits", out), out
