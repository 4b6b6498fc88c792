"""The social lab as one web the in-vitro server and DNS serve: ``SocialWeb``.

Role: the :class:`bench.invitro.model.Web` of the social lab. It routes a request to the site
that owns its host (``blog.test``, ``forum.test``, ...), turns the site's :class:`Answer` into a
:class:`~bench.invitro.model.Response` (200 HTML with its links, 3xx with ``Location``, 404,
``/robots.txt`` from :meth:`Site.robots`), and gives each site one loopback IP
(``127.0.77.1``, ``.2``, ... in the order of :attr:`SocialParams.sites`). It reads nothing
but its parameters and keeps no state between requests: the caches only save time.

A site's knob ``dialect`` (a number, 0 by default) is the web's, not the site's: the site is
served through :class:`~bench.invitro.social.dialect.Dialect` ``dialect``, its fixed URL words
renamed (the lab's held-out variants), truth unchanged.

The side API (:meth:`SocialWeb.truth`, :meth:`~SocialWeb.truth_of_url`, :meth:`~SocialWeb.site_of`,
:meth:`~SocialWeb.seeds_of`) is for the scorer, the census, tests and benchmarks, never for a
crawler.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from bench.invitro.html import small_page
from bench.invitro.model import Response
from bench.invitro.social import SITE_NAMES, site_class
from bench.invitro.social.dialect import Dialect
from bench.invitro.social.site import ERROR, UNINFORMATIVE, Answer, Site, Truth

IP_BASE = "127.0.77.0"
"""the sites' IPs are the addresses after this one, one per site"""
DOMAIN = "test"
"""the parent of every site's domain (what the DNS server treats as the web's own name)"""
_HTML = ("Content-Type", "text/html; charset=utf-8")


@dataclass(frozen=True)
class SocialParams:
    """Which sites the lab serves and how they are drawn."""

    sites: tuple[str, ...] = ("blog", "forum", "books", "microblog")
    """site names (see :data:`bench.invitro.social.SITE_NAMES`), each once"""
    seed: int = 1
    """seed of every site's hashes: another seed is another lab"""
    knobs: dict[str, dict[str, float]] = field(default_factory=dict)
    """per site name, the site's own knobs (``{"blog": {"reply_share": 1.0}}``)"""

    def __post_init__(self) -> None:
        unknown = [name for name in self.sites if name not in SITE_NAMES]
        if unknown or not self.sites or len(set(self.sites)) != len(self.sites):
            raise ValueError(f"sites must be distinct names among {', '.join(SITE_NAMES)}, not {self.sites}")
        stray = sorted(set(self.knobs) - set(self.sites))
        if stray:
            raise ValueError(f"knobs given for sites not served: {', '.join(stray)}")

    def as_dict(self) -> dict[str, Any]:
        return {"sites": list(self.sites), "seed": self.seed, "knobs": {k: dict(v) for k, v in self.knobs.items()}}


def parse_knobs(items: Iterable[str]) -> dict[str, dict[str, float]]:
    """``["blog.reply_share=1.0", ...]`` as ``{"blog": {"reply_share": 1.0}}``; ValueError naming a bad item."""
    knobs: dict[str, dict[str, float]] = {}
    for item in items:
        key, equals, text = item.partition("=")
        site, dot, knob = key.strip().partition(".")
        try:
            if not (equals and dot and knob):
                raise ValueError
            knobs.setdefault(site, {})[knob.replace("-", "_")] = float(text)
        except ValueError:
            raise ValueError(f"{item}: expected SITE.KEY=NUMBER") from None
    return knobs


def social_ips(params: SocialParams) -> list[str]:
    """One loopback IP per site, in the order of ``params.sites``."""
    base = int(ipaddress.IPv4Address(IP_BASE))
    return [str(ipaddress.IPv4Address(base + 1 + i)) for i in range(len(params.sites))]


