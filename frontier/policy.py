"""The crawl-policy interface: the one place a crawl strategy plugs into the frontier.

The engine calls a policy at two named points and nowhere else; a policy never decides
control flow, never does I/O and never sees the workbench. Politeness, robots.txt, the
sieve's exactly-once guarantee and scope are enforced around it and cannot be bypassed.

1. **A link was discovered** — ``accept_link(url, parent, context)``, for every canonical
   link of a fetched page (and for seeds and redirect targets, with ``parent=None``)
   *before* the URL cache and the sieve. Return ``None`` to accept, or a short reason
   string to drop it; drops are counted per reason in the crawl's statistics
   (``policy_drops``). ``context`` is a :class:`~frontier.page.LinkContext` (tag path with
   CSS classes, anchor text) only when the policy sets ``wants_context``; otherwise it is
   ``None`` and the engine never computes it, so the default policy pays nothing.

   If ``ranks_urls`` is set, ``priority(url, parent, context)`` is called for accepted links
   and the int it returns (0–255, lower is fetched first) orders the URL *within its host*;
   equal priorities stay in discovery order. The default (``ranks_urls = False``) is
   BUbiNG's per-host breadth-first order: first discovered, first fetched. Priorities
   travel through the sieve with the URL. URLs spilled to disk by the workbench
   virtualizer come back in discovery order and are ranked again when refilled.

2. **A page was fetched** — ``on_fetched(page)``, with a :class:`~frontier.page.FetchedPage`
   (status, headers, decoded body, and the parsed lxml document when the policy sets
   ``wants_document``). The policy updates its own state (a cluster graph, a learned
   structure model, change statistics) and may return :class:`Revisit` requests: "fetch
   this URL again at time T". Revisits bypass the sieve (which would drop a seen URL) and
   enter their host's queue when due, still under host and IP politeness.

Shipped policies: :class:`BreadthFirst` (the default). Social-site strategies
(cluster-graph crawling, SOUrCe, freshness-driven recrawl) are further modules
implementing this protocol, chosen by ``policy.name`` in crawl.toml.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from frontier.page import FetchedPage, LinkContext


@dataclass(frozen=True, slots=True)
class Revisit:
    """Fetch ``url`` again once the monotonic clock reaches ``at``."""

    url: str
    at: float


class CrawlPolicy(Protocol):
    """What a crawl strategy implements. See the module docstring for when each is called."""

    name: str
    wants_context: bool
    wants_document: bool
    ranks_urls: bool

    def accept_link(self, url: str, parent: str | None, context: LinkContext | None) -> str | None: ...

    def priority(self, url: str, parent: str | None, context: LinkContext | None) -> int: ...

    def on_fetched(self, page: FetchedPage) -> Sequence[Revisit]: ...


class BreadthFirst:
    """BUbiNG's policy: accept every link the filters let through, fetch each host breadth-first."""

    name = "breadth-first"
    wants_context = False
    wants_document = False
    ranks_urls = False

    def accept_link(self, url: str, parent: str | None, context: LinkContext | None) -> str | None:
        return None

    def priority(self, url: str, parent: str | None, context: LinkContext | None) -> int:
        return 0

    def on_fetched(self, page: FetchedPage) -> Sequence[Revisit]:
        return ()


POLICIES: dict[str, Callable[[], CrawlPolicy]] = {
    BreadthFirst.name: BreadthFirst,
}


def make_policy(name: str) -> CrawlPolicy:
    """The policy registered under ``name``; raises KeyError listing the known names."""
    try:
        return POLICIES[name]()
    except KeyError:
        raise KeyError(f"unknown crawl policy {name!r}; known: {', '.join(sorted(POLICIES))}") from None
