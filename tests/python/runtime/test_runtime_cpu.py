"""The CPU backend of purlin.runtime on hand-built plans: data movement,
reductions bit for bit against numpy, epochs and halves across calls,
timeouts, and plans or buffers it must refuse."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from purlin import _runtime
from purlin.coll.reference import reduce_parts
from purlin.dtypes import DTYPE_NAMES, numpy_dtype
from purlin.plan import (
    BufferSpec,
    BufKind,
    Instr,
    Mech,
    Op,
    Order,
    Plan,
    RedOp,
    Ref,
    RoleKind,
    RoleSpec,
    SignalSpec,
    Space,
)
from purlin.runtime import CollectiveTimeout, Communicator, available_backends
from purlin.testing.data import random_array

ROLES = [RoleSpec(RoleKind.PRODUCER, 2), RoleSpec(RoleKind.CONSUMER, 2)]


def plan_of(world, dtype, n_in, n_out, roles, buffers, signals, programs, advance=1) -> Plan:
    return Plan("sm_90", world, dtype, n_in, n_out, advance, 128, roles, buffers, signals, programs)


def staged_all_gather(world: int, n: int, dtype: str = "f32", advance: int = 1, skip_signal=None) -> Plan:
    """Producers stage their input and notify every peer; consumers wait and
    pull each peer's staging into its slice of the output. `skip_signal`
    (producer rank, peer) leaves out one notify."""
    programs = []
    for me in range(world):
        produce = [Instr(Op.COPY, Mech.VECTOR, n, dst=Ref(Space.STAGING, me), srcs=(Ref(Space.INPUT, me),))]
        consume = [Instr(Op.COPY, Mech.VECTOR, n, dst=Ref(Space.OUTPUT, me, offset=me * n),
                         srcs=(Ref(Space.INPUT, me),))]
        for peer in range(world):
            if peer == me:
                continue
            if (me, peer) != skip_signal:
                produce.append(Instr(Op.SIGNAL, sig=0, peer=peer, slot=me, rel=1, order=Order.RELEASE))
            consume += [
                Instr(Op.WAIT, sig=0, slot=peer, rel=1, order=Order.ACQUIRE),
                Instr(Op.COPY, Mech.VECTOR, n, dst=Ref(Space.OUTPUT, me, offset=peer * n),
                      srcs=(Ref(Space.STAGING, peer),)),
            ]
        programs.append([produce, consume])
    return plan_of(world, dtype, n, world * n, ROLES, [BufferSpec("stage", BufKind.STAGING, 1, n)],
                   [SignalSpec("ready", world)], programs, advance)


def packet_all_gather(world: int, n: int, dtype: str) -> Plan:
    """Producers put their input as packets into every peer's window;
    consumers wait for each peer's packets and copy them out."""
    programs = []
    for me in range(world):
        produce = [Instr(Op.PUT, Mech.PACKET, n, peer=peer, buf=0, srcs=(Ref(Space.INPUT, me),))
                   for peer in range(world) if peer != me]
        consume = [Instr(Op.COPY, Mech.VECTOR, n, dst=Ref(Space.OUTPUT, me, offset=me * n),
                         srcs=(Ref(Space.INPUT, me),))]
        for peer in range(world):
            if peer != me:
                consume += [
                    Instr(Op.WAIT_PACKETS, Mech.PACKET, n, peer=peer, buf=0),
                    Instr(Op.COPY, Mech.VECTOR, n, dst=Ref(Space.OUTPUT, me, offset=peer * n),
                          srcs=(Ref(Space.WINDOW, me, slot=peer),)),
                ]
        programs.append([produce, consume])
    return plan_of(world, dtype, n, world * n, ROLES, [BufferSpec("win", BufKind.PACKETS, world, n)],
                   [], programs)


def staged_all_reduce(world: int, n: int, dtype: str, op: RedOp) -> Plan:
    """Every rank stages its input and notifies all ranks (itself included);
    each reduces all staging buffers in rank order."""
    programs = []
    for me in range(world):
        produce = [Instr(Op.COPY, Mech.VECTOR, n, dst=Ref(Space.STAGING, me), srcs=(Ref(Space.INPUT, me),))]
        produce += [Instr(Op.SIGNAL, sig=0, peer=p, slot=me, rel=1, order=Order.RELEASE) for p in range(world)]
        consume = [Instr(Op.WAIT, sig=0, slot=p, rel=1, order=Order.ACQUIRE) for p in range(world)]
        consume.append(Instr(Op.REDUCE, Mech.VECTOR, n, redop=op, dst=Ref(Space.OUTPUT, me),
                             srcs=tuple(Ref(Space.STAGING, p) for p in range(world))))
        programs.append([produce, consume])
    return plan_of(world, dtype, n, n, ROLES, [BufferSpec("stage", BufKind.STAGING, 1, n)],
                   [SignalSpec("ready", world)], programs)


