"""Revisits: kept in memory up to a bound and on disk beyond it, never handed out early or twice,
across a checkpoint and a restart with another clock; once due, ahead of their host's backlog."""

from __future__ import annotations

import gc
import tempfile
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import example, given, settings

from frontier.frontier import Frontier
from frontier.page import FetchedPage
from frontier.policy import CrawlPolicy, Revisit
from frontier.revisits import RevisitSchedule
from frontier.settings import FrontierSettings
from frontier.virtualizer import WorkbenchVirtualizer
from tests.test_frontier import FrontierHarness, url


def quarters(low: int, high: int) -> st.SearchStrategy[float]:
    """Times on a grid of quarter seconds: sums of them are exact, so "due" has no rounding."""
    return st.integers(low * 4, high * 4).map(lambda n: n / 4)


@settings(max_examples=50, deadline=None)
@given(
    times=st.lists(quarters(0, 1000), min_size=1, max_size=80),
    limit=st.integers(1, 20),
    steps=st.lists(quarters(0, 10) | quarters(0, 200), min_size=1, max_size=16),
    restart_after=st.integers(0, 10),
    shift=quarters(-5000, 5000),
)
# the second revisit is on disk, due at once: its bucket is read the moment it begins
@example(times=[0.0, 0.0], limit=1, steps=[0.0], restart_after=5, shift=0.0)
# on disk across the restart, due the moment after it
@example(times=[0.0, 60.0], limit=1, steps=[1.0, 59.0], restart_after=1, shift=-100.0)
def test_revisits_come_due_in_time_exactly_once_within_memory(
    times: list[float], limit: int, steps: list[float], restart_after: int, shift: float
) -> None:
    """At each ``due(now)``: exactly the revisits whose time has come, earliest first. A restart
    moves the clock by ``shift``: every revisit keeps the wait it had left."""
    with tempfile.TemporaryDirectory() as tmp:
        disk = WorkbenchVirtualizer(Path(tmp), segment_bytes=1 << 12, fsync=False)
        schedule = RevisitSchedule(disk, memory_limit=limit, bucket_seconds=50.0)
        pending = {f"u{i}".encode(): at for i, at in enumerate(times)}
        for name, at in pending.items():
            schedule.add(name, at)
        assert len(schedule) == len(times) and schedule.on_disk == max(0, len(times) - limit)
        now, offset = 0.0, 0.0  # offset: this process's clock minus the first one's
        for i, step in enumerate(steps + [2000.0]):
            if i == restart_after:
                index, state = disk.prepare_checkpoint(), schedule.state(now)
                disk.commit_checkpoint(index)
                del disk
                gc.collect()
                disk = WorkbenchVirtualizer(Path(tmp), segment_bytes=1 << 12, fsync=False, resume_from=index)
                schedule = RevisitSchedule(disk, memory_limit=limit, bucket_seconds=50.0)
                now, offset = now + shift, offset + shift
                schedule.restore(state, now)
            now += step
            came = schedule.due(now, len(times) + 1)
            expected = [name for name, at in pending.items() if at + offset <= now]
            assert sorted(came) == sorted(expected), "a revisit came early, late or twice"
            assert [pending[name] for name in came] == sorted(pending[name] for name in came), "not earliest first"
            for name in came:
                del pending[name]
            next_time = schedule.next_time()
            assert (next_time is None) == (not pending)
            if pending:  # the distributor wakes no later than the next revisit
                assert next_time is not None and next_time <= min(pending.values()) + offset
        assert len(schedule) == 0 and disk.statistics().items == 0
        disk.close()


class Revisiting(CrawlPolicy):
    """Asks for every page fetched again ``after`` seconds later."""

    def __init__(self, after: float) -> None:
        super().__init__(None, None)
        self.after = after

    def on_fetched(self, page: FetchedPage, now: float) -> list[Revisit]:
        return [Revisit(page.url, now + self.after)]


def _page(u: str) -> FetchedPage:
    return FetchedPage(u, 200, {}, b"", fetched_at=1.7e9)  # wall clock: the policy must not use it


def test_a_due_revisit_goes_ahead_of_the_backlog_behind_a_retry(tmp_path: Path) -> None:
    harness = FrontierHarness(tmp_path, policy=Revisiting(after=5.0))
    f = harness.frontier
    f.discover([url(1, n) for n in range(6)])
    f.flush()
    for vs in f.distribute(0.0):
        f.resolved(vs, "10.0.0.1")
    vs = f.acquire(0.0)
    assert vs is not None and f.next_url(vs) == url(1, 0)
    f.release(vs, 0.01)
    f.fetched(_page(url(1, 0)), 0.01)  # again at 5.01
    vs = f.acquire(1.01)
    assert vs is not None and f.next_url(vs) == url(1, 1)
    f.failed(vs, url(1, 1), 1.02, backoff=6.0, breaks_host=False, error="read_timeout")  # retried from 7.02
    assert f.distribute(6.0) == [] and f.statistics().revisits == 0  # due: queued ahead of the backlog
    vs = f.acquire(7.02)
    assert vs is not None and [f.next_url(vs) for _ in range(3)] == [url(1, 1), url(1, 0), url(1, 2)]
    f.close()


def test_revisits_beyond_the_bound_wait_on_disk_and_survive_a_restart(tmp_path: Path) -> None:
    settings_ = FrontierSettings(fsync=False, revisits_in_memory=10, host_delay=0.0, ip_delay=0.0)
    f = Frontier(tmp_path, settings_, policy=Revisiting(after=3600.0))
    pages = [url(h, p) for h in range(5) for p in range(40)]
    for n, u in enumerate(pages):
        f.fetched(_page(u), 100.0 + n)  # each due an hour after its fetch
    stats = f.statistics()
    assert (stats.revisits, stats.disk_urls) == (200, 0)  # the 190 on disk are revisits, not backlog
    assert f.virtualizer.statistics().items == 190 and not f.idle()
    assert f.distributor_deadline(150.0) == 151.0  # nothing due within the second
    f.checkpoint(200.0, {})  # 100 s after the first fetch: 3500 s left to wait
    f.close()
    gc.collect()

    g = Frontier(tmp_path, settings_, policy=Revisiting(after=3600.0))
    g.restore(10.0)  # another process, another monotonic clock
    assert g.statistics().revisits == 200
    assert g.next_revisit() is not None and g.next_revisit() <= 10.0 + 3500.0  # type: ignore[operator]
    assert g.distribute(10.0 + 3499.0) == [] and g.statistics().revisits == 200
    due = []
    for now in (3510.0, 3520.0, 3800.0):
        for vs in g.distribute(now, budget=1000):
            g.resolved(vs, "10.0.0.1")
        due.append(200 - g.statistics().revisits)
    assert due == [1, 11, 200]  # revisit n comes due at 3510 + n, never before
    assert g.statistics().workbench.urls == 200 and g.virtualizer.statistics().items == 0
    g.close()
