"""The sieve's guarantee G3 and its crash semantics, and the URL cache's bounds (T6–T10).

A model (first-enqueue order, what is known, where the reader is) runs beside a sieve with a
tiny bucket, so one example crosses many flushes, segments and reopenings. Crashes are
simulated by dropping the sieve without ``close`` (its written frames are in the files, as
after a kill -9), by copying the directory in the middle of a flush, by cutting files at
arbitrary bytes, and once by a real SIGKILL of a child process.
"""

from __future__ import annotations

import io
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import tracemalloc
from collections import deque
from pathlib import Path

import hypothesis.strategies as st
import numpy as np
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import frontier.sieve as sieve_module
import frontier.sieve_merge as merge_module
from frontier.sieve import SLOT_BYTES, MercatorSieve, SieveCorrupted, fingerprint
from frontier.sieve_merge import merge_bucket
from frontier.url_cache import UrlCache, cache_bytes, capacity_for

ROOT = Path(__file__).resolve().parent.parent
FAST = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def url(i: int) -> bytes:
    return b"http://host%d.test/page/%d" % (i % 7, i)


def open_sieve(directory: Path, slots: int = 3, frame_urls: int = 1, segment_bytes: int = 64) -> MercatorSieve:
    return MercatorSieve(
        directory, bucket_bytes=SLOT_BYTES * slots, frame_urls=frame_urls, segment_bytes=segment_bytes, fsync=False
    )


def drain(sieve: MercatorSieve) -> list[bytes]:
    sieve.flush()
    return sieve.dequeue(1 << 30)


# -- G3 against a model ------------------------------------------------------------------------


class SieveMachine(RuleBasedStateMachine):
    """Random enqueues, dequeues, flushes, checkpoints, reopenings and crashes, against a model."""

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="sieve-test-"))
        self.known: set[bytes] = set()
        self.ready: list[bytes] = []  # every URL that passed the sieve, in order
        self.read = 0  # how many of them were dequeued
        self.checkpointed_read = 0
        self.pending: list[bytes] = []

    @initialize(slots=st.integers(1, 6), segment_bytes=st.sampled_from([1, 64, 1 << 20]))
    def start(self, slots: int, segment_bytes: int) -> None:
        self.slots, self.segment_bytes = slots, segment_bytes
        self.sieve = self.reopen_sieve()

    def reopen_sieve(self) -> MercatorSieve:
        return open_sieve(self.directory, self.slots, frame_urls=1, segment_bytes=self.segment_bytes)

    def model_flush(self) -> None:
        for u in self.pending:
            if u not in self.known:
                self.known.add(u)
                self.ready.append(u)
        self.pending = []

    @rule(i=st.integers(0, 30), pass_fp=st.booleans())
    def enqueue(self, i: int, pass_fp: bool) -> None:
        self.sieve.enqueue(url(i), fingerprint(url(i)) if pass_fp else None)
        self.pending.append(url(i))
        if len(self.pending) >= self.slots:
            self.model_flush()

    @rule(k=st.integers(0, 5))
    def dequeue(self, k: int) -> None:
        got = self.sieve.dequeue(k)
        assert got == self.ready[self.read : self.read + k]
        self.read += len(got)

    @rule()
    def flush(self) -> None:
        assert self.sieve.flush() == len({u for u in self.pending if u not in self.known})
        self.model_flush()

    @rule()
    def checkpoint(self) -> None:
        self.sieve.checkpoint()
        self.checkpointed_read = self.read

    @rule()
    def close_and_reopen(self) -> None:
        self.sieve.close()
        self.checkpointed_read = self.read
        self.sieve = self.reopen_sieve()

    @rule()
    def crash_and_reopen(self) -> None:
        """Like kill -9: every frame is written (frame_urls=1); the read position reverts."""
        del self.sieve
        self.read = self.checkpointed_read
        self.sieve = self.reopen_sieve()

    @invariant()
    def counts_agree(self) -> None:
        if hasattr(self, "sieve"):
            assert self.sieve.known_count == len(self.known)
            assert self.sieve.pending_count == len(self.pending)
            assert self.sieve.ready_count == len(self.ready) - self.read
            assert self.sieve.statistics().ready == self.sieve.ready_count

    def teardown(self) -> None:
        if hasattr(self, "sieve"):
            self.sieve.close()
        shutil.rmtree(self.directory, ignore_errors=True)


