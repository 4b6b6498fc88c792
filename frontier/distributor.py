"""The distributor: moves URLs out of the sieve and the virtualizer into the workbench.

It balances BUbiNG's two forces with the *refill queue* of BUbiNG's later code rather than
the 2013 paper's 1% limbo rule:

* **Breadth-first fidelity first.** A visit state whose in-memory queue empties while it still
  has URLs on disk is put on the refill queue, and ``step`` serves the refill queue before
  anything else, so a host never waits on new hosts while its own backlog sits on disk.
  Refills stop while the workbench is over its byte budget, so the budget is exceeded by
  at most one refill batch (T17).
  This is the limbo rule with a 0% threshold: simpler, and per-host order is exact.
* **Front adaptation second.** The *front* is the number of IPs with work (on the
  workbench or out with a fetcher). Fetchers report every time they find the todo ring
  empty; if the front had already reached the required size, the required size grows by
  ``front_step`` (it never shrinks). Only while the front is below the required size and
  the workbench is under its byte budget does ``step`` read the sieve, which is where new
  hosts come from.

A URL from the sieve for a new host creates a :class:`VisitState` that the engine must
resolve (``step`` returns them). A URL for a known host goes to memory, or to the host's
on-disk queue when the host already has URLs on disk (order), holds its per-host memory
share, or the workbench is over budget. The per-host share is BUbiNG's
``pathQueryLimit``: about five minutes of fetching, but at least 4 and at most the
workbench capacity divided by the required front.

**Ranked mode** (a policy with ``ranks_urls``): a sieve item is the URL's lane (2 bytes,
big-endian) then the URL, and each host keeps one FIFO per lane
(:class:`~frontier.visit_state.LaneQueues`). The same rule applies per lane: a URL goes to
disk, under the virtualizer key ``(id << 16) | lane``, when its lane already has URLs there,
the host holds its share or the workbench is over budget. A refill reads the lane of best
``lane_rank``, and ``refill_lane`` reads a given lane at once, when the frontier finds the
lane to fetch next all on disk.

Due revisits (``place_revisit``) skip all of this: they go to the host's queue of due
revisits, in memory, ahead of its backlog, whatever the budgets.

``step`` is synchronous and returns the I/O to do (hosts to resolve); it never waits.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from frontier.shapes import ShapeBudget
from frontier.sieve import MercatorSieve
from frontier.urls import split
from frontier.validators import attach, detach
from frontier.virtualizer import WorkbenchVirtualizer
from frontier.visit_state import LaneQueues, Phase, VisitState
from frontier.workbench import Workbench

BYTES_PER_URL_ESTIMATE = 100  # BUbiNG sizes the workbench in path+queries as bytes/100
_NUL = b"\x00"  # in an item of a host's queues only between a revisit's path and its validators
LANE_REFILL_MIN = 16  # a lane read from disk brings at least this many: one block read serves several fetches


def lane_key(vs: VisitState, lane: int) -> int:
    """The virtualizer key of one lane of a ranked host (its id's key, shifted clear of the lane)."""
    return (vs.id << 16) | lane


@dataclass(frozen=True, slots=True)
class DistributorStatistics:
    required_front: int
    front: int
    refill_queue: int
    from_sieve: int
    to_disk: int
    from_disk: int
    dropped_host_limit: int
    dropped_purged: int
    fetcher_waits: int


class Distributor:
    """Feeds the workbench. Owns ``host_to_visit_state`` and the refill queue."""

    def __init__(
        self,
        workbench: Workbench,
        sieve: MercatorSieve,
        virtualizer: WorkbenchVirtualizer,
        *,
        workbench_bytes: int,
        host_delay: float,
        max_urls_per_host: int,
        required_front: int = 1000,
        front_step: int = 1000,
        lane_rank: Callable[[str, int], float] | None = None,
        shapes: ShapeBudget | None = None,
    ) -> None:
        self.workbench = workbench
        self.sieve = sieve
        self.virtualizer = virtualizer
        self.workbench_bytes = workbench_bytes
        self.host_delay = host_delay  # new hosts start with it (a live setting: Frontier.set_delays)
        self.max_urls_per_host = max_urls_per_host
        self.required_front = required_front
        self.front_step = front_step
        self.front_cap = max(required_front, workbench_bytes // BYTES_PER_URL_ESTIMATE // 2)
        self.lane_rank = lane_rank  # the policy's, in ranked mode only
        self.ranked = lane_rank is not None
        self.shapes = shapes  # counted here, as URLs leave the sieve: each one exactly once
        self.host_to_visit_state: dict[str, VisitState] = {}
        self.refill: deque[VisitState] = deque()
        self._next_id = 0
        self.not_before = 0.0  # no new host is fetched before this (a resumed crawl's may have been just fetched)
        # per host another machine fetched last, the earliest its first fetch here may start: that machine's
        # last fetch of it plus its Crawl-delay (issue 17, ``engine/takeover.py``)
        self.first_fetch: dict[str, float] = {}
        self.from_sieve = self.to_disk = self.from_disk = 0
        self.dropped_host_limit = 0
        self.dropped_purged = 0
        self.fetcher_waits = 0
        # hosts another agent crawls since their DNS answer (a crawl over several machines: the machine
        # of their IP's); their URLs leaving the sieve collect in ``forward`` for the engine to send on
        self.handed_off: set[str] = set()
        self.forward: list[str] = []

    # -- signals from the engine ------------------------------------------------------

    def ip_of(self, host: str) -> str | None:
        """The address ``host`` was resolved to (kept after a purge), None if it was not."""
        vs = self.host_to_visit_state.get(host)
        return vs.ip if vs is not None else None

    def fetcher_waited(self) -> None:
        """A fetcher found the todo ring empty: grow the required front if it was reached."""
        self.fetcher_waits += 1
        if self.workbench.front >= self.required_front and self.required_front < self.front_cap:
            self.required_front = min(self.front_cap, self.required_front + self.front_step)

    def emptied(self, vs: VisitState) -> None:
        """The backlog of ``vs`` in memory is empty: refill it from disk first, if it has URLs there."""
        if vs.on_disk and not vs.refilling:
            vs.refilling = True
            self.refill.append(vs)

    # -- the step -----------------------------------------------------------------------

    def per_host_limit(self) -> int:
        capacity = self.workbench_bytes // BYTES_PER_URL_ESTIMATE
        five_minutes = int(300 / max(self.host_delay, 1e-3))
        return max(4, min(five_minutes, capacity // max(1, self.required_front)))

    def wants_sieve(self) -> bool:
        return self.workbench.front < self.required_front and self.workbench.bytes < self.workbench_bytes

    def step(self, budget: int = 1000) -> list[VisitState]:
        """Do up to ``budget`` URL moves; return the new visit states the engine must resolve."""
        limit = self.per_host_limit()
        while self.refill and budget > 0 and self.workbench.bytes < self.workbench_bytes:
            vs = self.refill.popleft()
            vs.refilling = False
            budget -= self._refill(vs, limit)
        new_hosts: list[VisitState] = []
        if budget > 0 and self.wants_sieve():
            for item in self.sieve.dequeue(budget):
                self.from_sieve += 1
                created = self._place(item, limit)
                if created is not None:
                    new_hosts.append(created)
        return new_hosts

    def place_revisit(self, url: bytes) -> VisitState | None:
        """Queue a due revisit ahead of its host's backlog (it bypasses the sieve and every budget).

        ``url`` may carry its validators (``frontier/validators.py``), which stay with its path.
        Returns the visit state if the engine must resolve it (a host new to this process)."""
        bare, validators = detach(url)
        scheme_authority, path_query = split(bare.decode())
        vs, created = self._host(scheme_authority)
        if vs is not None:
            self.workbench.push_due(vs, attach(path_query.encode(), validators))
        elif scheme_authority in self.handed_off:
            self.forward.append(bare.decode())
        return vs if created else None

    def _refill(self, vs: VisitState, limit: int) -> int:
        if vs.phase is Phase.PURGED:
            return 0
        if vs.lanes is not None:
            if not vs.lanes.disk:  # read meanwhile by refill_lane
                return 0
            return self._refill_lane(vs, vs.lanes.best(self.lane_ranks(vs), on_disk=True), max(1, limit - len(vs.lanes)))
        items = self.virtualizer.dequeue(vs.id, max(1, limit - len(vs.queue)))
        vs.on_disk -= len(items)
        for item in items:
            self.workbench.push_url(vs, item)
        self.from_disk += len(items)
        return len(items)

    def refill_lane(self, vs: VisitState, lane: int) -> None:
        """Read ``lane`` of a ranked host from disk now: it goes next and has nothing in memory."""
        assert vs.lanes is not None
        self._refill_lane(vs, lane, max(LANE_REFILL_MIN, self.per_host_limit() - len(vs.lanes)))

    def _refill_lane(self, vs: VisitState, lane: int, n: int) -> int:
        lanes = vs.lanes
        assert lanes is not None
        items = self.virtualizer.dequeue(lane_key(vs, lane), n)
        lanes.spilled(lane, -len(items))
        vs.on_disk -= len(items)
        for item in items:
            self.workbench.push_lane(vs, item, lane)
        self.from_disk += len(items)
        return len(items)

    def lane_ranks(self, vs: VisitState) -> Callable[[int], float]:
        """The policy's rank of each lane of the ranked host ``vs``, asked afresh at each call."""
        lane_rank, host = self.lane_rank, vs.scheme_authority
        assert lane_rank is not None
        return lambda lane: lane_rank(host, lane)

    def _host(self, scheme_authority: str) -> tuple[VisitState | None, bool]:
        """The visit state of a host a URL arrives for (None if purged), and whether the engine must resolve it."""
        vs = self.host_to_visit_state.get(scheme_authority)
        if vs is None:
            return self._new(scheme_authority), True
        if vs.phase is Phase.PURGED:
            if scheme_authority not in self.handed_off:
                self.dropped_purged += 1
            return None, False
        if vs.phase is Phase.NEW:  # restored from a checkpoint with nothing queued: resolve it now
            vs.transition("resolve")
            return vs, True
        return vs, False

    def _place(self, item: bytes, limit: int) -> VisitState | None:
        url = item[2:] if self.ranked else item
        scheme_authority, path_query = split(url.decode())
        vs, created = self._host(scheme_authority)
        if vs is None:
            if scheme_authority in self.handed_off:
                self.forward.append(scheme_authority + path_query)
            return None
        if vs.scheduled >= self.max_urls_per_host:
            self.dropped_host_limit += 1
            return None
        if self.shapes is not None and not self.shapes.admit(scheme_authority, path_query):
            return None
        vs.scheduled += 1
        if vs.lanes is not None:
            self._place_in_lane(vs, vs.lanes, (item[0] << 8) | item[1], path_query.encode(), limit)
        elif vs.on_disk or len(vs.queue) >= limit or self.workbench.bytes >= self.workbench_bytes:
            self.virtualizer.append(vs.id, path_query.encode())
            self._spilled(vs, len(vs.queue))
        else:
            self.workbench.push_url(vs, path_query.encode())
        return vs if created else None

    def _place_in_lane(self, vs: VisitState, lanes: LaneQueues, lane: int, path_query: bytes, limit: int) -> None:
        if lane in lanes.disk or len(lanes) >= limit or self.workbench.bytes >= self.workbench_bytes:
            self.virtualizer.append(lane_key(vs, lane), path_query)
            lanes.spilled(lane, 1)
            self._spilled(vs, len(lanes))
        else:
            self.workbench.push_lane(vs, path_query, lane)

    def _spilled(self, vs: VisitState, in_memory: int) -> None:
        """One more URL of ``vs`` went to disk, behind ``in_memory`` URLs of its backlog."""
        vs.on_disk += 1
        self.to_disk += 1
        if not in_memory:
            self.emptied(vs)  # nothing in memory would ever trigger its refill

    def hand_off(self, vs: VisitState) -> list[str]:
        """``vs`` just resolved, and another agent crawls it from now on (issue 17: its IP's machine):
        its queued URLs (in memory and on disk; then purge it), and its URLs that leave the sieve later
        collect in ``forward``."""
        lanes = vs.lanes.memory.values() if vs.lanes is not None else ()
        keys = [vs.id] if vs.lanes is None else [lane_key(vs, lane) for lane in vs.lanes.disk]
        items = [*vs.queue, *(vs.due or ()), *(item for queue in lanes for item in queue),
                 *(item for key in keys for item in self.virtualizer.dequeue(key, max(1, self.virtualizer.count(key))))]
        self.forget_disk(vs)
        self.handed_off.add(vs.scheme_authority)
        return [vs.scheme_authority + detach(item)[0].decode() for item in items]

    def forget_disk(self, vs: VisitState) -> int:
        """Drop a host's URLs on disk (a purge); returns how many."""
        if vs.lanes is None:
            dropped = self.virtualizer.remove(vs.id)
        else:
            dropped = sum(self.virtualizer.remove(lane_key(vs, lane)) for lane in vs.lanes.disk)
            vs.lanes.disk.clear()
        vs.on_disk = 0
        return dropped

    def restore(self, vs: VisitState, items: list[bytes], lanes: list[tuple[int, list[bytes], int]]) -> None:
        """Take back a visit state saved by a checkpoint: ``items`` in fetch order (breadth-first),
        or, ranked, the URLs to fetch first (out with a fetcher, to retry, due) and each lane's
        (lane, URLs in memory, count on disk)."""
        self.host_to_visit_state[vs.scheme_authority] = vs
        self._next_id = max(self._next_id, vs.id)
        if vs.lanes is None:
            for item in items:  # a revisit with validators goes back among the due: the backlog holds bare paths
                if _NUL in item:
                    self.workbench.push_due(vs, item)
                else:
                    self.workbench.push_url(vs, item)
        else:
            for item in items:
                self.workbench.push_due(vs, item)
            for lane, in_memory, on_disk in lanes:
                for item in in_memory:
                    self.workbench.push_lane(vs, item, lane)
                if on_disk:
                    vs.lanes.spilled(lane, on_disk)
        if not vs.backlog_in_memory:
            self.emptied(vs)

    def drop_purged(self, scheme_authority: str) -> None:
        """Forget the purged visit state of a host that comes back to this agent (a URL of it makes a new one),
        but not when the host may be fetched next: the new visit state waits for that, as its first fetch
        may come right after this agent's last (a host given up and taken back within its delay)."""
        vs = self.host_to_visit_state.pop(scheme_authority, None)
        if vs is not None and vs.next_fetch > self.first_fetch.get(scheme_authority, 0.0):
            self.first_fetch[scheme_authority] = vs.next_fetch

    def _new(self, scheme_authority: str) -> VisitState:
        self._next_id += 1
        vs = VisitState(self._next_id, scheme_authority, self.host_delay, ranked=self.ranked)
        vs.next_fetch = max(self.not_before, self.first_fetch.pop(scheme_authority, 0.0))
        vs.transition("resolve")
        self.host_to_visit_state[scheme_authority] = vs
        return vs

    def statistics(self) -> DistributorStatistics:
        return DistributorStatistics(
            required_front=self.required_front,
            front=self.workbench.front,
            refill_queue=len(self.refill),
            from_sieve=self.from_sieve,
            to_disk=self.to_disk,
            from_disk=self.from_disk,
            dropped_host_limit=self.dropped_host_limit,
            dropped_purged=self.dropped_purged,
            fetcher_waits=self.fetcher_waits,
        )

    def top_hosts(self, n: int) -> list[tuple[str, int, int]]:
        """The ``n`` hosts with the most pages fetched: (scheme+authority, fetched, URLs waiting in memory
        and on disk). A walk over every visit state: for a look now and then (the dashboard), never per fetch."""
        best = heapq.nlargest(n, self.host_to_visit_state.values(), key=lambda vs: vs.fetched)
        return [(vs.scheme_authority, vs.fetched, vs.queued + vs.on_disk) for vs in best]
