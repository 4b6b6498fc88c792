"""Polite fetching for ``crawl learn`` (``engine/learn.py``): one URL in, one :class:`Page` out.

Role: the learning crawl's stand-in for the agent's fetch path (ARCHITECTURE.md, steps 4, 6
and 7), built from the engine's own parts and no new HTTP or DNS code: the client named by
``network.client`` (``engine/clients.py``), the caching resolver over ``dns.servers``
(``engine/dns.py``) with every answer checked against ``network.allow_networks``
(``engine/addresses.py``), robots.txt rules (``engine/robots.py``), content decoding
(``engine/content.py``) and link extraction (``engine/parse.py``: links come out canonical,
fragment-free, once each).

What one :meth:`SiteClient.fetch` does, for a host it meets for the first time: resolve the
name, then fetch ``/robots.txt`` (following same-host redirects up to five hops, as the
fetchers do; a network failure makes it "unreachable": disallow all), and only then the page,
if robots.txt allows it. Politeness: one request at a time per host and per IP; the next
request to a host starts ``politeness.host_delay`` (raised to the robots.txt Crawl-delay,
itself capped at ``politeness.max_crawl_delay``) after the end of the previous one, and the
next to an IP ``politeness.ip_delay`` after. Requests to different hosts may run at once.
Redirects are not followed: a 3xx page's one outlink is its Location target.

Reads nothing but the network; writes nothing; never touches the frontier. Counts its page
requests (``downloads``, what ``--max-pages`` bounds) apart from robots.txt requests.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.addresses import AddressPolicy
from engine.clients import make_fetcher
from engine.config import Config, link_rules
from engine.content import decode_body
from engine.dns import CachingResolver, DnsFailed
from engine.errors import RemoteError
from engine.fetch import ClientSettings, Fetcher, FetchResult
from engine.fetching import MAX_ROBOTS_HOPS
from engine.parse import HTML_TYPES, extract_links, parse_location
from engine.pipeline import REDIRECTS
from engine.resolving import Resolver
from engine.robots import RobotsRules
from frontier.urls import host_of, split

if TYPE_CHECKING:
    from lxml.etree import _Element

NO_RESPONSE = 0
"""the status of a page no response came for (DNS failure, refused address, network error)"""


@dataclass(frozen=True, slots=True)
class Page:
    """What one fetch of ``url`` gave: ``final_url`` is the resolved Location of a 3xx (else
    ``url``); ``outlinks`` are the in-scope links, canonical, each once, ``url`` itself left out;
    ``document`` the parsed lxml root of a 200 HTML page when the client keeps documents."""

    url: str
    final_url: str
    status: int
    outlinks: tuple[str, ...]
    document: _Element | None = None
    media_type: str | None = None


@dataclass(slots=True)
class _Slot:
    """One host's or one IP's turn: a lock held for a whole request, and when the next may start."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    next_fetch: float = 0.0  # monotonic


@dataclass(slots=True)
class _Host:
    slot: _Slot = field(default_factory=_Slot)
    resolved: bool = False
    ip: str | None = None  # the address connections are pinned to (the name itself behind a proxy)
    failure: str | None = None  # why the host cannot be fetched at all
    delay: float = 0.0  # politeness.host_delay, raised to the robots.txt Crawl-delay once it is known
    rules: RobotsRules | None = None


