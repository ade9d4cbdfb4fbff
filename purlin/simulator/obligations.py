"""snac-verify without the interleaving search: the protocol's obligations,
checked per rank and per channel, and deadlock freedom from a fixpoint.

Why this covers every rank and every schedule
---------------------------------------------
A program is rank-generic; what a rank does in a call is fixed by its phase
plans and its epoch, never by what its peers do or when (loop bounds, units,
groups, flag values and stores are all functions of the rank and the epoch,
and every rank advances its epoch by the same amount, which is checked). So
each rank's roles are first written out as the steps they take for `calls`
calls in a row ("flattened"), once per rank, each from its own plan: a bug
that only rank 0, the last rank or odd ranks have is in that rank's steps.
Then, for every rank and every channel (a signal slot, or a staging slot or
window region):

- reads are ordered after their writes: every read of a unit in staging or a
  window follows, in its role, a wait on a slot whose every store reaching
  the awaited value comes after the write of that unit in the storing role
  (a notify after its stage, a put carrying its own data);
- writes are ordered after the reads they overwrite: before a role writes a
  location again, it waited on a slot that each reader of the previous
  contents stores to, with a value reached only after that read (the ack or
  finish after the consume), which is how slots are reused only after
  reclaim and halves only after the peers finished them;
- waits and stores are acquire and release (or fenced), so that those
  orders carry the data, and flags only grow;
- every element of every rank's output is written exactly once a call, by
  the groups and pushes of its destination slices; a group reads every
  slice of its name (a reduction is complete) or one (a copy); a consume's
  token is that of the wait for its own group;
- every rank advances its epoch by the same amount.

Each is a statement about two steps of two roles and the program order of
one role: it holds in every interleaving or in none. Deadlock freedom comes
from a fixpoint: waits are >= on flags that only grow, so a step that can
complete once its role's earlier steps and the stores it waits for have
completed stays able to; the least set of steps closed under that rule is
what every maximal schedule completes. It is computed by running each role
as far as it can, waking the roles that wait on a slot when it is stored to;
when the set is not every step, no schedule finishes, and the blocked waits
say why. The interleaving search (`snac-verify{exhaustive=true}`,
machine.verify_program) stays for programs whose steps it should see
interleaved, and the tests run both.

How: where every rank's plan is rank 0's rotated (_rotation_symmetric),
rank 0's steps alone stand for all (_Frame). Otherwise every rank's steps
are flattened and checked at once as arrays (purlin.simulator.obligation_arrays:
the same obligations, as joins and comparisons of sorted arrays); the forms
of program it does not describe (its docstring lists them) are flattened and
checked here item by item, which is also the reference the tests hold the
arrays to.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Sequence
from typing import Any

from xdsl.dialects import arith
from xdsl.ir import Block, Operation, SSAValue

from purlin.snac import dialect as snac
from purlin.snac.errors import Deadlock, ProtocolViolation, SnacExecutionError
from purlin.snac.index_eval import BINARY, IndexEvaluator, block_code
from purlin.simulator.obligation_arrays import Unsupported, key_text, verify_arrays
from purlin.snac.phase_binding import PhaseState, phase_states

# A step: (kind, op, phase, conds, stores, reads, writes, extra). conds:
# [(key, need, protects)], protects the (location, tag) read after the wait
# (or None); stores: [(key, value)]; reads / writes: [(location, tag)].
Step = tuple


class _Role:
    """The steps one role of one rank takes in a call."""

    __slots__ = ("steps",)

    def __init__(self) -> None:
        self.steps: list[Step] = []


class _Flattener(IndexEvaluator):
    """One rank's roles for one call, as the steps they take."""

    def __init__(self, program: snac.ProgramOpBase, phases: dict[str, PhaseState]):
        self.program, self.phases, self.world = program, phases, program.world_size
        self._epoch = (0, 0)
        self._code: dict[Block, list[tuple[str, Any, Any]]] = {}

    def epoch_values(self, rank: int) -> tuple[int, int]:
        return self._epoch

    def call(self, rank: int, epoch: int, prev: int, roles: list[_Role]) -> int:
        """Append rank `rank`'s steps of one call to its `roles`; the advance."""
        self._epoch = (epoch, prev)
        env: dict[SSAValue, Any] = {}
        advance, i = None, 0
        for op in self.program.body.block.ops:
            if isinstance(op, snac.RoleOpBase):
                self._block(op.body.block, env, rank, roles[i].steps, epoch)
                i += 1
            elif isinstance(op, snac.AdvanceOp):
                advance = env[op.amount]
            elif not isinstance(op, (snac.BufferOp, snac.SignalsOp, snac.PhaseOp)):
                if not self.eval_index(op, env, rank):
                    raise SnacExecutionError(op, f"the verifier cannot evaluate '{op.name}'")
        if advance is None:
            raise SnacExecutionError(self.program, "the program has no snac.advance")
        return advance

    def _block(self, block: Block, env: dict, rank: int, out: list[Step], epoch: int) -> None:
        for kind, op, how in self._compiled(block):
            if kind == "step":
                out.append(how(self, op, env, rank))
            elif kind == "arith":
                how(env)
            elif kind == "for":
                lb, ub, step, iv, body = how
                for i in range(env[lb], env[ub], env[step]):
                    env[iv] = i
                    self._block(body, env, rank, out, epoch)
            elif kind == "fence":
                out.append(("fence", op, None, (), (), (), (), None))
            elif not self.eval_index(op, env, rank):
                raise SnacExecutionError(op, f"the verifier cannot evaluate '{op.name}'")

    def _compiled(self, block: Block) -> list[tuple[str, Any, Any]]:
        """`block`'s ops, each classified once (reading operands through IRDL
        at every step costs more than the step)."""
        return block_code(self._code, block, self._classify)

    def _classify(self, op: Operation) -> tuple[str, Any, Any]:
        if isinstance(op, snac.FenceOpBase):
            return ("fence", op, None)
        if isinstance(op, snac.RoleOpBase):
            raise SnacExecutionError(op, "roles cannot nest")
        if isinstance(op, snac._PhaseStep) and not isinstance(op, (snac._PhaseQuery, snac.MaxUnitsOp)):
            kind = next((k for cls, k in _KINDS if isinstance(op, cls)), None)
            if kind is None:
                raise SnacExecutionError(op, f"the verifier cannot evaluate '{op.name}'")
            return ("step", _View(op, self._phase(op)), getattr(_Flattener, "_" + kind))
        if isinstance(op, arith.ConstantOp):
            result, value = op.result, op.value.value.data  # type: ignore[attr-defined]
            return ("arith", op, lambda env, r=result, v=value: env.__setitem__(r, v))
        if (fn := BINARY.get(type(op))) is not None:
            res, lhs, rhs = op.result, op.lhs, op.rhs  # type: ignore[attr-defined]
            return ("arith", op, lambda env, res=res, lhs=lhs, rhs=rhs, fn=fn:
                    env.__setitem__(res, fn(env[lhs], env[rhs])))
        return ("index", op, None)

    def _reclaim(self, op: Any, env: dict, rank: int) -> Step:
        ph = op.ph
        plan = ph.plan
        v = env.__getitem__
        u, epoch = v(op.unit), v(op.epoch)
        _item(op.real, ph, plan.units[rank], u, rank, "unit")
        if ph.moves == "push":
            need, readers = epoch + 1, sorted({d for d, _ in plan.destinations[rank][u]} - {rank})
        elif ph.staged and u >= ph.slots:
            need, readers = epoch + (u - ph.slots) + 1, plan.units[rank][u - ph.slots].consumers
        elif u == 0:
            need, readers = v(op.prev), [d for d in range(self.world) if d != rank]
        else:
            need, readers = 0, []
        return ("wait", op.real, ph, [(("sig", ph.free, rank, d), need, None) for d in readers], (), (), (), None)

    def _stage(self, op: Any, env: dict, rank: int) -> Step:
        ph = op.ph
        plan, name = ph.plan, ph.name
        v = env.__getitem__
        u, half = v(op.unit), v(op.half)
        _item(op.real, ph, plan.units[rank], u, rank, "unit")
        tag = (name, rank, u, self._epoch[0])
        return ("stage", op.real, ph, (), (), (), [(("stage", ph.buf, rank, half, u % ph.slots), tag)], None)

    def _put(self, op: Any, env: dict, rank: int) -> Step:
        ph = op.ph
        plan, name = ph.plan, ph.name
        v = env.__getitem__
        u, half, flag = v(op.unit), v(op.half), v(op.flag)
        unit = _item(op.real, ph, plan.units[rank], u, rank, "unit")
        tag = (name, rank, u, flag)
        locs = [("win", ph.buf, d, half, rank, u) for d in unit.consumers]
        return ("put", op.real, ph, (), [(loc, flag) for loc in locs], (), [(loc, tag) for loc in locs], None)

    def _push(self, op: Any, env: dict, rank: int) -> Step:
        ph = op.ph
        plan = ph.plan
        v = env.__getitem__
        u = v(op.unit)
        unit = _item(op.real, ph, plan.units[rank], u, rank, "unit")
        outs = [(("out", d), (off, off + unit.size)) for d, off in plan.destinations[rank][u]]
        return ("push", op.real, ph, (), (), (), outs, None)

    def _notify(self, op: Any, env: dict, rank: int) -> Step:
        ph = op.ph
        plan = ph.plan
        v = env.__getitem__
        unit = _item(op.real, ph, plan.units[rank], v(op.unit), rank, "unit")
        value = v(op.value)
        return ("notify", op.real, ph, (), [(("sig", ph.ready, d, rank), value) for d in unit.consumers], (), (), None)

    def _wait(self, op: Any, env: dict, rank: int) -> Step:
        ph = op.ph
        plan, name = ph.plan, ph.name
        v = env.__getitem__
        g, epoch = v(op.group), v(op.epoch)
        group = _item(op.real, ph, plan.groups[rank], g, rank, "group")
        env[op.token] = (name, g, rank)
        half = epoch % 2
        if ph.moves == "packets":
            conds = [(loc, epoch + 1, (loc, (name, s.rank, s.unit, epoch + 1)))
                     for s in group.remote for loc in [("win", ph.buf, rank, half, s.rank, s.unit)]]
        else:
            conds = [(("sig", ph.ready, rank, s.rank), epoch + s.unit + 1,
                      (("stage", ph.buf, s.rank, half, s.unit % ph.slots), (name, s.rank, s.unit, epoch))
                      if ph.staged else None) for s in group.remote]
        return ("wait", op.real, ph, conds, (), (), (), (name, g, rank))

    def _consume(self, op: Any, env: dict, rank: int) -> Step:
        ph = op.ph
        plan, name = ph.plan, ph.name
        v = env.__getitem__
        g, half = v(op.group), v(op.half)
        token = env[op.token]
        if token != (name, g, rank):
            raise ProtocolViolation(op.real, f"rank {rank} consumes group {g} of phase '{name}' with the token "
                                        f"of a wait for group {token[1]} of phase '{token[0]}'")
        group = _item(op.real, ph, plan.groups[rank], g, rank, "group")
        if ph.moves == "push" and group.remote:
            raise SnacExecutionError(
                op.real, f"rank {rank} consumes group {g} of phase '{name}', which its producers push: "
                "a direct push phase consumes only groups without remote sources")
        epoch = self._epoch[0]
        reads = []
        for s in group.sources:
            if s.unit is None or ph.direct:
                continue
            if ph.staged:
                reads.append((("stage", ph.buf, s.rank, half, s.unit % ph.slots), (name, s.rank, s.unit, epoch)))
            else:
                reads.append((("win", ph.buf, rank, half, s.rank, s.unit), (name, s.rank, s.unit, epoch + 1)))
        out = [(("out", rank), (group.dst_offset, group.dst_offset + group.size))]
        return ("consume", op.real, ph, (), (), reads, out, None)

    def _ack(self, op: Any, env: dict, rank: int) -> Step:
        ph = op.ph
        plan = ph.plan
        v = env.__getitem__
        g, epoch = v(op.group), v(op.epoch)
        group = _item(op.real, ph, plan.groups[rank], g, rank, "group")
        return ("ack", op.real, ph, (), [(("sig", ph.free, s.rank, rank), epoch + s.unit + 1) for s in group.remote],
                (), (), None)

    def _finish(self, op: Any, env: dict, rank: int) -> Step:
        ph = op.ph
        plan = ph.plan
        v = env.__getitem__
        value = v(op.value)
        peers = plan.senders(rank) if ph.moves == "pull" else [d for d in range(self.world) if d != rank]
        return ("finish", op.real, ph, (), [(("sig", ph.free, d, rank), value) for d in peers], (), (), None)

    def _grant(self, op: Any, env: dict, rank: int) -> Step:
        ph = op.ph
        plan = ph.plan
        v = env.__getitem__
        value = v(op.value)
        return ("grant", op.real, ph, (), [(("sig", ph.free, d, rank), value) for d in plan.senders(rank)], (), (), None)

    def _drain(self, op: Any, env: dict, rank: int) -> Step:
        ph = op.ph
        plan = ph.plan
        v = env.__getitem__
        value = v(op.value)
        return ("wait", op.real, ph, [(("sig", ph.free, rank, d), value, None) for d in plan.receivers(rank)],
                (), (), (), None)


