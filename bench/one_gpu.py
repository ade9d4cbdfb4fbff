"""Compiled collectives against their floors, every rank on one GPU.

    nvcc -O3 -arch=sm_90 ../shared/reference/one_gpu_floor.cu -o floor
    python bench/one_gpu.py --floor ./floor --least-traffic .ref/least_traffic.py \\
        --out bench/results/1xh200-compiled

One run, all ranks on GPU 0: the floor program (an ideal fused LL all_reduce,
one block chain per rank, CUDA-graph replays), this GPU's copy rate
(`copy_rate()` of the least_traffic.py given), then purlin-bench's
single-process mode (`--devices 0,...,0`, results checked before timing,
default lowering only, V forms at even counts) for worlds 2 to 8:

latency: all_reduce, all_gather, reduce_scatter and all_to_all at 16 B, 1 KiB
and 64 KiB against the floor program's all_reduce of the size asked (a size
a collective cannot take exactly at a world runs rounded down, against the
same floor); goal <= 1.25x at every world 2 to 8.

throughput: those four and all_gather_v, reduce_scatter_v and all_to_all_v at
1 MiB, 16 MiB and 256 MiB against the least-traffic floor: the floor
program's 16 B all_reduce at that world (what any call costs) plus the time
the call's least traffic takes at the copy rate (`floor_us`; a V form moves
its fixed form's traffic). Goal <= 2x at 1 MiB, <= 1.15x at 16 and 256 MiB.

`--lowering NAME=OPTIONS` (repeatable) also times the throughput section in
that lowering (purlin-bench's purlin-NAME rows, e.g. ce='copy-engine=true'),
reported in a table of its own against the same floor and against the
default; a variant is no goal and no part of the collapse check.

`--specialise` also times the latency section with each rank's tables
compiled into its kernel (Communicator.specialise, what purlin.torch runs
for a call made often) and with them loaded at run time (the generic
kernel), each in a table of its own judged by the latency goal and against
the default kernel; up to the cost model's specialise_max_world ranks the
default Communicator is the specialised one.

Throughput goals are stated for worlds 2, 4 and 8; rows of other worlds give
their ratio only. No collapse: per world and collective, over every size measured (both
sections), each size runs with the default lowering and the time per byte
never rises by more than 1.5x from one size to the next larger one.

Writes to --out (no subdirectories: the device returns eight files at most)
floor.txt (the floor program's output), bench.json (every purlin-bench
document of the run), summary.txt (the tables and the collapse report, also
printed at the end) and summary.json (every row, the copy rate, the goals,
met or missed); after each world, so a run cut short keeps the worlds done.

`--rejudge DIR` runs nothing: it judges again the bench.json and floor.txt
that an earlier run left in DIR (its copy rate, and the sizes, collectives and
lowerings each of its sections asked) with the goals of this file, and writes
summary.txt and summary.json to --out (DIR if not given).

The default run is 7 worlds x 33 cases. Estimated, not yet measured: about
4 minutes on one H200, most of it NVRTC compiling each new kernel (about 1 s
each, cached in ~/.cache/purlin/kernels), the timed calls at 256 MiB a few
seconds; worlds 2,4,8 about 2 minutes. A call that hangs costs its
Communicator's 10 s timeout. --worlds, --sizes, --throughput-sizes and
--collectives run a subset.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from purlin.tools import bench

LATENCY_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
FIXED_FORM = {"all_gather_v": "all_gather", "reduce_scatter_v": "reduce_scatter", "all_to_all_v": "all_to_all"}
THROUGHPUT_COLLECTIVES = (*LATENCY_COLLECTIVES, *FIXED_FORM)
WORLDS = (2, 3, 4, 5, 6, 7, 8)
GOAL_WORLDS = (2, 4, 8)  # throughput's
LATENCY_GOAL_WORLDS = tuple(range(2, 9))
LATENCY_SIZES = (16, 1024, 65536)
LATENCY_GOAL = 1.25
THROUGHPUT_GOALS = {1 << 20: 2.0, 16 << 20: 1.15, 256 << 20: 1.15}
THROUGHPUT_SIZES = tuple(THROUGHPUT_GOALS)
CALL_COST_BYTES = 16  # the floor program's all_reduce of this size: what any call costs
COLLAPSE_RISE = 1.5
FLOOR_LINE = re.compile(r"ideal LL all_reduce, (\d+) ranks on one GPU, +(\d+) B .*: ([\d.]+) us per call(.*)")


class UsageError(Exception):
    """A bad command line: one line to the user, exit status 2."""


@dataclass(frozen=True)
class Measured:
    """purlin's default lowering at one world, collective and size: microseconds
    per call, or None and why it failed."""

    world: int
    collective: str
    bytes: int
    us: float | None
    failure: str = ""
    asked: int = 0  # the size asked of purlin-bench (0: `bytes`), which rounds some down


# -- measuring ---------------------------------------------------------------


def parse_floor(text: str) -> dict[tuple[int, int], float]:
    """(world, bytes) -> microseconds per call of the floor program's all_reduce."""
    floor = {}
    for line in text.splitlines():
        m = FLOOR_LINE.search(line)
        if m:
            if "WRONG" in m.group(4):
                raise SystemExit(f"one_gpu: the floor program computed a wrong result: {line}")
            floor[(int(m.group(1)), int(m.group(2)))] = float(m.group(3))
    return floor


