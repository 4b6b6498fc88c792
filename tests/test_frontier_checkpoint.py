"""Checkpoint and restore of the frontier across simulated kill -9s (property tests, hypothesis).

``CrashingEngine`` (a :class:`~tests.test_frontier.FrontierHarness`) plays the engine of a crawl
over a small random web: every page's links are fixed in advance, fetches may stay out with
a fetcher across other operations, ``checkpoint(now, extra)`` happens at random points, and so
does a crash: the :class:`Frontier` is dropped without ``close`` (its descriptors go back
through the garbage collector, as a dead process's would) and a new one is opened on the same
directory, restored, and driven on. A crash may also hit inside ``checkpoint``, between its
halves. The engine's side of the contract is modelled exactly:

* its archive (``log``) is the list of discovery events: the seeds, then each stored page's
  links. After a restore it re-discovers the links of every page stored after the last
  checkpoint (its WARC replay);
* it drops a URL that comes out of ``next_url`` if that URL was stored after the last
  checkpoint, and takes the host's next URL under the same token (``engine/agent.py``'s
  ``_next_allowed``); the URLs it has yet to drop go into ``extra``, so that a second crash
  after a later checkpoint still drops them (they are still queued in that checkpoint: the
  frontier cannot know they were stored, and without this they would be fetched twice).

Invariants over the whole history: every discovered URL is fetched (stored) exactly once;
nothing stored comes out of ``next_url`` again unless the skip model holds it (every URL it
holds does come out again); per-host fetch order is first-discovery order (the replay
re-enqueues post-checkpoint discoveries in their original order, so it holds across crashes
too); politeness holds across crashes, and no host or IP is fetched before restore-now + its
delay; ``extra`` comes back. Sizes run roomy and tiny (a 16-byte workbench, an 8-URL sieve
bucket, small sieve and virtualizer segments), so the sieve's aux file and ready segments and
the virtualizer's segments all cross checkpoints.
"""

from __future__ import annotations

import functools
import gc
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import NamedTuple
from unittest.mock import patch

import hypothesis.strategies as st
import pytest
from hypothesis import example, given, settings

import frontier.frontier as frontier_module
from frontier import snapshot
from frontier.frontier import Frontier
from frontier.settings import FrontierSettings
from frontier.sieve import MercatorSieve
from frontier.urls import split
from frontier.virtualizer import WorkbenchVirtualizer
from frontier.visit_state import VisitState
from tests.test_frontier import (
    HOST_DELAY,
    IP_DELAY,
    FrontierHarness,
    check_exactly_once_and_per_host_order,
    check_politeness,
    url,
)

FETCH_TIME = 0.01  # every fetch ends this long after it starts (check_politeness assumes it)


class Killed(BaseException):
    """The process dies here: nothing after this point runs (BaseException, so nothing catches it)."""


def _die(*args: object, **kwargs: object) -> None:
    raise Killed


# Where a crash inside checkpoint() strikes: the call replaced by a death, and whether the new
# checkpoint is the one a restore sees (the snapshot file's rename is the commit).
DEATHS: dict[str, tuple[object, str, bool]] = {
    "after the sieve's prepare": (WorkbenchVirtualizer, "prepare_checkpoint", False),
    "before the snapshot is written": (snapshot, "write", False),
    "before the snapshot's rename": (os, "replace", False),
    "after the snapshot's rename": (MercatorSieve, "commit_checkpoint", True),
    "after the sieve's commit": (WorkbenchVirtualizer, "commit_checkpoint", True),
}


