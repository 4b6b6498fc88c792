"""An example ranked policy: shallow pages first, across a whole site.

It shows the seam's ranked mode (:mod:`frontier.policy`): a link's lane is the number of
segments of its path (``/`` is 0, ``/a/b/`` is 2, the query not counted), so a host's URLs
are fetched by depth and, within one depth, in discovery order, even when most of them
wait on disk; and among hosts polite at the same moment, the one with the shallowest next
URL goes first. With ``max_depth`` (0 = no limit) deeper links are dropped as ``too_deep``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from frontier.page import LinkContext
from frontier.policy import MAX_LANE, CrawlPolicy
from frontier.urls import split


def depth(url: str) -> int:
    """The number of non-empty segments of the URL's path."""
    path = split(url)[1].partition("?")[0]
    return sum(1 for segment in path.split("/") if segment)


class ShallowFirst(CrawlPolicy):
    """Lane = path depth; lanes rank by their number (the default ``lane_rank``)."""

    name = "shallow-first"
    ranks_urls = True

    @dataclass(frozen=True, slots=True)
    class Options:
        max_depth: int = 0  # deeper links are dropped; 0 = no limit

    def __init__(self, options: ShallowFirst.Options, model: Path | None) -> None:
        super().__init__(options, model)
        self.max_depth = options.max_depth

    def accept_link(self, url: str, parent: str | None, context: LinkContext | None) -> str | None:
        if self.max_depth and depth(url) > self.max_depth:
            return "too_deep"
        return None

    def priority(self, url: str, parent: str | None, context: LinkContext | None) -> int:
        return min(depth(url), MAX_LANE)