def run_floor(binary: str, worlds: list[int], out: str) -> dict[tuple[int, int], float]:
    try:
        # A bare name is the file here, as --floor's check took it, not one on PATH.
        done = subprocess.run([os.path.abspath(binary), *map(str, worlds)], capture_output=True, text=True)
    except OSError as e:
        raise SystemExit(f"one_gpu: cannot run the floor program {binary}: {e}") from None
    with open(os.path.join(out, "floor.txt"), "w") as f:
        f.write(done.stdout)
    if done.returncode:
        last = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
        raise SystemExit(f"one_gpu: the floor program failed (exit status {done.returncode}): {last[0]}")
    return parse_floor(done.stdout)


def load_least_traffic(path: str):
    """The least_traffic.py module at `path` (it needs copy_rate and floor_us)."""
    try:
        loader = importlib.machinery.SourceFileLoader("least_traffic", path)
        module = importlib.util.module_from_spec(importlib.util.spec_from_loader("least_traffic", loader))
        loader.exec_module(module)
    except (OSError, SyntaxError, ImportError) as e:
        raise UsageError(f"--least-traffic {path}: cannot load it ({type(e).__name__}: {e})") from None
    missing = [name for name in ("copy_rate", "floor_us") if not callable(getattr(module, name, None))]
    if missing:
        raise UsageError(f"--least-traffic {path} defines no {' or '.join(missing)}")
    return module


def run_bench(world: int, collectives: list[str], sizes: list[int],
              lowerings: tuple[tuple[str, str], ...] = (), specialise: bool = False) -> tuple[dict, str]:
    """purlin-bench's document for `world` ranks on GPU 0 (with purlin-NAME
    rows for each of `lowerings`, and purlin-specialised rows with
    `specialise`), and "" or why the run broke off."""
    with tempfile.TemporaryDirectory() as out:
        argv = ["--single-process", "--backend", "cuda", "--devices", ",".join(["0"] * world),
                "--sizes", ",".join(map(str, sizes)), "--max-bytes", str(max(sizes)),
                "--collectives", ",".join(collectives), "--no-sweep", "--even-counts", "--out", out]
        for name, options in lowerings:
            argv += ["--lowering", f"{name}={options}"]
        if specialise:
            argv.append("--specialise")
        refused, broke = False, ""
        try:
            refused = bench.main(argv) == 2
        except Exception as e:  # a crash loses this world's missing rows, not the run
            broke = f"purlin-bench stopped: {type(e).__name__}: {e}"
            print(f"one_gpu: world {world}: {broke}", file=sys.stderr, flush=True)
        if refused:
            raise UsageError("purlin-bench refused to run (its message is above)")
        path = os.path.join(out, "bench.json")
        if not os.path.exists(path):
            return {"world": world, "rows": [], "failures": []}, broke or "purlin-bench wrote no bench.json"
        with open(path) as f:
            return json.load(f), broke


