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
  `output_extent(rank)` are what the instructions touch of that rank's,
  smaller on some ranks of the V collectives; only a `symmetric` plan's
  instructions name other ranks' user buffers, which then are addressable
  by every rank), and in symmetric memory each buffer
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

One process runs one rank: `RankPlan` is a rank's part of a plan (the header
every rank shares, and that rank's role programs), built without the other
ranks' (`build_rank_plan(kernel, r)`, `compile_rank_plan(..., rank=r)`); `Plan`
holds every rank's, for the simulator, the CPU backend and the tools. A plan
is the whole contract with the CPU backend; the CUDA backend launches the
kernel compiled from the same atom.kernel beside it (purlin.compile.Compiled).

Modules: `model` (constants, enums, records), `validate`, `binary` and
`json_form` (the two forms); this one holds `Plan` and `RankPlan` and
re-exports the rest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from purlin.plan import model
from purlin.plan.binary import BinaryForm
from purlin.plan.json_form import JsonForm
from purlin.plan.model import *  # noqa: F403 (re-exported: model.__all__)
from purlin.plan.model import VERSION, Instr, Op, PlanHeader, Space
from purlin.plan.validate import check_plan, check_rank_plan

__all__ = [*model.__all__, "Plan", "RankPlan", "decode", "from_json", "plans_from_json", "plans_to_json", "validate",
           "validate_rank"]


@dataclass
class Plan(PlanHeader, JsonForm, BinaryForm):
    # programs[rank][role] -> instructions
    programs: list[list[list[Instr]]] = field(default_factory=list)
    version: int = VERSION
    # The protocol orders every overwrite of an input slice after its reads
    # (the IR's input and output are one buffer): a rank may pass one buffer
    # as both. JSON carries it; the binary form, which the runtimes execute, does not need it.
    in_place: bool = False
    # Instructions read and write other ranks' inputs and outputs in place:
    # every rank's user buffers must be addressable by every rank.
    symmetric: bool = False

    def rank_plan(self, rank: int) -> RankPlan:
        """Rank `rank`'s part of this plan."""
        if not 0 <= rank < self.world:
            raise IndexError(f"rank {rank} is outside world {self.world}")
        return RankPlan(self.arch, self.world, self.dtype, self.input_elems, self.output_elems, self.advance,
                        self.threads, self.roles, self.buffers, self.signals, rank, self.programs[rank],
                        self.version, self.in_place, self.symmetric)

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
        # A symmetric plan's peers touch the rank's buffers too.
        for programs in self.programs if self.symmetric else [self.programs[rank]]:
            for body in programs:
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
                        if r is not None and r.space == space and r.rank == rank:
                            end = max(end, r.offset + i.elems)
        return end


@dataclass
class RankPlan(PlanHeader):
    """Rank `rank`'s part of a plan: the header every rank's part shares and
    `program[role]`, its instructions. `Plan.rank_plan(r)` is
    the same part cut from a whole plan."""

    rank: int
    program: list[list[Instr]]
    version: int = VERSION
    in_place: bool = False
    symmetric: bool = False

    @property
    def instructions(self) -> int:
        return sum(len(body) for body in self.program)


decode = Plan.decode
from_json = Plan.from_json


def validate(plan: Plan) -> None:
    """Raise PlanError unless every index, offset and size is inside what it names."""
    check_plan(plan, plan.programs, plan.symmetric)


def validate_rank(plan: RankPlan) -> None:
    """`validate` for one rank's part of a plan: the shared header and kernel,
    and that rank's instructions (naming other ranks only as peers)."""
    check_rank_plan(plan, plan.rank, plan.program, plan.symmetric)


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
