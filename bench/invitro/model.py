"""The in-vitro web's model: a synthetic web that is computed, never stored.

Role: the pure core of ``bench/invitro/`` (ARCHITECTURE.md, components table). It re-creates
BUbiNG's ``RandomNamedGraphServer`` (peers.md §1.3) with named hosts that share IPs, robots.txt
variants, redirects, binary resources and realistic HTML. No I/O and no clock: the servers in
``server.py`` and ``dns.py`` only translate sockets to calls of :meth:`WebModel.respond` and
:meth:`WebModel.ip_of`.

Everything about a host or a URL is a function of ``(WebParams, port, name)`` through
``xxh3_64(name, seed=params.seed)``, so two processes with the same parameters serve the same
bytes, and a test can compute any page without asking a server.

A host ``h00017.web.test`` with ``n`` pages (log-normal, mean ``mean_pages``):

- page 0 is ``/``; the pages form a tree of fan-out ``branching`` (the children of page ``i``
  are ``i*B+1 .. i*B+B``) and every page's ``<nav>`` links its parent and children, so a
  breadth-first crawl from ``/`` reaches every page unless an error page cuts a branch (random
  links then usually reach it anyway);
- pages ``1..B`` are section indexes ``/section{i}/``; deeper pages live in their section, in a
  sub-topic folder, in ``/archive/YYYY/MM/``, in ``/private/`` (what robots.txt disallows) or
  behind a query string (``/list?page=i``, ``/item?id=i&lang=en``); every path holds ``i``, and
  :meth:`WebModel.page_of` finds it back by checking the digit runs of a target;
- besides pages: binary files ``/files/report{k}.pdf`` and ``/images/photo{k}.png``, the
  stylesheet ``/static/site.css`` and ``/robots.txt``; ``?utm_source=feed|newsletter|social``
  on any page is a distinct URL with the same content (an exact duplicate).

Off by default (the default web stays byte for byte what benchmarks measured): copies and
near-duplicates (``duplicate_share``), hostile resources (``hostile_share``, ``hostile.py``) and
crawler traps (``trap_share``, ``traps.py``), each linked from the pages of the hosts chosen; and
spam hosts with ground truth (``spam_share``, ``spam.py``: link farms, keyword stuffing and
generated text on farms of hosts that share IPs, reached through comment spam on good pages).

Invariant: every URL a page links to is answered by :meth:`WebModel.respond`, with 200 or, by
design, with a 404 (``/missing/…`` links and ``frac_404`` pages), a 5xx or a redirect.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from email.utils import formatdate
from statistics import NormalDist
from typing import NamedTuple, Protocol, runtime_checkable
from urllib.parse import urlsplit

import xxhash

from bench.invitro import hostile, html, spam, traps
from bench.invitro.page import STYLESHEET, UTM_SOURCES, HostTable, Page, write_page

_NORMAL = NormalDist()
# 1024 dates from 2017 to 2025: formatting one per page would cost more than a page's links.
_LAST_MODIFIED = tuple(formatdate(1_500_000_000 + k * 244_140, usegmt=True) for k in range(1024))
_DIGITS = re.compile(r"\d{1,9}")
_UTM = "utm_source="
TOPICS = ("news", "guides", "reviews", "people", "events", "science", "travel", "history")


@dataclass(frozen=True, slots=True)
class WebParams:
    """The knobs of the synthetic web. Field names are the keys of ``--set key=value``."""

    hosts: int = 100
    """number of hosts, named ``h00000.<domain>`` … (at least five digits)"""
    hosts_per_ip: int = 4
    """consecutive hosts share one IP: IPs = ceil(hosts / hosts_per_ip)"""
    ip_base: str = "127.0.1.0"
    """IPs are the addresses after this one, skipping .0 and .255; all must lie in 127.0.0.0/8"""
    mean_pages: float = 50
    """mean pages per host (log-normal, sigma 1)"""
    max_pages: int = 0
    """cap on pages per host; 0 means 20 × mean_pages"""
    branching: int = 8
    """fan-out of each host's navigation tree"""
    mean_links: float = 40
    """mean out-degree of a host's pages (log-normal per host, sigma 0.5; per page, sigma 0.4)"""
    external_share: float = 0.1
    """share of a page's links that go to other hosts"""
    nofollow_share: float = 0.03
    """share of ``<a>`` links with rel="nofollow\""""
    missing_share: float = 0.01
    """share of links to ``/missing/…``, which do not exist (404)"""
    private_share: float = 0.05
    """share of pages below depth 1 that live under ``/private/``"""
    frac_404: float = 0.02
    """share of pages answered 404 (by URL hash; ``/`` is never an error)"""
    frac_500: float = 0.01
    """share of pages answered 500"""
    frac_redirect: float = 0.02
    """share of pages answered 301/302 to another page of the same host"""
    frac_slow: float = 0.0
    """share of URLs (pages, files, 404s; not robots.txt) whose response stalls ``slow_seconds``"""
    slow_seconds: float = 0.5
    """stall of a slow response, seconds"""
    frac_binary: float = 0.02
    """share of links to binary files (PDF, PNG); each host has ceil(pages × share) of them"""
    binary_bytes: int = 20000
    """mean size of a binary file (log-normal, sigma 0.5)"""
    robots_disallow_share: float = 0.2
    """share of hosts whose robots.txt disallows ``/private/`` (and utm variants for half of them)"""
    robots_crawl_delay_share: float = 0.1
    """share of hosts whose robots.txt has ``Crawl-delay``"""
    robots_crawl_delay: float = 0.5
    """the Crawl-delay value, seconds"""
    robots_404_share: float = 0.2
    """share of hosts without robots.txt (404)"""
    robots_5xx_share: float = 0.05
    """share of hosts whose robots.txt answers 500 or 503"""
    page_bytes: int = 15000
    """mean size of an HTML page (log-normal, sigma 0.3)"""
    cache_size: int = 2048
    """responses kept in the model's LRU cache"""
    seed: int = 0
    """seed of every hash: a different seed is a different web"""
    domain: str = "web.test"
    """the domain every host name ends with"""
    duplicate_share: float = 0.0
    """share of pages (not ``/``) also served at ``?mirror=k`` (the same bytes) and ``?edition=k``
    (the same page with another edition number: a near-duplicate), k = 1..duplicate_copies; the
    page's nav links them"""
    duplicate_copies: int = 2
    """copies of each kind of a duplicated page"""
    hostile_share: float = 0.0
    """share of hosts whose home page links the hostile resources of ``bench/invitro/hostile.py``"""
    bomb_bytes: int = 1 << 26
    """decoded size of each decompression bomb"""
    big_bytes: int = 1 << 23
    """size of the oversized page ``/hostile/big.html``"""
    trap_share: float = 0.0
    """share of hosts whose home page links the crawler traps of ``bench/invitro/traps.py`` (calendars,
    repeating and deepening paths, long URLs)"""

    spam_share: float = 0.0
    """share of hosts that are spam, in farms of 10–60 hosts on one or two IPs (``spam.py``); the truth is
    :meth:`WebModel.spam_kind` and ``python -m bench.invitro labels``"""

    def __post_init__(self) -> None:
        if self.hosts < 1 or self.hosts_per_ip < 1 or self.branching < 1 or self.mean_pages < 1:
            raise ValueError("hosts, hosts_per_ip, branching and mean_pages must be at least 1")
        shares = {f.name: getattr(self, f.name) for f in fields(self) if "share" in f.name or "frac" in f.name}
        for name, value in shares.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], not {value}")
        if self.frac_404 + self.frac_500 + self.frac_redirect > 1:
            raise ValueError("frac_404 + frac_500 + frac_redirect must not exceed 1")
        if self.duplicate_copies < 1 or self.bomb_bytes < 0 or self.big_bytes < 0:
            raise ValueError("duplicate_copies must be at least 1, bomb_bytes and big_bytes not negative")
        if self.robots_404_share + self.robots_5xx_share > 1:
            raise ValueError("robots_404_share + robots_5xx_share must not exceed 1")
        ip_addresses(self)  # raises if the IPs leave 127.0.0.0/8

    @classmethod
    def field_types(cls) -> dict[str, type]:
        """Field name → Python type, for parsing ``--set key=value``."""
        kinds = {"int": int, "float": float, "str": str}
        return {f.name: kinds[str(f.type)] for f in fields(cls)}


