"""frontier/freshness/planner.py — the contract between a recrawl planner and whatever drives it
(the offline simulator, `crawl fresh schedule`, the live `--policy freshness`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class Planner(Protocol):
    """Decides when to crawl each user's newest-posts listing. Pure: time is passed in (unix seconds),
    no I/O, no clock. One API call = one crawl of one user, returning at most `per_crawl` newest posts."""

    def begin(self, users: Sequence[str], history: Mapping[str, Sequence[float]], start: float, end: float) -> None:
        """Called once: `history[u]` holds the post times (unix seconds, ascending) of user u seen before
        `start` (possibly empty, users absent from the mapping have none); crawls happen in [start, end)."""

    def next_at(self) -> float | None:
        """The earliest instant at which some crawl is due (may be <= the last `now`), or None if none
        will ever be due again."""

    def take(self, now: float, limit: int) -> list[str]:
        """The users to crawl at `now`, at most `limit` (the calls left in the current rate-limit
        window), most urgent first (expected backlog descending); due users not returned stay due."""

    def crawled(self, user: str, now: float, posts: Sequence[float], overflow: bool) -> None:
        """A crawl of `user` at `now` returned the post times `posts` (ascending) that were new to the
        crawler; `overflow` is True when the call was full (as many new posts as it can return), so
        posts were probably missed."""
