"""The plan format: what the compiler hands the runtimes.

Plans built from lowered IR survive encode/decode and to_json/from_json; every
check of the readers (`decode`, `from_json`) and of `validate` refuses a plan
corrupted in just that way, with its message; and random corruption of valid
plans either reads back as a plan that validates or is a PlanError, never
another exception."""

import dataclasses
import json
import re
from functools import cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from purlin import plan as P
from purlin.coll.builder import COLLECTIVES
from purlin.compile.pipeline import lower, pipeline_spec
from purlin.atom.dialect import kernels_in
from purlin.conversion.atom_to_plan import build_plan
from purlin.testing.cases import Case, counts_for

SMALL = "chunk-bytes=16 slots=2"


def case_of(name, world, count, dtype="bf16", op=None):
    info = COLLECTIVES[name]
    op = op or ("sum" if info.reduces else None)
    if info.variable:
        return Case(name, world, dtype, op, counts=counts_for(name, world, count * world, world))
    return Case(name, world, dtype, op, count)


def plans_of(name, world, count, lowering, arch, dtype="bf16", op=None, multimem=False):
    case = case_of(name, world, count, dtype, op)
    module = lower(case.build_module(),
                  pipeline_spec("atom", lowering=lowering, arch=arch, multimem=multimem, verify=False))
    return [build_plan(k) for k in kernels_in(module)]


# Named plans for the corruption tests: latency (packets), throughput (staging,
# one and two phases), an fp8 one, a multimem one.
SAMPLES = {
    "latency": ("all_reduce", 2, 8, "regime=latency", "sm_80", "bf16", None, False),
    "direct": ("all_reduce", 2, 8, f"regime=throughput strategy=direct {SMALL}", "sm_80", "bf16", None, False),
    "composed": ("all_reduce", 3, 9, f"regime=throughput strategy=composed {SMALL}", "sm_100", "f32", None, False),
    "gather": ("all_gather", 2, 8, f"regime=throughput {SMALL}", "sm_90", "f16", None, False),
    "gather_latency": ("all_gather", 2, 8, "regime=latency", "sm_90", "bf16", None, False),
    "fp8": ("all_reduce", 2, 16, f"regime=throughput strategy=direct {SMALL}", "sm_90", "fp8e4m3", None, False),
    "f32max": ("all_reduce", 2, 8, f"regime=throughput strategy=direct {SMALL}", "sm_90", "f32", "max", False),
    # One reducer per slice (the switch's bits reach the others by forwarding).
    "multimem": ("all_reduce", 2, 8, f"regime=throughput strategy=composed {SMALL}", "sm_90", "bf16", None, True),
    # In place between the ranks' buffers: refs name the peers' inputs and outputs.
    "symmetric": ("all_reduce", 2, 8, "regime=throughput symmetric=true", "sm_90", "bf16", None, False),
}


@cache
def sample(key) -> P.Plan:
    (plan,) = plans_of(*SAMPLES[key])
    return plan


def unnamed(plan: P.Plan) -> P.Plan:
    """The plan as the binary form keeps it: buffers and signals by index."""
    return dataclasses.replace(
        plan,
        buffers=[dataclasses.replace(b, name=f"buffer{k}") for k, b in enumerate(plan.buffers)],
        signals=[dataclasses.replace(s, name=f"signals{k}") for k, s in enumerate(plan.signals)],
    )


# -- round trips ------------------------------------------------------------------

ROUND_TRIP = [
    (name, world, lowering, arch)
    for name in COLLECTIVES
    for world in (2, 3)
    for lowering in ("regime=latency", f"regime=throughput {SMALL}", "regime=throughput symmetric=true")
    for arch in ("sm_80", "sm_90", "sm_100")
]


@pytest.mark.parametrize("name, world, lowering, arch", ROUND_TRIP)
def test_round_trip(name, world, lowering, arch):
    for plan in plans_of(name, world, 37, lowering, arch):
        assert P.from_json(plan.to_json()) == plan
        words = plan.encode()
        assert words.dtype == np.int64
        assert P.decode(words) == unnamed(plan)
        assert P.decode(words.astype("<i8").tobytes()) == unnamed(plan)
        assert np.array_equal(P.decode(words).encode(), words)