TestSieveMachine = SieveMachine.TestCase
TestSieveMachine.settings = settings(max_examples=25, stateful_step_count=40, deadline=None)


@settings(FAST, max_examples=40)
@given(
    repeats=st.lists(st.integers(1, 50), min_size=1, max_size=30),
    seed=st.integers(0, 2**32),
    slots=st.integers(4, 40),
    dequeue_every=st.integers(1, 200),
)
def test_each_url_once_in_first_enqueue_order(
    tmp_path_factory: pytest.TempPathFactory, repeats: list[int], seed: int, slots: int, dequeue_every: int
) -> None:
    """T6, T7: M URLs each enqueued k ∈ 1..50 times, shuffled, across many flushes."""
    stream = [url(i) for i, k in enumerate(repeats) for _ in range(k)]
    random.Random(seed).shuffle(stream)
    sieve = open_sieve(tmp_path_factory.mktemp("s"), slots, frame_urls=7)
    out: list[bytes] = []
    for n, u in enumerate(stream, 1):
        sieve.enqueue(u)
        if n % dequeue_every == 0:
            out += sieve.dequeue(3)
    out += drain(sieve)
    assert out == list(dict.fromkeys(stream))
    assert sieve.statistics().flushes >= len(stream) // slots
    sieve.close()


def test_known_urls_stay_known_after_reopen(tmp_path: Path) -> None:
    """T8: close, reopen, enqueue the earlier URLs again: none is emitted."""
    with open_sieve(tmp_path, 5) as sieve:
        for i in range(100):
            sieve.enqueue(url(i))
        assert drain(sieve) == [url(i) for i in range(100)]
    with open_sieve(tmp_path, 5) as sieve:
        assert sieve.known_count == 100
        for i in range(150):
            sieve.enqueue(url(i))
        assert drain(sieve) == [url(i) for i in range(100, 150)]


def test_reopen_continues_pending_bucket_and_read_position(tmp_path: Path) -> None:
    with open_sieve(tmp_path, slots=10, frame_urls=1000) as sieve:
        for i in range(25):  # two flushes, five URLs left in the bucket (in the RAM frame)
            sieve.enqueue(url(i))
        assert sieve.dequeue(7) == [url(i) for i in range(7)]
    with open_sieve(tmp_path, slots=10) as sieve:
        assert (sieve.pending_count, sieve.ready_count, sieve.known_count) == (5, 13, 20)
        assert drain(sieve) == [url(i) for i in range(7, 25)]
        assert sieve.statistics().dequeued == 25


# -- the merge, with tiny chunks and ranges ------------------------------------------------------


@FAST
@given(
    store=st.sets(st.integers(0, 2**64 - 1), max_size=60),
    bucket=st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 40), min_size=1, max_size=80),
    chunk=st.integers(1, 9),
    data=st.data(),
)
def test_merge_matches_a_set_model(
    monkeypatch: pytest.MonkeyPatch, store: set[int], bucket: list[int], chunk: int, data: st.DataObject
) -> None:
    bucket += data.draw(st.lists(st.sampled_from(sorted(store)), max_size=20)) if store else []
    bucket = data.draw(st.permutations(bucket))
    monkeypatch.setattr(merge_module, "CHUNK", chunk)
    monkeypatch.setattr(merge_module, "RANGES_ABOVE", data.draw(st.sampled_from([0, 10, 1 << 20])))
    dst = io.BytesIO()
    src = io.BytesIO(np.array(sorted(store), dtype="<u8").tobytes())
    new = merge_bucket(np.array(bucket, dtype=np.uint64), src, len(store), dst)
    seen = set(store)
    expected = []
    for fp in bucket:
        expected.append(fp not in seen)
        seen.add(fp)
    assert new.tolist() == expected
    assert np.frombuffer(dst.getvalue(), dtype="<u8").tolist() == sorted(seen)


