"""The lowered plan: what the runtime executes, per rank and per role.

`atom-to-plan` expands a rank-generic Atom program into one flat instruction
list per (rank, role). The plan is the contract between the compiler and the
runtimes (simulator, CPU threads, CUDA); it is stored as JSON for people and
as a flat little-endian int64 array ("binary") for the runtimes. Both carry the
format version; `decode`/`from_json` validate everything a runtime relies on.

Execution model (one call, every rank):
- Each role is run by `blocks` blocks of `threads` threads; a role's
  instructions execute in order. Data instructions (copy, reduce, put) are
  split across the role's blocks; a signal instruction stores once, after all
  blocks of the role finished the instructions before it.
- `epoch` and `prev` are the rank's epoch at this call and the previous one;
  flag values are `epoch + rel` (or `prev + rel`). The staging half and the
  packet-window half are `epoch % 2`. After the call every rank sets
  prev = epoch and epoch += advance.
- Memory per rank: `input`, `output` (the user's buffers; `input_elems` and
  `output_elems` bound every rank's, `input_extent(rank)` and
  `output_extent(rank)` are what that rank's instructions touch, smaller on
  some ranks of the V collectives), and in symmetric memory each buffer
  (2 halves x slots x elems elements; packet windows hold 16-byte packets of
  8 data bytes and an 8-byte flag) and each signal array (slots x uint64).

Instructions (fields after `op` and `mech`):
- wait:    sig, slot, base, rel, order      spin until own signals[sig][slot] >= base + rel
- signal:  sig, peer, slot, base, rel, order
                                           store base + rel into peer's signals[sig][slot]
- copy:    elems, dst, src                  dst[0:elems] = src[0:elems]
- reduce:  elems, redop, dst, srcs          dst = reduce(srcs) in order (f32 accumulation; f64 in
                                           f64, integers exact in their width)
- put:     elems, peer, buf, offset, src    packets into peer's window buf, half epoch%2,
                                           region of this rank, at element offset; flag epoch+1
- wait_packets: elems, buf, peer, offset  spin until the packets from rank `peer` at that
                                           offset of own window carry flag >= epoch + 1
                                           (the data is then readable)
A reference (`Ref`) names memory: space (input, output, staging, window), the
rank owning it, buffer index, slot (window: source rank) and element offset.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import IntEnum

import numpy as np

from purlin.coll.dialect import DTYPES as COLL_DTYPES

FORMAT = "purlin-plan"
VERSION = 1
MAGIC = 0x4E4C5250  # "PRLN"
INSTR_WORDS = 16
REF_WORDS = 5
HEADER_WORDS = 16


class PlanError(Exception):
    """A plan that is malformed, corrupt, or of another version."""


class Op(IntEnum):
    WAIT = 1
    SIGNAL = 2
    COPY = 3
    REDUCE = 4
    PUT = 5
    WAIT_PACKETS = 6


class Mech(IntEnum):
    NONE = 0  # signal ops
    VECTOR = 1  # 16-byte vector loads/stores through registers
    CP_ASYNC = 2  # sm_80+: cp.async global->shared pipeline
    BULK = 3  # sm_90+: bulk (TMA) copy
    MULTIMEM = 4  # sm_90+: multimem.ld_reduce / st on a multicast object
    COPY_ENGINE = 5  # cudaMemcpyAsync peer copies
    PACKET = 6  # 16-byte data+flag stores / polls


class Space(IntEnum):
    INPUT = 0
    OUTPUT = 1
    STAGING = 2
    WINDOW = 3


class Base(IntEnum):
    EPOCH = 0
    PREV = 1


class Order(IntEnum):
    RELAXED = 0
    ACQUIRE = 1
    RELEASE = 2


class Scope(IntEnum):
    GPU = 0
    SYSTEM = 1


class RedOp(IntEnum):
    NONE = 0
    SUM = 1
    MAX = 2
    MIN = 3
    PROD = 4
    AND = 5
    OR = 6
    XOR = 7


class BufKind(IntEnum):
    STAGING = 0
    PACKETS = 1


class RoleKind(IntEnum):
    PRODUCER = 0
    CONSUMER = 1
    REDUCER = 2
    LOCAL = 3
    FUSED = 4


# dtype -> (code, bytes): the code is the dtype's place in coll.DTYPES.
DTYPES = {d.name: (code, d.bytes) for code, d in enumerate(COLL_DTYPES)}
ARCHS = {"sm_80": 80, "sm_90": 90, "sm_100": 100}
# What multimem.ld_reduce can reduce, by element type (PTX ISA; as atom.MULTIMEM_REDUCE).
MULTIMEM_REDUCE = {
    "f32": (RedOp.SUM,),
    "f16": (RedOp.SUM, RedOp.MAX, RedOp.MIN),
    "bf16": (RedOp.SUM, RedOp.MAX, RedOp.MIN),
}
INT64 = (-(1 << 63), (1 << 63) - 1)


@dataclass(frozen=True)
class Ref:
    space: Space
    rank: int
    buf: int = 0
    slot: int = 0
    offset: int = 0

    def words(self) -> list[int]:
        return [int(self.space), self.rank, self.buf, self.slot, self.offset]


@dataclass(frozen=True)
class Instr:
    op: Op
    mech: Mech = Mech.NONE
    elems: int = 0
    # wait / signal
    sig: int = 0
    peer: int = 0
    slot: int = 0
    base: Base = Base.EPOCH
    rel: int = 0
    order: Order = Order.RELAXED
    scope: Scope = Scope.SYSTEM
    # data
    redop: RedOp = RedOp.NONE
    buf: int = 0
    offset: int = 0
    dst: Ref | None = None
    srcs: tuple[Ref, ...] = ()


@dataclass(frozen=True)
class RoleSpec:
    kind: RoleKind
    blocks: int


@dataclass(frozen=True)
class BufferSpec:
    name: str
    kind: BufKind
    slots: int
    elems: int


@dataclass(frozen=True)
class SignalSpec:
    name: str
    slots: int


@dataclass
class Plan:
    arch: str
    world: int
    dtype: str
    input_elems: int
    output_elems: int
    advance: int
    threads: int
    roles: list[RoleSpec]
    buffers: list[BufferSpec]
    signals: list[SignalSpec]
    # programs[rank][role] -> instructions
    programs: list[list[list[Instr]]] = field(default_factory=list)
    version: int = VERSION
    # The protocol orders every overwrite of an input slice after its reads
    # (the IR's input and output are one buffer): a rank may pass one buffer
    # as both. JSON carries it; the binary form, which the runtimes execute, does not need it.
    in_place: bool = False
    # The same atom.kernel compiled for the CUDA backend (purlin.cuda.program.
    # CudaProgram), attached by build_plan; JSON and binary plans carry none.
    cuda: object = field(default=None, compare=False, repr=False)

    @property
    def elem_bytes(self) -> int:
        return DTYPES[self.dtype][1]

    # -- per-rank sizes --------------------------------------------------------

    def input_extent(self, rank: int) -> int:
        """Elements of rank `rank`'s input the plan touches (at most `input_elems`):
        the smallest input that rank may pass."""
        return self._extent(rank, Space.INPUT)

    def output_extent(self, rank: int) -> int:
        """Elements of rank `rank`'s output the plan touches (at most `output_elems`)."""
        return self._extent(rank, Space.OUTPUT)

    def _extent(self, rank: int, space: Space) -> int:
        if not 0 <= rank < self.world:
            raise IndexError(f"rank {rank} is outside world {self.world}")
        end = 0
        for body in self.programs[rank]:
            for i in body:
                if i.elems == 0:
                    continue  # a zero-length move touches nothing
                # The refs the runtimes dereference: a put writes its window by
                # buf/offset, wait_packets reads none, signals carry no data.
                if i.op in (Op.COPY, Op.REDUCE):
                    refs = (i.dst, *i.srcs)
                elif i.op == Op.PUT:
                    refs = i.srcs
                else:
                    continue
                for r in refs:
                    if r is not None and r.space == space:
                        end = max(end, r.offset + i.elems)
        return end

    # -- JSON ----------------------------------------------------------------

    def to_json(self) -> str:
        def instr(i: Instr) -> dict:
            d = {"op": i.op.name.lower(), "mech": i.mech.name.lower()}
            for k, v in asdict(i).items():
                if k in ("op", "mech") or v == getattr(_DEFAULT, k):
                    continue
                d[k] = _jsonable(getattr(i, k))
            return d

        doc = {
            "format": FORMAT,
            "version": self.version,
            "arch": self.arch,
            "world": self.world,
            "dtype": self.dtype,
            "input_elems": self.input_elems,
            "output_elems": self.output_elems,
            "advance": self.advance,
            "kernel": {
                "threads": self.threads,
                "roles": [{"kind": r.kind.name.lower(), "blocks": r.blocks} for r in self.roles],
            },
            "buffers": [
                {"name": b.name, "kind": b.kind.name.lower(), "slots": b.slots, "elems": b.elems}
                for b in self.buffers
            ],
            "signals": [{"name": s.name, "slots": s.slots} for s in self.signals],
            "ranks": [[[instr(i) for i in role] for role in rank] for rank in self.programs],
        }
        if self.in_place:
            doc["in_place"] = True
        return json.dumps(doc, separators=(",", ":"))

    # -- binary --------------------------------------------------------------

    def encode(self) -> np.ndarray:
        """The flat int64 form the runtimes read (see `decode` for the layout)."""
        header = [
            MAGIC, self.version, self.world, ARCHS[self.arch], DTYPES[self.dtype][0],
            self.input_elems, self.output_elems, self.advance, self.threads,
            len(self.roles), len(self.buffers), len(self.signals), 0, 0, 0, 0,
        ]
        words = list(header)
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
                for i in body:
                    instrs.append(_encode_instr(i, refs))
        words += [len(instrs), len(refs)]
        for w in instrs:
            words += w
        for r in refs:
            words += r
        return np.asarray(words, dtype=np.int64)


