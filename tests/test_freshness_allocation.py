"""The allocation planner (frontier/freshness/allocation.py) through the Planner contract: the budget
spent, heavy users crawled before their posts pass the cap, light users at even intervals at their
crawl time of day; Cho's allocation against brute force; its settings' errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier.freshness.allocation import AllocationPlanner, cho_allocation
from frontier.freshness.calendar import DAY
from frontier.freshness.params import AllocationParams, PlannerParams, with_settings
from tests.test_freshness_planners import START, drive, population

HOUR = 3600.0
PER_CRAWL = 100


def mixed(seed: int, start: float, end: float) -> dict[str, np.ndarray]:
    """Two steady heavy posters (240 and 500 posts a day, regular), 40 light users posting about
    every third day in the evening, and the planners' test population; 30 days of history."""
    rng = np.random.default_rng(seed)
    posts = {f"other{u}": p for u, p in population(seed, 30, start, end).items()}
    for name, per_day in (("heavy240", 240), ("heavy500", 500)):
        step = DAY / per_day
        posts[name] = np.arange(start - 30 * DAY, end, step) + rng.uniform(0, step)
    days = np.arange(-30, int((end - start) / DAY) + 1)
    for i in range(40):
        active = days[rng.random(len(days)) < 0.3]
        posts[f"light{i}"] = np.sort(start + active * DAY + rng.normal(20, 1, len(active)) % 24 * HOUR)
    return posts


@pytest.mark.parametrize("per_day", [20.0, 40.0])
def test_the_budget_is_spent_and_not_exceeded(per_day: float) -> None:
    end = START + 21 * DAY
    crawls = drive(AllocationPlanner(PlannerParams(calls_per_day=per_day)), mixed(1, START, end), START, end,
                   per_hour=1000, per_crawl=PER_CRAWL)
    spent = sum(map(len, crawls.values()))
    # what the plans leave unspent (estimates of the cap calls are estimates) stays under 2%
    assert 0.98 * per_day * 21 <= spent <= per_day * 21, spent


def test_heavy_users_are_crawled_before_the_cap_with_no_call_wasted() -> None:
    end = START + 21 * DAY
    posts = mixed(2, START, end)
    params = PlannerParams(calls_per_day=40.0, allocation=AllocationParams(theta_min=0.9))
    crawls = drive(AllocationPlanner(params), posts, START, end, per_hour=1000, per_crawl=PER_CRAWL)
    for user in ("heavy240", "heavy500"):
        times = np.array([START, *crawls[user]])
        got = np.diff(np.searchsorted(posts[user], times, side="right"))  # posts new to each crawl
        assert got.max() <= PER_CRAWL, (user, got.max())  # nothing lost to the cap
        expected = len(posts[user][(posts[user] > START) & (posts[user] < end)]) / PER_CRAWL
        assert expected <= len(got) <= expected / 0.9 + 3, (user, len(got), expected)  # calls not wasted


def test_light_users_are_crawled_at_even_intervals_at_their_time_of_day() -> None:
    end = START + 28 * DAY
    posts = mixed(3, START, end)
    crawls = drive(AllocationPlanner(PlannerParams(calls_per_day=150.0)), posts, START, end,
                   per_hour=1000, per_crawl=PER_CRAWL)
    checked = 0
    for i in range(40):
        times = np.array([t for t in crawls.get(f"light{i}", []) if t < end - DAY])  # the last day sweeps
        if len(times) < 3:
            continue
        checked += 1
        gaps = np.diff(times)
        assert gaps.max() - gaps.min() <= DAY + 1.0, (i, gaps / DAY)  # even, up to snapping to whole days
        assert np.allclose((times - times[0]) % DAY, 0.0, atol=1.0), i  # always at its crawl time of day
    assert checked >= 20


def test_a_user_who_posts_every_evening_is_crawled_after_the_evening() -> None:
    end = START + 21 * DAY
    posts = mixed(4, START, end)
    crawls = drive(AllocationPlanner(PlannerParams(calls_per_day=150.0)), posts, START, end,
                   per_hour=1000, per_crawl=PER_CRAWL)
    hours = [(t % DAY) / HOUR for i in range(40) for t in crawls.get(f"light{i}", []) if t < end - DAY]
    # the light users post around 20:00 (UTC, the default calendar): their quietest 8 hours start after it
    assert hours and all(21.0 <= h or h <= 8.0 for h in hours), sorted(hours)


def brute_force(value: np.ndarray, calls: int) -> float:
    return float(max(sum(value[u, n] for u, n in enumerate(ns))
               for ns in itertools.product(range(value.shape[1]), repeat=len(value)) if sum(ns) <= calls))


def test_cho_allocation_buys_a_crawl_that_pays_only_in_pairs() -> None:
    value = np.array([[10.0, 10.0, 30.0], [0.0, 5.0, 6.0]])  # user 0's first crawl buys nothing alone
    n = cho_allocation(value, 2)
    assert n.tolist() == [2, 0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.floats(0.0, 10.0), min_size=3, max_size=3), min_size=1, max_size=4),
       st.integers(0, 8))
def test_cho_allocation_respects_the_calls_and_matches_brute_force_on_concave_values(
        steps: list[list[float]], calls: int) -> None:
    # concave fresh time: each further crawl buys no more than the one before
    value = np.array([np.concatenate([[0.0], np.cumsum(sorted(s, reverse=True))]) for s in steps])
    n = cho_allocation(value, calls)
    assert n.sum() <= calls
    assert value[np.arange(len(value)), n].sum() >= brute_force(value, calls) - 1e-6


@pytest.mark.parametrize(("setting", "message"), [
    ("allocation.fresh_share=1.5", "allocation.fresh_share: must be between 0 and 1"),
    ("allocation.quiet_hours=0", "allocation.quiet_hours: must be 1 to 24"),
    ("allocation.theta_min=0", "allocation.theta_min: must be above 0"),
    ("allocation.spread=2", "allocation.spread: unknown setting"),
])
def test_bad_settings_name_the_key(setting: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        with_settings(PlannerParams(), [setting])


def test_the_planner_needs_a_budget() -> None:
    with pytest.raises(ValueError, match="calls_per_day: the allocation planner spends a budget"):
        AllocationPlanner(PlannerParams())
