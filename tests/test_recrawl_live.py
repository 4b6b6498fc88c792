"""A live recrawl of the posting lab's API (issue 15), judged from the server's request log and the WARC.

Over real sockets on loopback, through the in-vitro DNS server: an agent, run in this process
with a policy defined here that asks for each user's timeline again every 5 lab minutes, for a
few rounds, recrawls the API of ``bench/invitro/timeline.py`` (a lab hour per wall second) with
two ``[[credentials]]`` for its host: ``steady``, configured at half the lab's limit, and
``greedy``, at four times it. The server's log must show that

* no token made more calls in a lab hour than the lab allows, and ``steady`` never met a 429;
* after each 429, no call with that token came before its Retry-After had passed, and the URL
  the 429 refused was fetched again;
* revisits sent their validators (the WARC's request records hold If-None-Match) and some
  were answered 304, which the policy saw as "not changed";

and the WARC holds every answer: a response record per 200 and 429, a ``server-not-modified``
revisit record per 304, and no token; ``crawl warc verify`` accepts it.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import uvloop
from warcio.archiveiterator import ArchiveIterator

from bench.invitro import LogRecord
from bench.invitro.timeline import LAB_HOUR, TimelineParams
from engine import config as configuration
from engine.agent import Agent
from engine.warc_cli import verify
from frontier.page import FetchedPage
from frontier.policy import CrawlPolicy, Revisit
from store.warc import PROFILE_NOT_MODIFIED
from tests.invitro_harness import USER_AGENT, WebThread
from tests.posting_source import RegularPosters

SCALE = 3600.0  # a lab hour per wall second
LIMIT = 8  # calls per token per lab hour
T0 = 1_700_000_000.0


class TimelineRevisits(CrawlPolicy):
    """Fetch each timeline again ``every`` seconds (the frontier's clock), ``rounds`` times; record what it saw."""

    name = "test-timeline-revisits"

    @dataclass(frozen=True)
    class Options:
        every: float = 1.0
        rounds: int = 3

    def __init__(self, options: object, model: Path | None) -> None:
        super().__init__(options, model)
        assert isinstance(options, TimelineRevisits.Options)
        self.every, self.rounds = options.every, options.rounds
        self.revisits: Counter[str] = Counter()
        self.changed: Counter[bool | None] = Counter()

    def on_fetched(self, page: FetchedPage, now: float) -> Iterable[Revisit]:
        if "/timeline?" not in page.url:
            return ()
        self.changed[page.changed] += 1
        if self.revisits[page.url] >= self.rounds:
            return ()
        self.revisits[page.url] += 1
        return [Revisit(page.url, now + self.every)]


def timeline_calls(log: list[LogRecord]) -> list[LogRecord]:
    return sorted((r for r in log if r.target.startswith("/timeline")), key=lambda r: r.start)


def test_a_live_recrawl_keeps_to_each_credentials_limit_honours_429_and_revisits_conditionally(tmp_path: Path) -> None:
    users, rounds = 6, 10
    posting = TimelineParams(RegularPosters(users), t0=T0, scale=SCALE, calls_per_hour=LIMIT)
    web = WebThread(None, tmp_path / "requests.jsonl", posting=posting)
    per_wall_hour = LIMIT * SCALE  # the lab's limit on the crawler's clock
    toml = tmp_path / "crawl.toml"
    toml.write_text(f"""
[[credentials]]
name = "steady"
token = "token-steady"
calls_per_hour = {per_wall_hour / 2}
hosts = ["api.posting.test"]

[[credentials]]
name = "greedy"
token = "token-greedy"
calls_per_hour = {per_wall_hour * 4}
hosts = ["api.posting.test"]
""")
    try:
        config = configuration.load(toml, [
            f'store.dir="{tmp_path / "out"}"', 'engine.progress="off"', f'engine.user_agent="{USER_AGENT}"',
            f'dns.servers=["{web.web.dns_address}"]', 'network.allow_networks=["127.0.0.0/8"]',
            "politeness.host_delay=0.01", "politeness.ip_delay=0", "frontier.sieve_flush_interval=0",
            'policy.name="test-timeline-revisits"', f"policy.every={300 / SCALE}", f"policy.rounds={rounds}",
        ])
        agent = Agent(config, web.web.seeds)
        summary = uvloop.run(agent.run())
    finally:
        log = web.stop()
    assert summary["stop_reason"] == "done"
    calls = timeline_calls(log)
    policy = agent.crew.frontier.policy
    assert isinstance(policy, TimelineRevisits)

    # each timeline fetched once and revisited `rounds` times; the 429s' URLs were fetched again
    answered = Counter(r.target for r in calls if r.status != 429)
    assert len(answered) == users and set(answered.values()) == {rounds + 1}

    # calls per token per lab hour within the limit; the steady credential never refused
    per_hour: Counter[tuple[str | None, int]] = Counter(
        (r.credential, math.floor((r.lab - T0) / LAB_HOUR)) for r in calls if r.status != 429 and r.lab is not None
    )
    assert per_hour and max(per_hour.values()) <= LIMIT
    refused = [r for r in calls if r.status == 429]
    assert refused, "the greedy credential asks faster than the lab allows: some calls are refused"
    assert {r.credential for r in refused} == {"token-greedy"}
    assert {r.credential for r in calls} == {"token-steady", "token-greedy"}

    # after a 429, nothing with that token before its Retry-After has passed
    by_token: defaultdict[str | None, list[LogRecord]] = defaultdict(list)
    for r in calls:
        by_token[r.credential].append(r)
    for r in refused:
        assert r.retry_after is not None
        later = [s for s in by_token[r.credential] if s.start > r.start]
        assert all(s.start >= r.end + r.retry_after for s in later), "a call came before Retry-After had passed"

    # revisits are conditional, and some come back 304, which the policy hears as "not changed"
    statuses = Counter(r.status for r in calls)
    assert statuses[304] > 0 and statuses[200] >= users
    assert policy.changed[False] == statuses[304] and policy.changed[None] == users
    assert policy.changed[True] == statuses[200] - users

    # the WARC holds every answer, validators in the revisits' requests, and no token
    responses: Counter[int] = Counter()
    not_modified = conditional = 0
    for path in sorted((tmp_path / "out" / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                if "/timeline?" not in uri:
                    continue
                if record.rec_type == "request":
                    head = record.http_headers
                    assert head.get_header("Authorization") in ("Bearer <steady>", "Bearer <greedy>")
                    conditional += head.get_header("If-None-Match") is not None
                elif record.rec_type == "response":
                    responses[int(record.http_headers.get_statuscode())] += 1
                elif record.rec_type == "revisit":
                    assert record.rec_headers.get_header("WARC-Profile") == PROFILE_NOT_MODIFIED
                    not_modified += 1
    assert responses == Counter({200: statuses[200], 429: statuses[429]})
    assert not_modified == statuses[304]
    first_tries = Counter[str]()  # calls of a timeline up to its first answer: no validators to send yet
    answered_once: set[str] = set()
    for r in calls:
        if r.target not in answered_once:
            first_tries[r.target] += 1
            if r.status != 429:
                answered_once.add(r.target)
    assert conditional == len(calls) - sum(first_tries.values()), "every call after a timeline's first answer is conditional"
    assert verify(tmp_path / "out" / "warc") == 0, "`crawl warc verify` accepts the not-modified revisits"
    assert summary["deferred"] == statuses[429]
    assert summary["credentials"]["greedy"]["refused"] == statuses[429]