def local_reduce(n: int, dtype: str, op: RedOp, sources: int) -> Plan:
    """World 1: output = reduce of `sources` consecutive blocks of the input."""
    srcs = tuple(Ref(Space.INPUT, 0, offset=k * n) for k in range(sources))
    body = [Instr(Op.REDUCE, Mech.VECTOR, n, redop=op, dst=Ref(Space.OUTPUT, 0), srcs=srcs)]
    return plan_of(1, dtype, sources * n, n, [RoleSpec(RoleKind.REDUCER, 1)], [], [], [[body]])


def outputs_for(plan: Plan) -> list[np.ndarray]:
    """All-ones bytes: NaN in every float dtype, -1 or the maximum in the integer ones."""
    dt = numpy_dtype(plan.dtype)
    return [np.full(plan.output_elems * dt.itemsize, 0xFF, np.uint8).view(dt) for _ in range(plan.world)]


def bits(a: np.ndarray) -> np.ndarray:
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def test_cpu_is_available():
    assert "cpu" in available_backends()


@pytest.mark.parametrize("world", [2, 3, 5])
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_staged_all_gather(world, dtype):
    n = 37
    plan = staged_all_gather(world, n, dtype)
    rng = np.random.default_rng(world)
    inputs = [random_array(rng, dtype, n, None) for _ in range(world)]
    outputs = outputs_for(plan)
    Communicator(plan, name="all_gather").run(inputs, outputs)
    expected = bits(np.concatenate(inputs))
    for out in outputs:
        np.testing.assert_array_equal(bits(out), expected)


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("n", [1, 7, 64])
def test_packet_all_gather_over_calls(world, dtype, n):
    """Packets of the previous call in the other half, and a partial last
    packet, must not leak into the result."""
    plan = packet_all_gather(world, n, dtype)
    comm = Communicator(plan, name="all_gather_packets")
    rng = np.random.default_rng(n)
    for call in range(6):
        inputs = [random_array(rng, dtype, n, None) for _ in range(world)]
        outputs = outputs_for(plan)
        comm.run(inputs, outputs)
        expected = bits(np.concatenate(inputs))
        for out in outputs:
            np.testing.assert_array_equal(bits(out), expected, err_msg=f"call {call}")


@pytest.mark.parametrize("op", [RedOp.SUM, RedOp.MAX, RedOp.MIN, RedOp.PROD])
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_staged_all_reduce_matches_reference(op, dtype):
    world, n = 4, 129
    plan = staged_all_reduce(world, n, dtype, op)
    inputs = [random_array(np.random.default_rng(r), dtype, n, op.name.lower()) for r in range(world)]
    outputs = outputs_for(plan)
    Communicator(plan, name="all_reduce").run(inputs, outputs)
    expected = reduce_parts(inputs, op.name.lower())
    for out in outputs:
        np.testing.assert_array_equal(bits(out), bits(expected))


@pytest.mark.parametrize("op", [RedOp.SUM, RedOp.MAX, RedOp.MIN, RedOp.PROD])
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_reduce_rounds_like_ml_dtypes(op, dtype):
    """Random finite bit patterns (subnormals, huge values, ties): f32
    accumulation in source order and one rounding, equal to numpy bit for
    bit; NaN where numpy gives NaN (overflow of fp8 e4m3fn, inf - inf)."""
    n, sources = 1 << 14, 3
    rng = np.random.default_rng(7)
    parts = [random_array(rng, dtype, n, None) for _ in range(sources)]
    plan = local_reduce(n, dtype, op, sources)
    out = outputs_for(plan)
    Communicator(plan).run([np.concatenate(parts)], out)
    expected = reduce_parts(parts, op.name.lower())
    nan = np.isnan(expected.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(out[0].astype(np.float64)), nan)
    np.testing.assert_array_equal(bits(out[0])[~nan], bits(expected)[~nan])