def files_open_under(directory: Path) -> list[str]:
    """The files under ``directory`` this process holds descriptors on."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except FileNotFoundError:  # the descriptor listdir itself used
            continue
        if target.startswith(str(directory)):
            held.append(target)
    return held


# -- the random web, and the engine crawling it ---------------------------------------------

HOSTS, PAGES = 5, 25
pages = st.builds(url, st.integers(0, HOSTS - 1), st.integers(0, PAGES - 1))


class Web:
    """A small web: page (h, p) links to ``table[(7h + p) mod len(table)]``, so every page has
    links and a shrunk table is still a whole web."""

    def __init__(self, table: list[list[str]], seeds: list[str]) -> None:
        self.table, self.seeds = table, seeds

    def links(self, page: str) -> list[str]:
        if not self.table:
            return []
        host, path = split(page)
        h, p = int(host.removeprefix("http://h").removesuffix(".test")), int(path.removeprefix("/p"))
        return self.table[(7 * h + p) % len(self.table)]

    def __repr__(self) -> str:
        return f"Web({self.table!r}, {self.seeds!r})"


class CrashingEngine(FrontierHarness):
    """The engine's part around checkpoints and crashes, on a fake clock and a fixed web."""

    def __init__(self, directory: Path, web: Web, **overrides: object) -> None:
        super().__init__(directory, **overrides)
        self.directory = directory
        self.web = web
        self.unresolved: list[VisitState] = []  # hosts whose DNS lookup is under way
        self.out: list[tuple[VisitState, str, float]] = []  # fetches under way: (token, url, start)
        self.attempts: list[tuple[float, str, str]] = []  # every fetch started, stored or not
        self.offered: list[str] = []  # every URL given to discover, in order (replays too)
        self.log: list[tuple[str | None, list[str]]] = [(None, web.seeds)]  # the archive: (page, its links)
        self.stored: set[str] = set()
        self.mark = 0  # len(log) at the last checkpoint: what a restore replays starts here
        self.skip: set[str] = set()  # stored after the checkpoint resumed from (or kept in its extra), not yet dropped
        self.checkpoints = 0
        self.saved_extra: dict = {}
        self.restored_at = 0.0  # restore-now of this incarnation
        self.crashes = 0
        self.discover(web.seeds, None)

    def discover(self, links: list[str], parent: str | None) -> None:
        self.offered += links
        self.frontier.discover(links, parent)

    # -- the fetchers ---------------------------------------------------------------------

    def distribute(self, _: object = None) -> None:
        """The engine's distributor loop; the new hosts' lookups stay under way."""
        f = self.frontier
        if f.wants_flush(self.now):
            f.flush()
            f.flush_sieve(self.now, self.now)
        self.unresolved += f.distribute(self.now)

    def start(self, _: object = None) -> None:
        """Distribute, finish the lookups, and hand out every fetch allowed now."""
        f = self.frontier
        self.distribute()
        for host in self.unresolved:
            f.resolved(host, self.ip_of(host.scheme_authority))
        self.unresolved.clear()
        while (vs := f.acquire(self.now)) is not None:
            u = self.next_unstored(vs)
            if u is None:  # nothing fetched: the host's politeness clock stays where it was
                f.release(vs, self.now, host_next=vs.next_fetch)
                continue
            assert all(u != other for _, other, _ in self.out), f"{u} is out twice"
            assert vs.ip is not None
            self.out.append((vs, u, self.now))
            self.attempts.append((self.now, u, vs.ip))
            assert self.now >= self.restored_at + max(HOST_DELAY, IP_DELAY) - 1e-9 or not self.crashes, (
                f"{u} fetched at {self.now}, before restore-now {self.restored_at} + its delay"
            )

    def next_unstored(self, vs: VisitState) -> str | None:
        """The engine's ``_next_allowed``: URLs stored after the checkpoint are popped and dropped."""
        while vs.has_work:
            u = self.frontier.next_url(vs)
            if u not in self.skip:
                assert u not in self.stored, f"{u} came out again after it was stored"
                return u
            self.skip.remove(u)
        return None

    def complete(self, i: int) -> None:
        """A fetch out with a fetcher is stored: its links are discovered, then the token goes back."""
        if not self.out:
            return
        vs, u, started = self.out.pop(i % len(self.out))
        links = self.web.links(u)
        self.discover(links, u)
        self.log.append((u, links))
        self.stored.add(u)
        self.fetched.append((started, u, self.ip_of(vs.scheme_authority)))
        self.frontier.succeeded(vs)
        self.frontier.release(vs, started + FETCH_TIME)

    def fail(self, i: int) -> None:
        """A fetch out with a fetcher fails: nothing is stored, the URL waits for a retry."""
        if not self.out:
            return
        vs, u, started = self.out.pop(i % len(self.out))
        self.frontier.failed(vs, u, started + FETCH_TIME, backoff=0.5, breaks_host=False, error="connect")

    def wait(self, _: object = None) -> None:
        f = self.frontier
        deadlines = [t for t in (f.next_deadline(), f.next_revisit()) if t is not None]
        self.now = max(self.now + 0.001, min(deadlines)) if deadlines else self.now + 0.001

    def round(self) -> bool:
        """Store every fetch out, then hand out those allowed now (or wait); False once idle."""
        while self.out:
            self.complete(0)
        self.start()
        if not self.out:
            if self.frontier.idle():
                return False
            self.wait()
        return True

    def crawl(self, rounds: int) -> None:
        """Up to ``rounds`` rounds: the fetches handed out by the last one are left out."""
        for _ in range(rounds):
            if not self.round():
                return

    # -- checkpoints and crashes -----------------------------------------------------------

    def checkpoint(self, death: str | None = None) -> None:
        self.checkpoints += 1
        extra = {"checkpoint": self.checkpoints, "skip": sorted(self.skip), "at": self.now}
        survives = True
        if death is None:
            self.frontier.checkpoint(self.now, extra)
        else:
            target, name, survives = DEATHS[death]
            with patch.object(target, name, _die), pytest.raises(Killed):
                self.frontier.checkpoint(self.now, extra)
        if survives:
            self.mark, self.saved_extra = len(self.log), extra

    def crash(self, gap: float, *, close: bool = False) -> None:
        """kill -9 (or, with ``close``, a stop without a checkpoint), then a new process
        restores the frontier ``gap`` seconds later."""
        settings_ = self.frontier.settings
        self.out.clear()  # those fetches never finished: nothing was stored
        self.unresolved.clear()
        if close:
            self.frontier.close()
        del self.frontier
        gc.collect()
        assert files_open_under(self.directory) == [], "a dropped frontier kept files open"
        self.crashes += 1
        self.now += gap
        self.restored_at = self.now
        self.frontier = Frontier(self.directory, settings_)
        assert self.frontier.has_checkpoint == bool(self.saved_extra)
        to_resolve, extra = self.frontier.restore(self.now)
        assert extra == self.saved_extra
        if not self.saved_extra:
            assert to_resolve == []
        self.unresolved += to_resolve
        replay = self.log[self.mark :]
        for page, links in replay:
            self.discover(links, page)
        self.skip = set(extra.get("skip", [])) | {page for page, _ in replay if page is not None}

    def stop(self, gap: float) -> None:
        self.crash(gap, close=True)

    def die(self, death_and_gap: tuple[str, float]) -> None:
        """A crash inside checkpoint()."""
        death, gap = death_and_gap
        self.checkpoint(death)
        self.crash(gap)

    def run_to_idle(self) -> None:
        for _ in range(100_000):
            if not self.round():
                assert not self.skip, f"never came out again after the restore: {sorted(self.skip)}"
                return
        raise AssertionError("the frontier never became idle")

    def check(self) -> None:
        check_exactly_once_and_per_host_order(self, self.offered)
        check_politeness(SimpleNamespace(fetched=self.attempts))  # type: ignore[arg-type]