_DEFAULT = Instr(Op.WAIT)


def _jsonable(v):
    if isinstance(v, IntEnum):
        return v.name.lower()
    if isinstance(v, Ref):
        return {"space": v.space.name.lower(), "rank": v.rank, "buf": v.buf, "slot": v.slot,
                "offset": v.offset}
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    return v


def _encode_instr(i: Instr, refs: list[list[int]]) -> list[int]:
    """16 words: op mech elems sig peer slot base rel order scope redop buf
    offset dst_ref src_first src_count (refs are indices into the ref table)."""
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


# -- reading -----------------------------------------------------------------


def _enum(kind: type[IntEnum], value: int, what: str) -> IntEnum:
    try:
        return kind(value)
    except ValueError:
        raise PlanError(f"{what}: {value} is not a valid {kind.__name__}") from None


def decode(words: np.ndarray | bytes) -> Plan:
    """Read and validate a binary plan.

    Layout (int64 words): a 16-word header (magic, version, world, arch,
    dtype, input_elems, output_elems, advance, threads, n_roles, n_buffers,
    n_signals, 4 reserved); n_roles x (kind, blocks); n_buffers x (kind,
    slots, elems); n_signals x (slots); a directory of world x n_roles x
    (first instruction, count); n_instrs, n_refs; the instructions (16 words
    each); the refs (5 words each).
    """
    if isinstance(words, (bytes, bytearray, memoryview)):
        if len(words) % 8:
            raise PlanError(f"plan of {len(words)} bytes is not a whole number of int64 words")
        words = np.frombuffer(words, dtype="<i8")
    w = [int(x) for x in np.asarray(words, dtype=np.int64)]
    if len(w) < HEADER_WORDS:
        raise PlanError(f"plan of {len(w)} words is shorter than its {HEADER_WORDS}-word header")
    if w[0] != MAGIC:
        raise PlanError(f"not a purlin plan (magic {w[0]:#x}, expected {MAGIC:#x})")
    if w[1] != VERSION:
        raise PlanError(f"plan format version {w[1]} is not supported (this reader reads {VERSION})")
    world, arch_code, dtype_code = w[2], w[3], w[4]
    arch = next((a for a, c in ARCHS.items() if c == arch_code), None)
    dtype = next((d for d, (c, _) in DTYPES.items() if c == dtype_code), None)
    if arch is None:
        raise PlanError(f"unknown arch code {arch_code}")
    if dtype is None:
        raise PlanError(f"unknown dtype code {dtype_code}")
    n_roles, n_buffers, n_signals = w[9], w[10], w[11]
    for what, n in (("world", world), ("roles", n_roles), ("buffers", n_buffers), ("signals", n_signals)):
        if not 0 <= n <= 1 << 20 or (what in ("world", "roles") and n < 1):
            raise PlanError(f"header: {what} = {n} is out of range")
    at = HEADER_WORDS

    def take(n: int, what: str) -> list[int]:
        nonlocal at
        if n < 0 or at + n > len(w):
            raise PlanError(f"plan is truncated: {what} runs past its end ({len(w)} words)")
        out = w[at : at + n]
        at += n
        return out

    roles = []
    for k in range(n_roles):
        kind, blocks = take(2, f"role {k}")
        roles.append(RoleSpec(_enum(RoleKind, kind, f"role {k} kind"), blocks))
    buffers = []
    for k in range(n_buffers):
        kind, slots, elems = take(3, f"buffer {k}")
        buffers.append(BufferSpec(f"buffer{k}", _enum(BufKind, kind, f"buffer {k} kind"), slots, elems))
    signals = [SignalSpec(f"signals{k}", take(1, f"signal array {k}")[0]) for k in range(n_signals)]
    directory = take(world * n_roles * 2, "the directory")
    n_instrs, n_refs = take(2, "the table sizes")
    raw_instrs = take(n_instrs * INSTR_WORDS, "the instructions")
    raw_refs = take(n_refs * REF_WORDS, "the refs")
    if at != len(w):
        raise PlanError(f"plan has {len(w) - at} words after its last ref")

    def ref(index: int, where: str) -> Ref:
        if not 0 <= index < n_refs:
            raise PlanError(f"{where}: ref {index} is outside the ref table ({n_refs} refs)")
        space, rank, buf, slot, offset = raw_refs[index * REF_WORDS : (index + 1) * REF_WORDS]
        return Ref(_enum(Space, space, f"{where}: space"), rank, buf, slot, offset)

    programs: list[list[list[Instr]]] = []
    for rank in range(world):
        per_role = []
        for role in range(n_roles):
            first, count = directory[2 * (rank * n_roles + role) : 2 * (rank * n_roles + role) + 2]
            if first < 0 or count < 0 or first + count > n_instrs:
                raise PlanError(
                    f"rank {rank} role {role}: instructions [{first}, {first + count}) are outside "
                    f"the table of {n_instrs}"
                )
            body = []
            for k in range(first, first + count):
                f = raw_instrs[k * INSTR_WORDS : (k + 1) * INSTR_WORDS]
                where = f"rank {rank} role {role} instruction {k - first}"
                dst = None if f[13] == -1 else ref(f[13], where)
                if not 0 <= f[15] <= 1 << 16:
                    raise PlanError(f"{where}: {f[15]} sources is out of range")
                srcs = tuple(ref(f[14] + j, where) for j in range(f[15]))
                body.append(
                    Instr(
                        _enum(Op, f[0], f"{where}: op"), _enum(Mech, f[1], f"{where}: mech"),
                        f[2], f[3], f[4], f[5], _enum(Base, f[6], f"{where}: base"), f[7],
                        _enum(Order, f[8], f"{where}: order"), _enum(Scope, f[9], f"{where}: scope"),
                        _enum(RedOp, f[10], f"{where}: redop"), f[11], f[12], dst, srcs,
                    )
                )
            per_role.append(body)
        programs.append(per_role)
    plan = Plan(arch, world, dtype, w[5], w[6], w[7], w[8], roles, buffers, signals, programs)
    validate(plan)
    return plan