class _View:
    """A protocol op whose operands are read once, then kept; `ph` its phase."""

    def __init__(self, op: Operation, ph: PhaseState):
        self.real, self.ph = op, ph

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.real, name)
        setattr(self, name, value)
        return value


# Each protocol op's step, by its base class (atom ops share snac's).
_KINDS = ((snac.ReclaimOpBase, "reclaim"), (snac.StageOpBase, "stage"), (snac.PutOpBase, "put"),
          (snac.PushOpBase, "push"), (snac.NotifyOpBase, "notify"), (snac.WaitOpBase, "wait"),
          (snac.ConsumeOpBase, "consume"), (snac.AckOpBase, "ack"), (snac.FinishOpBase, "finish"),
          (snac.GrantOpBase, "grant"), (snac.DrainOpBase, "drain"))


def _item(op: Operation, ph: PhaseState, items: Sequence, i: int, rank: int, what: str):
    if not 0 <= i < len(items):
        raise SnacExecutionError(op, f"rank {rank} has {len(items)} {what}s in phase '{ph.name}', no {what} {i}")
    return items[i]


def touches_callers_buffers(program: snac.ProgramOpBase) -> bool:
    """Whether ranks read or write each other's input or output in place
    (a direct phase), or a rank's output overwrites its input: accesses to
    the callers' buffers, which these obligations do not cover."""
    return program.input == program.output or any(
        isinstance(op, snac.PhaseOp) and op.transfer is not None for op in program.body.block.ops)


