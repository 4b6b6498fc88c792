"""``--policy freshness`` over two agents, each with its own credential of one API (issue 15, item 4).

Over real sockets on loopback and the in-vitro DNS, as ``tests/test_freshness_live.py`` but with
two agents (run side by side on one event loop, each with its own frontier, WARC files and
spools) and two ``[[credentials]]`` for ``api.posting.test`` with ``spread = true``. Judged from
the server's request log and the WARC files:

* both tokens are used, their calls split roughly evenly (the position split);
* each user's calls all carry one token, but for a switch after each move of the user;
* no token goes over its limit per lab hour, and no call meets a 429;
* each user's posts up to its last crawl were all collected, whichever agent crawled it;
* distributed (the default): users move from an agent over its quota to one with calls to
  spare, with their state; centralized: agent 0 plans, both agents crawl what it sends them.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import uvloop

from bench.invitro.requestlog import LogRecord
from bench.invitro.timeline import LAB_HOUR, TimelineParams
from engine import config as configuration
from engine.agent import Agent
from engine.ip_table import SharedIpTable
from frontier.policies.freshness import FreshnessPolicy
from tests.invitro_harness import USER_AGENT, WebThread
from tests.posting_source import RegularPosters, collected_posts, write_model

SCALE = 3600.0
LIMIT = 40
T0 = 1_700_061_200.0  # 23:13 local (UTC+8): the planners' first local midnight comes 47 lab minutes in
DAY = 86_400.0
TOKENS = ("token-a", "token-b")


def crawl_with_two_agents(tmp_path: Path, source: RegularPosters, history: Mapping[str, Sequence[float]],
                          *options: str, runs: Sequence[float] = (6.0,)) -> tuple[list[LogRecord], list[list[FreshnessPolicy]]]:
    """Crawl ``source``'s users with two agents, given ``history`` (the model's belief: the posts
    before ``T0``, which may not be the source's), once for each of ``runs`` seconds: a run after the
    first resumes from the agents' checkpoints. Returns the server's log and each run's policies."""
    web = WebThread(None, tmp_path / "requests.jsonl", posting=TimelineParams(source, t0=T0, scale=SCALE,
                                                                             calls_per_hour=LIMIT))
    model = write_model(tmp_path / "model", web.web.seeds[0], source.users, history)
    toml = tmp_path / "crawl.toml"
    toml.write_text("".join(f"""
[[credentials]]
name = "api-{i}"
token = "{token}"
calls_per_hour = {LIMIT * SCALE}
hosts = ["api.posting.test"]
spread = true
""" for i, token in enumerate(TOKENS)))
    out = tmp_path / "out"
    out.mkdir()
    SharedIpTable.create(out / "ip-table")  # the supervisor's part with several agents
    policies: list[list[FreshnessPolicy]] = []
    try:
        for seconds in runs:
            config = configuration.load(toml, [
                f'store.dir="{out}"', 'engine.progress="off"', f'engine.user_agent="{USER_AGENT}"',
                f'dns.servers=["{web.web.dns_address}"]', 'network.allow_networks=["127.0.0.0/8"]',
                "politeness.host_delay=0", "politeness.ip_delay=0", "frontier.sieve_flush_interval=0",
                f"engine.max_seconds={seconds}", 'policy.name="freshness"', f'policy.model="{model}"',
                'policy.planner="hash"', "policy.per_crawl=20", f"policy.time_scale={SCALE}",
                'policy.settings=["hash.threshold=3"]', *options,
            ])
            agents = [Agent(config, web.web.seeds, index=i, agents=2) for i in range(2)]

            async def both() -> None:
                await asyncio.gather(*(agent.run() for agent in agents))

            uvloop.run(both())
            policies.append([agent.crew.frontier.policy for agent in agents])  # type: ignore[misc]
    finally:
        log = web.stop()
    assert all(isinstance(p, FreshnessPolicy) for run in policies for p in run)
    return log, policies


