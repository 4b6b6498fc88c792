"""The emulated API: a user's newest posts per call, under a per-credential call limit (digest §6.2 item 5).

Role: the only way the simulator's planners see posts. One call returns the newest `per_crawl`
posts of one user with time <= now; at most `per_hour` calls are allowed in each clock hour
counted from the start, and a call beyond that raises :class:`RateLimited` (the 429 of a real
API), so a run that finishes never exceeded the limit (AT-20). It remembers, per post identity
(user, index), the time of the first response that carried it: overlapping timelines never count
a post twice (AT-21). Posts before the start are the planners' history and count as archived.
With ``credentials`` > 1 (several agents, each with a token of its own: ``bench/freshness/agents.py``)
each credential has its own ``per_hour`` calls; captures are shared, as an archive is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bench.freshness.trace import Trace

Floats = npt.NDArray[np.float64]
ARCHIVED_BEFORE_START = -math.inf


class RateLimited(Exception):
    """A call beyond the calls of the current rate-limit window."""


@dataclass(frozen=True, slots=True)
class Response:
    """One call's answer: how many posts it returned, which of them were new, whether it was full of new ones."""

    returned: int
    new: Floats
    overflow: bool


class EmulatedApi:
    """Invariant: ``calls_in_window <= per_hour``; ``captured[u][i]`` is the first call time that
    returned post i of user u (inf while never returned, -inf for history)."""

    def __init__(self, trace: Trace, start: float, per_crawl: int, per_hour: int, credentials: int = 1) -> None:
        if per_crawl < 1:
            raise ValueError(f"per_crawl: must be >= 1, got {per_crawl}")
        if per_hour < 1:
            raise ValueError(f"per_hour: must be >= 1, got {per_hour}")
        if credentials < 1:
            raise ValueError(f"credentials: must be >= 1, got {credentials}")
        self.trace = trace
        self.start = start
        self.per_crawl = per_crawl
        self.per_hour = per_hour
        self.captured: dict[str, Floats] = {}
        for user, posts in trace.posts.items():
            kappa = np.full(len(posts), math.inf)
            kappa[: int(np.searchsorted(posts, start, side="left"))] = ARCHIVED_BEFORE_START
            self.captured[user] = kappa
        self.calls: list[tuple[str, float, int, int]] = []
        """The crawl log: (user, call time, posts returned, new posts)."""
        self.credential_of_call: list[int] = []
        """The credential each call of the log was made with."""
        self.overflows = 0
        self._window = [0] * credentials
        self._calls_in_window = [0] * credentials

    def window(self, now: float) -> int:
        """The rate-limit window of `now`: clock hours counted from the start."""
        return math.floor((now - self.start) / 3600.0)

    def calls_left(self, now: float, credential: int = 0) -> int:
        same = self.window(now) == self._window[credential]
        return self.per_hour - (self._calls_in_window[credential] if same else 0)

    def timeline(self, user: str, now: float, credential: int = 0) -> Response:
        """One call with `credential`: the newest `per_crawl` posts of `user` with time <= now."""
        window = self.window(now)
        if window != self._window[credential]:
            if window < self._window[credential]:
                raise ValueError(f"a call at {now} goes back to an earlier rate-limit window")
            self._window[credential], self._calls_in_window[credential] = window, 0
        if self._calls_in_window[credential] >= self.per_hour:
            raise RateLimited(f"{self.per_hour} calls of credential {credential} already made in hour {window}")
        self._calls_in_window[credential] += 1
        posts, kappa = self.trace.posts[user], self.captured[user]
        top = int(np.searchsorted(posts, now, side="right"))
        first = max(0, top - self.per_crawl)
        fresh = np.flatnonzero(kappa[first:top] == math.inf) + first
        kappa[fresh] = now
        overflow = len(fresh) == self.per_crawl
        self.overflows += overflow
        self.calls.append((user, now, top - first, len(fresh)))
        self.credential_of_call.append(credential)
        return Response(top - first, posts[fresh], overflow)