def verify_obligations(program: snac.ProgramOpBase, calls: int = 3, counts: Sequence | None = None,
                       arrays: bool = True) -> None:
    """Check `program`'s protocol for every rank, `calls` calls in a row, as
    the module docstring says: rank 0 alone under rotation symmetry, else
    every rank at once as arrays (purlin.simulator.obligation_arrays) where the
    program has a form they describe and `arrays`, else every rank item by
    item. Raises ProtocolViolation, Deadlock or SnacExecutionError."""
    world = program.world_size
    phases = phase_states(program, world, counts, shrink=True)
    _check_orders(program)
    symmetric = _rotation_symmetric(phases, world)
    kinds = [op.kind.data.value for op in program.body.block.ops if isinstance(op, snac.RoleOpBase)]
    if arrays and not symmetric:
        try:
            return verify_arrays(program, phases, calls, kinds)
        except Unsupported:
            pass  # checked item by item below
    _check_coverage(program, phases)
    ranks = [0] if symmetric else list(range(world))
    frame = _Frame(world, symmetric)
    flat = _Flattener(program, phases)
    seq: dict[tuple[int, int], list[Step]] = {(r, i): [] for r in ranks for i in range(len(kinds))}
    # Where each call's steps start in each role.
    starts: dict[tuple[int, int], list[int]] = {who: [] for who in seq}
    epoch = prev = 0
    for _ in range(calls):
        advances = []
        for r in ranks:
            roles = [_Role() for _ in kinds]
            advances.append(flat.call(r, epoch, prev, roles))
            for i, role in enumerate(roles):
                starts[(r, i)].append(len(seq[(r, i)]))
                seq[(r, i)] += role.steps
        if len(set(advances)) != 1:
            detail = ", ".join(f"rank {r}: {a}" for r, a in zip(ranks, advances))
            raise ProtocolViolation(program, "epochs advance differently on different ranks "
                                             f"(by {detail}) at epoch {epoch}; every rank must advance by the "
                                             "global maximum")
        prev, epoch = epoch, epoch + advances[0]
    _check_ordering(seq, starts, frame, kinds)
    _fixpoint(program, seq, starts, frame, kinds)


