"""A synthetic population of social-network users who post over time (issue 15, digest §6.2 item 2).

Role: the ground truth of the freshness simulator (``bench/freshness``) and of the social lab's
posting mode: who the users are, which of the paper's four classes each belongs to, and when each
one posts. Pure and deterministic: :meth:`Population.posts` is a function of (seed, user, time)
only, so the posts of [a, c) are those of [a, b) followed by those of [b, c) for any b, whichever
windows were asked before and in whatever order.

How posts are made. Each user's posts are drawn per *local* week, Monday to Sunday (the time zone
is a parameter, UTC+8 for Weibo by default), from a generator seeded with (seed, user, week): a
non-homogeneous Poisson process by thinning, whose intensity is the user's daily rate × the
day's multiplier × the user's diurnal profile. (A week, not a day, is the unit because one
generator per user-day made a 10k-user, 61-day population cost 84 s; per week it is 7× fewer.)
The day's multiplier is the weekday factor (Sunday/Tuesday = 0.584, the paper's 874/1,496) times
a gamma day-to-day noise (the paper's drifting frequencies); for class 2 the noise is instead a
burst process drawn per week (one burst of 1-3 days, silence the rest of the week), so bursts
and silences come in runs.

The classes (digest §2.3) and their calibration (§6.2 item 2: about half the users post less than
once a day, about a fifth more than ten times, mean 3-5 a day, heavy tail):

====  ==========================  ========================  =====================================
cls   paper name                  daily rate (log-uniform)  diurnal profile
====  ==========================  ========================  =====================================
1     inactive                    0.02 - 0.5                one broad daytime bump
2     instable (bursts)           0.2 - 5                   one broad daytime bump
3     reasonable constant         0.8 - 32                  two peaks (afternoon, night), or one
                                                            persona peak (late night, afternoon)
4     authority (staff, robots)   12 - 60                   waking hours, one equal peak per hour
====  ==========================  ========================  =====================================

Generated weeks are kept in a bounded LRU cache, so a lab server answering timeline requests
replays the same week without drawing it again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]

DAY = 86_400.0
HOUR = 3_600.0
# Monday first. Sunday/Tuesday = 0.584 is the paper's 874/1,496 messages (observation 5).
WEEKDAY_FACTORS = (1.0, 1.0, 1.0, 1.0, 0.95, 0.75, 0.584)
RATE_RANGES = {1: (0.02, 0.5), 2: (0.2, 5.0), 3: (0.8, 32.0), 4: (12.0, 60.0)}
# gamma shape of the day-to-day noise: robots are regular, people drift
NOISE_SHAPE = {1: 1.0, 3: 4.0, 4: 20.0}
BURST_WEEK_PROBABILITY = 0.85  # a class-2 user bursts in most weeks, and is silent in the others
_SQRT_2PI = math.sqrt(2.0 * math.pi)


@dataclass(frozen=True, slots=True)
class PostingParams:
    """Who posts and how. Two populations with equal parameters are the same population."""

    users: int
    """How many users; they are named ``u000000``, ``u000001``, …"""
    seed: int = 0
    """Seeds every draw: the population's make-up and every user's every day."""
    class_mix: tuple[float, float, float, float] = (0.45, 0.10, 0.40, 0.05)
    """The shares of classes 1-4 (inactive, instable, reasonable constant, authority)."""
    utc_offset_hours: float = 8.0
    """The population's time zone: days, weekdays and the diurnal profiles are local (UTC+8, Weibo)."""
    cache_weeks: int = 1 << 16
    """How many generated (user, week) post lists the LRU cache keeps."""

    def __post_init__(self) -> None:
        if self.users < 0:
            raise ValueError(f"PostingParams.users: must be >= 0, got {self.users}")
        if len(self.class_mix) != 4 or min(self.class_mix) < 0 or not math.isclose(sum(self.class_mix), 1.0):
            raise ValueError(f"PostingParams.class_mix: four non-negative shares summing to 1, got {self.class_mix}")
        if self.cache_weeks < 1:
            raise ValueError(f"PostingParams.cache_weeks: must be >= 1, got {self.cache_weeks}")


