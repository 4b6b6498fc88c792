"""The fetchers: coroutines that take a ready host from the todo ring and fetch one URL of it.

Each fetcher takes a visit state from the todo ring, fetches the host's robots.txt if it is
due (RFC 9309: redirects followed one polite hop at a time, up to five; network failures
retried with back-off, then "unreachable") or else the first URL of the host that robots.txt
and the fetch filter allow, releases the host with the fetch's end time (host and IP delays
count from there), and hands the response to the pipeline (``engine/pipeline.py``: store,
parse, links on). Reads the todo ring, the live filters and the page budget; writes the
frontier only through its public methods (``next_url``, ``release``, ``succeeded``,
``failed``, the robots.txt steps), the in-flight slots (``engine/resume.py``) and the
counters. Fetchers never touch the sieve and never wait on one another.
"""

from __future__ import annotations

import asyncio
import time
import traceback

from engine.credentials import Credential, Credentials
from engine.crew import Crew
from engine.errors import RemoteError, retry_after
from engine.fetch import Fetcher, FetchResult
from engine.ip_table import SharedIpTable
from engine.histogram import LATENCY_BUCKETS, Histogram
from engine.parse import parse_location
from engine.pipeline import REDIRECTS, Pipeline
from engine.resume import InFlightSlots
from engine.robots import RobotsRules
from engine.todo import IpLeases, TodoRing
from frontier.urls import fingerprint, host_of, split
from frontier.validators import request_headers
from frontier.visit_state import Phase, VisitState
from store.errors import StoreFull

MAX_ROBOTS_HOPS = 5  # RFC 9309 2.3.1.2
TOO_MANY_REQUESTS = 429


class PageBudget:
    """``engine.max_pages``, counted before a fetch: for this agent, or for all agents in the IP table."""

    def __init__(self, crew: Crew, table: SharedIpTable | None) -> None:
        self.crew = crew
        self.table = table
        self.reserved = 0

    def reserve(self) -> bool:
        limit = self.crew.config.engine.max_pages
        if not limit:
            return True
        if self.table is not None:
            return self.table.reserve_page(limit)
        if self.reserved >= limit:
            return False
        self.reserved += 1
        return True

    def unreserve(self) -> None:
        if not self.crew.config.engine.max_pages:
            return
        if self.table is not None:
            self.table.unreserve_page()
        else:
            self.reserved -= 1