class _Frame:
    """How the checks name a channel. In full, every rank's steps are there
    and a key is itself. Under rotation symmetry (every rank's plan is rank
    0's with every peer r + k for r), only rank 0's steps are there: rank s's
    steps are rank 0's moved by s, so a key or a role is looked at where its
    writer is rank 0 (`canon`), and `moved` says by how much."""

    def __init__(self, world: int, symmetric: bool):
        self.world, self.symmetric = world, symmetric

    def writer(self, key: tuple) -> int:
        """The rank that stores the signal, or writes the location, `key`."""
        return key[4] if key[0] == "win" else key[2] if key[0] == "stage" else key[3]

    def canon(self, key: tuple) -> tuple[tuple, int]:
        """`key` as rank 0 writes it, and the rank that writes it really."""
        w = self.writer(key)
        if not self.symmetric or w == 0:
            return key, w
        return _moved(key, -w, self.world), w

    def role(self, who: tuple[int, int], by: int) -> tuple[int, int]:
        return ((who[0] + by) % self.world, who[1]) if self.symmetric else who


def _moved(key: tuple, by: int, world: int) -> tuple:
    """`key` (or a tag) with every rank in it moved by `by`."""
    m = lambda r: (r + by) % world  # noqa: E731
    if key[0] == "stage":
        return key[:2] + (m(key[2]),) + key[3:]
    if key[0] == "win":
        return key[:2] + (m(key[2]), key[3], m(key[4]), key[5])
    return key[:2] + (m(key[2]), m(key[3]))


