"""The frontier end to end with an explicit clock: sieve → distributor → workbench (→ virtualizer) → fetch order.

``FrontierHarness`` plays the engine's part without any network: it resolves hosts with a
fixed table, acquires whatever is ready, "fetches" it instantly and releases it, moving a
fake clock to the workbench's next deadline. Properties (hypothesis): every URL discovered
k ≥ 1 times is fetched exactly once; per host, fetch order equals first-discovery order
(BUbiNG's per-host breadth-first), also with a workbench small enough to force spilling to
the virtualizer; politeness holds on the fake clock.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import given, settings

from frontier.frontier import Frontier
from frontier.page import FetchedPage, LinkContext
from frontier.policy import CrawlPolicy, Revisit
from frontier.settings import FrontierSettings
from frontier.urls import split
from frontier.visit_state import Phase, VisitState

HOST_DELAY = 1.0
IP_DELAY = 0.25


class FrontierHarness:
    def __init__(self, directory: Path, policy: CrawlPolicy | None = None, **overrides: object) -> None:
        base = dict(
            host_delay=HOST_DELAY,
            ip_delay=IP_DELAY,
            workbench_bytes=1 << 20,
            sieve_bucket_bytes=1 << 12,
            url_cache_bytes=1 << 12,
            virtualizer_segment_bytes=1 << 14,
            sieve_flush_interval=0.0,
        )
        base.update(overrides)
        self.frontier = Frontier(directory, FrontierSettings(**base), policy=policy)  # type: ignore[arg-type]
        self.now = 0.0
        self.fetched: list[tuple[float, str, str]] = []  # (start, url, ip)

    def ip_of(self, scheme_authority: str) -> str:
        return f"10.0.0.{sum(scheme_authority.encode()) % 3}"

    def step(self, discover_during: dict[int, list[str]] | None = None) -> bool:
        """One round of the engine's loops; returns False once the frontier is idle."""
        f = self.frontier
        if f.wants_flush(self.now):
            f.flush()
            f.flush_sieve(self.now, self.now)
        for vs in f.distribute(self.now):
            f.resolved(vs, self.ip_of(vs.scheme_authority))
        progressed = False
        while (vs := f.acquire(self.now)) is not None:
            url = f.next_url(vs)
            self.fetched.append((self.now, url, vs.ip))
            if discover_during and len(self.fetched) in discover_during:
                f.discover(discover_during.pop(len(self.fetched)), url)
            f.release(vs, self.now + 0.01)
            progressed = True
        if not progressed:
            deadlines = [t for t in (f.next_deadline(), f.next_revisit()) if t is not None]
            deadline = min(deadlines) if deadlines else None
            if deadline is not None:
                self.now = max(self.now + 0.001, deadline)
            elif f.idle():
                return False
        return True

    def run(self, discover_during: dict[int, list[str]] | None = None, max_steps: int = 100_000) -> None:
        for _ in range(max_steps):
            if not self.step(discover_during):
                return
        raise AssertionError("the frontier never became idle")


def url(host: int, page: int) -> str:
    return f"http://h{host}.test/p{page}"


discoveries = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 30)), min_size=1, max_size=300)


def check_exactly_once_and_per_host_order(harness: FrontierHarness, offered: list[str]) -> None:
    fetched_urls = [u for _, u, _ in harness.fetched]
    assert sorted(fetched_urls) == sorted(set(offered)), "not every discovered URL was fetched exactly once"
    first_seen: dict[str, list[str]] = defaultdict(list)
    seen: set[str] = set()
    for u in offered:
        if u not in seen:
            seen.add(u)
            first_seen[split(u)[0]].append(u)
    by_host: dict[str, list[str]] = defaultdict(list)
    for u in fetched_urls:
        by_host[split(u)[0]].append(u)
    assert dict(by_host) == dict(first_seen), "per-host fetch order differs from discovery order"


