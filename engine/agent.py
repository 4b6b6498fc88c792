"""One crawling agent: a uvloop event loop running the distributor, the todo filler, DNS and fetchers.

The tasks and who touches what (BUbiNG's threads, as coroutines of one loop):

* **distributor** (one): reads the sieve and the virtualizer through ``Frontier.distribute``,
  forces sieve flushes when starving, spawns a **resolve** task per new host, and detects the
  end of the crawl. Writes the workbench; never touches the todo ring.
* **resolve** (one per new host, and one per host whose DNS answer expired; bounded by the
  resolver's concurrency): resolves the host, checks the address against
  ``network.allow_networks``, attaches the visit state to the workbench entry of its IP, or
  moves it there from its old IP's entry.
* **todo filler** (one): moves visit states that are ready under politeness from the workbench
  to the todo ring (or, when a host's DNS answer has expired, back to a resolve task instead),
  then sleeps until the workbench's next deadline or a wake-up.
* **fetchers** (``engine.fetchers``): take a visit state from the todo ring, fetch one URL
  (or its robots.txt first), release the visit state with the fetch's end time, then store
  the exchange, extract links and hand them to the frontier. They never touch the sieve
  directly and never wait on another fetcher.

* **exchange** (with several agents): every few tens of milliseconds, writes the links owned
  by other agents to their spools and reads the links they sent (``engine/link_exchange.py``).
* **checkpointer**: every ``engine.checkpoint_interval`` seconds, and on stop, makes the
  frontier, the link positions, the counters and the WARC sizes durable at once
  (``Frontier.checkpoint``); a restarted agent resumes from there (``engine/resume.py``).

Everything runs on one thread, so frontier calls between two awaits are atomic: the
workbench grants and takes back the host and IP lease with no await in between. With
several agents, the IP lease is also taken in the machine-wide table (``engine/ip_table.py``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import functools
import math
import signal
import os
import socket
import time
import traceback
from collections.abc import Coroutine, Iterator, Sequence
from pathlib import Path

import orjson

from engine import progress
from engine.addresses import AddressPolicy
from engine.config import MAX_FETCHERS, Config, describe
from engine.dns import CachingResolver, DnsFailed
from engine.errors import RemoteError
from engine.fetch import Fetcher, FetchResult
from engine.http1 import LeanFetcher
from engine.ip_table import BUSY, SharedIpTable
from engine.metrics import LATENCY_BUCKETS, WAIT_BUCKETS, Histogram
from engine.link_exchange import Inbox, Outbox
from engine.ownership import HashRing
from engine.parse import parse_location
from engine.pipeline import REDIRECTS, Pipeline
from engine.resume import InFlightSlots, replay, warc_sizes
from engine.robots import RobotsRules
from engine.stats import Counters, cpu_seconds, rss_bytes, write_json
from frontier.filters import PhaseFilters
from frontier.frontier import Frontier, FrontierSettings, FrontierStatistics
from frontier.page import LinkContext
from frontier.policy import make_policy
from frontier.scope import Scope
from frontier.urls import canonicalize, fingerprint, host_of, split
from frontier.visit_state import Phase, VisitState
from store.archive import Archive, config_digest
from store.errors import StoreFull

BUSY_POLL = 0.01  # seconds between two looks at IPs another agent is fetching from


class TodoRing:
    """FIFO of ready visit states; fetchers that find it empty wait on a future of their own."""

    def __init__(self) -> None:
        self._ring: collections.deque[VisitState] = collections.deque()
        self._waiters: collections.deque[asyncio.Future[VisitState | None]] = collections.deque()
        self._closed = False

    def __len__(self) -> int:
        return len(self._ring)

    def put(self, vs: VisitState) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(vs)
                return
        self._ring.append(vs)

    def get_nowait(self) -> VisitState | None:
        return self._ring.popleft() if self._ring else None

    async def wait_get(self) -> VisitState | None:
        """The next visit state, or None once the ring is closed."""
        if self._ring:
            return self._ring.popleft()
        if self._closed:
            return None
        waiter: asyncio.Future[VisitState | None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        return await waiter

    def wake_all(self) -> None:
        """Wake every waiting fetcher with None, so each checks whether it should still run."""
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    def close(self) -> list[VisitState]:
        """Wake every waiting fetcher with None and hand back the tokens still queued."""
        self._closed = True
        self.wake_all()
        left = list(self._ring)
        self._ring.clear()
        return left


class Alarm:
    """An event that also fires at a deadline; ``wait`` returns at whichever comes first."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None

    def fire(self) -> None:
        self._event.set()

    async def wait(self, deadline: float | None) -> None:
        """Wait for ``fire`` or until ``deadline`` on the loop clock (monotonic)."""
        loop = asyncio.get_running_loop()
        if deadline is not None:
            if deadline <= loop.time():
                self._event.clear()
                return
            self._timer = loop.call_at(deadline, self._event.set)
        try:
            await self._event.wait()
        finally:
            self._event.clear()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None


