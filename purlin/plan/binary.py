"""The binary form: the flat little-endian int64 array the runtimes read
(csrc/host/plan.cpp decodes the same layout).

Layout (int64 words): a 16-word header (magic, version, world, arch, dtype,
input_elems, output_elems, advance, threads, n_roles, n_buffers, n_signals,
flags (FLAG_SYMMETRIC), 3 reserved); n_roles x (kind, blocks); n_buffers x (kind, slots, elems);
n_signals x (slots); a directory of world x n_roles x (first instruction,
count); n_instrs, n_refs; the instructions (16 words each: op mech elems sig
peer slot base rel order scope redop buf offset dst_ref src_first src_count,
refs as indices into the ref table); the refs (5 words each: space rank buf
slot offset).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Self

import numpy as np

from purlin.coll.layouts import MAX_WORLD
import purlin.plan.model as m
from purlin.plan.validate import check_plan

# Header words after magic and version, by name.
_WORLD, _ARCH, _DTYPE, _INPUT, _OUTPUT, _ADVANCE, _THREADS, _ROLES, _BUFFERS, _SIGNALS, _FLAGS = range(2, 13)
# Instruction words that hold the refs.
_DST, _SRC_FIRST, _SRC_COUNT = 13, 14, 15


class BinaryForm:
    """`Plan.encode` and `Plan.decode` (the reader the runtimes' decoder mirrors)."""

    def encode(self) -> np.ndarray:
        """The flat int64 form the runtimes read (see `decode` for the layout)."""
        words = [
            m.MAGIC, self.version, self.world, m.ARCHS[self.arch], m.DTYPES[self.dtype][0],
            self.input_elems, self.output_elems, self.advance, self.threads,
            len(self.roles), len(self.buffers), len(self.signals), m.FLAG_SYMMETRIC if self.symmetric else 0,
            0, 0, 0,
        ]
        for r in self.roles:
            words += [int(r.kind), r.blocks]
        for b in self.buffers:
            words += [int(b.kind), b.slots, b.elems]
        for s in self.signals:
            words.append(s.slots)
        # Directory: per rank, per role: first instruction index and count.
        directory_at = len(words)
        words += [0] * (self.world * len(self.roles) * 2)
        instrs: list[list[int]] = []
        refs: list[list[int]] = []
        for rank, roles in enumerate(self.programs):
            for role, body in enumerate(roles):
                at = directory_at + 2 * (rank * len(self.roles) + role)
                words[at] = len(instrs)
                words[at + 1] = len(body)
                instrs += [_encode_instr(i, refs) for i in body]
        words += [len(instrs), len(refs)]
        for w in instrs:
            words += w
        for r in refs:
            words += r
        return np.asarray(words, dtype=np.int64)

    @classmethod
    def decode(cls, words: np.ndarray | bytes) -> Self:
        """Read and validate a binary plan (the layout is in this module's docstring)."""
        w = _int64_words(words)
        arch, dtype = _read_header(w)
        world, n_roles = w[_WORLD], w[_ROLES]
        r = _Reader(w, m.HEADER_WORDS)
        roles = [_read_role(r, k) for k in range(n_roles)]
        buffers = [_read_buffer(r, k) for k in range(w[_BUFFERS])]
        signals = [m.SignalSpec(f"signals{k}", r.take(1, f"signal array {k}")[0]) for k in range(w[_SIGNALS])]
        directory = r.take(world * n_roles * 2, "the directory")
        n_instrs, n_refs = r.take(2, "the table sizes")
        tables = _Tables(r.take(n_instrs * m.INSTR_WORDS, "the instructions"), n_instrs,
                         r.take(n_refs * m.REF_WORDS, "the refs"), n_refs)
        if r.at != len(w):
            raise m.PlanError(f"plan has {len(w) - r.at} words after its last ref")
        entries = [directory[k : k + 2] for k in range(0, len(directory), 2)]
        programs = [[tables.program(rank, role, entries[rank * n_roles + role]) for role in range(n_roles)]
                    for rank in range(world)]
        plan = cls(arch, world, dtype, w[_INPUT], w[_OUTPUT], w[_ADVANCE], w[_THREADS], roles, buffers,
                   signals, programs, symmetric=bool(w[_FLAGS] & m.FLAG_SYMMETRIC))
        check_plan(plan, plan.programs, plan.symmetric)
        return plan


def _encode_instr(i: m.Instr, refs: list[list[int]]) -> list[int]:
    """The instruction's 16 words; its refs go to the end of `refs`."""
    dst = -1
    if i.dst is not None:
        dst = len(refs)
        refs.append(i.dst.words())
    first = len(refs)
    for s in i.srcs:
        refs.append(s.words())
    return [
        int(i.op), int(i.mech), i.elems, i.sig, i.peer, i.slot, int(i.base), i.rel,
        int(i.order), int(i.scope), int(i.redop), i.buf, i.offset, dst, first, len(i.srcs),
    ]


def _enum(kind: type[IntEnum], value: int, what: str) -> IntEnum:
    try:
        return kind(value)
    except ValueError:
        raise m.PlanError(f"{what}: {value} is not a valid {kind.__name__}") from None


def _int64_words(words: np.ndarray | bytes) -> list[int]:
    if isinstance(words, (bytes, bytearray, memoryview)):
        if len(words) % 8:
            raise m.PlanError(f"plan of {len(words)} bytes is not a whole number of int64 words")
        words = np.frombuffer(words, dtype="<i8")
    return [int(x) for x in np.asarray(words, dtype=np.int64)]


def _read_header(w: list[int]) -> tuple[str, str]:
    """Check the header; its arch and dtype by name."""
    if len(w) < m.HEADER_WORDS:
        raise m.PlanError(f"plan of {len(w)} words is shorter than its {m.HEADER_WORDS}-word header")
    if w[0] != m.MAGIC:
        raise m.PlanError(f"not a purlin plan (magic {w[0]:#x}, expected {m.MAGIC:#x})")
    if w[1] != m.VERSION:
        raise m.PlanError(f"plan format version {w[1]} is not supported (this reader reads {m.VERSION})")
    arch = next((a for a, c in m.ARCHS.items() if c == w[_ARCH]), None)
    dtype = next((d for d, (c, _) in m.DTYPES.items() if c == w[_DTYPE]), None)
    if arch is None:
        raise m.PlanError(f"unknown arch code {w[_ARCH]}")
    if dtype is None:
        raise m.PlanError(f"unknown dtype code {w[_DTYPE]}")
    if w[_FLAGS] & ~m.FLAG_SYMMETRIC:
        raise m.PlanError(f"header: unknown flags {w[_FLAGS]:#x}")
    if not 1 <= w[_WORLD] <= MAX_WORLD:
        raise m.PlanError(f"header: world = {w[_WORLD]} is out of range (1 to {MAX_WORLD} ranks)")
    counts = (("roles", w[_ROLES]), ("buffers", w[_BUFFERS]), ("signals", w[_SIGNALS]))
    for what, n in counts:
        if not 0 <= n <= 1 << 20 or (what == "roles" and n < 1):
            raise m.PlanError(f"header: {what} = {n} is out of range")
    return arch, dtype


class _Reader:
    """The words after the header, taken in order."""

    def __init__(self, w: list[int], at: int) -> None:
        self.w, self.at = w, at

    def take(self, n: int, what: str) -> list[int]:
        if n < 0 or self.at + n > len(self.w):
            raise m.PlanError(f"plan is truncated: {what} runs past its end ({len(self.w)} words)")
        self.at += n
        return self.w[self.at - n : self.at]


def _read_role(r: _Reader, k: int) -> m.RoleSpec:
    kind, blocks = r.take(2, f"role {k}")
    return m.RoleSpec(_enum(m.RoleKind, kind, f"role {k} kind"), blocks)


def _read_buffer(r: _Reader, k: int) -> m.BufferSpec:
    kind, slots, elems = r.take(3, f"buffer {k}")
    return m.BufferSpec(f"buffer{k}", _enum(m.BufKind, kind, f"buffer {k} kind"), slots, elems)


class _Tables:
    """The instruction and ref tables, read into the programs the directory names."""

    def __init__(self, instrs: list[int], n_instrs: int, refs: list[int], n_refs: int) -> None:
        self.instrs, self.n_instrs, self.refs, self.n_refs = instrs, n_instrs, refs, n_refs

    def program(self, rank: int, role: int, entry: list[int]) -> list[m.Instr]:
        first, count = entry
        if first < 0 or count < 0 or first + count > self.n_instrs:
            raise m.PlanError(
                f"rank {rank} role {role}: instructions [{first}, {first + count}) are outside "
                f"the table of {self.n_instrs}"
            )
        return [self.instr(k, f"rank {rank} role {role} instruction {k - first}")
                for k in range(first, first + count)]

    def instr(self, k: int, where: str) -> m.Instr:
        f = self.instrs[k * m.INSTR_WORDS : (k + 1) * m.INSTR_WORDS]
        dst = None if f[_DST] == -1 else self.ref(f[_DST], where)
        if not 0 <= f[_SRC_COUNT] <= 1 << 16:
            raise m.PlanError(f"{where}: {f[_SRC_COUNT]} sources is out of range")
        srcs = tuple(self.ref(f[_SRC_FIRST] + j, where) for j in range(f[_SRC_COUNT]))
        return m.Instr(
            _enum(m.Op, f[0], f"{where}: op"), _enum(m.Mech, f[1], f"{where}: mech"),
            f[2], f[3], f[4], f[5], _enum(m.Base, f[6], f"{where}: base"), f[7],
            _enum(m.Order, f[8], f"{where}: order"), _enum(m.Scope, f[9], f"{where}: scope"),
            _enum(m.RedOp, f[10], f"{where}: redop"), f[11], f[12], dst, srcs,
        )

    def ref(self, index: int, where: str) -> m.Ref:
        if not 0 <= index < self.n_refs:
            raise m.PlanError(f"{where}: ref {index} is outside the ref table ({self.n_refs} refs)")
        space, rank, buf, slot, offset = self.refs[index * m.REF_WORDS : (index + 1) * m.REF_WORDS]
        return m.Ref(_enum(m.Space, space, f"{where}: space"), rank, buf, slot, offset)
