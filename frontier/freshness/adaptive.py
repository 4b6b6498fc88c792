"""The adaptive planner: the allocation planner whose freshness calls are timed by what each call saw.

Role: a :class:`~frontier.freshness.planner.Planner` like :class:`~frontier.freshness.allocation.AllocationPlanner`
(the same budget, the same cap calls, the same day chain read from the history), except that a
user's freshness calls are not a fixed grid: each call decides the next from what it returned.
A user whose day before the call was *active* (a post in the 24 hours before it, its crawl
time of day being the start of the day's quiet stretch) is likely in a burst and will be stale
again soon; one whose day was *quiet* is fresh and likely to stay so. So each user has two
waits, in whole days, k_A after an active day and k_Q after a quiet one, chosen by
:func:`adaptive_waits`: the pair maximizing Σ fresh time − p·calls over the period, with the
day chain's odds of each next state, and the price p of a call set by bisection so the calls
spend the freshness share (Cho and Garcia-Molina's allocation, over policies instead of
numbers of crawls). An even grid is the pair k_A = k_Q, so the adaptive choice is never worse
in the model. Pure: time is passed in; no I/O, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from frontier.freshness.allocation import AllocationPlanner, fresh_days
from frontier.freshness.calendar import DAY

Floats = npt.NDArray[np.float64]
# the waits a policy may choose, days: every day for three weeks, then coarser up to two months
WAITS = np.array([*range(1, 22), 25, 30, 40, 61], dtype=np.float64)


def _policies(stay: Floats, wake: Floats, delay: Floats, waits: Floats) -> tuple[Floats, Floats]:
    """Per user and pair (k_A, k_Q) of ``waits`` (users × pairs, k_A-major): the mean fresh days per
    day and the calls per day of the policy waiting k_A days after an active day and k_Q after a
    quiet one, in the steady state of the day chain (stay, wake) seen at the calls."""
    u = stay[:, None]
    w, d = wake[:, None], delay[:, None]
    k = waits[None, :]
    active = w / np.maximum(1.0 - u + w, 1e-12)  # the chain's stationary share of active days
    decay = (u - w) ** k  # P^k[s, A] = active + (1[s = A] − active)·(stay − wake)^k
    to_active = (active + (1.0 - active) * decay, active - active * decay)  # after an active / quiet day
    fresh = (fresh_days(u, w, d, k), fresh_days(w, w, d, k))
    a_a, a_q = to_active[0][:, :, None], to_active[1][:, None, :]
    # the chain of states seen at the calls: A → A with a_a, Q → A with a_q
    share = a_q / np.maximum(1.0 - a_a + a_q, 1e-12)
    cycle = share * waits[None, :, None] + (1.0 - share) * waits[None, None, :]
    gained = share * fresh[0][:, :, None] + (1.0 - share) * fresh[1][:, None, :]
    n = len(stay)
    per_day: Floats = (gained / cycle).reshape(n, -1)
    calls: Floats = (1.0 / cycle).reshape(n, -1)
    return per_day, calls


def adaptive_waits(stay: Floats, wake: Floats, delay: Floats, days: float, calls: float,
                   waits: Floats = WAITS) -> tuple[Floats, Floats]:
    """Each user's waits (users × 2: after an active day, after a quiet one; days, ∞ for users not
    worth a call) maximizing the period's summed fresh time with at most ``calls`` calls
    expected, and the calls per day each user's policy makes: each user takes the pair of
    ``waits`` (or no call) maximizing fresh − p·calls, the price p found by bisection."""
    n = len(stay)
    none = np.full((n, 2), math.inf)
    if not n or calls <= 0:
        return none, np.zeros(n)
    per_day, per_day_calls = _policies(stay, wake, delay, waits)
    active = wake / np.maximum(1.0 - stay + wake, 1e-12)
    # no call: fresh from the start (the history is archived) until the first post
    idle = fresh_days(active * stay + (1.0 - active) * wake, wake, delay, np.full(n, days))
    fresh = np.concatenate([idle[:, None], per_day * days], axis=1)
    spent = np.concatenate([np.zeros((n, 1)), per_day_calls * days], axis=1)

    def choose(price: float) -> npt.NDArray[np.int64]:
        chosen: npt.NDArray[np.int64] = np.argmax(fresh - price * spent, axis=1)
        return chosen

    def total(choice: npt.NDArray[np.int64]) -> float:
        return float(spent[np.arange(n), choice].sum())

    low, high = 0.0, float(fresh.max()) + 1.0
    choice = choose(low)
    if total(choice) > calls:
        for _ in range(60):
            mid = (low + high) / 2.0
            if total(choose(mid)) > calls:
                low = mid
            else:
                high = mid
        # users with equal values (the same prior) jump together at the price found: the calls left
        # go to some of them, each moving to its choice just below the price
        choice, above = choose(high), choose(low)
        left = calls - total(choice)
        for u in np.flatnonzero(above != choice).tolist():
            extra = float(spent[u, above[u]] - spent[u, choice[u]])
            if extra <= left:
                choice[u], left = above[u], left - extra
    choice = choice - 1  # −1: no call
    pairs = np.stack(np.meshgrid(waits, waits, indexing="ij"), axis=-1).reshape(-1, 2)
    result: Floats = np.where(choice[:, None] >= 0, pairs[np.maximum(choice, 0)], none)
    rate: Floats = np.where(choice >= 0, per_day_calls[np.arange(n), np.maximum(choice, 0)], 0.0)
    return result, rate


class AdaptivePlanner(AllocationPlanner):
    """Invariant (besides the allocation planner's): ``newest[u]`` is the newest post of user u the
    history or a call has shown; a user's next freshness call is ``wait[u, state]`` days after its
    last call, state 0 when ``newest`` is within a day of that call, 1 otherwise."""

    def crawled(self, user: str, now: float, posts: Sequence[float], overflow: bool) -> None:
        if len(posts):
            u = self.index[user]
            self.newest[u] = max(float(self.newest[u]), float(posts[-1]))
        super().crawled(user, now, posts, overflow)

    def _allocate(self, posts: list[Floats], light: npt.NDArray[np.bool_]) -> None:
        """Choose each user's two waits (:func:`adaptive_waits`), its first freshness call at its phase
        of its mean interval, and θ for the rest; ``interval`` holds the mean interval, which the
        cap calls' θ counts the freshness calls left by."""
        at = self.start
        self.newest = np.array([float(x[-1]) if len(x) else -math.inf for x in posts])
        stay, wake, delay = self._chain(posts, light)
        self.wait, per_day = adaptive_waits(stay, wake, delay, (self.end - at) / DAY, self.fresh_budget)
        finite = per_day > 0
        self.interval = np.where(finite, DAY / np.maximum(per_day, 1e-12), math.inf)
        self.origin = at + self.phase * np.where(finite, self.interval, 0.0)
        for u in np.flatnonzero(finite).tolist():
            self.fresh_due[u] = self._snap(u, float(self.origin[u]), at)
        self._set_theta(at)

    def _next_fresh(self, u: int, now: float, fresh: bool) -> float:
        """``wait[u, state]`` days after this call, at the user's crawl time of day; any call (a cap
        call too) leaves the user fresh, so the next is timed from it."""
        state = 0 if now - float(self.newest[u]) < DAY else 1
        wait = float(self.wait[u, state])
        if not math.isfinite(wait) or now + wait * DAY >= self.end:
            return math.inf
        return self._snap(u, now + wait * DAY, now)