def from_json(text: str) -> Plan:
    try:
        doc = json.loads(text)
        if doc.get("format") != FORMAT:
            raise PlanError(f"not a purlin plan (format {doc.get('format')!r})")
        if doc.get("version") != VERSION:
            raise PlanError(
                f"plan format version {doc.get('version')} is not supported (this reader reads {VERSION})"
            )

        def num(v, what):
            # JSON numbers that are not int64 (floats, booleans, huge) would
            # slip past validate and break encode or a runtime.
            if isinstance(v, bool) or not isinstance(v, int) or not INT64[0] <= v <= INT64[1]:
                raise PlanError(f"{what}: {v!r} is not an int64")
            return v

        def enum(kind, name, what):
            try:
                return kind[str(name).upper()]
            except KeyError:
                raise PlanError(f"{what}: {name!r} is not a valid {kind.__name__}") from None

        def ref(d, what):
            return Ref(enum(Space, d["space"], what), num(d["rank"], what), num(d.get("buf", 0), what),
                       num(d.get("slot", 0), what), num(d.get("offset", 0), what))

        def instr(d, what):
            kw = {k: v for k, v in d.items() if k not in ("op", "mech")}
            enums = {"base": Base, "order": Order, "scope": Scope, "redop": RedOp}
            for k in kw:
                if k in enums:
                    kw[k] = enum(enums[k], kw[k], f"{what}: {k}")
                elif k not in ("dst", "srcs"):
                    kw[k] = num(kw[k], f"{what}: {k}")
            if "dst" in kw:
                kw["dst"] = ref(kw["dst"], what)
            if "srcs" in kw:
                kw["srcs"] = tuple(ref(s, what) for s in kw["srcs"])
            return Instr(enum(Op, d["op"], f"{what}: op"), enum(Mech, d.get("mech", "none"), f"{what}: mech"), **kw)

        kernel = doc["kernel"]
        plan = Plan(
            doc["arch"], num(doc["world"], "world"), doc["dtype"], num(doc["input_elems"], "input_elems"),
            num(doc["output_elems"], "output_elems"), num(doc["advance"], "advance"),
            num(kernel["threads"], "threads"),
            [RoleSpec(enum(RoleKind, r["kind"], "role"), num(r["blocks"], "role blocks"))
             for r in kernel["roles"]],
            [BufferSpec(b["name"], enum(BufKind, b["kind"], "buffer"), num(b["slots"], "buffer slots"),
                        num(b["elems"], "buffer elems")) for b in doc["buffers"]],
            [SignalSpec(s["name"], num(s["slots"], "signal slots")) for s in doc["signals"]],
            [[[instr(i, f"rank {r} role {k} instruction {n}") for n, i in enumerate(role)]
              for k, role in enumerate(rank)] for r, rank in enumerate(doc["ranks"])],
            in_place=doc.get("in_place", False) is True,
        )
    except PlanError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise PlanError(f"malformed plan JSON: {type(e).__name__}: {e}") from None
    validate(plan)
    return plan


