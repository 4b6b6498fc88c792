"""Site-wide priority (a policy that ``ranks_urls``): lanes per host, in memory and on disk.

The property: a ranked host hands out its URLs exactly once, each time from the lane of lowest
``lane_rank`` at that moment (lower lane on a tie), first in first out within a lane, while most
of its backlog waits on disk, across a checkpoint and a crash, and while the ranks change
between two fetches. A reference model (one deque per lane) gives the expected order. Then the
example policy orders a one-host crawl, and ``Frontier.rank`` orders hosts.
"""

from __future__ import annotations

import gc
import math
import tempfile
from collections import deque
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import example, given, settings

from frontier.frontier import Frontier
from frontier.page import LinkContext
from frontier.policies.shallow_first import ShallowFirst
from frontier.policy import CrawlPolicy
from frontier.settings import FrontierSettings
from frontier.visit_state import VisitState
from tests.test_frontier import FrontierHarness

HOST = "http://h.test"


class Lanes(CrawlPolicy):
    """Lane of each URL from a table; ranks from a table the test changes as the crawl goes."""

    ranks_urls = True

    def __init__(self, lanes: dict[str, int], ranks: dict[int, float]) -> None:
        super().__init__(None, None)
        self.lanes, self.ranks = lanes, ranks

    def priority(self, url: str, parent: str | None, context: LinkContext | None) -> int:
        return self.lanes[url]

    def lane_rank(self, scheme_authority: str, lane: int) -> float:
        return self.ranks.get(lane, float(lane))


def expected_order(urls: list[str], policy: Lanes, changes: dict[int, tuple[int, float]]) -> list[str]:
    """The reference model: one FIFO per lane, the lane of lowest rank now goes next."""
    queues: dict[int, deque[str]] = {}
    for url in urls:
        queues.setdefault(policy.lanes[url], deque()).append(url)
    ranks = dict(policy.ranks)
    order = []
    for i in range(len(urls)):
        lane = min((lane for lane, q in queues.items() if q), key=lambda lane: (ranks.get(lane, float(lane)), lane))
        order.append(queues[lane].popleft())
        if i in changes:
            ranks[changes[i][0]] = changes[i][1]
    return order


class OneHost:
    """The engine's part for one ranked host, one fetch at a time, on a fake clock."""

    def __init__(self, directory: Path, policy: Lanes) -> None:
        self.directory, self.policy = directory, policy
        # a required front this large leaves a host 4 URLs in memory: the rest of its backlog goes to disk
        self.settings = FrontierSettings(host_delay=1.0, ip_delay=0.0, required_front=10**8, sieve_flush_interval=0.0,
                                         virtualizer_segment_bytes=1 << 12, fsync=False)
        self.frontier = Frontier(directory, self.settings, policy=policy)
        self.now = 0.0

    def distribute(self) -> None:
        f = self.frontier
        if f.wants_flush(self.now):
            f.flush()
            f.flush_sieve(self.now, self.now)
        for vs in f.distribute(self.now):
            f.resolved(vs, "10.0.0.1")

    def fetch_one(self) -> str | None:
        """Distribute, then fetch the next URL (waiting for politeness); None once idle."""
        f = self.frontier
        while True:
            self.distribute()
            vs = f.acquire(self.now)
            if vs is not None:
                url = f.next_url(vs)
                f.release(vs, self.now + 0.01)
                return url
            deadline = f.next_deadline()
            if deadline is None and f.idle():
                return None
            self.now = max(self.now + 0.001, deadline or 0.0)

    def crash_after_checkpoint(self) -> None:
        self.frontier.checkpoint(self.now, {})
        del self.frontier
        gc.collect()
        self.frontier = Frontier(self.directory, self.settings, policy=self.policy)
        for vs in self.frontier.restore(self.now)[0]:
            self.frontier.resolved(vs, "10.0.0.1")


LANES = st.sampled_from([0, 1, 2, 3, 255, 256, 65535])


@settings(max_examples=60, deadline=None)
@given(
    lanes=st.lists(LANES, min_size=1, max_size=80),
    changes=st.dictionaries(st.integers(0, 80), st.tuples(LANES, st.floats(-3, 3)), max_size=10),
    crash_at=st.one_of(st.none(), st.integers(0, 12)),
)
# lane 1 is all on disk when it becomes the best: it is read from there at once
@example(lanes=[0] * 6 + [1] * 3, changes={0: (1, -1.0)}, crash_at=None)
# a crash with three URLs of lane 0 in memory and four of it and two of lane 1 on disk
@example(lanes=[0] * 8 + [1] * 2, changes={}, crash_at=0)
def test_a_ranked_host_follows_the_lane_ranks_exactly_once(
    lanes: list[int], changes: dict[int, tuple[int, float]], crash_at: int | None
) -> None:
    urls = [f"{HOST}/p{i}" for i in range(len(lanes))]
    policy = Lanes(dict(zip(urls, lanes)), {3: -1.0})
    expected = expected_order(urls, policy, changes)
    with tempfile.TemporaryDirectory() as tmp:
        host = OneHost(Path(tmp), policy)
        host.frontier.discover(urls)
        fetched = []
        while (url := host.fetch_one()) is not None:
            fetched.append(url)
            i = len(fetched) - 1
            if i in changes:
                policy.ranks[changes[i][0]] = changes[i][1]
            if i == crash_at:
                host.crash_after_checkpoint()
        assert fetched == expected
        stats = host.frontier.statistics()
        assert stats.disk_urls == 0 and stats.workbench.urls == 0
        if crash_at is None:  # the counters start again with each process
            assert stats.distributor.to_disk == stats.distributor.from_disk >= len(urls) - 4
        host.frontier.close()


