"""The workbench virtualizer (T22): per-host FIFOs on disk, byte-exact, none lost or duplicated.

A hypothesis state machine runs random appends, dequeues, removals, flushes, compactions,
checkpoints, clean reopens and simulated kills against a model ``dict[int, deque[bytes]]``,
with segments of a few hundred bytes so that segment turnover, compaction and oversized
blocks happen in every run. Separate tests pin down memory per key, crash recovery with
torn files, corruption detection and the automatic reclamation of space.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
import tracemalloc
from collections import deque
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from frontier.virtualizer import CorruptQueueError, WorkbenchVirtualizer

KEYS = st.sampled_from([0, 1, 2, 3, 1 << 40, -3])
ITEMS = st.one_of(st.binary(max_size=40), st.binary(min_size=200, max_size=700))
SMALL = {"segment_bytes": 400, "buffer_bytes": 120, "fsync": False}


def kill(v: WorkbenchVirtualizer) -> None:
    """What kill -9 leaves behind: the files as the OS has them, the write buffer gone."""
    for fd in v._segments.fds.values():
        os.close(fd)
    v._segments.fds.clear()


def expected_dequeue(queue: deque[bytes], max_items: int, max_bytes: int | None) -> list[bytes]:
    out: list[bytes] = []
    used = 0
    while queue and len(out) < max_items:
        if max_bytes is not None and out and used + len(queue[0]) > max_bytes:
            break
        used += len(queue[0])
        out.append(queue.popleft())
    return out


class VirtualizerMachine(RuleBasedStateMachine):
    @initialize()
    def open(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="virtualizer-test-"))
        self.v = WorkbenchVirtualizer(self.folder, **SMALL)
        self.model: dict[int, deque[bytes]] = {}
        self.counts = {"appended": 0, "dequeued": 0, "removed": 0}
        self.saved = (copy.deepcopy(self.model), dict(self.counts))  # as of the last checkpoint

    @rule(key=KEYS, item=ITEMS)
    def append(self, key: int, item: bytes) -> None:
        self.v.append(key, item)
        self.model.setdefault(key, deque()).append(item)
        self.counts["appended"] += 1

    @rule(key=KEYS, items=st.lists(ITEMS, max_size=30))
    def append_many(self, key: int, items: list[bytes]) -> None:
        self.v.append_many(key, iter(items))
        if items:
            self.model.setdefault(key, deque()).extend(items)
        self.counts["appended"] += len(items)

    @rule(keys=st.lists(KEYS, min_size=2, max_size=6, unique=True), rounds=st.integers(1, 8),
          size=st.integers(0, 30))
    def interleave(self, keys: list[int], rounds: int, size: int) -> None:
        """Several hosts spilling at once: their blocks share segments."""
        for r in range(rounds):
            for key in keys:
                self.append(key, b"%d:%d:" % (key, r) + b"u" * size)

    @rule(key=KEYS, max_items=st.integers(0, 12), max_bytes=st.none() | st.integers(0, 300))
    def dequeue(self, key: int, max_items: int, max_bytes: int | None) -> None:
        got = self.v.dequeue(key, max_items, max_bytes)
        assert got == expected_dequeue(self.model.get(key, deque()), max_items, max_bytes)
        self.counts["dequeued"] += len(got)

    @rule(key=KEYS)
    def remove(self, key: int) -> None:
        dropped = self.v.remove(key)
        assert dropped == len(self.model.pop(key, ()))
        self.counts["removed"] += dropped

    @rule()
    def flush(self) -> None:
        self.v.flush()
        assert self.v.statistics().buffered_items == 0

    @rule(ratio=st.sampled_from([0.75, 1.0]))
    def compact(self, ratio: float) -> None:
        self.v.compact(ratio)
        s = self.v.statistics()
        if ratio == 1.0:
            assert s.live_bytes == s.disk_bytes

    @rule()
    def checkpoint(self) -> None:
        self.v.checkpoint()
        self.saved = (copy.deepcopy(self.model), dict(self.counts))

    @rule()
    def close_and_reopen(self) -> None:
        self.v.close()
        assert not list(self.folder.glob("*.tmp"))
        self.v = WorkbenchVirtualizer(self.folder, **SMALL)
        self.saved = (copy.deepcopy(self.model), dict(self.counts))

    @rule()
    def kill_and_reopen(self) -> None:
        kill(self.v)
        self.v = WorkbenchVirtualizer(self.folder, **SMALL)
        self.model, counts = copy.deepcopy(self.saved)
        self.counts = dict(counts)

    @precondition(lambda self: any(self.model.values()))
    @rule()
    def crash_copy_matches_checkpoint(self) -> None:
        """A copy of the directory taken now (a kill at this instant) opens as the checkpoint."""
        snapshot = self.folder.with_name(self.folder.name + "-copy")
        shutil.copytree(self.folder, snapshot)
        try:
            other = WorkbenchVirtualizer(snapshot, **SMALL)
            model, counts = self.saved
            for key, queue in model.items():
                assert other.dequeue(key, 10**6) == list(queue)
            assert other.statistics().items == 0
            assert other.statistics().appended == counts["appended"]
            other.close()
        finally:
            shutil.rmtree(snapshot)

    @invariant()
    def agrees_with_the_model(self) -> None:
        if not hasattr(self, "v"):
            return
        v, s = self.v, self.v.statistics()
        total = sum(map(len, self.model.values()))
        assert s.items == total
        assert (s.appended, s.dequeued, s.removed) == (
            self.counts["appended"], self.counts["dequeued"], self.counts["removed"])
        assert s.appended == s.dequeued + s.removed + s.items
        for key, queue in self.model.items():
            assert v.count(key) == len(queue)
            assert (key in v) == bool(queue)
        assert v.keys_with_data == sum(1 for q in self.model.values() if q)
        assert 0 <= s.live_bytes <= s.disk_bytes
        # Memory: one slot per key with data, never a structure per item (the buffer aside).
        assert len(v._slot_of) == v.keys_with_data
        assert len(v._keys) <= 6 and len(v._staged) <= v.keys_with_data
        assert s.buffered_items <= 120 // 4 + 1
        assert repr(v).startswith("<WorkbenchVirtualizer keys=")

    def teardown(self) -> None:
        if not hasattr(self, "v"):
            return
        try:
            for key, queue in self.model.items():
                assert self.v.dequeue(key, 10**6) == list(queue)
            s = self.v.statistics()
            assert s.items == 0 and s.keys == 0 and s.live_bytes == 0
            self.v.close()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


VirtualizerMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestVirtualizer = VirtualizerMachine.TestCase


def test_memory_does_not_grow_with_items(tmp_path: Path) -> None:
    """After a flush, 10× the items costs no more Python memory: it is all on disk."""
    v = WorkbenchVirtualizer(tmp_path, segment_bytes=64 << 20, fsync=False)
    item = b"/some/path?query=1".ljust(60, b"x")

    def grow(per_key: int) -> int:
        for _ in range(per_key):
            for key in range(50):
                v.append(key, item)
        v.flush()
        return tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        grow(1)
        base = tracemalloc.get_traced_memory()[0]
        small = grow(200) - base
        large = grow(2000) - base
    finally:
        tracemalloc.stop()
    assert v.statistics().items == 50 * 2201
    assert large - small < 20_000, (small, large)  # 2000 × 50 × 60 B = 6 MB went to disk
    assert (len(v._slot_of), len(v._keys), len(v._staged)) == (50, 50, 0)
    v.close()


def test_kill_after_checkpoint_restores_the_checkpoint_and_ignores_torn_files(tmp_path: Path) -> None:
    v = WorkbenchVirtualizer(tmp_path, segment_bytes=1024, buffer_bytes=200)
    for i in range(300):
        v.append(i % 7, b"before-%d" % i)
    v.checkpoint()
    for i in range(300):  # after the checkpoint: appends, dequeues, removals, compaction
        v.append(i % 5, b"after-%d" % i)
    for key in range(7):
        v.dequeue(key, 20)
    v.remove(3)
    v.compact(1.0)
    kill(v)
    # Debris a kill can leave: a half-written index, a torn block, an unlisted segment.
    (tmp_path / "index.tmp").write_bytes(b"half an index")
    last = max(tmp_path.glob("*.seg"))
    with open(last, "ab") as f:
        f.write(b"WVQ1 torn")
    (tmp_path / "7fffff.seg").write_bytes(b"\0" * 100)
    again = WorkbenchVirtualizer(tmp_path, segment_bytes=1024, buffer_bytes=200)
    for key in range(7):
        assert again.dequeue(key, 10**6) == [b"before-%d" % i for i in range(key, 300, 7)]
    assert again.statistics().items == 0
    assert not (tmp_path / "index.tmp").exists() and not (tmp_path / "7fffff.seg").exists()
    again.close()


def test_a_directory_never_checkpointed_opens_empty(tmp_path: Path) -> None:
    v = WorkbenchVirtualizer(tmp_path, segment_bytes=1024)
    v.append_many(1, [b"a", b"b"])
    v.flush()
    kill(v)
    again = WorkbenchVirtualizer(tmp_path, segment_bytes=1024)
    assert again.statistics().items == 0 and 1 not in again
    assert not list(tmp_path.glob("*.seg"))
    again.close()


def test_close_and_reopen_restores_queues_exactly(tmp_path: Path) -> None:
    v = WorkbenchVirtualizer(tmp_path, segment_bytes=4096)
    big = os.urandom(100_000)  # larger than a segment and than a block's payload cap
    v.append_many(5, [b"x"] * 3000)  # more than a block's 1024 items
    v.append(5, big)
    v.append(-1, b"")
    assert v.dequeue(5, 1000) == [b"x"] * 1000
    v.close()
    with pytest.raises(ValueError):
        v.append(1, b"closed")
    v = WorkbenchVirtualizer(tmp_path, segment_bytes=4096)
    assert (v.count(5), v.count(-1)) == (2001, 1)
    assert v.dequeue(5, 3000, max_bytes=10) == [b"x"] * 10
    assert v.dequeue(5, 3000) == [b"x"] * 1990 + [big]
    assert v.dequeue(-1, 1, max_bytes=0) == [b""]
    v.close()


def test_the_byte_budget_never_lets_buffered_items_jump_the_disk(tmp_path: Path) -> None:
    v = WorkbenchVirtualizer(tmp_path, buffer_bytes=1 << 20)
    v.append_many(1, [b"a" * 10, b"B" * 500])
    v.flush()
    v.append(1, b"c")  # buffered, behind the 500-byte item on disk
    assert v.dequeue(1, 10, max_bytes=100) == [b"a" * 10]
    assert v.dequeue(1, 10, max_bytes=100) == [b"B" * 500]  # over budget, but one item is always given
    assert v.dequeue(1, 10, max_bytes=0) == [b"c"]
    assert 1 not in v
    v.close()


def test_corrupt_block_raises_rather_than_returning_garbage(tmp_path: Path) -> None:
    v = WorkbenchVirtualizer(tmp_path)
    v.append_many(9, [b"hello world"] * 3)
    v.close()
    segment = next(tmp_path.glob("*.seg"))
    data = bytearray(segment.read_bytes())
    data[-1] ^= 0xFF
    segment.write_bytes(bytes(data))
    v = WorkbenchVirtualizer(tmp_path)
    with pytest.raises(CorruptQueueError):
        v.dequeue(9, 3)
    kill(v)


def test_consumed_segments_are_deleted_and_garbage_compacted(tmp_path: Path) -> None:
    """FIFO use frees whole segments; a slow key pinning old segments triggers compaction."""
    v = WorkbenchVirtualizer(tmp_path, segment_bytes=2048, buffer_bytes=256, fsync=False)
    for round_ in range(40):
        for key in range(8):
            v.append_many(key, [b"%d-%d-%d" % (key, round_, i) for i in range(10)])
        for key in range(1, 8):  # key 0 is slow: it keeps its oldest blocks alive
            assert len(v.dequeue(key, 10)) == 10
        s = v.statistics()
        assert s.disk_bytes <= 2 * s.live_bytes + 2 * 2048 + 512, s
    s = v.statistics()
    assert s.compactions > 0 and s.items == 400
    assert v.dequeue(0, 10**6) == [b"0-%d-%d" % (r, i) for r in range(40) for i in range(10)]
    assert v.statistics().disk_bytes == 0 and not list(tmp_path.glob("*.seg"))
    v.close()


def test_retired_segments_survive_until_the_next_checkpoint(tmp_path: Path) -> None:
    v = WorkbenchVirtualizer(tmp_path, segment_bytes=512, buffer_bytes=64)
    v.append_many(1, [bytes([i]) * 100 for i in range(20)])
    v.checkpoint()
    files = set(tmp_path.glob("*.seg"))
    assert v.dequeue(1, 20) == [bytes([i]) * 100 for i in range(20)]
    assert v.statistics().retired_bytes > 0 and set(tmp_path.glob("*.seg")) == files
    v.checkpoint()
    assert v.statistics().retired_bytes == 0 and not list(tmp_path.glob("*.seg"))
    v.close()
