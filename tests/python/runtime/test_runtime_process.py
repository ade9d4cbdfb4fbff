"""purlin.runtime.ProcessCommunicator without GPUs: the Python side against a
stand-in torch and C++ communicator (handle exchange, buffer and stream
checks, timeouts), and the C++ checks that come before any CUDA call."""

from __future__ import annotations

import sys
import types
from contextlib import nullcontext

import pytest

from purlin import _runtime
from purlin.atom import dialect as atom
from purlin.compile import Compiled
from purlin.compile.pipeline import entry_function, lower, pipeline_spec
from purlin.conversion.atom_to_plan import build_plan
from purlin.cuda.program import CudaProgram
from purlin.runtime import CollectiveTimeout, available_backends, backend, default_backend, heap, process
from purlin.testing.cases import Case

needs_cuda_build = pytest.mark.skipif("cuda" not in available_backends(), reason="purlin built without CUDA")


def compiled(case: Case, lowering: str, multimem: bool = False) -> Compiled:
    module = lower(case.build_module(),
                   pipeline_spec("atom", lowering=lowering, arch="sm_90", multimem=multimem, verify=False))
    (kernel,) = [op for op in entry_function(module).body.ops if isinstance(op, atom.KernelOp)]
    return Compiled(build_plan(kernel), CudaProgram(kernel))


def all_reduce(multimem: bool = False, latency: bool = False) -> Compiled:
    # Composed with multimem: the switch reduces each slice at its owner.
    lowering = "regime=latency" if latency else "regime=throughput" + (" strategy=composed" if multimem else "")
    return compiled(Case("all_reduce", 2, "bf16", "sum", 64), lowering, multimem)


COMPILED = all_reduce()
PLAN, KERNEL = COMPILED.plan, COMPILED.cuda


class FakeImpl:
    """Records what the Python side hands the C++ communicator."""

    timeout: str | None = None

    def __init__(self, spec, rank, device, timeout, name, heaps=()):
        self.rank, self.device, self.calls, self.heaps = rank, device, [], heaps

    def ipc_handle(self):
        return b"handle-%d" % self.rank

    def connect(self, handles):
        self.calls.append(("connect", handles))

    def run(self, input, output, stream):
        self.calls.append(("run", input, output, stream))

    def synchronize(self):
        if self.timeout:
            raise _runtime.CudaTimeoutError(self.timeout)

    def epoch(self):
        return 7


class FakeHeap:
    """The C++ heap's stand-in: its size and the handles it was connected with."""

    def __init__(self, rank, world, device, nbytes=None, name="", memory=None, bytes=None):
        nbytes = bytes if memory is not None else nbytes
        self.rank, self.world, self.device, self.bytes, self.name = rank, world, device, nbytes, name
        self.base, self.handles, self.registered = memory or 0x7000000, None, memory is not None

    def ipc_handle(self):
        return b"heap-%d" % self.rank

    def connect(self, handles):
        self.handles = handles


class FakeTensor:
    def __init__(self, n, dtype="torch.bfloat16", device=0, is_cuda=True, contiguous=True):
        self.n, self.dtype, self.is_cuda, self.contiguous = n, dtype, is_cuda, contiguous
        self.device = types.SimpleNamespace(index=device, type="cuda" if is_cuda else "cpu")

    def data_ptr(self):
        return 0x100000 * (self.n + 1)  # tensors of different sizes never overlap

    def numel(self):
        return self.n

    def element_size(self):
        return 2

    def is_contiguous(self):
        return self.contiguous