# -- the random schedule ------------------------------------------------------------------

webs = st.builds(Web, st.lists(st.lists(pages, max_size=5), max_size=12), st.lists(pages, min_size=1, max_size=6))
gaps = st.sampled_from([FETCH_TIME, 0.3, 2.0])  # from the crash to the restore
# (name of a CrashingEngine method, its argument)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("crawl"), st.integers(1, 30)),
        st.tuples(st.sampled_from(["distribute", "start", "wait", "checkpoint"]), st.none()),
        st.tuples(st.sampled_from(["complete", "fail"]), st.integers(0, 3)),
        st.tuples(st.sampled_from(["crash", "stop"]), gaps),
        st.tuples(st.just("die"), st.tuples(st.sampled_from(sorted(DEATHS)), gaps)),
    ),
    min_size=3,
    max_size=40,
)

class Sizes(NamedTuple):
    settings: dict[str, int]  # FrontierSettings fields
    sieve_segment_bytes: int | None


SIZES = {
    "roomy": Sizes({}, None),
    # four URLs fit in the workbench, the sieve's bucket holds 8, every sieve flush starts a
    # new ready segment, a virtualizer segment holds a few blocks: everything goes to disk
    "tiny": Sizes(dict(workbench_bytes=16, sieve_bucket_bytes=128, virtualizer_segment_bytes=256), 64),
}


@contextmanager
def sieve_segments(segment_bytes: int | None) -> Iterator[None]:
    """FrontierSettings has no knob for the sieve's ready segments; make them small anyway."""
    if segment_bytes is None:
        yield
        return
    with patch.object(frontier_module, "MercatorSieve", functools.partial(MercatorSieve, segment_bytes=segment_bytes)):
        yield


def play(web: Web, ops: list[tuple[str, object]], size: str) -> CrashingEngine:
    sizes = SIZES[size]
    with tempfile.TemporaryDirectory() as tmp, sieve_segments(sizes.sieve_segment_bytes):
        # failed fetches are retried, never given up on: every URL must end up stored
        engine = CrashingEngine(Path(tmp), web, fsync=False, max_fetch_retries=1000, **sizes.settings)
        for op, arg in ops:
            getattr(engine, op)(arg)
        engine.run_to_idle()
        engine.check()
        engine.frontier.close()
    return engine