@pytest.mark.parametrize("key", SAMPLES)
def test_samples_round_trip(key):
    plan = sample(key)
    assert P.from_json(plan.to_json()) == plan
    assert P.decode(plan.encode()) == unnamed(plan)


def test_samples_cover_what_the_corruptions_need():
    ops = lambda key: {i.op for rank in sample(key).programs for role in rank for i in role}  # noqa: E731
    assert {P.Op.PUT, P.Op.WAIT_PACKETS, P.Op.REDUCE} <= ops("latency")
    assert {P.Op.WAIT, P.Op.SIGNAL, P.Op.COPY, P.Op.REDUCE} <= ops("direct")
    assert len(sample("composed").roles) == 3
    mechs = {i.mech for rank in sample("multimem").programs for role in rank for i in role}
    assert P.Mech.MULTIMEM in mechs


# -- corrupt binary plans ---------------------------------------------------------


class Layout:
    """Word offsets of a plan's sections (see `decode`)."""

    def __init__(self, plan: P.Plan):
        self.roles = P.HEADER_WORDS
        self.buffers = self.roles + 2 * len(plan.roles)
        self.signals = self.buffers + 3 * len(plan.buffers)
        self.directory = self.signals + len(plan.signals)
        self.sizes = self.directory + 2 * plan.world * len(plan.roles)
        self.instrs = self.sizes + 2
        n_instrs = sum(len(role) for rank in plan.programs for role in rank)
        self.refs = self.instrs + P.INSTR_WORDS * n_instrs
        self.plan = plan

    def instr(self, words, pred) -> int:
        """Offset of the first instruction for which pred(fields) holds."""
        n = int(words[self.sizes])
        for k in range(n):
            at = self.instrs + k * P.INSTR_WORDS
            if pred(words[at : at + P.INSTR_WORDS]):
                return at
        raise AssertionError("no such instruction in the sample")

    def ref(self, index) -> int:
        return self.refs + index * P.REF_WORDS


OP, MECH, ELEMS, SIG, PEER, SLOT, BASE, REL, ORDER, SCOPE, REDOP, BUF, OFFSET, DST, SRC0, NSRC = range(16)
SPACE, RRANK, RBUF, RSLOT, ROFFSET = range(5)


def is_op(op):
    return lambda f: f[OP] == op


def local_copy(f):
    # A copy whose single source is not the last ref, so src_count 2 still reads a ref.
    return f[OP] == P.Op.COPY and f[NSRC] == 1


def set_word(at_fn, value):
    def mutate(w, lay):
        w[at_fn(w, lay)] = value
    return mutate


def set_field(pred, field, value):
    return set_word(lambda w, lay: lay.instr(w, pred) + field, value)


def set_dst(pred, field, value):
    def at(w, lay):
        return lay.ref(int(w[lay.instr(w, pred) + DST])) + field
    return set_word(at, value)


def set_src(pred, field, value):
    def at(w, lay):
        return lay.ref(int(w[lay.instr(w, pred) + SRC0])) + field
    return set_word(at, value)


def put_on_odd_offset(w, lay):
    at = lay.instr(w, is_op(P.Op.PUT))
    w[at + OFFSET], w[at + ELEMS] = 1, 1