def test_a_checkpoint_keeps_what_goes_before_the_lanes(tmp_path: Path) -> None:
    """Out with a fetcher, waiting for a retry, due: after a crash, all three come first, in that order."""
    urls = [f"{HOST}/p{i}" for i in range(8)]
    host = OneHost(tmp_path, Lanes({u: i % 2 for i, u in enumerate(urls)}, {}))
    f = host.frontier
    f.discover(urls)
    assert host.fetch_one() == urls[0]
    host.now += 10
    host.distribute()
    vs = f.acquire(host.now)
    assert vs is not None and f.next_url(vs) == urls[2]
    f.failed(vs, urls[2], host.now, backoff=0.0, breaks_host=False, error="connect")
    f.workbench.push_due(vs, b"/again")  # as distribute does with a revisit that came due
    host.now += 10
    vs = f.acquire(host.now)
    assert vs is not None and f.next_url(vs) == urls[2]  # the retry, now out with a fetcher
    f.failed(vs, urls[2], host.now, backoff=0.0, breaks_host=False, error="connect")
    vs = f.acquire(host.now + 10)
    assert vs is not None and f.next_url(vs) == urls[2]
    f.checkpoint(host.now, {})  # urls[2] out again, "/again" due, the lanes behind
    host.crash_after_checkpoint()
    rest = [host.fetch_one() for _ in range(8)]
    assert rest == [urls[2], f"{HOST}/again", urls[4], urls[6], urls[1], urls[3], urls[5], urls[7]]
    assert host.fetch_one() is None
    host.frontier.close()


def test_a_lane_with_urls_on_disk_takes_new_ones_on_disk(tmp_path: Path) -> None:
    urls = [f"{HOST}/p{i}" for i in range(10)]
    policy = Lanes({u: 0 for u in urls}, {})
    host = OneHost(tmp_path, policy)
    host.frontier.discover(urls[:6])
    host.distribute()
    vs = host.frontier.distributor.host_to_visit_state[HOST]
    assert vs.lanes is not None and (len(vs.lanes), vs.lanes.disk) == (4, {0: 2})
    host.frontier.discover(urls[6:])
    host.distribute()
    assert (len(vs.lanes), vs.lanes.disk, vs.on_disk) == (4, {0: 6}, 6)
    assert [host.fetch_one() for _ in urls] == urls
    host.frontier.close()


def test_a_purge_forgets_every_lane_on_disk(tmp_path: Path) -> None:
    urls = [f"{HOST}/p{i}" for i in range(20)]
    host = OneHost(tmp_path, Lanes({u: i % 3 for i, u in enumerate(urls)}, {}))
    host.frontier.discover(urls)
    host.distribute()
    vs = host.frontier.distributor.host_to_visit_state[HOST]
    assert vs.on_disk == 16
    host.frontier.purge(vs, "test")
    assert host.frontier.virtualizer.statistics().items == 0 and vs.on_disk == 0
    assert host.frontier.statistics().drops["purged_test"] == 20
    host.frontier.close()


# -- the example policy over a whole crawl, and the order of hosts ----------------------------------


def test_shallow_first_orders_a_one_site_crawl(tmp_path: Path) -> None:
    site = "http://site.test"
    deep = [f"{site}/a/b/c{i}" for i in range(5)] + [f"{site}/a/b/c/d/e"]
    middle = [f"{site}/a/m{i}" for i in range(5)]
    shallow = [f"{site}/s{i}" for i in range(5)]
    mixed = [u for trio in zip(deep, middle, shallow) for u in trio] + [deep[-1]]
    harness = FrontierHarness(tmp_path, policy=ShallowFirst(ShallowFirst.Options(max_depth=4), None),
                              workbench_bytes=64)  # most of the site waits on disk
    harness.frontier.discover([f"{site}/"])
    harness.run(discover_during={1: mixed})
    fetched = [u for _, u, _ in harness.fetched]
    assert fetched == [f"{site}/"] + shallow + middle + deep[:-1]
    assert harness.frontier.statistics().drops["too_deep"] == 1  # /a/b/c/d/e: depth 5
    harness.frontier.close()


def test_rank_tells_which_host_goes_next(tmp_path: Path) -> None:
    urls = {"http://a.test/x": 5, "http://b.test/y": 1, "http://b.test/z": 7, "http://c.test/w": 3}
    policy = Lanes(urls, {})
    harness = FrontierHarness(tmp_path, policy=policy)
    f = harness.frontier
    f.discover(list(urls))
    f.flush()
    hosts = f.distribute(0.0)
    assert [vs.scheme_authority for vs in sorted(hosts, key=f.rank)] == ["http://b.test", "http://c.test", "http://a.test"]
    policy.ranks[3] = 9.0  # ranks are asked afresh: c's lane is now the worst
    assert [vs.scheme_authority for vs in sorted(hosts, key=f.rank)] == ["http://b.test", "http://a.test", "http://c.test"]
    policy.ranks[7] = -1.0  # b's other lane is now the best of all
    assert sorted(f.rank(vs) for vs in hosts) == [-1.0, 5.0, 9.0]
    f.close()


def test_a_retry_or_a_due_revisit_ranks_first(tmp_path: Path) -> None:
    f = Frontier(tmp_path, FrontierSettings(fsync=False), policy=Lanes({}, {}))
    vs = VisitState(1, "http://a.test", 1.0, ranked=True)
    assert f.rank(vs) == math.inf  # nothing queued
    f.workbench.push_lane(vs, b"/x", 4)
    assert f.rank(vs) == 4.0
    f.workbench.push_due(vs, b"/again")
    assert f.rank(vs) == -math.inf
    f.close()