def fake_torch(world: int, rank: int, initialised: bool = True, claimed=None):
    """torch with a `world`-rank process group of which this process is `rank`; the
    others claim ranks `claimed` (their own by default) when handles are gathered."""
    claimed = claimed or list(range(world))

    def all_gather_object(out, obj, group=None):
        # The peers send what this rank sends, their handles named after them.
        for r in range(world):
            peer = (claimed[r], *(b"handle-%d" % claimed[r] if isinstance(x, bytes) else x for x in obj[1:]))
            out[r] = obj if r == rank else peer

    dist = types.SimpleNamespace(
        is_available=lambda: True, is_initialized=lambda: initialised,
        get_world_size=lambda group=None: world, get_rank=lambda group=None: rank,
        all_gather_object=all_gather_object, barrier=lambda group=None: None,
        get_backend=lambda group=None: "nccl",
    )
    cuda = types.SimpleNamespace(
        current_device=lambda: 1, device=lambda d: nullcontext(),
        current_stream=lambda d=None: types.SimpleNamespace(cuda_stream=0xABC),
    )
    return types.SimpleNamespace(distributed=dist, cuda=cuda, Tensor=FakeTensor)


@pytest.fixture
def torch_of(monkeypatch):
    """Installs a fake torch (arguments of `fake_torch`) and the recording C++ stand-in."""
    # raising=False: a CPU-only build has no CudaProcessCommunicator to replace.
    monkeypatch.setattr(process._runtime, "CudaProcessCommunicator", FakeImpl, raising=False)
    monkeypatch.setattr(process._runtime, "CudaDeviceHeap", FakeHeap, raising=False)
    monkeypatch.setattr(process, "available_backends", lambda: ("cpu", "cuda"))
    monkeypatch.setattr(heap, "available_backends", lambda: ("cpu", "cuda"))
    # The kernel is compiled for a GPU's SM count: none here.
    monkeypatch.setattr(process, "kernel_spec", lambda kernel, devices, extents, name: kernel)
    monkeypatch.setattr(FakeImpl, "timeout", None)

    def install(*args, **kwargs):
        torch = fake_torch(*args, **kwargs)
        monkeypatch.setitem(sys.modules, "torch", torch)
        monkeypatch.setitem(sys.modules, "torch.distributed", torch.distributed)
        # current_stream finds its query once per process: again, in this torch.
        monkeypatch.setattr(backend, "_stream_query", None)
        return torch

    return install


def test_handles_are_gathered_and_connected_in_rank_order(torch_of):
    torch_of(2, 1)
    comm = process.ProcessCommunicator(PLAN, kernel=KERNEL, name="ar")
    assert (comm.rank, comm.device, comm.world) == (1, 1, 2)
    assert comm._impl.calls == [("connect", [b"handle-0", b"handle-1"])]


def test_explicit_rank_other_than_the_group_rank(torch_of):
    torch_of(2, 0, claimed=[1, 0])
    comm = process.ProcessCommunicator(PLAN, kernel=KERNEL, rank=1, device=0)
    assert comm._impl.calls == [("connect", [b"handle-0", b"handle-1"])]


def test_ranks_claimed_twice_are_refused(torch_of):
    torch_of(2, 0, claimed=[0, 0])
    with pytest.raises(ValueError, match=r"claim ranks \[0, 0\]"):
        process.ProcessCommunicator(PLAN, kernel=KERNEL, name="ar")


def test_needs_an_initialised_process_group(torch_of):
    torch_of(2, 0, initialised=False)
    with pytest.raises(RuntimeError, match="ar: torch.distributed is not initialised"):
        process.ProcessCommunicator(PLAN, kernel=KERNEL, name="ar")


def test_group_size_must_match_the_plan(torch_of):
    torch_of(4, 0)
    with pytest.raises(ValueError, match="plan is for world 2, the process group has 4 ranks"):
        process.ProcessCommunicator(PLAN, kernel=KERNEL, name="ar")


def test_run_passes_pointers_and_the_current_stream(torch_of):
    torch_of(2, 0)
    comm = process.ProcessCommunicator(PLAN, kernel=KERNEL, device=0)
    ins, outs = FakeTensor(PLAN.input_elems), FakeTensor(PLAN.output_elems + 5)
    comm.run(ins, outs)
    comm.run(ins, outs, stream=types.SimpleNamespace(cuda_stream=0x55))
    comm.run(ins, outs, stream=0x66)
    runs = [c for c in comm._impl.calls if c[0] == "run"]
    assert [c[3] for c in runs] == [0xABC, 0x55, 0x66]
    assert runs[0][1:3] == (ins.data_ptr(), outs.data_ptr())
    assert comm.epoch() == 7


