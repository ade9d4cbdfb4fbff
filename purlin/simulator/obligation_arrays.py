"""snac-verify's every-rank obligations as array operations.

The same obligations as purlin.simulator.obligations (its docstring says what
they are and why they cover every rank and every schedule), computed over
all ranks at once: the program is run once per call with every SSA value an
array over the rows it is live in (a role starts with one row per rank; a
loop repeats each row once per iteration), and each protocol op's signal
stores, waits, writes and reads are gathered from the plan's records laid out
as arrays (each rank's units' consumers, each rank's groups' remote
sources). A step's place in its role's program order is a sort key: the
call, then at every nesting level the op's index in its block and the loop
variable. Every obligation is then a comparison of sorted arrays:

- flags only grow: a role's stores to one slot, in program order, never fall;
- a read is after its write: the write of the same location and tag is
  found by a join, then either it was in an earlier call of the reader's rank
  or one of the reader's waits protecting that read (at or before it) is
  covered: every store reaching the awaited value is by the writing role at
  or after the write;
- a write is after the reads it overwrites: for consecutive writes of one
  location, every read of the older contents is in an earlier call of the
  writer's rank, or the writer waited before the write on a slot that the
  reader's rank stores to, covered by the reader at or after its read;
- deadlock freedom: the same least fixpoint as the per-item path, found in
  rounds (every role advances as far as the values its peers stored allow;
  a rank enters its next call when all its roles finished this one).

Programs the arrays do not describe fall back to the per-item path
(`Unsupported` says why): phases that move in place (push, pull, and the
grant/drain/push ops; these also go to the interleaving search, see
touches_callers_buffers), loops that carry values or step by less than 1,
ops other than the arithmetic and queries of IndexEvaluator, a staging half
other than 0 or 1, negative flag values, and a query for a rank outside the
world.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.ir import Block, Operation, SSAValue

from purlin.snac import dialect as snac
from purlin.snac.errors import Deadlock, ProtocolViolation, SnacExecutionError
from purlin.snac.phase_binding import PhaseState

I64 = np.int64

# Waits of one role checked together in a round of the fixpoint.
WINDOW = 64

_BINARY = {arith.AddiOp: np.add, arith.SubiOp: np.subtract, arith.MuliOp: np.multiply,
           arith.OrIOp: np.bitwise_or, arith.MaxUIOp: np.maximum, arith.RemUIOp: np.mod}


class Unsupported(Exception):
    """The program has a form the array path does not describe."""


def key_text(key: tuple) -> str:
    """A signal slot, staging slot or window region, as diagnostics name it."""
    if key[0] == "stage":
        return f"@{key[1]} of rank {key[2]} half {key[3]} slot {key[4]}"
    if key[0] == "win":
        return f"@{key[1]} of rank {key[2]} half {key[3]} source {key[4]} unit {key[5]}"
    return f"{key[1]}[{key[3]}] on rank {key[2]}"


def _expand(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows repeated `counts` times: each new row's old row, and its index among the repeats."""
    counts = np.asarray(counts, I64)
    rep = np.repeat(np.arange(len(counts), dtype=I64), counts)
    starts = np.cumsum(counts) - counts
    return rep, np.arange(len(rep), dtype=I64) - starts[rep]


class _PhaseArrays:
    """One phase's records for every rank, as arrays: units' consumers and
    groups' remote sources, each rank's flattened after the previous rank's."""

    def __init__(self, ph: PhaseState, world: int):
        plan = ph.plan
        units = [plan.units[r] for r in range(world)]
        groups = [plan.groups[r] for r in range(world)]
        self.ucount = np.array([len(us) for us in units], I64)
        self.ubase = np.concatenate(([0], np.cumsum(self.ucount)))
        consumers = [u.consumers for us in units for u in us]
        self.cons_len = np.array([len(c) for c in consumers], I64)
        self.cons_ptr = np.concatenate(([0], np.cumsum(self.cons_len)))
        self.cons_rank = np.array([d for c in consumers for d in c], I64)
        self.gcount = np.array([len(gs) for gs in groups], I64)
        self.gbase = np.concatenate(([0], np.cumsum(self.gcount)))
        rem_rank: list[int] = []
        rem_unit: list[int] = []
        rem_len, nsources, need, lo, hi = [], [], [], [], []
        # A reduction reads every slice of the name, a copy one.
        needs: dict = {}
        for gs in groups:
            for g in gs:
                before = len(rem_rank)
                for src in g.sources:
                    if src.unit is not None:
                        rem_rank.append(src.rank)
                        rem_unit.append(src.unit)
                rem_len.append(len(rem_rank) - before)
                nsources.append(len(g.sources))
                n = needs.get(g.name)
                if n is None:
                    n = needs[g.name] = plan.src.holder_count(g.name) if ph.reduce is not None else 1
                need.append(n)
                lo.append(g.dst_offset)
                hi.append(g.dst_offset + g.size)
        self.rem_len = np.array(rem_len, I64)
        self.rem_ptr = np.concatenate(([0], np.cumsum(self.rem_len)))
        self.rem_rank, self.rem_unit = np.array(rem_rank, I64), np.array(rem_unit, I64)
        owner = np.repeat(np.arange(world, dtype=I64), self.gcount)
        self.staged = np.bincount(owner[self.rem_len > 0], minlength=world).astype(I64)
        self.nsources, self.need = np.array(nsources, I64), np.array(need, I64)
        self.dst_lo, self.dst_hi = np.array(lo, I64), np.array(hi, I64)
        peers = np.concatenate((self.cons_rank, self.rem_rank))
        if len(peers) and (peers.min() < 0 or peers.max() >= world) or len(self.rem_unit) and self.rem_unit.min() < 0:
            raise Unsupported(f"phase '{ph.name}' names a rank outside the world or a negative unit")
        self.max_units = plan.max_units
        # Keys number units below this: a source may name one its producer lacks.
        self.unit_bound = max(plan.max_units, int(self.rem_unit.max(initial=-1)) + 1)


