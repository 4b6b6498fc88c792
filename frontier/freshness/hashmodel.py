"""The Hash model and Algorithm 2 (digest §2.4 and §3.3): per-slot tables of expected posts.

Each user keeps, per day type (:mod:`frontier.freshness.calendar`), a table ``a[1..K]`` of the
posts it is expected to make in each slot of a day. At each local midnight the table of the day
just ended is updated with that day's counts ``n``: in form (L), the digest's default,
``a' = w·(a + n)`` (the day k back weighs ``w^k``); in form (E), the EWMA ``a' = (1−w)·a + w·n``.
Both are ``a' = β·a + w·n`` with ``β = w`` or ``1 − w``, so the day m updates back weighs
``w·β^(m−1)``: :class:`HashTables` adds each post with the weight its day has by now, and the table
is the one it would be had every day been folded at its midnight.

:func:`plan_day` is the paper's per-day Algorithm 2 exactly as printed. :class:`HashTables` holds
the continuous-time form every planner uses: expected posts accumulate slot by slot since the
last crawl (carried over midnights), and a crawl is due at the end of the first slot where they
exceed ``c`` or where the time since the last crawl exceeds the span ``s``. A day is folded into a
user's tables when a crawl has observed it (see :class:`HashTables`), not blindly at midnight.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from frontier.freshness.calendar import DAY, Calendar

WeightForm = Literal["L", "E"]
Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


def decay(weight: float, form: WeightForm) -> float:
    """β of ``a' = β·a + w·n``: ``w`` in form (L), ``1 − w`` in form (E)."""
    return weight if form == "L" else 1.0 - weight


def update_table(table: Sequence[float], counts: Sequence[float], weight: float = 0.5,
                 form: WeightForm = "L") -> list[float]:
    """One day's update of a table by that day's per-slot counts."""
    beta = decay(weight, form)
    return [beta * a + weight * n for a, n in zip(table, counts, strict=True)]


@dataclass(frozen=True, slots=True)
class DayPlan:
    """Algorithm 2's output: the updated table, the slots to crawl (1-based) and the carried remainder."""

    table: list[float]
    crawl_slots: list[int]
    remaining: float


def plan_day(table: Sequence[float], counts: Sequence[float], threshold: float, span: int, remaining: float,
             weight: float = 0.5, form: WeightForm = "L") -> DayPlan:
    """Algorithm 2 as printed (one user, one day): update, prefix sums, strict ``> c`` and ``> s`` tests.

    ``sum[0] = −remaining`` is compared against only while no crawl has happened today, so
    yesterday's uncrawled tail counts toward the first trigger; ``span`` is in slots and measured
    from midnight (the paper's ``lastCrawlTime`` restarts at 0 each day: digest §7, A4).
    """
    a = update_table(table, counts, weight, form)
    sums = [-remaining, *np.cumsum(a).tolist()]
    last = 0
    crawl_slots = []
    for i in range(1, len(a) + 1):
        if sums[i] - sums[last] > threshold or i - last > span:
            crawl_slots.append(i)
            last = i
    return DayPlan(a, crawl_slots, sums[-1] - sums[last])


