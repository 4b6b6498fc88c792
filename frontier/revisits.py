"""Pending revisits: what the crawl policy asked to fetch again, kept until it comes due.

:class:`RevisitSchedule` holds each revisit (a canonical URL and the instant ``at`` on the
frontier's clock) until ``due(now)`` hands it to the distributor, which queues it ahead of
its host's backlog. Up to ``memory_limit`` revisits live in a heap in memory; beyond that,
each new one goes to disk, into the workbench virtualizer under a reserved negative key per
time bucket of ``bucket_seconds`` (the hosts' keys are positive), so a recrawl of millions
of pages keeps memory bounded. A bucket is read back whole into the heap when its first
instant comes, so a revisit is never handed out before its time, and one stored on disk no
later than one kept in memory would be.

Times on disk are kept relative to ``base``, and the checkpoint records ``base`` and each
revisit in memory as the time left to wait, because a monotonic instant means nothing to
another process: after a restore every revisit still waits what it had left. The buckets'
items are the virtualizer's, made durable by the same checkpoint.

Reads no clock (``now`` is an argument) and does no I/O but through the virtualizer.
"""

from __future__ import annotations

import heapq
import itertools
import math
import struct
from typing import Any

from frontier.virtualizer import WorkbenchVirtualizer

MEMORY_LIMIT = 100_000
BUCKET_SECONDS = 60.0
_KEY_BASE = -(1 << 62)  # bucket b is the virtualizer's key _KEY_BASE + b: negative for any b in ±2**61
_OFFSET = struct.Struct("<d")  # an item on disk: its time after base, then the URL


class RevisitSchedule:
    """Revisits by due time. Invariants: ``len`` counts those in memory and on disk;
    ``_buckets`` holds each bucket with items on disk exactly once, with their count."""

    def __init__(self, virtualizer: WorkbenchVirtualizer, *, memory_limit: int = MEMORY_LIMIT,
                 bucket_seconds: float = BUCKET_SECONDS) -> None:
        self.virtualizer = virtualizer
        self.memory_limit = memory_limit
        self.bucket_seconds = bucket_seconds
        self.base = 0.0  # the frontier's clock at offset 0 of the items on disk
        self._heap: list[tuple[float, int, bytes]] = []
        self._seq = itertools.count()
        self._buckets: dict[int, int] = {}  # bucket → revisits of it on disk
        self._starts: list[int] = []  # the same buckets, a heap, to find the first
        self._on_disk = 0
        self._seen = -math.inf  # the latest ``now`` given to ``due``: buckets begun by then were read

    def __len__(self) -> int:
        return len(self._heap) + self._on_disk

    @property
    def on_disk(self) -> int:
        return self._on_disk

    def add(self, url: bytes, at: float) -> None:
        """Schedule a fetch of ``url`` at ``at``; ValueError if ``at`` is no finite time."""
        if not math.isfinite(at):
            raise ValueError(f"a revisit of {url!r} at {at}: expected a finite time")
        bucket = math.floor((at - self.base) / self.bucket_seconds)
        if len(self._heap) < self.memory_limit or self._start(bucket) <= self._seen:
            heapq.heappush(self._heap, (at, next(self._seq), url))
            return
        self.virtualizer.append(_KEY_BASE + bucket, _OFFSET.pack(at - self.base) + url)
        if bucket not in self._buckets:
            self._buckets[bucket] = 0
            heapq.heappush(self._starts, bucket)
        self._buckets[bucket] += 1
        self._on_disk += 1

    def next_time(self) -> float | None:
        """When the next revisit may come due: the earliest in memory, or the start of the first bucket."""
        times = []
        if self._heap:
            times.append(self._heap[0][0])
        if self._starts:
            times.append(self._start(self._starts[0]))
        return min(times) if times else None

    def due(self, now: float, limit: int) -> list[bytes]:
        """Up to ``limit`` URLs whose time has come, earliest first."""
        self._seen = max(self._seen, now)
        while self._starts and self._start(self._starts[0]) <= now:
            self._read(heapq.heappop(self._starts))
        heap = self._heap
        out: list[bytes] = []
        while heap and heap[0][0] <= now and len(out) < limit:
            out.append(heapq.heappop(heap)[2])
        return out

    def _start(self, bucket: int) -> float:
        return self.base + bucket * self.bucket_seconds

    def _read(self, bucket: int) -> None:
        """Move a bucket's revisits from disk to the heap."""
        count = self._buckets.pop(bucket)
        items = self.virtualizer.dequeue(_KEY_BASE + bucket, count)
        assert len(items) == count, f"revisit bucket {bucket}: {len(items)} items on disk, {count} counted"
        self._on_disk -= count
        for item in items:
            (offset,) = _OFFSET.unpack_from(item)
            heapq.heappush(self._heap, (self.base + offset, next(self._seq), item[_OFFSET.size :]))

    # -- checkpoints ---------------------------------------------------------------------

    def state(self, now: float) -> dict[str, Any]:
        """What a checkpoint keeps (JSON): times as what is left to wait after ``now``."""
        return {
            "base": self.base - now,
            "bucket_seconds": self.bucket_seconds,
            "memory": [[at - now, url.decode("latin-1")] for at, _, url in self._heap],
            "buckets": sorted(self._buckets.items()),
        }

    def restore(self, state: dict[str, Any], now: float) -> None:
        """Take back a checkpoint's :meth:`state` in a process whose clock reads ``now``."""
        self.base = now + state["base"]
        self.bucket_seconds = state["bucket_seconds"]
        for wait, url in state["memory"]:
            heapq.heappush(self._heap, (now + wait, next(self._seq), url.encode("latin-1")))
        for bucket, count in state["buckets"]:
            self._buckets[bucket] = count
            heapq.heappush(self._starts, bucket)
            self._on_disk += count
