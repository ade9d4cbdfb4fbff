"""purlin/cuda without a GPU: the generated kernels of every collective, in
both regimes, compile with NVRTC for sm_80, sm_90 and sm_100; each
generation's mechanisms reach the code; one kernel serves every rank and
every size of one structure; the disk cache serves a second process; bad
kernels are diagnostics naming the op."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import replace

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType
from xdsl.rewriter import InsertPoint, Rewriter

from purlin.atom import dialect as atom
from purlin.coll.builder import COLLECTIVES
from purlin.compile import compile_collective, compile_device_counts
from purlin.cuda import nvrtc
from purlin.cuda.codegen import CodegenError, emit_cuda
from purlin.cuda.program import ProgramError
from purlin.snac import dialect as snac
from purlin.snac.vocabulary import Regime
from purlin.testing.cases import counts_for
from purlin.tools import opt

ARCHS = ("sm_80", "sm_90", "sm_100")
REGIMES = ("regime=latency", "regime=throughput")


@pytest.fixture(scope="module", autouse=True)
def shared_cache(tmp_path_factory):
    """One cache for the module (collectives of one structure share kernels)."""
    old = os.environ.get("PURLIN_CACHE_DIR")
    os.environ["PURLIN_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernels"))
    yield
    if old is None:
        del os.environ["PURLIN_CACHE_DIR"]
    else:
        os.environ["PURLIN_CACHE_DIR"] = old


def compiled_of(name: str, world: int = 4, arch: str = "sm_90", lowering: str = "regime=latency", count: int = 64,
                dtype: str = "bf16"):
    info = COLLECTIVES[name]
    op = "sum" if info.reduces else None
    counts = counts_for(name, world, count, seed=3) if info.variable else None
    return compile_collective(name, world, dtype, op, 0 if counts else count, counts=counts, arch=arch,
                              lowering=lowering)


@pytest.mark.parametrize("lowering", REGIMES)
@pytest.mark.parametrize("name", list(COLLECTIVES))
@pytest.mark.parametrize("arch", ARCHS)
def test_every_collective_compiles_for_every_generation(arch, name, lowering):
    program = compiled_of(name, arch=arch, lowering=lowering).cuda
    assert program.cubin()[:4] == b"\x7fELF"


@pytest.mark.parametrize("arch,lowering,dtype,needles", [
    ("sm_80", "regime=throughput", "bf16", ["cp.async.cg.shared.global"]),
    ("sm_90", "regime=throughput chunk-bytes=65536", "bf16", ["cp.async.bulk.shared::cluster.global", "mbarrier"]),
    ("sm_100", "regime=throughput", "f32", ["ld.global.v8.b32", "add.rn.f32x2"]),
    ("sm_90", "regime=latency", "bf16", ["st.relaxed.sys.global.v2.u64", "ld.relaxed.sys.global.v2.u64"]),
    # Signal waits back off (order.cuh's poll_signal), so that many pollers do not flood L2.
    ("sm_90", "regime=throughput", "bf16", ["nanosleep.u32"]),
], ids=["sm80-cp.async", "sm90-bulk", "sm100-wide-and-packed", "packets", "poll-backoff"])
def test_each_generation_s_mechanisms_reach_the_code(arch, lowering, dtype, needles):
    program = compiled_of("all_reduce", arch=arch, lowering=lowering, count=1 << 16, dtype=dtype).cuda
    ptx = nvrtc.compile_ptx(program.source().text, arch)
    for needle in needles:
        assert needle in ptx, f"{arch}: no {needle} in the PTX"


@pytest.mark.parametrize("name", ["all_gather", "all_reduce"])
@pytest.mark.parametrize("arch", ARCHS)
def test_throughput_kernels_stream_their_vector_stores(arch, name):
    # Lines written and left in L2 slowed write-heavy copies (baseline.cuh's store).
    program = compiled_of(name, arch=arch, lowering="regime=throughput", count=1 << 19).cuda
    vector = re.findall(r"\bst\.global[.\w]*\.v\d\.\w+", nvrtc.compile_ptx(program.source().text, arch))
    assert vector and all(".cs." in s for s in vector), vector


def test_multimem_reductions_compile_on_sm90():
    from purlin.atom.dialect import KernelOp
    from purlin.compile.pipeline import entry_function, lower, pipeline_spec
    from purlin.cuda.program import CudaProgram
    from purlin.testing.cases import Case

    case = Case("reduce_scatter", 2, "bf16", "sum", 1 << 16)
    module = lower(case.build_module(),
                   pipeline_spec("atom", lowering="regime=throughput", arch="sm_90", multimem=True, verify=False))
    (kernel,) = [op for op in entry_function(module).body.ops if isinstance(op, KernelOp)]
    program = CudaProgram(kernel)
    assert program.source().multimem
    assert "multimem.ld_reduce" in nvrtc.compile_ptx(program.source().text, "sm_90")


def kernel_properties(source: str) -> str:
    """ptxas's report on the generated kernel (not on the functions it calls)."""
    log = nvrtc.compile_cubin(source, "sm_90", verbose=True).log
    start = log.index("Function properties for purlin_")
    end = log.find("Function properties for", start + 1)
    return log[start:end if end > 0 else len(log)]