def _wrapped_normal(x: Floats, mean: float, sd: float, period: float) -> Floats:
    """A normal density wrapped around a circle of `period` (three turns are exact to 1e-9 for sd <= period/6)."""
    z = np.zeros_like(x)
    for turn in (-period, 0.0, period):
        z += np.exp(-0.5 * ((x - mean + turn) / sd) ** 2)
    result: Floats = z / (sd * _SQRT_2PI)
    return result


@dataclass(frozen=True, slots=True)
class _Profile:
    """A diurnal density over local hours [0, 24) integrating to 1: `floor`/24 plus weighted wrapped
    normal peaks; for class 4, uniform over the waking hours times a within-hour comb."""

    floor: float
    peaks: tuple[tuple[float, float, float], ...]  # (weight, centre hour, sd hours)
    hourly: bool = False

    def density(self, hours: Floats) -> Floats:
        if self.hourly:
            awake = (hours >= 7.0) / 17.0
            within = hours - np.floor(hours)
            comb = 0.3 + 0.7 * _wrapped_normal(within, 0.05, 0.06, 1.0)
            result: Floats = awake * comb
            return result
        dens = np.full_like(hours, self.floor / 24.0)
        for weight, centre, sd in self.peaks:
            dens += weight * _wrapped_normal(hours, centre, sd, 24.0)
        return dens

    def bound(self) -> float:
        """An upper bound of :meth:`density`, the thinning envelope (1 % above the largest single term)."""
        if self.hourly:
            return (0.3 + 0.7 / (0.06 * _SQRT_2PI)) / 17.0 * 1.01
        return self.floor / 24.0 + sum(w / (sd * _SQRT_2PI) for w, _, sd in self.peaks) * 1.01