class SiteClient:
    """Fetches pages politely (see the module docstring); ``close()`` releases its connections."""

    def __init__(self, config: Config, in_scope: Callable[[str], bool], *, fetcher: Fetcher | None = None,
                 resolver: Resolver | None = None, documents: bool = False) -> None:
        self.config = config
        self.in_scope = in_scope
        self.documents = documents  # keep each 200 HTML page's parsed tree in its Page (SOUrCe's learner)
        self.fetcher = fetcher or make_fetcher(ClientSettings.from_config(config.network, config.engine.user_agent),
                                               config.network.client)
        d = config.dns
        self.resolver = resolver or CachingResolver(
            d.servers or None, max_entries=d.cache_entries, min_ttl=d.min_ttl, max_ttl=d.max_ttl,
            negative_ttl=d.negative_ttl, timeout=d.timeout, concurrency=d.concurrency,
        )
        self.addresses = AddressPolicy(config.network.allow_networks)
        self.link_rules = link_rules(config)
        self._hosts: dict[str, _Host] = {}
        self._ips: dict[str, _Slot] = {}
        self.downloads = 0
        self.robots_fetches = 0
        self.errors: Counter[str] = Counter()  # by kind: "dns", "address", "connect", "timeout", ...

    async def fetch(self, url: str) -> Page | None:
        """The page at the canonical ``url``, or None when robots.txt disallows it (nothing is
        downloaded then). A host that cannot be reached gives status :data:`NO_RESPONSE`."""
        scheme_authority, path_query = split(url)
        host = self._hosts.get(scheme_authority)
        if host is None:
            host = self._hosts[scheme_authority] = _Host(delay=self.config.politeness.host_delay)
        async with host.slot.lock:
            if not host.resolved:
                await self._resolve(scheme_authority, host)
            if host.failure is not None:
                self.errors[host.failure] += 1
                return Page(url, url, NO_RESPONSE, ())
            if host.rules is None:
                await self._fetch_robots(scheme_authority, host)
                assert host.rules is not None
            if not host.rules.allowed(path_query or "/"):
                return None
            self.downloads += 1
            try:
                result = await self._polite(host, url)
            except RemoteError as e:
                self.errors[e.kind] += 1
                return Page(url, url, NO_RESPONSE, ())
        return self._page(url, result)

    async def _resolve(self, scheme_authority: str, host: _Host) -> None:
        name = host_of(scheme_authority)
        host.resolved = True
        try:
            answer = await self.resolver.resolve(name, time.monotonic())
        except DnsFailed:
            if not self.config.network.proxy:
                host.failure = "dns"
                return
            host.ip = name  # the proxy resolves it; the name stands in for the IP in politeness
            return
        if not self.addresses.permits(answer.address):
            host.failure = "address"
            return
        host.ip = answer.address

    async def _fetch_robots(self, scheme_authority: str, host: _Host) -> None:
        """The host's rules, from one robots.txt fetched before its first page (RFC 9309 §2.3.1)."""
        path = "/robots.txt"
        status: int | None = None
        body = b""
        for hop in range(MAX_ROBOTS_HOPS + 1):
            self.robots_fetches += 1
            try:
                result = await self._polite(host, scheme_authority + path)
            except RemoteError as e:
                self.errors[f"robots_{e.kind}"] += 1
                break  # unreachable: disallow all
            status = result.status
            if status in REDIRECTS:
                location = result.headers.get("location")
                target = parse_location(location, result.url) if location else None
                if target is not None and hop < MAX_ROBOTS_HOPS and split(target)[0] == scheme_authority:
                    path = split(target)[1]
                    continue
                status = 404  # too many hops or another host: the rules are unavailable, RFC 9309 2.3.1.2
            else:
                body = self._payload(result)
            break
        politeness = self.config.politeness
        host.rules = RobotsRules.from_response(status, body, self.config.engine.user_agent,
                                               max_crawl_delay=politeness.max_crawl_delay)
        host.delay = max(politeness.host_delay, host.rules.crawl_delay or 0.0)

    async def _polite(self, host: _Host, url: str) -> FetchResult:
        """One GET once both the host and its IP allow it; the caller holds the host's lock."""
        assert host.ip is not None
        ip_slot = self._ips.setdefault(host.ip, _Slot())
        async with ip_slot.lock:
            wait = max(host.slot.next_fetch, ip_slot.next_fetch) - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)  # politeness, the one wait of a learn run
            try:
                return await self.fetcher.fetch(url, host.ip)
            finally:  # delays count from the end of the exchange, whatever its outcome
                ended = time.monotonic()
                host.slot.next_fetch = ended + host.delay
                ip_slot.next_fetch = ended + self.config.politeness.ip_delay

    def _payload(self, result: FetchResult) -> bytes:
        return decode_body(result.body, result.headers.get("content-encoding"), self.config.network.max_body_bytes)

    def _page(self, url: str, result: FetchResult) -> Page:
        status = result.status
        if status in REDIRECTS:
            location = result.headers.get("location")
            target = parse_location(location, url, sort_query=self.link_rules.sort_query) if location else None
            return Page(url, target or url, status, self._outlinks(url, [target] if target else []))
        content_type = result.headers.get("content-type", "")
        media_type = content_type.split(";", 1)[0].strip().lower() or None
        if status != 200 or media_type not in HTML_TYPES:
            return Page(url, url, status, (), media_type=media_type)  # as the pipeline: only a 200 HTML page is parsed
        parsed = extract_links(self._payload(result), url, content_type=content_type, rules=self.link_rules,
                               want_document=self.documents)
        return Page(url, url, status, self._outlinks(url, parsed.links), parsed.document, media_type)

    def _outlinks(self, url: str, links: Iterable[str]) -> tuple[str, ...]:
        """In scope, not ``url`` itself (digest §2.1), first occurrence kept."""
        return tuple(dict.fromkeys(link for link in links if link != url and self.in_scope(link)))

    @property
    def hosts(self) -> int:
        """Hosts met so far."""
        return len(self._hosts)

    async def close(self) -> None:
        await self.fetcher.close()
        await self.resolver.aclose()


__all__ = ["NO_RESPONSE", "Page", "SiteClient"]