@pytest.mark.parametrize(
    "dtype, values, expected",
    [
        ("fp8e4m3", [448.0, 16.0], 448.0),  # 464 is a tie, to even: the largest finite
        ("fp8e4m3", [448.0, 32.0], np.nan),  # no inf: overflow is NaN
        ("fp8e5m2", [57344.0, 2048.0], 57344.0),
        ("fp8e5m2", [57344.0, 4096.0], np.inf),  # a tie, to even: inf
        ("fp8e5m2", [57344.0, 8192.0], np.inf),
        ("f16", [65504.0, 15.0], 65504.0),
        ("f16", [65504.0, 16.0], np.inf),  # a tie, to even: inf
        ("f16", [65504.0, 32.0], np.inf),
        ("bf16", [1.0, 2.0**-8], 1.0),  # tie, to even
        ("bf16", [1.0 + 2.0**-7, 2.0**-8], 1.0 + 2.0**-6),  # tie, up to even
    ],
)
def test_rounding_edges(dtype, values, expected):
    dt = numpy_dtype(dtype)
    plan = local_reduce(1, dtype, RedOp.SUM, len(values))
    out = outputs_for(plan)
    Communicator(plan).run([np.array(values, np.float32).astype(dt)], out)
    got = np.float32(out[0][0])
    assert (np.isnan(got) and np.isnan(expected)) or got == expected
    assert bits(out[0]) == bits(np.array([expected], np.float32).astype(dt))


def test_repeated_calls_advance_epochs():
    world, n, advance = 3, 16, 3
    plan = staged_all_gather(world, n, advance=advance)
    comm = Communicator(plan)
    rng = np.random.default_rng(0)
    for call in range(20):
        assert [comm.epoch(r) for r in range(world)] == [call * advance] * world
        inputs = [rng.standard_normal(n).astype(np.float32) for _ in range(world)]
        outputs = outputs_for(plan)
        comm.run(inputs, outputs)
        for out in outputs:
            np.testing.assert_array_equal(out, np.concatenate(inputs))


def test_staging_halves_alternate():
    """A rank that reads its staging before writing it finds what it wrote
    two calls earlier: the half flips with the epoch's parity."""
    n = 4
    body = [
        Instr(Op.COPY, Mech.VECTOR, n, dst=Ref(Space.OUTPUT, 0), srcs=(Ref(Space.STAGING, 0),)),
        Instr(Op.COPY, Mech.VECTOR, n, dst=Ref(Space.STAGING, 0), srcs=(Ref(Space.INPUT, 0),)),
    ]
    plan = plan_of(1, "f32", n, n, [RoleSpec(RoleKind.REDUCER, 1)],
                   [BufferSpec("stage", BufKind.STAGING, 1, n)], [], [[body]], advance=1)
    comm = Communicator(plan)
    seen = []
    for call in range(6):
        out = [np.empty(n, np.float32)]
        comm.run([np.full(n, call, np.float32)], out)
        seen.append(out[0][0])
    assert seen == [0, 0, 0, 1, 2, 3]


def test_missing_signal_times_out():
    plan = staged_all_gather(2, 8, skip_signal=(0, 1))
    comm = Communicator(plan, timeout_s=0.2, name="all_gather")
    inputs = [np.ones(8, np.float32)] * 2
    with pytest.raises(CollectiveTimeout) as info:
        comm.run(inputs, outputs_for(plan))
    msg = str(info.value)
    for part in ("all_gather:", "rank 1 role 1 (consumer)", "(wait)", 'signals[0] "ready" slot 0 holds 0',
                 "awaited >= 1", "(epoch 0)"):
        assert part in msg, msg
    assert isinstance(info.value, TimeoutError)
    with pytest.raises(RuntimeError, match="unusable: a previous call failed"):
        comm.run(inputs, outputs_for(plan))


def test_missing_packets_time_out():
    """A put left out: the wait names the window, the half, the packet and the epoch."""
    good = packet_all_gather(2, 4, "bf16")
    broken = dataclasses.replace(good, programs=[[[], good.programs[0][1]], good.programs[1]])
    comm = Communicator(broken, timeout_s=0.2, name="ag")
    with pytest.raises(CollectiveTimeout, match=r'ag: rank 1 role 1 .*packet window 0 "win" half 0 from rank 0, '
                       r"packet 0 \(element 0\) has flag 0, awaited >= 1 \(epoch 0\)"):
        comm.run([np.ones(4, numpy_dtype("bf16"))] * 2, outputs_for(good))


