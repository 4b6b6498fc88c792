"""The recrawl over several simulated agents (issue 15, the driver of E-6/E-7: `bench/freshness_scaling.py`): each agent's credential
keeps its own limit, a distributed agent calls only the users it owns, the centralized dispatcher
keeps the agents' calls of each hour within one of each other, and one agent is the one-agent
simulator."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from bench import freshness_eval, freshness_scaling
from bench.freshness.agents import simulate_agents
from bench.freshness.baselines import RoundRobin
from bench.freshness.metrics import measure
from bench.freshness.simulator import Limits, simulate
from bench.freshness.trace import Trace
from bench.invitro.posting import DAY, Population, PostingParams
from frontier.freshness.params import PlannerParams
from frontier.freshness.planners import paper_planner

START = freshness_eval.START
END = START + 3 * DAY
TRACE = Trace.from_population(Population(PostingParams(users=60, seed=5)), START - 14 * DAY, END)
TIGHT = Limits(per_crawl=20, per_hour=4)  # RR at 12 crawls a user wants 10 calls an hour: the limits bind


def calls_per_hour(run_calls: list[tuple[str, float, int, int]], credentials: list[int]) -> Counter[tuple[int, int]]:
    return Counter((c, math.floor((at - START) / 3600)) for (_, at, _, _), c in zip(run_calls, credentials, strict=True))


def test_distributed_agents_call_only_their_users_each_within_its_own_limit() -> None:
    result = simulate_agents(lambda: RoundRobin(12, 1), TRACE, START, END, TIGHT, 3, "distributed")
    api = result.run.api
    assert sorted(set(result.owners.values())) == [0, 1, 2] and set(result.owners) == set(TRACE.users)
    assert all(result.owners[user] == c for (user, *_), c in zip(api.calls, api.credential_of_call, strict=True))
    per_hour = calls_per_hour(api.calls, api.credential_of_call)
    assert max(per_hour.values()) == 4  # bound, and held, for each credential
    assert sum(result.calls_by_agent()) == len(api.calls) > 3 * 4 * 24 * 2  # more than one credential's worth
    assert sum(result.messages_by_agent()) == measure(result.run)[0].collected


def test_the_centralized_dispatcher_keeps_each_hours_calls_within_one_across_agents() -> None:
    result = simulate_agents(lambda: RoundRobin(12, 1), TRACE, START, END, TIGHT, 3, "centralized", seed=4)
    api = result.run.api
    per_hour = calls_per_hour(api.calls, api.credential_of_call)
    assert max(per_hour.values()) == 4
    for hour in {h for _, h in per_hour}:
        counts = [per_hour[(c, hour)] for c in range(3)]
        assert max(counts) - min(counts) <= 1, (hour, counts)
    assert result.owners == {}


@pytest.mark.parametrize("architecture", ["distributed", "centralized"])
def test_one_agent_is_the_one_agent_simulator(architecture: str) -> None:
    params = PlannerParams(per_crawl=TIGHT.per_crawl)
    alone = measure(simulate(paper_planner(params), TRACE, START, END, TIGHT))[0]
    result = simulate_agents(lambda: paper_planner(params), TRACE, START, END, TIGHT, 1, architecture)
    assert measure(result.run)[0] == alone and alone.crawls > 0


def test_the_scaling_benchmark_writes_its_checks(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "scaling"
    result = freshness_scaling.main(["--agents", "1,2", "--users-per-agent", "40", "--days", "3", "--out", str(out)])
    assert out.with_suffix(".json").exists() and "E-6" in out.with_suffix(".md").read_text()
    two = result["runs"][1]["architectures"]
    assert sum(two["distributed"]["calls_by_agent"]) == two["distributed"]["overall"]["crawls"] > 0
    assert set(result["checks"]) == {"e6", "e7_rows", "e7_of", "e7"}
    with pytest.raises(SystemExit):
        freshness_scaling.main(["--agents", "0,2"])
