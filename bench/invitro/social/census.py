"""What a lab site holds: a breadth-first walk over ``Site.answer``, in process, with no socket.

Role: the lab's size and mix statement (digest §4.3: page-count mix, degree statistics), for
the sites' tests and the benchmark's FN and UCC-recall denominators. It reads a
:class:`~bench.invitro.social.site.Site` only (its seeds, robots.txt and answers) and writes
nothing.

The walk starts from ``site.seeds()`` and follows ``Answer.links`` whose host the site owns,
in breadth-first order, each distinct URL once. URLs are taken as a crawler keeps them: the
fragment dropped, the host in lower case, the query parameters sorted by name (stable), as the
crawler's canonical form does. With ``obey_robots`` (the default) a URL that the host's
robots.txt disallows is not fetched: it is counted in ``disallowed`` only. Every answered URL
counts, whatever its status (a 404 is category error, a redirect is followed through its
``links``).

Endless chains (a calendar's prev/next beyond the last entry, a cursor past the end) are
capped so that they count only up to a few hundred pages. The sites make the pages of such a
chain *empty results* (category uninformative, of the type of the page that links them), so a
*chain step* is an uninformative answer discovered from a page of its own type. At most
``trap_cap`` chain steps per type are counted and followed; further ones are dropped
(``capped`` says how many were met). The lab's finite listings are valuable or duplicate, so
they are never cut.

Degrees: a page's out-degree is the number of distinct URLs it links to, itself excluded; its
in-degree is the number of distinct counted pages linking to it. Both are over counted pages.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from protego import Protego

from bench.invitro.social.site import UNINFORMATIVE, VALUABLE, Site, Truth
from bench.invitro.social.web import split_url as split


@dataclass(frozen=True)
class Census:
    """The reachable part of one site (see the module docstring for what is counted)."""

    site: str
    pages: int
    """counted URLs: answered, allowed, not capped"""
    urls: tuple[str, ...]
    """the counted URLs, in the walk's order"""
    truths: tuple[Truth, ...]
    """the truth of each of ``urls``"""
    by_type: dict[str, int]
    by_category: dict[str, int]
    valuable_keys: frozenset[str]
    """content keys of the counted valuable pages"""
    ucc_keys: frozenset[str]
    """content keys of the counted pages that show user-created content"""
    out_mean: float
    out_sd: float
    out_max: int
    out_100: float
    """share of counted pages with out-degree ≥ 100"""
    in_mean: float
    in_sd: float
    in_max: int
    in_10: float
    """share of counted pages with in-degree ≥ 10"""
    disallowed: int
    """distinct URLs reached but disallowed by robots.txt (not counted)"""
    capped: int
    """chain steps met beyond ``trap_cap`` per type (neither counted nor followed)"""
    truncated: bool
    """the walk stopped at ``max_urls`` with URLs still queued"""
    answer_seconds: float
    """CPU time spent in ``Site.answer`` (informative only: process time, so other processes on a
    shared machine do not count)"""

    def share(self, category: str) -> float:
        return self.by_category.get(category, 0) / self.pages if self.pages else 0.0

    @property
    def ms_per_page(self) -> float:
        return 1000 * self.answer_seconds / self.pages if self.pages else 0.0

    def as_dict(self) -> dict[str, Any]:
        """Counts and statistics (the key sets as their sizes), for JSON and reports."""
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        del data["urls"], data["truths"]
        data["valuable_keys"], data["ucc_keys"] = len(self.valuable_keys), len(self.ucc_keys)
        data["shares"] = {category: round(self.share(category), 4) for category in self.by_category}
        data["ms_per_page"] = round(self.ms_per_page, 4)
        return data


