"""The checkpointer: makes an agent's state durable at once, every ``engine.checkpoint_interval`` and on stop,
and resumes from it when the agent starts.

A checkpoint is the frontier's (``Frontier.checkpoint``: sieve, virtualizer, visit states,
revisits, the policy's state) with the engine's own state riding in it: the counters, each
WARC file's size, the link spools' read positions and the skip set. Links owned by other
agents are written to their spools first, so none is lost between two checkpoints. Resuming
(``engine/resume.py``) restores the frontier, starts a resolve task for each host with work,
replays the records the WARC files gained after the checkpoint (their URLs skipped, their
links discovered again) and counts the fetches the crash cut. Reads the WARC files; writes
the frontier's files and nothing else.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from engine import heap
from engine.crew import Crew
from engine.fetching import Fetchers, PageBudget
from engine.ip_table import SharedIpTable
from engine.parse import LinkRules
from engine.resume import replay, warc_sizes
from engine.robots import RobotsRules
from engine.routing import LinkRouter
from engine.stats import cpu_seconds
from frontier.page import LinkContext
from frontier.urls import fingerprint
from frontier.visit_state import VisitState

Discover = Callable[[Sequence[str], str | None, Sequence[LinkContext] | None], None]


class Checkpointer:
    """Checkpoints and resume of one agent (its WARC files are ``warc/PREFIX-*``)."""

    def __init__(self, crew: Crew, warc: Path, prefix: str, router: LinkRouter, fetchers: Fetchers) -> None:
        self.crew = crew
        self.warc, self.prefix = warc, prefix
        self.router = router
        self.fetchers = fetchers
        self.count = 0
        self.seconds = 0.0
        self.resumed: dict[str, float] = {}

    def checkpoint(self) -> None:
        started = time.monotonic()
        self.router.flush()
        read = self.router.read_positions()
        extra = {
            "stats": self.crew.stats.as_dict(),
            "warc": warc_sizes(self.warc, self.prefix),
            "inbox": {str(k): list(v) for k, v in read.items()},
            "policy_inbox": {str(k): list(v) for k, v in self.router.mail_positions().items()},
            "skip": sorted(self.fetchers.skip),  # stored after an earlier checkpoint, or by a machine gone
            "live": list(self.router.live),  # the machines whose hosts it took over are not among them
            **self.router.handed_state(),  # hosts handed to their IP's machine, or by it to this agent
        }
        self.crew.frontier.checkpoint(started, extra)
        self.router.committed(read)
        heap.give_back()  # the checkpoint's buffers, and whatever else was freed since the last one
        self.count += 1
        self.seconds += time.monotonic() - started

    async def run(self) -> None:
        interval = self.crew.config.engine.checkpoint_interval
        if not interval:
            return
        while not self.crew.stopping:
            await asyncio.sleep(interval)  # a period, not a wait for an event
            if not self.crew.stopping:
                self.checkpoint()

    def resume(self, resolve: Callable[[VisitState], None], discover: Discover, rules: LinkRules,
               budget: PageBudget, table: SharedIpTable | None, *, count_restored_pages: bool) -> None:
        """Continue from the checkpoint in this agent's folder, if there is one."""
        crew, config = self.crew, self.crew.config
        started, cpu = time.monotonic(), cpu_seconds()
        robots = functools.partial(  # rules kept in the checkpoint, until robots.expiry after their fetch
            RobotsRules.restore, now=time.time(), expiry=config.robots.expiry, user_agent=config.engine.user_agent
        )
        to_resolve, extra = crew.frontier.restore(started, robots)
        for vs in to_resolve:
            resolve(vs)
        skip = self.fetchers.skip
        if extra:
            crew.stats.restore(extra["stats"])
            skip.update(extra.get("skip", ()))
            self.router.restore_handed(extra)
            if extra.get("live"):  # the ring it routed by (machines may have left since: the supervisor says)
                self.router.route_by(extra["live"])
            self.router.resume_reading({int(k): (v[0], v[1]) for k, v in extra["inbox"].items()},
                                       {int(k): (v[0], v[1]) for k, v in extra.get("policy_inbox", {}).items()})
        if not extra and not warc_sizes(self.warc, self.prefix):
            return
        pages = 0
        for record in replay(self.warc, self.prefix, extra.get("warc", {}), rules=rules,
                             max_body_bytes=config.network.max_body_bytes):
            skip.add(fingerprint(record.url))
            if record.robots:
                crew.stats.robots += 1
            else:
                pages += 1
            crew.stats.stored += 1
            if record.links:
                discover(record.links, record.url, None)
        crew.stats.pages += pages
        budget.reserved = crew.stats.pages
        if table is not None and count_restored_pages:
            table.add_pages(crew.stats.pages)
        self.resumed = {
            "hosts": len(to_resolve),
            "replayed_records": pages,
            "in_flight_at_crash": len(self.fetchers.slots.left_by_crash - skip),
            "seconds": time.monotonic() - started,
            "cpu_seconds": cpu_seconds() - cpu,  # the cost of a resume (a machine adopted: engine/adoption.py)
        }

    def summary(self) -> dict[str, Any]:
        return {"checkpoints": {"count": self.count, "seconds": self.seconds}, "resumed": self.resumed}
