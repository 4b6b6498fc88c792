"""The timing measurement (bench/freshness_timing.py): a policy's calls follow the age of the newest
post each call saw, freshness is the share of the period with nothing unarchived, the
perfect-information bound is one no policy beats, the ceiling's planner reads the period's
posts, and the tool writes its tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest

from bench import freshness_timing as timing
from bench.freshness.baselines import RoundRobin
from bench.freshness.metrics import measure
from bench.freshness.simulator import Limits, simulate
from bench.freshness.trace import Trace
from bench.freshness_eval import START, Budget, _budget_params
from bench.invitro.posting import DAY, HOUR, Population, PostingParams
from frontier.freshness.allocation import AllocationPlanner

END = START + 20 * DAY


def test_the_wait_follows_the_age_of_the_newest_post() -> None:
    # a post 2 h before the first call, then silence: its age at the calls is < 6 h (wait 1 day),
    # 1 d 2 h (< 3 d: 3 days), 4 d 2 h (< 7 d: 4 days), then older (9 days)
    posts = np.array([START - 2 * HOUR])
    calls = timing.call_times(posts, (1.0, 2.0, 3.0, 4.0, 9.0), START, END)
    assert ((calls - START) / DAY).tolist() == [0.0, 1.0, 4.0, 8.0, 17.0]


def test_freshness_is_the_metrics_freshness() -> None:
    trace = Trace.from_population(Population(PostingParams(users=30, seed=4)), START - 14 * DAY, END)
    run = simulate(RoundRobin(3, 1), trace, START, END, Limits(per_crawl=10**6))  # no post lost to the cap
    calls: dict[str, list[float]] = {}
    for user, at, _, _ in run.api.calls:
        calls.setdefault(user, []).append(at)
    mine = np.mean([timing.freshness(trace.posts[u], np.asarray(calls.get(u, [])), START, END) for u in trace.users])
    assert mine == pytest.approx(measure(run)[0].freshness)


def test_no_policy_beats_perfect_information() -> None:
    population = Population(PostingParams(users=400, seed=3))
    users = timing.class_users(population, 2, 30, START, END)
    phases = np.random.default_rng(0).uniform(0.0, 1.0, len(users))
    for waits in ((3.0,) * 5, (1.0, 1.0, 5.0, 5.0, 5.0), (6.0, 2.0, 4.0, 8.0, 3.0)):
        per_user = [timing.call_times(p, waits, START + 2 * HOUR + np.floor(f * max(waits)) * DAY, END)
                    for p, f in zip(users, phases, strict=True)]
        for posts, calls in zip(users, per_user, strict=True):
            bound = timing.perfect_information([posts], START, END, len(calls))
            assert timing.freshness(posts, calls, START, END) <= bound + 1e-12
    assert timing.perfect_information([np.array([START - DAY])], START, END, 0) == 1.0  # silent in the period


def test_the_ceiling_reads_the_period_and_the_planner_only_the_history() -> None:
    # silent for the 14 days of history, active every day of the period
    posts = {"u": np.arange(START + 3 * HOUR, END, DAY), "v": np.arange(START - 14 * DAY, END, 2 * DAY)}
    history = {u: p[p < START].tolist() for u, p in posts.items()}
    params = _budget_params(Budget(2, 3, 0, Limits(), 20.0))
    planner, ceiling = AllocationPlanner(params), timing.ChainCeiling(params, list(posts.values()))
    for p in (planner, ceiling):
        p.begin(list(posts), history, START, END)
    seen = [np.asarray(history[u]) for u in posts]
    light = np.array([True, True])
    stay, _, _ = planner._chain(seen, light)
    all_stay, _, _ = ceiling._chain(seen, light)
    assert all_stay[0] > stay[0] + 0.3  # the period's active days are seen only by the ceiling


def test_the_tool_writes_its_tables(tmp_path: Path) -> None:
    out = tmp_path / "timing"
    timing.main(["--users", "300", "--per-class", "12", "--policies", "4", "--keep", "2", "--eval-users", "80",
                 "--per-user", "2", "--days", "14", "--seeds", "0,1", "--out", str(out)])
    result = orjson.loads(out.with_suffix(".json").read_bytes())
    assert set(result["policies"]) == {"1", "2"}
    assert set(result["ceiling"]) == {"0 2", "1 2"}
    assert result["ceiling"]["0 2"]["round-robin"]["overall"]["crawls"] == 160
    text = out.with_suffix(".md").read_text()
    assert "## Class 2: freshness above even waits" in text and "(ceiling)" in text