class Fetchers:
    """The fetch coroutines of one agent; ``resize`` changes how many run."""

    def __init__(self, crew: Crew, fetcher: Fetcher, todo: TodoRing, leases: IpLeases, pipeline: Pipeline,
                 budget: PageBudget, slots: InFlightSlots, *, alone: bool, credentials: Credentials | None = None) -> None:
        self.crew = crew
        self.fetcher = fetcher
        self.todo = todo
        self.leases = leases
        self.pipeline = pipeline
        self.budget = budget
        self.slots = slots
        self.alone = alone  # the only agent: it checks engine.max_pages itself
        self.credentials = credentials or None  # this agent's [[credentials]]; None when it holds none
        self.skip: set[int] = set()  # fingerprints of URLs stored after the checkpoint resumed from
        self.count = 0
        self.in_flight = 0
        self.tasks: list[asyncio.Task[None]] = []
        self.latency = Histogram(LATENCY_BUCKETS)
        crew.on_full.append(lambda message, path: self.cancel())

    def resize(self, n: int) -> None:
        """Run ``n`` fetch coroutines: start the missing ones; extra ones end after their fetch."""
        self.tasks = [t for t in self.tasks if not t.done()]
        self.count = n
        for k in range(len(self.tasks), n):
            self.tasks.append(asyncio.create_task(self.run(k)))
        self.todo.wake_all()  # a fetcher beyond ``n`` waiting on the ring notices and ends

    def cancel(self) -> None:
        """A full disk: nothing a fetch in flight brings could be stored (its URL keeps its in-flight slot)."""
        current = asyncio.current_task()
        for task in self.tasks:
            if task is not current:
                task.cancel()

    async def wait(self) -> None:
        """Until every fetch in flight has ended (bounded by the total timeout) and been stored."""
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def run(self, k: int) -> None:
        crew, todo, frontier = self.crew, self.todo, self.crew.frontier
        while not crew.stopping and k < self.count:
            vs = todo.get_nowait()
            if vs is None:
                crew.stats.todo_waits += 1
                frontier.fetcher_waited()
                crew.distributor_alarm.fire()
                waited = time.monotonic()
                vs = await todo.wait_get()
                crew.stats.todo_wait_seconds += time.monotonic() - waited
                if vs is None:  # closed, or woken to check whether this fetcher should still run
                    continue
            if not crew.running.is_set():  # paused: hold the host, start nothing
                await crew.running.wait()
            if k >= self.count and not crew.stopping:  # fewer fetchers wanted: hand the host back
                frontier.release(vs, time.monotonic(), host_next=vs.next_fetch)
                self.leases.release(vs.ip)
                todo.landed(vs)
                return
            self.in_flight += 1
            ip = vs.ip
            try:
                await self.visit(vs, k)
            except StoreFull as e:  # its URL keeps its in-flight slot: fetched again after --resume
                crew.stop_full(str(e), e.path)
            except Exception:  # a bug on one page must not silently kill a fetcher and leak its host
                crew.stats.errors["internal"] += 1
                if crew.stats.errors["internal"] <= 10:
                    traceback.print_exc()
                if vs.phase is Phase.ACQUIRED:
                    frontier.release(vs, time.monotonic())
                self.slots.done(k)
            finally:
                self.in_flight -= 1
                self.leases.release(ip)
                todo.landed(vs)
                crew.todo_alarm.fire()
                crew.distributor_alarm.fire()

    async def visit(self, vs: VisitState, k: int) -> None:
        """Fetch robots.txt if due, else the host's next allowed URL; release ``vs`` in every case."""
        crew, frontier = self.crew, self.crew.frontier
        if crew.stopping or vs.phase is Phase.PURGED:  # purged while held by a paused fetcher: another machine's now
            frontier.release(vs, time.monotonic(), host_next=vs.next_fetch)
            return
        if vs.robots_due(time.time(), crew.config.robots.expiry):
            await self.visit_robots(vs)
            return
        credential = None
        if self.credentials is not None:  # the one test an ordinary crawl pays: it configures no credentials
            now = time.monotonic()
            credential, ready = self.credentials.take(host_of(vs.scheme_authority), now)
            if ready > now:  # no call left: the host waits in the workbench for the next, the IP does not
                frontier.release(vs, now, host_next=max(vs.next_fetch, ready), ip_next=0.0)
                return
        # The page budget is asked before a URL leaves the queue: once it is spent, the host keeps its URLs
        # for the checkpoint, so a --resume with a larger budget finds them there.
        if not self.budget.reserve():
            frontier.release(vs, time.monotonic(), host_next=vs.next_fetch)
            return
        url = self._next_allowed(vs)
        if url is None:
            self.budget.unreserve()
            frontier.release(vs, time.monotonic(), host_next=vs.next_fetch)
            return
        sent = vs.validators
        headers = request_headers(sent) if sent else []
        if credential is not None:
            headers.append(credential.header)
        self.slots.start(k, url)
        started = time.monotonic()
        try:
            result = await self.fetcher.fetch(url, vs.ip, headers)
        except RemoteError as e:
            self.slots.done(k)
            self.budget.unreserve()
            crew.stats.errors[e.kind] += 1
            frontier.failed(vs, url, time.monotonic(), backoff=e.retry_after, breaks_host=e.breaks_host, error=e.kind)
            return
        self.latency.observe(result.ended - started)
        if credential is not None:  # the archive keeps no secret: the token is named, not written
            result.request_head = result.request_head.replace(credential.token.encode(), f"<{credential.name}>".encode())
        if result.status == TOO_MANY_REQUESTS:
            self._too_many(vs, k, result, credential)
            return
        frontier.succeeded(vs)
        frontier.release(vs, result.ended)
        crew.stats.pages += 1
        self.pipeline.page(result, sent)
        if crew.full is None:  # a page the full disk kept out of the WARC stays counted as cut, as by a crash
            self.slots.done(k)
        max_pages = crew.config.engine.max_pages
        if max_pages and self.alone and crew.stats.pages >= max_pages:
            crew.finish("max_pages")

    def _too_many(self, vs: VisitState, k: int, result: FetchResult, credential: Credential | None) -> None:
        """A 429: stored, not a page; the host and the credential wait its Retry-After, then the URL goes again."""
        wait = retry_after(result.headers.get("retry-after"), time.time())
        if credential is not None:
            credential.hold(result.ended + wait)
        self.budget.unreserve()
        self.crew.frontier.deferred(vs, result.ended, wait)
        self.pipeline.deferred(result)
        if self.crew.full is None:
            self.slots.done(k)

    def _next_allowed(self, vs: VisitState) -> str | None:
        """Pop URLs until one robots.txt allows; disallowed ones are dropped and counted, and so
        are those a resumed crawl finds already stored."""
        frontier = self.crew.frontier
        while vs.has_work:
            url = frontier.next_url(vs)
            if self.skip and (fp := fingerprint(url)) in self.skip:
                self.skip.discard(fp)
                continue
            fetch_filter = self.crew.filters.fetch
            if fetch_filter is not None and not fetch_filter.accepts(url):
                frontier.drop("fetch_filter")
                continue
            assert vs.robots is not None  # robots_due was False
            if vs.robots.allowed(split(url)[1]):
                return url
            self.crew.stats.robots_disallowed += 1
        return None

    async def visit_robots(self, vs: VisitState) -> None:
        """Fetch (one hop of) robots.txt; the rules take effect when a final answer arrives."""
        crew, frontier = self.crew, self.crew.frontier
        config = crew.config
        try:
            result = await self.fetcher.fetch(frontier.robots_url(vs), vs.ip)
        except RemoteError as e:
            crew.stats.errors[f"robots_{e.kind}"] += 1
            ended = time.monotonic()
            if frontier.robots_failed(vs, ended, e.retry_after):
                return
            status, body = None, b""  # unreachable: disallow all until the rules expire
        else:
            self.pipeline.robots(result)
            status, ended = result.status, result.ended
            if status in REDIRECTS:
                moved = self._robots_redirect(vs, result)
                if moved is not None:
                    frontier.robots_redirected(vs, moved, ended)
                    return
                status = 404  # too many hops or another host: the rules are unavailable, RFC 9309 2.3.1.2
            body = self.pipeline.body(result)
        rules = RobotsRules.from_response(
            status, body, config.engine.user_agent, max_crawl_delay=config.politeness.max_crawl_delay
        )
        frontier.robots_fetched(vs, rules, time.time(), ended)  # wall clock: the rules outlive this process

    @staticmethod
    def _robots_redirect(vs: VisitState, result: FetchResult) -> str | None:
        """The path to fetch robots.txt from next, if the redirect stays on the host and within 5 hops."""
        location = result.headers.get("location")
        target = parse_location(location, result.url) if location else None
        if target is None or vs.robots_hops >= MAX_ROBOTS_HOPS:
            return None
        scheme_authority, path_query = split(target)
        return path_query if scheme_authority == vs.scheme_authority else None
