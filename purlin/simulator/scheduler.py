"""The seeded scheduler of simulated threads, for the snac machine's roles and
the plan machine's alike.

A task's steps are a generator: it yields None after a step, or a wait when it
cannot go on until that holds. A wait is a tuple whose first item says whether
it holds now; waits only ever become ready (flags and epochs only grow), so a
blocked task needs a look only when something it waits for was stored. The
scheduler picks a runnable task at random and runs it for a random burst:
the same seed gives the same interleaving.
"""

from __future__ import annotations

import random
from bisect import insort
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

# Most steps a task takes before the scheduler picks again.
MAX_BURST = 8


class Task:
    """A simulated thread: its steps, the wait it is blocked on, whether it finished."""

    def __init__(self, steps: Iterator[Any] | None = None):
        self.gen = steps
        self.pending: Any = None
        self.done = False


class Wakeups:
    """Which blocked tasks the scheduler looks at again after a burst. This
    one looks at all of them; a subclass that knows what each wait depends on
    names only those that a store may have readied."""

    def blocked(self, task: Task) -> None:
        """`task` blocks on (or still waits for) its pending wait."""

    def unblocked(self, task: Task) -> None:
        """`task`'s wait holds: it is runnable again."""

    def woken(self, blocked: dict[int, Task]) -> Iterable[Task]:
        """The tasks to look at again; `blocked` are all blocked ones, by id."""
        return list(blocked.values())


def run(tasks: Sequence[Task], rng: random.Random, deadlock: Callable[[list[Task]], Exception],
        wakeups: Wakeups | None = None) -> None:
    """Run `tasks` until all finish; raise `deadlock(live tasks)` when none can move.

    The runnable tasks are kept in task order, as a scan of all live ones
    would list them, so the choice depends only on the seed and the program.
    """
    wakeups = wakeups or Wakeups()
    live = list(tasks)
    position = {id(t): i for i, t in enumerate(tasks)}
    runnable = list(tasks)
    blocked: dict[int, Task] = {}
    while live:
        if not runnable:
            raise deadlock(live)
        t = rng.choice(runnable)
        # A random burst: interleavings still vary by seed, with fewer picks.
        for _ in range(rng.randint(1, MAX_BURST)):
            if t.pending is not None and not t.pending[0]():
                break
            t.pending = None
            try:
                assert t.gen is not None
                t.pending = next(t.gen)
            except StopIteration:
                t.done = True
                live.remove(t)
                break
        if t.done or (t.pending is not None and not t.pending[0]()):
            runnable.remove(t)
            if not t.done:
                blocked[id(t)] = t
                wakeups.blocked(t)
        for o in wakeups.woken(blocked):
            if id(o) in blocked:
                if o.pending[0]():
                    del blocked[id(o)]
                    wakeups.unblocked(o)
                    insort(runnable, o, key=lambda x: position[id(x)])
                else:
                    wakeups.blocked(o)
