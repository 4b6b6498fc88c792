"""The recrawl planners: Poisson organ pipe, Hash (continuous Algorithm 2), and the paper's mix.

One class, :class:`FreshnessPlanner`, implements the :class:`~frontier.freshness.planner.Planner`
contract; its routing mode makes it one of the three planners the digest describes
(:func:`poisson_planner`, :func:`hash_planner`, :func:`paper_planner`):

- a *Poisson* user is crawled once per period ``T_P``: at each period start the rates are
  re-estimated, the Poisson users laid out as an organ pipe, and the j-th of N is due at
  ``start + (j + ½)·T_P/N``;
- a *Hash* user is due when more than ``c`` posts are expected since its last crawl, or the span
  ``s`` has passed (:meth:`HashTables.due`); its expectation is carried over each local midnight,
  where the tables of the day just ended are updated from the posts crawls reported;
- the paper's planner routes each user by :mod:`frontier.freshness.routing` at the start and at
  each crawl, and sends a Poisson user to Hash when ``λ̂·T_P > C/2`` (it would overflow a call).

When more users are due than calls are left, :meth:`take` serves the largest expected backlog
first: ``exp_since_last`` for Hash users, ``λ̂·(now − last crawl)`` for Poisson users (§3.4).

Learning (``learn``): every post a crawl reports updates its user's count, its Hash tables (late
posts with the weight their day has by now) and its recent days for routing. An offline schedule
(``crawl fresh schedule``) sets ``learn=False``: nothing is known after the start, and reading
"no posts reported" as "the user went silent" would decay every table to nothing; the rates and
tables then stay as the history made them (the history's own last day included) and the routing
is decided once.

A taken user is in flight until :meth:`crawled` reports it; a driver whose call failed reports
it with no posts. While every user with a plan is in flight, :meth:`next_at` is None: nothing
is planned until a report comes. Pure: times are unix seconds passed in; no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from frontier.freshness.allocation import AllocationPlanner
from frontier.freshness.calendar import DAY, Calendar, local_day
from frontier.freshness.due import DueQueue, next_due
from frontier.freshness.hashmodel import HashTables
from frontier.freshness.params import PlannerParams
from frontier.freshness.poisson import GammaPrior, organ_pipe, slot_times
from frontier.freshness.routing import UserClass, classify


@dataclass(frozen=True, slots=True)
class PlannerStatistics:
    users: int
    classes: dict[int, int]
    """Users per class (1 inactive, 2 instable, 3 constant, 4 authority)."""
    planned: int
    due: int
    in_flight: int
    crawls: int
    overflows: int
    posts: int


class FreshnessPlanner:
    """A :class:`~frontier.freshness.planner.Planner` over the Poisson and Hash models."""

    def __init__(self, params: PlannerParams | None = None) -> None:
        self.params = params or PlannerParams()
        cal = self.params.calendar
        self.calendar = Calendar(cal.utc_offset_hours, cal.slots, cal.day_types, map(local_day, cal.holidays))
        self.names: list[str] = []

    # -- the contract ----------------------------------------------------------------------

    def begin(self, users: Sequence[str], history: Mapping[str, Sequence[float]], start: float, end: float) -> None:
        p = self.params
        self.names = list(dict.fromkeys(users))
        self._crawls = self._overflows = self._posts = 0
        self.threshold, self._crawls_before_today = p.threshold, 0
        self.index = {name: i for i, name in enumerate(self.names)}
        n = len(self.names)
        self.start, self.end = start, end
        posts = [np.sort(np.asarray(history.get(u, ()), dtype=float)) for u in self.names]
        posts = [x[x < start] for x in posts]
        first = min((float(x[0]) for x in posts if len(x)), default=start)
        self.history_start = min(p.history_start, first) if p.history_start is not None else first
        self.known_posts = np.array([int(np.sum(x >= self.history_start)) for x in posts], dtype=np.int64)
        self.prior = GammaPrior.population(int(self.known_posts.sum()), n, start - self.history_start,
                                           p.poisson.prior_days * DAY, p.poisson.default_rate / DAY)
        self.known_through = np.full(n, start)
        self.rate = np.zeros(n)
        self.last_crawl = np.full(n, start)
        self.expected = np.zeros(n)  # Hash: expected posts since the last crawl, up to `since`
        self.since = np.full(n, start)
        self.recent = [x[x >= start - (p.routing.window_days + 1) * DAY] for x in posts]
        today = self.calendar.day(start)
        self.tables = HashTables(n, self.calendar, p.hash.weight, p.hash.weight_form)
        owners = np.repeat(np.arange(n, dtype=np.int64), [len(x) for x in posts])
        # learning, today's first hours wait for the crawl that observes the whole day; not learning, they count now
        self.tables.add_history(owners, np.concatenate(posts) if posts else np.zeros(0), today - 1 if p.learn else today)
        self.queue = DueQueue(n)
        self.period = p.poisson.period_days * DAY or (end - start)
        self.next_period = start
        self.next_midnight = self.calendar.day_start(today + 1)
        self.uclass = [self._classify(u, None, start) for u in range(n)]
        for u in range(n):
            if self.uclass[u].uses_hash:
                self.queue.plan(u, self._hash_due(u))
        self._advance(start)

    def next_at(self) -> float | None:
        return next_due(self.queue, self.end, self._next_event, self._advance)

    def take(self, now: float, limit: int) -> list[str]:
        self._advance(now)
        return [self.names[u] for u in self.queue.take(now, limit, lambda users: self.backlog(users, now))]

    def crawled(self, user: str, now: float, posts: Sequence[float], overflow: bool) -> None:
        self._advance(now)
        u = self.index[user]
        self.queue.in_flight.discard(u)
        self._crawls += 1
        self._overflows += overflow
        self._posts += len(posts)
        if self.params.learn:
            times = np.asarray(posts, dtype=float)
            self.tables.observe(u, now, times)
            self.known_posts[u] += int(np.sum(times >= self.history_start))
            self.recent[u] = np.concatenate([self.recent[u], times])
            self.known_through[u] = max(self.known_through[u], now)
        self.last_crawl[u] = now
        self.expected[u] = 0.0
        self.since[u] = max(now, self.next_midnight - DAY)  # a report older than the last midnight starts there
        was_hash = self.uclass[u].uses_hash
        if self.params.learn:
            self.uclass[u] = self._classify(u, self.uclass[u], now)
        if self.uclass[u].uses_hash:
            self.queue.plan(u, self._hash_due(u))
        elif was_hash:
            self.queue.cancel(u)  # demoted: joins the organ pipe at the next period

    # -- predictions -----------------------------------------------------------------------

    def expected_posts(self, user: str, t1: float, t2: float) -> float:
        """The posts ``user`` is expected to make in ``(t1, t2]`` by its model."""
        u = self.index[user]
        if not self.uclass[u].uses_hash:
            return float(self._rate(u)) * (t2 - t1)
        total, day = 0.0, self.calendar.day(t1)
        while t1 < t2:
            day_end = self.calendar.day_start(day + 1)
            upto = min(t2, day_end)
            total += float(self.tables.expected_in_day(np.array([u]), np.array([t1]), np.array([upto]), day)[0])
            t1, day = upto, day + 1
        return total

    def backlog(self, users: npt.NDArray[np.int64], now: float) -> npt.NDArray[np.float64]:
        """The expected posts each of ``users`` holds uncrawled at ``now`` (all since a midnight
        before ``now`` that is at most a day old: the planner has carried them to it)."""
        hashed = np.array([self.uclass[u].uses_hash for u in users], dtype=bool)
        result: npt.NDArray[np.float64] = self._rate(users) * (now - self.last_crawl[users])
        if hashed.any():
            h = users[hashed]
            day = self.calendar.day(now)
            since = np.maximum(self.since[h], self.calendar.day_start(day))
            upto = np.maximum(since, now)  # a driver may ask at an instant before the last midnight carried
            result[hashed] = self.expected[h] + self.tables.expected_in_day(h, since, upto, day)
        return result

    def user_class(self, user: str) -> UserClass:
        return self.uclass[self.index[user]]

    def statistics(self) -> PlannerStatistics:
        classes = {int(c): 0 for c in UserClass}
        for c in self.uclass:
            classes[int(c)] += 1
        return PlannerStatistics(len(self.names), classes, len(self.names) - len(self.queue.pool)
                                 - len(self.queue.in_flight), len(self.queue.pool), len(self.queue.in_flight),
                                 self._crawls, self._overflows, self._posts)

    def __repr__(self) -> str:
        s = self.statistics()
        return f"<FreshnessPlanner users={s.users} classes={s.classes} due={s.due} in_flight={s.in_flight}>"

    # -- internals -------------------------------------------------------------------------

    def _rate(self, users: Any) -> Any:
        """λ̂ in posts per second, from the posts known over the time they cover."""
        return self.prior.rate(self.known_posts[users].astype(np.float64), self.known_through[users] - self.history_start)

    def _classify(self, u: int, current: UserClass | None, now: float) -> UserClass:
        """Route user ``u`` from its posts per local day over the window before today (the window is
        all ``recent`` keeps)."""
        routing = self.params.routing
        cal = self.calendar
        today = cal.day(now)
        first = today - routing.window_days
        days = np.floor((self.recent[u] + cal.offset) / DAY).astype(np.int64)
        self.recent[u] = self.recent[u][days >= first]
        days = days[(days >= first) & (days < today)]
        daily = np.bincount(days - first, minlength=routing.window_days)
        chosen = classify(daily.tolist(), current, routing)
        overflows = float(self._rate(u)) * self.period > self.params.per_crawl / 2
        if routing.mode == "paper" and not chosen.uses_hash and overflows:
            return UserClass.AUTHORITY if daily.mean() >= routing.authority_rate else UserClass.CONSTANT
        return chosen

    def _hash_due(self, u: int) -> float:
        return self.tables.due(u, float(self.since[u]), float(self.expected[u]), float(self.last_crawl[u]),
                               self.threshold, self.params.hash.span_days * DAY)

    def _next_event(self) -> float:
        return min(self.next_period, self.next_midnight)

    def _advance(self, now: float) -> None:
        """Run the period starts and local midnights up to ``now``, in time order."""
        while (event := self._next_event()) <= now and event < self.end:
            if event == self.next_period:
                self._start_period(event)
            else:
                self._midnight(event)

    def _start_period(self, at: float) -> None:
        """Re-estimate the rates and lay the Poisson users out as an organ pipe over the period."""
        self.next_period = at + self.period
        if self.params.learn:
            for u in range(len(self.names)):
                if not self.uclass[u].uses_hash and self.params.routing.mode == "paper":
                    self.uclass[u] = self._classify(u, self.uclass[u], at)
                    if self.uclass[u].uses_hash:
                        self.queue.plan(u, self._hash_due(u))
        poisson = np.array([u for u in range(len(self.names)) if not self.uclass[u].uses_hash], dtype=np.int64)
        if not len(poisson):
            return
        ascending = poisson[np.argsort(self._rate(poisson), kind="stable")].tolist()
        for user, due in zip(organ_pipe(ascending), slot_times(len(ascending), at, self.period)):
            self.queue.plan(user, due)

    def _midnight(self, at: float) -> None:
        """Carry every Hash user's expectation to midnight (its tables change only when it is crawled), and
        move c toward the calls a day may spend."""
        self.next_midnight = at + DAY
        if target := self.params.calls_per_day:
            spent, self._crawls_before_today = self._crawls - self._crawls_before_today, self._crawls
            self.threshold *= min(2.0, max(0.5, spent / target))
        hashed = np.array([u for u in range(len(self.names)) if self.uclass[u].uses_hash], dtype=np.int64)
        if len(hashed):
            behind = hashed[self.since[hashed] < at]
            self.expected[behind] += self.tables.carry_to(behind, np.maximum(self.since[behind], at - DAY), at)
            self.since[behind] = at


def poisson_planner(params: PlannerParams | None = None) -> FreshnessPlanner:
    """Every user on the Poisson organ pipe (the paper's §6.1)."""
    params = params or PlannerParams()
    return FreshnessPlanner(replace(params, routing=replace(params.routing, mode="poisson_all")))


def hash_planner(params: PlannerParams | None = None) -> FreshnessPlanner:
    """Every user on the Hash model (the paper's §6.2, ``hash_all``)."""
    params = params or PlannerParams()
    return FreshnessPlanner(replace(params, routing=replace(params.routing, mode="hash_all")))


def paper_planner(params: PlannerParams | None = None) -> FreshnessPlanner:
    """Poisson for class 1–2 users, Hash for class 3–4, routed as §3.1 recommends."""
    params = params or PlannerParams()
    return FreshnessPlanner(replace(params, routing=replace(params.routing, mode="paper")))


PLANNERS: dict[str, Callable[[PlannerParams], FreshnessPlanner | AllocationPlanner]] = {
    "paper": paper_planner, "poisson": poisson_planner, "hash": hash_planner, "allocation": AllocationPlanner}
"""The planners by name (``crawl fresh schedule --planner``, ``--policy freshness``'s ``planner``):
the paper's three, and :class:`~frontier.freshness.allocation.AllocationPlanner`, which spends
``calls_per_day``."""
