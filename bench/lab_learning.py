"""The learner's sampling crawl run in process over a lab site: no socket, the same sample.

Role: shared by the lab's acceptance tests and ``bench/clustergraph_filter.py``. ``crawl learn``
fetches through ``engine/learn_fetch.py``; :class:`LabClient` answers the same questions from a
lab site directly (robots.txt obeyed, canonical in-scope outlinks, a redirect's target as its
only link), so :func:`engine.learn.sample_site`, the learner's own loop, draws exactly the sample
it would draw over sockets. :class:`Remembered` keeps each answer (without its HTML) so a site
walked by a census, samples and scoring is generated once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections import Counter
from collections.abc import Iterable, Sequence

from bench.invitro.social.site import Answer, Site
from bench.invitro.social.web import split_url
from engine.learn import Sampling, sample_site
from engine.learn_fetch import Page
from engine.robots import RobotsRules
from frontier.clustergraph.model import Params
from frontier.clustergraph.urls import in_scope
from frontier.urls import canonicalize

class Remembered(Site):
    """A lab site whose answers are computed once and kept without their HTML (nothing here reads it)."""

    def __init__(self, site: Site) -> None:
        super().__init__(site.seed, site.port)  # the knobs are the wrapped site's business
        self.site, self.name, self.domain = site, site.name, site.domain
        self.answers: dict[tuple[str, str], Answer] = {}
        self.pages: dict[str, Page] = {}

    def owns(self, host: str) -> bool:
        return self.site.owns(host)

    def seeds(self) -> list[str]:
        return self.site.seeds()

    def robots(self, host: str) -> str:
        return self.site.robots(host)

    def answer(self, host: str, target: str) -> Answer:
        key = (host, target)
        found = self.answers.get(key)
        if found is None:
            answer = self.site.answer(host, target)
            # interned: the same header, footer and sidebar links recur on thousands of pages
            found = self.answers[key] = dataclasses.replace(answer, html="", links=tuple(map(sys.intern, answer.links)))
        return found

    def page(self, url: str) -> Page:
        """The canonical ``url`` as ``engine/learn_fetch.py`` gives it (robots.txt aside)."""
        found = self.pages.get(url)
        if found is None:
            answer = self.answer(*split_url(url))
            if 300 <= answer.status < 400:
                target = canonicalize(answer.location) or url
                found = Page(url, target, answer.status, self.outlinks(url, [target]))
            else:
                found = Page(url, url, answer.status, self.outlinks(url, answer.links) if answer.status == 200 else ())
            self.pages[url] = found
        return found

    def outlinks(self, url: str, links: Iterable[str]) -> tuple[str, ...]:
        canonical = (canonicalize(link) for link in links)
        return tuple(dict.fromkeys(c for c in canonical if c and c != url and in_scope(c, self.domain)))


class LabClient:
    """What ``sample_site`` asks of ``engine.learn_fetch.SiteClient``, answered from a :class:`Remembered` site."""

    def __init__(self, site: Remembered, user_agent: str) -> None:
        self.site = site
        self.user_agent = user_agent  # the crawl's engine.user_agent: robots.txt groups are chosen by it
        self.downloads = self.robots_fetches = 0
        self.errors: Counter[str] = Counter()
        self.rules: dict[str, RobotsRules] = {}

    async def fetch(self, url: str) -> Page | None:
        """The page, or None when the host's robots.txt disallows it (nothing downloaded then)."""
        host, target = split_url(url)
        rules = self.rules.get(host)
        if rules is None:
            self.robots_fetches += 1
            rules = self.rules[host] = RobotsRules.parse(self.site.robots(host).encode(), self.user_agent)
        if not rules.allowed(target):
            return None
        self.downloads += 1
        return self.site.page(url)


def sample_in_process(site: Remembered, seeds: Sequence[str], params: Params, downloads: int,
                      user_agent: str) -> Sampling:
    """The learner's sample of ``site`` within ``downloads`` downloads (pilot included), as ``crawl learn`` draws it."""
    run = sample_site(LabClient(site, user_agent), seeds, params, downloads, lambda record: None)  # type: ignore[arg-type]
    return asyncio.run(run)