def measured(doc: dict, world: int, collectives: list[str], sizes: list[int], broke: str = "",
             impl: str = "purlin") -> list[Measured]:
    """purlin's default row (or `impl`'s) of each collective and size asked of
    purlin-bench, at the size it ran (a size some collectives cannot take
    exactly at this world runs rounded down: purlin-bench's size_run, V forms
    at even counts); one it did not write failed for `broke`."""
    rows = {(r["collective"], r["bytes"]): r for r in doc["rows"] if r["impl"] == impl}
    out = []
    for coll in collectives:
        runs = {bench.size_run(coll, n, world, even=True): n for n in reversed(sizes)}
        for nbytes, asked in sorted(runs.items(), key=lambda kv: sizes.index(kv[1])):
            asked = 0 if asked == nbytes else asked
            r = rows.get((coll, nbytes))
            if r is None:
                out.append(Measured(world, coll, nbytes, None, broke or "not measured", asked))
            elif r["us"] is None:
                prefix = f"{coll} {impl} {bench.human(nbytes)}: "
                why = next((f.removeprefix(prefix) for f in doc["failures"] if f.startswith(prefix)), r["note"])
                out.append(Measured(world, coll, nbytes, None, why or "no time", asked))
            else:
                out.append(Measured(world, coll, nbytes, r["us"], asked=asked))
    return out


# -- judging -----------------------------------------------------------------


def verdict(m: Measured, ratio: float | None, goal: float | None, worlds: tuple[int, ...] = GOAL_WORLDS) -> str:
    if m.us is None:
        return f"failed: {m.failure}"
    if ratio is None:
        return "(no floor at this size)"
    if m.world not in worlds:
        return "(not a goal world)"
    if goal is None:
        return "(no goal at this size)"
    return "met" if ratio <= goal else "missed"


def _row(m: Measured, floor_us: float | None, goal: float | None, worlds: tuple[int, ...] = GOAL_WORLDS,
         **extra) -> dict:
    ratio = m.us / floor_us if m.us is not None and floor_us else None
    return {"world": m.world, "collective": m.collective, "bytes": m.bytes, "us": m.us, **extra,
            "floor_us": floor_us, "ratio": ratio, "goal": goal, "verdict": verdict(m, ratio, goal, worlds)}


def latency_rows(runs: list[Measured], floor: dict[tuple[int, int], float]) -> list[dict]:
    """Each call against the floor program's all_reduce of its world and the
    size asked (a rounded-down call moves less than that floor)."""
    return [_row(m, floor.get((m.world, m.asked or m.bytes)), LATENCY_GOAL, LATENCY_GOAL_WORLDS) for m in runs]


def throughput_rows(runs: list[Measured], floor: dict[tuple[int, int], float],
                    least_traffic_us: Callable[[str, int, int], float]) -> list[dict]:
    """Each call against the least-traffic floor: the floor program's
    CALL_COST_BYTES all_reduce of its world plus `least_traffic_us(collective,
    world, bytes)` of the collective's fixed form."""
    rows = []
    for m in runs:
        traffic = least_traffic_us(FIXED_FORM.get(m.collective, m.collective), m.world, m.bytes)
        call = floor.get((m.world, CALL_COST_BYTES))
        rows.append(_row(m, None if call is None else call + traffic, THROUGHPUT_GOALS.get(m.bytes),
                         least_traffic_us=traffic))
    return rows


def variant_rows(rows: list[dict], default: list[Measured]) -> list[dict]:
    """A variant's rows (judged as its section's), with its time against the default's of the same call."""
    base = {(m.world, m.collective, m.bytes): m.us for m in default}
    for r in rows:
        us = base.get((r["world"], r["collective"], r["bytes"]))
        r["default_us"] = us
        r["vs_default"] = r["us"] / us if r["us"] is not None and us else None
    return rows