Crawl = tuple[Path, RegularPosters, list[LogRecord], list[FreshnessPolicy]]


def weekend(t: float) -> bool:
    """``t`` falls on a Saturday or Sunday, local time (UTC+8, the planners' calendar)."""
    return (math.floor((t + 8 * 3600) / DAY) + 3) % 7 >= 5  # day 0, 1970-01-01, was a Thursday


@pytest.fixture(scope="module")
def distributed(tmp_path_factory: pytest.TempPathFactory) -> Crawl:
    tmp_path = tmp_path_factory.mktemp("fresh-agents")
    source = RegularPosters(12)
    history = {u: source.posts(u, T0 - 14 * DAY, T0) for u in source.users}
    # u11 posted every 5 minutes on weekends: the position split, which counts posts a day, gives it
    # the load of a busy user, but the planners expect nothing from it on a workday (the crawl's
    # days), so its agent has calls to spare at the first round and the other moves a user to it
    history["u11"] = [t for t in range(int(T0 - 14 * DAY), int(T0), 300) if weekend(t)]
    log, runs = crawl_with_two_agents(tmp_path, source, history, "policy.rebalance_hours=1")
    return tmp_path, source, log, runs[-1]


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Crawl, list[FreshnessPolicy]]:
    """The distributed crawl cut in two: stopped, then resumed from the agents' checkpoints; with
    the first run's policies."""
    tmp_path = tmp_path_factory.mktemp("fresh-resume")
    source = RegularPosters(12)
    history = {u: source.posts(u, T0 - 14 * DAY, T0) for u in source.users}
    history["u11"] = [t for t in range(int(T0 - 14 * DAY), int(T0), 300) if weekend(t)]  # as above: a move
    log, (first, second) = crawl_with_two_agents(tmp_path, source, history, "policy.rebalance_hours=1",
                                                 runs=(3.5, 3.5))
    return (tmp_path, source, log, second), first


@pytest.fixture(scope="module")
def centralized(tmp_path_factory: pytest.TempPathFactory) -> Crawl:
    tmp_path = tmp_path_factory.mktemp("fresh-central")
    source = RegularPosters(12)
    history = {u: source.posts(u, T0 - 14 * DAY, T0) for u in source.users}
    log, runs = crawl_with_two_agents(tmp_path, source, history, 'policy.architecture="centralized"')
    return tmp_path, source, log, runs[-1]


def check_calls(crawl: Crawl) -> list[LogRecord]:
    """Both tokens used about as much, each within its limit, every user crawled; returns the calls."""
    _, source, log, _ = crawl
    calls = [r for r in log if r.target.startswith("/timeline") and r.status in (200, 304)]
    per_token = Counter(r.credential for r in calls)
    assert set(per_token) == set(TOKENS), per_token
    assert min(per_token.values()) >= 0.3 * sum(per_token.values()), per_token
    assert set(Counter(r.target.rpartition("user=")[2] for r in calls)) == set(source.users), "every user is crawled"
    for token in TOKENS:
        per_hour = Counter(math.floor((r.lab - T0) / LAB_HOUR) for r in calls if r.credential == token and r.lab is not None)
        assert max(per_hour.values()) <= LIMIT
    assert not [r for r in log if r.status in (401, 429)]
    return calls


def check_no_post_lost(crawl: Crawl) -> None:
    """Each user's posts up to its last crawl are in the WARC files of one agent or the other."""
    tmp_path, source, _, policies = crawl
    collected, last_crawl = collected_posts(tmp_path / "out")
    for user in source.users:
        posted = set(source.posts(user, T0, last_crawl[user] + 1e-6))
        assert posted <= collected[user], f"{user}: {len(posted - collected[user])} posts were never collected"
    assert sum(p.counters()["calls"].get("changed", 0) for p in policies) > len(source.users)


