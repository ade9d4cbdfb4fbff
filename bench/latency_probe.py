"""Where a latency kernel's time goes, on one GPU: the generated kernel of a
small collective (every rank on GPU 0) timed as purlin-bench times it, next
to variants of the same translation unit cut down step by step. Each
variant keeps the launch (grid, threads, parameters, dynamic shared
memory) and drops work, so the differences between rows are what each step
costs on the critical path:

    as generated       the kernel purlin runs
    global tables      its tables read from global memory, not copied to shared first
    frame only         the kernel's set-up (block state, tables) and snac.advance, no data
    launch only        an empty body with the same launch
    bare launch        that, without the tables' dynamic shared memory
    no waits           the frame and the data movement (puts, pushes, notifies), no waits
    timeline           as generated, each block's thread 0 stamping the global timer at entry,
                       after the wait for the work ahead, after the frame and after every
                       step of one call (the 100th), printed from the device beside the
                       block's last stamp in the call before, as `timeline RANK BLOCK N
                       PREVIOUS ns...`; bench/timeline.py summarises them
    relaxed grant      a throughput kernel's grant without its release fence
    grant first        its grant by block 0 of the first role, before that role's first step
    signal roles first the one-block roles' code before the data roles' (the layout of the
                       instructions the consumer's grant runs)
    prefetch input     each thread asks L1 for one 128-byte line of the rank's input (8 KiB
                       at most) before the frame loads the tables, so that the first read
                       of the input does not wait a second round trip after theirs
    notify every block every block of a notifying role stores the ready signal itself, with
                       no arrival counter nor count: what signalling a role's blocks costs (a
                       lower bound, as the consumer may go on before the last block's data is
                       there)
    rank tables        every rank's tables compiled into the kernel (the body once per rank,
                       a switch on the rank): a lookup at an index the compiler knows is a
                       constant, the rest read the tables as generated
    rank tables global as rank tables, but no copy of the tables into shared memory before
                       the first step: the lookups left read global memory

`--stream-order` times every variant a second time launched in stream order
(Communicator(programmatic=False)), beside its programmatic launch (the
default on sm_90 where two grids of every rank fit): what that launch saves.

`--blocks-per-sm N` compiles each kernel for N resident blocks per SM (its
registers capped so, `__launch_bounds__`) instead of the fewest its ranks'
grids need: with twice that, two grids of every rank fit and the kernel
launches programmatically (bench/residency.py says which kernels do not).

`--lowering OPTIONS` lowers with those options of convert-coll-to-snac
(e.g. `blocks=32`) over the cost model's.

`--library DIR` (repeatable) runs every variant again compiled against
another copy of the device library (DIR holds purlin/*.cuh): the cost of
a change to the headers, measured in the same run.

"as generated" and the "rank tables" variants move data and are checked
against the reference first; the cut-down ones are timing probes, not
collectives.

    python bench/latency_probe.py [--worlds 2,4,8] [--bytes 16] [--collective all_reduce]
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys

import numpy as np


def _body_start(text: str, name: str) -> int:
    """Index just after the opening brace of kernel `name`'s body."""
    at = text.index(f"{name}(")
    return text.index("{", text.index(")", at)) + 1


def _frame_only(text: str, name: str) -> str:
    head = text[:_body_start(text, name)]
    return head + ("\n  extern __shared__ __align__(128) char smem[];\n"
                   "  follow_previous(p);\n"
                   "  K k(p, reinterpret_cast<i64*>(smem + kSmem), &peers);\n"
                   "  advance(k, 2);\n}\n")


def _launch_only(text: str, name: str) -> str:
    # The wait for the work ahead stays: a programmatic launch's cost is in it.
    return text[:_body_start(text, name)] + "\n  follow_previous(p);\n}\n"


WAITS = ("poll_consume<", "wait_packets<", "wait_free<", "wait_ready<", "grant<", "role_barrier<", "block_wait<")


def _no_waits(text: str, name: str) -> str:
    return "\n".join(line for line in text.splitlines() if not any(w in line for w in WAITS))


def _global_tables(text: str, name: str) -> str:
    return re.sub(r"constexpr bool kSharedTables = true;", "constexpr bool kSharedTables = false;", text)


STEPS = ("wait_ready<", "wait_free<", "grant<", "drain<", "push<", "reduce_push<", "notify<", "finish<",
         "put_units(", "poll_consume<", "consume<", "wait_packets<", "stage<", "ack<", "role_barrier<")
STAMPS = 20
TIMELINE_CALL = 100
# Blocks a rank's grid may have for the timeline's record of each block's last stamp.
TIMELINE_BLOCKS = 1024