def collapses(runs: list[Measured]) -> dict[int, list[str]]:
    """Per world, what breaks "no collapse": a size of a collective that failed,
    or the time per byte rising more than COLLAPSE_RISE times from one size
    that ran to the next."""
    series: dict[tuple[int, str], dict[int, Measured]] = {}
    for m in runs:  # a size measured twice counts once, its last measurement
        series.setdefault((m.world, m.collective), {})[m.bytes] = m
    found: dict[int, list[str]] = {w: [] for w, _ in sorted(series)}
    for (world, coll), by_size in sorted(series.items(), key=lambda kv: kv[0][0]):
        ran = []
        for nbytes in sorted(by_size):
            m = by_size[nbytes]
            if m.us is None:
                found[world].append(f"world {world} {coll} {bench.human(nbytes)}: failed: {m.failure}")
            else:
                ran.append(m)
        for a, b in zip(ran, ran[1:]):
            rise = (b.us / b.bytes) / (a.us / a.bytes)
            if rise > COLLAPSE_RISE:
                found[world].append(f"world {world} {coll}: time per byte rises {rise:.2f}x from "
                                    f"{bench.human(a.bytes)} ({a.us:.2f} us) to {bench.human(b.bytes)} ({b.us:.2f} us)")
    return found


# -- reporting ---------------------------------------------------------------


def _num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _goal_worlds(worlds: tuple[int, ...] = GOAL_WORLDS) -> str:
    return ", ".join(map(str, worlds))


def _throughput_goals() -> str:
    by_goal: dict[float, list[str]] = {}
    for nbytes, goal in THROUGHPUT_GOALS.items():
        by_goal.setdefault(goal, []).append(bench.human(nbytes))
    return "; ".join(f"<= {goal:g}x at {', '.join(sizes)}" for goal, sizes in by_goal.items())


def _tally(rows: list[dict]) -> str:
    verdicts = [r["verdict"] for r in rows]
    failed = sum(v.startswith("failed") for v in verdicts)
    return f"{verdicts.count('met')} met, {verdicts.count('missed')} missed, {failed} failed"


def format_latency(rows: list[dict]) -> str:
    lines = [f"latency: purlin / the floor program's all_reduce of the size asked; goal <= {LATENCY_GOAL:g}x "
             f"(worlds {_goal_worlds(LATENCY_GOAL_WORLDS)})",
             f"{'world':>5} {'collective':>16} {'size':>8} {'purlin us':>10} {'floor us':>9} {'ratio':>6}  goal"]
    for r in rows:
        lines.append(f"{r['world']:>5} {r['collective']:>16} {bench.human(r['bytes']):>8} {_num(r['us']):>10} "
                     f"{_num(r['floor_us']):>9} {_num(r['ratio']):>6}  {r['verdict']}")
    lines.append(f"latency: {_tally(rows)}")
    return "\n".join(lines)


def format_throughput(rows: list[dict], rate: float) -> str:
    lines = [f"throughput: purlin / (the floor program's {CALL_COST_BYTES} B all_reduce + least traffic at "
             f"{rate / 1e9:.0f} GB/s read + written); goal {_throughput_goals()} (worlds {_goal_worlds()})",
             f"{'world':>5} {'collective':>16} {'size':>8} {'purlin us':>10} {'least-traffic us':>16} "
             f"{'floor us':>9} {'ratio':>6}  goal"]
    for r in rows:
        lines.append(f"{r['world']:>5} {r['collective']:>16} {bench.human(r['bytes']):>8} {_num(r['us']):>10} "
                     f"{_num(r['least_traffic_us']):>16} {_num(r['floor_us']):>9} {_num(r['ratio']):>6}  "
                     f"{r['verdict']}")
    lines.append(f"throughput: {_tally(rows)}")
    return "\n".join(lines)


