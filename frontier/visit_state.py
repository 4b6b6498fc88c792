"""Visit states: one per host (scheme+authority), holding its queue of paths and its politeness clock.

A :class:`VisitState` is BUbiNG's per-host record. It keeps the host's next URLs as
path+query bytes packed into one ``bytearray`` (:class:`PathQueue`), so a queued URL costs
its length plus one or two bytes, not a Python object; with a policy that ranks URLs, one
such queue per lane (:class:`LaneQueues`). Revisits that came due wait in a queue of their
own, fetched before the backlog. Its ``next_fetch`` is the earliest monotonic instant a
fetch of this host may start (host politeness).

Lifecycle: a visit state is in one ``Phase`` and moves only along ``TRANSITIONS`` (anything
else raises :class:`IllegalTransition`); the diagram in ARCHITECTURE.md, "Visit states", is
generated from that table (``python -m tools.visit_states --write``), so it cannot drift.

READY visit states are owned by their :class:`~frontier.workbench.WorkbenchEntry`;
an ACQUIRED one is a token held by exactly one fetcher until it is released. A host being
re-resolved stays attached to the entry of its old IP, off its heap, until ``Workbench.move``.

Clocks: ``next_fetch`` and ``ip_expires`` are monotonic instants, like every politeness time;
``robots_fetched`` is wall-clock seconds, because robots.txt rules outlive the process (they
are checkpointed, and a monotonic instant means nothing after a reboot).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Any, Protocol


class Phase(Enum):
    NEW = "new"
    RESOLVING = "resolving"
    READY = "ready"
    ACQUIRED = "acquired"
    BROKEN = "broken"
    PURGED = "purged"


TRANSITIONS: dict[tuple[Phase, str], Phase] = {
    (Phase.NEW, "resolve"): Phase.RESOLVING,
    (Phase.RESOLVING, "resolved"): Phase.READY,
    (Phase.RESOLVING, "failed"): Phase.BROKEN,
    (Phase.BROKEN, "resolve"): Phase.RESOLVING,
    (Phase.READY, "acquire"): Phase.ACQUIRED,
    (Phase.ACQUIRED, "release"): Phase.READY,
    (Phase.READY, "resolve"): Phase.RESOLVING,
    **{(phase, "purge"): Phase.PURGED for phase in Phase},
}


class Rules(Protocol):
    """The engine's robots.txt rules as a visit state holds them: the frontier reads their
    Crawl-delay and checkpoints their bytes; the fetchers ask whether a path is allowed."""

    crawl_delay: float | None

    def encode(self) -> bytes: ...

    def allowed(self, path_query: str) -> bool: ...


class IllegalTransition(RuntimeError):
    """A visit state was asked to do something its phase forbids: a bug, never retried."""


def varint_at(buf: bytes | bytearray, pos: int) -> tuple[int, int]:
    """The LEB128 length prefix at ``pos`` and the position after it."""
    n = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        n |= (byte & 0x7F) << shift
        if byte < 0x80:
            return n, pos
        shift += 7


class PathQueue:
    """A FIFO of byte strings packed into one bytearray: ``varint length`` + bytes per item.

    Popping advances a read offset; the consumed prefix is dropped when it is over half
    the buffer, so the amortised cost stays O(1) per item and memory stays within 2× the
    live bytes.
    """

    __slots__ = ("_buf", "_head", "_count")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._head = 0
        self._count = 0

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        """Live bytes held (items plus their length prefixes)."""
        return len(self._buf) - self._head

    def append(self, item: bytes) -> None:
        n = len(item)
        buf = self._buf
        while n >= 0x80:
            buf.append((n & 0x7F) | 0x80)
            n >>= 7
        buf.append(n)
        buf += item
        self._count += 1

    def popleft(self) -> bytes:
        if not self._count:
            raise IndexError("pop from an empty PathQueue")
        buf = self._buf
        n, pos = varint_at(buf, self._head)
        item = bytes(buf[pos : pos + n])
        self._head = pos + n
        self._count -= 1
        if not self._count:
            buf.clear()
            self._head = 0
        elif self._head > 4096 and self._head * 2 > len(buf):
            del buf[: self._head]
            self._head = 0
        return item

    def clear(self) -> list[bytes]:
        """Take every item out at once (a purge)."""
        items = list(self)
        self._buf.clear()
        self._head = self._count = 0
        return items

    def __iter__(self) -> Iterator[bytes]:
        """Items in order, without consuming them (for checkpoints and tests)."""
        buf, pos, end = self._buf, self._head, len(self._buf)
        while pos < end:
            n, pos = varint_at(buf, pos)
            yield bytes(buf[pos : pos + n])
            pos += n


class LaneQueues:
    """A ranked host's queue: one FIFO per lane in memory, and per lane how many items wait on disk.

    Used only when the crawl policy declares ``ranks_urls`` (``VisitState.lanes``); the
    breadth-first path keeps the one packed :class:`PathQueue`. A lane's items on disk are
    the virtualizer's key ``(visit state id << 16) | lane``.

    Invariants: a lane's items on disk all come after its items in memory (so a lane with
    items on disk takes its new ones on disk too); no lane maps to an empty queue or a zero
    count; ``len`` is the number of items in memory.
    """

    __slots__ = ("memory", "disk", "_count")

    def __init__(self) -> None:
        self.memory: dict[int, PathQueue] = {}
        self.disk: dict[int, int] = {}
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def append(self, item: bytes, lane: int) -> None:
        queue = self.memory.get(lane)
        if queue is None:
            queue = self.memory[lane] = PathQueue()
        queue.append(item)
        self._count += 1

    def pop(self, lane: int) -> bytes:
        """The first item in memory of ``lane`` (which must have one)."""
        queue = self.memory[lane]
        item = queue.popleft()
        if not len(queue):
            del self.memory[lane]
        self._count -= 1
        return item

    def clear(self) -> list[bytes]:
        """Take every item in memory out (a purge); the disk counts stay."""
        items = [item for queue in self.memory.values() for item in queue]
        self.memory.clear()
        self._count = 0
        return items

    def spilled(self, lane: int, n: int) -> None:
        """``n`` more items of ``lane`` went to disk (``n`` < 0: came back from it)."""
        left = self.disk.get(lane, 0) + n
        if left:
            self.disk[lane] = left
        else:
            self.disk.pop(lane, None)

    def best(self, rank: Callable[[int], float], *, on_disk: bool = False) -> int:
        """The lane whose first item goes next: the lowest ``rank`` among lanes with items in
        memory or on disk (or only those on disk), the lower lane on a tie. There must be one."""
        lanes = self.disk.keys() if on_disk else self.memory.keys() | self.disk.keys()
        return min(lanes, key=lambda lane: (rank(lane), lane))


class VisitState:
    """Per-host crawl state.

    Invariants: the next URL is ``retry_path`` if set, else the first of ``due`` (revisits
    that came due; None when empty), else the backlog: ``queue`` holds path+query bytes in
    the order they will be fetched, or, with a ranked policy, ``lanes`` holds them per lane
    (and ``queue`` stays empty); ``on_disk`` counts the host's further URLs parked in the
    virtualizer, all of which come after everything in memory (of their lane, when ranked);
    ``next_fetch`` is only ever set from the end of a fetch plus ``host_delay`` (or a retry
    back-off), so two fetches of the host are at least ``host_delay`` apart.
    """

    __slots__ = (
        "id",
        "scheme_authority",
        "queue",
        "lanes",
        "due",
        "on_disk",
        "next_fetch",
        "host_delay",
        "phase",
        "entry",
        "ip",
        "robots",
        "robots_fetched",
        "ip_expires",
        "ip_used",
        "scheduled",
        "fetched",
        "retries",
        "heap_seq",
        "in_entry",
        "refilling",
        "retry_path",
        "robots_path",
        "robots_hops",
        "in_flight",
        "validators",
    )

    def __init__(self, id: int, scheme_authority: str, host_delay: float, ranked: bool = False) -> None:
        self.id = id
        self.scheme_authority = scheme_authority
        self.queue = PathQueue()
        self.lanes = LaneQueues() if ranked else None
        self.due: PathQueue | None = None  # revisits that came due, fetched before the backlog
        self.validators = b""  # those of the URL out with a fetcher, if a revisit (frontier/validators.py)
        self.on_disk = 0
        self.next_fetch = 0.0
        self.host_delay = host_delay
        self.phase = Phase.NEW
        self.entry: Any = None
        self.ip: str | None = None
        self.ip_expires = math.inf  # when the DNS answer behind ``ip`` expires
        self.ip_used = False  # that answer has been handed to a fetcher (see address_due)
        self.robots: Rules | None = None  # the engine's rules; None means robots.txt not fetched yet
        self.robots_fetched = 0.0  # wall-clock seconds when those rules were fetched
        self.scheduled = 0  # URLs that left the sieve for this host (max_urls_per_host counts these)
        self.fetched = 0
        self.retries = 0
        self.heap_seq = 0
        self.in_entry = False  # inside its entry's heap of visit states
        self.refilling = False  # waiting in the distributor's refill queue
        self.retry_path: bytes | None = None  # a URL whose fetch failed, retried before the queue
        self.robots_path = "/robots.txt"  # where robots.txt is fetched from: a redirect moves it
        self.robots_hops = 0  # redirects followed so far for this robots.txt
        self.in_flight: bytes | None = None  # the path+query out with a fetcher (kept by checkpoints)

    def transition(self, event: str) -> None:
        try:
            self.phase = TRANSITIONS[(self.phase, event)]
        except KeyError:
            raise IllegalTransition(f"{self.scheme_authority}: {event!r} in phase {self.phase.value}") from None

    def robots_due(self, now: float, expiry: float) -> bool:
        """True when robots.txt must be (re)fetched before the next page; ``now`` is wall-clock seconds."""
        return self.robots is None or now >= self.robots_fetched + expiry

    def address_due(self, now: float) -> bool:
        """True when the host must be resolved again before its next fetch (``now`` is monotonic).

        An answer serves at least one fetch, even one that expired before the IP's turn came
        (a slow resolver, a crowded IP): otherwise such a host would be re-resolved forever.
        """
        return self.ip_used and now >= self.ip_expires

    @property
    def has_work(self) -> bool:
        """Something to fetch in memory (robots.txt is fetched together with the first page)."""
        return (
            self.retry_path is not None
            or len(self.queue) > 0
            or self.due is not None
            or (self.lanes is not None and len(self.lanes) > 0)
        )

    @property
    def backlog_in_memory(self) -> int:
        """URLs of the backlog in memory (due revisits and a retry not counted)."""
        return len(self.lanes) if self.lanes is not None else len(self.queue)

    @property
    def queued(self) -> int:
        """URLs in memory: the backlog and the due revisits."""
        lanes, due = self.lanes, self.due
        return len(self.queue) + (len(lanes) if lanes is not None else 0) + (len(due) if due is not None else 0)

    def __repr__(self) -> str:
        return (
            f"<VisitState {self.scheme_authority} {self.phase.value} ip={self.ip} "
            f"queued={self.queued} on_disk={self.on_disk} next_fetch={self.next_fetch:.3f}>"
        )