BINARY_CORRUPTIONS = [
    # header
    ("bad_magic", "direct", set_word(lambda w, lay: 0, 0x1234),
     "not a purlin plan (magic 0x1234, expected 0x4e4c5250)"),
    ("other_version", "direct", set_word(lambda w, lay: 1, 2),
     "plan format version 2 is not supported (this reader reads 1)"),
    ("unknown_arch", "direct", set_word(lambda w, lay: 3, 75), "unknown arch code 75"),
    ("unknown_dtype", "direct", set_word(lambda w, lay: 4, 12), "unknown dtype code 12"),
    ("world_zero", "direct", set_word(lambda w, lay: 2, 0), "header: world = 0 is out of range"),
    ("world_huge", "direct", set_word(lambda w, lay: 2, 1 << 40), f"header: world = {1 << 40} is out of range"),
    ("no_roles", "direct", set_word(lambda w, lay: 9, 0), "header: roles = 0 is out of range"),
    ("negative_buffers", "direct", set_word(lambda w, lay: 10, -1), "header: buffers = -1 is out of range"),
    ("too_many_signals", "direct", set_word(lambda w, lay: 11, 1 << 21),
     f"header: signals = {1 << 21} is out of range"),
    ("input_elems_negative", "direct", set_word(lambda w, lay: 5, -1), "buffer sizes must be non-negative"),
    ("even_advance", "direct", set_word(lambda w, lay: 7, 2), "epoch advance must be odd and positive, got 2"),
    ("zero_advance", "direct", set_word(lambda w, lay: 7, 0), "epoch advance must be odd and positive, got 0"),
    ("threads_not_warps", "direct", set_word(lambda w, lay: 8, 100),
     "threads per block must be a multiple of 32 in [32, 1024], got 100"),
    ("threads_too_many", "direct", set_word(lambda w, lay: 8, 2048),
     "threads per block must be a multiple of 32 in [32, 1024], got 2048"),
    # specs
    ("role_kind", "direct", set_word(lambda w, lay: lay.roles, 7), "role 0 kind: 7 is not a valid RoleKind"),
    ("role_no_blocks", "direct", set_word(lambda w, lay: lay.roles + 1, 0),
     "role 0 has 0 blocks, expected 1 to 4096"),
    ("buffer_kind", "direct", set_word(lambda w, lay: lay.buffers, 5), "buffer 0 kind: 5 is not a valid BufKind"),
    ("buffer_no_slots", "direct", set_word(lambda w, lay: lay.buffers + 1, 0), "buffer 0 has 0 slots of"),
    ("buffer_negative_elems", "direct", set_word(lambda w, lay: lay.buffers + 2, -4),
     "buffer 0 has 2 slots of -4 elements"),
    ("window_slots_not_world", "latency", set_word(lambda w, lay: lay.buffers + 1, 3),
     "packet window 0 has 3 source slots, world is 2"),
    ("signal_slots_not_world", "direct", set_word(lambda w, lay: lay.signals, 3),
     "signal array 0 has 3 slots, world is 2"),
    # directory and tables
    ("directory_past_table", "direct", set_word(lambda w, lay: lay.directory, 10**6),
     "rank 0 role 0: instructions [1000000, "),
    ("directory_negative_count", "direct", set_word(lambda w, lay: lay.directory + 1, -1),
     "rank 0 role 0: instructions [0, -1) are outside the table of"),
    ("dst_ref_outside_table", "direct", set_field(is_op(P.Op.COPY), DST, 10**6),
     "instruction 1: ref 1000000 is outside the ref table ("),
    ("negative_ref", "direct", set_field(is_op(P.Op.COPY), DST, -2), "ref -2 is outside the ref table"),
    ("src_ref_outside_table", "direct", set_field(is_op(P.Op.COPY), SRC0, 10**6),
     "ref 1000000 is outside the ref table"),
    ("sources_out_of_range", "direct", set_field(is_op(P.Op.COPY), NSRC, 1 << 17),
     f"{1 << 17} sources is out of range"),
    ("negative_sources", "direct", set_field(is_op(P.Op.COPY), NSRC, -1), "-1 sources is out of range"),
    # enums
    ("bad_op", "direct", set_field(is_op(P.Op.COPY), OP, 9), "op: 9 is not a valid Op"),
    ("bad_mech", "direct", set_field(is_op(P.Op.COPY), MECH, 7), "mech: 7 is not a valid Mech"),
    ("bad_base", "direct", set_field(is_op(P.Op.WAIT), BASE, 2), "base: 2 is not a valid Base"),
    ("bad_order", "direct", set_field(is_op(P.Op.WAIT), ORDER, 3), "order: 3 is not a valid Order"),
    ("bad_scope", "direct", set_field(is_op(P.Op.SIGNAL), SCOPE, -1), "scope: -1 is not a valid Scope"),
    ("bad_redop", "direct", set_field(is_op(P.Op.REDUCE), REDOP, 9), "redop: 9 is not a valid RedOp"),
    ("bad_space", "direct", set_dst(is_op(P.Op.COPY), SPACE, 4), "space: 4 is not a valid Space"),
    # what validate checks, reached through decode
    ("negative_elems", "direct", set_field(is_op(P.Op.COPY), ELEMS, -1), "(copy): -1 elements"),
    ("rank_outside_world", "direct", set_dst(is_op(P.Op.COPY), RRANK, 2),
     "(copy): destination rank 2 is outside world 2"),
    ("peer_outside_world", "direct", set_field(is_op(P.Op.SIGNAL), PEER, 5),
     "(signal): peer 5 is outside world 2"),
    ("buffer_kind_mismatch", "direct", set_dst(is_op(P.Op.COPY), SPACE, int(P.Space.WINDOW)),
     "(copy): destination uses buffer 0 (staging) as window"),
    ("window_as_staging", "latency", set_src(is_op(P.Op.REDUCE), SPACE, int(P.Space.STAGING)),
     "uses buffer 0 (packets) as staging"),
    ("slot_outside_buffer", "direct", set_dst(is_op(P.Op.COPY), RSLOT, 2),
     "(copy): destination slot 2 is outside buffer 0's 2 slots"),
    ("data_outside_buffer", "direct", set_dst(is_op(P.Op.COPY), ROFFSET, 5),
     "(copy): destination [5, 13) is outside its 8 elements"),
    ("data_outside_input", "direct", set_src(is_op(P.Op.COPY), ROFFSET, 100),
     "(copy): source 0 [100, 108) is outside its 8 elements"),
    ("signal_slot_outside", "direct", set_field(is_op(P.Op.WAIT), SLOT, 2),
     "(wait): signal slot 2 is outside 2 slots"),
    ("signal_array_missing", "direct", set_field(is_op(P.Op.SIGNAL), SIG, 2),
     "(signal): signal array 2 does not exist (2 arrays)"),
    ("negative_flag", "direct", set_field(is_op(P.Op.WAIT), REL, -1), "(wait): flag offset -1 is negative"),
    ("release_wait", "direct", set_field(is_op(P.Op.WAIT), ORDER, int(P.Order.RELEASE)),
     "(wait): a wait cannot be a release"),
    ("acquire_signal", "direct", set_field(is_op(P.Op.SIGNAL), ORDER, int(P.Order.ACQUIRE)),
     "(signal): a signal store cannot be an acquire"),
    ("window_offset_not_packet", "latency", put_on_odd_offset,
     "(put): window offset 1 does not start a packet (4 elements)"),
    ("window_range_outside", "latency", set_field(is_op(P.Op.PUT), OFFSET, 8),
     "(put): window range [8, 16) is outside its 8 elements"),
    ("put_peer_outside", "latency", set_field(is_op(P.Op.PUT), PEER, 2), "(put): peer 2 is outside world 2"),
    ("packets_from_outside", "latency", set_field(is_op(P.Op.WAIT_PACKETS), PEER, -1),
     "(wait_packets): source rank -1 is outside world 2"),
    ("put_into_staging", "direct", set_field(is_op(P.Op.REDUCE), OP, int(P.Op.PUT)),
     "(put): buffer 0 is not a packet window"),
    ("copy_two_sources", "direct", set_field(local_copy, NSRC, 2), "(copy): a copy has one source, got 2"),
    ("copy_no_destination", "direct", set_field(is_op(P.Op.COPY), DST, -1), "(copy): has no destination"),
    ("reduce_without_redop", "direct", set_field(is_op(P.Op.REDUCE), REDOP, 0),
     "(reduce): a reduce needs sources and a reduction"),
    ("reduce_without_sources", "direct", set_field(is_op(P.Op.REDUCE), NSRC, 0),
     "(reduce): a reduce needs sources and a reduction"),
    ("writes_input", "direct", set_dst(is_op(P.Op.REDUCE), SPACE, int(P.Space.INPUT)),
     "(reduce): destination writes the input buffer"),
    ("unknown_flags", "direct", lambda w, _: w.__setitem__(12, 6), "header: unknown flags 0x6"),
    ("too_many_blocks", "direct", set_word(lambda w, lay: lay.roles + 1, 5000), "role 0 has 5000 blocks, expected 1 to 4096"),
    ("too_many_slots", "direct", set_word(lambda w, lay: lay.buffers + 1, 1 << 30),
     f"buffer 0 has {1 << 30} slots per half, more than 1024"),
    ("buffer_too_large", "direct", set_word(lambda w, lay: lay.buffers + 2, 1 << 40),
     f"buffer 0 takes {2 * 2 * (1 << 40) * 2} bytes, more than {1 << 34}"),
    ("reads_peer_input", "direct", set_src(is_op(P.Op.COPY), RRANK, 1),
     "(copy): source 0 names rank 1's input, only rank 0's is mapped (the plan is not symmetric)"),
    ("multimem_on_sm80", "direct", set_field(is_op(P.Op.REDUCE), MECH, int(P.Mech.MULTIMEM)),
     "(reduce): multimem needs sm_90 or newer, the plan targets sm_80"),
    ("bulk_on_sm80", "direct", set_field(is_op(P.Op.COPY), MECH, int(P.Mech.BULK)),
     "(copy): bulk needs sm_90 or newer, the plan targets sm_80"),
    ("multimem_fp8", "fp8", set_field(is_op(P.Op.REDUCE), MECH, int(P.Mech.MULTIMEM)),
     "(reduce): multimem cannot reduce fp8e4m3 with sum"),
    ("multimem_store_fp8", "fp8", set_field(is_op(P.Op.COPY), MECH, int(P.Mech.MULTIMEM)),
     "(copy): multimem does not move fp8e4m3"),
    ("multimem_prod", "multimem", set_field(is_op(P.Op.REDUCE), REDOP, int(P.RedOp.PROD)),
     "(reduce): multimem cannot reduce bf16 with prod"),
    ("multimem_max_f32", "f32max", set_field(is_op(P.Op.REDUCE), MECH, int(P.Mech.MULTIMEM)),
     "(reduce): multimem cannot reduce f32 with max"),
]