def format_variant(name: str, rows: list[dict]) -> str:
    # The specialised and generic kernels are latency kernels a Communicator may run: judged by its goal.
    judged = name in (bench.SPECIALISED, bench.GENERIC)
    what = "compiled into the kernel" if name == bench.SPECIALISED else "loaded at run time"
    title = (f"{name}: purlin-{name} (the ranks' tables {what}) / the same floor, and / the "
             f"default kernel; goal <= {LATENCY_GOAL:g}x" if judged else
             f"lowering {name}: purlin-{name} / the same floor, and / the default lowering (no goal)")
    lines = [title,
             f"{'world':>5} {'collective':>16} {'size':>8} {f'{name} us':>10} {'default us':>10} {'floor us':>9} "
             f"{'ratio':>6} {'/ default':>9}"]
    for r in rows:
        note = f"  {r['verdict']}" if r["us"] is None or judged else ""
        lines.append(f"{r['world']:>5} {r['collective']:>16} {bench.human(r['bytes']):>8} {_num(r['us']):>10} "
                     f"{_num(r['default_us']):>10} {_num(r['floor_us']):>9} {_num(r['ratio']):>6} "
                     f"{_num(r['vs_default']):>9}{note}")
    if judged:
        lines.append(f"{name}: {_tally(rows)}")
    return "\n".join(lines)


def format_collapses(found: dict[int, list[str]]) -> str:
    lines = [f"no collapse: every size runs with the default lowering, time per byte rises <= {COLLAPSE_RISE:g}x "
             "from one size to the next"]
    for lines_of_world in found.values():
        lines += [f"  {v}" for v in lines_of_world]
    lines += [f"world {w}: {'missed' if v else 'met'}" for w, v in found.items()]
    return "\n".join(lines)


def summarize(latency: list[Measured], throughput: list[Measured], floor: dict[tuple[int, int], float],
              rate: float, least_traffic_us: Callable[[str, int, int], float],
              variants: dict[str, list[Measured]] | None = None) -> tuple[str, dict]:
    """summary.txt and summary.json of what was measured."""
    lat, thr = latency_rows(latency, floor), throughput_rows(throughput, floor, least_traffic_us)
    found = collapses(latency + throughput)
    var = {name: variant_rows(latency_rows(runs, floor), latency) if name in (bench.SPECIALISED, bench.GENERIC) else
           variant_rows(throughput_rows(runs, floor, least_traffic_us), throughput)
           for name, runs in (variants or {}).items()}
    text = "\n\n".join([format_latency(lat), format_throughput(thr, rate),
                         *(format_variant(name, rows) for name, rows in var.items()), format_collapses(found)])
    doc = {"copy_rate": rate,
           "goals": {"worlds": list(GOAL_WORLDS), "latency_worlds": list(LATENCY_GOAL_WORLDS), "latency": LATENCY_GOAL,
                     "throughput": {str(n): g for n, g in THROUGHPUT_GOALS.items()}, "collapse_rise": COLLAPSE_RISE},
           "latency": lat, "throughput": thr, "variants": var,
           "collapse": {str(w): {"verdict": "missed" if v else "met", "violations": v} for w, v in found.items()}}
    return text, doc


# -- command line ------------------------------------------------------------