class Population:
    """The users of `params` and their posts. Invariant: :meth:`posts` depends only on (seed, user,
    start, end), and its results for adjacent windows concatenate to the result for their union."""

    def __init__(self, params: PostingParams) -> None:
        self.params = params
        self.users: list[str] = [f"u{i:06d}" for i in range(params.users)]
        self._index = {u: i for i, u in enumerate(self.users)}
        rng = np.random.default_rng([params.seed, 0x5EED])
        self._classes = rng.choice(np.arange(1, 5), size=params.users, p=np.asarray(params.class_mix))
        lows = np.array([RATE_RANGES[int(c)][0] for c in self._classes])
        highs = np.array([RATE_RANGES[int(c)][1] for c in self._classes])
        self._rates = np.exp(rng.uniform(np.log(lows), np.log(highs))) if params.users else np.zeros(0)
        self._profiles = [self._draw_profile(int(c), rng) for c in self._classes]
        self._offset = params.utc_offset_hours * HOUR
        self._mean_weekday = sum(WEEKDAY_FACTORS) / 7.0
        self._week_posts = lru_cache(maxsize=params.cache_weeks)(self._generate_week)

    @staticmethod
    def _draw_profile(user_class: int, rng: np.random.Generator) -> _Profile:
        if user_class == 4:
            return _Profile(0.0, (), hourly=True)
        if user_class in (1, 2):
            return _Profile(0.3, ((0.7, float(rng.uniform(11.0, 17.0)), 4.0),))
        persona = rng.uniform()
        if persona < 0.2:  # posts mostly late at night (the paper's actress)
            return _Profile(0.15, ((0.85, float(rng.uniform(23.0, 26.0)) % 24.0, float(rng.uniform(1.0, 2.0))),))
        if persona < 0.4:  # posts mostly in the afternoon (the paper's manager)
            return _Profile(0.15, ((0.85, float(rng.uniform(14.0, 16.5)), float(rng.uniform(1.0, 2.0))),))
        afternoon = float(rng.uniform(0.3, 0.5))
        return _Profile(0.12, ((afternoon, float(rng.uniform(14.0, 16.0)), float(rng.uniform(1.0, 2.5))),
                               (0.88 - afternoon, float(rng.uniform(21.0, 23.0)), float(rng.uniform(1.0, 2.5)))))

    def user_class(self, user: str) -> int:
        """The paper's class of `user`: 1 inactive, 2 instable, 3 reasonable constant, 4 authority."""
        return int(self._classes[self._index[user]])

    def daily_rate(self, user: str) -> float:
        """The user's mean posts per day over a week (the weekday factors average to 1)."""
        return float(self._rates[self._index[user]])

    def posts(self, user: str, start: float, end: float) -> list[float]:
        """The post times (unix seconds, ascending) of `user` in [start, end)."""
        if end <= start:
            return []
        i = self._index[user]
        first = self._week_of(start)
        last = self._week_of(end)
        times = np.concatenate([self._week_posts(i, week) for week in range(first, last + 1)])
        lo, hi = np.searchsorted(times, [start, end], side="left")
        return times[lo:hi].tolist()  # type: ignore[no-any-return]

    def newest(self, user: str, now: float, count: int, since: float) -> list[float]:
        """The newest `count` post times of `user` in [since, now] (an API's timeline page), ascending;
        the weeks are walked back from `now`, so the cost grows with the page, not with the past."""
        i = self._index[user]
        found: list[Floats] = []
        held = 0
        week = self._week_of(now)
        while held < count and week >= self._week_of(since):
            times = self._week_posts(i, week)
            times = times[(times >= since) & (times <= now)]
            found.append(times)
            held += times.size
            week -= 1
        page = np.concatenate(found[::-1])[-count:] if found and count > 0 else np.zeros(0)
        return page.tolist()  # type: ignore[no-any-return]

    def _week_of(self, t: float) -> int:
        """The local week of instant `t`, counted from the local Monday before the epoch."""
        return (math.floor((t + self._offset) / DAY) + 3) // 7

    def _generate_week(self, i: int, week: int) -> Floats:
        """The posts of user `i` in local week `week` (Monday to Sunday), sorted: one generator per
        (seed, user, week), each day's count drawn from its own Poisson mean, then thinned."""
        rng = np.random.default_rng([self.params.seed, i, week + (1 << 32)])
        cls = int(self._classes[i])
        factors = np.asarray(WEEKDAY_FACTORS) / self._mean_weekday
        if cls == 2:
            multipliers = factors * self._burst_shares(rng)
        else:
            shape = NOISE_SHAPE[cls]
            multipliers = factors * rng.gamma(shape, 1.0 / shape, 7)
        profile = self._profiles[i]
        bound = profile.bound()
        counts = rng.poisson(float(self._rates[i]) * multipliers * bound * 24.0)
        hours = rng.uniform(0.0, 24.0, int(counts.sum()))
        keep = rng.uniform(0.0, bound, hours.size) < profile.density(hours)
        monday = (week * 7 - 3) * DAY - self._offset
        times: Floats = np.sort((np.repeat(np.arange(7) * 24.0, counts) + hours)[keep]) * HOUR + monday
        return times

    @staticmethod
    def _burst_shares(rng: np.random.Generator) -> Floats:
        """Class 2: each day's share of its week's posting, × 7 (mean 1 over weeks): one burst of
        1-3 consecutive days in most weeks, nothing on the other days."""
        shares = np.zeros(7)
        if rng.uniform() >= BURST_WEEK_PROBABILITY:
            return shares
        length = int(rng.integers(1, 4))
        first = int(rng.integers(0, 8 - length))
        weights = rng.gamma(1.0, 1.0, length)
        shares[first:first + length] = 7.0 / BURST_WEEK_PROBABILITY * weights / weights.sum()
        return shares