@pytest.mark.parametrize("name", ["all_reduce", "all_gather"])
def test_latency_kernels_do_not_spill(name):
    entry = kernel_properties(compiled_of(name, world=8).cuda.source().text)
    assert re.search(r"0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", entry), entry


def test_reduce_scatter_at_two_blocks_an_sm_does_not_spill():
    # Ranks sharing the SMs: 4 MiB and up runs two blocks an SM, which caps a thread at 64 registers;
    # the header keeps fewer chunks in flight there (the composed all_reduce still spills a few bytes).
    program = compile_collective("reduce_scatter", 4, "bf16", "sum", 8 << 20, arch="sm_90", symmetric=True,
                                 ranks_per_device=4, sms=132).cuda
    assert program.blocks_per_sm(4, 132) == 2
    source = program.source(2).text
    assert "#define PURLIN_BLOCKS_PER_SM 2" in source
    assert "#define PURLIN_BLOCKS_PER_SM 1" in program.source(1).text
    entry = kernel_properties(source)
    assert re.search(r"0 bytes spill stores, 0 bytes spill loads", entry), entry


@pytest.mark.parametrize("name, world, spill", [("all_to_all", 8, 0), ("all_to_all", 3, 0), ("reduce_scatter", 8, 44)])
def test_packets_at_two_blocks_an_sm_poll_few_sources_at_once(name, world, spill):
    # Packets beyond latency_max_bytes take the ranks' share at two blocks an SM (64 registers a
    # thread): polling 8 sources at once spilled 60-244 bytes there; 2 at once spills none, or less
    # (reduce_scatter 44 B, 4 of them spread's first item found in its counting pass).
    op = "sum" if "reduce" in name else None
    program = compile_collective(name, world, "bf16", op, 16 << 10, arch="sm_90", symmetric=True,
                                 ranks_per_device=world, sms=132).cuda  # 32 KiB a peer
    assert program.kernel.regime.data == Regime.LATENCY and program.blocks_per_sm(world, 132) == 2
    entry = kernel_properties(program.source(2).text)
    stores = re.search(r"(\d+) bytes spill stores", entry)
    assert stores and int(stores.group(1)) <= spill, entry


def pushes_of(name: str, world: int, count: int, arch: str = "sm_90"):
    """The atom.push ops and the source of a symmetric throughput kernel, every rank on one 132-SM GPU."""
    program = compile_collective(name, world, "bf16", None, count, arch=arch, symmetric=True,
                                 ranks_per_device=world, sms=132).cuda
    pushes = [op for op in program.kernel.walk() if isinstance(op, atom.PushOp)]
    return pushes, program.source(program.blocks_per_sm(world, 132)).text