SYMMETRIC = compiled(Case("all_gather", 2, "bf16", None, 64), "regime=throughput symmetric=true")


def test_a_symmetric_plan_gets_a_heap_for_its_largest_buffers(torch_of):
    torch_of(2, 1)
    comm = process.ProcessCommunicator(SYMMETRIC.plan, kernel=SYMMETRIC.cuda, name="ag")
    # Input and output, each at a 256-byte boundary, exchanged and mapped before the communicator's memory.
    (own,) = comm._impl.heaps
    assert (own.bytes, own.rank, own.world, own.name) == (256 + 256, 1, 2, "ag heap")
    assert own.handles == [b"handle-0", b"heap-1"]  # the fake group's peers give b"handle-r" for anything
    big = process.ProcessCommunicator(SYMMETRIC.plan, kernel=SYMMETRIC.cuda, name="ag", heap_bytes=1 << 20)
    assert big._impl.heaps[0].bytes == 1 << 20
    comm._heap.used = 512
    with pytest.raises(ValueError, match="ag heap: rank 1's heap of 512 bytes has 0 left, 2 asked for"):
        comm.alloc(1)


def test_communicators_share_a_heap(torch_of):
    torch_of(2, 0)
    shared = heap.DeviceHeap(4096, name="h")
    a = process.ProcessCommunicator(SYMMETRIC.plan, kernel=SYMMETRIC.cuda, name="ag", heap=shared)
    b = process.ProcessCommunicator(SYMMETRIC.plan, kernel=SYMMETRIC.cuda, name="ag2", heap=shared)
    assert a._impl.heaps == b._impl.heaps == [shared.handle()]
    with pytest.raises(ValueError, match="ag: give a heap or heap_bytes, not both"):
        process.ProcessCommunicator(SYMMETRIC.plan, kernel=SYMMETRIC.cuda, name="ag", heap=shared, heap_bytes=64)
    with pytest.raises(ValueError, match="ar: a DeviceHeap is for a symmetric plan on cuda; .*any CUDA tensors"):
        process.ProcessCommunicator(PLAN, kernel=KERNEL, name="ar", heap=shared)
    with pytest.raises(ValueError, match="h: unknown dtype 'bf17'"):
        shared.alloc(4, "bf17")
    with pytest.raises(ValueError, match="h: a heap needs a positive size, got 0 bytes"):
        heap.DeviceHeap(0, name="h")


def test_registered_tensors_are_heaps_beside_allocated_ones(torch_of):
    torch_of(2, 1)
    x = FakeTensor(64)
    reg = heap.DeviceHeap.register(x, name="x")
    # Every rank's handle of the tensor's memory, exchanged as a heap's.
    assert (reg.handle().base, reg.handle().bytes, reg.handle().registered) == (x.data_ptr(), 128, True)
    assert reg.handle().handles == [b"handle-0", b"heap-1"] and reg.tensor is x
    with pytest.raises(ValueError, match="x: a registered heap is the tensor given to register: pass it or views"):
        reg.alloc(4, "bf16")
    shared = heap.DeviceHeap(4096, name="h")
    comm = process.ProcessCommunicator(SYMMETRIC.plan, kernel=SYMMETRIC.cuda, name="ag", heap=[reg, shared])
    assert comm._impl.heaps == [reg.handle(), shared.handle()]
    assert comm._heap is shared  # alloc carves the heap purlin allocated
    only = process.ProcessCommunicator(SYMMETRIC.plan, kernel=SYMMETRIC.cuda, name="ag", heap=(reg,))
    with pytest.raises(ValueError, match="ag: this communicator has no heap to allocate from.*its heaps are "
                                         "registered tensors"):
        only.alloc(8)
    with pytest.raises(TypeError, match="ag: heap takes a DeviceHeap or a sequence of them"):
        process.ProcessCommunicator(SYMMETRIC.plan, kernel=SYMMETRIC.cuda, name="ag", heap=[reg, "x"])
    with pytest.raises(ValueError, match="ag: heap is an empty sequence"):
        process.ProcessCommunicator(SYMMETRIC.plan, kernel=SYMMETRIC.cuda, name="ag", heap=[])
    with pytest.raises(TypeError, match="r: register takes a CUDA tensor, got one on cpu"):
        heap.DeviceHeap.register(FakeTensor(8, is_cuda=False), name="r")
    with pytest.raises(TypeError, match="r: register takes a CUDA tensor, got list"):
        heap.DeviceHeap.register([1], name="r")
    with pytest.raises(ValueError, match="r: register takes a contiguous tensor"):
        heap.DeviceHeap.register(FakeTensor(8, contiguous=False), name="r")