def test_sixteen_range_flush_with_chunked_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(merge_module, "CHUNK", 1000)
    monkeypatch.setattr(merge_module, "RANGES_ABOVE", 100)
    rng = random.Random(7)
    stream = [url(rng.randrange(20_000)) for _ in range(30_000)]
    sieve = MercatorSieve(tmp_path, bucket_bytes=SLOT_BYTES * 4000, frame_urls=100, fsync=False)
    out = []
    for u in stream:
        sieve.enqueue(u)
        out += sieve.dequeue(1) if rng.random() < 0.1 else []
    out += drain(sieve)
    assert out == list(dict.fromkeys(stream))
    sieve.close()


def test_flush_memory_is_bounded_by_the_bucket(tmp_path: Path) -> None:
    """A flush's temporaries fit in the 8 B per slot the budget leaves beside the bucket, plus
    the store chunks it streams (at most three of ``CHUNK`` fingerprints alive at once)."""
    slots = 100_000
    sieve = MercatorSieve(tmp_path, bucket_bytes=SLOT_BYTES * slots, fsync=False)
    for round in range(2):
        for i in range(slots - 1):
            sieve.enqueue(url(round * 1_000_000 + i % 70_000))
        chunks = 3 * 8 * min(sieve.known_count, merge_module.CHUNK)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            sieve.flush()
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
        assert peak <= (SLOT_BYTES - 8) * slots + chunks, (round, peak)
    assert sieve.known_count == 140_000
    sieve.close()


# -- crashes ------------------------------------------------------------------------------------


def check_recovery(copy: Path, checkpointed_out: list[bytes], written: set[bytes], enqueued: set[bytes]) -> None:
    """The copy reopens; nothing dequeued before the checkpoint comes out again, and every URL
    whose frame was written (all of them, with ``frame_urls=1``) is either out before the checkpoint or comes out now."""
    sieve = open_sieve(copy, slots=4)
    rest = drain(sieve)
    sieve.close()
    assert len(rest) == len(set(rest))
    assert not set(rest) & set(checkpointed_out)
    assert written <= set(rest) | set(checkpointed_out)
    assert set(rest) <= enqueued


@settings(FAST, max_examples=20)
@given(
    ops=st.lists(st.tuples(st.sampled_from("eeeedfc"), st.integers(0, 40)), min_size=1, max_size=30),
    slots=st.integers(1, 6),
)
def test_snapshots_taken_anywhere_recover(tmp_path_factory: pytest.TempPathFactory, ops: list, slots: int) -> None:
    """Copy the directory of a live sieve after every step and inside flushes (around each rename
    and after each ready frame): every copy reopens cleanly with checkpointed data intact."""
    directory = tmp_path_factory.mktemp("live")
    snapshots: list[tuple[Path, list[bytes], set[bytes]]] = []
    state: dict = {"out": [], "enq": set(), "live": []}

    def snapshot() -> None:
        copy = directory.parent / f"{directory.name}-{len(snapshots)}"
        shutil.copytree(directory, copy)
        snapshots.append((copy, list(state["out"]), set(state["enq"])))

    real_replace, real_frame = os.replace, sieve_module.write_ready_frame

    def replace(a: os.PathLike, b: os.PathLike) -> None:
        snapshot()
        real_replace(a, b)
        if Path(b).name == "state.json":  # the checkpoint is made
            state["out"] = list(state["live"])
        snapshot()

    def write_ready_frame(*args):  # type: ignore[no-untyped-def]
        end = real_frame(*args)
        snapshot()
        return end

    sieve = open_sieve(directory, slots, frame_urls=1, segment_bytes=80)
    sieve_module.os.replace, sieve_module.write_ready_frame = replace, write_ready_frame  # type: ignore[assignment]
    try:
        for op, i in ops:
            if op == "e":
                state["enq"].add(url(i))
                sieve.enqueue(url(i))
            elif op == "d":
                state["live"] += sieve.dequeue(i % 4)
            elif op == "f":
                sieve.flush()
            else:
                sieve.checkpoint()
            snapshot()
    finally:
        sieve_module.os.replace, sieve_module.write_ready_frame = real_replace, real_frame  # type: ignore[assignment]
    for copy, checkpointed_out, written in snapshots:
        check_recovery(copy, checkpointed_out, written, state["enq"])
    del sieve