def empty_exchange(put: bool = True) -> Plan:
    """Rank 0 puts an empty unit to rank 1 (a flag-only packet, as a bound
    phase of empty_units makes one for a count of 0), which rank 1 waits for;
    without `put` no packet comes."""
    produce = [Instr(Op.PUT, Mech.PACKET, 0, peer=1, buf=0, offset=2, srcs=(Ref(Space.INPUT, 0, offset=4),))]
    wait = [Instr(Op.WAIT_PACKETS, Mech.PACKET, 0, peer=0, buf=0, offset=2)]
    return plan_of(2, "f32", 4, 4, ROLES, [BufferSpec("win", BufKind.PACKETS, 2, 4)], [],
                   [[produce if put else [], []], [[], wait]])


def test_an_empty_put_carries_its_flag():
    """An empty put stores one packet, its flag alone (and no data), and an
    empty wait_packets waits for it, every call: the CPU runtime and the plan
    simulator alike."""
    from purlin.simulator.plan_machine import PlanExecutionError, PlanMachine

    plan = empty_exchange()
    comm = Communicator(plan, timeout_s=5.0, name="empty")
    machine = PlanMachine(plan)
    inputs = [np.arange(4, dtype=np.float32)] * 2
    for _ in range(3):
        outputs = outputs_for(plan)
        comm.run(inputs, outputs)
        machine.run(inputs, outputs)
        assert all(np.isnan(o).all() for o in outputs)
    # Source 0's packets in rank 1's window, each half: the put's (packet 1) carries the call's flag.
    assert machine.flags[0][1][:, 0].tolist() == [[0, 3], [0, 2]]
    assert not machine.staging[0][1].any()
    broken = empty_exchange(put=False)
    with pytest.raises(CollectiveTimeout, match=r'empty: rank 1 role 1 .*packet window 0 "win" half 0 from rank 0, '
                       r"packet 1 \(element 2\) has flag 0, awaited >= 1 \(epoch 0\)"):
        Communicator(broken, timeout_s=0.2, name="empty").run(inputs, outputs_for(broken))
    with pytest.raises(PlanExecutionError, match=r"rank 1 role 1 instruction 0 waits for packets from rank 0 "
                                                 r"\[1, 2\) to carry flag 1 \(lowest 0\)"):
        PlanMachine(broken).run(inputs, outputs_for(broken))


def test_an_empty_put_past_the_window_is_refused():
    """An empty put still stores the packet at its offset: one past the window is refused."""
    from purlin.plan import PlanError, validate

    plan = empty_exchange()
    past = dataclasses.replace(plan, programs=[[[dataclasses.replace(plan.programs[0][0][0], offset=4)], []],
                                               plan.programs[1]])
    with pytest.raises(PlanError, match=r"window range \[4, 5\) is outside its 4 elements"):
        validate(past)
    with pytest.raises(ValueError, match="window range outside the window"):
        _runtime.decode(past.encode())


def test_rebind_runs_another_binding_on_the_same_memory_and_epochs():
    from purlin.compile import compile_device_counts, compile_plan

    kernel = compile_device_counts("all_gather_v", 2, "f32", input_elems=8, output_elems=16)
    comm = Communicator(kernel.bind([3, 5]), name="agv")
    inputs = [np.arange(8, dtype=np.float32) + 10 * r for r in range(2)]
    for counts in ([3, 5], [8, 0], [0, 2]):
        if counts != [3, 5]:
            comm.rebind(kernel.bind(counts))
        outputs = [np.full(16, np.nan, np.float32) for _ in range(2)]
        comm.run(inputs, outputs)
        want = np.concatenate([inputs[r][:c] for r, c in enumerate(counts)])
        for out in outputs:
            np.testing.assert_array_equal(out[:sum(counts)], want)
    assert comm.epoch(0) == 3 * comm.plan.advance
    with pytest.raises(ValueError, match="agv: the new plan's memory is not laid out as the current one's"):
        comm.rebind(compile_plan("all_gather", 2, "f32", None, 4, lowering="regime=throughput chunk-bytes=64"))


def test_timeout_of_one_rank_stops_all():
    """Rank 0 never signals anyone: every consumer stops, the call returns."""
    world = 4
    plan = staged_all_gather(world, 4)
    plan.programs[0][0] = plan.programs[0][0][:1]
    with pytest.raises(CollectiveTimeout, match="awaited >= 1"):
        Communicator(plan, timeout_s=0.2).run([np.ones(4, np.float32)] * world, outputs_for(plan))


# -- refusals -------------------------------------------------------------------