@pytest.mark.parametrize(
    "key, mutate, message", [c[1:] for c in BINARY_CORRUPTIONS], ids=[c[0] for c in BINARY_CORRUPTIONS]
)
def test_corrupt_binary_plan_is_refused(key, mutate, message):
    plan = sample(key)
    words = plan.encode().copy()
    P.decode(words)  # the sample itself is fine
    mutate(words, Layout(plan))
    with pytest.raises(P.PlanError, match=re.escape(message)):
        P.decode(words)


def test_truncated_and_trailing():
    words = sample("direct").encode()
    lay = Layout(sample("direct"))
    with pytest.raises(P.PlanError, match=re.escape("plan of 10 words is shorter than its 16-word header")):
        P.decode(words[:10])
    with pytest.raises(P.PlanError, match=re.escape("plan is truncated: the refs runs past its end")):
        P.decode(words[:-1])
    with pytest.raises(P.PlanError, match=re.escape("plan is truncated: the directory runs past its end")):
        P.decode(words[: lay.directory + 1])
    with pytest.raises(P.PlanError, match=re.escape("plan is truncated: role 1 runs past its end")):
        P.decode(words[: lay.roles + 3])
    with pytest.raises(P.PlanError, match=re.escape("plan has 1 words after its last ref")):
        P.decode(np.append(words, 0))
    with pytest.raises(P.PlanError, match=re.escape("plan is truncated: the instructions runs past")):
        bad = words.copy()
        bad[lay.sizes] += 100
        P.decode(bad)
    with pytest.raises(P.PlanError, match="plan is truncated: the instructions runs past"):
        bad = words.copy()
        bad[lay.sizes] = -1
        P.decode(bad)
    with pytest.raises(P.PlanError, match=re.escape("is not a whole number of int64 words")):
        P.decode(words.tobytes()[:-3])