def build_closed_sieve(directory: Path) -> tuple[list[bytes], set[bytes]]:
    """A closed sieve with URLs in the store, two ready segments half read, and a bucket in aux."""
    sieve = open_sieve(directory, slots=20, frame_urls=4, segment_bytes=300)
    for i in range(70):
        sieve.enqueue(url(i))
    out = sieve.dequeue(15)
    sieve.close()
    return out, {url(i) for i in range(70)}


@settings(FAST, max_examples=50)
@given(where=st.floats(0, 1), garbage=st.binary(max_size=40), name=st.sampled_from(["aux", "ready", "store", "state"]))
def test_cut_or_garbled_files_reopen_cleanly(
    tmp_path_factory: pytest.TempPathFactory, where: float, garbage: bytes, name: str
) -> None:
    """A file cut at any byte, then maybe followed by garbage: aux and ready lose only what
    was cut; store and state are only ever replaced whole, so damage there is reported."""
    directory = tmp_path_factory.mktemp("cut")
    out, enqueued = build_closed_sieve(directory)
    path = {
        "aux": directory / "aux",
        "store": directory / "store",
        "state": directory / "state.json",
        "ready": max(directory.glob("ready.*")),
    }[name]
    data = path.read_bytes()
    damaged = data[: int(where * len(data))] + garbage
    path.write_bytes(damaged)
    if name in ("store", "state") and damaged != data:
        with pytest.raises(SieveCorrupted):
            open_sieve(directory).close()
        return
    sieve = open_sieve(directory, slots=4)
    rest = drain(sieve)
    sieve.close()
    assert len(rest) == len(set(rest)) and not set(rest) & set(out) and set(rest) <= enqueued
    if name == "state" or damaged[: len(data)] == data:  # untouched, or only garbage after it
        assert set(out) | set(rest) == enqueued


def test_garbled_ready_frame_is_skipped_and_counted(tmp_path: Path) -> None:
    out, _ = build_closed_sieve(tmp_path)
    path = min(tmp_path.glob("ready.*"))
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # a payload byte of the last frame of the segment being read
    path.write_bytes(bytes(data))
    sieve = open_sieve(tmp_path)
    rest = drain(sieve)
    assert sieve.statistics().corrupt_frames == 1 and sieve.ready_count == 0
    assert not set(rest) & set(out) and len(rest) < 55
    sieve.close()


CHILD = """
import sys
from frontier.sieve import MercatorSieve
sieve = MercatorSieve(sys.argv[1], bucket_bytes=16 * 97, frame_urls=16, segment_bytes=4096)
i = 0
while True:
    sieve.enqueue(b"http://h%d.test/%d" % (i % 13, i))
    i += 1
    if i % 50 == 0:
        got = sieve.dequeue(20)
        sieve.checkpoint()
        print(i, len(got), sieve.statistics().dequeued, flush=True)
"""