def test_corrupt_binary_plans_are_refused():
    words = staged_all_gather(2, 8).encode()
    cases = {
        "truncated": words[:-3],
        "bad magic": np.concatenate([[1], words[1:]]),
        "version": np.concatenate([words[:1], [2], words[2:]]),
        "extra words": np.concatenate([words, [0]]),
    }
    for what, bad in cases.items():
        with pytest.raises(ValueError, match="invalid plan"):
            _runtime.decode(np.asarray(bad, np.int64))
    out_of_table = words.copy()
    out_of_table[-5:] = [int(Space.STAGING), 0, 7, 0, 0]  # the last ref names buffer 7
    with pytest.raises(ValueError, match="missing buffer"):
        _runtime.decode(out_of_table)
    with pytest.raises(TypeError, match="int64"):
        _runtime.decode(words.astype(np.int32))
    # Sizes a runtime would try to allocate or launch: refused before that (the Python reader likewise).
    header = 16
    for at, value, message in ((header + 1, 5000, "1 to 4096 blocks"), (header + 2 * 2 + 1, 1 << 30, "slots per half"),
                               (header + 2 * 2 + 2, 1 << 40, "takes more than 17179869184 bytes")):
        huge = words.copy()
        huge[at] = value
        with pytest.raises(ValueError, match=message):
            _runtime.decode(huge)


def test_plans_the_cpu_cannot_run_are_refused():
    good = staged_all_gather(2, 8)
    reads_peer_input = dataclasses.replace(
        good, programs=[[[Instr(Op.COPY, Mech.VECTOR, 8, dst=Ref(Space.STAGING, 0), srcs=(Ref(Space.INPUT, 1),))],
                         []], good.programs[1]])
    with pytest.raises(ValueError, match="names rank 1's input, only rank 0's is mapped"):
        _runtime.CpuCommunicator(_runtime.decode(reads_peer_input.encode()))
    window_as_staging = packet_all_gather(2, 8, "f32")
    consume = list(window_as_staging.programs[0][1])
    consume[-1] = dataclasses.replace(consume[-1], srcs=(Ref(Space.STAGING, 0, slot=1),))
    window_as_staging.programs[0][1] = consume
    with pytest.raises(ValueError, match="uses buffer 0 as staging, it is a packet window"):
        _runtime.CpuCommunicator(_runtime.decode(window_as_staging.encode()))
    with pytest.raises(ValueError, match="timeout must be positive"):
        _runtime.CpuCommunicator(_runtime.decode(good.encode()), 0.0)


def test_wrong_buffers_are_refused():
    plan = staged_all_gather(2, 8, "bf16")
    comm = Communicator(plan, name="ag")
    dt = numpy_dtype("bf16")
    ins, outs = [np.zeros(8, dt)] * 2, outputs_for(plan)
    with pytest.raises(ValueError, match="plan is for world 2, got 3 inputs"):
        comm.run(ins + ins[:1], outs + outs[:1])
    with pytest.raises(TypeError, match="input of rank 0 has dtype float32, the plan is bf16"):
        comm.run([np.zeros(8, np.float32)] * 2, outs)
    with pytest.raises(ValueError, match="output of rank 1 has 15 elements, the plan needs at least 16"):
        comm.run(ins, [outs[0], np.zeros(15, dt)])
    with pytest.raises(ValueError, match="not C-contiguous"):
        comm.run([np.zeros(16, dt)[::2]] * 2, outs)
    with pytest.raises(ValueError, match="rank 0's input and output overlap where the call still reads the input"):
        # Rank 1's slice of rank 0's output is rank 0's input: overwritten while rank 1 reads it.
        shared = np.zeros(16, dt)
        comm.run([shared[8:], ins[1]], [shared, outs[1]])
    with pytest.raises(ValueError, match="input of rank 1 has 14 bytes, the plan needs at least 16"):
        comm._impl.run([ins[0], np.zeros(7, dt)], outs)
    # Larger buffers are fine: only the plan's elements are touched.
    big = [np.full(20, 5, dt) for _ in range(2)]
    comm.run([np.ones(10, dt)] * 2, big)
    assert (big[0][:16] == 1).all() and (big[0][16:] == 5).all()


def test_cuda_backend_absent_is_clear():
    if "cuda" in available_backends():
        pytest.skip("this build has the CUDA backend")
    with pytest.raises(RuntimeError, match="purlin was built without CUDA"):
        Communicator(staged_all_gather(2, 4), backend="cuda")
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        Communicator(staged_all_gather(2, 4), backend="tpu")
