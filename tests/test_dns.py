"""engine/dns.py: the pure cache with explicit times, and the resolver against a real UDP DNS server on loopback;
then re-resolution in a real crawl, whose DNS server moves a host while it runs.

The server of the resolver tests is a few dozen lines here (``TinyDns``), so they depend on
nothing else. It answers with TTL 0 where a test counts the queries that reach it: c-ares
keeps a TTL-honouring cache of its own and would otherwise answer repeats itself.
"""

from __future__ import annotations

import asyncio
import os
import ipaddress
import math
import struct
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest

from bench.invitro import WebModel, WebParams, ip_addresses
from engine import config as configuration
from engine.dns import Answer, CacheEntry, CachingResolver, DnsCache, DnsFailed, ip_literal, kept_for
from engine.ownership import HashRing
from frontier.urls import host_of, split
from tests.invitro_harness import WebThread, by_key, gaps, page_requests, reachable, run_crawl, url_of, when_requests

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
    assert (await r.resolve("a.test", 0.0)).address == "10.0.0.1"  # the first A record
    assert (await r.resolve("a.test", 30.0)).address == "10.0.0.1"
    assert (await r.resolve("A.Test.", 31.0)).address == "10.0.0.1"  # names are case-insensitive, the root dot optional
    assert server.queries == [("a.test", A)]
    s = r.statistics()
    assert (s.hits, s.misses, s.entries, s.in_flight) == (2, 1, 1, 0)
    assert r.lookup_nowait("a.test", 59.0) == "10.0.0.1"


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


async def test_answers_come_on_the_loop_with_no_thread_of_pycares(serve: Serve, resolvers: Make) -> None:
    """pycares 5 would wait on c-ares's sockets in a thread of its own and wake the loop for each
    answer (engine/dns.py: LoopResolver says what that cost); here the loop watches them."""
    _, address = await serve(ZONE)
    before = _threads()
    r = resolvers(address)
    answers = await asyncio.gather(*(r.resolve(host, 0.0) for host in ("a.test", "b.test", "c.test", "ttl300.test")))
    assert [a.address for a in answers] == ["10.0.0.1", "10.0.0.3", "10.0.0.4", "10.0.0.5"]
    assert _threads() == before
    aiodns_resolver = r._resolver
    assert aiodns_resolver is not None and aiodns_resolver._event_thread is False


async def test_ttl_expiry_with_explicit_now_queries_again(serve: Serve, resolvers: Make) -> None:
    server, address = await serve(ZONE)
    r = resolvers(address, min_ttl=60)
    expires = (await r.resolve("a.test", 100.0)).expires
    await r.resolve("a.test", 159.9)
    await r.resolve("a.test", expires - 0.1)
    assert len(server.queries) == 1
    assert r.lookup_nowait("a.test", expires) is None
    assert (await r.resolve("a.test", expires)).address == "10.0.0.1"
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
    ip, expires = await r.resolve(host, 1000.0)
    # what the visit state holding the address is told: the clamped TTL, stretched up to twice (never past max_ttl)
    assert 1000.0 + lives <= expires < 1000.0 + min(2 * lives, 3600.000001)
    assert r.lookup_nowait(host, expires - 0.001) == ip
    assert r.lookup_nowait(host, expires) is None


