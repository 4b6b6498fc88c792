"""``--policy freshness`` recrawling the posting lab (issue 15), judged from the server's log and the WARC.

Over real sockets on loopback and the in-vitro DNS: twelve users post at regular intervals, from
every 10 lab minutes (``u0``) to every 2 lab hours (``u11``), on a lab clock running an hour per
wall second. The crawl starts at the lab's directory, is given two weeks of each user's history
(``history.csv``) and the Hash planner with a threshold of 3 posts, and runs for a few wall
seconds. The outcome must show that

* every user was crawled, and the most active user far more often than the least active one;
* no call went over the credential's limit per lab hour;
* each user's posts up to its last crawl were all collected (read back from the WARC's JSON):
  crawling when about 3 new posts are expected, with 20 posts per call, loses none to the cap.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import uvloop

from bench.invitro.timeline import LAB_HOUR, TimelineParams
from engine import config as configuration
from engine.agent import Agent
from frontier.policies.freshness import FreshnessPolicy
from tests.invitro_harness import USER_AGENT, WebThread
from tests.posting_source import RegularPosters, collected_posts, write_model

SCALE = 3600.0
LIMIT = 40
T0 = 1_700_000_000.0
DAY = 86_400.0


def test_the_freshness_policy_recrawls_active_users_more_and_loses_no_post(tmp_path: Path) -> None:
    source = RegularPosters(12)
    web = WebThread(None, tmp_path / "requests.jsonl", posting=TimelineParams(source, t0=T0, scale=SCALE,
                                                                             calls_per_hour=LIMIT))
    history = {u: source.posts(u, T0 - 14 * DAY, T0) for u in source.users}
    model = write_model(tmp_path / "model", web.web.seeds[0], source.users, history)
    toml = tmp_path / "crawl.toml"
    toml.write_text(f"""
[[credentials]]
name = "api"
token = "token-api"
calls_per_hour = {LIMIT * SCALE}
hosts = ["api.posting.test"]
""")
    try:
        config = configuration.load(toml, [
            f'store.dir="{tmp_path / "out"}"', 'engine.progress="off"', f'engine.user_agent="{USER_AGENT}"',
            f'dns.servers=["{web.web.dns_address}"]', 'network.allow_networks=["127.0.0.0/8"]',
            "politeness.host_delay=0", "politeness.ip_delay=0", "frontier.sieve_flush_interval=0",
            "engine.max_seconds=6", 'policy.name="freshness"', f'policy.model="{model}"',
            'policy.planner="hash"', "policy.per_crawl=20", f"policy.time_scale={SCALE}",
            'policy.settings=["hash.threshold=3"]',
        ])
        agent = Agent(config, web.web.seeds)
        uvloop.run(agent.run())
    finally:
        log = web.stop()
    policy = agent.crew.frontier.policy
    assert isinstance(policy, FreshnessPolicy)

    calls = [r for r in log if r.target.startswith("/timeline") and r.status in (200, 304)]
    per_user = Counter(r.target.rpartition("user=")[2] for r in calls)
    assert set(per_user) == set(source.users), "every user is crawled"
    assert per_user["u0"] >= 2 * per_user["u11"] and per_user["u0"] >= 5, per_user  # one run: 7 and 2
    per_hour = Counter(math.floor((r.lab - T0) / LAB_HOUR) for r in calls if r.lab is not None)
    assert max(per_hour.values()) <= LIMIT
    assert not [r for r in log if r.status == 429]

    collected, last_crawl = collected_posts(tmp_path / "out")
    for user in source.users:
        posted = set(source.posts(user, T0, last_crawl[user] + 1e-6))
        assert posted <= collected[user], f"{user}: {len(posted - collected[user])} posts were never collected"
    assert policy.counters()["calls"]["changed"] > len(source.users)