def test_kill_9_loses_nothing_checkpointed(tmp_path: Path) -> None:
    """A child enqueues, dequeues and checkpoints until SIGKILL; the directory then resumes."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path)], stdout=subprocess.PIPE, cwd=ROOT, text=True
    )
    assert child.stdout is not None
    lines = [child.stdout.readline() for _ in range(random.randrange(20, 40))]
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    enqueued, _, dequeued = (int(x) for x in lines[-1].split())  # as of the last checkpoint seen
    sieve = open_sieve(tmp_path)
    assert sieve.statistics().dequeued >= dequeued
    start = sieve.statistics().dequeued
    rest = drain(sieve)
    sieve.close()
    expected = [b"http://h%d.test/%d" % (i % 13, i) for i in range(start, start + len(rest))]
    assert rest == expected  # the URLs are all distinct, so the output is the input, in order
    assert start + len(rest) >= enqueued


def test_statistics_and_repr(tmp_path: Path) -> None:
    sieve = open_sieve(tmp_path, slots=4, segment_bytes=1)
    for i in range(10):
        sieve.enqueue(url(i % 6))
    stats = sieve.statistics()
    assert (stats.known, stats.pending, stats.ready, stats.flushes, stats.bucket_slots) == (6, 2, 6, 2, 4)
    assert (stats.last_flush_urls, stats.last_flush_new) == (4, 2)
    assert stats.store_bytes == 64 + 8 * 6 and stats.segments == 2 and stats.bytes_on_disk > stats.store_bytes
    assert repr(sieve).startswith("<MercatorSieve") and "known=6 pending=2/4 ready=6 flushes=2" in repr(sieve)
    sieve.dequeue(6)
    sieve.checkpoint()
    assert sieve.statistics().segments == 1  # the consumed segment is gone
    sieve.close()
    assert "closed" in repr(sieve)
    with pytest.raises(ValueError):
        sieve.dequeue(1)


# -- the URL cache ---------------------------------------------------------------------------------


@settings(deadline=None)
@given(picks=st.lists(st.integers(0, 300), max_size=600), max_bytes=st.integers(cache_bytes(1), 1 << 16),
       hit_first=st.booleans())
def test_cache_matches_a_fifo_model(picks: list[int], max_bytes: int, hit_first: bool) -> None:
    """``add`` alone, or ``hit`` then ``add`` on a miss (the frontier's order when nothing judges links)."""
    cache = UrlCache(max_bytes)
    fifo: deque[int] = deque()
    for p in picks:
        fp = xxhash.xxh3_64_intdigest(b"%d" % p)
        new = fp not in fifo
        if hit_first:
            assert cache.hit(fp) is not new
        if not hit_first or new:
            assert cache.add(fp) is new
        if new:
            fifo.append(fp)
            if len(fifo) > cache.capacity:
                fifo.popleft()
    stats = cache.statistics()
    assert stats.hits + stats.misses == len(picks) and stats.size == len(fifo) <= stats.capacity


@settings(deadline=None)
@given(picks=st.lists(st.integers(0, 2**64 - 1), max_size=300).flatmap(lambda xs: st.lists(st.sampled_from(xs or [0]))))
def test_cache_never_says_new_twice_within_capacity(picks: list[int]) -> None:
    cache = UrlCache(cache_bytes(len(set(picks)) or 1))
    assert cache.capacity >= len(set(picks))
    assert [cache.add(p) for p in picks] == [p not in picks[:i] for i, p in enumerate(picks)]


def test_cache_capacity_is_computed_from_bytes() -> None:
    for max_bytes in (cache_bytes(1), 10_000, 1 << 20, 64 << 20):
        capacity = capacity_for(max_bytes)
        assert cache_bytes(capacity) <= max_bytes < cache_bytes(capacity + 1)
    assert capacity_for(64 << 20) == 524_287
    with pytest.raises(ValueError):
        UrlCache(100)


def test_cache_memory_stays_within_its_budget() -> None:
    """Measured with tracemalloc while fresh fingerprints churn through a full cache."""
    max_bytes = 1 << 20
    tracemalloc.start()
    try:
        cache = UrlCache(max_bytes)
        for i in range(5 * cache.capacity):
            cache.add(xxhash.xxh3_64_intdigest(b"%d" % i))
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(cache) == cache.capacity and peak <= max_bytes, (current, peak)
