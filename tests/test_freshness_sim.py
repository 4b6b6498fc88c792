"""The offline freshness simulator (issue 15, SIM): the population generator, the emulated API's
limits (AT-20) and dedup (AT-21), the metrics on hand-made traces (AT-3's potentiality), the
baselines' budgets and the evaluation's one command."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import freshness_eval
from bench.freshness.api import EmulatedApi, RateLimited
from bench.freshness.baselines import Cyclic, RateProportional, RoundRobin, largest_remainder
from bench.freshness.metrics import measure, potentiality, stale_time
from bench.freshness.simulator import Limits, simulate
from bench.freshness.trace import Trace
from bench.invitro.posting import DAY, Population, PostingParams

START = freshness_eval.START
SMALL = Population(PostingParams(users=40, seed=7))


class CrawlAt:
    """A planner that crawls given users at given times (what a test needs to pin the schedule)."""

    def __init__(self, plan: Sequence[tuple[float, str]]) -> None:
        self.plan = sorted(plan)
        self.seen: list[tuple[str, float, list[float], bool]] = []

    def begin(self, users: Sequence[str], history: Mapping[str, Sequence[float]], start: float, end: float) -> None:
        self.history = history

    def next_at(self) -> float | None:
        return self.plan[0][0] if self.plan else None

    def take(self, now: float, limit: int) -> list[str]:
        due = [u for t, u in self.plan if t <= now][:limit]
        self.plan = self.plan[len(due):]
        return due

    def crawled(self, user: str, now: float, posts: Sequence[float], overflow: bool) -> None:
        self.seen.append((user, now, list(posts), overflow))


def trace_of(posts: dict[str, list[float]], classes: dict[str, int] | None = None) -> Trace:
    return Trace.from_rows([(u, START + t) for u, ts in posts.items() for t in ts], classes=classes)


# --- the population generator ---------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(user=st.integers(0, 39), a=st.floats(-20 * DAY, 20 * DAY), cut=st.floats(0, 1), length=st.floats(0, 30 * DAY))
def test_posts_of_adjacent_windows_concatenate_whatever_was_asked_before(user: int, a: float, cut: float,
                                                                          length: float) -> None:
    name = SMALL.users[user]
    lo, mid, hi = START + a, START + a + cut * length, START + a + length
    whole = SMALL.posts(name, lo, hi)
    assert SMALL.posts(name, lo, mid) + SMALL.posts(name, mid, hi) == whole
    uncached = Population(PostingParams(users=40, seed=7, cache_weeks=1))
    assert uncached.posts(name, mid, hi) == SMALL.posts(name, mid, hi)
    assert uncached.posts(name, lo, mid) + uncached.posts(name, mid, hi) == whole
    assert all(lo <= t < hi for t in whole) and whole == sorted(whole)


@settings(max_examples=40, deadline=None)
@given(user=st.integers(0, 39), back=st.floats(0, 60 * DAY), count=st.integers(0, 120))
def test_newest_is_the_tail_of_posts(user: int, back: float, count: int) -> None:
    name, now, since = SMALL.users[user], START + 3.5 * DAY, START - 60 * DAY
    page = SMALL.newest(name, now, count, since + back)
    assert page == (SMALL.posts(name, since + back, math.nextafter(now, math.inf))[-count:] if count else [])


def test_another_seed_is_another_population() -> None:
    other = Population(PostingParams(users=40, seed=8))
    end = START + 14 * DAY
    assert [SMALL.posts(u, START, end) for u in SMALL.users] != [other.posts(u, START, end) for u in other.users]


def test_calibration_shape_half_below_one_a_day_a_fifth_above_ten_and_quiet_sundays() -> None:
    population = Population(PostingParams(users=2000, seed=3))
    end = START + 28 * DAY  # 2012-11-01 (Thursday) for four weeks: four of each weekday
    posts = [np.asarray(population.posts(u, START, end)) for u in population.users]
    per_day = np.array([len(p) for p in posts]) / 28
    assert 0.42 <= (per_day < 1).mean() <= 0.58
    assert 0.13 <= (per_day > 10).mean() <= 0.27
    assert 3.0 <= per_day.mean() <= 6.5
    local = np.concatenate(posts) + 8 * 3600
    weekday = Counter(((local // DAY).astype(int) + 3) % 7)
    assert 0.5 <= weekday[6] / weekday[1] <= 0.67  # Sunday / Tuesday, the paper's 0.584
    classes = Counter(population.user_class(u) for u in population.users)
    assert classes[1] > classes[3] > classes[2] > classes[4] > 0
    authority = [p for u, p in zip(population.users, posts) if population.user_class(u) == 4]
    minutes = (np.concatenate(authority) % 3600) / 60
    assert ((minutes < 10).mean()) > 0.4  # one equal peak per hour, at its start


def test_bad_parameters_are_named() -> None:
    with pytest.raises(ValueError, match="class_mix"):
        PostingParams(users=5, class_mix=(0.5, 0.5, 0.5, 0.0))
    with pytest.raises(ValueError, match="users"):
        PostingParams(users=-1)


# --- the emulated API: AT-20, AT-21 -----------------------------------------------------------

def test_at20_calls_per_hour_and_posts_per_call_never_exceed_the_limits() -> None:
    trace = Trace.from_population(SMALL, START - 7 * DAY, START + 3 * DAY)
    limits = Limits(per_crawl=5, per_hour=7)
    run = simulate(RoundRobin(per_user=12, seed=1), trace, START, START + 3 * DAY, limits)
    per_window = Counter(math.floor((at - START) / 3600) for _, at, _, _ in run.api.calls)
    assert max(per_window.values()) == 7  # the planner wanted more: the limit bound, and held
    assert all(returned <= 5 and new <= returned for _, _, returned, new in run.api.calls)
    assert all(START <= at < START + 3 * DAY for _, at, _, _ in run.api.calls)
    api = EmulatedApi(trace, START, per_crawl=5, per_hour=2)
    api.timeline(SMALL.users[0], START + 10)
    api.timeline(SMALL.users[1], START + 20)
    with pytest.raises(RateLimited):
        api.timeline(SMALL.users[2], START + 30)
    api.timeline(SMALL.users[2], START + 3600)  # the next clock hour has its own calls


def test_at21_overlapping_timelines_never_count_a_post_twice() -> None:
    trace = trace_of({"a": [float(t) for t in range(1, 11)]})
    planner = CrawlAt([(5.5 + START, "a"), (7.5 + START, "a"), (10.5 + START, "a"), (10.6 + START, "a")])
    run = simulate(planner, trace, START, START + 20, Limits(per_crawl=4, per_hour=100))
    returned = [r for _, _, r, _ in run.api.calls]
    new = [len(posts) for _, _, posts, _ in planner.seen]
    assert returned == [4, 4, 4, 4]  # every call overlaps the one before
    assert new == [4, 2, 3, 0]
    overall, _ = measure(run)
    assert overall.collected == 9 == len(set(np.flatnonzero(run.api.captured["a"] < math.inf)))
    assert overall.lost_to_cap == 1  # post 1 fell off the first page
    assert [o for *_, o in planner.seen] == [True, False, False, False]
    assert overall.overflows == 1


# --- the metrics on hand-made traces ----------------------------------------------------------

@pytest.mark.parametrize(("crawl", "expected"), [(0.0, 1.5), (2.5, 0.7), (5.0, 0.5), (10.0, 0.5)])
def test_at3_potentiality_of_one_visit(crawl: float, expected: float) -> None:
    posts = np.array([1.0, 4.0])
    assert potentiality(posts, crawl, 10.0) == pytest.approx(expected)
    grid = np.linspace(0.0, 10.0, 200_001)
    count = np.searchsorted(posts, grid, side="right")
    at_crawl = np.searchsorted(posts, crawl, side="right")
    assert np.trapezoid(np.abs(count - at_crawl), grid) / 10.0 == pytest.approx(expected, abs=1e-4)


def test_metrics_of_one_visit_match_hand_computed_values() -> None:
    run = simulate(CrawlAt([(START + 5.0, "a")]), trace_of({"a": [1.0, 4.0], "b": [2.0]}, {"a": 3, "b": 1}),
                   START, START + 10.0)
    overall, by_class = measure(run)
    assert (overall.posted, overall.collected, overall.crawls, overall.lost_to_cap) == (3, 2, 1, 0)
    a = by_class[3]
    assert a.potentiality == pytest.approx(0.5) and a.potentiality_users == 1
    assert a.staleness == pytest.approx(((5 - 1) + (5 - 4)) / 10)
    assert a.delay == pytest.approx(2.5)
    assert a.freshness == pytest.approx(0.6)  # stale from 1 to 5
    b = by_class[1]  # never crawled: unarchived from 2 to the end
    assert (b.collected, b.potentiality_users, b.staleness, b.freshness) == (0, 0, pytest.approx(0.8), pytest.approx(0.2))
    assert math.isnan(b.delay)
    assert overall.freshness == pytest.approx((6 + 2) / 20)


def test_stale_time_is_the_union_of_the_unarchived_intervals() -> None:
    posts = np.array([1.0, 2.0, 6.0, 7.0])
    assert stale_time(posts, np.array([3.0, 3.0, 10.0, 8.0])) == pytest.approx(2.0 + 4.0)


def test_left_truncated_users_are_judged_only_from_their_first_known_post() -> None:
    trace = Trace.from_rows([("full", START + 50.0), ("full", START + 60.0), ("short", START + 50.0)], cap=2)
    assert trace.known_from == {"full": START + 50.0, "short": -math.inf}
    overall, _ = measure(simulate(CrawlAt([(START + 70.0, "full")]), trace, START, START + 100.0))
    assert overall.freshness == pytest.approx((30 + 50) / (50 + 100))  # 20 of 50 stale; 50 of 100


def test_csv_replay_and_its_errors(tmp_path: Path) -> None:
    good = tmp_path / "h.csv"
    good.write_text("user_id,unix_ts\nb,20\na,10\nb,5\n")
    trace = Trace.from_csv(good)
    assert trace.users == ["a", "b"] and trace.posts["b"].tolist() == [5.0, 20.0]
    assert trace.history(15.0) == {"a": [10.0], "b": [5.0]}
    (tmp_path / "bad.csv").write_text("user,ts\na,1\n")
    with pytest.raises(ValueError, match="user_id"):
        Trace.from_csv(tmp_path / "bad.csv")
    (tmp_path / "nan.csv").write_text("user_id,unix_ts\na,soon\n")
    with pytest.raises(ValueError, match=":2: unix_ts"):
        Trace.from_csv(tmp_path / "nan.csv")


# --- the baselines ----------------------------------------------------------------------------

def test_baselines_spend_exactly_their_budget() -> None:
    trace = Trace.from_population(SMALL, START - 14 * DAY, START + 30 * DAY)
    end = START + 30 * DAY
    rr = simulate(RoundRobin(per_user=3, seed=2), trace, START, end)
    assert Counter(u for u, *_ in rr.api.calls) == dict.fromkeys(SMALL.users, 3)
    rp = simulate(RateProportional(budget=137, seed=2), trace, START, end)
    assert len(rp.api.calls) == 137
    visits = Counter(u for u, *_ in rp.api.calls)
    busiest = max(SMALL.users, key=lambda u: len(trace.history(START)[u]))
    assert visits[busiest] == max(visits.values())
    once = simulate(Cyclic(), trace, START, end)
    assert [u for u, *_ in once.api.calls] == SMALL.users
    assert measure(once)[0].potentiality_users == 40


def test_largest_remainder_keeps_the_total() -> None:
    assert largest_remainder(np.array([0.4, 1.35, 2.25])).tolist() == [1, 1, 2]  # .4 is the largest remainder
    assert largest_remainder(np.array([2.5, 2.5, 0.0])).sum() == 5


def test_the_evaluation_writes_json_markdown_and_a_plot(tmp_path: Path) -> None:
    out, replay = tmp_path / "eval", tmp_path / "corpus.csv"
    rows = [f"{u},{t}" for u in SMALL.users[:25] for t in SMALL.posts(u, START - 7 * DAY, START + 7 * DAY)]
    replay.write_text("user_id,unix_ts\n" + "\n".join(rows) + "\n")
    freshness_eval.main(["--users", "60", "--days", "7", "--warmup-days", "7", "--seeds", "0,1",
                         "--per-user", "2,3", "--trace", str(replay), "--trace-cap", "150", "--out", str(out)])
    result = orjson.loads(out.with_suffix(".json").read_bytes())
    assert [p["label"] for p in result["populations"]] == ["seed 0 (tuning)", "seed 1 (unseen)", "trace corpus.csv"]
    for pop in result["populations"]:
        users = pop["population"]["users"]
        for r, methods in pop["recrawl"].items():
            assert set(methods) == set(freshness_eval.PLANNERS)
            assert methods["round-robin"]["overall"]["crawls"] == users * int(r)
            assert methods["rate-proportional"]["crawls_ratio"] == pytest.approx(1.0)
        assert pop["single_visit"]["round-robin (cyclic)"]["overall"]["crawls"] == users
    assert result["populations"][2]["population"]["users"] == len({row.split(",")[0] for row in rows})
    assert "| rate-proportional |" in out.with_suffix(".md").read_text()
    assert out.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(SystemExit):
        freshness_eval.main(["--per-user", "two"])
