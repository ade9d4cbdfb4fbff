"""Each rank's memory handle exchanged over a torch.distributed group, as
the constructors of one-rank-per-process objects do: every rank makes its
object, the handles are gathered in rank order, every rank connects, and a
failure on any rank raises on every rank (each rank learns every outcome),
never leaving some ranks waiting for the rest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def gathered_by_rank(dist, group, rank: int, size: int, name: str, *payload) -> list[tuple]:
    """(rank, *payload) of every process of `group`, in rank order; refuses
    ranks claimed twice or missing."""
    # Gathered with their ranks, so a rank other than the group rank still connects in plan order.
    gathered: list = [None] * size
    dist.all_gather_object(gathered, (rank, *payload), group=group)
    ranks = sorted(g[0] for g in gathered)
    if ranks != list(range(size)):
        raise ValueError(f"{name}: the group's processes claim ranks {ranks}, expected each of 0..{size - 1} once")
    return sorted(gathered, key=lambda g: g[0])


def connected(dist, group, rank: int, size: int, name: str, what: str, make: Callable[[], Any]) -> Any:
    """make() on this rank (an object with ipc_handle() and connect(handles)),
    connected to every rank's; `what` names the objects in errors. Where any
    rank fails, every rank raises, naming each failure: this rank's own
    exception type where it failed, else RuntimeError."""
    impl, handle, own = None, b"", None
    try:
        impl = make()
        handle = impl.ipc_handle()
    except Exception as e:  # whatever it is, the peers must hear of it
        own = e
    gathered = gathered_by_rank(dist, group, rank, size, name, handle, _text(own))
    _raise_any(name, f"make their {what}", gathered, own)
    try:
        impl.connect([h for _, h, _ in gathered])
    except Exception as e:
        own = e
    _raise_any(name, f"map each other's {what}", gathered_by_rank(dist, group, rank, size, name, _text(own)), own)
    return impl


def _text(e: BaseException | None) -> str:
    return "" if e is None else str(e) or type(e).__name__


def _raise_any(name: str, what: str, outcomes: list[tuple], own: BaseException | None) -> None:
    why = [f"rank {o[0]}: {o[-1]}" for o in outcomes if o[-1]]
    if not why:
        return
    text = f"{name}: the ranks could not {what}: " + "; ".join(why)
    try:
        error = type(own)(text) if own is not None else RuntimeError(text)
    except TypeError:  # an exception type that takes more than a message
        error = RuntimeError(text)
    raise error from own
