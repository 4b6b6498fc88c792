"""The todo filler: moves hosts that are polite to fetch now from the workbench to the todo ring.

Reads the frontier's workbench through ``acquire``/``hand_out``/``next_deadline``; writes the
todo ring, and, with several agents, the machine-wide IP table (``engine/ip_table.py``): a host
goes to the ring only once its IP's slot is free there too. A host whose DNS answer expired
goes to a resolve task instead (``engine/resolving.py``). Never fetches, never touches the
sieve. Sleeps until the workbench's next deadline (met up to :func:`wake_slack` late) or a wake-up
(the todo alarm).

With a policy that ranks URLs (``Frontier.ranked``), the ring hands out the best-ranked host
first (``Frontier.rank``): among the hosts polite now, the policy chooses which goes next. A
policy that groups hosts into sites (``Frontier.site_of``) also gets the *rank gate*: a host
is not handed out while a better-ranked host of its site is being fetched; it is held until
that fetch lands, so that a site with a host per user is crawled in the policy's order across
its hosts, as one queue would be, and not as fast as idle fetchers take whatever is polite.
Hosts of one rank fly together. The gate is per agent (each agent owns its hosts).
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import itertools
import time
from collections.abc import Callable

from engine.crew import Crew
from engine.ip_table import BUSY, SharedIpTable
from engine.histogram import WAIT_BUCKETS, Histogram
from frontier.visit_state import VisitState

BUSY_POLL = 0.01  # seconds between two looks at IPs another agent is fetching from, with no IP delay
WAKE_SLACK_SHARE = 1 / 16  # a deadline may be met this share of the smallest politeness delay late...
MAX_WAKE_SLACK = 0.2  # ...but no more than this many seconds


def busy_poll(ip_delay: float) -> float:
    """Seconds between two looks at the hosts whose IP another agent is fetching from. Once that fetch
    ends the IP is not free for ``ip_delay`` more (the IP table then says until when, and the host waits
    on the workbench), so noticing the end up to half of it late delays no fetch. A look costs a lookup
    per waiting host and a wake-up: every 10 ms, they cost a politeness-bound two-agent crawl ~4% of
    its CPU per page (``bench/RESULTS.md``, issue 18)."""
    return max(BUSY_POLL, ip_delay / 2)


def wake_slack(host_delay: float, ip_delay: float) -> float:
    """How late the todo filler may wake for a deadline (``Alarm.wait``): a small share of the
    politeness delays, so that hosts due within one slack go to the fetchers together while a crawl
    the delays pace is slowed by at most that share; none without delays."""
    smallest = min(host_delay, ip_delay) if host_delay > 0 and ip_delay > 0 else max(host_delay, ip_delay)
    return min(MAX_WAKE_SLACK, WAKE_SLACK_SHARE * smallest) if smallest > 0 else 0.0


class TodoRing:
    """Ready visit states, first in first out (or best rank first, behind the rank gate); fetchers
    that find it empty wait on a future each."""

    def __init__(self, rank: Callable[[VisitState], float] | None = None,
                 site: Callable[[VisitState], str | None] | None = None) -> None:
        self._ring: collections.deque[VisitState] = collections.deque()
        self._rank = rank
        self._site = site if rank is not None else None
        self._ranked: list[tuple[float, int, VisitState]] = []
        self._seq = itertools.count()
        self._waiters: collections.deque[asyncio.Future[VisitState | None]] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None  # kept: before Python 3.12 each look-up is a getpid
        self._closed = False
        # the rank gate: per site, the ranks of its hosts being fetched and the hosts held back
        self._flying: dict[str, list[float]] = {}
        self._flights: dict[int, tuple[str, float]] = {}  # id(vs) → (site, rank) while it is fetched
        self._held: dict[str, list[tuple[float, int, VisitState]]] = {}
        self._landed: set[str] = set()  # sites whose fetches landed since the last reopen()

    def __len__(self) -> int:
        return len(self._ring) + len(self._ranked) + sum(map(len, self._held.values()))

    def put(self, vs: VisitState) -> None:
        if self._rank is None:
            if not self._give(vs):
                self._ring.append(vs)
            return
        rank = self._rank(vs)
        site = self._site(vs) if self._site is not None else None
        if site is not None and self._blocked(site, rank):
            heapq.heappush(self._held.setdefault(site, []), (rank, next(self._seq), vs))
        elif self._give(vs):
            self._fly(vs, site, rank)
        else:
            heapq.heappush(self._ranked, (rank, next(self._seq), vs))

    def _give(self, vs: VisitState) -> bool:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(vs)
                return True
        return False

    def get_nowait(self) -> VisitState | None:
        if self._rank is None:
            return self._ring.popleft() if self._ring else None
        while self._ranked:
            rank, seq, vs = heapq.heappop(self._ranked)
            site = self._site(vs) if self._site is not None else None
            if site is not None and self._blocked(site, rank):  # a better host of its site took off since it came
                heapq.heappush(self._held.setdefault(site, []), (rank, seq, vs))
                continue
            self._fly(vs, site, rank)
            return vs
        return None

    async def wait_get(self) -> VisitState | None:
        """The next visit state, or None once the ring is closed."""
        vs = self.get_nowait()
        if vs is not None or self._closed:
            return vs
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        waiter: asyncio.Future[VisitState | None] = self._loop.create_future()
        self._waiters.append(waiter)
        return await waiter

    def _blocked(self, site: str, rank: float) -> bool:
        flying = self._flying.get(site)
        return flying is not None and rank > min(flying)

    def _fly(self, vs: VisitState, site: str | None, rank: float) -> None:
        if site is not None:
            self._flying.setdefault(site, []).append(rank)
            self._flights[id(vs)] = (site, rank)

    def landed(self, vs: VisitState) -> None:
        """The fetch of ``vs`` (handed out by this ring) ended: its site's gate may open (:meth:`reopen`)."""
        flight = self._flights.pop(id(vs), None) if self._site is not None else None
        if flight is None:
            return
        site, rank = flight
        flying = self._flying[site]
        flying.remove(rank)
        if not flying:
            del self._flying[site]
        self._landed.add(site)

    def reopen(self) -> None:
        """Let through the held hosts the gate no longer blocks; with nothing of its site in
        flight, the best of them. Held hosts are ordered by their rank when held, ranked anew
        as they leave (one that got worse goes back behind the next). Called after the filler
        has put back the hosts polite now, so that a host whose fetch just landed competes with
        those it held back."""
        rank_of = self._rank
        while self._landed:  # only a gated ring, hence a ranked one, has landings
            assert rank_of is not None
            site = self._landed.pop()
            held = self._held.get(site)
            while held:
                _, seq, vs = heapq.heappop(held)
                now_rank = rank_of(vs)
                if self._blocked(site, now_rank):
                    heapq.heappush(held, (now_rank, seq, vs))
                    break
                if held and now_rank > held[0][0]:  # it got worse while held: the next may be better
                    heapq.heappush(held, (now_rank, seq, vs))
                    continue
                alone = site not in self._flying
                if self._give(vs):
                    self._fly(vs, site, now_rank)
                else:
                    heapq.heappush(self._ranked, (now_rank, seq, vs))
                if alone and site not in self._flying:  # the best one goes; the rest wait for it to fly
                    break
            if not held:
                self._held.pop(site, None)

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
        left = list(self._ring) + [vs for _, _, vs in self._ranked]
        left += [vs for held in self._held.values() for _, _, vs in held]
        self._ring.clear()
        self._ranked.clear()
        self._held.clear()
        return left