def census(site: Site, max_urls: int = 200_000, trap_cap: int = 300, obey_robots: bool = True) -> Census:
    """Walk ``site`` breadth-first from its seeds and count what is there (module docstring)."""
    seen: dict[str, str] = {}  # URL -> the type of the page that discovered it ("" for seeds)
    queue: deque[str] = deque()
    for seed in site.seeds():
        url = canonical(seed)
        if url not in seen:
            seen[url] = ""
            queue.append(url)
    robots = _Robots(site, obey_robots)
    by_type: Counter[str] = Counter()
    by_category: Counter[str] = Counter()
    chain_steps: Counter[str] = Counter()
    valuable: set[str] = set()
    ucc: set[str] = set()
    out_links: dict[str, set[str]] = {}
    truths: list[Truth] = []
    disallowed = capped = 0
    spent = 0.0
    in_site: dict[str, str | None] = {}  # a link as written -> its canonical form if the site owns it, else None
    while queue and len(out_links) < max_urls:
        url = queue.popleft()
        host, target = split(url)
        if not robots.allowed(host, url):
            disallowed += 1
            continue
        started = time.process_time()
        answer = site.answer(host, target)
        spent += time.process_time() - started
        truth = answer.truth
        targets = set()
        for link in answer.links:
            kept = in_site.get(link, "")
            if kept == "":
                kept = in_site[link] = canonical(link) if site.owns(split(link)[0]) else None
            if kept is not None:
                targets.add(kept)
        targets.discard(url)
        if truth.category == UNINFORMATIVE and seen[url] == truth.type:
            chain_steps[truth.type] += 1
            if chain_steps[truth.type] > trap_cap:
                capped += 1
                continue
        out_links[url] = targets
        truths.append(truth)
        by_type[truth.type] += 1
        by_category[truth.category] += 1
        if truth.content_key and truth.category == VALUABLE:
            valuable.add(truth.content_key)
        if truth.content_key and truth.ucc:
            ucc.add(truth.content_key)
        for link in sorted(link for link in targets if link not in seen):  # sorted: not in set order
            seen[link] = truth.type
            queue.append(link)
    return _census(site.name, out_links, truths, by_type, by_category, valuable, ucc, disallowed, capped, bool(queue),
                   spent)


def _census(name: str, out_links: dict[str, set[str]], truths: list[Truth], by_type: Counter[str],
            by_category: Counter[str], valuable: set[str], ucc: set[str], disallowed: int, capped: int,
            truncated: bool, spent: float) -> Census:
    in_degree: Counter[str] = Counter()
    for targets in out_links.values():
        in_degree.update(t for t in targets if t in out_links)
    outs = [len(targets) for targets in out_links.values()] or [0]
    ins = [in_degree[url] for url in out_links] or [0]
    pages = len(out_links)
    return Census(
        name, pages, tuple(out_links), tuple(truths), dict(sorted(by_type.items())),
        dict(sorted(by_category.items())), frozenset(valuable), frozenset(ucc),
        statistics.fmean(outs), statistics.pstdev(outs), max(outs),
        sum(d >= 100 for d in outs) / max(1, pages), statistics.fmean(ins), statistics.pstdev(ins), max(ins),
        sum(d >= 10 for d in ins) / max(1, pages), disallowed, capped, truncated, spent,
    )


class _Robots:
    """robots.txt per host for a generic user agent, parsed once per distinct text."""

    def __init__(self, site: Site, obey: bool) -> None:
        self.site = site
        self.obey = obey
        self.by_host: dict[str, Protego] = {}
        self.by_text: dict[str, Protego] = {}

    def allowed(self, host: str, url: str) -> bool:
        if not self.obey:
            return True
        rules = self.by_host.get(host)
        if rules is None:
            text = self.site.robots(host)
            rules = self.by_text.get(text)
            if rules is None:
                rules = self.by_text[text] = Protego.parse(text)
            self.by_host[host] = rules
        return bool(rules.can_fetch(url, "census"))


def canonical(url: str) -> str:
    """The URL as a crawler keeps it: no fragment, host in lower case, parameters sorted by name."""
    url = url.partition("#")[0]
    scheme, _, rest = url.partition("://")
    slash = rest.find("/")
    authority, target = (rest, "/") if slash < 0 else (rest[:slash], rest[slash:])
    path, mark, query = target.partition("?")
    if query:
        query = "&".join(sorted(query.split("&"), key=lambda p: p.partition("=")[0]))
    return f"{scheme}://{authority.lower()}{path}{mark if query else ''}{query}"
