"""What a simulated recrawl achieved, from the ground truth (digest §6.3), overall and per user class.

Role: the figures of the evaluation. Times are relative to the period [start, end), of length T;
only posts made in the period count, and for a left-truncated user only those from its
``known_from`` on (its window starts there). For post m of user u, s_m is its time and κ_m the
time of the first call that returned it (∞ if none):

- ``posted``, ``collected`` (some call returned it), ``coverage`` = collected / posted;
- ``crawls`` (API calls), ``efficiency`` = collected / crawls;
- ``lost_to_cap``: never returned although a later call of its user was made (more than C posts
  piled up between two calls); ``overflows``: calls full of new posts;
- ``potentiality`` (single visit, Def. 3): Σ_u (1/T)[Σ_{s_m ≤ τ_u} s_m + Σ_{s_m > τ_u} (T − s_m)]
  with τ_u the user's first call in the period; users never called are left out
  (``potentiality_users`` says how many count);
- ``staleness``: Σ_u (1/T) Σ_m (min(κ_m, T) − s_m), the time-averaged number of posted but
  unarchived posts over all users;
- ``delay``: mean κ_m − s_m over collected posts, seconds;
- ``freshness`` (Cho): the time-averaged share of users with no unarchived post, i.e. Σ_u of the
  time in u's window covered by no [s_m, min(κ_m, T)), over Σ_u window lengths.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, fields

import numpy as np
import numpy.typing as npt

from bench.freshness.simulator import Run

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Metrics:
    users: int
    posted: int
    collected: int
    coverage: float
    crawls: int
    efficiency: float
    lost_to_cap: int
    overflows: int
    potentiality: float
    potentiality_users: int
    staleness: float
    delay: float
    freshness: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(slots=True)
class _Sums:
    """Running totals over users, turned into :class:`Metrics` by :meth:`metrics`."""

    users: int = 0
    posted: int = 0
    collected: int = 0
    crawls: int = 0
    lost: int = 0
    overflows: int = 0
    potentiality: float = 0.0
    potentiality_users: int = 0
    staleness: float = 0.0
    latency: float = 0.0
    fresh_time: float = 0.0
    window_time: float = 0.0

    def add(self, other: _Sums) -> None:
        for field in fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    def metrics(self) -> Metrics:
        return Metrics(self.users, self.posted, self.collected, _ratio(self.collected, self.posted), self.crawls,
                       _ratio(self.collected, self.crawls), self.lost, self.overflows, self.potentiality,
                       self.potentiality_users, self.staleness, _ratio(self.latency, self.collected),
                       _ratio(self.fresh_time, self.window_time))


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def potentiality(posts: Floats, crawl: float, period: float) -> float:
    """Def. 3 measured (§6.3): posts and the crawl time relative to the period's start."""
    before = posts <= crawl
    return float(posts[before].sum() + (period - posts[~before]).sum()) / period


def stale_time(posts: Floats, archived: Floats) -> float:
    """The length of the union of the intervals [posts[i], archived[i]) (posts ascending)."""
    if posts.size == 0:
        return 0.0
    ends = np.maximum.accumulate(archived)
    opens = np.concatenate(([True], posts[1:] > ends[:-1]))
    starts = np.flatnonzero(opens)
    last = np.concatenate((starts[1:] - 1, [posts.size - 1]))
    return float(np.maximum(ends[last] - posts[starts], 0.0).sum())


def measure(run: Run) -> tuple[Metrics, dict[int, Metrics]]:
    """The metrics of `run`, overall and per user class."""
    trace, api = run.api.trace, run.api
    calls: dict[str, list[float]] = {}
    overflows: Counter[str] = Counter()
    for user, at, _, new in api.calls:
        calls.setdefault(user, []).append(at)
        overflows[user] += new == api.per_crawl
    total, by_class = _Sums(), {c: _Sums() for c in sorted(set(trace.classes.values()))}
    for user in trace.users:
        one = _user_sums(run, user, calls.get(user, []), overflows[user])
        total.add(one)
        by_class[trace.classes[user]].add(one)
    return total.metrics(), {c: sums.metrics() for c, sums in by_class.items()}


def _user_sums(run: Run, user: str, calls: list[float], overflows: int) -> _Sums:
    trace, period = run.api.trace, run.end - run.start
    posts, kappa = trace.posts[user], run.api.captured[user]
    opens = max(run.start, trace.known_from[user])
    lo, hi = np.searchsorted(posts, [opens, run.end], side="left")
    s, k = posts[lo:hi] - run.start, np.minimum(kappa[lo:hi], run.end) - run.start
    got = kappa[lo:hi] < math.inf
    last_call = calls[-1] - run.start if calls else -math.inf
    window = run.end - opens
    return _Sums(
        users=1, posted=len(s), collected=int(got.sum()), crawls=len(calls), lost=int((~got & (s <= last_call)).sum()),
        overflows=overflows, potentiality=potentiality(s, calls[0] - run.start, period) if calls else 0.0,
        potentiality_users=1 if calls else 0, staleness=float((k - s).sum()) / period,
        latency=float((k - s)[got].sum()), fresh_time=window - stale_time(s, k), window_time=window)
