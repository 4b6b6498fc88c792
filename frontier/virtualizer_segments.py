"""The workbench virtualizer's segment files: which exist, their accounts, and appending to them.

:class:`Segments` owns the ``*.seg`` files of one virtualizer directory: their descriptors,
sizes and live bytes, their logical order, which ones the last checkpoint needs, and their
deletion. :class:`SegmentWriter` appends blocks to a run of fresh segments. What the blocks
hold, and which key's list points where, is :mod:`frontier.virtualizer`'s; the byte formats
are :mod:`frontier.virtualizer_files`'. The ``index`` file is not touched here.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable
from pathlib import Path

from frontier.virtualizer_files import (
    MAX_SEGMENT_ID,
    OFFSET_MASK,
    SHIFT,
    CorruptQueueError,
    patch_next,
    patch_next_in,
    pwrite_all,
    read_block,
    read_block_header,
)

_WRITE_CHUNK = 1 << 20  # a writer's buffer is written out at this size


class Segments:
    """The segment files of one directory and their accounts.

    Invariants between calls: ``fds``, ``size`` and ``live`` hold the same segments, those a
    key's list may point into (during a compaction, its copies too before they join
    ``order``); ``disk`` and ``live_total`` are the sums of ``size`` and ``live``. A segment
    the last checkpoint lists (``pinned``) keeps its file until the next checkpoint: dropped
    before that, it waits in ``retired``.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.fds: dict[int, int] = {}
        self.size: dict[int, int] = {}
        self.live: dict[int, int] = {}  # bytes of blocks not yet fully consumed
        self.order: list[int] = []  # the logical order: every key's list runs front to back in it
        self.next_segment = 1
        self.disk = 0
        self.live_total = 0
        self.dirty: set[int] = set()  # written or patched since the last checkpoint
        self.pinned: set[int] = set()  # listed by the last checkpoint
        self.retired: dict[int, int] = {}  # pinned, dropped: deleted at the next checkpoint (their sizes)

    def path(self, segment: int) -> Path:
        return self.directory / f"{segment:08x}.seg"

    def restore(self, listed: array[int]) -> None:
        """Take the segments a checkpoint lists as (segment, size, live) triples, in order:
        delete every other segment file and cut the listed ones back to their recorded size."""
        recorded = {listed[i]: (listed[i + 1], listed[i + 2]) for i in range(0, len(listed), 3)}
        for path in self.directory.glob("*.seg"):
            try:
                segment = int(path.stem, 16)
            except ValueError:
                continue
            if segment not in recorded:
                path.unlink()
        for segment, (size, live) in recorded.items():
            try:
                fd = os.open(self.path(segment), os.O_RDWR)
            except FileNotFoundError:
                raise CorruptQueueError(f"segment {segment:08x} listed by the index is missing") from None
            self.fds[segment] = fd
            self.order.append(segment)
            actual = os.fstat(fd).st_size
            if actual < size:
                raise CorruptQueueError(f"segment {segment:08x} is shorter than the index says")
            if actual > size:
                os.ftruncate(fd, size)  # appends made after the checkpoint
            self.size[segment], self.live[segment] = size, live
            self.disk += size
            self.live_total += live
        self.pinned = set(self.order)

    def listing(self) -> array[int]:
        """(segment, size, live) of each segment in order, flat, as :meth:`restore` takes them."""
        listed = array("q")
        for segment in self.order:
            listed.extend((segment, self.size[segment], self.live[segment]))
        return listed

    # -- blocks -------------------------------------------------------------------------------

    def read_block(self, position: int, key: int) -> tuple[int, array[int], bytes]:
        return read_block(self.fds[position >> SHIFT], position, key)

    def read_block_header(self, position: int, key: int) -> tuple[int, int, int]:
        return read_block_header(self.fds[position >> SHIFT], position, key)

    def patch(self, position: int, next_position: int) -> None:
        """Point the block at ``position``, on disk, to ``next_position``."""
        segment = position >> SHIFT
        patch_next(self.fds[segment], position, next_position)
        self.dirty.add(segment)

    def consume(self, position: int, size: int) -> int:
        """The block at ``position`` is fully consumed; returns its segment's live bytes left."""
        segment = position >> SHIFT
        live = self.live[segment] - size
        self.live[segment] = live
        self.live_total -= size
        return live

    # -- segment files --------------------------------------------------------------------------

    def new(self) -> int:
        """Create an empty segment file (not yet in ``order``); returns its number."""
        segment = self.next_segment
        if segment > MAX_SEGMENT_ID:
            raise OverflowError("out of segment numbers")
        self.next_segment += 1
        self.fds[segment] = os.open(self.path(segment), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self.size[segment] = self.live[segment] = 0
        self.dirty.add(segment)
        return segment

    def grow(self, segment: int, size: int) -> None:
        """Count a block of ``size`` bytes appended to ``segment``."""
        self.size[segment] += size
        self.live[segment] += size
        self.disk += size
        self.live_total += size

    def write_at(self, segment: int, data: bytearray, offset: int) -> None:
        pwrite_all(self.fds[segment], data, offset)
        self.dirty.add(segment)

    def remove(self, segment: int) -> None:
        """Take ``segment`` out of the order and drop it."""
        self.order.remove(segment)
        self.drop(segment)

    def drop(self, segment: int) -> None:
        """Forget a segment no list points into; keep its file if the checkpoint needs it."""
        os.close(self.fds.pop(segment))
        size = self.size.pop(segment)
        self.live_total -= self.live.pop(segment)
        self.disk -= size
        self.dirty.discard(segment)
        if segment in self.pinned:
            self.retired[segment] = size
        else:
            self.path(segment).unlink()

    def choose_victims(self, target_ratio: float) -> list[int]:
        """The shortest prefix of the logical order whose replacement reaches the target."""
        live, disk = self.live_total, self.disk
        if disk == 0 or live >= target_ratio * disk:
            return []
        victims: list[int] = []
        freed = copied = 0
        for segment in self.order:
            victims.append(segment)
            freed += self.size[segment]
            copied += self.live[segment]
            if live >= target_ratio * (disk - freed + copied):
                break
        return victims

    def replace(self, victims: list[int], copies: list[int]) -> None:
        """``copies`` (new segments) take the place of ``victims`` (a prefix of the order)."""
        chosen = set(victims)
        self.order[:] = copies + [segment for segment in self.order if segment not in chosen]
        for segment in victims:
            self.drop(segment)

    # -- checkpoints ----------------------------------------------------------------------------

    def sync(self, fsync: bool) -> None:
        """Make the segments written since the last checkpoint durable (if ``fsync``)."""
        if fsync:
            for segment in self.dirty:
                os.fsync(self.fds[segment])
        self.dirty.clear()

    def checkpointed(self) -> None:
        """A checkpoint listing ``order`` is on disk: delete what only earlier ones needed."""
        for segment in self.retired:
            self.path(segment).unlink(missing_ok=True)
        self.retired.clear()
        self.pinned = set(self.order)

    def close(self) -> None:
        """Give the descriptors back; write nothing."""
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


class SegmentWriter:
    """Appends blocks to a run of fresh segments through a buffer of about 1 MiB.

    A block goes to a new segment when it would take the current one past ``segment_bytes``
    (a larger block gets a segment of its own). ``on_new_segment(old, new)`` tells the owner
    that segment ``old`` (0 if none) is sealed and where ``new`` goes in the logical order.
    A block still in the buffer is patched in the buffer.
    """

    def __init__(self, segments: Segments, segment_bytes: int, on_new_segment: Callable[[int, int], None]) -> None:
        self._segments = segments
        self._segment_bytes = segment_bytes
        self._on_new_segment = on_new_segment
        self.segment = 0  # 0: none open
        self._end = 0  # logical end of the segment (file + buffer)
        self._written = 0  # file offset where the buffer starts
        self._buffer = bytearray()

    def append(self, block: bytes) -> int:
        """Append ``block``; returns its position."""
        if self.segment == 0 or (self._end and self._end + len(block) > self._segment_bytes):
            old = self.segment
            self.seal()
            self.segment = self._segments.new()
            self._on_new_segment(old, self.segment)
        position = self.segment << SHIFT | self._end
        self._buffer += block
        self._end += len(block)
        self._segments.grow(self.segment, len(block))
        if len(self._buffer) >= _WRITE_CHUNK:
            self.drain()
        return position

    def patch(self, position: int, next_position: int) -> bool:
        """Point the block at ``position`` to ``next_position`` if it is still in the buffer."""
        at = (position & OFFSET_MASK) - self._written
        if position >> SHIFT != self.segment or at < 0:
            return False
        patch_next_in(self._buffer, at, next_position)
        return True

    def drain(self) -> None:
        """Write the buffer out (to the OS's cache)."""
        if self._buffer:
            self._segments.write_at(self.segment, self._buffer, self._written)
            self._written = self._end
            self._buffer.clear()

    def seal(self) -> None:
        """Write out the buffer and stop appending to the current segment."""
        self.drain()
        self.segment = self._end = self._written = 0
