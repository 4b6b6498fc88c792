"""The baselines the paper's methods are measured against, as :class:`~frontier.freshness.planner.Planner`\\ s.

Role: the rate-blind and the rate-greedy ends of the comparison (digest §5, §6.4, A15):

- :class:`RoundRobin`: each user crawled `per_user` times, evenly spaced over the period, with a
  random phase per user (T1/T2's RR);
- :class:`Cyclic`: one visit per user in the fixed user order, user j at start + (j + ½)·T/N
  (T5.1's RR, the single-visit scenario);
- :class:`RateProportional`: crawl intervals ∝ 1/λ̂ for the same total number of calls
  (each user gets its largest-remainder share of the budget, evenly spaced, random phase).

All three fix their whole schedule in ``begin`` and do not learn from what crawls return; when
the rate limit holds crawls back, the most overdue go first (for these planners the most
overdue is the one whose expected backlog, measured in their own schedule, is the oldest).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
DAY = 86_400.0


class _FixedSchedule:
    """A schedule fixed in ``begin``: crawl times ascending, and the users due at them.
    Invariant: everything before ``_next`` has been handed out by :meth:`take`."""

    def __init__(self) -> None:
        self._times: Floats = np.zeros(0)
        self._users: list[str] = []
        self._next = 0

    def _fix(self, times: Floats, users: Sequence[str]) -> None:
        order = np.argsort(times, kind="stable")
        self._times = times[order]
        self._users = [users[i] for i in order]
        self._next = 0

    def next_at(self) -> float | None:
        return float(self._times[self._next]) if self._next < len(self._users) else None

    def take(self, now: float, limit: int) -> list[str]:
        stop = min(self._next + limit, int(np.searchsorted(self._times, now, side="right")))
        taken = self._users[self._next:stop]
        self._next = max(self._next, stop)
        return taken

    def crawled(self, user: str, now: float, posts: Sequence[float], overflow: bool) -> None:
        """A fixed schedule learns nothing from a crawl."""


class RoundRobin(_FixedSchedule):
    """Each user `per_user` times at start + (φ_u + k)·T/per_user, φ_u uniform in [0, 1)."""

    def __init__(self, per_user: int, seed: int = 0) -> None:
        super().__init__()
        if per_user < 1:
            raise ValueError(f"per_user: must be >= 1, got {per_user}")
        self.per_user, self.seed = per_user, seed

    def begin(self, users: Sequence[str], history: Mapping[str, Sequence[float]], start: float, end: float) -> None:
        phase = np.random.default_rng(self.seed).uniform(0.0, 1.0, len(users))
        slots = (phase[:, None] + np.arange(self.per_user)[None, :]).ravel()
        self._fix(start + slots * (end - start) / self.per_user, [u for u in users for _ in range(self.per_user)])


class Cyclic(_FixedSchedule):
    """One visit per user, in the order given, user j at start + (j + ½)·T/N."""

    def begin(self, users: Sequence[str], history: Mapping[str, Sequence[float]], start: float, end: float) -> None:
        self._fix(start + (np.arange(len(users)) + 0.5) * (end - start) / max(len(users), 1), list(users))


def estimated_rates(users: Sequence[str], history: Mapping[str, Sequence[float]], start: float,
                    prior_posts: float = 1.0, prior_days: float = 1.0) -> Floats:
    """λ̂_u in posts per day: (N_u + α) / (span + β) (§2.4's Gamma shrinkage, prior mean α/β), the
    span being from the earliest post of any user's history to `start` (the shared observation window)."""
    counts = np.array([len(history.get(u, ())) for u in users], dtype=np.float64)
    firsts = [h[0] for h in history.values() if len(h)]
    span = (start - min(firsts)) / DAY if firsts else 0.0
    rates: Floats = (counts + prior_posts) / (span + prior_days)
    return rates


class RateProportional(_FixedSchedule):
    """`budget` calls shared in proportion to λ̂: user u gets the largest-remainder rounding of
    budget·λ̂_u/Σλ̂ visits, evenly spaced with a random phase (users whose share rounds to 0 are
    never crawled: that is the greedy end of the trade-off)."""

    def __init__(self, budget: int, seed: int = 0) -> None:
        super().__init__()
        if budget < 0:
            raise ValueError(f"budget: must be >= 0, got {budget}")
        self.budget, self.seed = budget, seed

    def begin(self, users: Sequence[str], history: Mapping[str, Sequence[float]], start: float, end: float) -> None:
        rates = estimated_rates(users, history, start)
        visits = largest_remainder(self.budget * rates / rates.sum()) if len(users) else np.zeros(0, np.int64)
        phase = np.random.default_rng(self.seed).uniform(0.0, 1.0, len(users))
        owner = np.repeat(np.arange(len(users)), visits)
        k = np.arange(len(owner)) - np.repeat(np.cumsum(visits) - visits, visits)
        times = start + (phase[owner] + k) * (end - start) / visits[owner]
        self._fix(times, [users[i] for i in owner.tolist()])


def largest_remainder(shares: Floats) -> npt.NDArray[np.int64]:
    """Integers summing to round(Σ shares), each the floor of its share or one more (Hamilton's method)."""
    floors = np.floor(shares).astype(np.int64)
    extra = round(float(shares.sum())) - int(floors.sum())
    floors[np.argsort(floors - shares, kind="stable")[:extra]] += 1
    return floors