def _timeline(text: str, name: str) -> str:
    """Stamps at the kernel's entry, after its wait for the work ahead, after
    the frame and after every protocol or data step; the call printed is the
    one whose epoch is TIMELINE_CALL advances in, beside the last stamp of
    the same block in the call before it (kept in device memory: a second
    printing call would stall the one after it)."""
    step = re.search(r"advance\(k, (v\d+)\);", text).group(1)
    body = _body_start(text, name)
    kernel = text.rindex('extern "C"', 0, body)
    fields = " ".join(["%llu"] * STAMPS)
    values = ", ".join(f"(unsigned long long)probe_t[{i}]" for i in range(STAMPS))
    out = [text[:kernel] + f"__device__ unsigned long long probe_end[kWorld * {TIMELINE_BLOCKS}];\n\n"
           + text[kernel:body],
           f"  u64 probe_t[{STAMPS}] = {{}}; int probe_n = 0;\n"
           f"  auto stamp = [&] {{ if (threadIdx.x == 0 && probe_n < {STAMPS}) probe_t[probe_n++] = globaltimer(); }};\n"
           "  stamp();"]
    for line in text[body:].splitlines():
        stripped = line.strip()
        if stripped.startswith("advance(k,"):
            end = f"probe_end[k.rank() * {TIMELINE_BLOCKS} + blockIdx.x]"
            # One printf per block, so that blocks' lines do not interleave.
            out.append(f"  if (threadIdx.x == 0 && k.epoch == {TIMELINE_CALL}ull * {step})\n"
                       f'    printf("timeline %d %d %d %llu {fields}\\n", int(k.rank()), int(blockIdx.x), probe_n, '
                       f"{end}, {values});\n"
                       f"  if (threadIdx.x == 0) {end} = probe_t[probe_n - 1];")
        out.append(line)
        if stripped.startswith(("K k(", "follow_previous(")) or any(stripped.startswith(s) for s in STEPS):
            out.append("  stamp();")
    return "\n".join(out)


def _relaxed_grant(text: str, name: str) -> str:
    return text.replace("grant<true>", "grant<false>")


def _grant_first(text: str, name: str) -> str:
    m = re.search(r"\n\s*grant<(\w+)>\(k, (\d+), (v\d+), part\);", text)
    if m is None:
        return text
    text = text.replace(m.group(0), "")
    first = re.search(r"  if \(blockIdx.x < \d+\) \{[^\n]*\n", text)
    hoisted = f"    if (blockIdx.x == 0) grant<{m.group(1)}>(k, {m.group(2)}, {m.group(3)}, Part{{0, 1}});\n"
    return text[:first.end()] + hoisted + text[first.end():]


def _role_spans(text: str) -> list[tuple[int, int]]:
    """The top-level `if (blockIdx.x ...) { ... }` of each role, in order."""
    spans, at = [], 0
    while (start := text.find("  if (blockIdx.x", at)) >= 0:
        depth, i = 0, text.index("{", start)
        while True:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        at = text.index("\n", i) + 1
        spans.append((start, at))
    return spans


def _signal_roles_first(text: str, name: str) -> str:
    spans = _role_spans(text)
    roles = [text[a:b] for a, b in spans]
    single = [r for r in roles if r.split("\n", 1)[0].endswith(" blocks 1")]
    ordered = single + [r for r in roles if r not in single]
    return text[:spans[0][0]] + "".join(ordered) + text[spans[-1][1]:] if spans else text


def _prefetch_input(text: str, name: str) -> str:
    # The probe's inputs come from torch's caching allocator: lines past a small input stay mapped.
    hint = ('  if (threadIdx.x < 64) asm volatile("prefetch.global.L1 [%0];" :: "l"(p.input + 128 * threadIdx.x));\n')
    at = text.index("  K k(", _body_start(text, name))
    return text[:at] + hint + text[at:]


def _notify_every_block(text: str, name: str) -> str:
    text = re.sub(r"\bnotify<\d+, (\w+)(?:, true)?>", r"notify<1, \1>", text)
    # Counted waits become the plain waits that one store per block satisfies.
    return re.sub(r"\bwait_ready<(\w+), \d+>\((.*?), v\d+\);", r"wait_ready<\1>(\2);", text)


def _rank_tables(program, blocks_per_sm: int, shared: bool | None = None):
    """`program`'s kernel with every rank's tables compiled in, as the runtime uploads them;
    read from shared memory as the program says, or (`shared` False) from global memory."""
    from purlin.cuda.codegen import emit_cuda

    ranks = {r: [int(w) for w in t] for r, t in enumerate(program.tables.ranks)}
    return emit_cuda(program.kernel, program.shared_tables if shared is None else shared, blocks_per_sm, None, ranks)


# Variants that are the collective still, built from the program rather than by editing its text.
BUILT = {"rank tables": _rank_tables,
         "rank tables global": lambda program, bps: _rank_tables(program, bps, shared=False)}

VARIANTS = {
    "as generated": None,
    "global tables": _global_tables,
    "frame only": _frame_only,
    "launch only": _launch_only,
    "bare launch": lambda text, name: _global_tables(_launch_only(text, name), name),
    "no waits": _no_waits,
    "timeline": _timeline,
    "relaxed grant": _relaxed_grant,
    "grant first": _grant_first,
    "signal roles first": _signal_roles_first,
    "prefetch input": _prefetch_input,
    "notify every block": _notify_every_block,
    **{name: None for name in BUILT},
}