def check_politeness(harness: FrontierHarness) -> None:
    last_host: dict[str, float] = {}
    last_ip: dict[str, float] = {}
    for start, u, ip in harness.fetched:
        host = split(u)[0]
        if host in last_host:
            assert start >= last_host[host] + HOST_DELAY - 1e-9
        if ip in last_ip:
            assert start >= last_ip[ip] + IP_DELAY - 1e-9
        last_host[host] = last_ip[ip] = start + 0.01


@settings(max_examples=40, deadline=None)
@given(pairs=discoveries, split_at=st.integers(0, 300))
def test_exactly_once_in_discovery_order(pairs: list[tuple[int, int]], split_at: int) -> None:
    offered = [url(h, p) for h, p in pairs]
    with tempfile.TemporaryDirectory() as tmp:
        harness = FrontierHarness(Path(tmp))
        first, later = offered[:split_at], offered[split_at:]
        harness.frontier.discover(first or offered[:1])
        if not first:
            later = offered[1:]
        harness.run(discover_during={1: later} if later else None)
        check_exactly_once_and_per_host_order(harness, (first or offered[:1]) + later)
        check_politeness(harness)
        harness.frontier.close()


@settings(max_examples=25, deadline=None)
@given(pairs=discoveries)
def test_spilling_to_the_virtualizer_keeps_order(pairs: list[tuple[int, int]]) -> None:
    offered = [url(h, p) for h, p in pairs]
    with tempfile.TemporaryDirectory() as tmp:
        # a 16-byte workbench holds about four URLs: most of the backlog goes to disk and back
        harness = FrontierHarness(Path(tmp), workbench_bytes=16)
        harness.frontier.discover(offered)
        harness.run()
        check_exactly_once_and_per_host_order(harness, offered)
        check_politeness(harness)
        stats = harness.frontier.statistics()
        if len(set(offered)) > 12:
            assert stats.distributor.to_disk > 0 and stats.distributor.from_disk == stats.distributor.to_disk
        harness.frontier.close()


class Recrawl(CrawlPolicy):
    """Drops links with /drop in them; asks for every page fetched before t=50 to be fetched again at t=100."""

    def accept_link(self, url: str, parent: str | None, context: LinkContext | None) -> str | None:
        return None if "/drop" not in url else "dropped_by_test"

    def on_fetched(self, page: FetchedPage, now: float) -> list[Revisit]:
        return [Revisit(page.url, at=100.0)] if now < 50 else []


def test_revisit_bypasses_the_sieve(tmp_path: Path) -> None:
    harness = FrontierHarness(tmp_path, policy=Recrawl(None, None))
    assert harness.frontier.wants_pages
    harness.frontier.discover([url(1, 1), "http://h1.test/drop", url(1, 1)])
    harness.run()
    assert [u for _, u, _ in harness.fetched] == [url(1, 1)]
    assert harness.frontier.statistics().drops["dropped_by_test"] == 1
    harness.frontier.fetched(FetchedPage(url(1, 1), 200, {}, b"", fetched_at=1.0), harness.now)
    harness.run()
    assert [(round(t), u) for t, u, _ in harness.fetched][1:] == [(100, url(1, 1))]


# -- the methods the engine calls, one by one ---------------------------------------------------


class FakeRules:
    """The engine's robots.txt rules, as the frontier sees them."""

    def __init__(self, crawl_delay: float | None = None) -> None:
        self.crawl_delay = crawl_delay

    def encode(self) -> bytes:
        return b""

    def allowed(self, path_query: str) -> bool:
        return True


def one_host(harness: FrontierHarness, *urls: str) -> VisitState:
    """Queue ``urls`` (one host) and resolve it; returns its visit state, READY."""
    f = harness.frontier
    f.discover(list(urls))
    f.flush()
    (vs,) = f.distribute(harness.now)
    f.resolved(vs, "10.0.0.1")
    return vs


