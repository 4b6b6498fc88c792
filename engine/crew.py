"""What the tasks of one agent share: its configuration, frontier, counters, wake-ups and the way it stops.

Each long-running task of an agent (``engine/distributing.py``, ``resolving.py``, ``todo.py``,
``fetching.py``, ``routing.py``, ``channel.py``, ``checkpointer.py``) gets the agent's
:class:`Crew` and talks to the others only through it: it reads the configuration and the
live filters, calls the frontier's public methods, adds to the counters, fires the two
alarms (the todo filler's and the distributor's) and asks the crew to stop. Everything runs
on one event loop, so what happens between two awaits is atomic.

Stopping: :meth:`Crew.finish` ends the crawl of this agent for a reason (done, a signal, a
limit, the supervisor); :meth:`Crew.stop_full` ends it because the disk has no room, at once,
with no checkpoint after it (one could count as fetched a page the disk refused).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from engine.config import Config
from engine.stats import Counters
from frontier.filters import PhaseFilters
from frontier.frontier import Frontier
from store.errors import StoreFull


class Alarm:
    """An event that also fires at a deadline; ``wait`` returns at whichever comes first.

    A deadline may be met late by up to ``slack`` seconds: it is moved to the next multiple of
    ``slack`` on the loop's clock, so that deadlines close together end in one wake-up. Work done
    after a sleep costs more CPU than the same work back to back (caches and branch predictors
    cool; ``bench/RESULTS.md``, issue 18, "a page after a wait is dearer"), so a crawl whose pace
    politeness sets pays less per page when its fetches fall due together. One task waits on it.
    """

    def __init__(self) -> None:
        # A future of its own rather than an ``asyncio.Event``, and the loop kept: before Python 3.12
        # every look-up of the running loop is a ``getpid`` system call, and an alarm waits for each wake-up.
        self._fired = False
        self._waiter: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def fire(self) -> None:
        self._fired = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self, deadline: float | None, slack: float = 0.0) -> None:
        """Wait for ``fire`` or until ``deadline`` on the loop clock (monotonic), or up to ``slack`` after it."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        if self._fired or (deadline is not None and deadline <= loop.time()):
            self._fired = False
            return
        if deadline is not None:
            if slack > 0:
                deadline = math.ceil(deadline / slack) * slack
            self._timer = loop.call_at(deadline, self.fire)
        self._waiter = waiter = loop.create_future()
        try:
            await waiter
        finally:
            self._fired = False
            self._waiter = None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None


@dataclass(eq=False)
class Crew:
    """The agent's shared state; see the module docstring."""

    config: Config
    frontier: Frontier
    stats: Counters
    filters: PhaseFilters  # swapped whole by a live change of filters.*: read it afresh, never keep it
    todo_alarm: Alarm = field(default_factory=Alarm)
    distributor_alarm: Alarm = field(default_factory=Alarm)
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    running: asyncio.Event = field(default_factory=asyncio.Event)  # cleared while the control API has it paused
    stopping: bool = False
    full: tuple[str, Path] | None = None  # the disk had no room (message, where)
    on_full: list[Callable[[str, Path], None]] = field(default_factory=list)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.running.set()

    def finish(self, reason: str) -> None:
        if not self.finished.is_set():
            self.stats.stop_reason = reason
            self.finished.set()

    def stop_full(self, message: str, path: Path) -> None:
        """The disk has no room: stop now (every ``on_full`` hook runs once), checkpoint no more."""
        if self.full is None:
            self.full = (message, path)
            for hook in self.on_full:
                hook(message, path)
        self.stats.stop_reason = "store_full"
        self.stopping = True  # no fetcher starts another fetch
        self.finished.set()

    @contextlib.contextmanager
    def full_stops(self) -> Iterator[None]:
        """A full disk inside the block stops the agent, not just the caller."""
        try:
            yield
        except StoreFull as e:
            self.stop_full(str(e), e.path)

    async def until_full(self, work: Coroutine[object, object, None]) -> None:
        with self.full_stops():
            await work

    def spawn(self, work: Coroutine[object, object, None]) -> None:
        """Run ``work`` in the background; it is cancelled when the agent closes."""
        task = asyncio.get_running_loop().create_task(self.until_full(work))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