def plans_to_json(plans: list[Plan]) -> str:
    """Several plans as one JSON document: a list, one plan a line."""
    return "[" + ",\n".join(p.to_json() for p in plans) + "]"


def plans_from_json(text: str) -> list[Plan]:
    """The plans of `plans_to_json`'s document, each read by `from_json`."""
    try:
        docs = json.loads(text)
    except ValueError as e:
        raise PlanError(f"malformed plan JSON: {e}") from None
    if not isinstance(docs, list):
        raise PlanError(f"expected a JSON list of plans, got {type(docs).__name__}")
    return [from_json(json.dumps(d)) for d in docs]


def validate(plan: Plan) -> None:
    """Raise PlanError unless every index, offset and size is inside what it names."""
    if not isinstance(plan.arch, str) or plan.arch not in ARCHS:
        raise PlanError(f"unknown arch {plan.arch!r}")
    if not isinstance(plan.dtype, str) or plan.dtype not in DTYPES:
        raise PlanError(f"unknown dtype {plan.dtype!r}")
    if plan.world < 1:
        raise PlanError(f"world must be at least 1, got {plan.world}")
    if plan.advance < 1 or plan.advance % 2 == 0:
        raise PlanError(f"epoch advance must be odd and positive, got {plan.advance}")
    if not 1 <= plan.threads <= 1024 or plan.threads % 32:
        raise PlanError(f"threads per block must be a multiple of 32 in [32, 1024], got {plan.threads}")
    if plan.input_elems < 0 or plan.output_elems < 0:
        raise PlanError("buffer sizes must be non-negative")
    for k, r in enumerate(plan.roles):
        if r.blocks < 1:
            raise PlanError(f"role {k} has {r.blocks} blocks, needs at least one")
    for k, b in enumerate(plan.buffers):
        if b.slots < 1 or b.elems < 0:
            raise PlanError(f"buffer {k} has {b.slots} slots of {b.elems} elements")
        if b.kind == BufKind.PACKETS and b.slots != plan.world:
            raise PlanError(f"packet window {k} has {b.slots} source slots, world is {plan.world}")
    for k, s in enumerate(plan.signals):
        if s.slots != plan.world:
            raise PlanError(f"signal array {k} has {s.slots} slots, world is {plan.world}")
    if len(plan.programs) != plan.world:
        raise PlanError(f"plan has programs for {len(plan.programs)} ranks, world is {plan.world}")
    for rank, roles in enumerate(plan.programs):
        if len(roles) != len(plan.roles):
            raise PlanError(f"rank {rank} has {len(roles)} role programs, the kernel {len(plan.roles)}")
        for role, body in enumerate(roles):
            for n, i in enumerate(body):
                _check_instr(plan, rank, i, f"rank {rank} role {role} instruction {n} ({i.op.name.lower()})")