@pytest.mark.parametrize("size", sorted(SIZES))
@settings(max_examples=60, deadline=None)
@given(web=webs, ops=operations)
# a URL out with a fetcher at the checkpoint, stored after it: dropped after the restore
@example(web=Web([[url(0, 1)]], [url(0, 0)]), ops=[("crawl", 1), ("checkpoint", None), ("complete", 0), ("crash", 0.3)])
# a URL waiting for a retry at the checkpoint: fetched after the restore
@example(web=Web([[url(0, 1)]], [url(0, 0)]), ops=[("crawl", 1), ("fail", 0), ("checkpoint", None), ("crash", 0.3)])
def test_crashes_lose_nothing_and_fetch_nothing_twice(web, ops, size) -> None:  # type: ignore[no-untyped-def]
    play(web, ops, size)


@pytest.mark.parametrize("death", sorted(DEATHS))
@settings(max_examples=12, deadline=None)
@given(web=webs, before=operations, after=operations)
def test_a_crash_inside_checkpoint_resumes_from_the_old_or_the_new_one(web, before, after, death) -> None:  # type: ignore[no-untyped-def]
    ops = [("crawl", 2), ("checkpoint", None), *before, ("start", None), ("die", (death, 0.3)), *after]
    engine = play(web, ops, "tiny")
    assert engine.crashes >= 1


def test_restore_without_a_checkpoint_returns_nothing(tmp_path: Path) -> None:
    harness = FrontierHarness(tmp_path, fsync=False)
    assert not harness.frontier.has_checkpoint
    assert harness.frontier.restore(0.0) == ([], {})
    harness.frontier.close()


# What JSON (orjson) holds: UTF-8 strings, 64-bit integers, finite floats (it writes inf and NaN as null)
_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=8)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False, allow_infinity=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=25, deadline=None)
@given(extra=st.dictionaries(_text, json_values, max_size=4))
def test_extra_comes_back_from_the_checkpoint(extra: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        Frontier(Path(tmp), FrontierSettings(fsync=False)).checkpoint(0.0, extra)  # then dropped: a crash
        gc.collect()
        frontier = Frontier(Path(tmp), FrontierSettings(fsync=False))
        assert frontier.has_checkpoint
        assert frontier.restore(1.0) == ([], extra)
        assert not frontier.has_checkpoint  # restored once
        frontier.close()


@pytest.mark.parametrize(
    ("web", "ops"),
    [
        # h1 is unknown to the checkpoint and stored just before the crash; after the restore
        # its stored URL is dropped and the next one must still wait for h1's delay
        (Web([[url(1, 0), url(1, 1)]], [url(0, 0)]), [("checkpoint", None), ("crawl", 2), ("crash", FETCH_TIME)]),
        # no checkpoint yet: the page out with a fetcher when the process died is fetched
        # again, but not before its host's delay
        (Web([], [url(0, 0)]), [("start", None), ("crash", FETCH_TIME)]),
    ],
    ids=["host new since the checkpoint", "crash before the first checkpoint"],
)
def test_politeness_holds_across_a_crash(web, ops) -> None:  # type: ignore[no-untyped-def]
    play(web, ops, "roomy")


def test_a_dropped_frontier_gives_its_files_back(tmp_path: Path) -> None:
    """What a killed process's files look like to the next one: nobody holds them."""
    harness = FrontierHarness(tmp_path, workbench_bytes=16, fsync=False)
    harness.frontier.discover([url(0, page) for page in range(20)])
    harness.step()  # four URLs to the workbench, the rest to the virtualizer
    harness.frontier.checkpoint(harness.now, {})  # which writes them to a segment file
    assert harness.frontier.statistics().disk_urls > 0
    del harness.frontier
    gc.collect()
    assert files_open_under(tmp_path) == []


@pytest.mark.parametrize(
    "ops",
    [
        # a process that resumed from a checkpoint and stops without taking one resumes from it again
        [("crawl", 3), ("checkpoint", None), ("crawl", 3), ("crash", 0.3), ("crawl", 20), ("stop", 0.3)],
        # with no checkpoint at all, reopening is like a crash before the first one (close()
        # once checkpointed the sieve and the virtualizer alone: the URLs in the workbench were
        # lost, and those on disk went to whichever new host got their visit state's id)
        [("crawl", 2), ("stop", 0.3)],
    ],
    ids=["after a restore", "never checkpointed"],
)
def test_close_without_a_checkpoint_resumes_from_the_last_one(ops) -> None:  # type: ignore[no-untyped-def]
    web = Web([[url(0, page) for page in range(p, p + 5)] for p in range(0, 25, 5)], [url(0, 0), url(1, 0)])
    play(web, ops, "tiny")