def _moved_tag(tag: tuple, by: int, world: int) -> tuple:
    return (tag[0], (tag[1] + by) % world) + tag[2:]


def _rotation_symmetric(phases: dict[str, PhaseState], world: int) -> bool:
    """Whether every rank's plan is rank 0's with every peer moved by the
    rank: its units, groups and the offsets they move, peers relative to it.
    Phases that move in place (their peers' orders come from senders and
    receivers) are checked in full."""
    if world == 1 or any(ph.direct for ph in phases.values()):
        return world == 1
    def signature(ph: PhaseState, r: int) -> tuple:
        plan = ph.plan
        units = tuple((u.size, u.src_offset, frozenset((d - r) % world for d in u.consumers))
                      for u in plan.units[r])
        groups = tuple((g.size, g.dst_offset, frozenset(((s.rank - r) % world, s.unit, s.offset)
                                                         for s in g.sources)) for g in plan.groups[r])
        return units, groups, plan.staged_groups(r), tuple(ph.window_offsets[r])
    for ph in phases.values():
        first = signature(ph, 0)
        if any(signature(ph, r) != first for r in range(1, world)):
            return False
    return True


def _check_orders(program: snac.ProgramOpBase) -> None:
    """Stores that publish are release, waits acquire, or a fence orders them."""
    packets = {op.sym_name.data for op in program.body.block.ops
               if isinstance(op, snac.PhaseOp) and op.moves() == "packets"}
    for op in program.body.walk():
        if not isinstance(op, snac._Signalling) or op.order.data != snac.MemoryOrder.RELAXED:
            continue
        if isinstance(op, snac.PutOpBase) or (isinstance(op, snac.WaitOpBase) and op.phase.string_value() in packets):
            continue  # a packet's data travels in the store of its flag
        block = op.parent_block()
        assert block is not None
        ops = list(block.ops)
        at = ops.index(op)
        loads = isinstance(op, snac._Await)
        near = ops[at + 1:] if loads else ops[:at]
        if not any(isinstance(o, snac.FenceOpBase) for o in near):
            what = "wait" if loads else "store"
            raise ProtocolViolation(op, f"race: '{op.name}' is a relaxed {what} with no fence "
                                        f"{'after' if loads else 'before'} it in its block, so it "
                                        f"{'orders no later read' if loads else 'publishes no earlier write'}")