@pytest.mark.parametrize("world", [2, 4, 8])
@pytest.mark.parametrize("arch", ARCHS)
def test_pushes_to_several_destinations_load_whole_rounds_of_eight(arch, world):
    # all_gather of 16 MiB a rank's output: each load feeds every peer's store, and every thread of
    # the push role has 8 chunks or more of each unit. sm_100 (32-byte words, not measured) keeps 4.
    pushes, source = pushes_of("all_gather", world, (8 << 20) // world, arch)
    if arch == "sm_100":
        assert [p.loads for p in pushes] == [None] and "push<DType::BF16, Mech::Vector, 32>(" in source
    else:
        assert [p.loads.value.data for p in pushes] == [8]
        assert "push<DType::BF16, Mech::Vector, 16, 8>(" in source
    nvrtc.compile_cubin(source, arch)


@pytest.mark.parametrize("name, world, count", [
    ("all_to_all", 8, 1 << 20),  # one destination a unit: whole rounds made it slower
    ("all_gather", 8, 256 << 10),  # 4 MiB: two chunks a thread, no whole round of eight
    ("all_gather", 3, (8 << 20) // 3),  # 16 MiB at world 3: 7.8 chunks a thread of its 87 blocks
    ("all_gather", 5, 1677721),  # 16 MiB at world 5: slots 2 bytes off 16, shifted into place
    ("all_gather", 8, ((4 << 20) + 4102) // 2),  # 6 bytes off: one rank's aligned is not enough
])
def test_other_pushes_keep_the_datapaths_rounds(name, world, count):
    pushes, source = pushes_of(name, world, count)
    assert pushes and all(p.loads is None for p in pushes)
    assert "push<DType::BF16, Mech::Vector, 16>(" in source


def test_pushes_of_counts_bound_at_the_call_keep_the_datapaths_rounds():
    # all_gather_v of 8 MiB buffers a rank, counts bound at each call: unit sizes unknown when lowered.
    dc = compile_device_counts("all_gather_v", 8, "bf16", None, input_elems=4 << 20, output_elems=32 << 20,
                               arch="sm_90", counts_on_host=True, lowering="symmetric=true regime=throughput")
    pushes = [op for op in dc.kernel.walk() if isinstance(op, atom.PushOp)]
    assert pushes and all(op.loads is None for op in pushes)


def test_whole_rounds_at_two_blocks_an_sm_spill_at_most_a_few_bytes():
    # 8 words of 16 bytes in flight at 64 registers a thread: ptxas spills 12 bytes around them.
    _, source = pushes_of("all_gather", 8, 1 << 20)
    assert "#define PURLIN_BLOCKS_PER_SM 2" in source
    stores = re.search(r"(\d+) bytes spill stores", kernel_properties(source))
    assert stores and int(stores.group(1)) <= 12


def test_sizes_of_one_structure_share_a_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("PURLIN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(nvrtc, "_memory", {})
    # Sizes whose packets need the same threads per block (THREAD_STEPS).
    programs = [compiled_of("all_reduce", count=kib * 512).cuda for kib in (2, 3, 4)]
    assert len({p.source().text for p in programs}) == 1
    assert [nvrtc.compile_cubin(p.source().text, "sm_90").cached for p in programs] == [False, True, True]
    # ... while what differs lives in the tables.
    assert len({tuple(p.tables.ranks[0]) for p in programs}) == 3


def test_compiling_leaves_the_interpreter_s_one_byte_singletons_intact(tmp_path, monkeypatch):
    # A warning-free compile has a 1-byte log (its NUL): NVRTC once wrote it
    # into CPython's shared b" ", and every later print(a, b) emitted a NUL.
    monkeypatch.setenv("PURLIN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(nvrtc, "_memory", {})
    compiled = nvrtc.compile_cubin('extern "C" __global__ void k() {}', "sm_90")
    assert not compiled.cached and compiled.log == ""
    assert nvrtc.compile_ptx('extern "C" __global__ void k() {}', "sm_90").startswith("//")
    assert [bytes([c])[0] for c in (0, 32, 255)] == [0, 32, 255]


def test_one_kernel_serves_every_rank_and_world_is_one_constant():
    sources = {}
    for world in (2, 4, 8):
        # 2 KiB: enough packets for the full block at every world (snac_to_atom.THREAD_STEPS).
        program = compiled_of("all_reduce", world=world, count=1024).cuda
        assert len({tuple(t) for t in program.tables.ranks}) == world
        sources[world] = program.source().text
    strip = lambda text: [ln for ln in text.splitlines() if "kWorld =" not in ln and not ln.startswith("// purlin:")]  # noqa: E731
    assert strip(sources[2]) == strip(sources[4]) == strip(sources[8])


def test_disk_cache_serves_a_second_process(tmp_path, monkeypatch):
    monkeypatch.setenv("PURLIN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(nvrtc, "_memory", {})
    source = compiled_of("all_gather").cuda.source().text
    first = nvrtc.compile_cubin(source, "sm_90")
    assert not first.cached and list(tmp_path.glob("*.cubin"))
    script = ("import sys; from purlin.cuda import nvrtc; c = nvrtc.compile_cubin(sys.stdin.read(), 'sm_90'); "
              "print(c.cached, len(c.cubin))")
    out = subprocess.run([sys.executable, "-c", script], input=source, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", str(len(first.cubin))]


def test_cache_key_covers_source_and_target():
    source = compiled_of("all_gather").cuda.source().text
    keys = {nvrtc.cache_key(source, "sm_90"), nvrtc.cache_key(source, "sm_80"),
            nvrtc.cache_key(source + "\n", "sm_90"), nvrtc.cache_key(source, "sm_90", verbose=True)}
    assert len(keys) == 4


def test_an_unwritable_cache_only_costs_recompiles(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("PURLIN_CACHE_DIR", str(blocker))
    monkeypatch.setattr(nvrtc, "_memory", {})
    source = compiled_of("all_gather").cuda.source().text
    assert not nvrtc.compile_cubin(source, "sm_90").cached
    assert nvrtc.compile_cubin(source, "sm_90").cached  # in memory


def test_a_kernel_that_does_not_compile_is_a_diagnostic_naming_the_op(monkeypatch):
    monkeypatch.setattr(nvrtc, "_memory", {})
    program = compiled_of("all_gather").cuda
    src = program.source()
    program._sources[1] = replace(src, text=src.text + "\nnot C++\n")
    with pytest.raises(ProgramError, match=r"error: 'atom.kernel': NVRTC could not compile .* for sm_90"):
        program.cubin()


def test_queries_of_another_rank_are_refused():
    program = compiled_of("all_gather").cuda
    kernel = program.kernel
    units = next(op for op in kernel.walk() if isinstance(op, snac.UnitsOp))
    two = arith.ConstantOp.from_int_and_width(2, IndexType())
    Rewriter.insert_op(two, InsertPoint.before(units))
    units.operands[0] = two.result
    with pytest.raises(CodegenError, match=r"'snac.units': names the units or groups of a rank other than snac.rank"):
        emit_cuda(kernel)


COPY_ENGINE = "symmetric=true copy-engine=true"


@pytest.mark.parametrize("name", [n for n, c in COLLECTIVES.items() if not c.reduces])
@pytest.mark.parametrize("arch", ARCHS)
def test_copy_engine_steps_are_kernels_between_the_copies(arch, name):
    """A stream role: kernel NAME_0 (grant, waits for the destinations'
    grants), the copies of every unit of phase 0, then NAME_1 (notifies, waits
    for the groups), the only one that advances the epochs."""
    program = compiled_of(name, arch=arch, lowering=COPY_ENGINE).cuda
    src = program.source()
    assert (src.stream, src.grid, src.threads, src.symmetric) == ((0, -1, 1), 1, 32, True)
    first, second = src.text.split(f"{src.name}_1(")
    assert f"{src.name}_0(" in first and "grant<" in first and "wait_free<" in first
    assert "push<" not in src.text and "notify<" in second and "wait_ready<" in second
    assert "advance(" not in first and second.count("advance(") == 1
    assert program.cubin()[:4] == b"\x7fELF"


def test_a_copy_engine_push_outside_a_loop_over_units_is_refused():
    kernel = compiled_of("all_gather", lowering=COPY_ENGINE).cuda.kernel
    push = next(op for op in kernel.walk() if isinstance(op, atom.PushOp))
    loop = push.parent_op()
    zero = loop.lb
    push.detach()
    Rewriter.insert_op(push, InsertPoint.before(loop))
    push.operands[0] = zero
    Rewriter.erase_op(loop)
    with pytest.raises(CodegenError, match=r"'atom.push': a copy-engine push must be the whole body of a loop over "
                                           r"the rank's units"):
        emit_cuda(kernel)


def test_more_blocks_per_sm_than_threads_allow_is_refused():
    kernel = compiled_of("all_reduce", count=1024).cuda.kernel
    with pytest.raises(CodegenError, match="5 blocks of 512 threads per SM exceed the 2048 threads an SM holds"):
        emit_cuda(kernel, True, 5)


def run_opt(args, capsys) -> tuple[int, str, str]:
    code = opt.main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def write_module(tmp_path, name: str = "all_gather", kernels: int = 1):
    from purlin.testing.cases import Case

    funcs = []
    for k in range(kernels):
        text = str(Case(name, 2, "f32", None, 16).build_module())
        funcs.append(text.replace(f"@{name}", f"@{name}{k}").split("\n", 1)[1].rsplit("}", 1)[0])
    path = tmp_path / "in.mlir"
    path.write_text("builtin.module {\n" + "\n".join(funcs) + "\n}\n")
    return str(path)


PIPELINE = "coll-expand,convert-coll-to-snac{regime=latency},convert-snac-to-atom{arch=sm_100}"


def test_opt_writes_the_cubin_of_the_kernel(tmp_path, capsys):
    out = tmp_path / "k.cubin"
    code, _, err = run_opt([write_module(tmp_path), "-p", PIPELINE, "-t", "cubin", "-o", str(out)], capsys)
    assert code == 0, err
    cuda_code, source, _ = run_opt([write_module(tmp_path), "-p", PIPELINE, "-t", "cuda"], capsys)
    assert cuda_code == 0
    assert out.read_bytes() == nvrtc.compile_cubin(source, "sm_100").cubin


def test_opt_cubin_takes_one_kernel(tmp_path, capsys):
    code, _, err = run_opt([write_module(tmp_path, kernels=2), "-p", PIPELINE, "-t", "cubin"], capsys)
    assert code == 1
    assert "the module holds 2 atom.kernel ops and a cubin holds one" in err
    assert "Traceback" not in err


def test_opt_cuda_needs_lowered_kernels(tmp_path, capsys):
    code, _, err = run_opt([write_module(tmp_path), "-p", "coll-expand", "-t", "cuda"], capsys)
    assert code == 1
    assert err.strip() == "error: no atom.kernel to compile; lower with convert-snac-to-atom first"


def test_opt_without_cuda_headers_is_a_diagnostic(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(nvrtc, "_memory", {})
    monkeypatch.setattr(nvrtc, "cuda_include_dir", lambda: (_ for _ in ()).throw(nvrtc.NvrtcError("no headers here")))
    monkeypatch.setenv("PURLIN_CACHE_DIR", str(tmp_path))
    code, _, err = run_opt([write_module(tmp_path), "-p", PIPELINE, "-t", "cubin", "-o", str(tmp_path / "x")], capsys)
    assert code == 1
    assert re.fullmatch(r".*in\.mlir:\d+:\d+: error: 'atom.kernel': no headers here\s*", err, re.S), err


# f64 and the integers reduce exactly in their own types: every new dtype
# compiles in both regimes (staged pipelines on sm_90, packets and 32-byte
# accesses on sm_100), and the combination is integer or f64 arithmetic.
@pytest.mark.parametrize("dtype,op,needle", [
    ("i8", "sum", "add.s32"), ("ui8", "max", "max.u32"), ("i32", "prod", "mul.lo"),
    ("ui32", "xor", "xor.b32"), ("i64", "min", "min.s64"), ("ui64", "sum", "add.s64"),
    ("f64", "sum", "add.f64"),
])
@pytest.mark.parametrize("arch,lowering", [("sm_90", "regime=throughput"), ("sm_100", "regime=latency")])
def test_exact_dtypes_compile_and_combine_in_their_type(arch, lowering, dtype, op, needle):
    compiled = compile_collective("all_reduce", 4, dtype, op, 1 << 12, arch=arch, lowering=lowering)
    ptx = nvrtc.compile_ptx(compiled.cuda.source().text, arch)
    assert needle in ptx, f"{dtype} {op}: no {needle} in the PTX"
    assert "cvt.rn.f32" not in ptx and "add.rn.f32 " not in ptx, f"{dtype} goes through f32"


# avg is a sum divided once by the contributions: in f32 for the narrow
# floats, in f64 for f64, in every generation, regime and protocol.
@pytest.mark.parametrize("dtype,needle", [("bf16", "div.rn.f32"), ("f32", "div.rn.f32"), ("f64", "div.rn.f64")])
@pytest.mark.parametrize("lowering", [*REGIMES, "regime=throughput symmetric=true"])
@pytest.mark.parametrize("arch", ARCHS)
def test_averages_compile_and_divide_once(arch, lowering, dtype, needle):
    for name in ("all_reduce", "reduce_scatter"):
        compiled = compile_collective(name, 4, dtype, "avg", 1 << 12, arch=arch, lowering=lowering)
        ptx = nvrtc.compile_ptx(compiled.cuda.source().text, arch)
        assert needle in ptx, f"{name} {dtype} avg: no {needle} in the PTX"


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("shared", [True, False], ids=["shared", "global"])
def test_tables_compiled_in_give_a_body_per_rank(arch, shared):
    world = 4
    program = compile_collective("all_reduce", world, "bf16", "sum", 64, arch=arch, symmetric=True,
                                 ranks_per_device=world, sms=132).cuda
    ranks = {r: [int(w) for w in t] for r, t in enumerate(program.tables.ranks)}
    src = emit_cuda(program.kernel, shared, 1, None, ranks)
    for r, words in ranks.items():
        assert f"kRank{r}Words[{len(words)}] = {{{', '.join(f'{w}ll' for w in words)}}};" in src.text
        assert f"    case {r}: rank_call<Kernel<kWorld, kSharedTables, kSystem, Rank{r}Tables>>(p, peers, smem);" \
            in src.text
    assert src.text.count("K k(p,") == 1 and "using K =" not in src.text
    assert f"kSharedTables = {'true' if shared else 'false'}" in src.text
    assert "default: __trap();" in src.text
    assert nvrtc.compile_cubin(src.text, arch).cubin[:4] == b"\x7fELF"


def test_tables_compiled_in_for_one_process_s_rank_only():
    program = compile_collective("all_gather", 3, "bf16", None, 48, arch="sm_90", symmetric=True,
                                 ranks_per_device=1, sms=132).cuda
    src = emit_cuda(program.kernel, True, 1, None, {2: [int(w) for w in program.tables.ranks[2]]})
    assert "case 2: rank_call<Kernel<kWorld, kSharedTables, kSystem, Rank2Tables>>" in src.text
    assert "case 0:" not in src.text and "kRank0Words" not in src.text and "default: __trap();" in src.text
    assert nvrtc.compile_cubin(src.text, "sm_90").cubin[:4] == b"\x7fELF"


def test_tables_compiled_in_are_the_world_s_ranks_of_fixed_counts():
    program = compiled_of("all_reduce", world=4).cuda
    ranks = {r: list(t) for r, t in enumerate(program.tables.ranks)}
    with pytest.raises(CodegenError, match=r"tables compiled in take ranks of the world \(0-3, got 0, 4\)"):
        emit_cuda(program.kernel, False, 1, None, {0: ranks[0], 4: ranks[1]})
    counted = compile_device_counts("all_gather_v", 4, "bf16", None, input_elems=64, output_elems=256,
                                    arch="sm_90").cuda
    with pytest.raises(CodegenError, match="tables compiled in take ranks of the world .* fixed counts"):
        emit_cuda(counted.kernel, True, 1, True, ranks)


@pytest.mark.parametrize("arch", ARCHS)
def test_specialised_program_compiles_the_ranks_tables_in(arch):
    program = compile_collective("reduce_scatter", 3, "bf16", "sum", 40, arch=arch, lowering="regime=latency").cuda
    src, cubin = program.specialised(1, [0, 2])
    assert cubin[:4] == b"\x7fELF" and src.name == program.source().name
    assert "kRank0Words" in src.text and "kRank2Words" in src.text and "kRank1Words" not in src.text
    assert (src.threads, src.grid, src.smem, src.shared_tables) == (program.threads, program.grid,
                                                                    program.source().smem, program.shared_tables)


def test_device_counts_programs_are_not_specialised():
    counted = compile_device_counts("all_gather_v", 4, "bf16", None, input_elems=64, output_elems=256,
                                    arch="sm_90").cuda
    with pytest.raises(ProgramError, match="error: 'atom.kernel': a kernel that reads its counts on the device has "
                                           "no tables to compile in"):
        counted.specialised(1, [0])


def _sources_of_every_kind():
    yield "latency", compiled_of("all_reduce").cuda.source()
    yield "throughput", compiled_of("all_gather", lowering="regime=throughput").cuda.source()
    yield "copy engine", compiled_of("all_gather", lowering=COPY_ENGINE).cuda.source()
    yield "device counts", compile_device_counts("all_gather_v", 4, "bf16", None, input_elems=64, output_elems=256,
                                                 arch="sm_90").cuda.source()
    program = compile_collective("all_reduce", 4, "bf16", "sum", 64, arch="sm_90", symmetric=True,
                                 ranks_per_device=4, sms=132).cuda
    yield "tables compiled in", emit_cuda(program.kernel, True, 1, None,
                                          {r: [int(w) for w in t] for r, t in enumerate(program.tables.ranks)})


@pytest.mark.parametrize("kind,src", list(_sources_of_every_kind()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_kernel_waits_for_the_work_ahead_before_its_first_step(kind, src):
    """Launched as a programmatic dependent, a kernel may start while the work ahead of it on its
    stream runs: every kernel's first statement waits for it (kernel.cuh, follow_previous), before
    the input read ahead, the block state and the tables."""
    kernels = re.findall(r'extern "C" __global__ void __launch_bounds__\(\d+, \d+\)\n\w+\([^)]*\) \{\n(.*)\n(.*)',
                         src.text)
    assert kernels, kind
    for smem, first in kernels:
        assert smem == "  extern __shared__ __align__(128) char smem[];" and first == "  follow_previous(p);", kind
