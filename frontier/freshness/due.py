"""When each user's next crawl is due: a heap with lazy deletion, and the pool of users due now.

Invariant: a user is in at most one of three places: the heap (due later, or not yet looked at),
the pool (due, waiting for a call) or in flight (taken, not yet reported); a user in none has no
crawl planned. Each user's entry in the heap carries its version; a newer due time, or a take,
makes older entries stale, and they are dropped when they reach the top. O(log n) per change.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np
import numpy.typing as npt


class DueQueue:
    def __init__(self, users: int) -> None:
        self._heap: list[tuple[float, int, int]] = []
        self._version = [0] * users
        self.pool: dict[int, float] = {}
        self.in_flight: set[int] = set()

    def __repr__(self) -> str:
        return f"<DueQueue heap={len(self._heap)} pool={len(self.pool)} in_flight={len(self.in_flight)}>"

    def plan(self, user: int, due: float) -> None:
        """The user's next crawl is due at ``due`` (replacing any other plan, pooled or in flight)."""
        self.cancel(user)
        heapq.heappush(self._heap, (due, self._version[user], user))

    def cancel(self, user: int) -> None:
        """No crawl of the user is planned any more."""
        self._version[user] += 1
        self.pool.pop(user, None)
        self.in_flight.discard(user)

    def peek(self) -> tuple[float, int] | None:
        """The earliest planned (due, user) still in the heap."""
        while self._heap:
            due, version, user = self._heap[0]
            if version == self._version[user]:
                return due, user
            heapq.heappop(self._heap)
        return None

    def pop(self) -> None:
        """Drop the top entry (the one :meth:`peek` returned): its user is then in none of the places."""
        _, _, user = heapq.heappop(self._heap)
        self._version[user] += 1

    def earliest(self) -> float | None:
        """The earliest due time of a user pooled or planned, None if there is none."""
        top = self.peek()
        due = [t for t in (min(self.pool.values()) if self.pool else None, top[0] if top else None) if t is not None]
        return min(due) if due else None

    def take(self, now: float, limit: int,
             backlog: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.float64]]) -> list[int]:
        """Pool every user due by ``now``, then take (start) at most ``limit`` of the pooled, the
        largest ``backlog`` first (ties in pool order)."""
        while (top := self.peek()) is not None and top[0] <= now:
            self.pop()
            self.pool[top[1]] = top[0]
        if limit <= 0 or not self.pool:
            return []
        pooled = np.fromiter(self.pool, dtype=np.int64, count=len(self.pool))
        chosen: list[int] = pooled[np.argsort(-backlog(pooled), kind="stable")[:limit]].tolist()
        self.start(chosen)
        return chosen

    def start(self, users: list[int]) -> None:
        """The pooled ``users`` are taken: in flight until reported."""
        for user in users:
            del self.pool[user]
            self.in_flight.add(user)


def next_due(queue: DueQueue, end: float, next_event: Callable[[], float], advance: Callable[[float], None]) -> float | None:
    """A planner's ``next_at``: the earliest due time of ``queue``, after running (``advance``) every
    planning event (a midnight, a period start) due before it and before ``end``."""
    while True:
        earliest = queue.earliest()
        event = next_event()
        # with users in flight and none planned, a report comes first: time must not run ahead of it
        idle = earliest is None and not queue.in_flight
        if event < end and (idle or earliest is not None and event <= earliest):
            advance(event)
            continue
        return earliest