def test_robots_txt_is_sequenced_with_the_fetch_back_off(tmp_path: Path) -> None:
    harness = FrontierHarness(tmp_path, max_fetch_retries=2)
    f = harness.frontier
    vs = one_host(harness, url(1, 1))
    assert f.acquire(0.0) is vs and f.robots_url(vs) == "http://h1.test/robots.txt"
    f.robots_redirected(vs, "/moved/robots.txt", 0.5)  # released: the next hop is polite again
    assert (vs.phase, vs.robots_hops, vs.next_fetch) == (Phase.READY, 1, 0.5 + HOST_DELAY)
    assert f.acquire(1.5) is vs and f.robots_url(vs) == "http://h1.test/moved/robots.txt"
    assert f.robots_failed(vs, 2.0, backoff=3.0) and vs.next_fetch == 2.0 + 3.0  # back-off 3, then 6
    assert f.acquire(5.0) is vs and f.robots_failed(vs, 5.0, backoff=3.0) and vs.next_fetch == 5.0 + 6.0
    assert f.acquire(11.0) is vs and not f.robots_failed(vs, 11.0, backoff=3.0)  # retries ran out: still held
    assert vs.phase is Phase.ACQUIRED
    f.robots_fetched(vs, FakeRules(crawl_delay=7.0), 1.7e9, 11.5)  # "unreachable" rules, say
    assert (vs.robots_path, vs.robots_hops, vs.retries, vs.robots_fetched) == ("/robots.txt", 0, 0, 1.7e9)
    assert vs.host_delay == 7.0 and vs.next_fetch == 11.5 + 7.0 and vs.phase is Phase.READY
    f.close()


def test_set_delays_keeps_each_hosts_crawl_delay(tmp_path: Path) -> None:
    harness = FrontierHarness(tmp_path)
    f = harness.frontier
    slow = one_host(harness, url(1, 1))
    assert f.acquire(0.0) is slow
    f.robots_fetched(slow, FakeRules(crawl_delay=3.0), 0.0, 0.0)
    fast = one_host(harness, url(2, 1))
    f.set_delays(host_delay=2.0)
    assert (slow.host_delay, fast.host_delay) == (3.0, 2.0)
    f.set_delays(host_delay=5.0, ip_delay=0.75)
    assert (slow.host_delay, fast.host_delay, f.workbench.ip_delay) == (5.0, 5.0, 0.75)
    assert one_host(harness, url(3, 1)).host_delay == 5.0  # hosts met later start with the new delay
    f.close()


def test_hand_out_sends_an_expired_address_to_be_resolved_again(tmp_path: Path) -> None:
    harness = FrontierHarness(tmp_path)
    f = harness.frontier
    vs = one_host(harness, url(1, 1), url(1, 2))
    vs.ip_expires = 10.0  # the harness's answer never expires; this one does at 10
    assert f.acquire(0.0) is vs and f.hand_out(vs, 0.0) and vs.ip_used
    f.release(vs, 0.0)
    assert f.acquire(20.0) is vs and not f.hand_out(vs, 20.0)
    assert vs.phase is Phase.RESOLVING and f.statistics().resolving == 1
    f.resolved(vs, "10.0.0.2", expires=100.0)
    assert f.acquire(20.0) is vs and f.hand_out(vs, 20.0) and vs.ip == "10.0.0.2"
    f.close()


def test_a_host_purged_while_its_address_is_asked_for_ends_its_resolution(tmp_path: Path) -> None:
    """A machine that rejoins takes back hosts the others may be resolving: the late answer is dropped."""
    harness = FrontierHarness(tmp_path)
    f = harness.frontier
    f.discover([url(1, 1), url(1, 2)])
    f.flush()
    (vs,) = f.distribute(0.0)
    assert f.statistics().resolving == 1 and not f.purged_meanwhile(vs)
    f.purge(vs, "handed_over")
    assert f.purged_meanwhile(vs)  # the answer comes: not attached (a purged host cannot be)
    assert vs.phase is Phase.PURGED and f.statistics().resolving == 0 and f.idle()
    f.close()