# -- corrupt plans as objects (validate) ---------------------------------------------


def edit_instr(plan, pred, **changes):
    """A copy of plan whose first instruction matching pred has `changes`."""
    programs = [[list(role) for role in rank] for rank in plan.programs]
    for rank in programs:
        for role in rank:
            for n, i in enumerate(role):
                if pred(i):
                    role[n] = dataclasses.replace(i, **changes)
                    return dataclasses.replace(plan, programs=programs)
    raise AssertionError("no such instruction in the sample")


def op_is(op):
    return lambda i: i.op == op


r = dataclasses.replace
PLAN_CORRUPTIONS = [
    ("unknown_arch", "direct", lambda p: r(p, arch="sm_75"), "unknown arch 'sm_75'"),
    ("arch_not_a_string", "direct", lambda p: r(p, arch=["sm_80"]), "unknown arch ['sm_80']"),
    ("unknown_dtype", "direct", lambda p: r(p, dtype="c64"), "unknown dtype 'c64'"),
    ("world_zero", "direct", lambda p: r(p, world=0), "world must be at least 1, got 0"),
    ("negative_advance", "direct", lambda p: r(p, advance=-3), "epoch advance must be odd and positive, got -3"),
    ("output_negative", "direct", lambda p: r(p, output_elems=-1), "buffer sizes must be non-negative"),
    ("programs_not_world", "direct", lambda p: r(p, programs=p.programs[:1]),
     "plan has programs for 1 ranks, world is 2"),
    ("role_programs", "direct", lambda p: r(p, programs=[rank[:1] for rank in p.programs]),
     "rank 0 has 1 role programs, the kernel 2"),
    ("dst_none", "direct", lambda p: edit_instr(p, op_is(P.Op.REDUCE), dst=None),
     "(reduce): has no destination"),
    ("dst_buffer_missing", "direct",
     lambda p: edit_instr(p, op_is(P.Op.COPY), dst=P.Ref(P.Space.STAGING, 0, 3, 0, 0)),
     "(copy): destination buffer 3 does not exist (1 buffers)"),
    ("dst_peer_output", "direct",
     lambda p: edit_instr(p, op_is(P.Op.REDUCE), dst=P.Ref(P.Space.OUTPUT, 1, 0, 0, 0)),
     "(reduce): destination names rank 1's output, only rank 0's is mapped (the plan is not symmetric)"),
    ("wait_sig_missing", "direct", lambda p: edit_instr(p, op_is(P.Op.WAIT), sig=-1),
     "(wait): signal array -1 does not exist (2 arrays)"),
    ("put_two_sources", "latency",
     lambda p: edit_instr(p, op_is(P.Op.PUT), srcs=(P.Ref(P.Space.INPUT, 0),) * 2),
     "(put): a put has one source, got 2"),
    ("put_source_outside", "latency",
     lambda p: edit_instr(p, op_is(P.Op.PUT), srcs=(P.Ref(P.Space.INPUT, 0, 0, 0, 7),)),
     "(put): source [7, 15) is outside its 8 elements"),
    ("wait_packets_buffer_missing", "latency", lambda p: edit_instr(p, op_is(P.Op.WAIT_PACKETS), buf=1),
     "(wait_packets): buffer 1 is not a packet window"),
    ("copy_no_sources", "gather", lambda p: edit_instr(p, op_is(P.Op.COPY), srcs=()),
     "(copy): a copy has one source, got 0"),
]