class SocialWeb:
    """The lab's sites for one :class:`SocialParams` and the port every URL names.

    Invariant: ``respond(host, target)`` is a pure function of (params, port, host, target);
    a host belongs to at most one site (the sites' domains are disjoint).
    """

    def __init__(self, params: SocialParams, port: int) -> None:
        self.params = params
        self.port = port
        self.sites: list[Site] = []
        for name in params.sites:
            knobs = dict(params.knobs.get(name, {}))
            dialect = int(knobs.pop("dialect", 0))
            site = site_class(name)(params.seed, port, **knobs)
            self.sites.append(InDialect(site, Dialect(dialect)) if dialect else site)
        self._ips = social_ips(params)
        self._answer = functools.lru_cache(maxsize=4096)(self._compute_answer)
        self._respond = functools.lru_cache(maxsize=1024)(self._compute_response)

    @property
    def domain(self) -> str:
        return DOMAIN

    # Hosts and IPs.

    def host_index(self, host: str) -> int | None:
        """The index of the site owning ``host`` (in ``params.sites``), or None."""
        host = host.lower()
        for i, site in enumerate(self.sites):
            if (host == site.domain or host.endswith("." + site.domain)) and site.owns(host):
                return i
        return None

    def site_of(self, host: str) -> Site | None:
        index = self.host_index(host)
        return None if index is None else self.sites[index]

    def site_named(self, name: str) -> Site:
        """The served site called ``name``; KeyError when it is not served."""
        for site in self.sites:
            if site.name == name:
                return site
        raise KeyError(name)

    def ip_of(self, host: str) -> str:
        """The IP of the site owning ``host``; KeyError for other names."""
        index = self.host_index(host)
        if index is None:
            raise KeyError(host)
        return self._ips[index]

    def ips(self) -> list[str]:
        return list(self._ips)

    def seeds(self, n: int) -> list[str]:
        """The first ``n`` seeds of every site, site after site (one flat list)."""
        return [url for site in self.sites for url in site.seeds()[:n]]

    def seeds_of(self, site_name: str) -> list[str]:
        return self.site_named(site_name).seeds()

    def sites_info(self) -> dict[str, dict[str, Any]]:
        """What the ready file says per site: ``{name: {"domain": ..., "seeds": [...]}}``."""
        return {site.name: {"domain": site.domain, "seeds": site.seeds()} for site in self.sites}

    # Answers and truth.

    def answer(self, host: str, target: str) -> Answer | None:
        """The owning site's answer (cached), None for a host no site owns."""
        return self._answer(host.lower(), target)

    def _compute_answer(self, host: str, target: str) -> Answer | None:
        site = self.site_of(host)
        return None if site is None else site.answer(host, target)

    def truth(self, host: str, target: str) -> Truth:
        """The ground truth of ``GET target`` on ``host`` (robots.txt is uninformative)."""
        if target == "/robots.txt":
            return Truth("robots", UNINFORMATIVE)
        answer = self.answer(host, target)
        return Truth("unknown_host", ERROR) if answer is None else answer.truth

    def truth_of_url(self, url: str) -> Truth:
        """:meth:`truth` of an absolute ``http://host:port/target`` URL (a fragment is ignored)."""
        host, target = split_url(url)
        return self.truth(host, target)

    def respond(self, host: str, target: str) -> Response:
        return self._respond(host.lower(), target)

    def _compute_response(self, host: str, target: str) -> Response:
        site = self.site_of(host)
        if site is None:
            return _page(404, f"No host {host} here.")
        if target == "/robots.txt":
            body = site.robots(host).encode()
            return Response(200, "OK", [("Content-Type", "text/plain; charset=utf-8")], body, compressible=True)
        answer = self.answer(host, target)
        assert answer is not None
        reason = HTTPStatus(answer.status).phrase
        links = list(answer.links)
        if answer.status == 200:
            headers = [("Content-Type", answer.content_type), ("Cache-Control", "max-age=600")]
            body = answer.html.encode()
            return Response(200, reason, headers, body, 0.0, links, [False] * len(links), ["a"] * len(links), True)
        if 300 <= answer.status < 400:
            headers = [_HTML, ("Location", answer.location)]
            body = small_page(reason, "This page has moved.", answer.location)
            return Response(answer.status, reason, headers, body, 0.0, [answer.location], [False], ["location"], True)
        return _page(answer.status, "No such page.")


class InDialect(Site):
    """A site served in a dialect: requests translated to its words, its answers and robots.txt from them."""

    def __init__(self, site: Site, dialect: Dialect) -> None:
        self.name = site.name
        self.domain = site.domain
        super().__init__(site.seed, site.port)  # the knobs are the wrapped site's, checked there
        self.site = site
        self.dialect = dialect
        self.k = site.k

    def owns(self, host: str) -> bool:
        return self.site.owns(host)

    def seeds(self) -> list[str]:
        return [self.dialect.from_site(url) for url in self.site.seeds()]

    def robots(self, host: str) -> str:
        return self.dialect.robots(self.site.robots(host))

    def answer(self, host: str, target: str) -> Answer:
        return self.dialect.answer(self.site.answer(host, self.dialect.to_site(target)))


def split_url(url: str) -> tuple[str, str]:
    """(host in lower case without port, target) of ``http://host:port/path?query#fragment``."""
    rest = url.split("://", 1)[-1].partition("#")[0]
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    authority, target = rest[:cut], rest[cut:] or "/"
    if target.startswith("?"):
        target = "/" + target
    return authority.rpartition(":")[0].lower() if ":" in authority else authority.lower(), target


def _page(status: int, text: str) -> Response:
    reason = HTTPStatus(status).phrase
    return Response(status, reason, [_HTML], small_page(f"{status} {reason}", text), compressible=True)
