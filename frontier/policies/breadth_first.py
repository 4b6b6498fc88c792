"""The default policy: BUbiNG's per-host breadth-first visit, at no cost to the crawl.

It overrides no hook, so the frontier skips every policy call (no link is shown to it, no
page is built for it) and queues each host's URLs first discovered, first fetched.
"""

from __future__ import annotations

from frontier.policy import CrawlPolicy


class BreadthFirst(CrawlPolicy):
    """Accept every link the scope and filters let through; fetch each host in discovery order."""

    name = "breadth-first"
