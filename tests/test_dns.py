"""engine/dns.py: the pure cache with explicit times, and the resolver against a real UDP DNS server on loopback.

The server is a few dozen lines here (``TinyDns``), so these tests depend on nothing else.
It answers with TTL 0 where a test counts the queries that reach it: c-ares keeps a
TTL-honouring cache of its own and would otherwise answer repeats itself.
"""

from __future__ import annotations

import asyncio
import ipaddress
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from engine.dns import CacheEntry, CachingResolver, DnsCache, DnsFailed, ip_literal

A, AAAA, CNAME = 1, 28, 5
TYPES = {"A": A, "AAAA": AAAA, "CNAME": CNAME}
RCODES = {"NXDOMAIN": 3, "SERVFAIL": 2, "REFUSED": 5}

Record = tuple[str, str, int]  # type, value, ttl
Zone = dict[str, "list[Record] | str"]  # name -> records, or an rcode name


def encode_name(name: str) -> bytes:
    return b"".join(bytes([len(label)]) + label.encode() for label in name.split(".") if label) + b"\0"


def decode_name(data: bytes, offset: int) -> tuple[str, int]:
    labels = []
    while data[offset]:
        length = data[offset]
        labels.append(data[offset + 1 : offset + 1 + length].decode())
        offset += 1 + length
    return ".".join(labels), offset + 1


class TinyDns(asyncio.DatagramProtocol):
    """A UDP DNS server for one zone: A, AAAA, CNAME (followed), NXDOMAIN, other rcodes, or silence."""

    def __init__(self, zone: Zone, *, silent: bool = False, delay: float = 0.0) -> None:
        self.zone = zone
        self.silent = silent
        self.delay = delay
        self.queries: list[tuple[str, int]] = []
        self.pending = self.max_pending = 0
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        query_id, flags = struct.unpack("!HH", data[:4])
        name, end = decode_name(data, 12)
        (qtype,) = struct.unpack("!H", data[end : end + 2])
        self.queries.append((name.lower(), qtype))
        if self.silent:
            return
        rcode, answers = self.answer(name.lower(), qtype)
        header = struct.pack("!HHHHHH", query_id, 0x8000 | 0x0400 | (flags & 0x0100) | 0x0080 | rcode, 1, len(answers), 0, 0)
        reply = header + data[12 : end + 4] + b"".join(answers)  # the question as asked
        self.pending += 1
        self.max_pending = max(self.max_pending, self.pending)
        asyncio.get_running_loop().call_later(self.delay, self.send, reply, addr)

    def send(self, reply: bytes, addr: tuple[str, int]) -> None:
        self.pending -= 1
        assert self.transport is not None
        self.transport.sendto(reply, addr)

    def answer(self, name: str, qtype: int) -> tuple[int, list[bytes]]:
        answers: list[bytes] = []
        for _ in range(8):  # follow CNAMEs within the zone
            records = self.zone.get(name)
            if records is None:
                return (RCODES["NXDOMAIN"] if not answers else 0), answers
            if isinstance(records, str):
                return RCODES[records], []
            cname = [r for r in records if r[0] == "CNAME"]
            if cname and qtype != CNAME:
                answers.append(self.rr(name, *cname[0]))
                name = cname[0][1]
                continue
            answers += [self.rr(name, *r) for r in records if TYPES[r[0]] == qtype]
            return 0, answers
        return RCODES["SERVFAIL"], []

    @staticmethod
    def rr(name: str, rtype: str, value: str, ttl: int) -> bytes:
        data = encode_name(value) if rtype == "CNAME" else ipaddress.ip_address(value).packed
        return encode_name(name) + struct.pack("!HHIH", TYPES[rtype], 1, ttl, len(data)) + data


Serve = Callable[..., Awaitable[tuple[TinyDns, str]]]
Make = Callable[..., CachingResolver]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """``await serve(zone, silent=..., delay=...)`` → (server, "127.0.0.1:port"); closed after the test."""
    transports: list[asyncio.BaseTransport] = []

    async def start(zone: Zone, **kw: object) -> tuple[TinyDns, str]:
        transport, server = await asyncio.get_running_loop().create_datagram_endpoint(
            lambda: TinyDns(zone, **kw), local_addr=("127.0.0.1", 0)  # type: ignore[arg-type]
        )
        transports.append(transport)
        return server, "127.0.0.1:%d" % transport.get_extra_info("sockname")[1]

    yield start
    for transport in transports:
        transport.close()