def test_only_a_symmetric_plan_has_a_heap_on_cuda(torch_of):
    torch_of(2, 0)
    comm = process.ProcessCommunicator(PLAN, kernel=KERNEL, name="ar")
    assert comm._impl.heaps == []
    with pytest.raises(ValueError, match="ar: this communicator has no heap to allocate from: alloc is for a "
                                         "symmetric plan.*may be any CUDA tensors"):
        comm.alloc(8)
    with pytest.raises(ValueError, match="buffers='anywhere' is for a symmetric plan on the cpu backend"):
        process.ProcessCommunicator(SYMMETRIC.plan, kernel=SYMMETRIC.cuda, name="ag", buffers="anywhere")
    with pytest.raises(ValueError, match="ar: heap_bytes is for a symmetric plan on cuda"):
        process.ProcessCommunicator(PLAN, kernel=KERNEL, name="ar", heap_bytes=4096)


def test_a_heap_that_one_rank_cannot_make_fails_every_rank(torch_of, monkeypatch):
    torch_of(2, 1)

    class NoMemory(FakeHeap):
        def __init__(self, *args):
            raise RuntimeError("cudaMalloc: out of memory")

    monkeypatch.setattr(process._runtime, "CudaDeviceHeap", NoMemory)
    # The peers (here: echoing this rank) take part in the exchange and learn why, instead of waiting.
    with pytest.raises(RuntimeError, match="h: the ranks could not make their heaps: rank 0: cudaMalloc: out of "
                                           "memory; rank 1: cudaMalloc: out of memory"):
        heap.DeviceHeap(4096, name="h")

    class Unmappable(FakeHeap):
        def connect(self, handles):
            raise RuntimeError("cudaIpcOpenMemHandle: invalid argument")

    monkeypatch.setattr(process._runtime, "CudaDeviceHeap", Unmappable)
    with pytest.raises(RuntimeError, match="h: the ranks could not map each other's heaps: rank 0: cudaIpcOpenMem"):
        heap.DeviceHeap(4096, name="h")


def test_a_communicator_that_one_rank_cannot_make_fails_every_rank(torch_of, monkeypatch):
    torch_of(2, 0)

    class Refused(FakeImpl):
        def __init__(self, *args):
            raise ValueError("ar: the kernel is for sm_90, GPU 0 is sm_80")

    monkeypatch.setattr(process._runtime, "CudaProcessCommunicator", Refused)
    with pytest.raises(ValueError, match="ar: the ranks could not make their communicators: rank 0: ar: the kernel "
                                         "is for sm_90, GPU 0 is sm_80; rank 1: "):
        process.ProcessCommunicator(PLAN, kernel=KERNEL, name="ar")


def test_a_device_counts_collective_connects(torch_of):
    from purlin.compile import compile_device_counts

    torch_of(2, 0)
    coll = compile_device_counts("all_to_all_v", 2, "bf16", input_elems=64, output_elems=96, arch="sm_90")
    comm = process.ProcessCommunicator(None, device=0, name="a2av", kernel=coll.cuda)
    assert (comm.count_words, comm._extents, comm.world, comm.dtype) == (2, (64, 96), 2, "bf16")
    assert comm._impl.calls == [("connect", [b"handle-0", b"handle-1"])]