def _check_coverage(program: snac.ProgramOpBase, phases: dict[str, PhaseState]) -> None:
    """Each rank's output, every element of its destination slices, written
    once a call: by its groups (in a pushed phase, by its senders' pushes),
    each reading all the slices of its name (a reduction) or one (a copy)."""
    world = program.world_size
    written: dict[int, list[tuple[int, int, Operation]]] = {}
    for ph in phases.values():
        for d in range(world):
            for g in ph.plan.groups[d]:
                # A reduction reads every slice of the name, a copy one.
                need = ph.plan.src.holder_count(g.name) if ph.reduce is not None else 1
                if len(g.sources) != need:
                    raise ProtocolViolation(ph.op, f"rank {d}'s group {g.index} of phase '{ph.name}' reads "
                                                   f"{len(g.sources)} sources of slice {g.name}, expected {need}")
                if g.size and not (ph.moves == "push" and g.remote):
                    written.setdefault(d, []).append((g.dst_offset, g.dst_offset + g.size, ph.op))
            if ph.moves == "push":
                for u, dests in zip(ph.plan.units[d], ph.plan.destinations[d]):
                    for e, off in dests:
                        if u.size:
                            written.setdefault(e, []).append((off, off + u.size, ph.op))
    for d in range(world):
        want = [(s.offset, s.end) for ph in phases.values() for s in ph.plan.dst.slices(d) if s.size]
        got = sorted(written.get(d, []), key=lambda x: (x[0], x[1]))
        for (alo, ahi, _), (blo, bhi, op) in zip(got, got[1:]):
            if blo < ahi:
                raise ProtocolViolation(op, f"rank {d}'s output [{blo}, {bhi}) is written twice in a call "
                                            f"(also as part of [{alo}, {ahi}))")
        have = _union([(lo, hi) for lo, hi, _ in got])
        if _union(want) != have:
            raise ProtocolViolation(program, f"rank {d}'s output is not written exactly where its destination "
                                             f"slices are: written {have}, expected {_union(want)}")