class IpLeases:
    """The machine-wide side of IP politeness (several agents); with one agent every lease is granted."""

    def __init__(self, table: SharedIpTable | None, ip_delay: Callable[[], float]) -> None:
        self.table = table
        self.ip_delay = ip_delay  # a live setting

    def take(self, vs: VisitState, now: float) -> float | None:
        """The IP table's answer (``SharedIpTable.try_acquire``): None when free, :data:`BUSY` while
        another agent fetches from it, else when it may be fetched from."""
        if self.table is None or vs.ip is None:
            return None
        return self.table.try_acquire(vs.ip, now, self.ip_delay())

    def release(self, ip: str | None) -> None:
        if self.table is not None and ip is not None:
            self.table.release(ip, time.monotonic() + self.ip_delay())


class TodoFiller:
    """The task described in the module docstring."""

    def __init__(self, crew: Crew, todo: TodoRing, leases: IpLeases, resolve: Callable[[VisitState], None]) -> None:
        self.crew = crew
        self.todo = todo
        self.leases = leases
        self.resolve = resolve  # starts a resolve task for a host whose address expired
        self.politeness_wait = Histogram(WAIT_BUCKETS)

    async def run(self) -> None:
        crew, frontier = self.crew, self.crew.frontier
        busy: list[VisitState] = []  # hosts whose IP another agent is fetching from
        while not crew.stopping:
            now = time.monotonic()
            if busy:
                busy = [vs for vs in busy if not self._pass_on(vs, now)]
            while (vs := frontier.acquire(now)) is not None:
                if not frontier.hand_out(vs, now):  # resolved again off the fetch path; its IP serves others meanwhile
                    self.resolve(vs)
                elif not self._pass_on(vs, now):
                    busy.append(vs)
            self.todo.reopen()
            deadline = frontier.next_deadline()
            politeness = crew.config.politeness
            if busy:  # polled with one system call each: cheaper than handing them back and forth
                poll = now + busy_poll(politeness.ip_delay)
                deadline = min(deadline, poll) if deadline is not None else poll
            slack = 0.0
            if deadline is not None:  # read on every landed fetch: nothing to compute without a deadline
                slack = wake_slack(politeness.host_delay, politeness.ip_delay)
            await crew.todo_alarm.wait(deadline, slack)  # nothing is polite before it, unless woken
            if deadline is not None:
                self.politeness_wait.observe(time.monotonic() - now)

    def _pass_on(self, vs: VisitState, now: float) -> bool:
        """Give ``vs`` to the fetchers if the IP table lets it; False while its IP is busy with another agent."""
        retry = self.leases.take(vs, now)
        if retry == BUSY:
            return False
        if retry is not None:  # another agent fetched from it a moment ago: wait the IP delay from then
            self.crew.frontier.release(vs, now, host_next=vs.next_fetch, ip_next=retry)
            return True
        self.todo.put(vs)
        return True
