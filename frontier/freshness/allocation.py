"""The allocation planner: a fixed call budget split between freshness and messages (issue 15's target).

Role: a :class:`~frontier.freshness.planner.Planner` that spends ``calls_per_day`` × the period's
days calls and aims at both figures the issue judges, messages collected and Cho's freshness
(the time-averaged share of users with nothing left unarchived). The paper's planners spend
what their models ask; round-robin spreads calls evenly; rate-proportional starves the light
users. This one splits the budget in two (``allocation.fresh_share``):

- *freshness calls*, shared among users by Cho and Garcia-Molina's allocation: user u gets n_u
  crawls, evenly spaced, maximizing Σ_u fresh_u(n_u) − p·n_u, the price p of a call set by
  bisection so the n_u spend the share. Users too active to keep fresh get none (Cho's result:
  the calls would buy nothing). fresh_u(n) is the fresh time n crawls buy (:func:`chain_value`)
  when the user's days are active or quiet as a two-state Markov chain read from its history
  (shrunk toward the light users' pooled chain): a Poisson rate would call a user who posts 20
  times in a 2-day burst each week hopeless, while it is fresh most of the week. Each user's
  crawls lie on a fixed grid from a phase of its interval of its own (users with equal intervals
  must not all come due on one day), each point moved to the nearest instant of its *crawl time
  of day* (a cap call in between does not shift the grid): within
  ``spread_hours`` from the start of the quietest ``quiet_hours`` of the day in the light
  users' pooled history, so a day's posts are archived before the user's quiet night;
- *cap calls*: the rest of the budget (at most the full pages the users are expected to post;
  any calls beyond go to freshness). A call returns at most C posts, so the most a call can
  collect is C; a user is crawled when θ·C posts are expected since its last crawl (one call,
  one full page), θ set at each local midnight so the cap calls expected by the end spend the
  calls left (θ ≥ ``theta_min``). On the last local day the calls no plan will spend go to the
  users holding the most posts.

No call is made past the budget. A budget larger than the freshness allocation and the cap calls
at ``theta_min`` can use is partly left unspent (the allocation is not redone).

Learning (``learn``): a crawl's posts update the user's rate (for the cap calls), an average over
crawls weighted by the time each covers (a full call's rate is C over the span of its posts, not
over the gap). The freshness allocation is decided once, from the history: redoing it weekly
from what crawls reported did not help (full calls hide posts, so the heaviest users looked
light). Pure: time is passed in; no I/O, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from frontier.freshness.calendar import DAY, Calendar
from frontier.freshness.due import DueQueue, next_due
from frontier.freshness.params import PlannerParams
from frontier.freshness.poisson import GammaPrior

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
HOUR = 3600.0
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def chain_value(stay: Floats, wake: Floats, delay: Floats, period: float, most: int) -> Floats:
    """The fresh time n = 0..most evenly spaced crawls buy each user (users × most + 1) when its days
    (cut at its crawl time of day) are active or quiet as a two-state Markov chain: an active day
    is followed by an active one with probability ``stay``, a quiet one with ``wake``, and the
    first post of an active day comes ``delay`` days after the day's start (its crawl). A crawl
    leaves the user fresh for G = (K − 1) + delay days, K the days until the next active one; an
    interval of I days between crawls is fresh for E[min(G, I)]. Bursts then silence (a high
    ``stay``, a low ``wake``) make a user cheap to keep fresh, though it posts many times a week;
    a user active every day is fresh only for ``delay``."""
    n = np.arange(most + 1, dtype=np.float64)
    interval = (period / DAY / np.maximum(n, 1.0))[None, :]  # days
    stay, wake, delay = stay[:, None], wake[:, None], delay[:, None]
    active = wake / np.maximum(1.0 - stay + wake, 1e-12)  # the chain's stationary share of active days
    first = active * stay + (1.0 - active) * wake  # P(the day after a crawl is active)
    # after a quiet day the wait for the next active one is geometric:
    # E[min(1 + delay + J, I)], P(J ≥ j) = (1 − wake)^j
    rest = np.maximum(interval - 1.0 - delay, 0.0)
    whole = np.floor(rest)
    quiet = 1.0 - wake
    geometric = np.where(wake > 0, quiet * (1.0 - quiet ** whole) / np.maximum(wake, 1e-12), whole)
    later = np.minimum(1.0 + delay, interval) + geometric + (rest - whole) * quiet ** (whole + 1.0)
    fresh_days = first * np.minimum(delay, interval) + (1.0 - first) * later
    value: Floats = fresh_days * DAY * np.maximum(n, 1.0)[None, :]  # n intervals (one when there is no crawl)
    return value


def cho_allocation(value: Floats, calls: float) -> Ints:
    """Crawls per user (columns 0..most of ``value``, the fresh time each number buys) maximizing
    the summed fresh time with at most ``calls`` crawls in all: n_u = argmax_n value[u, n] − p·n,
    the price p found by bisection. The choice is made over n as a whole: the first crawl alone
    may buy nothing (it is the last of the period), so a greedy one-at-a-time allocation would
    never start."""
    n = np.arange(value.shape[1], dtype=np.float64)
    if not len(value) or calls <= 0:
        return np.zeros(len(value), dtype=np.int64)

    def spend(price: float) -> Ints:
        chosen: Ints = np.argmax(value - price * n[None, :], axis=1).astype(np.int64)
        return chosen

    low, high = 0.0, float(value.max()) + 1.0  # at a price above any value no crawl is worth it
    if spend(low).sum() <= calls:
        return spend(low)
    for _ in range(60):
        mid = (low + high) / 2.0
        if spend(mid).sum() > calls:
            low = mid
        else:
            high = mid
    # users with equal values (no history: the same prior) jump together at the price found: the
    # calls left go to some of them, the more valuable moves first, each as far as the calls allow
    below, above = spend(high), spend(low)
    movers = np.flatnonzero(above > below)
    gain = (value[movers, above[movers]] - value[movers, below[movers]]) / (above[movers] - below[movers])
    left = int(calls - below.sum())
    for u in movers[np.argsort(-gain, kind="stable")].tolist():
        options = np.arange(below[u] + 1, min(above[u], below[u] + left) + 1)
        if left <= 0 or not len(options):
            continue
        best = int(options[np.argmax(value[u, options])])
        if value[u, best] > value[u, below[u]]:
            left -= best - int(below[u])
            below[u] = best
    return below


def crawl_hour(posts: Floats, calendar: Calendar, quiet_hours: int) -> float:
    """The local time of day (seconds after midnight) that opens the quietest ``quiet_hours`` of the
    day in ``posts`` (pooled over users): crawling then archives the day and leaves a user fresh
    through the stretch it is least likely to post in. Midnight when there are no posts."""
    if not len(posts):
        return 0.0
    hours = np.floor(((posts + calendar.offset) % DAY) / HOUR).astype(np.int64)
    counts = np.bincount(hours, minlength=24).astype(np.float64)
    window = np.array([counts[(h + np.arange(quiet_hours)) % 24].sum() for h in range(24)])
    return float(np.argmin(window)) * HOUR


class AllocationPlanner:
    """Invariant: every user has at most one planned crawl in ``queue``, due at the earlier of its
    next freshness crawl (``fresh_due``) and its next cap crawl (last crawl + θ·C/λ̂)."""

    def __init__(self, params: PlannerParams | None = None) -> None:
        self.params = params or PlannerParams()
        if not self.params.calls_per_day > 0:
            raise ValueError("calls_per_day: the allocation planner spends a budget; give it above 0")
        cal = self.params.calendar
        self.calendar = Calendar(cal.utc_offset_hours, cal.slots, cal.day_types)
        self.names: list[str] = []

    # -- the contract ----------------------------------------------------------------------

    def begin(self, users: Sequence[str], history: Mapping[str, Sequence[float]], start: float, end: float) -> None:
        p, a = self.params, self.params.allocation
        self.names = list(dict.fromkeys(users))
        self.index = {name: i for i, name in enumerate(self.names)}
        n = len(self.names)
        self.start, self.end = start, end
        self.budget = p.calls_per_day * (end - start) / DAY
        posts = [np.sort(np.asarray(history.get(u, ()), dtype=np.float64)) for u in self.names]
        posts = [x[x < start] for x in posts]
        first = min((float(x[0]) for x in posts if len(x)), default=start)
        self.history_start = min(p.history_start, first) if p.history_start is not None else first
        posts = [x[x >= self.history_start] for x in posts]
        span = start - self.history_start
        counts = np.array([len(x) for x in posts], dtype=np.float64)
        prior = GammaPrior.population(int(counts.sum()), n, span, p.poisson.prior_days * DAY,
                                      p.poisson.default_rate / DAY)
        self.rate: Floats = prior.rate(counts, np.full(n, span))  # posts per second, learned per crawl
        self.last_crawl = np.full(n, start)
        light = self.rate * DAY < 1.0
        pooled = np.concatenate([x for x, is_light in zip(posts, light, strict=True) if is_light] or [np.zeros(0)])
        opens = crawl_hour(pooled, self.calendar, a.quiet_hours)
        # each user's crawl time of day: spread over `spread_hours` from the quiet stretch's start
        self.time_of_day = opens + (np.arange(n) * _GOLDEN % 1.0) * a.spread_hours * HOUR
        # each user's phase in its interval: users with equal intervals must not all come due on one day
        self.phase = (np.arange(n) * math.sqrt(2.0) + 0.5) % 1.0
        # the cap calls cannot usefully exceed the full pages the users are expected to post
        pages = float(np.floor(self.rate * (end - start) / (p.per_crawl * a.theta_min)).sum())
        self.fresh_budget = max(a.fresh_share * self.budget, self.budget - pages)
        self.fresh_calls = 0  # calls made at or after the user's freshness due time
        self.crawls = 0
        self.origin = np.full(n, start)  # where each user's grid of freshness crawls starts
        self.interval = np.full(n, math.inf)
        self.fresh_due = np.full(n, math.inf)
        self.theta = 1.0
        self.queue = DueQueue(n)
        self.next_midnight = self.calendar.day_start(self.calendar.day(start) + 1)
        self._allocate(posts, light)

    def next_at(self) -> float | None:
        if self._calls_left() <= 0:
            return None  # the budget is spent
        return next_due(self.queue, self.end, lambda: self.next_midnight, self._advance)

    def take(self, now: float, limit: int) -> list[str]:
        self._advance(now)
        chosen = self.queue.take(now, min(limit, self._calls_left()), lambda users: self.backlog(users, now))
        return [self.names[u] for u in chosen]

    def crawled(self, user: str, now: float, posts: Sequence[float], overflow: bool) -> None:
        self._advance(now)
        u = self.index[user]
        self.queue.in_flight.discard(u)
        self.crawls += 1
        fresh = bool(self.fresh_due[u] <= now)
        self.fresh_calls += fresh
        if self.params.learn:
            self._learn(u, now, np.asarray(posts, dtype=np.float64), overflow)
        self.last_crawl[u] = now
        self.fresh_due[u] = self._next_fresh(u, now, fresh)
        self._plan(u)

    # -- what the planner expects ----------------------------------------------------------

    def _calls_left(self) -> int:
        """The calls the budget still allows (calls in flight are spent)."""
        return int(self.budget) - self.crawls - len(self.queue.in_flight)

    def backlog(self, users: Ints, now: float) -> Floats:
        """The posts each of ``users`` is expected to hold uncrawled at ``now``."""
        result: Floats = self.rate[users] * np.maximum(now - self.last_crawl[users], 0.0)
        return result

    # -- internals -------------------------------------------------------------------------

    def _learn(self, u: int, now: float, posts: Floats, overflow: bool) -> None:
        """Blend the rate the crawl saw into λ̂, weighted by the time it covers (a full call's posts
        span less than the gap: its rate is C over their span)."""
        gap = now - self.last_crawl[u]
        covered = now - float(posts[0]) if overflow and len(posts) else gap
        if covered > 0:
            seen = len(posts) / covered
            weight = covered / (covered + self.params.allocation.memory_days * DAY)
            self.rate[u] += weight * (seen - self.rate[u])

    def _chain(self, posts: list[Floats], light: npt.NDArray[np.bool_],
               until: float | None = None) -> tuple[Floats, Floats, Floats]:
        """Each user's day chain (stay, wake, delay of :func:`chain_value`) read from its ``posts`` of
        the whole days from the history's start to ``until`` (the period's start by default), cut at
        its crawl time of day, shrunk toward the ``light`` users' pooled chain (weight ``prior_days``)."""
        start, cal = self.start if until is None else until, self.calendar
        days = int((start - self.history_start) // DAY)
        n = len(self.names)
        counts = np.zeros((n, 4))  # active→active, active→any, quiet→active, quiet→any
        delays = np.zeros((n, 2))  # summed first-post delay (days), active days
        for u, x in enumerate(posts):
            first_day = start - days * DAY + (self.time_of_day[u] - (start + cal.offset) % DAY) % DAY - DAY
            index = np.floor((x - first_day) / DAY).astype(np.int64)
            keep = (index >= 0) & (index < days)
            active = np.zeros(days, dtype=bool)
            active[index[keep]] = True
            if days > 1:
                prev, nxt = active[:-1], active[1:]
                counts[u] = (np.sum(prev & nxt), np.sum(prev), np.sum(~prev & nxt), np.sum(~prev))
            if keep.any():
                _, firsts = np.unique(index[keep], return_index=True)
                delays[u] = (float(np.sum((x[keep][firsts] - first_day) / DAY - index[keep][firsts])), len(firsts))
        pooled = counts[light].sum(axis=0) + 1.0
        weight = self.params.allocation.prior_days
        stay = (counts[:, 0] + weight * pooled[0] / pooled[1]) / (counts[:, 1] + weight)
        wake = (counts[:, 2] + weight * pooled[2] / pooled[3]) / (counts[:, 3] + weight)
        pooled_delay = (delays[light, 0].sum() + 0.5) / (delays[light, 1].sum() + 1.0)
        delay = (delays[:, 0] + weight * pooled_delay) / (delays[:, 1] + weight)
        return stay, wake, delay

    def _plan(self, u: int) -> None:
        cap = self.last_crawl[u] + self.theta * self.params.per_crawl / max(float(self.rate[u]), 1e-12)
        due = min(cap, float(self.fresh_due[u]))
        if due < self.end:
            self.queue.plan(u, due)
        else:
            self.queue.cancel(u)

    def _next_fresh(self, u: int, now: float, fresh: bool) -> float:
        """User ``u``'s next freshness crawl after a crawl at ``now``: the next point of its grid (its
        phase, then every interval), not the last crawl + the interval: snapping each crawl to the
        crawl time of day would drift, and a drift of half a day per crawl loses calls by the end.
        A ``fresh`` crawl (due) took the grid point nearest ``now`` (the next is at least half an
        interval on); a cap call takes none, so the freshness calls the allocation counted are made."""
        interval = float(self.interval[u])
        if not math.isfinite(interval):
            return math.inf
        position = (now - float(self.origin[u])) / interval
        k = math.ceil(position + 0.5) if fresh else math.floor(position) + 1
        t = float(self.origin[u]) + k * interval
        return self._snap(u, t, now) if t < self.end else math.inf

    def _snap(self, u: int, t: float, now: float) -> float:
        """The instant of user ``u``'s crawl time of day nearest ``t``, after ``now`` (a day on if it is
        not), and before the end when one is left (the last crawl of a period collects what the
        period left)."""
        offset, tod = self.calendar.offset, float(self.time_of_day[u])
        k = round((t + offset - tod) / DAY)
        snapped = k * DAY - offset + tod
        if snapped <= now:
            snapped += DAY
        if snapped >= self.end and snapped - DAY > now:
            snapped -= DAY
        return snapped

    def _advance(self, now: float) -> None:
        while (event := self.next_midnight) <= now and event < self.end:
            self._midnight(event)

    def _allocate(self, posts: list[Floats], light: npt.NDArray[np.bool_]) -> None:
        """Share the freshness calls among the users (Cho's allocation; at most one a day each), each
        user's crawls evenly spaced from its phase on, and set θ for the rest."""
        at = self.start
        left = self.end - at
        most = max(1, int(left // DAY))
        n = cho_allocation(chain_value(*self._chain(posts, light), left, most), self.fresh_budget)
        self.interval = np.where(n > 0, left / np.maximum(n, 1), math.inf)
        self.origin = at + self.phase * np.where(n > 0, self.interval, 0.0)
        for u in range(len(self.names)):
            finite = math.isfinite(self.interval[u])
            self.fresh_due[u] = self._snap(u, float(self.origin[u]), at) if finite else math.inf
        self._set_theta(at)

    def _midnight(self, at: float) -> None:
        self.next_midnight = at + DAY
        self._set_theta(at)
        if self.next_midnight >= self.end:
            self._sweep(at)

    def _sweep(self, at: float) -> None:
        """The last local day: the calls no plan will spend go to the users holding the most posts,
        spread over the day (what a period leaves uncollected is lost to the count)."""
        users = np.arange(len(self.names))
        cap_calls = np.floor(self.rate * (self.end - self.last_crawl) / (self.theta * self.params.per_crawl))
        taken = np.isin(users, [*self.queue.pool, *self.queue.in_flight])
        # the calls the plans will still make: a heavy user's cap calls may be several on the last day
        planned = np.maximum(cap_calls, (self.fresh_due < self.end) | taken)
        busy = planned > 0
        spare = int(self.budget - self.crawls - planned.sum())
        idle = np.flatnonzero(~busy)
        if spare <= 0 or not len(idle):
            return
        chosen = idle[np.argsort(-self.backlog(idle, self.end), kind="stable")[:spare]]
        span = self.end - at
        for i, u in enumerate(chosen.tolist()):
            self.queue.plan(u, at + (i + 0.5) * span / len(chosen))

    def _set_theta(self, at: float) -> None:
        """θ such that the cap calls expected by the end, each at θ·C expected posts, spend the calls
        the freshness plan leaves (θ within [theta_min, ∞))."""
        a = self.params.allocation
        planned = np.isfinite(self.interval) & (self.fresh_due < self.end)
        fresh_left = float(np.sum(np.floor((self.end - self.fresh_due[planned]) / self.interval[planned]) + 1.0))
        calls_left = self.budget - self.crawls - fresh_left
        expected = self.rate * (self.end - self.last_crawl) / self.params.per_crawl  # pages to collect, per user
        if calls_left <= 0:
            self.theta = math.inf
        else:
            low, high = a.theta_min, max(a.theta_min, float(expected.max(initial=0.0))) + 1.0
            if np.floor(expected / low).sum() <= calls_left:
                high = low
            for _ in range(50):
                mid = (low + high) / 2.0
                if np.floor(expected / mid).sum() > calls_left:
                    low = mid
                else:
                    high = mid
            self.theta = high
        for u in range(len(self.names)):
            if u not in self.queue.in_flight and u not in self.queue.pool:  # a due user stays due
                self._plan(u)