def _union(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _check_ordering(seq: dict[tuple[int, int], list[Step]], starts: dict[tuple[int, int], list[int]],
                    frame: _Frame, kinds: list[str]) -> None:
    """Reads after their writes, writes after the reads they overwrite (see
    above); a rank's calls follow one another, all its roles' steps of one
    call before any of the next."""
    world = frame.world
    _role = lambda who: f"rank {who[0]} ({kinds[who[1]]})"  # noqa: E731

    def earlier_call(a: tuple[int, int], p: int, b: tuple[int, int], q: int) -> bool:
        """Whether step `p` of role `a` is in an earlier call of the same rank than step `q` of `b`."""
        if a[0] != b[0]:
            return False
        call = lambda who, at: bisect_right(starts[(0 if frame.symmetric else who[0], who[1])], at)  # noqa: E731
        return call(a, p) < call(b, q)
    stores: dict[Hashable, dict[tuple[int, int], tuple[list[int], list[int]]]] = {}
    for who, steps in seq.items():
        for p, step in enumerate(steps):
            for key, value in step[4]:
                values, positions = stores.setdefault(key, {}).setdefault(who, ([], []))
                if values and value < values[-1]:
                    raise ProtocolViolation(step[1], f"rank {who[0]} stores {value} into {key_text(key)}, which it "
                                                     f"set to {values[-1]} before: flags must only grow")
                values.append(value)
                positions.append(p)

    def covered(key: tuple, need: int, who: tuple[int, int], after: int) -> bool:
        """Whether every store reaching `need` at `key` is by role `who`, at or past position `after`."""
        if frame.symmetric:
            key, by = frame.canon(key)
            who = frame.role(who, -by)
        for storer, (values, positions) in stores.get(key, {}).items():
            i = bisect_left(values, need)
            if i < len(values) and (storer != who or positions[i] < after):
                return False
        return True

    writes: dict[Hashable, list[tuple[tuple, tuple[int, int], int]]] = {}
    for who, steps in seq.items():
        for p, step in enumerate(steps):
            for loc, tag in step[6]:
                if loc[0] != "out":
                    writes.setdefault(loc, []).append((tag, who, p))
    written_at = {(loc, tag): (who, p) for loc, ws in writes.items() for tag, who, p in ws}
    # Reads by where the location is written (canonical), the reader moved with it.
    reads: dict[Hashable, list[tuple[tuple, tuple[int, int], int]]] = {}
    waits_by_storer: dict[tuple[int, int], dict[int, list[tuple[int, tuple, int]]]] = {}
    for who, steps in seq.items():
        mine = waits_by_storer[who] = {}
        protecting: dict[tuple, list[tuple[tuple, int]]] = {}
        for p, step in enumerate(steps):
            for key, need, protects in step[3]:
                mine.setdefault(frame.writer(key), []).append((p, key, need))
                if protects is not None:
                    protecting.setdefault(protects, []).append((key, need))
            for loc, tag in step[5]:
                canon, by = frame.canon(loc)
                canon_tag = _moved_tag(tag, -by, world) if frame.symmetric else tag
                src = written_at.get((canon, canon_tag))
                if src is None:
                    raise ProtocolViolation(step[1], f"read before wait: {_role(who)} reads {key_text(loc)} expecting "
                                                     f"unit {tag[2]} of epoch {tag[3]} from rank {tag[1]}, which no "
                                                     "step writes there")
                writer = frame.role(src[0], by)
                if not earlier_call(writer, src[1], who, p) and not any(
                        covered(key, need, writer, src[1]) for key, need in protecting.get((loc, tag), [])):
                    raise ProtocolViolation(step[1], f"race: {_role(who)} reads {key_text(loc)} (unit {tag[2]}, epoch "
                                                     f"{tag[3]}) without waiting for a signal stored after its write")
                reads.setdefault(canon, []).append((canon_tag, frame.role(who, -by), p))
    for loc, ws in writes.items():
        by_tag: dict[tuple, list[tuple[tuple[int, int], int]]] = {}
        for tag, who, p in reads.get(loc, []):
            by_tag.setdefault(tag, []).append((who, p))
        for (old, _, _), (new, who, p) in zip(ws, ws[1:]):
            for reader, q in by_tag.get(old, []):
                if not earlier_call(reader, q, who, p) and not any(at < p and covered(key, need, reader, q)
                           for at, key, need in waits_by_storer[who].get(reader[0], ())):
                    raise ProtocolViolation(seq[who][p][1], f"reused too early: {_role(who)} overwrites "
                                                            f"{key_text(loc)} with unit {new[2]} of epoch {new[3]} "
                                                            f"while {_role(reader)} "
                                                            f"may still read unit {old[2]} of epoch {old[3]} from it "
                                                            "(no acknowledgement orders the read before this write)")


def _fixpoint(program: snac.ProgramOpBase, seq: dict[tuple[int, int], list[Step]],
              starts: dict[tuple[int, int], list[int]], frame: _Frame, kinds: list[str]) -> None:
    """Run every role as far as it can; a rank's next call starts when its
    roles finished it. Under rotation symmetry rank 0 stands for every rank:
    a wait on a slot rank s stores is met when rank 0 made the same store
    moved by -s."""
    value: dict[Hashable, int] = {}
    watchers: dict[Hashable, list[tuple[int, int]]] = {}
    pc = {who: 0 for who in seq}
    call = {who: 0 for who in seq}
    ranks = sorted({who[0] for who in seq})
    roles_of = {r: [who for who in seq if who[0] == r] for r in ranks}
    done_in_call: dict[int, int] = {r: 0 for r in ranks}
    ncalls = len(next(iter(starts.values()))) if starts else 0

    def end_of_call(who: tuple[int, int]) -> int:
        k = call[who] + 1
        return starts[who][k] if k < ncalls else len(seq[who])

    symmetric = frame.symmetric  # otherwise a key is its own canonical form
    ready = [who for who in seq]
    while ready:
        who = ready.pop()
        steps = seq[who]
        end = end_of_call(who)
        while pc[who] < end:
            step = steps[pc[who]]
            blocked = None
            for key, need, _ in step[3]:
                canon = frame.canon(key)[0] if symmetric else key
                if value.get(canon, 0) < need:
                    blocked = canon
                    break
            if blocked is not None:
                watchers.setdefault(blocked, []).append(who)
                break
            for key, v in step[4]:
                canon = frame.canon(key)[0] if symmetric else key
                if v > value.get(canon, 0):
                    value[canon] = v
                if canon in watchers:
                    ready.extend(watchers.pop(canon))
            pc[who] += 1
        else:
            rank = who[0]
            done_in_call[rank] += 1
            if done_in_call[rank] == len(roles_of[rank]) and call[who] + 1 < ncalls:
                done_in_call[rank] = 0
                for other in roles_of[rank]:
                    call[other] += 1
                ready.extend(roles_of[rank])
    stuck = [who for who in seq if pc[who] < end_of_call(who)]
    if not stuck:
        return
    stored = {frame.canon(key)[0] for steps in seq.values() for step in steps for key, _ in step[4]}
    lines = []
    for who in stuck:
        for key, need, _ in seq[who][pc[who]][3]:
            canon, writer = frame.canon(key)
            have = value.get(canon, 0)
            if have >= need:
                continue
            if canon not in stored:
                why = f"no step of any rank stores to {key_text(key)}"
            elif not any(frame.role(w, writer)[0] == writer for w in stuck):
                why = f"rank {writer} finished having stored {have}"
            else:
                continue
            lines.append(f"missing notify: rank {who[0]} ({kinds[who[1]]}) waits for {key_text(key)} >= {need}, "
                         f"but {why}")
    if not lines:
        who = stuck[0]
        key, need, _ = next(c for c in seq[who][pc[who]][3] if value.get(frame.canon(c[0])[0], 0) < c[1])
        lines.append(f"deadlock: cycle of waits: rank {who[0]} ({kinds[who[1]]}) waiting for {key_text(key)} >= "
                     f"{need} (has {value.get(frame.canon(key)[0], 0)}), and {len(stuck) - 1} more roles blocked")
    more = f" (and {len(lines) - 1} more blocked waits)" if len(lines) > 1 else ""
    raise Deadlock(program, f"{lines[0]}{more}")
