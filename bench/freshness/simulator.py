"""The discrete-event driver: one planner, one trace, one emulated API, on a virtual clock (digest §6.2 item 1).

Role: the loop of the planner contract (``frontier/freshness/planner.py``), with no wall clock:
``t = planner.next_at()``; when the current hour's calls are used up, jump to the next window;
otherwise ``planner.take(t, calls_left)``, one API call per user returned, ``planner.crawled``
with what was new. It stops at `end` or when the planner has nothing more to do. The clock never
goes back: a crawl due in the past happens now.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.freshness.api import EmulatedApi
from bench.freshness.trace import Trace
from frontier.freshness.planner import Planner


@dataclass(frozen=True, slots=True)
class Limits:
    """The API's limits: the paper's Weibo values by default (§3.4, A26)."""

    per_crawl: int = 100
    """Most posts one call returns (C)."""
    per_hour: int = 150
    """Most calls in each clock hour counted from the start."""


@dataclass(frozen=True, slots=True)
class Run:
    """What a simulation leaves: the API with its capture times and crawl log, and the period."""

    api: EmulatedApi
    start: float
    end: float


def simulate(planner: Planner, trace: Trace, start: float, end: float, limits: Limits = Limits()) -> Run:
    """Runs `planner` over `trace` from `start` to `end`; raises if the planner breaks its contract
    (nothing returned although a crawl is due and calls are left, or a user it was not given)."""
    if not end > start:
        raise ValueError(f"end ({end}) must be after start ({start})")
    api = EmulatedApi(trace, start, limits.per_crawl, limits.per_hour)
    planner.begin(trace.users, trace.history(start), start, end)
    clock = start
    while (due := planner.next_at()) is not None:
        clock = max(clock, due)
        left = api.calls_left(clock)
        if left == 0:
            clock = start + (api.window(clock) + 1) * 3600.0
        if clock >= end:
            break
        if left == 0:
            continue
        users = planner.take(clock, left)
        if not users or len(users) > left:
            raise RuntimeError(f"{type(planner).__name__}.take({clock}, {left}) returned {len(users)} users "
                               f"although a crawl was due at {due}")
        for user in users:
            if user not in trace.posts:
                raise RuntimeError(f"{type(planner).__name__} asked for unknown user {user!r}")
            response = api.timeline(user, clock)
            planner.crawled(user, clock, response.new.tolist(), response.overflow)
    return Run(api, start, end)