def test_answers_looked_up_together_expire_spread_over_a_ttl() -> None:
    """Thousands of hosts resolved in a crawl's first minute must not all expire at once, every TTL."""
    kept = [kept_for(f"h{i:05d}.test", 300.0, 12.5) for i in range(2000)]
    assert all(300.0 <= k < 600.0 for k in kept)
    quarters = Counter(int((k - 300.0) // 75.0) for k in kept)
    assert sorted(quarters) == [0, 1, 2, 3] and min(quarters.values()) > 400  # about 500 in each quarter
    assert kept_for("h00000.test", 300.0, 12.5) == kept[0]  # a share drawn, not a random one
    assert kept_for("h00000.test", 300.0, 312.5) != kept[0]  # and drawn again at the next lookup


async def test_cname_is_followed_to_the_address(serve: Serve, resolvers: Make) -> None:
    _, address = await serve(ZONE)
    assert (await resolvers(address).resolve("alias.test", 0.0)).address == "10.0.0.7"


async def test_aaaa_only_when_there_is_no_a(serve: Serve, resolvers: Make) -> None:
    server, address = await serve(ZONE)
    r = resolvers(address)
    assert (await r.resolve("six.test", 0.0)).address == "2001:db8::1"
    assert server.queries == [("six.test", A), ("six.test", AAAA)]
    assert (await r.resolve("dual.test", 0.0)).address == "10.0.0.8"
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
    assert await r.resolve(host, 0.0) == Answer(ip, math.inf)  # never re-resolved
    assert r.lookup_nowait(host, 0.0) == ip
    assert server.queries == [] and r.statistics().misses == 0


async def test_concurrent_resolves_of_one_host_share_one_query(serve: Serve, resolvers: Make) -> None:
    server, address = await serve(ZONE, delay=0.1)
    r = resolvers(address)
    waiting = [asyncio.ensure_future(r.resolve("a.test", 0.0)) for _ in range(10)]
    await asyncio.sleep(0.02)
    assert r.statistics().in_flight == 1
    assert [answer.address for answer in await asyncio.gather(*waiting)] == ["10.0.0.1"] * 10
    assert server.queries == [("a.test", A)]
    assert r.statistics().misses == 1


async def test_one_cancelled_caller_does_not_cancel_the_others(serve: Serve, resolvers: Make) -> None:
    _, address = await serve(ZONE, delay=0.1)
    r = resolvers(address)
    first = asyncio.ensure_future(r.resolve("a.test", 0.0))
    second = asyncio.ensure_future(r.resolve("a.test", 0.0))
    await asyncio.sleep(0.02)
    first.cancel()
    assert (await second).address == "10.0.0.1"
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
        assert [(await r.resolve(h, 0.0)).address for h in hosts] == [model.ip_of(h) for h in hosts]
        assert [(await r.resolve(h, 1.0)).address for h in hosts] == [model.ip_of(h) for h in hosts]
        assert server.service.statistics().queries == 5
        with pytest.raises(DnsFailed) as failed:
            await r.resolve("no-such-host.example", 0.0)
        assert failed.value.permanent
    finally:
        server.close()
        await server.wait_closed()


async def test_the_invitro_server_moves_a_host_while_running_and_logs_each_query(resolvers: Make) -> None:
    from bench.invitro.dns import start_dns
    from bench.invitro.model import WebModel, WebParams

    model = WebModel(WebParams(), 8080)
    server = await start_dns(model, ttl=0)  # c-ares caches nothing: every resolve below reaches the server
    try:
        r = resolvers(server.address, min_ttl=0, max_ttl=0)
        host, other = model.hosts()[0], model.hosts()[-1]
        assert (await r.resolve(host, 0.0)).address == model.ip_of(host)
        server.service.move(host, model.ip_of(other))
        assert (await r.resolve(host, 1.0)).address == model.ip_of(other)
        server.service.move(host, None)
        assert (await r.resolve(host, 2.0)).address == model.ip_of(host)
        assert [(q.name, q.address) for q in server.service.log] == [
            (host, model.ip_of(host)), (host, model.ip_of(other)), (host, model.ip_of(host))]
        times = [q.at for q in server.service.log]
        assert times == sorted(times) and times[-1] <= time.monotonic()
        with pytest.raises(ValueError, match="loopback"):
            server.service.move(host, "10.0.0.1")  # never send a crawler off the machine
        with pytest.raises(ValueError, match="not a host"):
            server.service.move("elsewhere.example", "127.0.0.9")
    finally:
        server.close()
        await server.wait_closed()


# -- re-resolution in a real crawl: the in-vitro web, its DNS server, `crawl run` --------------------------

HOST_DELAY = 0.2
IP_DELAY = 0.1
MIN_TTL = 1.0  # the server answers TTL 0; the crawler keeps each answer this long
MOVE_AFTER = 12  # requests served before the DNS answer changes
DNS_WEB = WebParams(hosts=8, hosts_per_ip=4, mean_pages=15, max_pages=25, robots_404_share=1.0, robots_5xx_share=0.0)


def crawl_while_moving(tmp_path: Path, allow: list[str], new_ip: Callable[[WebModel], str]):  # type: ignore[no-untyped-def]
    """Crawl three hosts with two agents; after MOVE_AFTER requests the DNS server moves the
    first one (two hosts share its IP) to ``new_ip(model)``, the IP of the third, which
    another agent crawls. Returns (model, (moved, stays, neighbour), request log, DNS log,
    moment of the move, crawl result)."""
    web = WebThread(DNS_WEB, tmp_path / "requests.jsonl", dns_ttl=0)
    model = web.model
    ring = HashRing(2)
    by_pages = sorted(model.hosts()[:4], key=lambda h: -model.host_info(h).pages)
    moved, stays = by_pages[0], by_pages[1]
    neighbour = next(h for h in model.hosts()[4:] if ring.owner(h) != ring.owner(moved))
    seeds = [f"http://{h}:{model.port}/" for h in (moved, stays, neighbour)]
    settings = [f"politeness.host_delay={HOST_DELAY}", f"politeness.ip_delay={IP_DELAY}", f"dns.min_ttl={MIN_TTL}",
                "engine.processes=2", "engine.fetchers=8", 'scope.mode="host"',
                f"network.allow_networks={orjson.dumps(allow).decode()}"]
    answered = when_requests(web, MOVE_AFTER)
    try:
        with ThreadPoolExecutor(1) as pool:
            crawl = pool.submit(run_crawl, tmp_path / "out", seeds, dns=web.web.dns_address, settings=settings)
            assert answered.wait(120), "the crawl did not get going"
            web.call(web.web.dns.move, moved, new_ip(model))
            moved_at = time.monotonic()
            result = crawl.result(240)
    finally:
        log = web.stop()
    dns_log = list(web.web.dns.log)
    return model, seeds, (moved, stays, neighbour), log, dns_log, moved_at, result


def pages_of(model: WebModel, seeds: list[str], host: str) -> set[str]:
    return {u for u in reachable(model, seeds) if host_of(split(u)[0]) == host}


def assert_polite(log: list) -> None:  # type: ignore[type-arg]
    for host, records in by_key(log, "host").items():
        assert min(gaps(records), default=HOST_DELAY) >= HOST_DELAY, f"host delay violated on {host}"
    for ip, records in by_key(log, "local").items():  # the address each request really came to
        assert min(gaps(records), default=IP_DELAY) >= IP_DELAY, f"IP delay violated on {ip}"


def test_a_host_whose_address_changes_is_fetched_at_its_new_ip_politely(tmp_path: Path) -> None:
    model, seeds, (moved, stays, neighbour), log, dns_log, moved_at, result = crawl_while_moving(
        tmp_path, ["127.0.0.0/8"], lambda m: m.ip_of(m.hosts()[4]))
    old_ip, new_ip = model.ip_of(moved), model.ip_of(neighbour)
    assert result.stats["stop_reason"] == "done"
    fetches = [r for r in sorted(log, key=lambda r: r.start) if r.host == moved]
    ips = [r.local for r in fetches]
    assert old_ip in ips and ips[-1] == new_ip, "later fetches must arrive on the new IP"
    switch = ips.index(new_ip)
    assert set(ips[:switch]) == {old_ip} and set(ips[switch:]) == {new_ip}, "once moved, it stays moved"
    assert fetches[switch].start >= moved_at, "nothing reaches the new IP before the DNS answer changed"
    assert fetches[switch].start <= moved_at + 2 * MIN_TTL + 5.0, "the old answer outlived twice its clamped TTL"
    assert len(ips) - switch >= 5, "the test needs fetches after the move"
    # politeness on both IPs, through the move, across the two agents (the IP table follows the move)
    assert {r.local for r in log if r.host == neighbour} == {new_ip}
    assert_polite(log)
    requested = [url_of(r, model.port) for r in page_requests(fetches)]
    assert len(requested) == len(set(requested)), "a page was fetched twice"
    assert set(requested) == pages_of(model, seeds, moved)
    # the DNS server saw the host resolved again, no sooner than the clamped TTL allowed
    queries = [q for q in dns_log if q.name == moved]
    assert len(queries) >= 3 and queries[0].address == old_ip and queries[-1].address == new_ip
    assert min(b.at - a.at for a, b in zip(queries, queries[1:])) >= MIN_TTL * 0.9
    assert any(q.address == new_ip and q.at >= moved_at for q in queries)


def test_a_host_moved_outside_allow_networks_is_refused_and_no_longer_fetched(tmp_path: Path) -> None:
    # only the web's own IPs are allowed; the host moves to a loopback address nothing listens on
    model, seeds, (moved, stays, _), log, dns_log, moved_at, result = crawl_while_moving(
        tmp_path, [f"{ip}/32" for ip in ip_addresses(DNS_WEB)], lambda m: "127.0.99.1")
    assert result.stats["stop_reason"] == "done"
    refused = [q for q in dns_log if q.name == moved and q.address == "127.0.99.1"]
    assert refused, "the crawler never resolved the host again"
    fetches = [r for r in log if r.host == moved]
    assert all(r.start < refused[0].at for r in fetches), "fetched after its address was refused"
    assert {r.local for r in fetches} == {model.ip_of(moved)}
    assert sum(a["refused_addresses"] for a in result.stats["agents"]) == 1
    assert sum(a["frontier"]["drops"].get("purged_address", 0) for a in result.stats["agents"]) > 0
    assert {url_of(r, model.port) for r in page_requests(log) if r.host == stays} == pages_of(model, seeds, stays), \
        "the other host of its IP goes on"
    assert_polite(log)


# -- configuration ------------------------------------------------------------------------------------------


def test_ttl_bounds_default_to_five_minutes_and_a_day() -> None:
    config = configuration.load(None)
    assert (config.dns.min_ttl, config.dns.max_ttl) == (300.0, 86400.0)
    resolver = CachingResolver(None)  # the resolver's own defaults agree
    assert (resolver.min_ttl, resolver.max_ttl) == (300.0, 86400.0)


@pytest.mark.parametrize(
    "overrides, key, problem",
    [
        (["dns.min_ttl=0"], "dns.min_ttl", "must be positive"),
        (["dns.min_ttl=600", "dns.max_ttl=60"], "dns.max_ttl", "must be at least dns.min_ttl"),
        (["dns.negative_ttl=-1"], "dns.negative_ttl", "must not be negative"),
        (["robots.expiry=-5"], "robots.expiry", "must not be negative"),
    ],
)
def test_bad_ttl_bounds_name_the_key(overrides: list[str], key: str, problem: str) -> None:
    with pytest.raises(configuration.ConfigError) as info:
        configuration.load(None, overrides)
    assert info.value.key == key and problem in info.value.problem
