"""The workbench: a priority queue of per-IP entries, each a priority queue of per-host visit states.

BUbiNG's key structure. A :class:`WorkbenchEntry` (one per IP) holds the READY visit states
of its hosts that have URLs in memory, ordered by their ``next_fetch``, and the IP's own
``next_fetch``. The :class:`Workbench` orders entries by
``max(entry.next_fetch, top visit state's next_fetch)``, so the top entry tells in O(1)
whether anything can be fetched politely now, and if not, how long to wait.

Acquiring removes the top entry from the workbench and the top visit state from the entry:
the (visit state, entry) pair is a token held by one fetcher, so while one host of an IP is
being fetched the whole IP is off the workbench (one fetch in flight per IP). Releasing puts
both back with next-fetch times counted from the end of the fetch.

With a policy that ranks URLs (``rank``, ``Frontier.rank``: lower goes first), the host an
entry hands out is not the one polite the earliest but the best-ranked of those polite now:
acquiring moves the entry's hosts that have become polite to its ``ripe`` heap, ordered by
rank, and takes the best. Ranks change as the policy learns and as URLs come: a waiting host
that gets a better URL (or a due revisit) moves up at once; one that got worse is ranked
anew as it leaves and goes back behind the next. Many hosts on one IP (a site with a host
per user) are thus fetched in the policy's order, not round-robin by time.

A host's address can change (its DNS answer expired): ``readdress`` gives back a token
without a fetch, charging neither the host nor the IP, and holds the host off its entry's
heap while it is resolved again; ``move`` then puts it on the entry of its (maybe new) IP.
Politeness survives the move: the host keeps its ``next_fetch``, the old IP's entry keeps its
own, and the new IP's entry, if it exists, keeps its own too.

Time is an argument everywhere (``now``, ``end``); nothing here reads a clock. Every
operation is O(log n) in entries or visit states of one entry. The heaps use lazy deletion:
an entry's heap item is valid only while its ``version`` matches.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass

from frontier.visit_state import PathQueue, Phase, VisitState


class WorkbenchEntry:
    """All the visit states of one IP address.

    Invariants: ``heap`` and ``ranks`` together hold exactly the READY visit states of this IP
    with work in memory (``vs.in_entry``); ``ripe`` holds every host of ``ranks`` under its
    rank there, plus stale items (another rank) that are skipped; both are empty unless the
    workbench ranks; the entry is on the workbench heap iff it is not acquired and has such
    visit states; ``next_fetch`` ≥ end of the last fetch from this IP + the IP delay.
    """

    __slots__ = ("ip", "next_fetch", "heap", "ripe", "ranks", "acquired", "version", "hosts")

    def __init__(self, ip: str) -> None:
        self.ip = ip
        self.next_fetch = 0.0
        self.heap: list[tuple[float, int, VisitState]] = []  # by next_fetch
        self.ripe: list[tuple[float, int, VisitState]] = []  # ranked mode: hosts polite already, by rank
        self.ranks: dict[VisitState, float] = {}  # their current place in ``ripe``
        self.acquired = False
        self.version = 0
        self.hosts = 0  # visit states attached to this IP, with or without work

    def key(self) -> float:
        return self.next_fetch if self.ranks else max(self.next_fetch, self.heap[0][0])

    def has_work(self) -> bool:
        return bool(self.heap or self.ranks)

    def __repr__(self) -> str:
        ready = len(self.heap) + len(self.ranks)
        return f"<WorkbenchEntry {self.ip} hosts={self.hosts} ready={ready} acquired={self.acquired}>"


@dataclass(frozen=True, slots=True)
class WorkbenchStatistics:
    entries: int  # IPs known
    entries_with_work: int  # IPs with some host holding URLs in memory (on the workbench or acquired)
    acquired: int  # tokens out with fetchers
    visit_states: int  # hosts attached to an IP
    urls: int  # path+queries held in memory
    bytes: int  # their packed size


class Workbench:
    """Priority queue of :class:`WorkbenchEntry`, keyed by the earliest polite fetch time."""

    def __init__(self, ip_delay: float, rank: Callable[[VisitState], float] | None = None) -> None:
        self.ip_delay = ip_delay
        self._rank = rank
        self.address_to_entry: dict[str, WorkbenchEntry] = {}
        self._heap: list[tuple[float, int, int, WorkbenchEntry]] = []
        self._tie = itertools.count()
        self._seq = itertools.count()
        self._visit_states = 0
        self._acquired = 0
        self._with_work = 0
        self.urls = 0
        self.bytes = 0
        # told (IP, +1) when a host joins an entry and (IP, -1) when it moves to another IP, not when it is
        # purged: the engine counts every agent's hosts per IP with it (engine/ip_table.py) as `crawl learn
        # quality` counts the hosts of a WARC file's IP addresses, for the quality filter
        self.on_hosts: Callable[[str, int], None] | None = None
        self.not_before = 0.0  # no IP is fetched before this (a resumed crawl's IPs may have been just fetched)

    # -- attaching hosts ---------------------------------------------------------------

    def attach(self, vs: VisitState, ip: str) -> None:
        """Join a freshly resolved visit state, attached to no entry, to the entry of its IP (creating it)."""
        entry = self.address_to_entry.get(ip)
        if entry is None:
            entry = self.address_to_entry[ip] = WorkbenchEntry(ip)
            entry.next_fetch = self.not_before
        vs.ip = ip
        vs.entry = entry
        entry.hosts += 1
        if self.on_hosts is not None:
            self.on_hosts(ip, 1)
        self._visit_states += 1
        vs.transition("resolved")
        if vs.has_work:
            self._enter(vs)

    def readdress(self, vs: VisitState) -> None:
        """Hand back an acquired token unfetched because the host's address must be resolved again.

        Neither the host nor the IP is charged (nothing was fetched); the host stays attached
        to its entry, off its heap, RESOLVING until :meth:`move`.
        """
        vs.transition("release")
        vs.transition("resolve")
        self._give_back(vs.entry)

    def move(self, vs: VisitState, ip: str) -> None:
        """A re-resolved visit state is READY again on the entry of ``ip`` (its old one or another)."""
        if vs.entry.ip != ip:
            if self.on_hosts is not None:
                self.on_hosts(vs.entry.ip, -1)
            self.detach(vs)
            self.attach(vs, ip)
            return
        vs.transition("resolved")
        if vs.has_work:
            self._enter(vs)

    def detach(self, vs: VisitState) -> None:
        """Take a non-acquired visit state off its entry (a purge, or a move to another IP)."""
        entry: WorkbenchEntry | None = vs.entry
        if entry is None:
            return
        if vs.in_entry:
            self._leave(vs)
        entry.hosts -= 1
        self._visit_states -= 1
        vs.entry = None

    # -- URLs in memory --------------------------------------------------------------

    def push_url(self, vs: VisitState, path_query: bytes) -> None:
        """Append a URL to a host's in-memory queue, scheduling the host if it was idle."""
        # the breadth-first path, once per URL: :meth:`_added` written out, one call fewer
        vs.queue.append(path_query)
        self.urls += 1
        self.bytes += len(path_query) + 1
        if not vs.in_entry and vs.entry is not None and vs.phase is Phase.READY:
            self._enter(vs)

    def push_lane(self, vs: VisitState, path_query: bytes, lane: int) -> None:
        """Append a URL to one lane of a ranked host's queue."""
        assert vs.lanes is not None, "a lane for a host of a breadth-first crawl"
        vs.lanes.append(path_query, lane)
        self._added(vs, path_query)

    def push_due(self, vs: VisitState, path_query: bytes) -> None:
        """Queue a revisit that came due ahead of the host's backlog (behind other due ones)."""
        if vs.due is None:
            vs.due = PathQueue()
        vs.due.append(path_query)
        self._added(vs, path_query)

    def pop_url(self, vs: VisitState) -> bytes:
        """Take the next URL of an acquired visit state's (breadth-first) queue."""
        item = vs.queue.popleft()
        self.urls -= 1
        self.bytes -= len(item) + 1
        return item

    def pop_lane(self, vs: VisitState, lane: int) -> bytes:
        """Take the next URL of one lane, in memory, of an acquired ranked visit state."""
        assert vs.lanes is not None, "a lane for a host of a breadth-first crawl"
        return self._removed(vs.lanes.pop(lane))

    def pop_due(self, vs: VisitState) -> bytes:
        """Take the first due revisit of an acquired visit state."""
        due = vs.due
        assert due is not None, "no revisit is due"
        item = due.popleft()
        if not len(due):
            vs.due = None
        return self._removed(item)

    def drop_urls(self, vs: VisitState) -> int:
        """Forget every in-memory URL of a host (purge); returns how many."""
        dropped = vs.queue.clear()
        if vs.lanes is not None:
            dropped += vs.lanes.clear()
        if vs.due is not None:
            dropped += vs.due.clear()
            vs.due = None
        self.urls -= len(dropped)
        self.bytes -= sum(len(item) + 1 for item in dropped)
        if vs.in_entry:
            self._leave(vs)
        return len(dropped)

    def _added(self, vs: VisitState, path_query: bytes) -> None:
        self.urls += 1
        self.bytes += len(path_query) + 1
        if not vs.in_entry and vs.entry is not None and vs.phase is Phase.READY:
            self._enter(vs)
        elif self._rank is not None and vs.in_entry and vs in vs.entry.ranks:
            self._rank_again(vs.entry, vs, self._rank)

    def _rank_again(self, entry: WorkbenchEntry, vs: VisitState, rank: Callable[[VisitState], float]) -> None:
        """A host waiting on ``ripe`` got a URL: it moves up if that one is better."""
        fresh = rank(vs)
        if fresh < entry.ranks[vs]:
            entry.ranks[vs] = fresh
            heapq.heappush(entry.ripe, (fresh, next(self._seq), vs))

    def _removed(self, path_query: bytes) -> bytes:
        self.urls -= 1
        self.bytes -= len(path_query) + 1
        return path_query

    # -- acquire and release -----------------------------------------------------------

    def next_deadline(self) -> float | None:
        """When the top entry becomes fetchable (maybe in the past), or None if nothing waits."""
        heap = self._heap
        while heap:
            key, _, version, entry = heap[0]
            if version == entry.version:
                return key
            heapq.heappop(heap)
        return None

    def acquire(self, now: float) -> VisitState | None:
        """Hand out a visit state that may be fetched now under host and IP politeness."""
        deadline = self.next_deadline()
        if deadline is None or deadline > now:
            return None
        entry = heapq.heappop(self._heap)[3]
        entry.version += 1
        entry.acquired = True
        vs = heapq.heappop(entry.heap)[2] if self._rank is None else self._best_ripe(entry, now, self._rank)
        vs.in_entry = False
        vs.transition("acquire")
        self._acquired += 1
        return vs

    def release(self, vs: VisitState, end: float, *, host_next: float | None = None, ip_next: float | None = None) -> None:
        """Return a token after a fetch that ended at ``end``.

        The host may be fetched again at ``end + vs.host_delay`` (or ``host_next``, e.g. a
        retry back-off) and the IP at ``end + ip_delay`` (or ``ip_next``).
        """
        entry: WorkbenchEntry = vs.entry
        vs.next_fetch = end + vs.host_delay if host_next is None else host_next
        entry.next_fetch = max(entry.next_fetch, end + self.ip_delay if ip_next is None else ip_next)
        if vs.phase is Phase.PURGED:  # purged while out with a fetcher: the IP comes back, the host does not
            entry.hosts -= 1
            self._visit_states -= 1
            vs.entry = None
        else:
            vs.transition("release")
            if vs.has_work:
                self._push_vs(entry, vs)
        self._give_back(entry)

    # -- internals ---------------------------------------------------------------------

    @staticmethod
    def _best_ripe(entry: WorkbenchEntry, now: float, rank: Callable[[VisitState], float]) -> VisitState:
        """Ranked mode: the best-ranked of the entry's hosts polite at ``now`` (module docstring)."""
        heap, ripe, ranks = entry.heap, entry.ripe, entry.ranks
        while heap and heap[0][0] <= now:
            _, seq, vs = heapq.heappop(heap)
            ranks[vs] = placed = rank(vs)
            heapq.heappush(ripe, (placed, seq, vs))
        while True:
            placed, seq, vs = heapq.heappop(ripe)
            if ranks.get(vs) != placed:  # a stale item: the host moved up, or left
                continue
            fresh = rank(vs)
            if ripe and fresh > ripe[0][0]:  # it got worse while it waited
                ranks[vs] = fresh
                heapq.heappush(ripe, (fresh, seq, vs))
                continue
            del ranks[vs]
            return vs

    def _give_back(self, entry: WorkbenchEntry) -> None:
        """An entry's token is back: the entry returns to the workbench if it has work."""
        entry.acquired = False
        self._acquired -= 1
        if entry.has_work():
            self._push_entry(entry)
        else:
            self._with_work -= 1

    def _enter(self, vs: VisitState) -> None:
        entry: WorkbenchEntry = vs.entry
        if not entry.has_work() and not entry.acquired:
            self._with_work += 1
        self._push_vs(entry, vs)
        if not entry.acquired:
            self._push_entry(entry)

    def _leave(self, vs: VisitState) -> None:
        entry: WorkbenchEntry = vs.entry
        entry.heap = [item for item in entry.heap if item[2] is not vs]
        heapq.heapify(entry.heap)
        if entry.ranks.pop(vs, None) is not None:
            entry.ripe = [item for item in entry.ripe if item[2] is not vs]
            heapq.heapify(entry.ripe)
        vs.in_entry = False
        if not entry.acquired:
            entry.version += 1  # invalidate its workbench item; re-push if still non-empty
            if entry.has_work():
                self._push_entry(entry)
            else:
                self._with_work -= 1

    def _push_vs(self, entry: WorkbenchEntry, vs: VisitState) -> None:
        vs.in_entry = True
        heapq.heappush(entry.heap, (vs.next_fetch, next(self._seq), vs))

    def _push_entry(self, entry: WorkbenchEntry) -> None:
        entry.version += 1
        heapq.heappush(self._heap, (entry.key(), next(self._tie), entry.version, entry))

    # -- summaries ---------------------------------------------------------------------

    @property
    def front(self) -> int:
        """IPs with work: BUbiNG's front, counted in IPs (todo tokens included)."""
        return self._with_work

    def statistics(self) -> WorkbenchStatistics:
        return WorkbenchStatistics(
            entries=len(self.address_to_entry),
            entries_with_work=self._with_work,
            acquired=self._acquired,
            visit_states=self._visit_states,
            urls=self.urls,
            bytes=self.bytes,
        )

    def __repr__(self) -> str:
        s = self.statistics()
        return (
            f"<Workbench entries={s.entries} with_work={s.entries_with_work} acquired={s.acquired} "
            f"visit_states={s.visit_states} urls={s.urls} bytes={s.bytes}>"
        )
