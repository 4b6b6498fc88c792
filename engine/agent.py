"""One crawling agent: a uvloop event loop running the distributor, the todo filler, DNS and fetchers.

The tasks and who touches what (BUbiNG's threads, as coroutines of one loop):

* **distributor** (one): reads the sieve and the virtualizer through ``Frontier.distribute``,
  forces sieve flushes when starving, spawns a **resolve** task per new host, and detects the
  end of the crawl. Writes the workbench; never touches the todo ring.
* **resolve** (one per new host, bounded by the resolver's concurrency): resolves the host,
  checks the address against ``network.allow_networks``, attaches the visit state to the
  workbench entry of its IP.
* **todo filler** (one): moves visit states that are ready under politeness from the workbench
  to the todo ring, then sleeps until the workbench's next deadline or a wake-up.
* **fetchers** (``engine.fetchers``): take a visit state from the todo ring, fetch one URL
  (or its robots.txt first), release the visit state with the fetch's end time, then store
  the exchange, extract links and hand them to the frontier. They never touch the sieve
  directly and never wait on another fetcher.

Everything runs on one thread, so frontier calls between two awaits are atomic: the
workbench grants and takes back the host and IP lease with no await in between.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import signal
import socket
import time
from collections.abc import Sequence

from engine import progress
from engine.addresses import AddressPolicy
from engine.config import Config, describe
from engine.dns import CachingResolver, DnsFailed
from engine.errors import RemoteError
from engine.fetch import Fetcher, FetchResult
from engine.http1 import LeanFetcher
from engine.parse import parse_location
from engine.pipeline import REDIRECTS, Pipeline
from engine.robots import RobotsRules
from engine.stats import Counters, cpu_seconds, rss_bytes, write_json
from frontier.frontier import Frontier, FrontierSettings
from frontier.page import LinkContext
from frontier.policy import make_policy
from frontier.scope import Scope
from frontier.urls import canonicalize, host_of, split
from frontier.visit_state import VisitState
from store.warc import WarcStore


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

    def close(self) -> list[VisitState]:
        """Wake every waiting fetcher with None and hand back the tokens still queued."""
        self._closed = True
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()
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
    """A whole crawl in one process. ``await Agent(config, seeds).run()`` returns the final stats."""

    def __init__(self, config: Config, seeds: list[str]) -> None:
        self.config = config
        self.out = config.out_dir
        self.out.mkdir(parents=True, exist_ok=True)
        seeds = [u for u in (canonicalize(s) for s in seeds) if u is not None]
        self.seeds = seeds
        policy = make_policy(config.engine.policy)
        f = config.frontier
        self.frontier = Frontier(
            self.out / "frontier",
            FrontierSettings(
                host_delay=config.politeness.host_delay,
                ip_delay=config.politeness.ip_delay,
                workbench_bytes=f.workbench_bytes,
                sieve_bucket_bytes=f.sieve_bucket_bytes,
                url_cache_bytes=f.url_cache_bytes,
                virtualizer_segment_bytes=f.virtualizer_segment_bytes,
                max_urls_per_host=config.scope.max_urls_per_host,
                required_front=f.required_front,
                front_step=f.front_step,
                sieve_flush_interval=f.sieve_flush_interval,
                max_fetch_retries=f.max_fetch_retries,
            ),
            policy=policy,
            scope=Scope(config.scope.mode, seeds),
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
        self.store = WarcStore(
            self.out / "warc",
            prefix=config.store.prefix,
            max_file_bytes=config.store.warc_max_bytes,
            gzip_level=config.store.gzip_level,
            info={
                "software": "crawl/0.1.0 (Python, BUbiNG-style)",
                "format": "WARC File Format 1.1",
                "hostname": socket.gethostname(),
                "http-header-user-agent": config.engine.user_agent,
                "robots": "obey",
            },
        )
        self.stats = Counters()
        self.pipeline = Pipeline(config, self.store, self.stats, policy, self.discover, self.frontier.fetched)
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

    # -- lifecycle -------------------------------------------------------------------------

    async def run(self) -> dict:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.finish, f"signal {signal.Signals(sig).name}")
        self.stats.started = time.monotonic()
        self._cpu_at_start = cpu_seconds()
        self.frontier.discover(self.seeds)
        fetchers = [asyncio.create_task(self.fetch_loop()) for _ in range(self.config.engine.fetchers)]
        helpers = [
            asyncio.create_task(self.distribute_loop()),
            asyncio.create_task(self.todo_loop()),
            asyncio.create_task(progress.report(self, self.config.engine.progress)),
        ]
        if self.config.engine.max_seconds:
            loop.call_later(self.config.engine.max_seconds, self.finish, "max_seconds")
        await self.finished.wait()
        self.stopping = True
        self.todo.close()
        # in-flight fetches finish (bounded by the total timeout) so every fetched page is stored
        await asyncio.gather(*fetchers, return_exceptions=True)
        for task in helpers + list(self._tasks):
            task.cancel()
        await asyncio.gather(*helpers, *self._tasks, return_exceptions=True)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        return await self.close()

    def finish(self, reason: str) -> None:
        if not self.finished.is_set():
            self.stats.stop_reason = reason
            self.finished.set()

    async def close(self) -> dict:
        await self.fetcher.close()
        await self.resolver.aclose()
        self.store.close()
        summary = self.summary()
        self.frontier.close()
        write_json(self.out / "stats.json", summary)
        return summary

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
                "required_front": fs.distributor.required_front,
                "front": fs.distributor.front,
                "workbench_urls": fs.workbench.urls,
                "workbench_bytes": fs.workbench.bytes,
                "disk_urls": fs.disk_urls,
                "sieve_known": fs.sieve_known,
                "sieve_ready": fs.sieve_ready,
                "sieve_pending": fs.sieve_pending,
                "discovered": fs.discovered,
                "cache_hits": fs.cache_hits,
                "to_disk": fs.distributor.to_disk,
                "from_disk": fs.distributor.from_disk,
                "drops": fs.drops,
            },
            "store": dataclasses.asdict(self.store.statistics()),
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
            if self.in_flight == 0 and self.pending_resolves == 0 and not len(self.todo) and frontier.idle():
                self.finish("done")
                return
            wake = time.monotonic() + 1.0
            if frontier.sieve.pending_count and not frontier.sieve.ready_count:
                wake = time.monotonic() + max(0.01, frontier.settings.sieve_flush_interval)
            revisit = frontier.next_revisit()
            await self.distributor_alarm.wait(min(wake, revisit) if revisit is not None else wake)

    def spawn(self, coro) -> None:  # type: ignore[no-untyped-def]
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def resolve(self, vs: VisitState) -> None:
        self.pending_resolves += 1
        try:
            host = host_of(vs.scheme_authority)
            try:
                ip = await self.resolver.resolve(host, time.monotonic())
            except DnsFailed as e:
                if self.fetcher.proxy:
                    ip = host  # the proxy resolves it; the name stands in for the IP in politeness
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
            self.frontier.resolved(vs, ip)
            self.todo_alarm.fire()
        finally:
            self.pending_resolves -= 1
            self.distributor_alarm.fire()

    def _retry_resolve(self, vs: VisitState) -> None:
        self.pending_resolves -= 1
        if not self.stopping:
            self.frontier.retry_resolve(vs)
            self.spawn(self.resolve(vs))

    def discover(self, links: Sequence[str], parent: str, contexts: Sequence[LinkContext] | None) -> None:
        if self.frontier.discover(links, parent, contexts):
            self.distributor_alarm.fire()

    # -- todo ----------------------------------------------------------------------------------

    async def todo_loop(self) -> None:
        frontier, todo = self.frontier, self.todo
        while not self.stopping:
            now = time.monotonic()
            while (vs := frontier.acquire(now)) is not None:
                todo.put(vs)
            await self.todo_alarm.wait(frontier.next_deadline())

    # -- fetchers -------------------------------------------------------------------------------

    async def fetch_loop(self) -> None:
        todo = self.todo
        while not self.stopping:
            vs = todo.get_nowait()
            if vs is None:
                self.stats.todo_waits += 1
                self.frontier.fetcher_waited()
                self.distributor_alarm.fire()
                waited = time.monotonic()
                vs = await todo.wait_get()
                self.stats.todo_wait_seconds += time.monotonic() - waited
                if vs is None:
                    return
            self.in_flight += 1
            try:
                await self.visit(vs)
            finally:
                self.in_flight -= 1
                self.todo_alarm.fire()
                self.distributor_alarm.fire()

    async def visit(self, vs: VisitState) -> None:
        """Fetch robots.txt if due, else the host's next allowed URL; release ``vs`` in every case."""
        if self.stopping:
            self.frontier.release(vs, time.monotonic(), host_next=vs.next_fetch)
            return
        if vs.robots_due(time.monotonic()):
            await self.visit_robots(vs)
            return
        url = self._next_allowed(vs)
        max_pages = self.config.engine.max_pages
        if url is None or (max_pages and self.reserved_pages >= max_pages):
            self.frontier.release(vs, time.monotonic(), host_next=vs.next_fetch)
            return
        self.reserved_pages += 1
        try:
            result = await self.fetcher.fetch(url, vs.ip)
        except RemoteError as e:
            self.reserved_pages -= 1
            self.stats.errors[e.kind] += 1
            self.frontier.failed(vs, url, time.monotonic(), backoff=e.retry_after, breaks_host=e.breaks_host)
            return
        self.frontier.succeeded(vs)
        self.frontier.release(vs, result.ended)
        self.stats.pages += 1
        self.pipeline.page(result)
        if max_pages and self.stats.pages >= max_pages:
            self.finish("max_pages")

    def _next_allowed(self, vs: VisitState) -> str | None:
        """Pop URLs until one robots.txt allows; disallowed ones are dropped and counted."""
        while vs.has_work:
            url = self.frontier.next_url(vs)
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
        vs.robots, vs.robots_expires = rules, ended + self.config.robots.expiry
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


def run_agent(config: Config, seeds: list[str]) -> dict:
    """Run a crawl to its end on uvloop; returns the summary also written to stats.json."""
    import uvloop

    async def main() -> dict:
        return await Agent(config, seeds).run()

    return uvloop.run(main())