def ip_addresses(params: WebParams) -> list[str]:
    """The IPs of the web: the addresses after ``ip_base`` whose last octet is 1..254."""
    count = spam.layout(params).ip_count if params.spam_share > 0 else -(-params.hosts // params.hosts_per_ip)
    start = int(ipaddress.IPv4Address(params.ip_base)) + 1
    loopback = ipaddress.IPv4Network("127.0.0.0/8")
    ips: list[str] = []
    value = start
    while len(ips) < count:
        if value & 0xFF not in (0, 255):  # .0 and .255 look like network and broadcast addresses
            address = ipaddress.IPv4Address(value)
            if address not in loopback:
                raise ValueError(f"{count} IPs after {params.ip_base} leave 127.0.0.0/8")
            ips.append(str(address))
        value += 1
    return ips


class HostInfo(NamedTuple):
    """What the hash decides about one host (computed once, kept in an LRU cache)."""

    name: str
    number: int  # its place in ``host_name`` order (a field named ``index`` would hide ``tuple.index``)
    origin: str  # http://name:port
    ip: str
    pages: int
    degree: float  # mean out-degree of this host's pages
    files: int  # binary files /files/reportK.pdf or /images/photoK.png, K < files


@dataclass(frozen=True, slots=True)
class Response:
    """A complete answer. ``links``, ``nofollow`` and ``tags`` are parallel lists in document order.

    ``links`` are absolute URLs without fragments (a redirect lists its resolved Location), so a
    test can compute reachability; ``nofollow[k]`` tells whether ``links[k]`` has rel=nofollow;
    ``tags[k]`` is the element ("a", "link", "area", "iframe", or "location" for a redirect).
    """

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    delay: float = 0.0
    links: list[str] = field(default_factory=list)
    nofollow: list[bool] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    compressible: bool = False
    log: dict[str, object] | None = None
    """fields the request log's line adds (``LogRecord``'s optional ones), or None"""

    @property
    def content_type(self) -> str:
        for name, value in self.headers:
            if name == "Content-Type":
                return value
        return ""


class Web(Protocol):
    """What the servers (``server.py``, ``dns.py``, ``app.py``) need of a web: :class:`WebModel`
    and the social lab's ``SocialWeb`` (``bench/invitro/social/web.py``) both are one."""

    port: int

    @property
    def domain(self) -> str:
        """The domain every host name ends with (DNS answers NOERROR for the name itself)."""
        ...

    def respond(self, host: str, target: str) -> Response: ...

    def ip_of(self, host: str) -> str:
        """The IP of a host of this web; KeyError for other names."""
        ...

    def host_index(self, host: str) -> int | None:
        """A number for a host of this web, None for other names."""
        ...

    def ips(self) -> list[str]: ...

    def seeds(self, n: int) -> list[str]: ...


@runtime_checkable
class HeadAwareWeb(Web, Protocol):
    """A web whose answers also depend on the request head and its time (the posting lab's API):
    the server calls ``respond_head`` instead of ``respond``."""

    def respond_head(self, host: str, target: str, headers: Mapping[bytes, bytes], now: float) -> Response:
        """The answer to ``target`` on ``host`` with the head's headers (lower-case names) at monotonic ``now``."""
        ...


def _lognormal(mean: float, sigma: float, unit: float) -> float:
    """The log-normal quantile at ``unit`` (in (0, 1)) with the given mean."""
    return math.exp(math.log(mean) - sigma * sigma / 2 + sigma * _NORMAL.inv_cdf(unit))


def copy_of(target: str) -> tuple[str, str, int]:
    """(target without it, kind, k) for the last ``mirror=k`` or ``edition=k`` argument, else (target, "", 0).

    The argument may stand anywhere in the query, as servers read arguments in any order (the
    crawler sorts them: ``/list?page=3&mirror=1`` is fetched as ``/list?mirror=1&page=3``).
    """
    path, mark, query = target.partition("?")
    if "mirror=" not in query and "edition=" not in query:
        return target, "", 0
    arguments = query.split("&")
    for n in reversed(range(len(arguments))):
        kind, _, k = arguments[n].partition("=")
        if kind in ("mirror", "edition") and k.isdigit():
            rest = "&".join(arguments[:n] + arguments[n + 1 :])
            return path + (mark + rest if rest else ""), kind, int(k)
    return target, "", 0


def copy_target(target: str, kind: str, k: int) -> str:
    return f"{target}{'&' if '?' in target else '?'}{kind}={k}"


def strip_utm(target: str) -> str:
    """The target without a trailing ``utm_source=`` variant that the model serves, else unchanged."""
    at = target.rfind(_UTM)
    if at > 0 and target[at - 1] in "?&" and target[at + len(_UTM) :] in UTM_SOURCES:
        return target[: at - 1]
    return target


class WebModel:
    """The synthetic web for one :class:`WebParams` and the port its servers listen on.

    Pure and deterministic: every method is a function of (params, port, arguments). The
    caches (host facts, path lists, whole responses) only save time. Host names are matched in
    lower case. The HTML of a page is written by :func:`bench.invitro.page.write_page`.
    """

    def __init__(self, params: WebParams, port: int) -> None:
        self.params = params
        self.port = port
        self._seed = params.seed & 0xFFFF_FFFF_FFFF_FFFF
        self._ips = ip_addresses(params)
        self._width = max(5, len(str(params.hosts - 1)))
        self._suffix = "." + params.domain.lower()
        self._max_pages = params.max_pages or max(1, int(20 * params.mean_pages))
        self._host_info = functools.lru_cache(maxsize=1 << 16)(self._compute_host_info)
        self.host_info_at = functools.lru_cache(maxsize=1 << 16)(self._compute_host_info_at)
        self._paths = functools.lru_cache(maxsize=4096)(self._compute_paths)
        self._respond = functools.lru_cache(maxsize=params.cache_size)(self._compute_response)
        self.host_tables: dict[str, HostTable] = {}  # page.py's per-host cache, owned here
        self.spam_layout = spam.layout(params) if params.spam_share > 0 else None

    # Hosts and IPs.

    @property
    def domain(self) -> str:
        return self.params.domain

    def host_name(self, index: int) -> str:
        return f"h{index:0{self._width}d}{self._suffix}"

    def host_index(self, host: str) -> int | None:
        """The index of a model host name, or None."""
        host = host.lower()
        if not host.endswith(self._suffix):
            return None
        label = host[: -len(self._suffix)]
        digits = label[1:]
        if len(label) != self._width + 1 or label[0] != "h" or not (digits.isascii() and digits.isdigit()):
            return None
        index = int(digits)
        return index if index < self.params.hosts else None

    def hosts(self) -> list[str]:
        return [self.host_name(i) for i in range(self.params.hosts)]

    def ips(self) -> list[str]:
        return list(self._ips)

    def ip_of(self, host: str) -> str:
        """The IP of a model host (consecutive hosts share one); KeyError for other names."""
        index = self.host_index(host)
        if index is None:
            raise KeyError(host)
        return self._ips[self._ip_number(index)]

    def _ip_number(self, index: int) -> int:
        if self.spam_layout is not None:
            return self.spam_layout.ip_number[index]
        return index // self.params.hosts_per_ip

    def seeds(self, n: int) -> list[str]:
        """Home pages of the first ``n`` good hosts (spam hosts are no seeds), as absolute URLs with the port."""
        indices = range(self.params.hosts) if self.spam_layout is None else self.spam_layout.good
        return [f"http://{self.host_name(i)}:{self.port}/" for i in indices[:n]]

    def spam_kind(self, host: str) -> str | None:
        """None for a good host (or a name not of this web), else "farm", "stuffed" or "generated"."""
        index = self.host_index(host)
        if index is None or self.spam_layout is None:
            return None
        return self.spam_layout.kind_of(index)

    def is_thin(self, host: str) -> bool:
        """A good host with short pages full of links (a directory, a portal): only beside spam."""
        return self._good_and_drawn(host, "thin", spam.THIN_SHARE)

    def is_shop(self, host: str) -> bool:
        """A good host whose pages list products in commercial words: only beside spam."""
        return self._good_and_drawn(host, "shop", spam.SHOP_SHARE)

    def is_disguised(self, host: str) -> bool:
        """A link-farm host whose pages are good pages plus farm links."""
        return self.spam_kind(host) == spam.FARM and self.unit(f"{host.lower()}|disguised") < spam.DISGUISED_SHARE

    def _good_and_drawn(self, host: str, what: str, share: float) -> bool:
        index = self.host_index(host)
        layout = self.spam_layout
        return index is not None and layout is not None and not layout.kind[index] and (
            self.unit(f"{host.lower()}|{what}") < share
        )

    def host_info(self, host: str) -> HostInfo | None:
        return self._host_info(host.lower())

    def _hash(self, text: str) -> int:
        return xxhash.xxh3_64_intdigest(text.encode(), seed=self._seed)

    def unit(self, text: str) -> float:
        """A uniform number in (0, 1) from the hash of ``text``."""
        return ((self._hash(text) >> 11) + 0.5) / 2.0**53

    def _compute_host_info_at(self, index: int) -> HostInfo:
        info = self._host_info(self.host_name(index))
        assert info is not None
        return info

    def _compute_host_info(self, host: str) -> HostInfo | None:
        index = self.host_index(host)
        if index is None:
            return None
        p = self.params
        pages = _lognormal(p.mean_pages, 1.0, self.unit(f"{host}|pages"))
        degree = min(4 * p.mean_links, _lognormal(p.mean_links, 0.5, self.unit(f"{host}|degree")))
        kind = None if self.spam_layout is None else self.spam_layout.kind_of(index)
        if kind is not None:
            pages *= spam.PAGES_SCALE[kind]
        elif self.is_thin(host):
            degree = min(4 * p.mean_links, degree * spam.THIN_LINKS)
        pages_int = min(self._max_pages, max(1, round(pages)))
        files = math.ceil(pages_int * p.frac_binary)
        ip = self._ips[self._ip_number(index)]
        return HostInfo(host, index, f"http://{host}:{self.port}", ip, pages_int, degree, files)

    # Paths.

    def path_of(self, info: HostInfo, i: int) -> str:
        """The request target of page ``i`` of a host (0 ≤ i < info.pages)."""
        b = self.params.branching
        if i == 0:
            return "/"
        if i <= b:
            return f"/section{i}/"
        section = i
        while section > b:
            section = (section - 1) // b
        h = self._hash(f"{info.name}|kind|{i}")
        if (h & 0xFFFF) / 65536 < self.params.private_share:
            return f"/private/doc{i}.html"
        kind = (h >> 16) % 100
        if kind < 40:
            return f"/section{section}/page{i}.html"
        if kind < 60:
            return f"/section{section}/{TOPICS[(h >> 32) % len(TOPICS)]}/article{i}.html"
        if kind < 70:
            return f"/list?page={i}"
        if kind < 80:
            return f"/item?id={i}&lang=en"
        return f"/archive/{2000 + (h >> 40) % 25}/{1 + (h >> 48) % 12:02d}/post{i}.html"

    def host_paths(self, info: HostInfo) -> tuple[str, ...]:
        """Every page target of a host, page 0 first (cached by host name: cheaper than by HostInfo)."""
        return self._paths(info.name)

    def _compute_paths(self, host: str) -> tuple[str, ...]:
        info = self._host_info(host)
        assert info is not None
        return tuple(self.path_of(info, i) for i in range(info.pages))

    def file_path(self, info: HostInfo, k: int) -> str:
        """The request target of binary file ``k`` of a host (0 ≤ k < info.files)."""
        if self._hash(f"{info.name}|file|{k}") & 1:
            return f"/files/report{k}.pdf"
        return f"/images/photo{k}.png"

    def page_of(self, info: HostInfo, target: str) -> int | None:
        """The page whose path is exactly ``target``, or None: each digit run is a candidate index."""
        if target == "/":
            return 0
        for digits in _DIGITS.findall(target):
            i = int(digits)
            if 0 < i < info.pages and self.host_paths(info)[i] == target:
                return i
        return None

    def file_of(self, info: HostInfo, target: str) -> int | None:
        if not target.startswith(("/files/", "/images/")):
            return None
        for digits in _DIGITS.findall(target):
            k = int(digits)
            if k < info.files and self.file_path(info, k) == target:
                return k
        return None

    def paths(self, host: str) -> list[str]:
        """Every page target of a host, page 0 first (for tests)."""
        info = self.host_info(host)
        return [] if info is None else list(self.host_paths(info))

    # Responses.

    def respond(self, host: str, target: str) -> Response:
        """The response to ``GET target`` on ``host`` (target = path and query, no fragment)."""
        return self._respond(host.lower(), target)

    def respond_url(self, url: str) -> Response:
        """The response to an absolute ``http://host:port/target`` URL (fragment ignored)."""
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return self.respond(parts.hostname or "", target)

    def robots_txt(self, host: str) -> tuple[int, bytes]:
        response = self.respond(host, "/robots.txt")
        return response.status, response.body

    def page_status(self, info: HostInfo, i: int) -> int:
        """200, 404, 500, 301 or 302, decided by the hash of the page; ``/`` is always 200."""
        if i == 0:
            return 200
        p = self.params
        h = self._hash(f"{info.name}|status|{i}")
        u = (h >> 11) / 2.0**53
        if u < p.frac_404:
            return 404
        if u < p.frac_404 + p.frac_500:
            return 500
        if u < p.frac_404 + p.frac_500 + p.frac_redirect:
            return 301 if h & 1 else 302
        return 200

    def _compute_response(self, host: str, target: str) -> Response:
        info = self._host_info(host)
        if info is None:
            return _error(404, "Not Found", f"No host {host} here.")
        if target == "/robots.txt":
            return self._robots(info)
        if target == STYLESHEET:
            return Response(200, "OK", [("Content-Type", "text/css")], html.STYLESHEET_CSS, compressible=True)
        if target.startswith(hostile.PREFIX) and self.is_hostile(info):
            answer = hostile.respond(target, self.params.bomb_bytes, self.params.big_bytes)
            if answer is not None:
                links = [info.origin + "/"] if target.endswith("broken.html") else []
                return Response(200, "OK", answer[0], answer[1], links=links, nofollow=[False] * len(links), tags=["a"] * len(links))
        if target.startswith(traps.PREFIXES) and self.is_trapped(info):
            trap = traps.respond(target, info.origin, self._hash(f"{info.name}|trap|{target}"))
            if trap is not None:
                headers = [("Content-Type", "text/html; charset=utf-8")]
                if trap.status == 302:
                    headers.append(("Location", trap.links[0]))
                tags = ["location" if trap.status == 302 else "a"] * len(trap.links)
                reason = "Found" if trap.status == 302 else "OK"
                nofollow = [False] * len(tags)
                return Response(trap.status, reason, headers, trap.body, 0.0, trap.links, nofollow, tags, True)
        delay = self.params.slow_seconds if self.unit(f"{host}|slow|{target}") < self.params.frac_slow else 0.0
        base, copy, number = copy_of(target)
        base = strip_utm(base)
        i = self.page_of(info, base)
        if copy and (i is None or not 1 <= number <= self.params.duplicate_copies or not self.is_duplicated(info, i)):
            return _error(404, "Not Found", "No such copy.", delay)
        if i is None:
            k = self.file_of(info, target)
            if k is not None:
                return self._file(info, k, delay)
            return _error(404, "Not Found", "No such page.", delay)
        status = self.page_status(info, i)
        if status == 200:
            page = self._page(info, i, delay)
            if copy == "edition":  # the same page but for one number: a near-duplicate
                body = page.body.replace(b">Edition 0<", b">Edition %d<" % number, 1)
                return Response(200, "OK", page.headers, body, delay, page.links, page.nofollow, page.tags, True)
            return page
        if status in (301, 302):
            return self._redirect(info, i, status, delay)
        return _error(status, "Not Found" if status == 404 else "Internal Server Error", "Sorry.", delay)

    def _redirect(self, info: HostInfo, i: int, status: int, delay: float) -> Response:
        h = self._hash(f"{info.name}|redirect|{i}")
        j = (h >> 1) % info.pages
        if j == i or self.page_status(info, j) in (301, 302):
            j = 0  # no chains and no loops: `/` is never a redirect
        target = self.path_of(info, j)
        url = info.origin + target
        location = url if h & 1 else target
        headers = [("Content-Type", "text/html; charset=utf-8"), ("Location", location)]
        reason = "Moved Permanently" if status == 301 else "Found"
        body = html.small_page(reason, "This page has moved.", location)
        return Response(status, reason, headers, body, delay, [url], [False], ["location"], True)

    def _file(self, info: HostInfo, k: int, delay: float) -> Response:
        rng = random.Random(self._hash(f"{info.name}|bytes|{k}"))
        size = int(_lognormal(self.params.binary_bytes, 0.5, rng.random() or 0.5))
        if self.file_path(info, k).endswith(".pdf"):
            body, kind = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n" + rng.randbytes(size) + b"\n%%EOF\n", "application/pdf"
        else:
            body, kind = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + rng.randbytes(size), "image/png"
        return Response(200, "OK", [("Content-Type", kind)], body, delay)

    def _robots(self, info: HostInfo) -> Response:
        p = self.params
        u = self.unit(f"{info.name}|robots")
        if u < p.robots_404_share:
            return _error(404, "Not Found", "No robots.txt here.")
        if u < p.robots_404_share + p.robots_5xx_share:
            if self._hash(f"{info.name}|robots5xx") & 1:
                return _error(500, "Internal Server Error", "Sorry.")
            response = _error(503, "Service Unavailable", "Try later.")
            return Response(503, response.reason, [*response.headers, ("Retry-After", "120")], response.body)
        lines = [f"# robots.txt for {info.name}", "User-agent: *"]
        if self.unit(f"{info.name}|disallow") < p.robots_disallow_share:
            lines.append("Disallow: /private/")
            if self._hash(f"{info.name}|disallow-utm") & 1:
                lines.append("Disallow: /*?utm_source=")
        if self.unit(f"{info.name}|crawl-delay") < p.robots_crawl_delay_share:
            lines.append(f"Crawl-delay: {p.robots_crawl_delay:g}")
        lines += ["Allow: /", "", "User-agent: BadBot", "Disallow: /", ""]
        body = "\n".join(lines).encode()
        return Response(200, "OK", [("Content-Type", "text/plain; charset=utf-8")], body, compressible=True)

    def _page(self, info: HostInfo, i: int, delay: float) -> Response:
        rng = random.Random(self._hash(f"{info.name}|page|{i}"))
        size = int(_lognormal(self.params.page_bytes, 0.3, rng.random() or 0.5))
        if self.spam_layout is None:
            page = write_page(self, info, i, rng, size)
        elif self.spam_layout.kind[info.number] and not self.is_disguised(info.name):
            page = spam.write_spam_page(self, info, i, rng, size)
        else:
            page = self._page_beside_spam(info, i, rng, size)
        if self.is_duplicated(info, i) or (i == 0 and (self.is_hostile(info) or self.is_trapped(info))):
            page = self._with_extra_links(info, i, page)
        headers = [
            ("Content-Type", "text/html; charset=utf-8"),
            ("Last-Modified", _LAST_MODIFIED[rng.getrandbits(10)]),
            ("Cache-Control", "max-age=600"),
        ]
        return Response(200, "OK", headers, page.body, delay, page.urls, page.nofollow, page.tags, True)

    def _page_beside_spam(self, info: HostInfo, i: int, rng: random.Random, size: int) -> Page:
        """A good page of a web with spam, or a disguised farm host's: a good page plus, as the host is,
        shorter text (thin), a product list (shop), farm links (disguised) or good ones (blogroll), comment spam."""
        shop = self.is_shop(info.name)
        scale = (spam.THIN_SIZE if self.is_thin(info.name) else 1.0) * (spam.SHOP_SIZE if shop else 1.0)
        page = write_page(self, info, i, rng, int(size * scale))
        blocks: list[bytes] = []
        urls: list[str] = []
        nofollow: list[bool] = []
        if shop:
            blocks.append(spam.product_block(info.name, rng))
        if self.is_disguised(info.name) or self._good_and_drawn(info.name, "blogroll", spam.BLOGROLL_SHARE):
            block, urls = spam.partner_list(self, info, rng) if self.is_disguised(info.name) else spam.blogroll(self, rng)
            blocks.append(block)
            nofollow = [False] * len(urls)
        layout = self.spam_layout
        if layout is not None and len(layout.spam) and self._good_and_drawn(info.name, "comments", spam.COMMENT_HOSTS_SHARE) and (
            self.unit(f"{info.name}|comments|{i}") < spam.COMMENT_PAGES_SHARE
        ):
            block, comment_urls, comment_nofollow = spam.comment_block(self, rng)
            blocks.append(block)
            urls, nofollow = urls + comment_urls, nofollow + comment_nofollow
        if not blocks:
            return page
        end = b"</article>\n</main>\n<footer>"
        body = page.body.replace(end, b"".join(blocks) + end, 1)
        return Page(body, page.urls + urls, page.nofollow + nofollow, page.tags + ["a"] * len(urls))

    def is_duplicated(self, info: HostInfo, i: int) -> bool:
        """Page ``i`` is also served at ``?mirror=k`` and ``?edition=k`` (``duplicate_share``)."""
        share = self.params.duplicate_share
        return share > 0 and i > 0 and self.unit(f"{info.name}|duplicate|{i}") < share

    def is_hostile(self, info: HostInfo) -> bool:
        """The host serves and links the hostile resources (``hostile_share``)."""
        share = self.params.hostile_share
        return share > 0 and self.unit(f"{info.name}|hostile") < share

    def is_trapped(self, info: HostInfo) -> bool:
        """The host serves and links the crawler traps (``trap_share``)."""
        share = self.params.trap_share
        return share > 0 and self.unit(f"{info.name}|trap") < share

    def _with_extra_links(self, info: HostInfo, i: int, page: Page) -> Page:
        """The page with its copies linked from its nav, and on a home page the hostile resources or trap entrances.

        An edition marker goes with the copies, so editions differ from the page in one number only.
        """
        targets: list[str] = []
        body = page.body
        if self.is_duplicated(info, i):
            path = self.host_paths(info)[i]
            copies = range(1, self.params.duplicate_copies + 1)
            targets += [copy_target(path, kind, k) for kind in ("mirror", "edition") for k in copies]
            body = body.replace(b'<main id="main">\n', b'<main id="main">\n<p class="edition">Edition 0</p>\n', 1)
        if i == 0 and self.is_hostile(info):
            targets += hostile.TARGETS
        if i == 0 and self.is_trapped(info):
            targets += traps.entrances(info.origin)
        items = b"".join(b'<li><a href="%s">%s</a></li>\n' % (html.escape(t), html.escape(t)) for t in targets)
        body = body.replace(b'<nav aria-label="site">\n<ul>\n', b'<nav aria-label="site">\n<ul>\n' + items, 1)
        urls = [info.origin + t for t in targets]
        return Page(body, page.urls + urls, page.nofollow + [False] * len(urls), page.tags + ["a"] * len(urls))

    def external_link(self, r: Callable[[], float]) -> tuple[str, str]:
        """A link to another host's page, drawn with ``r``: (URL, href as written)."""
        hosts = self.params.hosts
        # Half uniform, half log-uniform: a few hosts get many in-links, as on the real web.
        j = int(r() * hosts) if r() < 0.5 else int(hosts ** r()) - 1
        if self.spam_layout is not None and self.spam_layout.kind[j]:  # good pages link to spam by comments only
            good = self.spam_layout.good
            j = good[j * len(good) // hosts]
        other = self.host_info_at(j)
        target = "/" if r() < 0.5 else self.host_paths(other)[int(r() * other.pages)]
        url = other.origin + target
        return url, (url[5:] if r() < 0.05 else url)  # now and then protocol-relative: //host:port/…


def _error(status: int, reason: str, text: str, delay: float = 0.0) -> Response:
    body = html.small_page(f"{status} {reason}", text)
    return Response(status, reason, [("Content-Type", "text/html; charset=utf-8")], body, delay, compressible=True)
