"""One crawling agent: the wiring of its parts, and its life from start to stop.

An agent is BUbiNG's threads as coroutines of one uvloop event loop. Each long-running task
is a module of its own, which says what it reads, writes and never touches:

* the **distributor** (``engine/distributing.py``): sieve and disk → workbench, the end of the crawl;
* the **resolvers** (``engine/resolving.py``): one task per host to resolve;
* the **todo filler** (``engine/todo.py``): hosts polite now → the todo ring;
* the **fetchers** (``engine/fetching.py``): todo ring → one fetch → the pipeline (``engine/pipeline.py``);
* **link routing** (``engine/routing.py``): links → this frontier or another agent's spool;
* the **supervisor's channel** (``engine/channel.py``, commands applied by ``engine/steering.py``);
* the **checkpointer** (``engine/checkpointer.py``): checkpoints, and resume at start;
* the **progress** task (``engine/progress.py``): the timeline and the display.

They share a :class:`~engine.crew.Crew` (configuration, frontier, counters, wake-ups, the stop
flag) and reach the frontier through its public methods only. Everything runs on one thread,
so frontier calls between two awaits are atomic.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

from engine import heap, progress
from engine.addresses import AddressPolicy
from engine.channel import SupervisorChannel
from engine.checkpointer import Checkpointer
from engine.clients import make_fetcher
from engine.config import MAX_FETCHERS, Config, describe
from engine.credentials import Credentials
from engine.crew import Crew
from engine.distributing import distribute
from engine.dns import CachingResolver
from engine.fetch import ClientSettings, Fetcher
from engine.fetching import Fetchers, PageBudget
from engine.ip_table import SharedIpTable
from engine.ownership import Member
from engine.parts import build_archive, build_frontier, frontier_figures, histograms, share_hosts_per_ip, warc_prefix
from engine.pipeline import Pipeline
from engine.quality_log import QualityLog
from engine.resolving import Resolver, Resolvers
from engine.resume import InFlightSlots
from engine.routing import LinkRouter
from engine.stats import Counters, cpu_seconds, rss_bytes, write_json
from engine.status import AgentStatus
from engine.steering import Steering
from engine.takeover import Takeovers
from engine.todo import IpLeases, TodoFiller, TodoRing
from frontier.filters import PhaseFilters
from frontier.urls import canonicalize
from store.errors import StoreFull


class Agent:
    """Agent ``index`` of ``agents``: ``await Agent(config, seeds).run()`` returns its final stats.

    Its files are ``OUT/agent-I/`` (frontier, checkpoint, stats.json, quality.csv with ``[quality]``) and ``OUT/warc/PREFIX-aI-*``;
    with several agents, ``OUT/links/`` (spools) and ``OUT/ip-table`` (made by the supervisor).
    An agent with a checkpoint in its folder resumes from it. ``channel``, when given, is the
    supervisor's socket: the agent sends it status lines and takes its commands.
    """

    def __init__(self, config: Config, seeds: list[str], *, index: int = 0, agents: int = 1,
                 channel: socket.socket | None = None, count_restored_pages: bool = True,
                 fetcher: Fetcher | None = None, resolver: Resolver | None = None,
                 members: list[Member] | None = None, live: list[str] | None = None) -> None:
        self.config, self.index, self.agents = config, index, agents
        self.alone = agents == 1 and members is None  # then the crawl ends when this agent is idle
        self.out = config.out_dir
        self.home = self.out / f"agent-{index}"
        self.home.mkdir(parents=True, exist_ok=True)
        self.count_restored_pages = count_restored_pages
        all_seeds = [u for u in (canonicalize(s, sort_query=config.urls.sort_query) for s in seeds) if u is not None]
        filters = PhaseFilters.from_config(config.filters)
        crew = self.crew = Crew(config, build_frontier(config, self.home / "frontier", all_seeds, filters),
                                Counters(), filters)
        crew.frontier.policy.join(index, agents)  # before the router asks it who owns a URL
        self.router = LinkRouter(crew, self.out / "links", index, agents, members, config.cluster.node, live)
        self.seeds = self.router.mine(all_seeds)
        self.fetcher = fetcher or make_fetcher(ClientSettings.from_config(config.network, config.engine.user_agent),
                                               config.network.client)
        d = config.dns
        resolver = resolver or CachingResolver(d.servers or None, max_entries=d.cache_entries, min_ttl=d.min_ttl, max_ttl=d.max_ttl,
                                               negative_ttl=d.negative_ttl, timeout=d.timeout, concurrency=d.concurrency)
        self.resolvers = Resolvers(crew, resolver, AddressPolicy(config.network.allow_networks), proxied=bool(config.network.proxy),
                                   hand_off=self.router.hand_off if members is not None else None)
        self.warc_prefix = warc_prefix(config, index)
        self.store = build_archive(config, self.out / "warc", self.warc_prefix)
        self.ip_table = SharedIpTable(self.out / "ip-table") if agents > 1 else None
        if self.ip_table is not None:
            share_hosts_per_ip(crew.frontier, self.ip_table)
        self.quality_log = (QualityLog(self.home / "quality.csv", self.store, config.quality.model)
                            if crew.frontier.quality is not None else None)
        self.pipeline = Pipeline(config, self.store, crew.stats, crew.frontier, self.router.discover,
                                 lambda: crew.filters, stop=crew.stop_full, quality_log=self.quality_log)
        self.todo = TodoRing(crew.frontier.rank, crew.frontier.site_of) if crew.frontier.ranked else TodoRing()
        leases = IpLeases(self.ip_table, lambda: config.politeness.ip_delay)
        self.todo_filler = TodoFiller(crew, self.todo, leases, self.resolvers.start)
        self.budget = PageBudget(crew, self.ip_table)
        self.slots = InFlightSlots(self.home / "in-flight", MAX_FETCHERS)  # fetchers can grow live
        self.credentials = Credentials(config.credentials, index, agents)
        self.fetchers = Fetchers(crew, self.fetcher, self.todo, leases, self.pipeline, self.budget, self.slots,
                                 alone=agents == 1, credentials=self.credentials)
        self.router.stored = self.fetchers.skip
        self.checkpointer = Checkpointer(crew, self.out / "warc", self.warc_prefix, self.router, self.fetchers)
        self.takeovers = Takeovers(crew, self.router, self.fetchers.skip, all_seeds, self.checkpointer, self.pipeline.link_rules)
        self.channel = None
        self.steering = Steering(crew, self.fetchers, self.router, self.takeovers.ring if members is not None else None)
        if channel is not None:
            self.channel = SupervisorChannel(channel, self.status, self.steering.obey, crew.finish)
            crew.on_full.append(self._tell_full)
        self.timeline: list[dict[str, float]] = []
        self.started = 0.0
        self._cpu_at_start = 0.0

    async def run(self) -> dict[str, Any]:
        crew, config = self.crew, self.config
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, crew.finish, f"signal {signal.Signals(sig).name}")
        self.started = crew.stats.started = time.monotonic()
        self._cpu_at_start = cpu_seconds()
        self.checkpointer.resume(self.resolvers.start, self.router.discover, self.pipeline.link_rules, self.budget,
                                 self.ip_table, count_restored_pages=self.count_restored_pages)
        crew.frontier.discover(self.seeds)
        self.fetchers.resize(config.engine.fetchers)
        mode = "off" if self.channel else config.engine.progress
        helpers = [
            asyncio.create_task(crew.until_full(distribute(
                crew, self.resolvers.start, self.idle if self.alone else None,
                self.router.forward_handed if self.router.members is not None else None))),
            asyncio.create_task(crew.until_full(self.todo_filler.run())),
            asyncio.create_task(crew.until_full(self.checkpointer.run())),
            asyncio.create_task(progress.report(self.status, self.started, config.engine, mode, self.timeline)),
        ]
        if self.router.outbox is not None:
            helpers.append(asyncio.create_task(crew.until_full(self.router.exchange())))
        elif self.router.ticks_alone:
            helpers.append(asyncio.create_task(crew.until_full(self.router.tick())))
        if self.channel is not None:
            helpers.append(asyncio.create_task(crew.until_full(self.channel.run())))
        elif config.engine.max_seconds:
            loop.call_later(config.engine.max_seconds, crew.finish, "max_seconds")
        await crew.finished.wait()
        crew.stopping = True
        crew.running.set()
        for vs in self.todo.close():
            self.todo_filler.leases.release(vs.ip)
        # in-flight fetches finish (bounded by the total timeout) so every fetched page is stored;
        # on a full disk, the crew cancels them instead: nothing they bring could be stored
        await self.fetchers.wait()
        for task in helpers + list(crew.tasks):
            task.cancel()
        await asyncio.gather(*helpers, *crew.tasks, return_exceptions=True)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        return await self.close()

    def _tell_full(self, message: str, path: Path) -> None:
        assert self.channel is not None
        self.channel.tell({"store_full": {"message": message, "path": str(path)}})

    async def close(self) -> dict[str, Any]:
        crew = self.crew
        await self.fetcher.close()
        await self.resolvers.close()
        if crew.full is None:
            with crew.full_stops():  # then the previous checkpoint stays whole, and the one to resume from
                self.checkpointer.checkpoint()
        if self.quality_log is not None:
            self.quality_log.close()
        self.store.close()  # a full disk leaves files .open, for the next start to repair
        crew.frontier.close()
        with crew.full_stops():
            self.router.close()
        summary = self.summary()
        if self.ip_table is not None:
            self.ip_table.close()
        self.slots.close()
        if self.channel is not None:
            self.channel.tell({"summary": {k: v for k, v in summary.items() if k not in ("timeline", "config")}})
            await self.channel.drain()
        paths = [self.home / "stats.json"] + ([self.out / "stats.json"] if self.agents == 1 and not self.channel else [])
        for path in paths:
            with contextlib.suppress(StoreFull):  # the previous file stays; the supervisor has the summary
                write_json(path, summary)
        return summary

    def idle(self) -> bool:
        """Nothing to do here: no fetch, DNS lookup, queued URL or unsent link (others may still send some)."""
        return (self.fetchers.in_flight == 0 and self.resolvers.pending == 0 and not len(self.todo)
                and self.crew.frontier.idle() and not self.router.pending and not self.crew.frontier.policy.busy())

    def status(self) -> AgentStatus:
        """What the supervisor aggregates (progress, end-of-crawl check, control API)."""
        fs = self.crew.frontier.statistics()
        links_out, links_in = self.router.status()
        return AgentStatus(
            agent=self.index, pid=os.getpid(), paused=not self.crew.running.is_set(),
            command_seq=self.channel.command_seq if self.channel else 0, idle=self.idle(),
            stats=self.crew.stats.as_dict(), cpu_seconds=cpu_seconds() - self._cpu_at_start, rss_bytes=rss_bytes(),
            in_flight=self.fetchers.in_flight, todo=len(self.todo), hosts=fs.workbench.visit_states,
            ips=fs.workbench.entries, **frontier_figures(fs), dns_cache=len(self.resolvers.resolver.cache),
            histograms=histograms(self.fetchers.latency, self.todo_filler.politeness_wait),
            policy=fs.policy, links_out=links_out, links_in=links_in, top_hosts=self.steering.top_hosts(),
        )

    def summary(self) -> dict[str, Any]:
        elapsed = time.monotonic() - self.started
        cpu = cpu_seconds() - self._cpu_at_start
        stats = self.crew.stats
        fs = self.crew.frontier.statistics()
        full = self.crew.full
        return {
            **stats.as_dict(),
            "elapsed_seconds": elapsed,
            "cpu_seconds": cpu,
            "pages_per_second": stats.pages / elapsed if elapsed else 0.0,
            "pages_per_cpu_second": stats.pages / cpu if cpu else 0.0,
            "rss_bytes": rss_bytes(), "gc": heap.collections(),
            "hosts": fs.workbench.visit_states,
            "ips": fs.workbench.entries,
            "frontier": {**frontier_figures(fs), "discovered": fs.discovered, "cache_hits": fs.cache_hits,
                         "dup_lookups": fs.dup_lookups, "to_disk": fs.distributor.to_disk,
                         "from_disk": fs.distributor.from_disk, "drops": fs.drops},
            "policy": fs.policy, "histograms": histograms(self.fetchers.latency, self.todo_filler.politeness_wait),
            **({"quality": fs.quality} if fs.quality else {}),
            **({"credentials": self.credentials.statistics()} if self.credentials else {}),
            "store": dataclasses.asdict(self.store.statistics()),
            **self.checkpointer.summary(),
            **({"store_full": {"message": full[0], "path": str(full[1])}} if full else {}),
            "links_sent": self.router.sent,
            "links_received": self.router.received,
            **self.takeovers.summary(),
            "agent": self.index,
            "config": describe(self.config, redact=True),
            "timeline": self.timeline,
        }


def run_agent(config: Config, seeds: list[str], *, index: int = 0, agents: int = 1,
              channel: socket.socket | None = None, count_restored_pages: bool = True,
              members: list[Member] | None = None, live: list[str] | None = None) -> dict[str, Any]:
    """Run an agent to its end on uvloop; returns the summary also written to its stats.json."""
    import uvloop

    async def main() -> dict[str, Any]:
        return await Agent(config, seeds, index=index, agents=agents, channel=channel,
                           count_restored_pages=count_restored_pages, members=members, live=live).run()

    return uvloop.run(main())
