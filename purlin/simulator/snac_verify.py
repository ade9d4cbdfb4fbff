"""`snac-verify`: prove each snac.program's protocol for its world size.

By default it checks the protocol's obligations for every rank, channel by
channel, for three calls in a row (so staging halves are reused), and
deadlock freedom from a schedule-independent fixpoint
(purlin.simulator.obligations says why that covers every rank and every
interleaving; every rank at once as numpy arrays, or item by item for the
forms of program purlin.simulator.obligation_arrays lists); a dynamic program
with each sample of counts. With
`exhaustive=true`, and for programs whose peers read or write the callers'
buffers in place (direct phases, or input and output one buffer: the
obligations do not cover those accesses yet), it runs the program on every
rank without data under `seeds` schedules instead. Either way a dynamic program is also run with
counts that change from call to call. It fails on a missing notify, a read
before its wait, a half rewritten while read, ranks whose epochs advance
differently, or a cycle of waits.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from purlin.snac.dialect import ProgramOpBase
from purlin.simulator.snac_machine import SnacExecutionError, sample_counts, verify_changing_counts, verify_program
from purlin.simulator.obligations import touches_callers_buffers, verify_obligations


@dataclass(frozen=True)
class SnacVerifyPass(ModulePass):
    name = "snac-verify"

    calls: int = 3
    seeds: int = 3
    exhaustive: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.calls < 1 or self.seeds < 1:
            raise PassFailedException("snac-verify: calls and seeds must be at least 1")
        for program in op.walk():
            if not isinstance(program, ProgramOpBase):
                continue
            for counts in sample_counts(program):
                try:
                    if self.exhaustive or touches_callers_buffers(program):
                        verify_program(program, self.calls, range(self.seeds), counts)
                    else:
                        verify_obligations(program, self.calls, counts)
                except SnacExecutionError as e:
                    where = "" if counts is None else f" (with counts {counts})"
                    raise PassFailedException(e.within(f"snac-verify{where}")) from None
            try:
                verify_changing_counts(program, range(self.seeds))
            except SnacExecutionError as e:
                raise PassFailedException(e.within("snac-verify (counts changing from call to call)")) from None
