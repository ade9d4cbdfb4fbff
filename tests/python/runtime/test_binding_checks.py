"""What purlin.runtime.backend.add_binding hands the runtime for another
binding of a communicator's counts, and what it refuses, without a GPU (the
runtime communicator stood in for)."""

from __future__ import annotations

import pytest

from purlin.compile import compile_device_counts, placement_options
from purlin.runtime import backend
from purlin.testing.cases import counts_for


class Runtime:
    """A stand-in runtime communicator: records each binding."""

    def __init__(self):
        self.bindings = []

    def add_binding(self, tables, input_bytes, output_bytes, smem):
        self.bindings.append((tables, input_bytes, output_bytes, smem))
        return len(self.bindings)


@pytest.fixture
def v_form(monkeypatch):
    monkeypatch.setattr(backend._runtime, "cuda_device_sms", lambda device: 132, raising=False)

    def lowered():
        return compile_device_counts("all_gather_v", 2, "bf16", None, input_elems=1 << 16, output_elems=1 << 17,
                                     arch="sm_90", counts_on_host=True,
                                     lowering=placement_options("regime=throughput", True, 2, 132))
    return lowered


def test_a_binding_hands_over_every_rank_s_tables_and_bytes(v_form):
    dc = v_form()
    first, second = dc.bind_collective([100, 200]), dc.bind_collective([3000, 5])
    impl = Runtime()
    assert backend.add_binding(impl, first.cuda, second.cuda, [0, 0], [(3000, 3005), (5, 3005)], "ag") == 1
    ((tables, ins, outs, smem),) = impl.bindings
    assert tables == [t.tolist() for t in second.cuda.tables.ranks]
    assert (ins, outs) == ([6000, 10], [6010, 6010])
    src = second.cuda.source(1)
    assert smem == src.smem + 8 * second.cuda.tables.words


def test_a_binding_of_another_lowering_is_refused(v_form):
    first, other = v_form().bind_collective([100, 200]), v_form().bind_collective([100, 200])
    with pytest.raises(ValueError, match="ag: a binding is the communicator's own kernel with other counts"):
        backend.add_binding(Runtime(), first.cuda, other.cuda, [0, 0], [(100, 300), (200, 300)], "ag")


def test_counts_that_lay_the_counters_out_otherwise_are_refused(monkeypatch):
    """Uneven counts change the arrival counters per signal site (the most
    units of any rank): such a binding would read counters laid out for
    another, so it is refused, not run."""
    monkeypatch.setattr(backend._runtime, "cuda_device_sms", lambda device: 132, raising=False)
    dc = compile_device_counts("all_to_all_v", 3, "bf16", None, input_elems=1 << 16, output_elems=3 << 16,
                               arch="sm_90", counts_on_host=True,
                               lowering=placement_options("regime=throughput", True, 3, 132))
    layouts = {}
    for seed in range(6):
        for total in (123, 5000, 40000):
            bound = dc.bind_collective(counts_for("all_to_all_v", 3, total, seed=seed))
            layouts.setdefault(backend.binding_layout(bound.cuda), bound)
    assert len(layouts) >= 2, sorted(layouts)
    first, other = list(layouts.values())[:2]
    extents = [(other.plan.input_extent(r), other.plan.output_extent(r)) for r in range(3)]
    with pytest.raises(ValueError, match="a2av: the binding's counts lay out the symmetric memory or the ranks' units otherwise"):
        backend.add_binding(Runtime(), first.cuda, other.cuda, [0, 0, 0], extents, "a2av")


def test_a_rank_that_sends_nothing_in_one_binding_is_another_layout(v_form):
    """Counted ready signals keep a unit's announcements over every call: a
    binding where one rank has no unit (it sends nothing) would leave its
    slots a call behind, and the next binding in which it sends would wait for
    ever; so it is refused."""
    dc = v_form()
    first, other = dc.bind_collective([300, 0]), dc.bind_collective([0, 9000])
    assert backend.binding_layout(first.cuda)[:2] == backend.binding_layout(other.cuda)[:2]
    with pytest.raises(ValueError, match="ag: the binding's counts lay out the symmetric memory or the ranks' units"):
        backend.add_binding(Runtime(), first.cuda, other.cuda, [0, 0], [(0, 9000), (9000, 9000)], "ag")


def test_a_unit_sent_to_another_consumer_is_another_layout(monkeypatch):
    """Bindings with the same units per rank whose units go to other ranks
    (all_to_all_v counts with zeros elsewhere): a slot counts one unit's
    announcements to one consumer, so they are refused (the H100 run's hang)."""
    monkeypatch.setattr(backend._runtime, "cuda_device_sms", lambda device: 132, raising=False)
    dc = compile_device_counts("all_to_all_v", 4, "bf16", None, input_elems=1 << 16, output_elems=4 << 16,
                               arch="sm_90", counts_on_host=True,
                               lowering=placement_options("regime=throughput", True, 4, 132))
    first = dc.bind_collective([[86, 0, 37, 0], [41, 34, 0, 48], [0, 53, 0, 70], [37, 48, 0, 38]])
    other = dc.bind_collective([[3421, 0, 1579, 0], [2195, 1800, 0, 1005], [2698, 2302, 0, 0], [0, 1681, 1942, 1377]])
    alike = dc.bind_collective([[3, 0, 1, 0], [2, 1, 0, 1], [0, 2, 0, 1], [1, 1, 0, 1]])
    units = [[len(unit) for _, unit in backend.binding_layout(b.cuda)[2]] for b in (first, other)]
    assert units[0] == units[1]
    assert backend.binding_layout(alike.cuda) == backend.binding_layout(first.cuda)
    extents = [(other.plan.input_extent(r), other.plan.output_extent(r)) for r in range(4)]
    with pytest.raises(ValueError, match="a2av: the binding's counts lay out the symmetric memory or the ranks' units"):
        backend.add_binding(Runtime(), first.cuda, other.cuda, [0] * 4, extents, "a2av")
