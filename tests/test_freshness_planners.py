"""The planners through the Planner contract: AT-11 (the span guard) with an in-test driver, routing,
the organ-pipe planner's due times, serving by backlog, learning and the ``--set`` overrides."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier.freshness.calendar import DAY
from frontier.freshness.params import PlannerParams, with_settings
from frontier.freshness.planner import Planner
from frontier.freshness.planners import hash_planner, paper_planner, poisson_planner
from frontier.freshness.poisson import organ_pipe
from frontier.freshness.routing import RoutingParams, UserClass, classify, is_instable

START = 1_377_964_800.0  # 2013-09-01 00:00 UTC
HOUR = 3600.0


def drive(planner: Planner, posts: dict[str, np.ndarray], start: float, end: float, per_hour: int,
          per_crawl: int) -> dict[str, list[float]]:
    """The contract's driver loop over a known trace: the crawl times of each user."""
    history = {u: p[p < start].tolist() for u, p in posts.items()}
    planner.begin(list(posts), history, start, end)
    seen = dict.fromkeys(posts, start)
    used: dict[int, int] = defaultdict(int)
    crawls: dict[str, list[float]] = defaultdict(list)
    while (t := planner.next_at()) is not None:
        window = int((t - start) // HOUR)
        while used[window] >= per_hour:
            window += 1
        t = max(t, start + window * HOUR)
        if t >= end:
            break
        taken = planner.take(t, per_hour - used[window])
        assert len(taken) <= per_hour - used[window]
        used[window] += len(taken)
        for user in taken:
            p = posts[user]
            new = p[(p > seen[user]) & (p <= t)]
            seen[user] = t
            crawls[user].append(t)
            planner.crawled(user, t, new[-per_crawl:].tolist(), len(new) >= per_crawl)
    return crawls


def population(seed: int, users: int, start: float, end: float) -> dict[str, np.ndarray]:
    """Silent users, steady two-peak posters and hourly robots, with a month of history."""
    rng = np.random.default_rng(seed)
    posts = {}
    days = int((end - start) / DAY) + 30
    for i in range(users):
        kind = i % 3
        if kind == 0:
            times = rng.uniform(start - 30 * DAY, end, rng.integers(0, 3))
        elif kind == 1:
            n = rng.poisson(rng.uniform(1, 30) * days)
            hours = np.where(rng.random(n) < 0.5, rng.normal(15, 1.5, n), rng.normal(22, 1, n)) % 24
            times = start - 30 * DAY + rng.integers(0, days, n) * DAY + hours * HOUR - 8 * HOUR
        else:
            times = np.arange(start - 30 * DAY, end, HOUR) + rng.uniform(0, 60)
        posts[f"user{i}"] = np.sort(times)
    return posts


def test_at11_span_guard_over_90_days() -> None:
    end = START + 90 * DAY
    posts = population(11, 60, START, end)
    crawls = drive(hash_planner(), posts, START, end, per_hour=150, per_crawl=100)
    assert set(crawls) == set(posts)  # even a silent user is crawled
    for user, times in crawls.items():
        gaps = np.diff([START, *times, end])
        assert gaps.max() <= 30 * DAY, user


@pytest.mark.parametrize("per_day", [60.0, 240.0])
def test_the_hash_threshold_follows_the_calls_a_day_may_spend(per_day: float) -> None:
    end = START + 40 * DAY
    posts = population(12, 60, START, end)
    fixed = sum(map(len, drive(hash_planner(), posts, START, end, per_hour=150, per_crawl=100).values()))
    planner = hash_planner(PlannerParams(calls_per_day=per_day))
    spent = sum(map(len, drive(planner, posts, START, end, per_hour=150, per_crawl=100).values()))
    assert abs(spent - per_day * 40) < 0.15 * per_day * 40, (fixed, spent)
    assert (planner.threshold > 100.0) == (per_day * 40 < fixed)  # c rose to spend less, fell to spend more


def test_paper_planner_routes_users_by_class() -> None:
    end = START + 20 * DAY
    posts = population(3, 9, START, end)
    planner = paper_planner()
    planner.begin(list(posts), {u: p[p < START].tolist() for u, p in posts.items()}, START, end)
    assert [planner.user_class(f"user{i}") for i in range(3)] == [UserClass.INACTIVE, UserClass.CONSTANT,
                                                                  UserClass.AUTHORITY]
    bursty = [START - d * DAY + h * HOUR for d in (10,) for h in np.linspace(1, 12, 12)]  # 12 posts, then silence
    planner.begin(["b"], {"b": bursty}, START, end)
    assert planner.user_class("b") == UserClass.INSTABLE


def test_poisson_planner_lays_one_period_out_as_an_organ_pipe() -> None:
    rates = [3, 0, 5, 1, 4, 2]  # posts over the 10 days of history
    history = {f"u{i}": [START - DAY * (r - k) for k in range(r)] for i, r in enumerate(rates)}
    period = 6 * DAY
    planner = poisson_planner(with_settings(PlannerParams(), ["poisson.period_days=0"]))
    planner.begin(list(history), history, START, START + period)
    order = []
    while (t := planner.next_at()) is not None:
        assert planner.take(t - 1, 10) == []  # nothing before its time
        taken = planner.take(t, 10)
        assert len(taken) == 1
        order.append((t, taken[0]))
        planner.crawled(taken[0], t, [], False)
    ascending = sorted(history, key=lambda u: rates[int(u[1:])])
    assert [u for _, u in order] == organ_pipe(ascending)
    assert [t for t, _ in order] == [START + (j + 0.5) * DAY for j in range(6)]


def test_take_serves_the_largest_backlog_first_and_the_rest_stay_due() -> None:
    history = {f"u{i}": [START - DAY + k for k in range(i * 5)] for i in range(1, 5)}
    planner = poisson_planner(with_settings(PlannerParams(), ["poisson.period_days=1"]))
    planner.begin(list(history), history, START, START + 3 * DAY)
    late = START + DAY - 1  # every user's visit of the first period is due by now
    assert planner.take(late, 2) == ["u4", "u3"]
    assert planner.statistics().due == 2 and planner.next_at() is not None and planner.next_at() <= late
    assert planner.take(late, 0) == []
    assert planner.take(late, 5) == ["u2", "u1"]


def test_learning_updates_the_tables_and_an_offline_plan_keeps_them() -> None:
    history = {"a": [START - DAY + 10 * HOUR + k for k in range(30)]}
    for learn, expected_change in ((True, True), (False, False)):
        planner = hash_planner(with_settings(PlannerParams(), [f"learn={learn}", "calendar.day_types=one"]))
        planner.begin(["a"], history, START, START + 30 * DAY)
        before = planner.expected_posts("a", START + 5 * DAY, START + 6 * DAY)
        for day in range(1, 5):  # four crawls that find nothing
            planner.crawled("a", START + day * DAY + HOUR, [], False)
        after = planner.expected_posts("a", START + 5 * DAY, START + 6 * DAY)
        assert (after < before) == expected_change and after > 0


def test_settings_name_the_key() -> None:
    params = with_settings(PlannerParams(), ["hash.weight=0.9", "per_crawl=200", "calendar.holidays=2013-10-01"])
    assert (params.hash.weight, params.per_crawl, params.calendar.holidays) == (0.9, 200, ("2013-10-01",))
    assert params.threshold == 200
    for bad, message in [("hash.weight=1.5", "hash.weight: must be strictly between 0 and 1"),
                         ("hash.wait=1", "hash.wait: unknown setting"),
                         ("nope.x=1", "nope.x: unknown setting"),
                         ("per_crawl=ten", "per_crawl: must be a number"),
                         ("learn=maybe", "learn: must be true or false"),
                         ("calendar.holidays=1 Oct", "calendar.holidays: '1 Oct' is not an ISO date"),
                         ("routing.mode=all", "routing.mode: must be paper"),
                         ("hash.weight", "a setting is KEY=VALUE")]:
        with pytest.raises(ValueError, match=message):
            with_settings(PlannerParams(), [bad])


def test_routing_thresholds_promotion_and_demotion() -> None:
    params = RoutingParams()
    steady = [2] * 14
    assert classify(steady, None, params) == UserClass.CONSTANT
    assert classify([30] * 14, None, params) == UserClass.AUTHORITY
    assert classify([0] * 13 + [1], None, params) == UserClass.INACTIVE
    burst = [0] * 6 + [12, 0, 0, 0, 3, 3, 3, 3]  # a burst then three silent days: instable, whatever the mean
    assert is_instable(burst, params) and classify(burst, None, params) == UserClass.INSTABLE
    promoted = [0] * 7 + [1] * 7  # mean 0.5/day, but at least one post on each of the last seven days
    assert classify(promoted, None, params) == UserClass.CONSTANT
    quiet_week = [1] * 7 + [0] * 7  # one quiet week (mean 0.5/day): a Hash user stays, a new one stays out
    assert classify(quiet_week, UserClass.CONSTANT, params) == UserClass.CONSTANT
    assert classify(quiet_week, UserClass.INACTIVE, params) == UserClass.INACTIVE
    assert classify([0] * 14, UserClass.CONSTANT, params) == UserClass.INACTIVE  # two quiet weeks: demoted
    assert classify([0] * 14, None, RoutingParams(mode="hash_all")) == UserClass.CONSTANT
    assert classify([30] * 14, None, RoutingParams(mode="poisson_all")) == UserClass.INACTIVE


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**16), st.integers(1, 6), st.sampled_from(["paper", "hash", "poisson"]),
       st.sampled_from(["L", "E"]))
def test_the_contract_holds_under_any_rate_limit(seed: int, per_hour: int, kind: str, form: str) -> None:
    end = START + 12 * DAY
    posts = population(seed, 12, START, end)
    params = with_settings(PlannerParams(), [f"hash.weight_form={form}", "hash.span_days=5", "poisson.period_days=4"])
    planner = {"paper": paper_planner, "hash": hash_planner, "poisson": poisson_planner}[kind](params)
    planner.begin(list(posts), {u: p[p < START].tolist() for u, p in posts.items()}, START, end)
    last = START
    while (t := planner.next_at()) is not None and t < end:
        now = max(t, last)
        taken = planner.take(now, per_hour)
        assert len(taken) <= per_hour and len(set(taken)) == len(taken)
        assert planner.statistics().in_flight == len(taken)
        backlogs = planner.backlog(np.array([planner.index[u] for u in taken], dtype=np.int64), now)
        assert list(backlogs) == sorted(backlogs, reverse=True)  # most urgent first
        for user in taken:
            planner.crawled(user, now, [], False)
        last = now + (HOUR if len(taken) == per_hour else 0)  # the window's calls are used: the next hour
    assert planner.statistics().in_flight == 0
