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

``step`` is synchronous and returns the I/O to do (hosts to resolve); it never waits.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from frontier.shapes import ShapeBudget
from frontier.urls import split
from frontier.visit_state import Phase, VisitState
from frontier.workbench import Workbench

BYTES_PER_URL_ESTIMATE = 100  # BUbiNG sizes the workbench in path+queries as bytes/100


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
        sieve,  # frontier.sieve.MercatorSieve
        virtualizer,  # frontier.virtualizer.WorkbenchVirtualizer
        *,
        workbench_bytes: int,
        host_delay: float,
        max_urls_per_host: int,
        required_front: int = 1000,
        front_step: int = 1000,
        ranked: bool = False,
        shapes: ShapeBudget | None = None,
    ) -> None:
        self.workbench = workbench
        self.sieve = sieve
        self.virtualizer = virtualizer
        self.workbench_bytes = workbench_bytes
        self.host_delay = host_delay
        self.max_urls_per_host = max_urls_per_host
        self.required_front = required_front
        self.front_step = front_step
        self.front_cap = max(required_front, workbench_bytes // BYTES_PER_URL_ESTIMATE // 2)
        self.ranked = ranked
        self.shapes = shapes  # counted here, as URLs leave the sieve: each one exactly once
        self.host_to_visit_state: dict[str, VisitState] = {}
        self.refill: deque[VisitState] = deque()
        self._next_id = 0
        self.not_before = 0.0  # no new host is fetched before this (a resumed crawl's may have been just fetched)
        self.from_sieve = self.to_disk = self.from_disk = 0
        self.dropped_host_limit = 0
        self.dropped_purged = 0
        self.fetcher_waits = 0

    # -- signals from the engine ------------------------------------------------------

    def fetcher_waited(self) -> None:
        """A fetcher found the todo ring empty: grow the required front if it was reached."""
        self.fetcher_waits += 1
        if self.workbench.front >= self.required_front and self.required_front < self.front_cap:
            self.required_front = min(self.front_cap, self.required_front + self.front_step)

    def emptied(self, vs: VisitState) -> None:
        """The fetcher took the last in-memory URL of ``vs``: refill it from disk first."""
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

    def place_revisit(self, item: bytes) -> VisitState | None:
        """Put a due revisit straight into its host's queue (it bypasses the sieve)."""
        return self._place(item, self.per_host_limit(), count_against_limit=False)

    def _refill(self, vs: VisitState, limit: int) -> int:
        if vs.phase is Phase.PURGED:
            return 0
        items = self.virtualizer.dequeue(vs.id, max(1, limit - len(vs.queue)))
        vs.on_disk -= len(items)
        for item in items:
            self._push(vs, item)
        self.from_disk += len(items)
        return len(items)

    def _place(self, item: bytes, limit: int, count_against_limit: bool = True) -> VisitState | None:
        url = item[1:] if self.ranked else item
        scheme_authority, path_query = split(url.decode())
        vs = self.host_to_visit_state.get(scheme_authority)
        created = vs is None
        if vs is None:
            vs = self._new(scheme_authority)
        elif vs.phase is Phase.PURGED:
            self.dropped_purged += 1
            return None
        elif vs.phase is Phase.NEW:  # restored from a checkpoint with nothing queued: resolve it now
            vs.transition("resolve")
            created = True
        if count_against_limit:
            if vs.scheduled >= self.max_urls_per_host:
                self.dropped_host_limit += 1
                return None
            if self.shapes is not None and not self.shapes.admit(scheme_authority, path_query):
                return None
            vs.scheduled += 1
        entry = bytes([item[0]]) + path_query.encode() if self.ranked else path_query.encode()
        if vs.on_disk or len(vs.queue) >= limit or self.workbench.bytes >= self.workbench_bytes:
            self.virtualizer.append(vs.id, entry)
            vs.on_disk += 1
            self.to_disk += 1
            if not len(vs.queue):
                self.emptied(vs)  # nothing in memory would ever trigger its refill
        else:
            self._push(vs, entry)
        return vs if created else None

    def restore(self, vs: VisitState, items: list[bytes]) -> None:
        """Take back a visit state saved by a checkpoint, with its queued entries in order."""
        self.host_to_visit_state[vs.scheme_authority] = vs
        self._next_id = max(self._next_id, vs.id)
        for entry in items:
            self._push(vs, entry)
        if vs.on_disk and not len(vs.queue):
            self.emptied(vs)

    def _push(self, vs: VisitState, entry: bytes) -> None:
        if self.ranked:
            self.workbench.push_url(vs, entry[1:], priority=entry[0])
        else:
            self.workbench.push_url(vs, entry)

    def _new(self, scheme_authority: str) -> VisitState:
        self._next_id += 1
        vs = VisitState(self._next_id, scheme_authority, self.host_delay, ranked=self.ranked)
        vs.next_fetch = self.not_before
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