def _check_instr(plan: Plan, rank: int, i: Instr, where: str) -> None:
    def fail(msg: str) -> None:
        raise PlanError(f"{where}: {msg}")

    def in_world(v: int, what: str) -> None:
        if not 0 <= v < plan.world:
            fail(f"{what} {v} is outside world {plan.world}")

    def check_ref(r: Ref, what: str, writes: bool) -> None:
        in_world(r.rank, f"{what} rank")
        if r.space in (Space.INPUT, Space.OUTPUT):
            if r.rank != rank:
                fail(f"{what} reads rank {r.rank}'s {r.space.name.lower()}, only rank {rank}'s is mapped")
            size = plan.input_elems if r.space == Space.INPUT else plan.output_elems
            if writes and r.space == Space.INPUT:
                fail(f"{what} writes the input buffer")
        else:
            if not 0 <= r.buf < len(plan.buffers):
                fail(f"{what} buffer {r.buf} does not exist ({len(plan.buffers)} buffers)")
            b = plan.buffers[r.buf]
            want = BufKind.STAGING if r.space == Space.STAGING else BufKind.PACKETS
            if b.kind != want:
                fail(f"{what} uses buffer {r.buf} ({b.kind.name.lower()}) as {r.space.name.lower()}")
            if not 0 <= r.slot < b.slots:
                fail(f"{what} slot {r.slot} is outside buffer {r.buf}'s {b.slots} slots")
            size = b.elems
        if r.offset < 0 or r.offset + i.elems > size:
            fail(f"{what} [{r.offset}, {r.offset + i.elems}) is outside its {size} elements")

    def check_signal() -> None:
        if not 0 <= i.sig < len(plan.signals):
            fail(f"signal array {i.sig} does not exist ({len(plan.signals)} arrays)")
        if not 0 <= i.slot < plan.signals[i.sig].slots:
            fail(f"signal slot {i.slot} is outside {plan.signals[i.sig].slots} slots")
        if i.rel < 0:
            fail(f"flag offset {i.rel} is negative")

    if i.elems < 0:
        fail(f"{i.elems} elements")
    if i.op == Op.WAIT:
        check_signal()
        if i.order == Order.RELEASE:
            fail("a wait cannot be a release")
    elif i.op == Op.SIGNAL:
        check_signal()
        in_world(i.peer, "peer")
        if i.order == Order.ACQUIRE:
            fail("a signal store cannot be an acquire")
    elif i.op in (Op.COPY, Op.REDUCE):
        if i.dst is None:
            fail("has no destination")
        check_ref(i.dst, "destination", writes=True)
        if i.op == Op.COPY and len(i.srcs) != 1:
            fail(f"a copy has one source, got {len(i.srcs)}")
        if i.op == Op.REDUCE and (not i.srcs or i.redop == RedOp.NONE):
            fail("a reduce needs sources and a reduction")
        for k, s in enumerate(i.srcs):
            check_ref(s, f"source {k}", writes=False)
    elif i.op in (Op.PUT, Op.WAIT_PACKETS):
        if not 0 <= i.buf < len(plan.buffers) or plan.buffers[i.buf].kind != BufKind.PACKETS:
            fail(f"buffer {i.buf} is not a packet window")
        if i.offset < 0 or i.offset + i.elems > plan.buffers[i.buf].elems:
            fail(f"window range [{i.offset}, {i.offset + i.elems}) is outside its "
                 f"{plan.buffers[i.buf].elems} elements")
        per_packet = 8 // plan.elem_bytes
        if i.offset % per_packet:
            fail(f"window offset {i.offset} does not start a packet ({per_packet} elements)")
        in_world(i.peer, "peer" if i.op == Op.PUT else "source rank")
        if i.op == Op.PUT:
            if len(i.srcs) != 1:
                fail(f"a put has one source, got {len(i.srcs)}")
            check_ref(i.srcs[0], "source", writes=False)
    if i.mech == Mech.MULTIMEM:
        if i.op == Op.REDUCE and i.redop not in MULTIMEM_REDUCE.get(plan.dtype, ()):
            fail(f"multimem cannot reduce {plan.dtype} with {i.redop.name.lower()}")
        if plan.dtype.startswith("fp8"):
            fail(f"multimem does not move {plan.dtype}")
    if i.mech in (Mech.BULK, Mech.MULTIMEM) and ARCHS[plan.arch] < 90:
        fail(f"{i.mech.name.lower()} needs sm_90 or newer, the plan targets {plan.arch}")