def test_a_cuda_communicator_needs_the_plan_s_own_kernel(torch_of):
    from purlin.compile import compile_collective, compile_device_counts

    torch_of(2, 0)
    with pytest.raises(ValueError, match="ar: the cuda backend launches the plan's compiled kernel, and none was "
                                         "given"):
        process.ProcessCommunicator(PLAN, device=0, name="ar")
    with pytest.raises(TypeError, match="ar: kernel= takes a purlin.cuda.program.CudaProgram .*got a Plan"):
        process.ProcessCommunicator(PLAN, device=0, name="ar", kernel=PLAN)
    other = compile_collective("all_reduce", 2, "bf16", "sum", 128, arch="sm_90").cuda
    with pytest.raises(ValueError, match="ar: the kernel is not the plan's: .*buffers of 128 and 128 elements; "
                                         "the plan for world 2, sm_90, bf16, 64 and 64"):
        process.ProcessCommunicator(PLAN, device=0, name="ar", kernel=other)
    counts = compile_device_counts("all_to_all_v", 2, "bf16", input_elems=64, output_elems=64, arch="sm_90").cuda
    with pytest.raises(ValueError, match="reads its counts on the device at every call, the plan's are fixed"):
        process.ProcessCommunicator(PLAN, device=0, name="ar", kernel=counts)
    with pytest.raises(ValueError, match="without a plan the kernel must read its counts on the device"):
        process.ProcessCommunicator(None, device=0, name="ar", kernel=KERNEL)


@pytest.mark.parametrize("tensor,error,match", [
    (FakeTensor(PLAN.input_elems, dtype="torch.float32"), TypeError, r"input of rank 0 has dtype torch.float32, the plan is bf16"),
    (FakeTensor(PLAN.input_elems, is_cuda=False), TypeError, "input of rank 0 is a CPU tensor"),
    (FakeTensor(PLAN.input_elems, contiguous=False), ValueError, "input of rank 0 is not contiguous"),
    (FakeTensor(PLAN.input_elems, device=1), ValueError, "is on cuda:1, rank 0 runs on cuda:0"),
    (FakeTensor(PLAN.input_elems - 1), ValueError, f"has {PLAN.input_elems - 1} elements, the plan needs at least"),
    (object(), TypeError, "input of rank 0 is a object"),
], ids=["dtype", "cpu", "strided", "device", "small", "not-a-tensor"])
def test_run_refuses_bad_inputs(torch_of, tensor, error, match):
    torch_of(2, 0)
    comm = process.ProcessCommunicator(PLAN, kernel=KERNEL, device=0, name="ar")
    with pytest.raises(error, match=match):
        comm.run(tensor, FakeTensor(PLAN.output_elems))
    assert not [c for c in comm._impl.calls if c[0] == "run"]


@needs_cuda_build
def test_timeouts_surface_as_collective_timeout(torch_of, monkeypatch):
    torch_of(2, 0)
    comm = process.ProcessCommunicator(PLAN, kernel=KERNEL, device=0)
    monkeypatch.setattr(FakeImpl, "timeout", "ar: rank 0 (GPU 0) timed out")
    with pytest.raises(CollectiveTimeout, match="rank 0 .GPU 0. timed out"):
        comm.synchronize()
    # close still releases the memory after the group's barrier.
    with pytest.raises(CollectiveTimeout):
        comm.close()
    assert comm._impl is None


# -- the C++ communicator's checks before any CUDA call ------------------------------------


def spec_of(compiled: Compiled, **changes):
    """The runtime's description of `compiled`'s kernel (compiled by NVRTC, no GPU needed)."""
    plan = compiled.plan
    eb = plan.elem_bytes
    spec = compiled.cuda.spec(1, [plan.input_extent(r) * eb for r in range(plan.world)],
                              [plan.output_extent(r) * eb for r in range(plan.world)])
    for k, v in changes.items():
        setattr(spec, k, v)
    return spec