@pytest.mark.parametrize(
    "key, corrupt, message", [c[1:] for c in PLAN_CORRUPTIONS], ids=[c[0] for c in PLAN_CORRUPTIONS]
)
def test_corrupt_plan_is_refused(key, corrupt, message):
    bad = corrupt(sample(key))
    with pytest.raises(P.PlanError, match=re.escape(message)):
        P.validate(bad)
    # Through JSON the same plan is refused by the same check.
    with pytest.raises(P.PlanError, match=re.escape(message)):
        P.from_json(bad.to_json())


# -- corrupt JSON --------------------------------------------------------------------


def edit_json(key, fn):
    doc = json.loads(sample(key).to_json())
    fn(doc)
    return json.dumps(doc)


def first_instr(doc, op):
    for rank in doc["ranks"]:
        for role in rank:
            for i in role:
                if i["op"] == op:
                    return i
    raise AssertionError(op)


def setitem(path, value):
    def fn(doc):
        d = doc
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
    return fn


def delitem(path):
    def fn(doc):
        d = doc
        for k in path[:-1]:
            d = d[k]
        del d[path[-1]]
    return fn


JSON_CORRUPTIONS = [
    ("not_json", lambda: "{", "malformed plan JSON: JSONDecodeError"),
    ("not_an_object", lambda: "[1, 2]", "malformed plan JSON: AttributeError"),
    ("other_format", lambda: edit_json("direct", setitem(["format"], "onnx")), "not a purlin plan (format 'onnx')"),
    ("other_version", lambda: edit_json("direct", setitem(["version"], 2)),
     "plan format version 2 is not supported (this reader reads 1)"),
    ("missing_key", lambda: edit_json("direct", delitem(["advance"])), "malformed plan JSON: KeyError: 'advance'"),
    ("unknown_arch", lambda: edit_json("direct", setitem(["arch"], "sm_70")), "unknown arch 'sm_70'"),
    ("arch_a_list", lambda: edit_json("direct", setitem(["arch"], [])), "unknown arch []"),
    ("dtype_a_number", lambda: edit_json("direct", setitem(["dtype"], 2)), "unknown dtype 2"),
    ("world_float", lambda: edit_json("direct", setitem(["world"], 2.0)), "world: 2.0 is not an int64"),
    ("world_bool", lambda: edit_json("direct", setitem(["world"], True)), "world: True is not an int64"),
    ("elems_huge", lambda: edit_json("direct", setitem(["buffers", 0, "elems"], 1 << 70)),
     f"buffer elems: {1 << 70} is not an int64"),
    ("role_kind", lambda: edit_json("direct", setitem(["kernel", "roles", 0, "kind"], "spinner")),
     "role: 'spinner' is not a valid RoleKind"),
    ("buffer_kind", lambda: edit_json("direct", setitem(["buffers", 0, "kind"], "ring")),
     "buffer: 'ring' is not a valid BufKind"),
    ("op", lambda: edit_json("direct", lambda d: first_instr(d, "copy").update(op="move")),
     "rank 0 role 0 instruction 1: op: 'move' is not a valid Op"),
    ("mech", lambda: edit_json("direct", lambda d: first_instr(d, "copy").update(mech="dma")),
     "mech: 'dma' is not a valid Mech"),
    ("order", lambda: edit_json("direct", lambda d: first_instr(d, "wait").update(order="seq_cst")),
     "order: 'seq_cst' is not a valid Order"),
    ("base", lambda: edit_json("direct", lambda d: first_instr(d, "wait").update(base="next")),
     "base: 'next' is not a valid Base"),
    ("redop", lambda: edit_json("direct", lambda d: first_instr(d, "reduce").update(redop="mean")),
     "redop: 'mean' is not a valid RedOp"),
    ("space", lambda: edit_json("direct", lambda d: first_instr(d, "copy")["dst"].update(space="host")),
     "'host' is not a valid Space"),
    ("elems_string", lambda: edit_json("direct", lambda d: first_instr(d, "copy").update(elems="4")),
     "elems: '4' is not an int64"),
    ("rel_list", lambda: edit_json("direct", lambda d: first_instr(d, "signal").update(rel=[1])),
     "rel: [1] is not an int64"),
    ("ref_offset_float", lambda: edit_json("direct", lambda d: first_instr(d, "copy")["dst"].update(offset=0.5)),
     "0.5 is not an int64"),
    ("unknown_field", lambda: edit_json("direct", lambda d: first_instr(d, "copy").update(speed=3)),
     "malformed plan JSON: TypeError"),
    ("srcs_not_a_list", lambda: edit_json("direct", lambda d: first_instr(d, "copy").update(srcs=3)),
     "malformed plan JSON: TypeError"),
    ("signal_slots", lambda: edit_json("direct", setitem(["signals", 1, "slots"], 1)),
     "signal array 1 has 1 slots, world is 2"),
]


