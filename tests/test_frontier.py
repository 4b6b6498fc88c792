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

from frontier.frontier import Frontier, FrontierSettings
from frontier.policy import Revisit
from frontier.urls import split

HOST_DELAY = 1.0
IP_DELAY = 0.25


class FrontierHarness:
    def __init__(self, directory: Path, **overrides: object) -> None:
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
        self.frontier = Frontier(directory, FrontierSettings(**base))  # type: ignore[arg-type]
        self.now = 0.0
        self.fetched: list[tuple[float, str, str]] = []  # (start, url, ip)

    def ip_of(self, scheme_authority: str) -> str:
        return f"10.0.0.{sum(scheme_authority.encode()) % 3}"

    def step(self, discover_during: dict[int, list[str]] | None = None) -> bool:
        """One round of the engine's loops; returns False once the frontier is idle."""
        f = self.frontier
        if f.wants_flush(self.now):
            f.sieve.flush()
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


def test_revisit_bypasses_the_sieve(tmp_path: Path) -> None:
    class Recrawl:
        name, wants_context, wants_document, ranks_urls = "recrawl", False, False, False

        def accept_link(self, url, parent, context):  # type: ignore[no-untyped-def]
            return None if "/drop" not in url else "dropped_by_test"

        def priority(self, url, parent, context):  # type: ignore[no-untyped-def]
            return 0

        def on_fetched(self, page):  # type: ignore[no-untyped-def]
            return [Revisit(page.url, at=100.0)] if page.fetched_at < 50 else []

    from frontier.page import FetchedPage

    harness = FrontierHarness(tmp_path)
    harness.frontier.policy = Recrawl()  # type: ignore[assignment]
    harness.frontier._policy_filters = True
    harness.frontier.discover([url(1, 1), "http://h1.test/drop", url(1, 1)])
    harness.run()
    assert [u for _, u, _ in harness.fetched] == [url(1, 1)]
    assert harness.frontier.statistics().drops["dropped_by_test"] == 1
    harness.frontier.fetched(FetchedPage(url(1, 1), 200, {}, b"", fetched_at=1.0))
    harness.run()
    assert [(round(t), u) for t, u, _ in harness.fetched][1:] == [(100, url(1, 1))]