def test_two_agents_share_the_users_and_their_calls(distributed: Crawl) -> None:
    _, source, _, policies = distributed
    check_calls(distributed)
    a, b = (p.sharing for p in policies)
    assert a is not None and b is not None
    for user in source.users:  # both agents agree on every user's owner, but for a move still unread
        assert a.owner[user] == b.owner[user] or a.epoch.get(user, 0) != b.epoch.get(user, 0), user
    assert 0 < len(a.mine()) < len(source.users)


def test_users_move_to_the_agent_with_calls_to_spare_with_their_state(distributed: Crawl) -> None:
    *_, policies = distributed
    moved_out = sum(p.sharing.moved_out for p in policies if p.sharing is not None)
    moved_in = sum(p.sharing.moved_in for p in policies if p.sharing is not None)
    assert moved_out >= 1 and moved_in >= moved_out - 1  # the last one may be unread at the stop
    for policy in policies:
        assert policy.sharing is not None
        for user in policy.sharing.mine():
            if policy.sharing.epoch.get(user) and user in policy.url:  # moved here: its state came along
                assert user in policy.newest and policy.recent.get(user), user


def check_tokens(crawl: Crawl) -> None:
    """Each user's calls carry one token, but for a switch after each of its moves."""
    _, source, log, policies = crawl
    moves = {u: max(p.sharing.epoch.get(u, 0) for p in policies if p.sharing is not None) for u in source.users}
    calls = sorted((r for r in log if r.target.startswith("/timeline") and r.status in (200, 304)), key=lambda r: r.start)
    tokens: defaultdict[str, list[str | None]] = defaultdict(list)
    for r in calls:
        tokens[r.target.rpartition("user=")[2]].append(r.credential)
    for user, used in tokens.items():
        switches = sum(a != b for a, b in itertools.pairwise(used))
        assert switches <= moves[user], (user, used, moves[user])


def test_each_user_keeps_one_token_but_after_a_move(distributed: Crawl) -> None:
    check_tokens(distributed)


def test_no_post_is_lost_whichever_agent_crawled_the_user(distributed: Crawl) -> None:
    check_no_post_lost(distributed)


def test_centralized_agent_0_plans_and_sends_each_crawl_to_the_shortest_to_do_list(centralized: Crawl) -> None:
    _, source, _, (server, client) = centralized
    calls = check_calls(centralized)
    assert server.central is not None and client.central is not None
    dispatched = server.counters()["dispatched"]
    assert dispatched.get("0", 0) >= 3 and dispatched.get("1", 0) >= 3, dispatched
    # the client plans nothing: beyond the first crawl of its share of users, it crawls what it is sent
    first = sum(1 for u in source.users if client.central.first[u] == 1)
    assert sum(1 for r in calls if r.credential == TOKENS[1]) <= first + dispatched["1"]
    assert not client.planner.names and client.counters()["calls"] == {}
    assert server.planner.statistics().crawls >= len(calls) - 2  # every answer reported (but the last, maybe unread)


def test_centralized_loses_no_post(centralized: Crawl) -> None:
    check_no_post_lost(centralized)


def test_a_resumed_crawl_keeps_its_plans_owners_and_limits_and_loses_no_post(
        resumed: tuple[Crawl, list[FreshnessPolicy]]) -> None:
    crawl, first = resumed
    _, source, _, second = crawl
    calls = check_calls(crawl)  # each token within its limit in every lab hour, the restart's too
    check_tokens(crawl)
    check_no_post_lost(crawl)
    assert sum(p.sharing.moved_out for p in first if p.sharing is not None) >= 1
    a, b = (p.sharing for p in second)
    assert a is not None and b is not None
    for user in source.users:  # the owners the first run agreed on, its moves included, came back
        assert a.owner[user] == b.owner[user] or a.epoch.get(user, 0) != b.epoch.get(user, 0), user
    # the resumed planners went on from the first run's: they hold its crawls as well as their own
    before = sum(p.planner.statistics().crawls for p in first)
    after = sum(p.planner.statistics().crawls for p in second)
    assert before >= len(source.users) and after >= len(calls) - 2, (before, after, len(calls))