@pytest.mark.parametrize("text, message", [c[1:] for c in JSON_CORRUPTIONS], ids=[c[0] for c in JSON_CORRUPTIONS])
def test_corrupt_json_is_refused(text, message):
    with pytest.raises(P.PlanError, match=re.escape(message)):
        P.from_json(text())


# -- fuzzing -------------------------------------------------------------------------

INTERESTING = [-(1 << 63), -(1 << 31), -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 31, 32, 100, 1 << 20,
               (1 << 31) - 1, P.MAGIC, (1 << 63) - 1]
FUZZ_SAMPLES = ["latency", "composed", "gather_latency", "multimem"]


def check_reads_back(plan: P.Plan) -> None:
    """A plan a reader accepted is whole: it validates and survives both forms."""
    P.validate(plan)
    assert P.decode(plan.encode()) == unnamed(plan)
    assert P.from_json(plan.to_json()) == plan


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    key=st.sampled_from(FUZZ_SAMPLES),
    edits=st.lists(
        st.tuples(st.floats(0, 1, exclude_max=True),
                  st.one_of(st.sampled_from(INTERESTING), st.integers(-(1 << 63), (1 << 63) - 1))),
        min_size=1, max_size=4,
    ),
    cut=st.one_of(st.none(), st.floats(0, 1), st.integers(1, 3)),
)
def test_fuzz_decode(key, edits, cut):
    words = sample(key).encode().copy()
    for where, value in edits:
        words[int(where * len(words))] = value
    if isinstance(cut, float):
        words = words[: int(cut * len(words))]
    elif isinstance(cut, int):
        words = np.concatenate([words, np.zeros(cut, np.int64)])
    try:
        plan = P.decode(words)
    except P.PlanError:
        return
    check_reads_back(plan)


