"""The policy seam in a real crawl: the example policy orders a one-site crawl, and a policy sees what it must.

Over real sockets on loopback against the in-vitro web, through its DNS server:

* ``--policy shallow-first`` (``frontier/policies/shallow_first.py``, a module of its own that
  nothing else names) orders a one-host crawl by path depth, and its option ``max_depth``
  drops deeper links, where breadth-first fetches in discovery order;
* a policy defined here, in the test, joins the registry by being defined and, in an agent
  run in this process, sees every page before its links are judged, sees redirects and
  failures, and gets its revisit on the frontier's clock: one second later, not decades.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from pathlib import Path

import uvloop

from bench.invitro import WebParams
from engine import config as configuration
from engine.agent import Agent
from frontier.page import FetchedPage, LinkContext
from frontier.policies.shallow_first import depth
from frontier.policy import CrawlPolicy, Revisit
from tests.invitro_harness import (
    USER_AGENT,
    WebThread,
    page_requests,
    run_crawl,
    url_of,
)

DELAYS = ["politeness.host_delay=0.01", "politeness.ip_delay=0"]


def crawl_one_site(tmp_path: Path, name: str, settings: list[str], args: list[str]) -> tuple[dict, list[int]]:  # type: ignore[type-arg]
    """A crawl of a fresh one-host web (the same web each time); its stats and the path depth of each page
    request, in the order served."""
    web = WebThread(WebParams(hosts=1, mean_pages=400, max_pages=400, frac_redirect=0.0), tmp_path / f"{name}.jsonl")
    try:
        result = run_crawl(tmp_path / name, web.web.seeds, dns=web.web.dns_address, settings=[*DELAYS, *settings],
                           args=args)
    finally:
        log = web.stop()
    port = web.model.port
    return result.stats, [depth(url_of(r, port)) for r in sorted(page_requests(log), key=lambda r: r.start)]


def inversions(depths: list[int]) -> int:
    return sum(a > b for a, b in zip(depths, depths[1:]))


def test_shallow_first_orders_a_one_site_crawl_by_depth_and_drops_deeper_links(tmp_path: Path) -> None:
    _, breadth_first = crawl_one_site(tmp_path, "bfs", [], ["--max-pages", "120"])
    _, shallow = crawl_one_site(tmp_path, "shallow", [], ["--max-pages", "120", "--policy", "shallow-first"])
    assert len(shallow) == len(breadth_first) == 120
    # each crawl discovers as it goes, so neither order is sorted; the ranked one is much closer to it
    assert statistics.mean(shallow) < statistics.mean(breadth_first)
    assert inversions(shallow) < inversions(breadth_first) / 2

    stats, capped = crawl_one_site(tmp_path, "capped", ["policy.max_depth=1"], ["--policy", "shallow-first"])
    assert capped and max(capped) <= 1
    assert stats["stop_reason"] == "done"
    assert stats["frontier"]["drops"]["too_deep"] > 0


class Recorder(CrawlPolicy):
    """Remembers what it was shown; asks to see the first page again a second later."""

    name = "test-recorder"
    wants_context = True

    def __init__(self, options: object, model: Path | None) -> None:
        super().__init__(options, model)
        self.pages: dict[str, FetchedPage] = {}
        self.judged_unseen: list[str] = []  # links offered before their page was
        self.contexts = 0
        self.failures: list[tuple[str, str, bool]] = []
        self.revisit: tuple[str, float] | None = None

    def accept_link(self, url: str, parent: str | None, context: LinkContext | None) -> str | None:
        if parent is not None and parent not in self.pages:
            self.judged_unseen.append(url)
        self.contexts += context is not None
        return None

    def on_fetched(self, page: FetchedPage, now: float) -> Iterable[Revisit]:
        self.pages[page.url] = page
        if self.revisit is None and page.status == 200:
            self.revisit = (page.url, now)
            return [Revisit(page.url, now + 1.0)]
        return ()

    def on_failed(self, url: str, error: str, now: float, final: bool) -> Iterable[Revisit]:
        self.failures.append((url, error, final))
        return ()


def test_a_policy_sees_pages_before_their_links_redirects_failures_and_its_revisit(tmp_path: Path) -> None:
    web = WebThread(WebParams(hosts=6, mean_pages=15, frac_redirect=0.15, frac_slow=0.1, slow_seconds=3.0),
                    tmp_path / "requests.jsonl")
    try:
        config = configuration.load(None, [
            f'store.dir="{tmp_path / "out"}"', 'engine.progress="off"', f'engine.user_agent="{USER_AGENT}"',
            f'dns.servers=["{web.web.dns_address}"]', 'network.allow_networks=["127.0.0.0/8"]',
            *DELAYS, "network.total_timeout=0.5", "frontier.max_fetch_retries=0", "frontier.sieve_flush_interval=0",
            'policy.name="test-recorder"',
        ])
        agent = Agent(config, web.web.seeds)
        summary = uvloop.run(agent.run())
    finally:
        log = web.stop()
    policy = agent.crew.frontier.policy
    assert isinstance(policy, Recorder) and summary["stop_reason"] == "done"
    assert policy.judged_unseen == []
    assert policy.contexts > 0
    assert any(page.redirect for page in policy.pages.values()), "redirects reach the policy"
    timeouts = {url for url, error, final in policy.failures if error == "timeout" and final}
    assert timeouts and timeouts.isdisjoint(u for u, p in policy.pages.items())
    assert policy.revisit is not None
    url = policy.revisit[0]
    served = sorted((r for r in page_requests(log) if url_of(r, web.web.port) == url), key=lambda r: r.start)
    assert len(served) == 2, "the revisit bypasses the sieve, once"
    assert 0.9 <= served[1].start - served[0].end < 10.0, "due on the frontier's clock, one second later"