@pytest.fixture
async def resolvers() -> AsyncIterator[Make]:
    made: list[CachingResolver] = []

    def make(address: str, **kw: object) -> CachingResolver:
        kw.setdefault("timeout", 1.0)
        kw.setdefault("tries", 1)
        resolver = CachingResolver([address], **kw)  # type: ignore[arg-type]
        made.append(resolver)
        return resolver

    yield make
    for resolver in made:
        await resolver.aclose()


ZONE: Zone = {
    "a.test": [("A", "10.0.0.1", 0), ("A", "10.0.0.2", 0)],
    "b.test": [("A", "10.0.0.3", 0)],
    "c.test": [("A", "10.0.0.4", 0)],
    "ttl300.test": [("A", "10.0.0.5", 300)],
    "huge-ttl.test": [("A", "10.0.0.6", 86400)],
    "alias.test": [("CNAME", "target.test", 120)],
    "target.test": [("A", "10.0.0.7", 500)],
    "six.test": [("AAAA", "2001:db8::1", 0)],
    "dual.test": [("AAAA", "2001:db8::2", 0), ("A", "10.0.0.8", 0)],
    "nothing.test": [],
    "broken.test": "SERVFAIL",
    "refused.test": "REFUSED",
}


# -- the resolver against a server --------------------------------------------------------------


async def test_a_answer_is_cached(serve: Serve, resolvers: Make) -> None:
    server, address = await serve(ZONE)
    r = resolvers(address)
    assert await r.resolve("a.test", 0.0) == "10.0.0.1"  # the first A record
    assert await r.resolve("a.test", 30.0) == "10.0.0.1"
    assert await r.resolve("A.Test.", 31.0) == "10.0.0.1"  # names are case-insensitive, the root dot optional
    assert server.queries == [("a.test", A)]
    s = r.statistics()
    assert (s.hits, s.misses, s.entries, s.in_flight) == (2, 1, 1, 0)
    assert r.lookup_nowait("a.test", 59.0) == "10.0.0.1"


async def test_ttl_expiry_with_explicit_now_queries_again(serve: Serve, resolvers: Make) -> None:
    server, address = await serve(ZONE)
    r = resolvers(address, min_ttl=60)
    await r.resolve("a.test", 100.0)
    await r.resolve("a.test", 159.9)
    assert len(server.queries) == 1
    assert r.lookup_nowait("a.test", 160.0) is None
    assert await r.resolve("a.test", 160.0) == "10.0.0.1"
    assert len(server.queries) == 2


@pytest.mark.parametrize(
    "host, lives",
    [
        ("a.test", 60.0),  # TTL 0, raised to min_ttl
        ("ttl300.test", 300.0),  # within bounds: as given
        ("huge-ttl.test", 3600.0),  # lowered to max_ttl
        ("alias.test", 120.0),  # a CNAME chain lives as long as its shortest link
    ],
)
async def test_ttl_is_clamped(serve: Serve, resolvers: Make, host: str, lives: float) -> None:
    _, address = await serve(ZONE)
    r = resolvers(address, min_ttl=60, max_ttl=3600)
    ip = await r.resolve(host, 1000.0)
    assert r.lookup_nowait(host, 1000.0 + lives - 0.001) == ip
    assert r.lookup_nowait(host, 1000.0 + lives) is None


async def test_cname_is_followed_to_the_address(serve: Serve, resolvers: Make) -> None:
    _, address = await serve(ZONE)
    assert await resolvers(address).resolve("alias.test", 0.0) == "10.0.0.7"


async def test_aaaa_only_when_there_is_no_a(serve: Serve, resolvers: Make) -> None:
    server, address = await serve(ZONE)
    r = resolvers(address)
    assert await r.resolve("six.test", 0.0) == "2001:db8::1"
    assert server.queries == [("six.test", A), ("six.test", AAAA)]
    assert await r.resolve("dual.test", 0.0) == "10.0.0.8"
    assert server.queries[2:] == [("dual.test", A)]


