"""Visit states: one per host (scheme+authority), holding its queue of paths and its politeness clock.

A :class:`VisitState` is BUbiNG's per-host record. It keeps the host's next URLs as
path+query bytes packed into one ``bytearray`` (:class:`PathQueue`), so a queued URL costs
its length plus one or two bytes, not a Python object. Its ``next_fetch`` is the earliest
monotonic instant a fetch of this host may start (host politeness).

Lifecycle (``Phase``; illegal transitions raise, see ``TRANSITIONS``)::

    NEW ──resolve──▶ RESOLVING ──resolved──▶ READY ◀──release── ACQUIRED
                      ▲  │                     │ ──acquire──▶ ACQUIRED
                      │  └──failed──▶ BROKEN ◀─┘ (robots unreachable, address refused)
                      └──resolve── READY (its address expired: ``Workbench.readdress``)
    any ──purge──▶ PURGED

READY visit states are owned by their :class:`~frontier.workbench.WorkbenchEntry`;
an ACQUIRED one is a token held by exactly one fetcher until it is released. A host being
re-resolved stays attached to the entry of its old IP, off its heap, until ``Workbench.move``.

Clocks: ``next_fetch`` and ``ip_expires`` are monotonic instants, like every politeness time;
``robots_fetched`` is wall-clock seconds, because robots.txt rules outlive the process (they
are checkpointed, and a monotonic instant means nothing after a reboot).
"""

from __future__ import annotations

import heapq
import math
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
    """What the frontier needs of the engine's robots.txt rules: bytes to checkpoint them."""

    def encode(self) -> bytes: ...


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

    def __iter__(self):  # type: ignore[no-untyped-def]
        """Items in order, without consuming them (for checkpoints and tests)."""
        buf, pos, end = self._buf, self._head, len(self._buf)
        while pos < end:
            n, pos = varint_at(buf, pos)
            yield bytes(buf[pos : pos + n])
            pos += n


class PriorityPathQueue:
    """Per-host queue for policies that rank URLs: lowest priority first, FIFO among equals.

    Used only when the crawl policy declares ``ranks_urls``; the default breadth-first
    policy keeps the packed :class:`PathQueue`.
    """

    __slots__ = ("_heap", "_seq", "_nbytes")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, bytes]] = []
        self._seq = 0
        self._nbytes = 0

    def __len__(self) -> int:
        return len(self._heap)

    @property
    def nbytes(self) -> int:
        return self._nbytes

    def append(self, item: bytes, priority: int = 0) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (priority, self._seq, item))
        self._nbytes += len(item) + 1

    def popleft(self) -> bytes:
        item = heapq.heappop(self._heap)[2]
        self._nbytes -= len(item) + 1
        return item

    def __iter__(self):  # type: ignore[no-untyped-def]
        return (item for _, _, item in sorted(self._heap))

    def ranked_items(self) -> list[tuple[int, bytes]]:
        """(priority, item) in the order they will be popped (for checkpoints)."""
        return [(priority, item) for priority, _, item in sorted(self._heap)]


class VisitState:
    """Per-host crawl state.

    Invariants: ``queue`` holds path+query bytes in the order they will be fetched;
    ``on_disk`` counts the host's further URLs parked in the virtualizer, all of which come
    after everything in ``queue``; ``next_fetch`` is only ever set from the end of a fetch
    plus ``host_delay`` (or a retry back-off), so two fetches of the host are at least
    ``host_delay`` apart.
    """

    __slots__ = (
        "id",
        "scheme_authority",
        "queue",
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
    )

    def __init__(self, id: int, scheme_authority: str, host_delay: float, ranked: bool = False) -> None:
        self.id = id
        self.scheme_authority = scheme_authority
        self.queue: PathQueue | PriorityPathQueue = PriorityPathQueue() if ranked else PathQueue()
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
        return self.retry_path is not None or len(self.queue) > 0

    def __repr__(self) -> str:
        return (
            f"<VisitState {self.scheme_authority} {self.phase.value} ip={self.ip} "
            f"queued={len(self.queue)} on_disk={self.on_disk} next_fetch={self.next_fetch:.3f}>"
        )
