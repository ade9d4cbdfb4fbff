"""V collectives whose counts come with each call (purlin.runtime.device_counts):
on CPU threads, every V form against the reference with counts that change
from call to call, zero and skewed counts, and refusals; on a GPU (marked,
skipped without one) an MoE-style all_to_all_v whose counts a kernel writes,
100 calls in one CUDA graph with no host synchronisation, several ranks
sharing the GPU, and counts that do not fit refused by the kernel."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from purlin.coll import reference
from purlin.compile import compile_device_counts
from purlin.runtime import default_backend
from purlin.runtime.aliasing import AliasingError
from purlin.runtime.device_counts import BadCountsError, CountsCommunicator

GPUS = torch.cuda.device_count() if default_backend() == "cuda" else 0
FORMS = {"all_gather_v": None, "reduce_scatter_v": "sum", "all_to_all_v": None}
LOWERINGS = ("regime=latency", "regime=throughput chunk-bytes=32 slots=2 blocks=4")


def expected(name: str, ins: list[np.ndarray], full) -> list[np.ndarray]:
    if name == "all_to_all_v":
        return reference.all_to_all_v(ins, full)
    if name == "all_gather_v":
        return reference.all_gather_v(ins, full)
    return reference.reduce_scatter_v(ins, full, "sum")


def random_rows(name: str, world: int, rng: np.random.Generator, most: int, skew: bool) -> np.ndarray:
    width = world if name == "all_to_all_v" else 1
    rows = rng.integers(0, most + 1, size=(world, width))
    if skew:  # everything to (or from) rank 0, the rest silent
        rows[:] = 0
        rows[:, 0] = most
    return rows


@pytest.mark.parametrize("lowering", LOWERINGS)
@pytest.mark.parametrize("name", list(FORMS))
def test_counts_change_from_call_to_call_on_cpu(name, lowering):
    world, n = 3, 24
    coll = compile_device_counts(name, world, "f32", FORMS[name], input_elems=n, output_elems=n, lowering=lowering)
    comm = CountsCommunicator(coll, "cpu")
    rng = np.random.default_rng(5)
    most = n // world
    for call in range(8):
        rows = random_rows(name, world, rng, most, skew=call % 4 == 3)
        if call == 1:
            rows[:] = 0
        full = coll.full_counts(rows.tolist())
        ins = [rng.integers(-8, 8, n).astype(np.float32) for _ in range(world)]
        outs = [np.full(n, np.nan, np.float32) for _ in range(world)]
        recv = [np.full(world, -1, np.int64) for _ in range(world)]
        comm.run(ins, outs, list(rows), recv)
        for r, want in enumerate(expected(name, ins, full)):
            np.testing.assert_array_equal(outs[r][: len(want)], want, err_msg=f"call {call}, rank {r}")
            assert np.isnan(outs[r][len(want):]).all(), "wrote past what the counts give"
            m = np.asarray(full)
            assert recv[r].tolist() == (m[:, r] if m.ndim == 2 else m).tolist()


def test_counts_that_do_not_fit_are_refused_on_cpu():
    coll = compile_device_counts("all_to_all_v", 2, "f32", input_elems=4, output_elems=6)
    comm = CountsCommunicator(coll, "cpu")
    bufs = lambda: [np.zeros(6, np.float32) for _ in range(2)]  # noqa: E731
    with pytest.raises(BadCountsError, match="rank 0's counts need 5 input elements, the collective was built for 4"):
        comm.run(bufs(), bufs(), [np.array([2, 3]), np.array([0, 0])])
    with pytest.raises(BadCountsError, match="rank 1's counts need 7 output elements"):
        comm.run(bufs(), bufs(), [np.array([0, 4]), np.array([1, 3])])
    with pytest.raises(BadCountsError, match="non-negative"):
        comm.run(bufs(), bufs(), [np.array([0, -1]), np.array([0, 0])])
    with pytest.raises(TypeError, match="counts of rank 1 must be 2 integers"):
        comm.run(bufs(), bufs(), [np.array([0, 1]), np.array([0.5, 1])])
    with pytest.raises(ValueError, match="one input, output and counts"):
        comm.run(bufs(), bufs(), [np.array([0, 1])])
    with pytest.raises(ValueError, match="holds|elements, the plan needs"):
        comm.run([np.zeros(3, np.float32)] * 2, bufs(), [np.array([0, 0])] * 2)


def test_a_cpu_communicator_keeps_a_few_plans():
    from purlin.runtime import device_counts

    coll = compile_device_counts("all_gather_v", 2, "f32", input_elems=4, output_elems=8)
    comm = CountsCommunicator(coll, "cpu")
    for k in range(device_counts.CPU_PLANS + 3):
        c = [np.array([k % 5]), np.array([k // 5])]
        comm.run([np.ones(4, np.float32)] * 2, [np.zeros(8, np.float32) for _ in range(2)], c)
    assert len(comm._plans) == device_counts.CPU_PLANS


# -- on a GPU -------------------------------------------------------------------


def on_gpu(test):
    """For the GPU machine (`pytest -m gpu`); skipped without a GPU."""
    return pytest.mark.gpu(pytest.mark.skipif(GPUS < 1, reason="needs the CUDA backend and a GPU")(test))


def router_counts(world: int, tokens: int, hidden: int, seed: torch.Tensor, step: torch.Tensor) -> list[torch.Tensor]:
    """Each rank's sends in elements (tokens x hidden), computed on the GPU as a
    router would: skewed, one destination silent, changing with `step`."""
    ranks = torch.arange(world, device=seed.device)
    out = []
    for r in range(world):
        share = torch.softmax(torch.sin(seed * (r + 1) + step) * 4, 0)
        tokens_to = torch.floor(share * tokens).to(torch.int64) * (ranks != (r + step) % world)
        out.append(tokens_to * hidden // world)
    return out


@on_gpu
@pytest.mark.parametrize("lowering", ["regime=latency", "regime=throughput blocks=8 chunk-bytes=8192 slots=2"])
@pytest.mark.parametrize("world", [2, 4])
def test_moe_all_to_all_v_with_device_counts_in_a_cuda_graph(world, lowering):
    tokens, hidden = 64, 32  # elements: tokens x hidden
    n = world * tokens * hidden
    coll = compile_device_counts("all_to_all_v", world, "bf16", input_elems=n, output_elems=n, arch="sm_90",
                                 lowering=lowering)
    comm = CountsCommunicator(coll, "cuda", timeout_s=20.0, devices=[0] * world)
    dev = torch.device("cuda:0")
    seed = torch.linspace(0.1, 2.0, world, device=dev)
    step = torch.zeros((), dtype=torch.int64, device=dev)
    ins = [torch.randn(n, device=dev).to(torch.bfloat16) for _ in range(world)]
    outs = [torch.zeros(n, device=dev, dtype=torch.bfloat16) for _ in range(world)]
    counts = [torch.zeros(world, dtype=torch.int64, device=dev) for _ in range(world)]
    recv = [torch.zeros(world, dtype=torch.int64, device=dev) for _ in range(world)]
    history = torch.zeros(100, world, world, dtype=torch.int64, device=dev)

    def one_call():
        # Counts from kernels on the device; no host sync.
        for r, c in enumerate(router_counts(world, tokens, hidden, seed, step)):
            counts[r].copy_(c)
        comm.run(ins, outs, counts, recv)
        history.index_copy_(0, step.view(1), torch.stack(counts).unsqueeze(0))
        step.add_(1)

    stream = torch.cuda.Stream(device=dev)
    one_call()  # warm: NVRTC and the first launch outside the capture
    comm.synchronize()
    check_a2a(ins, outs, counts, recv)
    step.zero_()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.device(dev), torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            one_call()
    for _ in range(100):
        graph.replay()
    comm.synchronize()
    torch.cuda.synchronize()
    assert step.item() == 100
    assert len({tuple(m.flatten().tolist()) for m in history}) > 10, "the counts did not change between calls"
    check_a2a(ins, outs, counts, recv)


def check_a2a(ins, outs, counts, recv):
    m = torch.stack(counts).cpu().numpy()
    host_in = [t.float().cpu().numpy() for t in ins]
    want = reference.all_to_all_v(host_in, m.tolist())
    for r, w in enumerate(want):
        np.testing.assert_array_equal(outs[r][: len(w)].float().cpu().numpy(), w)
        assert recv[r].cpu().tolist() == m[:, r].tolist()


@on_gpu
@pytest.mark.parametrize("name", ["all_gather_v", "reduce_scatter_v"])
def test_vector_forms_with_device_counts_on_one_gpu(name):
    world, n = 3, 3 * 1024
    coll = compile_device_counts(name, world, "f32", FORMS[name], input_elems=n, output_elems=n, arch="sm_90",
                                 lowering="regime=throughput blocks=8 chunk-bytes=2048 slots=2")
    comm = CountsCommunicator(coll, "cuda", timeout_s=20.0, devices=[0] * world)
    rng = np.random.default_rng(2)
    for call in range(5):
        rows = random_rows(name, world, rng, 1024, skew=call == 3)
        if call == 1:
            rows[:] = 0
        ins_h = [rng.integers(-8, 8, n).astype(np.float32) for _ in range(world)]
        ins = [torch.from_numpy(a).cuda() for a in ins_h]
        outs = [torch.full((n,), float("nan"), device="cuda") for _ in range(world)]
        counts = [torch.from_numpy(r.astype(np.int64)).cuda() for r in rows]
        recv = [torch.zeros(world, dtype=torch.int64, device="cuda") for _ in range(world)]
        comm.run(ins, outs, counts, recv)
        comm.synchronize()
        full = coll.full_counts(rows.tolist())
        for r, want in enumerate(expected(name, ins_h, full)):
            got = outs[r].cpu().numpy()
            np.testing.assert_array_equal(got[: len(want)], want, err_msg=f"call {call}, rank {r}")
            assert np.isnan(got[len(want):]).all()
            assert recv[r].cpu().tolist() == list(full)


@on_gpu
def test_counts_that_do_not_fit_are_refused_by_the_kernel():
    coll = compile_device_counts("all_to_all_v", 2, "f32", input_elems=256, output_elems=256, arch="sm_90",
                                 lowering="regime=latency")
    comm = CountsCommunicator(coll, "cuda", timeout_s=5.0, devices=[0, 0])
    bufs = [torch.zeros(256, device="cuda") for _ in range(4)]
    counts = [torch.tensor([100, 200], device="cuda"), torch.tensor([1, 1], device="cuda")]
    comm.run(bufs[:2], bufs[2:], counts)
    with pytest.raises(BadCountsError, match="rank 0's counts need 300 input elements, the kernel was built for 256"):
        comm.synchronize()
    with pytest.raises(RuntimeError, match="failed earlier .a wait timed out, or counts did not fit"):
        comm.run(bufs[:2], bufs[2:], counts)


@on_gpu
def test_device_counts_arguments_are_checked():
    coll = compile_device_counts("all_to_all_v", 2, "f32", input_elems=16, output_elems=16, arch="sm_90")
    comm = CountsCommunicator(coll, "cuda", devices=[0, 0])
    a = [torch.zeros(16, device="cuda") for _ in range(2)]
    b = [torch.zeros(16, device="cuda") for _ in range(2)]
    good = [torch.zeros(2, dtype=torch.int64, device="cuda") for _ in range(2)]
    with pytest.raises(TypeError, match="counts of rank 0 must be a contiguous int64 tensor of at least 2"):
        comm.run(a, b, [torch.zeros(2, dtype=torch.int32, device="cuda"), good[1]])
    with pytest.raises(ValueError, match="counts of rank 1 is on cpu"):
        comm.run(a, b, [good[0], torch.zeros(2, dtype=torch.int64)])
    with pytest.raises(AliasingError, match="rank 0's input and output overlap"):
        comm.run(a, [a[0], b[1]], good)

