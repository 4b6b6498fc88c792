"""Names to addresses (ARCHITECTURE.md, step 4): a caching resolver over aiodns.

Who touches what: the agent's resolve tasks call ``CachingResolver.resolve`` once per new
host, and again whenever the answer a visit state holds has expired (``Answer.expires``: the
todo filler notices it and hands the host back to the resolve tasks instead of fetching);
fetchers never resolve, since connections are pinned to the address the workbench recorded.
Nothing here touches the frontier.

Two layers, so the policy can be tested with explicit times:

* ``DnsCache``: pure. Positive answers live for their TTL clamped to ``[min_ttl, max_ttl]``,
  stretched by :func:`kept_for`; failures live for ``negative_ttl``; at most ``max_entries`` of
  either, least recently used evicted first. Time is an argument; it reads no clock.
* ``CachingResolver``: the I/O. A miss starts one query task per host, which every
  concurrent caller of that host awaits (shielded, so one caller's cancellation does not
  cancel the others); a semaphore bounds the queries in flight. Expiry is counted from the
  ``now`` at which the query started, which errs towards re-resolving early.

*Why answers are stretched*: a crawl resolves thousands of hosts within its first minute, and
their answers, with the same TTL (300 s is common, and ``min_ttl``), would expire together: every
host would leave the front at its next turn to be resolved again, all at once, every TTL (the
soak benchmark showed the front and the throughput falling to a fraction every five minutes). So
each answer is kept between its clamped TTL and twice it (at most ``max_ttl``), a share drawn
per host and lookup: after one round the expiries are spread over a whole TTL. Heritrix keeps
addresses six hours whatever their TTL; twice the TTL stays close to what the server asked.

One address per host (bubing-nadine.md §4 item 4): the first A record, else the first AAAA.
IP literals, bracketed or not, are returned as they are, with no query. Failures raise
``DnsFailed`` with ``permanent`` set when retrying cannot help (NXDOMAIN, no address, a
malformed name) and unset otherwise (timeout, SERVFAIL, refused).

c-ares (1.23+) keeps a TTL-honouring query cache of its own beneath this one; this layer
adds the clamps, negative caching, the size bound, query sharing and ``lookup_nowait``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import aiodns
import pycares
import xxhash
from aiodns.error import DNSError

_PERMANENT = {
    pycares.errno.ARES_ENOTFOUND: "nxdomain",
    pycares.errno.ARES_ENODATA: "no address",
    pycares.errno.ARES_EBADNAME: "bad name",
}
_TEMPORARY = {
    pycares.errno.ARES_ETIMEOUT: "timeout",
    pycares.errno.ARES_ESERVFAIL: "servfail",
    pycares.errno.ARES_EREFUSED: "refused",
    pycares.errno.ARES_ECONNREFUSED: "connection refused",
    pycares.errno.ARES_ECANCELLED: "cancelled",
    pycares.errno.ARES_EDESTRUCTION: "cancelled",
}


class DnsFailed(Exception):
    """A host could not be resolved. ``permanent``: retrying later will not help."""

    def __init__(self, host: str, reason: str, permanent: bool) -> None:
        super().__init__(f"{host}: {reason}")
        self.host = host
        self.reason = reason
        self.permanent = permanent


class Answer(NamedTuple):
    """One address of a host and the instant (``now``'s clock) it stops being valid."""

    address: str
    expires: float  # the query's start + its TTL clamped to [min_ttl, max_ttl]; inf for an IP literal


class Resolver(Protocol):
    """The DNS seam (STYLE.md §6): benchmarks and the in-vitro web may swap implementations."""

    async def resolve(self, host: str, now: float) -> Answer: ...


def ip_literal(host: str) -> str | None:
    """``host`` as a normalised IP address if it is one (``[::1]`` included), else None."""
    try:
        return str(ipaddress.ip_address(host[1:-1] if host.startswith("[") and host.endswith("]") else host))
    except ValueError:
        return None


def kept_for(host: str, ttl: float, now: float) -> float:
    """How long an answer for ``host`` looked up at ``now``, with the clamped ``ttl``, is kept: between
    ``ttl`` and twice it, a share drawn from the host and the time (the same inputs, the same share)."""
    return ttl * (1.0 + xxhash.xxh3_64_intdigest(f"{host} {now!r}".encode()) / 2.0**64)


class CacheEntry(NamedTuple):
    expires: float
    address: str | None  # None for a cached failure
    reason: str = ""
    permanent: bool = False


class DnsCache:
    """Answers and failures by host name, each until its expiry; LRU-bounded. Reads no clock."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max(1, max_entries)
        self._entries: OrderedDict[str, CacheEntry] = OrderedDict()

    def get(self, host: str, now: float) -> CacheEntry | None:
        """The live entry for ``host`` (now the most recently used), or None; drops it if expired."""
        entry = self._entries.get(host)
        if entry is None:
            return None
        if now >= entry.expires:
            del self._entries[host]
            return None
        self._entries.move_to_end(host)
        return entry

    def put(self, host: str, entry: CacheEntry) -> None:
        self._entries[host] = entry
        self._entries.move_to_end(host)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, host: str) -> bool:  # for tests: present, expired or not
        return host in self._entries


@dataclass(frozen=True)
class DnsStatistics:
    hits: int
    misses: int  # lookups that started a query
    negative_hits: int
    failures: int  # queries that failed
    entries: int
    in_flight: int


class LoopResolver(aiodns.DNSResolver):
    """aiodns's resolver with c-ares's sockets watched by the event loop, not by a thread of pycares.

    With pycares 5, aiodns lets a thread of pycares's wait on c-ares's sockets, and each answer
    reaches the loop with ``call_soon_threadsafe``: the thread is woken, then wakes the loop. That
    cost 113–125 µs of CPU a query over loopback, against 68–98 with the sockets on the loop's own
    epoll (``bench.new_host_cost``; bench/RESULTS.md, issue 18, "The small records' deflate, the
    graph record in C, DNS answers on the loop"). That is aiodns's other mode (``sock_state_cb``,
    the one it falls back to when pycares cannot start its thread), chosen here through the hook
    aiodns picks its mode with. What the thread also does, reading resolv.conf again when it is
    edited, is lost: a crawl that names no ``dns.servers`` reads resolv.conf once, at start, as
    Heritrix's and BUbiNG's JVMs do.
    """

    def _make_channel(self, **kwargs: Any) -> tuple[bool, pycares.Channel]:
        watch = weakref.WeakMethod(self._sock_state_cb)

        def sock_state_cb(fd: int, readable: bool, writable: bool) -> None:
            method = watch()  # weak, as aiodns's own: the channel must not keep the resolver alive
            if method is not None:
                method(fd, readable, writable)

        return False, pycares.Channel(sock_state_cb=sock_state_cb, timeout=self._timeout, **kwargs)


class CachingResolver:
    """``resolve(host, now)`` → one address and its expiry, from the cache or from one shared aiodns query."""

    def __init__(
        self,
        nameservers: list[str] | None,
        *,
        max_entries: int = 100_000,
        min_ttl: float = 300,
        max_ttl: float = 86400,
        negative_ttl: float = 60,
        timeout: float = 5,
        tries: int = 2,
        concurrency: int = 100,
    ) -> None:
        self.nameservers = list(nameservers or [])  # "ip" or "ip:port"; empty = resolv.conf
        self.min_ttl, self.max_ttl, self.negative_ttl = min_ttl, max_ttl, negative_ttl
        self.timeout, self.tries = timeout, tries
        self.cache = DnsCache(max_entries)
        self._semaphore = asyncio.Semaphore(max(1, concurrency))
        self._in_flight: dict[str, asyncio.Task[Answer]] = {}
        self._resolver: aiodns.DNSResolver | None = None  # made in the running loop, at first use
        self._closing: asyncio.Task[None] | None = None
        self._closed = False
        self._hits = self._misses = self._negative_hits = self._failures = 0

    # -- lookups -----------------------------------------------------------------------------

    def lookup_nowait(self, host: str, now: float) -> str | None:
        """The cached address of ``host`` (or the literal), without querying; None if unknown."""
        literal = ip_literal(host)
        if literal is not None:
            return literal
        entry = self.cache.get(_key(host), now)
        return entry.address if entry is not None else None

    async def resolve(self, host: str, now: float) -> Answer:
        """One address of ``host`` and its expiry, or ``DnsFailed``. ``now`` is monotonic seconds."""
        literal = ip_literal(host)
        if literal is not None:
            return Answer(literal, math.inf)
        key = _key(host)
        entry = self.cache.get(key, now)
        if entry is not None:
            if entry.address is not None:
                self._hits += 1
                return Answer(entry.address, entry.expires)
            self._negative_hits += 1
            raise DnsFailed(host, entry.reason, entry.permanent)
        task = self._in_flight.get(key)
        if task is None:
            if self._closed:
                raise DnsFailed(host, "resolver closed", permanent=False)
            self._misses += 1
            task = asyncio.get_running_loop().create_task(self._lookup(key, now))
            self._in_flight[key] = task
            task.add_done_callback(_retrieve)
        return await asyncio.shield(task)

    async def _lookup(self, key: str, now: float) -> Answer:
        """Query, cache the outcome, and leave the in-flight table, whatever happens."""
        try:
            async with self._semaphore:
                address, ttl = await self._query(key)
        except DnsFailed as e:
            self._failures += 1
            self.cache.put(key, CacheEntry(now + self.negative_ttl, None, e.reason, e.permanent))
            raise
        finally:
            del self._in_flight[key]
        clamped = min(max(ttl, self.min_ttl), self.max_ttl)
        entry = CacheEntry(now + min(kept_for(key, clamped, now), self.max_ttl), address)
        self.cache.put(key, entry)
        return Answer(address, entry.expires)

    async def _query(self, host: str) -> tuple[str, float]:
        """(address, TTL of the answer) from the first A record, else the first AAAA record."""
        resolver = self._ensure_resolver()
        # c-ares enforces timeout and tries itself; this bound only guards against a hang
        deadline = self.timeout * max(1, self.tries) * 2 + 1
        try:
            async with asyncio.timeout(deadline):
                for qtype, data_type in (("A", pycares.ARecordData), ("AAAA", pycares.AAAARecordData)):
                    try:
                        result = await resolver.query_dns(host, qtype)
                    except DNSError as e:
                        if e.args and e.args[0] == pycares.errno.ARES_ENODATA:
                            continue  # the name exists but has no record of this type
                        raise
                    addresses = [r.data.addr for r in result.answer if isinstance(r.data, data_type)]
                    if addresses:
                        # a CNAME chain lives as long as its shortest-lived link
                        return addresses[0], float(min(r.ttl for r in result.answer))
        except DNSError as e:
            code = e.args[0] if e.args else None
            if code in _PERMANENT:
                raise DnsFailed(host, _PERMANENT[code], permanent=True) from None
            reason = _TEMPORARY.get(code) or (str(e.args[1]) if len(e.args) > 1 else "error")
            raise DnsFailed(host, reason, permanent=False) from None
        except TimeoutError:
            raise DnsFailed(host, "timeout", permanent=False) from None
        except (UnicodeError, ValueError, TypeError):  # a name pycares cannot even encode
            raise DnsFailed(host, "bad name", permanent=True) from None
        raise DnsFailed(host, "no address", permanent=True)

    def _ensure_resolver(self) -> aiodns.DNSResolver:
        # LoopResolver puts c-ares's sockets on the loop it is made with, so it must be made
        # inside the loop that awaits the answers
        if self._resolver is None:
            self._resolver = LoopResolver(
                self.nameservers or None, loop=asyncio.get_running_loop(), timeout=self.timeout, tries=self.tries
            )
        return self._resolver

    # -- state ---------------------------------------------------------------------------------

    def statistics(self) -> DnsStatistics:
        return DnsStatistics(
            hits=self._hits,
            misses=self._misses,
            negative_hits=self._negative_hits,
            failures=self._failures,
            entries=len(self.cache),
            in_flight=len(self._in_flight),
        )

    def __repr__(self) -> str:
        s = self.statistics()
        return (
            f"<CachingResolver {self.nameservers or 'resolv.conf'}: {s.entries} entries, {s.in_flight} in flight, "
            f"{s.hits} hits, {s.negative_hits} negative hits, {s.misses} misses, {s.failures} failures>"
        )

    def close(self) -> None:
        """Cancel the queries in flight (their callers get ``DnsFailed``) and release c-ares.

        Synchronous for the agent's shutdown; ``aclose`` also waits until c-ares lets go.
        """
        if self._closed:
            return
        self._closed = True
        resolver, self._resolver = self._resolver, None
        if resolver is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop to run aiodns's close(): its __del__ releases the channel
        self._closing = loop.create_task(resolver.close())

    async def aclose(self) -> None:
        self.close()
        if self._closing is not None:
            await self._closing


def _key(host: str) -> str:
    return host.lower().rstrip(".")


def _retrieve(task: asyncio.Task[Answer]) -> None:
    """Mark a query's failure as seen even if every caller was cancelled before it ended."""
    if not task.cancelled():
        task.exception()