def test_the_distributor_deadline(tmp_path: Path) -> None:
    harness = FrontierHarness(tmp_path, sieve_flush_interval=0.5, policy=Recrawl(None, None))
    f = harness.frontier
    assert f.distributor_deadline(10.0) == 11.0  # nothing to do: look again in a second
    f.discover([url(1, 1)])  # in the sieve's bucket, none ready: a flush may be due soon
    assert f.distributor_deadline(10.0) == 10.5
    f.fetched(FetchedPage(url(1, 1), 200, {}, b"", fetched_at=0.0), 10.0)  # a revisit at 100
    f.flush()
    assert f.distributor_deadline(99.5) == 100.0  # no later than the next revisit
    f.drop("follow_filter", 3)
    f.drop("follow_filter")
    assert f.statistics().drops["follow_filter"] == 4
    f.close()


def test_top_hosts_are_those_with_the_most_pages_and_say_what_waits(tmp_path: Path) -> None:
    harness = FrontierHarness(tmp_path)
    f = harness.frontier
    f.discover([url(h, p) for h in range(4) for p in range(6)])
    fetched = {"http://h0.test": 3, "http://h1.test": 5, "http://h2.test": 0, "http://h3.test": 1}
    for _ in range(50):  # until every host is out of the sieve and resolved
        harness.step()
        if len(f.distributor.host_to_visit_state) == 4:
            break
    for scheme_authority, n in fetched.items():
        for _ in range(n):
            f.succeeded(f.distributor.host_to_visit_state[scheme_authority])
    top = f.distributor.top_hosts(2)
    assert [(host, pages) for host, pages, _ in top] == [("http://h1.test", 5), ("http://h0.test", 3)]
    for host, _, waiting in top:
        vs = f.distributor.host_to_visit_state[host]
        assert waiting == vs.queued + vs.on_disk
    assert len(f.distributor.top_hosts(10)) == 4
    f.close()


class ContextRanks(CrawlPolicy):
    """A policy that ranks by context and judges no link: the URL cache is looked up first for it."""

    ranks_urls = True
    wants_context = True

    def __init__(self) -> None:
        super().__init__(None, None)
        self.asked: list[tuple[str, str]] = []

    def priority(self, url: str, parent: str | None, context: LinkContext | None) -> int:
        assert context is not None
        self.asked.append((url, context.anchor_text))
        return 0


def test_a_remembered_link_is_a_hit_before_any_other_check_and_contexts_stay_with_their_links(tmp_path: Path) -> None:
    policy = ContextRanks()
    f = Frontier(tmp_path, FrontierSettings(sieve_flush_interval=0.0, max_urls_per_host=2), policy=policy)
    first = ["http://a.test/1", "http://a.test/2", "http://b.test/1"]
    assert f.discover(first, "http://p.test/", [LinkContext("a", "html/body/a", u) for u in first]) == 3
    f.flush()
    for vs in f.distribute(0.0):
        f.resolved(vs, "10.0.0.1")
    assert f.distributor.host_to_visit_state["http://a.test"].scheduled == 2  # a.test is full now
    # a.test/1 is remembered: a hit, though its host is full; a.test/3 is new: the host limit drops it
    again = ["http://c.test/1", "http://a.test/1", "http://b.test/2", "http://a.test/3"]
    assert f.discover(again, "http://p.test/", [LinkContext("a", "html/body/a", u) for u in again]) == 2
    assert policy.asked == [(u, u) for u in [*first, "http://c.test/1", "http://b.test/2"]]
    s = f.statistics()
    assert (s.discovered, s.cache_hits, s.dup_lookups, dict(s.drops)) == (5, 1, 6, {"host_limit": 1})
    assert f.cache.statistics().hits == 1