class Agent:
    """Agent ``index`` of ``agents``: ``await Agent(config, seeds).run()`` returns its final stats.

    Its files are ``OUT/agent-I/`` (frontier, checkpoint, stats.json) and ``OUT/warc/PREFIX-aI-*``;
    with several agents, ``OUT/links/`` (spools) and ``OUT/ip-table`` (made by the supervisor).
    An agent with a checkpoint in its folder resumes from it. ``channel``, when given, is the
    supervisor's socket: the agent sends it status lines and takes its commands.
    """

    def __init__(
        self,
        config: Config,
        seeds: list[str],
        *,
        index: int = 0,
        agents: int = 1,
        channel: socket.socket | None = None,
        count_restored_pages: bool = True,
    ) -> None:
        self.config = config
        self.out = config.out_dir
        self.index, self.agents = index, agents
        self.home = self.out / f"agent-{index}"
        self.home.mkdir(parents=True, exist_ok=True)
        self.ring = HashRing(agents)
        self._owners: dict[str, int] = {}
        all_seeds = [u for u in (canonicalize(s, sort_query=config.urls.sort_query) for s in seeds) if u is not None]
        self.seeds = [u for u in all_seeds if self.owner(split(u)[0]) == index]
        self.channel = channel
        self.count_restored_pages = count_restored_pages
        policy = make_policy(config.engine.policy)
        self.filters = PhaseFilters.from_config(config.filters)
        f = config.frontier
        self.frontier = Frontier(
            self.home / "frontier",
            FrontierSettings(
                host_delay=config.politeness.host_delay,
                ip_delay=config.politeness.ip_delay,
                workbench_bytes=f.workbench_bytes,
                sieve_bucket_bytes=f.sieve_bucket_bytes,
                url_cache_bytes=f.url_cache_bytes,
                virtualizer_segment_bytes=f.virtualizer_segment_bytes,
                max_urls_per_host=config.scope.max_urls_per_host,
                max_urls_per_shape=config.scope.max_urls_per_shape,
                required_front=f.required_front,
                front_step=f.front_step,
                sieve_flush_interval=f.sieve_flush_interval,
                max_fetch_retries=f.max_fetch_retries,
            ),
            policy=policy,
            scope=Scope(
                config.scope.mode,
                all_seeds,
                max_url_length=config.scope.max_url_length,
                max_path_depth=config.scope.max_path_depth,
                max_repeated_segments=config.scope.max_repeated_segments,
            ),
            schedule=self.filters.schedule.accepts if self.filters.schedule else None,
        )
        n = config.network
        client = LeanFetcher if n.client == "lean" else Fetcher
        self.fetcher = client(
            user_agent=config.engine.user_agent,
            proxy=n.proxy,
            keepalive=n.keepalive,
            connect_timeout=n.connect_timeout,
            first_byte_timeout=n.first_byte_timeout,
            total_timeout=n.total_timeout,
            max_body_bytes=n.max_body_bytes,
        )
        d = config.dns
        self.resolver = CachingResolver(
            d.servers or None,
            max_entries=d.cache_entries,
            min_ttl=d.min_ttl,
            max_ttl=d.max_ttl,
            negative_ttl=d.negative_ttl,
            timeout=d.timeout,
            concurrency=d.concurrency,
        )
        self.addresses = AddressPolicy(n.allow_networks)
        self.warc_prefix = f"{config.store.prefix}-a{index}"
        self.store = Archive(
            self.out / "warc",
            self.warc_prefix,
            config.store,
            info={
                "software": "crawl/0.1.0 (Python, BUbiNG-style)",
                "format": "WARC File Format 1.1",
                "hostname": socket.gethostname(),
                "http-header-user-agent": config.engine.user_agent,
                "robots": "obey",
                "config-digest": config_digest(describe(config)),
            },
        )
        self.stats = Counters()
        self.pipeline = Pipeline(config, self.store, self.stats, policy, self.discover, self.frontier.fetched, stop=self.stop_full)
        self.pipeline.filters = self.filters
        self.todo = TodoRing()
        self.todo_alarm = Alarm()
        self.distributor_alarm = Alarm()
        self.finished = asyncio.Event()
        self.stopping = False
        self.in_flight = 0
        self.reserved_pages = 0
        self.pending_resolves = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self.timeline: list[dict[str, float]] = []
        self.outbox = Outbox(self.out / "links", index, agents) if agents > 1 else None
        self.inbox = Inbox(self.out / "links", index, agents) if agents > 1 else None
        self.ip_table = SharedIpTable(self.out / "ip-table") if agents > 1 else None
        self.in_flight_slots = InFlightSlots(self.home / "in-flight", MAX_FETCHERS)  # fetchers can grow live
        self.skip: set[int] = set()  # fingerprints of URLs stored after the checkpoint resumed from
        self.resumed: dict[str, float] = {}
        self.checkpoints = 0
        self.checkpoint_seconds = 0.0
        self.running = asyncio.Event()  # cleared while the control API has the crawl paused
        self.running.set()
        self.command_seq = 0
        self.fetch_latency = Histogram(LATENCY_BUCKETS)
        self.politeness_wait = Histogram(WAIT_BUCKETS)
        self._fetch_tasks: list[asyncio.Task[None]] = []
        self.full: tuple[str, Path] | None = None  # the disk had no room (what, where): checkpoint no more
        self._to_supervisor: asyncio.StreamWriter | None = None

    # -- lifecycle -------------------------------------------------------------------------

    async def run(self) -> dict:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.finish, f"signal {signal.Signals(sig).name}")
        self.stats.started = time.monotonic()
        self._cpu_at_start = cpu_seconds()
        self.resume()
        self.frontier.discover(self.seeds)
        self.set_fetchers(self.config.engine.fetchers)
        helpers = [
            asyncio.create_task(self.until_full(self.distribute_loop())),
            asyncio.create_task(self.until_full(self.todo_loop())),
            asyncio.create_task(self.until_full(self.checkpoint_loop())),
            asyncio.create_task(progress.report(self, "off" if self.channel else self.config.engine.progress)),
        ]
        if self.outbox is not None:
            helpers.append(asyncio.create_task(self.until_full(self.exchange_loop())))
        if self.channel is not None:
            helpers.append(asyncio.create_task(self.until_full(self.channel_loop())))
        if self.config.engine.max_seconds and self.channel is None:
            loop.call_later(self.config.engine.max_seconds, self.finish, "max_seconds")
        await self.finished.wait()
        self.stopping = True
        self.running.set()
        for vs in self.todo.close():
            self._release_ip(vs.ip)
        # in-flight fetches finish (bounded by the total timeout) so every fetched page is stored;
        # on a full disk, stop_full cancels them instead: nothing they bring could be stored
        await asyncio.gather(*self._fetch_tasks, return_exceptions=True)
        for task in helpers + list(self._tasks):
            task.cancel()
        await asyncio.gather(*helpers, *self._tasks, return_exceptions=True)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        return await self.close()

    def set_fetchers(self, n: int) -> None:
        """Run ``n`` fetch coroutines: start the missing ones; extra ones end after their fetch."""
        self._fetch_tasks = [t for t in self._fetch_tasks if not t.done()]
        self.fetchers = n
        for k in range(len(self._fetch_tasks), n):
            self._fetch_tasks.append(asyncio.create_task(self.fetch_loop(k)))
        self.todo.wake_all()  # a fetcher beyond ``n`` waiting on the ring notices and ends

    def finish(self, reason: str) -> None:
        if not self.finished.is_set():
            self.stats.stop_reason = reason
            self.finished.set()

    def stop_full(self, error: StoreFull | str) -> None:
        """The disk has no room (``error``; the pipeline gives its message): stop now, checkpoint no more.

        Fetches in flight are cancelled, since nothing they bring could be stored, and keep
        their in-flight slots, as a crash's do. The state a ``--resume`` continues from, once
        there is room again, is the last checkpoint and the WARC files (whole records only): a
        checkpoint taken now could count as fetched a page the disk refused.
        """
        if self.full is None:
            path = error.path if isinstance(error, StoreFull) else self.store.directory
            self.full = (str(error), path)
            self.tell_supervisor({"store_full": {"message": str(error), "path": str(path)}})
        self.stats.stop_reason = "store_full"
        self.stopping = True  # no fetcher starts another fetch
        self.finished.set()
        current = asyncio.current_task()
        for task in self._fetch_tasks:
            if task is not current:
                task.cancel()

    @contextlib.contextmanager
    def full_stops(self) -> Iterator[None]:
        """A full disk inside the block stops the agent (:meth:`stop_full`), not just the caller."""
        try:
            yield
        except StoreFull as e:
            self.stop_full(e)

    async def until_full(self, work: Coroutine[object, object, None]) -> None:
        with self.full_stops():
            await work

    def tell_supervisor(self, message: dict) -> None:
        if self._to_supervisor is not None and not self._to_supervisor.is_closing():
            self._to_supervisor.write(orjson.dumps(message) + b"\n")

    async def close(self) -> dict:
        await self.fetcher.close()
        await self.resolver.aclose()
        if self.full is None:
            with self.full_stops():  # then the previous checkpoint stays whole, and the one to resume from
                self.checkpoint()
        self.store.close()  # a full disk leaves files .open, for the next start to repair
        self.frontier.close()
        if self.outbox is not None:
            with self.full_stops():
                self.outbox.close()
        summary = self.summary()
        if self.ip_table is not None:
            self.ip_table.close()
        self.in_flight_slots.close()
        self.tell_supervisor({"summary": {k: v for k, v in summary.items() if k not in ("timeline", "config")}})
        if self._to_supervisor is not None:
            with contextlib.suppress(ConnectionError):
                await self._to_supervisor.drain()
        paths = [self.home / "stats.json"] + ([self.out / "stats.json"] if self.agents == 1 and self.channel is None else [])
        for path in paths:
            try:
                write_json(path, summary)
            except StoreFull:  # the previous file stays; the supervisor has the summary from the channel
                pass
        return summary

    # -- checkpoints and resume ------------------------------------------------------------

    def checkpoint(self) -> None:
        """Make this agent's state durable at once; links owned by others are written first."""
        started = time.monotonic()
        if self.outbox is not None:
            self.outbox.flush()
        inbox = self.inbox.positions() if self.inbox is not None else {}
        extra = {
            "stats": self.stats.as_dict(),
            "warc": warc_sizes(self.out / "warc", self.warc_prefix),
            "inbox": {str(k): list(v) for k, v in inbox.items()},
            "skip": sorted(self.skip),  # stored after an earlier checkpoint, maybe still queued in this one
        }
        self.frontier.checkpoint(started, extra)
        if self.inbox is not None:
            self.inbox.committed(inbox)
        self.checkpoints += 1
        self.checkpoint_seconds += time.monotonic() - started

    async def checkpoint_loop(self) -> None:
        interval = self.config.engine.checkpoint_interval
        if not interval:
            return
        while not self.stopping:
            await asyncio.sleep(interval)  # a period, not a wait for an event
            if not self.stopping:
                self.checkpoint()

    def resume(self) -> None:
        """Continue from the checkpoint in this agent's folder, if there is one."""
        started = time.monotonic()
        robots = functools.partial(  # rules kept in the checkpoint, until robots.expiry after their fetch
            RobotsRules.restore, now=time.time(), expiry=self.config.robots.expiry, user_agent=self.config.engine.user_agent
        )
        to_resolve, extra = self.frontier.restore(started, robots)
        for vs in to_resolve:
            self.spawn(self.resolve(vs))
        if extra:
            self.stats.restore(extra["stats"])
            self.skip.update(extra.get("skip", ()))
            if self.inbox is not None:
                self.inbox = Inbox(self.out / "links", self.index, self.agents,
                                   {int(k): (v[0], v[1]) for k, v in extra["inbox"].items()})
        if not extra and not self.store_has_records():
            return
        pages = 0
        for record in replay(self.out / "warc", self.warc_prefix, extra.get("warc", {}),
                             rules=self.pipeline.link_rules, max_body_bytes=self.config.network.max_body_bytes):
            self.skip.add(fingerprint(record.url))
            if record.robots:
                self.stats.robots += 1
            else:
                pages += 1
            self.stats.stored += 1
            if record.links:
                self.discover(record.links, record.url, None)
        self.stats.pages += pages
        self.reserved_pages = self.stats.pages
        if self.ip_table is not None and self.count_restored_pages:
            self.ip_table.add_pages(self.stats.pages)
        refetch = len(self.in_flight_slots.left_by_crash - self.skip)
        self.resumed = {
            "hosts": len(to_resolve),
            "replayed_records": pages,
            "in_flight_at_crash": refetch,
            "seconds": time.monotonic() - started,
        }

    def store_has_records(self) -> bool:
        return bool(warc_sizes(self.out / "warc", self.warc_prefix))

    def summary(self) -> dict:
        elapsed = time.monotonic() - self.stats.started
        cpu = cpu_seconds() - self._cpu_at_start
        fs = self.frontier.statistics()
        return {
            **self.stats.as_dict(),
            "elapsed_seconds": elapsed,
            "cpu_seconds": cpu,
            "pages_per_second": self.stats.pages / elapsed if elapsed else 0.0,
            "pages_per_cpu_second": self.stats.pages / cpu if cpu else 0.0,
            "rss_bytes": rss_bytes(),
            "hosts": fs.workbench.visit_states,
            "ips": fs.workbench.entries,
            "frontier": {
                **frontier_figures(fs),
                "discovered": fs.discovered,
                "cache_hits": fs.cache_hits,
                "to_disk": fs.distributor.to_disk,
                "from_disk": fs.distributor.from_disk,
                "drops": fs.drops,
            },
            "store": dataclasses.asdict(self.store.statistics()),
            "checkpoints": {"count": self.checkpoints, "seconds": self.checkpoint_seconds},
            "resumed": self.resumed,
            **({"store_full": {"message": self.full[0], "path": str(self.full[1])}} if self.full else {}),
            "links_sent": self.outbox.links_sent if self.outbox is not None else 0,
            "links_received": self.inbox.links_received if self.inbox is not None else 0,
            "agent": self.index,
            "config": describe(self.config),
            "timeline": self.timeline,
        }

    # -- distributor -------------------------------------------------------------------------

    async def distribute_loop(self) -> None:
        frontier = self.frontier
        while not self.stopping:
            now = time.monotonic()
            if frontier.wants_flush(now):
                frontier.sieve.flush()
                frontier.flush_sieve(now, time.monotonic())
            for vs in frontier.distribute(now):
                self.spawn(self.resolve(vs))
            self.todo_alarm.fire()
            if self.agents == 1 and self.idle():
                self.finish("done")
                return
            wake = time.monotonic() + 1.0
            if frontier.sieve.pending_count and not frontier.sieve.ready_count:
                wake = time.monotonic() + max(0.01, frontier.settings.sieve_flush_interval)
            revisit = frontier.next_revisit()
            await self.distributor_alarm.wait(min(wake, revisit) if revisit is not None else wake)

    def idle(self) -> bool:
        """Nothing to do here: no fetch, DNS lookup, queued URL or unsent link (others may still send some)."""
        return (
            self.in_flight == 0
            and self.pending_resolves == 0
            and not len(self.todo)
            and self.frontier.idle()
            and (self.outbox is None or not self.outbox.pending)
        )

    def spawn(self, coro) -> None:  # type: ignore[no-untyped-def]
        task = asyncio.get_running_loop().create_task(self.until_full(coro))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def resolve(self, vs: VisitState) -> None:
        """Resolve a new host, or one whose address expired (it then moves to its new IP's entry).

        Every answer is checked against ``network.allow_networks``, not only the first: a host
        whose name now points somewhere forbidden is purged, as at its first resolution.
        """
        self.pending_resolves += 1
        try:
            host = host_of(vs.scheme_authority)
            try:
                ip, expires = await self.resolver.resolve(host, time.monotonic())
            except DnsFailed as e:
                if self.fetcher.proxy:
                    ip, expires = host, math.inf  # the proxy resolves it; the name stands in for the IP in politeness
                else:
                    self.stats.errors["dns"] += 1
                    backoff = self.frontier.resolve_failed(vs, permanent=e.permanent)
                    if backoff is not None:
                        asyncio.get_running_loop().call_later(backoff, self._retry_resolve, vs)
                        self.pending_resolves += 1  # the retry keeps the crawl alive
                    return
            else:
                if not self.addresses.permits(ip):
                    self.stats.refused_addresses += 1
                    self.frontier.refused(vs, "address")
                    return
            self.frontier.resolved(vs, ip, expires)
            self.todo_alarm.fire()
        finally:
            self.pending_resolves -= 1
            self.distributor_alarm.fire()

    def _retry_resolve(self, vs: VisitState) -> None:
        self.pending_resolves -= 1
        if not self.stopping:
            self.frontier.retry_resolve(vs)
            self.spawn(self.resolve(vs))

    def owner(self, scheme_authority: str) -> int:
        owner = self._owners.get(scheme_authority)
        if owner is None:
            if len(self._owners) > 1 << 20:
                self._owners.clear()
            owner = self._owners[scheme_authority] = self.ring.owner(host_of(scheme_authority))
        return owner

    def discover(self, links: Sequence[str], parent: str, contexts: Sequence[LinkContext] | None) -> None:
        """Links of this agent's hosts go to its frontier, the others to their owners' spools."""
        follow = self.filters.follow
        if follow is not None:
            kept = [i for i, url in enumerate(links) if follow.accepts(url)]
            if len(kept) < len(links):
                self.frontier.drops["follow_filter"] += len(links) - len(kept)
                links = [links[i] for i in kept]
                contexts = [contexts[i] for i in kept] if contexts is not None else None
        if self.outbox is not None:
            mine: list[str] = []
            my_contexts: list[LinkContext] | None = [] if contexts is not None else None
            theirs: dict[int, list[str]] = {}
            me, owner = self.index, self.owner
            for i, url in enumerate(links):
                slash = url.find("/", 8)
                who = owner(url if slash < 0 else url[:slash])
                if who == me:
                    mine.append(url)
                    if my_contexts is not None:
                        my_contexts.append(contexts[i])  # type: ignore[index]
                else:
                    theirs.setdefault(who, []).append(url)
            for who, urls in theirs.items():
                self.outbox.add(who, parent, urls)
            links, contexts = mine, my_contexts
        if links and self.frontier.discover(links, parent, contexts):
            self.distributor_alarm.fire()

    async def exchange_loop(self) -> None:
        """Send buffered links to their owners and take in the links sent here."""
        assert self.outbox is not None and self.inbox is not None
        while not self.stopping:
            self.outbox.flush()
            received = False
            for parent, links in self.inbox.poll():
                received |= bool(self.frontier.discover(links, parent))
            if received:
                self.distributor_alarm.fire()
            await asyncio.sleep(0.05)  # a polling period: spools are files, nothing to wait on

    # -- the supervisor's channel ----------------------------------------------------------

    def status(self) -> dict:
        """What the supervisor aggregates (progress, end-of-crawl check, control API)."""
        fs = self.frontier.statistics()
        return {
            "agent": self.index,
            "pid": os.getpid(),
            "paused": not self.running.is_set(),
            "command_seq": self.command_seq,
            "idle": self.idle(),
            "stats": self.stats.as_dict(),
            "cpu_seconds": cpu_seconds() - self._cpu_at_start,
            "rss_bytes": rss_bytes(),
            "in_flight": self.in_flight,
            "todo": len(self.todo),
            "hosts": fs.workbench.visit_states,
            "ips": fs.workbench.entries,
            **frontier_figures(fs),
            "dns_cache": len(self.resolver.cache),
            "histograms": {"fetch_latency_seconds": self.fetch_latency.as_dict(),
                           "politeness_wait_seconds": self.politeness_wait.as_dict()},
            "links_out": {str(k): list(v) for k, v in self.outbox.positions().items()} if self.outbox else {},
            "links_in": {str(k): list(v) for k, v in self.inbox.positions().items()} if self.inbox else {},
        }

    async def channel_loop(self) -> None:
        """Send status lines to the supervisor twice a second; obey its commands."""
        assert self.channel is not None
        reader, writer = await asyncio.open_connection(sock=self.channel)
        self._to_supervisor = writer

        async def send_status() -> None:
            while True:
                writer.write(orjson.dumps({"status": self.status()}) + b"\n")
                await writer.drain()
                await asyncio.sleep(0.5)  # a reporting period

        sender = asyncio.create_task(send_status())
        try:
            while line := await reader.readline():
                command = orjson.loads(line)
                if command["cmd"] == "stop":
                    self.finish(command.get("reason", "stopped"))
                    continue
                self.obey(command)
                self.command_seq = command["seq"]
                writer.write(orjson.dumps({"status": self.status()}) + b"\n")  # the supervisor waits for it
            self.finish("supervisor gone")
        finally:
            sender.cancel()

    def obey(self, command: dict) -> None:
        """A command of the control API, fanned out by the supervisor."""
        cmd = command["cmd"]
        if cmd == "pause":
            self.running.clear()
        elif cmd == "resume":
            self.running.set()
        elif cmd == "seeds":
            mine = [u for u in command["urls"] if self.owner(split(u)[0]) == self.index]
            if mine and self.frontier.discover(mine):
                self.distributor_alarm.fire()
        elif cmd == "config":
            self.reconfigure(command["changes"])

    def reconfigure(self, changes: dict[str, object]) -> None:
        """Apply live settings (``engine/control.py: LIVE_KEYS``, already checked)."""
        for key, value in changes.items():
            section, name = key.split(".")
            setattr(getattr(self.config, section), name, value)
        politeness = self.config.politeness
        if "politeness.host_delay" in changes:  # applies from each host's next fetch on
            self.frontier.distributor.host_delay = politeness.host_delay
            for vs in self.frontier.distributor.host_to_visit_state.values():
                crawl_delay = vs.robots.crawl_delay if vs.robots is not None else None
                vs.host_delay = max(politeness.host_delay, crawl_delay or 0.0)
        if "politeness.ip_delay" in changes:
            self.frontier.workbench.ip_delay = politeness.ip_delay
        if "engine.fetchers" in changes:
            self.set_fetchers(self.config.engine.fetchers)
        if any(key.startswith("filters.") for key in changes):
            self.filters = PhaseFilters.from_config(self.config.filters)
            self.frontier.schedule = self.filters.schedule.accepts if self.filters.schedule else None
            self.pipeline.filters = self.filters
        self.todo_alarm.fire()

    # -- todo ----------------------------------------------------------------------------------

    async def todo_loop(self) -> None:
        frontier = self.frontier
        busy: list[VisitState] = []  # hosts whose IP another agent is fetching from
        while not self.stopping:
            now = time.monotonic()
            if busy:
                busy = [vs for vs in busy if not self._take_ip(vs, now)]
            while (vs := frontier.acquire(now)) is not None:
                if vs.address_due(now):  # resolved again off the fetch path; the IP serves its other hosts meanwhile
                    frontier.readdress(vs)
                    self.spawn(self.resolve(vs))
                    continue
                vs.ip_used = True
                if not self._take_ip(vs, now):
                    busy.append(vs)
            deadline = frontier.next_deadline()
            if busy:  # polled with one system call each: cheaper than handing them back and forth
                deadline = min(deadline, now + BUSY_POLL) if deadline is not None else now + BUSY_POLL
            if deadline is None:
                await self.todo_alarm.wait(None)
                continue
            await self.todo_alarm.wait(deadline)  # nothing is polite before it, unless woken
            self.politeness_wait.observe(time.monotonic() - now)

    def _take_ip(self, vs: VisitState, now: float) -> bool:
        """Pass ``vs`` to the fetchers if the machine-wide IP table lets it; False while the IP is
        busy with another agent's fetch (``vs`` then stays acquired, waiting)."""
        if self.ip_table is not None and vs.ip is not None:
            retry = self.ip_table.try_acquire(vs.ip, now, self.config.politeness.ip_delay)
            if retry == BUSY:
                return False
            if retry is not None:  # another agent fetched from it a moment ago
                self.frontier.release(vs, now, host_next=vs.next_fetch, ip_next=retry)
                return True
        self.todo.put(vs)
        return True

    # -- fetchers -------------------------------------------------------------------------------

    async def fetch_loop(self, k: int) -> None:
        todo = self.todo
        while not self.stopping and k < self.fetchers:
            vs = todo.get_nowait()
            if vs is None:
                self.stats.todo_waits += 1
                self.frontier.fetcher_waited()
                self.distributor_alarm.fire()
                waited = time.monotonic()
                vs = await todo.wait_get()
                self.stats.todo_wait_seconds += time.monotonic() - waited
                if vs is None:  # closed, or woken to check whether this fetcher should still run
                    continue
            if not self.running.is_set():  # paused: hold the host, start nothing
                await self.running.wait()
            if k >= self.fetchers and not self.stopping:  # fewer fetchers wanted: hand the host back
                self.frontier.release(vs, time.monotonic(), host_next=vs.next_fetch)
                self._release_ip(vs.ip)
                return
            self.in_flight += 1
            ip = vs.ip
            try:
                await self.visit(vs, k)
            except StoreFull as e:  # its URL keeps its in-flight slot: fetched again after --resume
                self.stop_full(e)
            except Exception:  # a bug on one page must not silently kill a fetcher and leak its host
                self.stats.errors["internal"] += 1
                if self.stats.errors["internal"] <= 10:
                    traceback.print_exc()
                if vs.phase is Phase.ACQUIRED:
                    self.frontier.release(vs, time.monotonic())
                self.in_flight_slots.done(k)
            finally:
                self.in_flight -= 1
                self._release_ip(ip)
                self.todo_alarm.fire()
                self.distributor_alarm.fire()

    def _release_ip(self, ip: str | None) -> None:
        if self.ip_table is not None and ip is not None:
            self.ip_table.release(ip, time.monotonic() + self.config.politeness.ip_delay)

    async def visit(self, vs: VisitState, k: int = 0) -> None:
        """Fetch robots.txt if due, else the host's next allowed URL; release ``vs`` in every case."""
        if self.stopping:
            self.frontier.release(vs, time.monotonic(), host_next=vs.next_fetch)
            return
        if vs.robots_due(time.time(), self.config.robots.expiry):
            await self.visit_robots(vs)
            return
        # The page budget is asked before a URL leaves the queue: once it is spent, the host keeps its URLs
        # for the checkpoint, so a --resume with a larger budget finds them there.
        if not self.reserve_page():
            self.frontier.release(vs, time.monotonic(), host_next=vs.next_fetch)
            return
        url = self._next_allowed(vs)
        if url is None:
            self.unreserve_page()
            self.frontier.release(vs, time.monotonic(), host_next=vs.next_fetch)
            return
        slots = self.in_flight_slots
        slots.start(k, url)
        started = time.monotonic()
        try:
            result = await self.fetcher.fetch(url, vs.ip)
        except RemoteError as e:
            slots.done(k)
            self.unreserve_page()
            self.stats.errors[e.kind] += 1
            self.frontier.failed(vs, url, time.monotonic(), backoff=e.retry_after, breaks_host=e.breaks_host)
            return
        self.fetch_latency.observe(result.ended - started)
        self.frontier.succeeded(vs)
        self.frontier.release(vs, result.ended)
        self.stats.pages += 1
        self.pipeline.page(result)
        if self.full is None:  # a page the full disk kept out of the WARC stays counted as cut, as by a crash
            slots.done(k)
        max_pages = self.config.engine.max_pages
        if max_pages and self.agents == 1 and self.stats.pages >= max_pages:
            self.finish("max_pages")

    def reserve_page(self) -> bool:
        """Count a page against ``engine.max_pages`` before fetching it (for all agents together)."""
        max_pages = self.config.engine.max_pages
        if not max_pages:
            return True
        if self.ip_table is not None:
            return self.ip_table.reserve_page(max_pages)
        if self.reserved_pages >= max_pages:
            return False
        self.reserved_pages += 1
        return True

    def unreserve_page(self) -> None:
        if not self.config.engine.max_pages:
            return
        if self.ip_table is not None:
            self.ip_table.unreserve_page()
        else:
            self.reserved_pages -= 1

    def _next_allowed(self, vs: VisitState) -> str | None:
        """Pop URLs until one robots.txt allows; disallowed ones are dropped and counted, and so
        are those a resumed crawl finds already stored."""
        while vs.has_work:
            url = self.frontier.next_url(vs)
            if self.skip and (fp := fingerprint(url)) in self.skip:
                self.skip.discard(fp)
                continue
            if self.filters.fetch is not None and not self.filters.fetch.accepts(url):
                self.frontier.drops["fetch_filter"] += 1
                continue
            if vs.robots.allowed(split(url)[1]):
                return url
            self.stats.robots_disallowed += 1
        return None

    async def visit_robots(self, vs: VisitState) -> None:
        """Fetch (one hop of) robots.txt; the rules take effect when a final answer arrives.

        RFC 9309: redirects are followed, up to five, one per visit so that each hop is a
        polite access; network failures are retried with back-off and, when retries run out,
        mean "unreachable" (disallow all) until the rules expire.
        """
        url = vs.scheme_authority + vs.robots_path
        try:
            result = await self.fetcher.fetch(url, vs.ip)
        except RemoteError as e:
            self.stats.errors[f"robots_{e.kind}"] += 1
            ended = time.monotonic()
            vs.retries += 1
            if vs.retries <= self.config.frontier.max_fetch_retries:
                backoff = e.retry_after * (1 << (vs.retries - 1))
                self.frontier.release(vs, ended, host_next=ended + max(vs.host_delay, backoff))
                return
            status, body = None, b""
        else:
            self.pipeline.robots(result)
            status, ended = result.status, result.ended
            if status in REDIRECTS:
                moved = self._robots_redirect(vs, result)
                if moved is not None:
                    vs.robots_path, vs.robots_hops = moved, vs.robots_hops + 1
                    self.frontier.release(vs, ended)
                    return
                status = 404  # too many hops or another host: the rules are unavailable, RFC 9309 2.3.1.2
            body = self.pipeline.body(result)
        rules = RobotsRules.from_response(
            status, body, self.config.engine.user_agent, max_crawl_delay=self.config.politeness.max_crawl_delay
        )
        vs.robots, vs.robots_fetched = rules, time.time()  # wall clock: the rules outlive this process
        vs.robots_path, vs.robots_hops, vs.retries = "/robots.txt", 0, 0
        vs.host_delay = max(self.config.politeness.host_delay, rules.crawl_delay or 0.0)
        self.frontier.release(vs, ended)

    @staticmethod
    def _robots_redirect(vs: VisitState, result: FetchResult) -> str | None:
        """The path to fetch robots.txt from next, if the redirect stays on the host and within 5 hops."""
        location = result.headers.get("location")
        target = parse_location(location, result.url) if location else None
        if target is None or vs.robots_hops >= 5:
            return None
        scheme_authority, path_query = split(target)
        return path_query if scheme_authority == vs.scheme_authority else None


def frontier_figures(fs: FrontierStatistics) -> dict[str, int]:
    """The frontier's sizes, as status lines and stats.json report them."""
    return {
        "required_front": fs.distributor.required_front,
        "front": fs.distributor.front,
        "workbench_urls": fs.workbench.urls,
        "workbench_bytes": fs.workbench.bytes,
        "disk_urls": fs.disk_urls,
        "sieve_known": fs.sieve_known,
        "sieve_ready": fs.sieve_ready,
        "sieve_pending": fs.sieve_pending,
    }


def run_agent(config: Config, seeds: list[str], **role: object) -> dict:
    """Run an agent to its end on uvloop; returns the summary also written to its stats.json."""
    import uvloop

    async def main() -> dict:
        return await Agent(config, seeds, **role).run()  # type: ignore[arg-type]

    return uvloop.run(main())


