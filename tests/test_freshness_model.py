"""The freshness model's acceptance tests AT-1…AT-10 and AT-12 (shared/papers/freshness.md §6.1).

Golden values are the digest's; "random" cases are hypothesis properties.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier.freshness.calendar import DAY, Calendar, local_day
from frontier.freshness.hashmodel import HashTables, plan_day, update_table
from frontier.freshness.penalty import (
    empirical_potentiality,
    penalty,
    potentiality,
    schedule_potentiality,
)
from frontier.freshness.poisson import GammaPrior, organ_pipe, organ_pipe_position


def test_at1_penalty() -> None:
    assert (penalty(0, 10), penalty(5, 10), penalty(10, 10)) == (50, 25, 50)
    assert penalty(3, 10) == 3 * 3 - 3 * 10 + 10 * 10 / 2


@given(st.integers(0, 200), st.integers(1, 200), st.floats(0.01, 1000), st.lists(st.floats(0, 100), min_size=1, max_size=20))
def test_at2_theorem_1(i: int, n: int, delta: float, rates: list[float]) -> None:
    i = min(i, n)
    assert penalty(i * delta, n * delta) == pytest.approx(delta**2 * penalty(i, n), rel=1e-12)
    slots = [(k % (n + 1)) for k in range(len(rates))]
    scaled = schedule_potentiality(rates, [k * delta for k in slots], n * delta)
    assert scaled == pytest.approx(delta * schedule_potentiality(rates, slots, n), rel=1e-12, abs=1e-300)
    assert potentiality(rates[0], i * delta, n * delta) == pytest.approx(delta * potentiality(rates[0], i, n), rel=1e-12)


@pytest.mark.parametrize(("crawl", "expected"), [(0, 1.5), (2.5, 0.7), (5, 0.5), (10, 0.5)])
def test_at3_empirical_potentiality(crawl: float, expected: float) -> None:
    posts = [1.0, 4.0]
    assert empirical_potentiality(posts, crawl, 10) == pytest.approx(expected)
    grid = np.linspace(0, 10, 2_000_001)
    counts = np.searchsorted(posts, grid, side="right")
    integral = np.mean(np.abs(counts - np.searchsorted(posts, crawl, side="right")))  # (1/T)∫|N(t) − N(τ)|dt
    assert empirical_potentiality(posts, crawl, 10) == pytest.approx(integral, abs=1e-5)


def test_at4_organ_pipe() -> None:
    assert organ_pipe(range(5)) == [0, 2, 4, 3, 1]
    assert organ_pipe(range(6)) == [0, 2, 4, 5, 3, 1]
    assert organ_pipe(range(7)) == [0, 2, 4, 6, 5, 3, 1]
    assert organ_pipe(range(8)) == [0, 2, 4, 6, 7, 5, 3, 1]
    for n in range(1, 51):
        assert organ_pipe(range(n)) == [organ_pipe_position(j, n) for j in range(n)]


GRIDS = {  # slot times and the interval length for N users (§3.2)
    "paper": (lambda n: np.arange(n, dtype=float), lambda n: n - 1.0),
    "whole": (lambda n: np.arange(n, dtype=float), lambda n: float(n)),
    "middle": (lambda n: np.arange(n) + 0.5, lambda n: float(n)),
}


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 100), min_size=2, max_size=8), st.sampled_from(sorted(GRIDS)))
def test_at5_organ_pipe_is_optimal(rates: list[float], grid: str) -> None:
    times, horizon = GRIDS[grid][0](len(rates)), GRIDS[grid][1](len(rates))
    omega = times * times - times * horizon + horizon * horizon / 2
    ascending = sorted(range(len(rates)), key=lambda u: rates[u])
    order = organ_pipe(ascending)
    pipe = sum(rates[u] * omega[j] for j, u in enumerate(order))
    lam = np.asarray(rates)
    every = np.array(list(itertools.permutations(range(len(rates)))))
    assert pipe == pytest.approx(float(np.min(lam[every] @ omega)), rel=1e-9, abs=1e-9)


def test_at6_paper_example() -> None:
    rates = [0, 1, 2, 3, 4, 5]
    order = organ_pipe(range(6))
    assert order == [0, 2, 4, 5, 3, 1]
    pipe = schedule_potentiality([rates[u] for u in order], range(6), 5)
    assert pipe == pytest.approx(22.7)
    assert schedule_potentiality(rates, range(6), 5) == pytest.approx(27.5)
    every = [schedule_potentiality([rates[u] for u in p], range(6), 5) for p in itertools.permutations(range(6))]
    assert (min(every), max(every)) == (pytest.approx(22.7), pytest.approx(32.3))
    assert schedule_potentiality([rates[u] for u in order], range(6), 6) == pytest.approx(25.667, abs=1e-3)


def test_at7_algorithm_2_example_a() -> None:
    plan = plan_day([2, 0, 4, 2, 0, 6], [4, 2, 0, 6, 2, 2], threshold=3, span=3, remaining=1)
    assert plan.table == [3, 1, 2, 4, 1, 4]
    assert plan.crawl_slots == [1, 4, 6]  # slot 3: 6 − 3 = 3 is not > c = 3
    assert plan.remaining == 0


def test_at8_algorithm_2_example_b() -> None:
    plan = plan_day([0] * 8, [1, 0, 0, 0, 0, 0, 0, 3], threshold=2, span=3, remaining=0.5)
    assert plan.table == [0.5, 0, 0, 0, 0, 0, 0, 1.5]
    assert plan.crawl_slots == [4, 8]
    assert plan.remaining == 0


def test_at9_algorithm_2_example_c() -> None:
    plan = plan_day([0] * 6, [0] * 6, threshold=100, span=4, remaining=0)
    assert (plan.crawl_slots, plan.remaining) == ([5], 0)


def test_algorithm_2_carries_an_uncrawled_day() -> None:
    plan = plan_day([0] * 4, [1, 1, 1, 1], threshold=10, span=8, remaining=0.25)
    assert (plan.crawl_slots, plan.remaining) == ([], 2.0 + 0.25)


@given(st.floats(0.05, 0.95), st.floats(0, 50), st.integers(1, 30))
def test_at10_weights_literal(w: float, x: float, days: int) -> None:
    table = [0.0]
    for _ in range(days):
        table = update_table(table, [x], w, "L")
    assert table[0] == pytest.approx(x * sum(w**j for j in range(1, days + 1)), rel=1e-9, abs=1e-12)


def test_at10_the_day_k_back_weighs_w_to_the_k() -> None:
    calendar = Calendar(utc_offset_hours=0, slots=4, day_types="one")
    for form, w in (("L", 0.7), ("E", 0.3)):
        tables = HashTables(1, calendar, w, form)  # type: ignore[arg-type]
        posts = np.array([k * DAY + 3600.0 for k in range(6)])  # one post in slot 0 of days 0..5
        tables.add_history(np.zeros(6, dtype=np.int64), posts, through=5)
        beta = w if form == "L" else 1 - w
        assert tables.a[0, 0, 0] == pytest.approx(sum(w * beta**k for k in range(6)))
        for k in range(6):  # the same as folding day by day
            single = HashTables(1, calendar, w, form)  # type: ignore[arg-type]
            single.add_history(np.zeros(1, dtype=np.int64), posts[5 - k:6 - k], through=5)
            assert single.a[0, 0, 0] == pytest.approx(w * beta**k)


def test_hash_tables_fold_only_observed_days() -> None:
    calendar = Calendar(utc_offset_hours=0, slots=4, day_types="one")
    tables = HashTables(1, calendar, 0.5, "L")
    tables.add_history(np.zeros(2, dtype=np.int64), np.array([3600.0, DAY + 3600.0]), through=0)
    assert tables.a[0, 0].tolist() == [0.5, 0, 0, 0]
    assert tables.pending[0].tolist() == [1, 0, 0, 0]
    # a crawl on day 4 observes days 1..3: day 1 (pending) then two silent days
    tables.observe(0, 4 * DAY + 60, np.array([2 * DAY + 7 * 3600.0, 4 * DAY + 30.0]))
    assert tables.a[0, 0].tolist() == pytest.approx([0.5**4 + 0.5**3, 0.5**2, 0, 0])
    assert tables.pending[0].tolist() == [1, 0, 0, 0]


def test_at12_day_types() -> None:
    calendar = Calendar()  # UTC+8, 24 slots, workday and weekend tables
    sunday = local_day("2013-09-01")
    assert calendar.day_type(sunday) == 1 and calendar.day_type(sunday + 1) == 0
    assert Calendar(holidays=[sunday + 2]).day_type(sunday + 2) == 1
    tables = HashTables(1, calendar, 0.5, "L")
    friday = sunday - 2
    tables.add_history(np.zeros(1, dtype=np.int64), np.array([calendar.day_start(friday) + 9 * 3600.0]), friday)
    workday = tables.a[0, 0].copy()
    weekend_posts = np.array([calendar.day_start(d) + 20 * 3600.0 for d in (friday + 1, sunday)])
    tables.observe(0, calendar.day_start(sunday + 1) + 60, weekend_posts)  # Monday: Saturday and Sunday observed
    assert tables.a[0, 0].tolist() == workday.tolist()
    assert tables.a[0, 1, 20] == pytest.approx(0.5 + 0.25)
    one = np.array([0])
    day_start = calendar.day_start(sunday)
    sunday_expected = tables.expected_in_day(one, np.array([day_start]), np.array([day_start + DAY]), sunday)
    assert sunday_expected[0] == pytest.approx(tables.a[0, 1].sum())
    monday = calendar.day_start(sunday + 1)
    assert tables.expected_in_day(one, np.array([monday]), np.array([monday + DAY]), sunday + 1)[0] == pytest.approx(0.5)


def test_continuous_form_triggers_on_threshold_and_span() -> None:
    calendar = Calendar(utc_offset_hours=0, slots=24, day_types="one")
    tables = HashTables(1, calendar, 0.5, "L")
    tables.a[0, 0, :] = 1.0  # one post expected an hour
    assert tables.due(0, since=0.0, expected=0.0, last_crawl=0.0, threshold=3.0, span=30 * DAY) == 4 * 3600
    assert tables.due(0, since=1800.0, expected=0.0, last_crawl=1800.0, threshold=3.0, span=30 * DAY) == 4 * 3600 + 0
    assert tables.due(0, since=0.0, expected=2.5, last_crawl=-DAY, threshold=3.0, span=30 * DAY) == 3600
    tables.a[0, 0, :] = 0.0
    assert tables.due(0, since=0.0, expected=0.0, last_crawl=0.0, threshold=3.0, span=2 * DAY) == 2 * DAY
    assert tables.due(0, since=DAY, expected=5.0, last_crawl=0.0, threshold=3.0, span=30 * DAY) == DAY


def test_gamma_prior() -> None:
    prior = GammaPrior.population(total_posts=700, users=10, window=7 * DAY, weight=7 * DAY, default_rate=1 / DAY)
    assert prior.rate(0, 0) == pytest.approx(10 / DAY)  # no history: the population's mean
    assert prior.rate(14, 7 * DAY) == pytest.approx((14 + 70) / (14 * DAY))
    assert GammaPrior.population(0, 10, 0, DAY, 2 / DAY).rate(0, 0) == pytest.approx(2 / DAY)