async def test_nxdomain_is_permanent_and_cached_negatively(serve: Serve, resolvers: Make) -> None:
    server, address = await serve(ZONE)
    r = resolvers(address, negative_ttl=60)
    with pytest.raises(DnsFailed) as failed:
        await r.resolve("missing.test", 0.0)
    assert (failed.value.host, failed.value.reason, failed.value.permanent) == ("missing.test", "nxdomain", True)
    with pytest.raises(DnsFailed) as again:
        await r.resolve("missing.test", 59.0)
    assert (again.value.reason, again.value.permanent) == ("nxdomain", True)
    assert len(server.queries) == 1
    assert r.lookup_nowait("missing.test", 59.0) is None
    s = r.statistics()
    assert (s.misses, s.failures, s.negative_hits) == (1, 1, 1)
    with pytest.raises(DnsFailed):
        await r.resolve("missing.test", 60.0)  # the negative entry expired: asked again
    assert len(server.queries) == 2


@pytest.mark.parametrize(
    "host, reason, permanent",
    [("nothing.test", "no address", True), ("broken.test", "servfail", False), ("refused.test", "refused", False)],
)
async def test_failures_say_whether_to_retry(serve: Serve, resolvers: Make, host: str, reason: str, permanent: bool) -> None:
    _, address = await serve(ZONE)
    with pytest.raises(DnsFailed) as failed:
        await resolvers(address).resolve(host, 0.0)
    assert (failed.value.reason, failed.value.permanent) == (reason, permanent)


async def test_timeout_is_temporary(serve: Serve, resolvers: Make) -> None:
    server, address = await serve(ZONE, silent=True)
    r = resolvers(address, timeout=0.2, tries=1)
    started = time.monotonic()
    with pytest.raises(DnsFailed) as failed:
        await r.resolve("a.test", 0.0)
    assert (failed.value.reason, failed.value.permanent) == ("timeout", False)
    assert time.monotonic() - started < 2.0
    assert server.queries and r.statistics().in_flight == 0


@pytest.mark.parametrize(
    "host, ip",
    [("127.0.0.1", "127.0.0.1"), ("::1", "::1"), ("[::1]", "::1"), ("[2001:DB8:0::1]", "2001:db8::1"), ("10.1.2.3", "10.1.2.3")],
)
async def test_ip_literals_need_no_query(serve: Serve, resolvers: Make, host: str, ip: str) -> None:
    server, address = await serve(ZONE, silent=True)
    r = resolvers(address)
    assert await r.resolve(host, 0.0) == ip
    assert r.lookup_nowait(host, 0.0) == ip
    assert server.queries == [] and r.statistics().misses == 0


async def test_concurrent_resolves_of_one_host_share_one_query(serve: Serve, resolvers: Make) -> None:
    server, address = await serve(ZONE, delay=0.1)
    r = resolvers(address)
    waiting = [asyncio.ensure_future(r.resolve("a.test", 0.0)) for _ in range(10)]
    await asyncio.sleep(0.02)
    assert r.statistics().in_flight == 1
    assert await asyncio.gather(*waiting) == ["10.0.0.1"] * 10
    assert server.queries == [("a.test", A)]
    assert r.statistics().misses == 1


async def test_one_cancelled_caller_does_not_cancel_the_others(serve: Serve, resolvers: Make) -> None:
    _, address = await serve(ZONE, delay=0.1)
    r = resolvers(address)
    first = asyncio.ensure_future(r.resolve("a.test", 0.0))
    second = asyncio.ensure_future(r.resolve("a.test", 0.0))
    await asyncio.sleep(0.02)
    first.cancel()
    assert await second == "10.0.0.1"
    assert first.cancelled()


async def test_concurrency_is_bounded(serve: Serve, resolvers: Make) -> None:
    server, address = await serve(ZONE, delay=0.1)
    r = resolvers(address, concurrency=2)
    hosts = ["a.test", "b.test", "c.test", "ttl300.test", "target.test"]
    await asyncio.gather(*(r.resolve(h, 0.0) for h in hosts))
    assert server.max_pending == 2
    assert len(server.queries) == 5