class HashTables:
    """Every user's Hash tables, in one array ``(users, day types, slots)``, and their updates.

    A day enters a user's tables only once it has been *observed*: a crawl of the user after
    the day ended. Unobserved days are not silent days: folding them as zeros would decay the
    table of every user between two crawls, and a user crawled every few days would look
    silent. So each user has ``observed_through`` (a local day number) and the invariant: its
    tables hold exactly its posts of days up to then, the day m updates back (m days of the
    same type up to ``observed_through``) weighted ``w·β^(m−1)``, as if each day had been
    folded on time; its posts of the next day, already reported, wait in ``pending``.
    """

    def __init__(self, users: int, calendar: Calendar, weight: float, form: WeightForm) -> None:
        self.calendar = calendar
        self.weight = weight
        self.beta = decay(weight, form)
        self.a: Floats = np.zeros((users, calendar.tables, calendar.slots))
        self.pending: Floats = np.zeros((users, calendar.slots))
        self.observed_through: Ints = np.zeros(users, dtype=np.int64)

    def _days_slots(self, times: Floats) -> tuple[Ints, Ints]:
        cal = self.calendar
        days = np.floor((times + cal.offset) / DAY).astype(np.int64)
        slots = ((times - (days * DAY - cal.offset)) // cal.slot_seconds).astype(np.int64)
        return days, np.clip(slots, 0, cal.slots - 1)

    def _type_counts(self, first: int, through: int) -> tuple[Ints, Ints]:
        """For the days ``first..through``: each day's type, and m, the days of its type from it to ``through``."""
        cal = self.calendar
        span_types = np.array([cal.day_type(d) for d in range(first, through + 1)], dtype=np.int64)
        m = np.zeros(len(span_types), dtype=np.int64)
        for t in range(cal.tables):
            of_type = span_types == t
            m[of_type] = np.cumsum(of_type[::-1])[::-1][of_type]
        return span_types, m

    def _fold(self, users: Ints, times: Floats, through: int) -> None:
        """Add posts of days up to ``through`` with their day's weight ``w·β^(m−1)``."""
        if not len(times):
            return
        days, slots = self._days_slots(times)
        first = int(days.min())
        span_types, m = self._type_counts(first, through)
        index = days - first
        np.add.at(self.a, (users, span_types[index], slots), self.weight * self.beta ** (m[index] - 1.0))

    def add_history(self, users: Ints, times: Floats, through: int) -> None:
        """Start every table from the posts before the crawl: days up to ``through`` folded, later ones pending."""
        self.observed_through[:] = through
        days, slots = self._days_slots(times)
        folded = days <= through
        self._fold(users[folded], times[folded], through)
        np.add.at(self.pending, (users[~folded], slots[~folded]), 1.0)

    def observe(self, user: int, now: float, posts: Floats) -> None:
        """A crawl of ``user`` at ``now`` reported ``posts``: the days before today are observed now."""
        through = self.calendar.day(now) - 1
        first = int(self.observed_through[user]) + 1
        if through >= first:
            span_types, m = self._type_counts(first, through)
            counts = np.bincount(span_types, minlength=self.calendar.tables)
            self.a[user] *= (self.beta ** counts.astype(np.float64))[:, None]
            self.a[user, span_types[0]] += self.weight * self.beta ** (m[0] - 1.0) * self.pending[user]
            self.pending[user] = 0.0
            self.observed_through[user] = through
        days, slots = self._days_slots(posts)
        today = days > self.observed_through[user]
        np.add.at(self.pending[user], slots[today], 1.0)
        self._fold(np.full(int((~today).sum()), user, dtype=np.int64), posts[~today], int(self.observed_through[user]))

    def expected_in_day(self, users: Ints, t1: Floats, t2: Floats, day: int) -> Floats:
        """Expected posts of each user between ``t1[i] <= t2[i]``, both inside local ``day``."""
        cal = self.calendar
        table = self.a[users, cal.day_type(day), :]
        cumulative = np.concatenate([np.zeros((len(users), 1)), np.cumsum(table, axis=1)], axis=1)
        start = cal.day_start(day)

        def position(t: Floats) -> Floats:
            p = np.clip((t - start) / cal.slot_seconds, 0.0, cal.slots)
            i = np.minimum(p.astype(np.int64), cal.slots - 1)[:, None]
            return np.take_along_axis(cumulative, i, 1)[:, 0] + (p - i[:, 0]) * np.take_along_axis(table, i, 1)[:, 0]

        return position(t2) - position(t1)

    def due(self, user: int, since: float, expected: float, last_crawl: float, threshold: float, span: float) -> float:
        """When the next crawl of ``user`` is due, ``expected`` posts having accumulated up to ``since``:
        the end of the first later slot where they exceed ``threshold``, or the last slot end at most
        ``span`` after ``last_crawl``; ``since`` itself if one of them already holds.

        The span is a bound here (s is "the longest allowed gap between two crawls"): the per-day
        Algorithm 2 crawls one slot past it (``i − lastCrawlTime > s``), which over a 30-day span
        would let gaps reach 30 days and an hour.
        """
        cal = self.calendar
        if expected > threshold or since + cal.slot_seconds - last_crawl > span:
            return since
        day = cal.day(since)
        per_day = self.a[user].sum(axis=1).tolist()
        while True:
            start = cal.day_start(day)
            kind = cal.day_type(day)
            if (since <= start and expected + per_day[kind] <= threshold
                    and start + DAY + cal.slot_seconds - last_crawl <= span):  # no trigger all day: skip it whole
                expected += per_day[kind]
                since = start + DAY
                day += 1
                continue
            table = self.a[user, kind, :]
            p = max(0.0, (since - start) / cal.slot_seconds)
            first = min(int(p), cal.slots - 1)
            increments = table[first:].copy()
            increments[0] *= first + 1 - p
            totals = expected + np.cumsum(increments)
            ends = start + (np.arange(first, cal.slots) + 1) * cal.slot_seconds
            hit = (totals > threshold) | (ends + cal.slot_seconds - last_crawl > span)
            if hit.any():
                return float(ends[int(np.argmax(hit))])
            expected = float(totals[-1])
            since = start + DAY
            day += 1

    def carry_to(self, users: Ints, since: Floats, midnight: float) -> Floats:
        """Expected posts of each user from ``since[i]`` to ``midnight`` (the end of the day of ``since``)."""
        day = self.calendar.day(midnight) - 1
        return self.expected_in_day(users, since, np.full(len(users), midnight), day)