@settings(max_examples=200, deadline=None)
@given(key=st.sampled_from(FUZZ_SAMPLES), data=st.binary(max_size=64), at=st.floats(0, 1))
def test_fuzz_decode_bytes(key, data, at):
    raw = sample(key).encode().tobytes()
    k = int(at * len(raw))
    try:
        plan = P.decode(raw[:k] + data + raw[k + len(data):])
    except P.PlanError:
        return
    check_reads_back(plan)


JSON_VALUES = st.one_of(
    st.none(), st.booleans(), st.sampled_from(INTERESTING), st.integers(), st.floats(allow_nan=False),
    st.sampled_from(["", "sum", "copy", "input", "window", "packets", "prev", "none", "sm_90", "bf16"]),
    st.just([]), st.just({}), st.just([{}]),
)


def json_paths(doc, path=()):
    yield path
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from json_paths(v, (*path, k))
    elif isinstance(doc, list):
        for k, v in enumerate(doc):
            yield from json_paths(v, (*path, k))


@cache
def json_sample(key):
    doc = json.loads(sample(key).to_json())
    return doc, list(json_paths(doc))[1:]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    key=st.sampled_from(FUZZ_SAMPLES),
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.sampled_from(["set", "del"]), JSON_VALUES),
                   min_size=1, max_size=3),
    cut=st.one_of(st.none(), st.floats(0, 1)),
)
def test_fuzz_from_json(key, edits, cut):
    doc, paths = json_sample(key)
    doc = json.loads(json.dumps(doc))
    for where, how, value in edits:
        path = paths[int(where * len(paths))]
        parent = doc
        try:
            for k in path[:-1]:
                parent = parent[k]
            if how == "del":
                del parent[path[-1]]
            else:
                # A copy: st.just's [] and {} are one object across examples, which later edits would mutate.
                parent[path[-1]] = json.loads(json.dumps(value))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed or replaced the path
    text = json.dumps(doc)
    if cut is not None:
        text = text[: int(cut * len(text))]
    try:
        plan = P.from_json(text)
    except P.PlanError:
        return
    check_reads_back(plan)


def test_symmetric_plans_name_the_peers_buffers():
    plan = sample("symmetric")
    refs = [r for rank in plan.programs for role in rank for i in role for r in (i.dst, *i.srcs) if r is not None]
    assert plan.symmetric and not plan.buffers
    assert any(r.rank != rank for rank, body in enumerate(plan.programs) for role in body for i in role
               for r in (i.dst, *i.srcs) if r is not None)
    assert {r.space for r in refs} <= {P.Space.INPUT, P.Space.OUTPUT}
    # The flag is what lets the same refs through: without it they are refused.
    with pytest.raises(P.PlanError, match="only rank 0's is mapped .the plan is not symmetric."):
        P.validate(dataclasses.replace(plan, symmetric=False))