def _use_library(root: str) -> None:
    """Compile what follows against the device library under `root`."""
    from pathlib import Path

    from purlin.cuda import nvrtc

    nvrtc.INCLUDE_DIR = Path(root).resolve()
    nvrtc._library_digest.cache_clear()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worlds", default="2,4,8")
    ap.add_argument("--bytes", type=int, default=16)
    ap.add_argument("--collective", default="all_reduce")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    ap.add_argument("--library", action="append", default=[], help="another device library to measure")
    ap.add_argument("--blocks-per-sm", type=int, default=0,
                    help="resident blocks per SM to compile for (default: the fewest the ranks' grids need)")
    ap.add_argument("--lowering", default="", help="options of convert-coll-to-snac (e.g. 'blocks=32')")
    ap.add_argument("--stream-order", action="store_true",
                    help="also time each variant launched in stream order (programmatic=False)")
    args = ap.parse_args(argv)
    _measure(args)
    for library in args.library:
        _use_library(library)
        print(f"device library: {library}")
        _measure(args)
    return 0


def _measure(args: argparse.Namespace) -> None:

    import torch

    if not torch.cuda.is_available():
        print("latency_probe: no CUDA device")
        return
    from purlin import _runtime
    from purlin.compile import arch_of_device, compile_collective
    from purlin.coll.builder import CollectiveSpec
    from purlin.runtime import Communicator
    from purlin.tools.bench import _ranks_timer

    arch = arch_of_device(0)
    sms = _runtime.cuda_device_sms(0)
    print(f"{args.collective} {args.bytes} B bf16, every rank on GPU 0 ({torch.cuda.get_device_name(0)}), "
          "us per call, slowest rank's median of graph replays")
    print(f"{'world':>5} {'variant':>14} {'us':>7} {'threads':>7} {'grid':>4} {'tables':>6} {'launch':>12}")
    for world in map(int, args.worlds.split(",")):
        count = max(1, args.bytes // 2)
        spec = CollectiveSpec(args.collective, world, "bf16", "sum" if "reduce" in args.collective else None,
                              count)
        n_in, n_out = spec.buffer_sizes()
        ins = [torch.arange(n_in, device="cuda:0").remainder(7).to(torch.bfloat16) + r for r in range(world)]
        timer, streams = _ranks_timer([0] * world)
        for variant in args.variants.split(","):
            edit = VARIANTS[variant]
            compiled = compile_collective(args.collective, world, "bf16", spec.op, count, arch=arch, symmetric=True,
                                          ranks_per_device=world, sms=sms, lowering=args.lowering)
            program = compiled.cuda
            if args.blocks_per_sm:
                # The runtime asks the program too: both compile the kernel for this residency.
                program.blocks_per_sm = lambda ranks, sms, n=args.blocks_per_sm: n
            bps = program.blocks_per_sm(world, sms)
            src = program.source(bps)
            if variant in BUILT:
                src = program._sources[bps] = BUILT[variant](program, bps)
            elif edit is not None:
                text = edit(src.text, src.name)
                shared = src.shared_tables and "kSharedTables = true" in text
                program._sources[bps] = dataclasses.replace(src, text=text, shared_tables=shared)
            for in_order in (False, True) if args.stream_order else (False,):
                label = f"{variant}{' in order' if in_order else ''}"
                # The variant's own source, never the tables compiled in by default.
                comm = Communicator(compiled.plan, backend="cuda", devices=[0] * world, name=f"probe {label}",
                                    kernel=program, specialise=False, programmatic=False if in_order else None)
                outs = [torch.zeros(n_out, dtype=torch.bfloat16, device="cuda:0") for _ in range(world)]
                # The ranks' streams do not wait for the current one, which made the buffers.
                torch.cuda.synchronize()
                if edit is None:  # a collective still: checked first
                    comm.run(ins, outs, streams)
                    comm.synchronize()
                    got = [o.float().cpu().numpy() for o in outs]
                    want = _reference(args.collective, [i.float().cpu().numpy() for i in ins], n_out)
                    if not all(np.array_equal(g, w) for g, w in zip(got, want)):
                        print(f"{world:>5} {label:>14}  wrong result")
                        continue
                us, note = timer(lambda: comm.run(ins, outs, streams))
                print(f"{world:>5} {label:>14} {us:7.2f} {src.threads:>7} {src.grid:>4} "
                      f"{program.tables.words:>6} {'programmatic' if comm.programmatic else 'in order':>12} {note}",
                      flush=True)
                del comm


def _reference(collective: str, ins: list, n_out: int) -> list:
    world = len(ins)
    if collective == "all_reduce":
        return [sum(ins)] * world
    if collective == "all_gather":
        return [np.concatenate(ins)] * world
    if collective == "reduce_scatter":
        total = sum(ins)
        return [total[r * n_out:(r + 1) * n_out] for r in range(world)]
    if collective == "all_to_all":
        n = n_out // world
        return [np.concatenate([ins[s][r * n:(r + 1) * n] for s in range(world)]) for r in range(world)]
    raise SystemExit(f"latency_probe: no reference for {collective}")


if __name__ == "__main__":
    sys.exit(main())