class _Events:
    """Columns of one kind of event, appended in pieces and joined once."""

    def __init__(self, *names: str):
        self.names = names
        self.parts: dict[str, list] = {n: [] for n in names}

    def add(self, **cols) -> None:
        n = len(cols["step"])
        for name in self.names:
            self.parts[name].append(np.broadcast_to(np.asarray(cols[name], I64), (n,)))

    def join(self) -> dict[str, np.ndarray]:
        return {n: np.concatenate(p) if p else np.zeros(0, I64) for n, p in self.parts.items()}


class _Flattener:
    """Every rank's roles for `calls` calls, as steps (rows) and their events."""

    def __init__(self, program: snac.ProgramOpBase, phases: dict[str, PhaseState], kinds: list[str]):
        self.program, self.phases, self.world = program, phases, program.world_size
        for ph in phases.values():
            if ph.moves not in ("staging", "packets"):
                raise Unsupported(f"phase '{ph.name}' moves by {ph.moves}")
        self.arrays = {name: _PhaseArrays(ph, self.world) for name, ph in phases.items()}
        self.phase_ids = {name: i for i, name in enumerate(phases)}
        syms = sorted({s for ph in phases.values() for s in (ph.ready, ph.free)})
        self.syms, self.sym_ids = syms, {s: i for i, s in enumerate(syms)}
        bufs = sorted({ph.buf for ph in phases.values()})
        self.bufs, self.buf_ids = bufs, {b: i for i, b in enumerate(bufs)}
        self.slots = max((ph.slots for ph in phases.values()), default=1)
        self.max_units = max((a.unit_bound for a in self.arrays.values()), default=0) + 1
        w = self.world
        self.stage_base = len(syms) * w * w
        self.win_base = self.stage_base + len(bufs) * w * 2 * self.slots
        self.kinds = kinds
        self.ops: list[Operation] = []
        self.op_ids: dict[Operation, int] = {}
        self.steps = _Events("step", "rank", "role", "call", "op")
        self.cols: list[list[np.ndarray]] = []
        self.conds = _Events("step", "key", "need", "writer", "ploc", "tph", "trank", "tunit", "tepoch")
        self.stores = _Events("step", "key", "value")
        self.reads = _Events("step", "loc", "tph", "trank", "tunit", "tepoch")
        self.writes = _Events("step", "loc", "tph", "trank", "tunit", "tepoch")
        self.nsteps = 0

    # -- keys -------------------------------------------------------------
    def sig(self, sym: str, owner, writer):
        return (self.sym_ids[sym] * self.world + owner) * self.world + writer

    def stage(self, buf: str, rank, half, slot):
        return self.stage_base + ((self.buf_ids[buf] * self.world + rank) * 2 + half) * self.slots + slot

    def win(self, buf: str, rank, half, source, unit):
        w = self.world
        return self.win_base + (((self.buf_ids[buf] * w + rank) * 2 + half) * w + source) * self.max_units + unit

    def decode(self, key: int) -> tuple:
        w = self.world
        if key >= self.win_base:
            rest, unit = divmod(key - self.win_base, self.max_units)
            rest, source = divmod(rest, w)
            rest, half = divmod(rest, 2)
            buf, rank = divmod(rest, w)
            return ("win", self.bufs[buf], rank, half, source, unit)
        if key >= self.stage_base:
            rest, slot = divmod(key - self.stage_base, self.slots)
            rest, half = divmod(rest, 2)
            buf, rank = divmod(rest, w)
            return ("stage", self.bufs[buf], rank, half, slot)
        rest, writer = divmod(key, w)
        sym, owner = divmod(rest, w)
        return ("sig", self.syms[sym], owner, writer)

    # -- running the program ------------------------------------------------
    def call(self, call: int, epoch: int, prev: int) -> np.ndarray:
        """Every rank's steps of call `call`; each rank's epoch advance."""
        ranks = np.arange(self.world, dtype=I64)
        env: dict[SSAValue, object] = {}
        advance, role = None, 0
        self._epoch, self._call = (epoch, prev), call
        for op in self.program.body.block.ops:
            if isinstance(op, snac.RoleOpBase):
                self._block(op.body.block, dict(env), ranks, [], role)
                role += 1
            elif isinstance(op, snac.AdvanceOp):
                advance = env[op.amount]
            elif not isinstance(op, (snac.BufferOp, snac.SignalsOp, snac.PhaseOp)):
                self._index(op, env, ranks)
        if advance is None:
            raise SnacExecutionError(self.program, "the program has no snac.advance")
        return np.broadcast_to(np.asarray(advance, I64), (self.world,))

    def _index(self, op: Operation, env: dict, ranks: np.ndarray) -> None:
        if isinstance(op, arith.ConstantOp):
            env[op.result] = op.value.value.data  # type: ignore[attr-defined]
        elif (fn := _BINARY.get(type(op))) is not None:
            env[op.result] = fn(env[op.lhs], env[op.rhs])  # type: ignore[attr-defined]
        elif isinstance(op, snac.RankOp):
            env[op.result] = ranks
        elif isinstance(op, snac.EpochOp):
            env[op.epoch], env[op.prev] = self._epoch
        elif isinstance(op, snac.HalfOp):
            env[op.result] = np.mod(env[op.epoch], 2)
        elif isinstance(op, (snac.UnitsOp, snac.GroupsOp, snac.StagedGroupsOp)):
            who = np.asarray(env[op.rank], I64)
            if who.size and (who.min() < 0 or who.max() >= self.world):
                raise Unsupported(f"'{op.name}' asks for a rank outside the world")
            a = self.arrays[op.phase.string_value()]
            table = a.ucount if isinstance(op, snac.UnitsOp) else a.gcount if isinstance(op, snac.GroupsOp) \
                else a.staged
            env[op.result] = table[who]
        elif isinstance(op, snac.MaxUnitsOp):
            env[op.result] = self.arrays[op.phase.string_value()].max_units
        else:
            raise Unsupported(f"'{op.name}'")

    def _block(self, block: Block, env: dict, ranks: np.ndarray, cols: list, role: int) -> None:
        for j, op in enumerate(block.ops):
            if isinstance(op, scf.ForOp):
                if op.iter_args:
                    raise Unsupported("a loop carrying values")
                n = len(ranks)
                lb, ub, step = (np.broadcast_to(np.asarray(env[v], I64), (n,)) for v in (op.lb, op.ub, op.step))
                if n and step.min() < 1:
                    raise Unsupported("a loop stepping by less than 1")
                rep, within = _expand(np.maximum(0, (ub - lb + step - 1) // step))
                inner = {k: _take(v, rep) for k, v in env.items()}
                iv = lb[rep] + within * step[rep]
                inner[op.body.block.args[0]] = iv
                self._block(op.body.block, inner, ranks[rep], [c[rep] for c in cols] + [np.full(len(rep), j), iv],
                            role)
            elif isinstance(op, scf.YieldOp) or isinstance(op, snac.FenceOpBase):
                continue  # a fence carries no event: program order is all it adds
            elif isinstance(op, snac.RoleOpBase):
                raise SnacExecutionError(op, "roles cannot nest")
            elif isinstance(op, snac._PhaseStep) and not isinstance(op, (snac._PhaseQuery, snac.MaxUnitsOp)):
                kind = next((k for cls, k in _KINDS if isinstance(op, cls)), None)
                if kind is None:
                    raise Unsupported(f"'{op.name}'")
                sid = np.arange(self.nsteps, self.nsteps + len(ranks), dtype=I64)
                self.nsteps += len(ranks)
                opid = self.op_ids.setdefault(op, len(self.ops))
                if opid == len(self.ops):
                    self.ops.append(op)
                self.steps.add(step=sid, rank=ranks, role=role, call=self._call, op=opid)
                self.cols.append([c for c in cols] + [np.full(len(ranks), j)])
                ph = self.phases[op.phase.string_value()]  # type: ignore[attr-defined]
                getattr(self, "_" + kind)(op, ph, self.arrays[ph.name], env, ranks, sid)
            else:
                self._index(op, env, ranks)

    def _vec(self, env: dict, value: SSAValue, n: int) -> np.ndarray:
        return np.broadcast_to(np.asarray(env[value], I64), (n,))

    def _bounds(self, op: Operation, ph: PhaseState, i: np.ndarray, counts: np.ndarray, ranks: np.ndarray,
                what: str) -> None:
        bad = np.nonzero((i < 0) | (i >= counts[ranks]))[0]
        if len(bad):
            k = bad[0]
            raise SnacExecutionError(op, f"rank {ranks[k]} has {counts[ranks[k]]} {what}s in phase '{ph.name}', "
                                         f"no {what} {i[k]}")

    def _half(self, env: dict, value: SSAValue, n: int) -> np.ndarray:
        half = self._vec(env, value, n)
        if n and (half.min() < 0 or half.max() > 1):
            raise Unsupported("a staging half other than 0 or 1")
        return half

    def _consumers(self, a: _PhaseArrays, ranks: np.ndarray, u: np.ndarray):
        flat = a.ubase[ranks] + u
        rep, within = _expand(a.cons_len[flat])
        return rep, a.cons_rank[a.cons_ptr[flat][rep] + within]

    def _remote(self, a: _PhaseArrays, ranks: np.ndarray, g: np.ndarray):
        flat = a.gbase[ranks] + g
        rep, within = _expand(a.rem_len[flat])
        at = a.rem_ptr[flat][rep] + within
        return rep, a.rem_rank[at], a.rem_unit[at]

    def _others(self, ranks: np.ndarray):
        rep, k = _expand(np.full(len(ranks), self.world - 1))
        return rep, (ranks[rep] + 1 + k) % self.world

    def _cond(self, step, key, need, writer, ploc=-1, tag=(-1, -1, -1, -1)) -> None:
        self.conds.add(step=step, key=key, need=need, writer=writer, ploc=ploc,
                       tph=tag[0], trank=tag[1], tunit=tag[2], tepoch=tag[3])

    def _reclaim(self, op, ph, a, env, ranks, sid) -> None:
        n = len(ranks)
        u, epoch, prev = (self._vec(env, v, n) for v in (op.unit, op.epoch, op.prev))
        self._bounds(op, ph, u, a.ucount, ranks, "unit")
        reuse = (u >= ph.slots) if ph.staged else np.zeros(n, bool)
        first = ~reuse & (u == 0)
        i = np.nonzero(reuse)[0]
        rep, d = self._consumers(a, ranks[i], u[i] - ph.slots)
        i = i[rep]
        self._cond(sid[i], self.sig(ph.free, ranks[i], d), epoch[i] + (u[i] - ph.slots) + 1, d)
        i = np.nonzero(first)[0]
        rep, d = self._others(ranks[i])
        i = i[rep]
        self._cond(sid[i], self.sig(ph.free, ranks[i], d), prev[i], d)

    def _stage(self, op, ph, a, env, ranks, sid) -> None:
        n = len(ranks)
        u, half = self._vec(env, op.unit, n), self._half(env, op.half, n)
        self._bounds(op, ph, u, a.ucount, ranks, "unit")
        self.writes.add(step=sid, loc=self.stage(ph.buf, ranks, half, u % ph.slots), tph=self.phase_ids[ph.name],
                        trank=ranks, tunit=u, tepoch=self._epoch[0])

    def _put(self, op, ph, a, env, ranks, sid) -> None:
        n = len(ranks)
        u, half, flag = self._vec(env, op.unit, n), self._half(env, op.half, n), self._vec(env, op.flag, n)
        self._bounds(op, ph, u, a.ucount, ranks, "unit")
        rep, d = self._consumers(a, ranks, u)
        loc = self.win(ph.buf, d, half[rep], ranks[rep], u[rep])
        self.stores.add(step=sid[rep], key=loc, value=flag[rep])
        self.writes.add(step=sid[rep], loc=loc, tph=self.phase_ids[ph.name], trank=ranks[rep], tunit=u[rep],
                        tepoch=flag[rep])

    def _notify(self, op, ph, a, env, ranks, sid) -> None:
        n = len(ranks)
        u, value = self._vec(env, op.unit, n), self._vec(env, op.value, n)
        self._bounds(op, ph, u, a.ucount, ranks, "unit")
        rep, d = self._consumers(a, ranks, u)
        self.stores.add(step=sid[rep], key=self.sig(ph.ready, d, ranks[rep]), value=value[rep])

    def _wait(self, op, ph, a, env, ranks, sid) -> None:
        n = len(ranks)
        g, epoch = self._vec(env, op.group, n), self._vec(env, op.epoch, n)
        self._bounds(op, ph, g, a.gcount, ranks, "group")
        env[op.token] = (self.phase_ids[ph.name], g)
        half = epoch % 2
        rep, sr, su = self._remote(a, ranks, g)
        r, e, h = ranks[rep], epoch[rep], half[rep]
        tag = (self.phase_ids[ph.name], sr, su)
        if ph.moves == "packets":
            loc = self.win(ph.buf, r, h, sr, su)
            self._cond(sid[rep], loc, e + 1, sr, loc, tag + (e + 1,))
        else:
            self._cond(sid[rep], self.sig(ph.ready, r, sr), e + su + 1, sr,
                       self.stage(ph.buf, sr, h, su % ph.slots), tag + (e,))

    def _consume(self, op, ph, a, env, ranks, sid) -> None:
        n = len(ranks)
        g, half = self._vec(env, op.group, n), self._half(env, op.half, n)
        token_phase, token_group = env[op.token]
        bad = np.nonzero(np.broadcast_to(token_group, (n,)) != g)[0] if token_phase == self.phase_ids[ph.name] \
            else np.arange(min(n, 1))
        if len(bad):
            k = bad[0]
            other = list(self.phases)[token_phase]
            raise ProtocolViolation(op, f"rank {ranks[k]} consumes group {g[k]} of phase '{ph.name}' with the "
                                        f"token of a wait for group {np.broadcast_to(token_group, (n,))[k]} of "
                                        f"phase '{other}'")
        self._bounds(op, ph, g, a.gcount, ranks, "group")
        rep, sr, su = self._remote(a, ranks, g)
        epoch = self._epoch[0]
        if ph.staged:
            loc = self.stage(ph.buf, sr, half[rep], su % ph.slots)
        else:
            loc, epoch = self.win(ph.buf, ranks[rep], half[rep], sr, su), epoch + 1
        self.reads.add(step=sid[rep], loc=loc, tph=self.phase_ids[ph.name], trank=sr, tunit=su, tepoch=epoch)

    def _ack(self, op, ph, a, env, ranks, sid) -> None:
        n = len(ranks)
        g, epoch = self._vec(env, op.group, n), self._vec(env, op.epoch, n)
        self._bounds(op, ph, g, a.gcount, ranks, "group")
        rep, sr, su = self._remote(a, ranks, g)
        self.stores.add(step=sid[rep], key=self.sig(ph.free, sr, ranks[rep]), value=epoch[rep] + su + 1)

    def _finish(self, op, ph, a, env, ranks, sid) -> None:
        value = self._vec(env, op.value, len(ranks))
        rep, d = self._others(ranks)
        self.stores.add(step=sid[rep], key=self.sig(ph.free, d, ranks[rep]), value=value[rep])


def _take(value, rep: np.ndarray):
    if isinstance(value, tuple):
        return tuple(_take(v, rep) for v in value)
    if isinstance(value, np.ndarray) and value.ndim:
        return value[rep]
    return value


_KINDS = ((snac.ReclaimOpBase, "reclaim"), (snac.StageOpBase, "stage"), (snac.PutOpBase, "put"),
          (snac.NotifyOpBase, "notify"), (snac.WaitOpBase, "wait"), (snac.ConsumeOpBase, "consume"),
          (snac.AckOpBase, "ack"), (snac.FinishOpBase, "finish"))


def _dense(*arrays: np.ndarray) -> list[np.ndarray]:
    """`arrays`' values renumbered 0, 1, ... together (equal values, equal numbers)."""
    sizes = [len(a) for a in arrays]
    values = np.concatenate(arrays) if arrays else np.zeros(0, I64)
    top = int(values.max(initial=0))
    if len(values) and values.min() >= 0 and top < 4 * len(values) + 1024:
        # Few enough possible values for a table (no sort).
        present = np.zeros(top + 1, bool)
        present[values] = True
        inverse = (np.cumsum(present) - 1)[values]
    else:
        inverse = np.unique(values, return_inverse=True)[1]
    return np.split(inverse.astype(I64), np.cumsum(sizes)[:-1])


def _lexsort(keys: list[np.ndarray]) -> np.ndarray:
    """The order that sorts by `keys[0]`, then `keys[1]`, ...: one argsort of
    the keys packed into one integer where they fit, else np.lexsort."""
    packed, bound = np.zeros(len(keys[0]), I64), 1
    for k in keys:
        if len(k) and k.min() < 0:
            break
        size = int(k.max(initial=0)) + 1
        bound *= size
        if bound >= 1 << 62:
            break
        packed = packed * size + k
    else:
        return np.argsort(packed, kind="stable")
    return np.lexsort(tuple(reversed(keys)))


def verify_arrays(program: snac.ProgramOpBase, phases: dict[str, PhaseState], calls: int,
                  kinds: list[str]) -> None:
    """The obligations for every rank, `calls` calls in a row; raises
    ProtocolViolation, Deadlock, SnacExecutionError, or Unsupported for a
    program to check per item."""
    flat = _Flattener(program, phases, kinds)
    world = program.world_size
    _coverage(program, phases, flat.arrays)
    epoch = prev = 0
    for c in range(calls):
        advances = flat.call(c, epoch, prev)
        if (advances != advances[0]).any():
            detail = ", ".join(f"rank {r}: {a}" for r, a in enumerate(advances))
            raise ProtocolViolation(program, "epochs advance differently on different ranks "
                                             f"(by {detail}) at epoch {epoch}; every rank must advance by the "
                                             "global maximum")
        prev, epoch = epoch, epoch + int(advances[0])
    _Checks(flat, world, calls).run()


def _coverage(program: snac.ProgramOpBase, phases: dict[str, PhaseState], arrays: dict[str, _PhaseArrays]) -> None:
    """obligations._check_coverage over every group at once: each rank's
    output written once a call, by its groups, exactly where its destination
    slices are; each group reading all the slices of its name (a reduction)
    or one (a copy)."""
    world = program.world_size
    rank, lo, hi, phase = [], [], [], []
    for i, (name, ph) in enumerate(phases.items()):
        a = arrays[name]
        wrong = np.nonzero(a.nsources != a.need)[0]
        if len(wrong):
            k = int(wrong[0])
            d = int(np.searchsorted(a.gbase, k, "right")) - 1
            g = ph.plan.groups[d][k - a.gbase[d]]
            raise ProtocolViolation(ph.op, f"rank {d}'s group {g.index} of phase '{ph.name}' reads "
                                           f"{a.nsources[k]} sources of slice {g.name}, expected {a.need[k]}")
        owner = np.repeat(np.arange(world, dtype=I64), a.gcount)
        some = a.dst_hi > a.dst_lo
        rank.append(owner[some])
        lo.append(a.dst_lo[some])
        hi.append(a.dst_hi[some])
        phase.append(np.full(int(some.sum()), i, I64))
    got = [np.concatenate(x) if x else np.zeros(0, I64) for x in (rank, lo, hi, phase)]
    o = _lexsort([got[0], got[1], got[2]])
    rank_g, lo_g, hi_g, phase_g = (x[o] for x in got)
    twice = np.nonzero((rank_g[1:] == rank_g[:-1]) & (lo_g[1:] < hi_g[:-1]))[0]
    if len(twice):
        k = int(twice[0])
        raise ProtocolViolation(list(phases.values())[phase_g[k + 1]].op,
                                f"rank {rank_g[k + 1]}'s output [{lo_g[k + 1]}, {hi_g[k + 1]}) is written twice in "
                                f"a call (also as part of [{lo_g[k]}, {hi_g[k]}))")
    want = [(d, sl.offset, sl.end) for ph in phases.values() for d in range(world) for sl in ph.plan.dst.slices(d)
            if sl.size]
    want_rank, want_lo, want_hi = (np.array(x, I64) for x in zip(*want)) if want else (np.zeros(0, I64),) * 3
    have, expected = _unions(rank_g, lo_g, hi_g), _unions(want_rank, want_lo, want_hi)
    if len(have[0]) == len(expected[0]) and all((x == y).all() for x, y in zip(have, expected)):
        return
    for d in range(world):
        mine = [list(zip(x[r == d].tolist(), y[r == d].tolist())) for r, x, y in (have, expected)]
        if mine[0] != mine[1]:
            raise ProtocolViolation(program, f"rank {d}'s output is not written exactly where its destination "
                                             f"slices are: written {mine[0]}, expected {mine[1]}")


def _unions(rank: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each rank's ranges [lo, hi) merged where they overlap or touch: (rank, lo, hi), sorted."""
    o = _lexsort([rank, lo, hi])
    rank, lo, hi = rank[o], lo[o], hi[o]
    span = int(hi.max(initial=0)) + 1
    reach = np.maximum.accumulate(rank * span + hi) if len(hi) else hi
    start = np.ones(len(lo), bool)
    start[1:] = (rank[1:] != rank[:-1]) | (rank[1:] * span + lo[1:] > reach[:-1])
    first = np.nonzero(start)[0]
    ends = np.append(first[1:], len(lo)) - 1
    return rank[first], lo[first], reach[ends] - rank[first] * span if len(first) else hi[first]


class _Checks:
    def __init__(self, flat: _Flattener, world: int, calls: int):
        self.flat, self.world, self.calls = flat, world, calls
        steps = flat.steps.join()
        depth = max((len(c) for c in flat.cols), default=0)
        cols = [np.concatenate([c[k] if k < len(c) else np.zeros(len(c[0]), I64) for c in flat.cols])
                if flat.cols else np.zeros(0, I64) for k in range(depth)]
        nroles = len(flat.kinds)
        who = steps["rank"] * nroles + steps["role"]
        # Steps by role, then call, then program order; `at` renumbers events' steps.
        order = _lexsort([who, steps["call"]] + cols)
        at = np.empty(len(order), I64)
        at[order] = np.arange(len(order), dtype=I64)
        self.who, self.call, self.op = who[order], steps["call"][order], steps["op"][order]
        self.nroles = nroles
        self.nwho = world * nroles
        self.start = np.searchsorted(self.who, np.arange(self.nwho + 1, dtype=I64))
        self.pos = np.arange(len(order), dtype=I64) - self.start[self.who]
        self.conds, self.stores = flat.conds.join(), flat.stores.join()
        self.reads, self.writes = flat.reads.join(), flat.writes.join()
        for events in (self.conds, self.stores, self.reads, self.writes):
            events["step"] = at[events["step"]]
        if len(self.stores["value"]) and self.stores["value"].min() < 0:
            raise Unsupported("a negative flag value")

    def role(self, s: int) -> str:
        w = int(self.who[s])
        return f"rank {w // self.nroles} ({self.flat.kinds[w % self.nroles]})"

    def opof(self, s: int) -> Operation:
        return self.flat.ops[int(self.op[s])]

    def run(self) -> None:
        self._grow()
        self._tags()
        self._reads_after_writes()
        self._writes_after_reads()
        self._fixpoint()

    # -- stores, and which of them a wait relies on ------------------------
    def _grow(self) -> None:
        """Each role's stores to a slot, in program order, never fall; then
        the stores grouped by (slot, role) for `covered`."""
        st = self.stores
        o = _lexsort([st["key"], st["step"]])
        key, step, value = st["key"][o], st["step"][o], st["value"][o]
        who = self.who[step]
        same = (key[1:] == key[:-1]) & (who[1:] == who[:-1])
        fall = np.nonzero(same & (value[1:] < value[:-1]))[0]
        if len(fall):
            k = fall[np.argmin(step[fall + 1])]
            s = int(step[k + 1])
            raise ProtocolViolation(self.opof(s), f"rank {self.who[s] // self.nroles} stores {value[k + 1]} into "
                                                  f"{key_text(self.flat.decode(int(key[k + 1])))}, which it set to "
                                                  f"{value[k]} before: flags must only grow")
        new = np.ones(len(key), bool)
        new[1:] = ~same
        gid = np.cumsum(new) - 1
        self.span = int(value.max()) + 2 if len(value) else 2
        self.sorted_stores = gid * self.span + value
        self.store_gid, self.store_pos = gid, self.pos[step]
        firsts = np.nonzero(new)[0]
        self.group_key, self.group_who = key[firsts], who[firsts]

    def covered(self, key: np.ndarray, need: np.ndarray, who: np.ndarray, after: np.ndarray) -> np.ndarray:
        """Per query: whether every store reaching `need` at `key` is by role
        `who`, at or past position `after`."""
        lo = np.searchsorted(self.group_key, key, "left")
        hi = np.searchsorted(self.group_key, key, "right")
        q, within = _expand(hi - lo)
        g = lo[q] + within
        i = np.searchsorted(self.sorted_stores, g * self.span + np.clip(need[q], 0, self.span - 1), "left")
        i_ok = np.minimum(i, len(self.sorted_stores) - 1)
        reaches = (i < len(self.sorted_stores)) & (self.store_gid[i_ok] == g)
        bad = reaches & ((self.group_who[g] != who[q]) | (self.store_pos[i_ok] < after[q]))
        return np.bincount(q[bad], minlength=len(key)) == 0

    # -- reads and writes ----------------------------------------------------
    def _tags(self) -> None:
        """Each write's, read's and protected read's (location, tag) as one number."""
        c, r, w = self.conds, self.reads, self.writes
        prot = np.nonzero(c["ploc"] >= 0)[0]
        self.prot = prot
        fl = self.flat
        span = int(max((e["tepoch"].max(initial=0) for e in (w, r)), default=0))
        span = max(span, int(c["tepoch"][prot].max(initial=0))) + 1
        if min(int(e["tepoch"].min(initial=0)) for e in (w, r, {"tepoch": c["tepoch"][prot]})) < 0:
            raise Unsupported("a negative epoch in a tag")

        def tag(e: dict, at=slice(None)) -> np.ndarray:
            return ((e["tph"][at] * fl.world + e["trank"][at]) * fl.max_units + e["tunit"][at]) * span + e["tepoch"][at]
        locs = _dense(w["loc"], r["loc"], c["ploc"][prot])
        tags = _dense(tag(w), tag(r), tag(c, prot))
        ntags = int(max(t.max(initial=0) for t in tags)) + 1
        self.wtag, self.rtag, self.ctag = (loc * ntags + t for loc, t in zip(locs, tags))
        self.wloc = locs[0]

    def _read_text(self, k: int) -> str:
        r = self.reads
        return (f"{self.role(int(r['step'][k]))} reads {key_text(self.flat.decode(int(r['loc'][k])))}")

    def _reads_after_writes(self) -> None:
        r, w, c = self.reads, self.writes, self.conds
        # The last write of each (location, tag).
        o = _lexsort([self.wtag, w["step"]])
        wt, ws = self.wtag[o], w["step"][o]
        last = np.ones(len(wt), bool)
        last[:-1] = wt[1:] != wt[:-1]
        wt, ws = wt[last], ws[last]
        i = np.minimum(np.searchsorted(wt, self.rtag), max(len(wt) - 1, 0))
        found = (np.take(wt, i) == self.rtag) if len(wt) else np.zeros(len(self.rtag), bool)
        missing = np.nonzero(~found)[0]
        if len(missing):
            k = missing[np.argmin(r["step"][missing])]
            raise ProtocolViolation(self.opof(int(r["step"][k])), f"read before wait: {self._read_text(k)} "
                                    f"expecting unit {r['tunit'][k]} of epoch {r['tepoch'][k]} from rank "
                                    f"{r['trank'][k]}, which no step writes there")
        writer = ws[i]
        rs = r["step"]
        ok = self._earlier_call(writer, rs)
        # The reader's waits protecting that read, at or before it.
        pstep = c["step"][self.prot]
        pw = self.who[pstep]
        tags = int(max(self.ctag.max(initial=0), self.rtag.max(initial=0))) + 1
        pgroup, rgroup = _dense(pw * tags + self.ctag, self.who[rs] * tags + self.rtag)
        n = len(self.who) + 1
        o = np.argsort(pgroup * n + pstep, kind="stable")
        sorted_key = pgroup[o] * n + pstep[o]
        need_check = np.nonzero(~ok)[0]
        lo = np.searchsorted(sorted_key, rgroup[need_check] * n, "left")
        hi = np.searchsorted(sorted_key, rgroup[need_check] * n + rs[need_check], "right")
        q, within = _expand(hi - lo)
        cond = self.prot[o[lo[q] + within]]
        good = self.covered(c["key"][cond], c["need"][cond], self.who[writer[need_check][q]],
                            self.pos[writer[need_check][q]])
        covered_reads = np.bincount(q[good], minlength=len(need_check)) > 0
        bad = need_check[~covered_reads]
        if len(bad):
            k = bad[np.argmin(rs[bad])]
            raise ProtocolViolation(self.opof(int(rs[k])), f"race: {self._read_text(k)} (unit {r['tunit'][k]}, "
                                    f"epoch {r['tepoch'][k]}) without waiting for a signal stored after its write")

    def _earlier_call(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Whether step `a` is in an earlier call of the same rank than step `b`."""
        return (self.who[a] // self.nroles == self.who[b] // self.nroles) & (self.call[a] < self.call[b])

    def _writes_after_reads(self) -> None:
        r, w, c = self.reads, self.writes, self.conds
        o = _lexsort([self.wloc, w["step"]])
        loc, tag, step = self.wloc[o], self.wtag[o], w["step"][o]
        pair = np.nonzero(loc[1:] == loc[:-1])[0]
        old, new = tag[pair], step[pair + 1]
        # The reads of each overwritten (location, tag).
        ro = np.argsort(self.rtag, kind="stable")
        rt = self.rtag[ro]
        lo, hi = np.searchsorted(rt, old, "left"), np.searchsorted(rt, old, "right")
        p, within = _expand(hi - lo)
        reader = r["step"][ro[lo[p] + within]]
        writer = new[p]
        ok = self._earlier_call(reader, writer)
        todo = np.nonzero(~ok)[0]
        reader, writer, p = reader[todo], writer[todo], p[todo]
        # The writer's earlier waits on slots the reader's rank stores to: per
        # slot, the largest value awaited before the write is the one to try
        # (`covered` only gains from a larger value).
        cw = self.who[c["step"]] * self.world + c["writer"]
        (slot,) = _dense(c["key"])
        co = _lexsort([cw, slot, c["step"]])
        cw_s, slot_s, step_s, need_s = cw[co], slot[co], c["step"][co], c["need"][co]
        start = np.ones(len(co), bool)
        start[1:] = (cw_s[1:] != cw_s[:-1]) | (slot_s[1:] != slot_s[:-1])
        gid = np.cumsum(start) - 1
        firsts = np.nonzero(start)[0]
        low = int(need_s.min(initial=0))
        span = int(need_s.max(initial=0)) - low + 1
        most = np.maximum.accumulate(gid * span + (need_s - low)) - gid * span + low if len(co) else need_s
        want = self.who[writer] * self.world + self.who[reader] // self.nroles
        glo, ghi = np.searchsorted(cw_s[firsts], want, "left"), np.searchsorted(cw_s[firsts], want, "right")
        q, within = _expand(ghi - glo)
        g = glo[q] + within
        n = len(self.who) + 1
        i = np.searchsorted(gid * n + step_s, g * n + writer[q], "left") - 1
        i_ok = np.maximum(i, 0)
        valid = (i >= 0) & (gid[i_ok] == g)
        q, i = q[valid], i[valid]
        good = self.covered(c["key"][co][i], most[i], self.who[reader[q]], self.pos[reader[q]])
        fine = np.bincount(q[good], minlength=len(todo)) > 0
        bad = np.nonzero(~fine)[0]
        if len(bad):
            k = bad[np.argmin(writer[bad])]
            s, rd = int(writer[k]), int(reader[k])
            i = o[pair[p[k]] + 1]
            j = o[pair[p[k]]]
            raise ProtocolViolation(self.opof(s), f"reused too early: {self.role(s)} overwrites "
                                    f"{key_text(self.flat.decode(int(w['loc'][i])))} with unit {w['tunit'][i]} of "
                                    f"epoch {w['tepoch'][i]} while {self.role(rd)} may still read unit "
                                    f"{w['tunit'][j]} of epoch {w['tepoch'][j]} from it (no acknowledgement "
                                    "orders the read before this write)")

    # -- deadlock freedom -------------------------------------------------------
    def _fixpoint(self) -> None:
        """In rounds, over the roles that may move: each checks its waits from
        the first not yet met, WINDOW at a time, moves to the first unmet one
        (or its call's end) and applies the stores of the steps it passed;
        a role moves again when a slot it is blocked on is stored to, when its
        rank enters the next call, or when its window was all met."""
        c, st = self.conds, self.stores
        ckey, skey = _dense(c["key"], st["key"])
        nkeys = int(max(ckey.max(initial=-1), skey.max(initial=-1))) + 1
        nwho, nroles, calls = self.nwho, self.nroles, self.calls
        # Conds and stores by role, then position.
        co = np.argsort(c["step"], kind="stable")
        so = np.argsort(st["step"], kind="stable")
        cstep, ckey_s, need = c["step"][co], ckey[co], c["need"][co]
        cpos, sstep = self.pos[cstep], st["step"][so]
        skey_s, svalue = skey[so], st["value"][so]
        cend = np.searchsorted(self.who[cstep], np.arange(1, nwho + 1, dtype=I64))
        stride = len(self.who) + 1
        spos_key = self.who[sstep] * stride + self.pos[sstep]
        per_call = np.bincount(self.who * calls + self.call, minlength=nwho * calls).reshape(nwho, calls)
        ends = np.cumsum(per_call, axis=1)  # where each role's call k ends
        total = ends[:, -1]
        rank_of = np.arange(nwho) // nroles
        call = np.zeros(self.world, I64)
        pc = np.zeros(nwho, I64)
        cptr = np.concatenate(([0], cend[:-1])).astype(I64)
        sptr = np.searchsorted(spos_key, np.arange(nwho, dtype=I64) * stride)
        value = np.zeros(nkeys, I64)
        stamp = np.full(nkeys, -1, I64)  # the round a slot was last stored to
        blocked_on = np.full(nwho, -1, I64)  # the slot of each role's first unmet wait
        window = np.arange(WINDOW, dtype=I64)
        last = max(len(ckey_s) - 1, 0)
        active, rnd = np.arange(nwho, dtype=I64), 0
        while len(active):
            a = active
            idx = cptr[a, None] + window[None, :]
            end = cend[a]
            idx_ok = np.minimum(idx, last)
            unmet = (idx < end[:, None]) & (value[ckey_s[idx_ok]] < need[idx_ok]) if len(ckey_s) else \
                np.zeros(idx.shape, bool)
            some = unmet.any(axis=1)
            first = np.where(some, cptr[a] + unmet.argmax(axis=1), np.minimum(cptr[a] + WINDOW, end))
            block = np.where(first < end, cpos[np.minimum(first, last)] if len(cpos) else 0, total[a])
            limit = ends[a, call[rank_of[a]]]
            new = np.minimum(block, limit)
            more = ~some & (first < end) & (block < limit)
            blocked_on[a] = np.where(some, ckey_s[np.minimum(first, last)] if len(ckey_s) else -1, -1)
            cptr[a] = first
            upto = np.searchsorted(spos_key, a * stride + new)
            q, within = _expand(upto - sptr[a])
            at = sptr[a][q] + within
            np.maximum.at(value, skey_s[at], svalue[at])
            stamp[skey_s[at]] = rnd
            sptr[a], pc[a] = upto, new
            finished = (pc == ends[np.arange(nwho), call[rank_of]]).reshape(self.world, nroles).all(axis=1) \
                & (call < calls - 1)
            call += finished
            woken = (blocked_on >= 0) & (stamp[np.maximum(blocked_on, 0)] == rnd)
            woken |= finished[rank_of]
            woken[a[more]] = True
            active, rnd = np.nonzero(woken)[0], rnd + 1
        # Roles at the end of their call wait for their rank's others, not on a slot.
        stuck = np.nonzero(pc < ends[np.arange(nwho), call[rank_of]])[0]
        if len(stuck):
            self._deadlock(stuck, pc, value, ckey, skey)

    def _deadlock(self, stuck, pc, value, ckey, skey) -> None:
        c = self.conds
        stored = set(skey.tolist())
        stuck_ranks = {int(w) // self.nroles for w in stuck}
        at_pc = self.start[stuck] + pc[stuck]
        lines, first = [], None
        for w, s in zip(stuck.tolist(), at_pc.tolist()):
            for k in np.nonzero(c["step"] == s)[0].tolist():
                have, need = int(value[ckey[k]]), int(c["need"][k])
                if have >= need:
                    continue
                key = self.flat.decode(int(c["key"][k]))
                writer = int(c["writer"][k])
                if first is None:
                    first = (s, key, need, have)
                if int(ckey[k]) not in stored:
                    why = f"no step of any rank stores to {key_text(key)}"
                elif writer not in stuck_ranks:
                    why = f"rank {writer} finished having stored {have}"
                else:
                    continue
                lines.append(f"missing notify: {self.role(s)} waits for {key_text(key)} >= {need}, but {why}")
        if not lines:
            assert first is not None
            s, key, need, have = first
            lines.append(f"deadlock: cycle of waits: {self.role(s)} waiting for {key_text(key)} >= {need} "
                         f"(has {have}), and {len(stuck) - 1} more roles blocked")
        more = f" (and {len(lines) - 1} more blocked waits)" if len(lines) > 1 else ""
        raise Deadlock(self.flat.program, f"{lines[0]}{more}")