async def test_cache_is_bounded_least_recently_used_first(serve: Serve, resolvers: Make) -> None:
    server, address = await serve(ZONE)
    r = resolvers(address, max_entries=2)
    await r.resolve("a.test", 0.0)
    await r.resolve("b.test", 0.0)
    await r.resolve("a.test", 1.0)  # a is now the more recently used
    await r.resolve("c.test", 2.0)  # evicts b
    assert r.statistics().entries == 2
    assert r.lookup_nowait("a.test", 3.0) == "10.0.0.1"
    assert r.lookup_nowait("b.test", 3.0) is None
    await r.resolve("b.test", 3.0)
    assert [name for name, _ in server.queries] == ["a.test", "b.test", "c.test", "b.test"]


async def test_close_fails_queries_in_flight_and_later_ones(serve: Serve, resolvers: Make) -> None:
    _, address = await serve(ZONE, silent=True)
    r = resolvers(address, timeout=5.0)
    waiting = asyncio.ensure_future(r.resolve("a.test", 0.0))
    await asyncio.sleep(0.05)
    await r.aclose()
    with pytest.raises(DnsFailed) as failed:
        await asyncio.wait_for(waiting, 2.0)
    assert failed.value.permanent is False
    with pytest.raises(DnsFailed):
        await r.resolve("b.test", 0.0)
    r.close()  # idempotent


# -- the pure cache ------------------------------------------------------------------------------


def test_cache_entries_expire_at_their_time() -> None:
    cache = DnsCache(10)
    cache.put("a", CacheEntry(100.0, "10.0.0.1"))
    assert cache.get("a", 99.999) == CacheEntry(100.0, "10.0.0.1")
    assert cache.get("a", 100.0) is None
    assert "a" not in cache and len(cache) == 0


def test_cache_keeps_failures() -> None:
    cache = DnsCache(10)
    cache.put("x", CacheEntry(60.0, None, "nxdomain", True))
    entry = cache.get("x", 0.0)
    assert entry is not None and entry.address is None and entry.permanent


@pytest.mark.parametrize("size", [1, 2, 3])
def test_cache_evicts_least_recently_used(size: int) -> None:
    cache = DnsCache(size)
    for i in range(size):
        cache.put(f"h{i}", CacheEntry(1e9, f"10.0.0.{i}"))
    cache.get("h0", 0.0)  # h0 becomes the most recently used
    cache.put("new", CacheEntry(1e9, "10.9.9.9"))
    assert len(cache) == size
    assert "new" in cache
    assert ("h0" in cache) is (size > 1)
    if size > 1:
        assert "h1" not in cache


def test_cache_overwrites_in_place() -> None:
    cache = DnsCache(2)
    cache.put("a", CacheEntry(10.0, "10.0.0.1"))
    cache.put("a", CacheEntry(20.0, "10.0.0.2"))
    assert len(cache) == 1 and cache.get("a", 15.0) == CacheEntry(20.0, "10.0.0.2")


@pytest.mark.parametrize(
    "host, literal",
    [("1.2.3.4", "1.2.3.4"), ("[::1]", "::1"), ("::ffff:1.2.3.4", "::ffff:102:304"), ("example.com", None),
     ("[example.com]", None), ("1.2.3", None), ("", None), ("[]", None), ("127.000.000.001", None)],
)
def test_ip_literal(host: str, literal: str | None) -> None:
    assert ip_literal(host) == literal


# -- against the in-vitro web's DNS server, when it is there ------------------------------------------


async def test_resolves_the_invitro_web(resolvers: Make) -> None:
    invitro = pytest.importorskip("bench.invitro.dns")
    from bench.invitro.model import WebModel, WebParams

    model = WebModel(WebParams(), 8080)
    server = await invitro.start_dns(model, ttl=0)
    try:
        r = resolvers(server.address)
        hosts = model.hosts()[:5]
        assert [await r.resolve(h, 0.0) for h in hosts] == [model.ip_of(h) for h in hosts]
        assert [await r.resolve(h, 1.0) for h in hosts] == [model.ip_of(h) for h in hosts]
        assert server.service.statistics().queries == 5
        with pytest.raises(DnsFailed) as failed:
            await r.resolve("no-such-host.example", 0.0)
        assert failed.value.permanent
    finally:
        server.close()
        await server.wait_closed()