@needs_cuda_build
def test_heaps_are_refused_before_any_cuda_call():
    with pytest.raises(ValueError, match="h: rank 2 is outside a world of 2"):
        _runtime.CudaDeviceHeap(2, 2, 0, 64, "h")
    with pytest.raises(ValueError, match="h: a heap needs a positive size, got 0"):
        _runtime.CudaDeviceHeap(0, 2, 0, 0, "h")
    with pytest.raises(ValueError, match="r: rank -1 is outside a world of 2"):
        _runtime.CudaDeviceHeap(-1, 2, 0, memory=1 << 20, bytes=64, name="r")
    with pytest.raises(ValueError, match="r: registered memory needs a positive size, got 0"):
        _runtime.CudaDeviceHeap(0, 2, 0, memory=1 << 20, bytes=0, name="r")


@needs_cuda_build
def test_multimem_kernels_are_refused():
    with pytest.raises(ValueError, match="uses multimem.*lower without multimem"):
        _runtime.CudaProcessCommunicator(spec_of(all_reduce(multimem=True)), 0, 0, 1.0, "ar")


@needs_cuda_build
def test_gpu_scope_kernels_are_refused_where_another_process_has_ranks():
    with pytest.raises(ValueError, match="ar: the kernel signals at GPU scope.*lower it with scope=system"):
        _runtime.CudaProcessCommunicator(spec_of(COMPILED, gpu_scope=True), 0, 0, 1.0, "ar")
    # A world of one (a process group of one GPU) has no other process to order for.
    one = spec_of(compiled(Case("all_reduce", 1, "bf16", "sum", 8), "regime=latency"))
    assert one.gpu_scope
    if default_backend() == "cuda":
        _runtime.CudaProcessCommunicator(one, 0, 0, 1.0, "ar")
    else:
        with pytest.raises(RuntimeError, match="cudaGetDeviceCount: "):
            _runtime.CudaProcessCommunicator(one, 0, 0, 1.0, "ar")


@needs_cuda_build
@pytest.mark.parametrize("changes,match", [
    ({"threads": 1000}, "threads per block must be a multiple of 32 in \\[32, 1024\\], got 1000"),
    ({"grid": 0}, "the kernel needs at least one block"),
    ({"tables": [[0] * 64]}, "needs tables and extents for each of its 2 ranks"),
    ({"site_names": []}, "one name per site expected"),
    ({"tables": [[0], [0]]}, "rank 0's tables are shorter than their header"),
    ({"stream": [0, -1, 1]}, "copy-engine steps \\(a stream role\\) need a symmetric kernel"),
    ({"stream": [-1], "symmetric": True}, "a stream program needs at least one kernel step"),
], ids=["threads", "grid", "tables", "sites", "short-tables", "stream-not-symmetric", "stream-of-copies-only"])
def test_malformed_kernel_descriptions_are_refused(changes, match):
    with pytest.raises(ValueError, match=f"ar: .*{match}"):
        _runtime.CudaProcessCommunicator(spec_of(all_reduce(latency=True), **changes), 0, 0, 1.0, "ar")


@needs_cuda_build
def test_a_symmetric_kernel_across_processes_needs_a_heap():
    symmetric = spec_of(SYMMETRIC)
    assert symmetric.symmetric and not symmetric.gpu_scope
    with pytest.raises(ValueError, match="ag: the kernel reads and writes the peers' buffers in place "
                                         "\\(symmetric\\): another process reaches them only in a heap"):
        _runtime.CudaProcessCommunicator(symmetric, 0, 0, 1.0, "ag")


@needs_cuda_build
@pytest.mark.parametrize("rank,timeout,match", [(2, 1.0, "rank 2 is outside the kernel's world 2"),
                                                 (0, 0.0, "the timeout must be positive")])
def test_rank_and_timeout_are_checked(rank, timeout, match):
    with pytest.raises(ValueError, match=f"ar: {match}"):
        _runtime.CudaProcessCommunicator(spec_of(COMPILED), rank, 0, timeout, "ar")


@needs_cuda_build
@pytest.mark.skipif(default_backend() == "cuda", reason="checks the error without GPUs")
def test_no_gpu_is_a_clear_error():
    with pytest.raises(RuntimeError, match="cudaGetDeviceCount: "):
        _runtime.CudaProcessCommunicator(spec_of(COMPILED), 0, 0, 1.0, "ar")
