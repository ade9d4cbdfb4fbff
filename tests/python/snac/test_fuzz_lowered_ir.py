"""A fuzzer over the IR below `coll`: lowered snac and atom programs of several
collectives and lowerings, mutated (sizes, slots, blocks, chunks and worlds,
layout kinds, signal and buffer references, whole ops deleted), then verified,
snac-verified, lowered and written as plans and CUDA. Every mutant must end in
a diagnostic or a result: no traceback, no run over 20 s, none over 2 GiB
(the runs share one child process, with that address-space limit)."""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

SEED = 27
MUTANTS = 300
TARGETS = (None, "plan-json", "cuda")

SOURCES = {
    "all_gather": ("memref<64xf32>", "memref<192xf32>", "coll.all_gather %in, %out world 3"),
    "all_reduce": ("memref<96xbf16>", "memref<96xbf16>", "coll.all_reduce sum %in, %out world 3"),
    "all_to_all_v": ("memref<7xf32>", "memref<9xf32>", "coll.all_to_all_v %in, %out world 2 counts [1, 6, 0, 3]"),
    "reduce_scatter": ("memref<48xf16>", "memref<16xf16>", "coll.reduce_scatter max %in, %out world 3"),
}
LOWERINGS = ("regime=latency", "regime=throughput chunk-bytes=16 slots=2",
             "regime=throughput strategy=composed chunk-bytes=16 slots=2", "regime=throughput symmetric=true",
             "regime=throughput symmetric=true chunk-bytes=16", "symmetric=true copy-engine=true")
NUMBER = re.compile(r"(world |slots |elems |blocks |first |chunk |halves |threads |smem |width |, |\[|\(|\[\[)(-?\d+)")
VALUES = (0, 1, 2, 3, 7, -1, 1 << 31, 1 << 40, 999999999999)
KINDS = ("packed", "scattered", "addressed", "transposed")
# References to a phase's buffer and signals (not their declarations).
SYMBOLS = re.compile(r"(?:via|ready|free) @(\w+)_(ready|free|buf)\b")


def lowered_programs() -> list[str]:
    """The starting programs: snac and atom IR of every source in every lowering it takes."""
    from purlin.compile.pipeline import lower, parse_module

    out = []
    for name, (inp, outp, op) in SOURCES.items():
        text = f"func.func @f(%in: {inp}, %out: {outp}) {{\n  {op} : {inp}, {outp}\n  func.return\n}}\n"
        for lowering in LOWERINGS:
            if ("composed" in lowering and name != "all_reduce"
                    or "copy-engine" in lowering and name not in ("all_gather", "all_to_all_v")):
                continue
            for atom in ("", ",convert-snac-to-atom"):
                module = lower(parse_module(text), f"coll-expand,convert-coll-to-snac{{{lowering}}}{atom}")
                out.append(str(module))
    return out


def mutate(text: str, rng: random.Random) -> str:
    """One to three mutations of `text`."""
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        if kind < 0.55:
            m = rng.choice(list(NUMBER.finditer(text)))
            old = int(m.group(2))
            new = rng.choice((*VALUES, old + 1, old - 1, old * 1000))
            text = text[:m.start(2)] + str(new) + text[m.end(2):]
        elif kind < 0.7:
            found = [m for k in KINDS for m in re.finditer(rf"<{k}(_v)?,", text)]
            if found:
                m = rng.choice(found)
                text = text[:m.start()] + f"<{rng.choice(KINDS)}{m.group(1) or ''}," + text[m.end():]
        elif kind < 0.85:
            found = list(SYMBOLS.finditer(text))
            if found:
                m = rng.choice(found)
                text = text[:m.start(2)] + rng.choice(("ready", "free", "buf")) + text[m.end(2):]
        else:
            lines = text.splitlines()
            ops = [i for i, ln in enumerate(lines) if re.match(r"\s*(%\S+ = )?(snac|atom)\.\w+ @", ln)]
            if ops:
                del lines[rng.choice(ops)]
            text = "\n".join(lines) + "\n"
    return text


def run_opt(path: str, target: str | None) -> tuple[int, str]:
    from purlin.tools.opt import main

    args = [path, "-p", "snac-verify" + ("" if "atom.kernel" in open(path).read() else ",convert-snac-to-atom")]
    if target:
        args += ["-t", target, "-o", path + ".out"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue() + err.getvalue()


def origin(said: str) -> str:
    """Who refused a mutant: the op a diagnostic names, snac-verify, or the parser."""
    if m := re.search(r"error: '([\w.]+)': (snac-verify)?", said):
        return m.group(2) or m.group(1)
    return "other"


# The documented form: FILE:LINE:COL: error: 'op': ... (a parse error names no op), or error: ...
DIAGNOSTIC = re.compile(r"(\S+:\d+:\d+: error: ('[\w.]+': )?|error: )\S")


def fuzz(directory: str, seed: int, count: int) -> tuple[list[str], dict[str, int]]:
    """Problems of `count` mutants, each a line naming the mutant's file, and
    how many runs ended how (a result, or refused by whom)."""
    import signal

    class Slow(Exception):
        pass

    def too_slow(*_) -> None:
        raise Slow

    signal.signal(signal.SIGALRM, too_slow)
    rng = random.Random(seed)
    programs = lowered_programs()
    problems: list[str] = []
    outcomes: dict[str, int] = {}
    for k in range(count):
        path = f"{directory}/mutant{k}.mlir"
        with open(path, "w") as f:
            f.write(mutate(rng.choice(programs), rng))
        for target in TARGETS:
            signal.alarm(20)
            try:
                code, said = run_opt(path, target)
                if "Traceback" in said or code not in (0, 1):
                    problems.append(f"{path} -t {target}: exit {code}: {said.strip()[-300:]}")
                elif code == 1 and not DIAGNOSTIC.match(said.strip()):
                    problems.append(f"{path} -t {target}: not a diagnostic line: {said.strip()[:300]}")
                key = "result" if code == 0 else origin(said)
                outcomes[key] = outcomes.get(key, 0) + 1
            except Slow:
                problems.append(f"{path} -t {target}: over 20 s")
            except BaseException as e:  # the driver must turn every failure into a diagnostic
                problems.append(f"{path} -t {target}: {type(e).__name__}: {str(e)[:300]}")
            finally:
                signal.alarm(0)
    return problems, outcomes


def test_mutants_of_lowered_programs_end_in_diagnostics(tmp_path):
    script = textwrap.dedent(f"""
        import json, resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_fuzz_lowered_ir import fuzz
        print(json.dumps(fuzz({str(tmp_path)!r}, {SEED}, {MUTANTS})))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    problems, outcomes = json.loads(done.stdout.splitlines()[-1])
    assert not problems, "\n".join(problems)
    # Mutants that all die at one check would prove nothing: some run through, others are
    # refused at several places.
    assert outcomes.get("result", 0) >= 10, outcomes
    assert len([k for k in outcomes if k != "result"]) >= 5, outcomes
