"""What the snac machine raises when a program cannot run or breaks the protocol."""

from __future__ import annotations

from purlin.diagnostics import LocatedError


class SnacExecutionError(LocatedError):
    """The program cannot run as written (bad operands, out-of-range units)."""


class ProtocolViolation(SnacExecutionError):
    """A race, a stale read, or ranks that disagree on the epoch."""


class Deadlock(SnacExecutionError):
    """No role can make progress."""