def _numbers(text: str, what: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",")] if text else []
    except ValueError:
        raise UsageError(f"{what} takes comma-separated whole numbers, got {text!r}") from None
    if any(v < 1 for v in values):
        raise UsageError(f"{what} takes positive numbers, got {text!r}")
    return values


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--floor", help="the built one_gpu_floor.cu program (not with --rejudge)")
    ap.add_argument("--least-traffic", required=True, metavar="PATH", help="least_traffic.py (copy_rate, floor_us)")
    ap.add_argument("--out", help="where the files go (with --rejudge: DIR unless given)")
    ap.add_argument("--rejudge", metavar="DIR", help="judge the bench.json and floor.txt of an earlier run again")
    ap.add_argument("--worlds", default=",".join(map(str, WORLDS)))
    ap.add_argument("--sizes", default=",".join(map(str, LATENCY_SIZES)),
                    help="latency sizes in bytes, comma-separated ('' for none)")
    ap.add_argument("--throughput-sizes", default=",".join(map(str, THROUGHPUT_SIZES)),
                    help="throughput sizes in bytes, comma-separated ('' for none)")
    ap.add_argument("--collectives", default=",".join(THROUGHPUT_COLLECTIVES),
                    help="comma-separated subset; the latency section runs the fixed forms among them")
    ap.add_argument("--specialise", action="store_true",
                    help="also time the latency section with the ranks' tables compiled into the kernel and "
                         f"loaded at run time (purlin-bench --specialise: purlin-{bench.SPECIALISED} and "
                         f"purlin-{bench.GENERIC} rows, tables of their own)")
    ap.add_argument("--lowering", action="append", default=[], metavar="NAME=OPTIONS",
                    help="also time the throughput section lowered with these convert-coll-to-snac options "
                         "(repeatable; e.g. ce='copy-engine=true')")
    args = ap.parse_args(argv)
    lowerings = []
    for spec in args.lowering:
        name, sep, options = spec.partition("=")
        if (not sep or not name or not options or any(c.isspace() for c in name) or name in dict(lowerings)
                or name in (bench.SPECIALISED, bench.GENERIC)):
            raise UsageError(f"--lowering takes NAME=OPTIONS with a new name (not {bench.SPECIALISED!r} or "
                             f"{bench.GENERIC!r}) and no "
                             f"spaces in it, got {spec!r}")
        lowerings.append((name, options))
    args.lowering = tuple(lowerings)
    args.worlds = _numbers(args.worlds, "--worlds")
    args.sizes = _numbers(args.sizes, "--sizes")
    args.throughput_sizes = _numbers(args.throughput_sizes, "--throughput-sizes")
    if not args.worlds or min(args.worlds) < 2:
        raise UsageError(f"--worlds needs worlds of at least 2 ranks, got {args.worlds}")
    args.collectives = args.collectives.split(",")
    unknown = [c for c in args.collectives if c not in THROUGHPUT_COLLECTIVES]
    if unknown:
        raise UsageError(f"unknown collective {', '.join(unknown)}; expected some of "
                         f"{', '.join(THROUGHPUT_COLLECTIVES)}")
    if args.rejudge:
        if args.floor:
            raise UsageError("--rejudge runs nothing: it takes no --floor")
        missing = [n for n in ("bench.json", "floor.txt") if not os.path.isfile(os.path.join(args.rejudge, n))]
        if missing:
            raise UsageError(f"--rejudge {args.rejudge} holds no {' or '.join(missing)} of an earlier run")
        args.out = args.out or args.rejudge
        return args
    if args.floor is None or args.out is None:
        raise UsageError("a run needs --floor and --out")
    if not os.access(args.floor, os.X_OK) or os.path.isdir(args.floor):
        raise UsageError(f"--floor {args.floor} is not an executable program")
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        least_traffic = load_least_traffic(args.least_traffic)
    except UsageError as e:
        print(f"one_gpu: {e}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    if args.rejudge:
        return rejudge(args, least_traffic)
    floor = run_floor(args.floor, args.worlds, args.out)
    try:
        rate = least_traffic.copy_rate()
    except Exception as e:  # no GPU, or torch without CUDA
        print(f"one_gpu: measuring the copy rate failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(f"# copy rate (read + written): {rate / 1e9:.0f} GB/s", flush=True)

    def least_traffic_us(coll: str, world: int, nbytes: int) -> float:
        return least_traffic.floor_us(coll, world, nbytes, rate)

    sections = (("latency", [c for c in args.collectives if c in LATENCY_COLLECTIVES], args.sizes),
                ("throughput", args.collectives, args.throughput_sizes))
    runs: dict[str, list[Measured]] = {"latency": [], "throughput": []}
    variants: dict[str, list[Measured]] = {name: [] for name, _ in args.lowering}
    if args.specialise:
        variants[bench.SPECIALISED] = []
        variants[bench.GENERIC] = []
    docs = []
    for world in args.worlds:
        for section, collectives, sizes in sections:
            if not collectives or not sizes:
                continue
            lowerings = args.lowering if section == "throughput" else ()
            specialise = args.specialise and section == "latency"
            try:
                doc, broke = run_bench(world, collectives, sizes, lowerings, specialise)
            except UsageError as e:
                print(f"one_gpu: {e}", file=sys.stderr)
                return 2
            names = [name for name, _ in lowerings] + ([bench.SPECIALISED, bench.GENERIC] if specialise else [])
            docs.append({"section": section, "asked": {"collectives": collectives, "sizes": sizes,
                                                       "lowerings": names},
                         **doc, **({"broke": broke} if broke else {})})
            judge(docs[-1], runs, variants)
        text, summary = summarize(runs["latency"], runs["throughput"], floor, rate, least_traffic_us, variants)
        write(args.out, text, summary, {"copy_rate": rate, "runs": docs})
    print(text)
    failed = any(m.us is None for section in runs.values() for m in section)
    return 1 if failed else 0


def judge(doc: dict, runs: dict[str, list[Measured]], variants: dict[str, list[Measured]]) -> None:
    """Adds the measurements of one section's purlin-bench document (as
    main keeps it: with what it asked) to `runs` and `variants`."""
    asked, world, broke = doc["asked"], doc["world"], doc.get("broke", "")
    runs[doc["section"]] += measured(doc, world, asked["collectives"], asked["sizes"], broke)
    for name in asked["lowerings"]:
        variants.setdefault(name, [])
        variants[name] += measured(doc, world, asked["collectives"], asked["sizes"], broke, f"purlin-{name}")


def write(out: str, text: str, summary: dict, bench_doc: dict | None = None) -> None:
    files = [("summary.json", json.dumps(summary, indent=1)), ("summary.txt", text + "\n")]
    if bench_doc is not None:
        files.insert(0, ("bench.json", json.dumps(bench_doc, indent=1)))
    for name, content in files:
        with open(os.path.join(out, name), "w") as f:
            f.write(content)


def rejudge(args: argparse.Namespace, least_traffic) -> int:
    """summary.txt and summary.json of an earlier run's bench.json and
    floor.txt. A run written before bench.json kept its copy rate and what
    each section asked takes them from its summary.json and from --sizes,
    --throughput-sizes and --collectives (the defaults unless given)."""
    with open(os.path.join(args.rejudge, "bench.json")) as f:
        bench_doc = json.load(f)
    with open(os.path.join(args.rejudge, "floor.txt")) as f:
        floor = parse_floor(f.read())
    rate = bench_doc.get("copy_rate")
    if rate is None:
        try:
            with open(os.path.join(args.rejudge, "summary.json")) as f:
                rate = json.load(f)["copy_rate"]
        except (OSError, KeyError, ValueError):
            print(f"one_gpu: {args.rejudge}: its bench.json has no copy rate and no summary.json gives one",
                  file=sys.stderr)
            return 2
    runs: dict[str, list[Measured]] = {"latency": [], "throughput": []}
    variants: dict[str, list[Measured]] = {}
    for doc in bench_doc["runs"]:
        if "asked" not in doc:
            section = doc["section"]
            doc = {**doc, "asked": {
                "collectives": [c for c in args.collectives if section == "throughput" or c in LATENCY_COLLECTIVES],
                "sizes": args.sizes if section == "latency" else args.throughput_sizes,
                "lowerings": sorted({r["impl"].removeprefix("purlin-") for r in doc["rows"]
                                     if r["impl"].startswith("purlin-")})}}
        judge(doc, runs, variants)
    text, summary = summarize(runs["latency"], runs["throughput"], floor, rate,
                              lambda coll, world, nbytes: least_traffic.floor_us(coll, world, nbytes, rate), variants)
    write(args.out, text, summary)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
