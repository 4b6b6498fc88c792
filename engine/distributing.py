"""The distributor task: keeps the workbench fed from the sieve and the virtualizer, and sees the crawl end.

Reads and writes the frontier only through ``distribute`` (sieve and disk → workbench, due
revisits in), ``wants_flush``/``flush``/``flush_sieve`` (a forced sieve flush when it
starves: BUbiNG then waits ten times the flush's cost before forcing another) and
``distributor_deadline``; starts a resolve task for each new host. Never touches the todo
ring. A one-agent crawl ends here, when ``idle`` says nothing is left anywhere; with several,
the supervisor decides (``engine/supervisor.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from engine.crew import Crew
from frontier.visit_state import VisitState


async def distribute(crew: Crew, resolve: Callable[[VisitState], None], idle: Callable[[], bool] | None,
                     forward: Callable[[], None] | None = None) -> None:
    """Run until the agent stops; ``idle`` (one agent only) says when the crawl is over; ``forward``
    sends on the URLs of hosts handed to another machine that left the sieve (``LinkRouter.forward_handed``)."""
    frontier = crew.frontier
    while not crew.stopping:
        now = time.monotonic()
        if frontier.wants_flush(now):
            frontier.flush()
            frontier.flush_sieve(now, time.monotonic())
        for vs in frontier.distribute(now):
            resolve(vs)
        if forward is not None:
            forward()
        crew.todo_alarm.fire()
        if idle is not None and idle():
            crew.finish("done")
            return
        await crew.distributor_alarm.wait(frontier.distributor_deadline(time.monotonic()))
