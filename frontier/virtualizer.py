"""The workbench virtualizer: one on-disk FIFO of path+query byte strings per visit state.

Step 2 of ARCHITECTURE.md. When the workbench is over its byte budget, the distributor
appends a host's further URLs here (``append(vs.id, path_query)``), and refills the visit
state from here (``dequeue``) when its in-memory queue empties. Per-host order is exact:
what comes out of a key is what went in, in the same order, byte for byte. This is
BUbiNG's later ``ByteArrayDiskQueues`` (a log-structured set of files), which replaced the
2013 paper's k virtual queues (nadine §4 #7).

Invariants:

* **RAM is O(keys), not O(items).** Per key with data: a dict entry and one row of four
  integers (head, items already taken from the head block, tail, count on disk). Per
  segment file: three integers. The only per-item memory is the write buffer, which holds
  at most ``buffer_bytes`` of not-yet-written items and is empty after ``flush()``.
* Every item appended is returned by ``dequeue`` exactly once, or counted by ``remove``:
  ``appended == dequeued + removed + items`` (``statistics()``).
* Nothing in this module reads a clock or touches the network.

On disk, a directory of segment files and an ``index``: each key's items are a linked list
of *blocks* in the segments, the index lists every key's head and tail as of the last
checkpoint (:mod:`frontier.virtualizer_files` has the formats).

Space is reclaimed two ways. A segment whose blocks have all been consumed is deleted at
once (the cheap path, the common one under FIFO use). When live bytes fall below half the
disk bytes, ``compact`` copies the live blocks of the *oldest* segments, key by key, into
new segments and deletes the old ones, until live bytes are at least 75% of disk bytes.
Segments are kept in a logical order, and new copies take the place of the segments they
replace, at the front, so every key's list runs front to back in that order; the blocks of
a key inside the oldest segments are therefore always a prefix of its list, and
compaction never has to find a predecessor. Amortised, compaction copies at most about two
bytes per byte consumed; it runs inside the ``dequeue`` or ``remove`` call that crosses the
threshold, and one pass copies at most the live bytes of the segments it replaces.

A full disk: a write that finds no room raises ``store.errors.StoreFull``; the object then
refuses every call but ``close`` (its lists may point at blocks that never reached the disk),
and the last checkpoint stays intact, to be reopened once there is room again.

Crash semantics: ``checkpoint()`` flushes, fsyncs the segments it wrote, and atomically
replaces ``index`` with every key's (head, skip, tail, count) and the segment list.
``close()`` checkpoints. Opening a directory restores the state **as of the last
checkpoint, exactly**: segments written after it are deleted, segments it lists are
truncated to the lengths it recorded, and segments emptied or compacted since are kept on
disk until the next checkpoint so that it stays valid. Items appended after the last
checkpoint are dropped, and items dequeued after it come back. This matches the rest of
the frontier, which restores its sieve and visit states (and their ``on_disk`` counts)
from the same checkpoint: scanning for later appends would duplicate URLs the restored
sieve emits again. A directory that never saw a checkpoint opens empty. Blocks are
validated (magic, key, CRC) when read; a mismatch raises :class:`CorruptQueueError`, it is
never returned as data.
"""

from __future__ import annotations

import contextlib
import sys
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from frontier.virtualizer_files import (
    BLOCK_HEADER,
    BLOCK_ITEMS,
    BLOCK_PAYLOAD,
    SHIFT,
    CorruptQueueError,
    IndexCounters,
    chunks,
    decode_index,
    encode_block,
    encode_index,
)
from frontier.virtualizer_segments import Segments, SegmentWriter
from store.durable import replace_file
from store.errors import StoreFull, full_when_no_room

__all__ = ["COMPACT_BELOW", "COMPACT_TO", "CorruptQueueError", "VirtualizerStatistics", "WorkbenchVirtualizer"]

COMPACT_BELOW = 0.5  # compact when live bytes < this × disk bytes ...
COMPACT_TO = 0.75  # ... until live bytes ≥ this × disk bytes


@dataclass(frozen=True, slots=True)
class VirtualizerStatistics:
    keys: int  # keys with at least one item
    items: int  # items held, on disk or in the write buffer
    buffered_items: int  # of which still in the write buffer
    live_bytes: int  # bytes of on-disk blocks not yet fully consumed
    disk_bytes: int  # bytes of the segments in use (live + garbage)
    retired_bytes: int  # emptied segments kept until the next checkpoint
    segments: int
    compactions: int
    appended: int
    dequeued: int
    removed: int


class WorkbenchVirtualizer:
    """One on-disk FIFO of byte strings per integer key (a visit state's id).

    Invariant: for each key, the items on disk (a linked list of blocks from ``head``,
    skipping ``skip`` items of the head block, ``count`` items in all) followed by the
    items in the write buffer are exactly the items appended and not yet dequeued or
    removed, in append order. Not thread-safe: one owner (the distributor) calls it.

    * ``segment_bytes``: size of a segment file (a larger block gets a segment of its own).
      Space is reclaimed a segment at a time, and compaction waits until the disk holds
      more than one segment.
    * ``buffer_bytes``: the write buffer's bound, counted as on-disk bytes (item + 4); a
      flush writes it out when full. Python holds about 1.6× that for 60-byte items.
    * ``fsync``: whether ``checkpoint()`` forces segments and index to stable storage.
      Without it a checkpoint survives the process being killed but not a power loss.
    """

    def __init__(self, directory: Path, *, segment_bytes: int = 64 << 20, buffer_bytes: int = 4 << 20,
                 fsync: bool = True, resume_from: bytes | None = None) -> None:
        if segment_bytes < BLOCK_HEADER + 4:
            raise ValueError(f"segment_bytes={segment_bytes} is too small")
        self.directory = Path(directory)
        self._segment_bytes = segment_bytes
        self._buffer_bytes = buffer_bytes
        self._fsync = fsync
        self._closed = False
        self._failed: StoreFull | None = None  # a write found no room: refuse everything but close
        # Per key: a slot in four parallel arrays (and the key itself, for checkpoints).
        self._slot_of: dict[int, int] = {}
        self._keys = array("q")
        self._head = array("q")
        self._skip = array("q")
        self._tail = array("q")
        self._count = array("q")  # items on disk
        self._free: list[int] = []
        # The write buffer: items not yet on disk, per key, in order.
        self._staged: dict[int, list[bytes]] = {}
        self._staged_items = 0
        self._staged_bytes = 0
        self._disk_items = 0
        self._segments = Segments(self.directory)
        self._appended = self._dequeued = self._removed = self._compactions = 0
        self.directory.mkdir(parents=True, exist_ok=True)
        self._load(resume_from)
        self._writer = SegmentWriter(self._segments, segment_bytes, self._new_active_segment)
        self._copier: SegmentWriter | None = None  # the compaction's writer, while it runs

    # -- the public surface ------------------------------------------------------------

    def append(self, key: int, item: bytes) -> None:
        """Queue ``item`` after everything already queued under ``key``."""
        if type(item) is not bytes:
            item = bytes(item)
        self._staging(key).append(item)
        self._count_staged(1, len(item))

    def append_many(self, key: int, items: Iterable[bytes]) -> None:
        """Queue ``items``, in order, after everything already queued under ``key``."""
        batch = [item if type(item) is bytes else bytes(item) for item in items]
        if batch:
            self._staging(key).extend(batch)
            self._count_staged(len(batch), sum(map(len, batch)))

    def _staging(self, key: int) -> list[bytes]:
        """The write-buffer list of ``key`` (created, with its slot, on first use)."""
        if self._closed or self._failed is not None:
            self._refuse()
        staged = self._staged.get(key)
        if staged is None:
            if key not in self._slot_of:
                self._new_slot(key)
            staged = self._staged[key] = []
        return staged

    def _count_staged(self, items: int, payload: int) -> None:
        """Account for items just buffered; write the buffer out once it is full."""
        self._staged_items += items
        self._staged_bytes += payload + 4 * items
        self._appended += items
        if self._staged_bytes >= self._buffer_bytes:
            self.flush()

    def dequeue(self, key: int, max_items: int, max_bytes: int | None = None) -> list[bytes]:
        """Take up to ``max_items`` items of ``key`` from the front, in order.

        Stops before an item that would take the total past ``max_bytes``, but always
        returns at least one item if ``key`` has any (and ``max_items`` ≥ 1).
        """
        if self._closed or self._failed is not None:
            self._refuse()
        slot = self._slot_of.get(key)
        if slot is None or max_items <= 0:
            return []
        budget = sys.maxsize if max_bytes is None else max_bytes
        out: list[bytes] = []
        used = self._take_from_disk(slot, key, max_items, budget, out) if self._count[slot] else 0
        staged = self._staged.get(key)
        if staged and len(out) < max_items and self._count[slot] == 0:  # the buffer comes after the disk
            taken = size = 0
            for item in staged:
                if taken == max_items - len(out) or (out or taken) and used + size + len(item) > budget:
                    break
                size += len(item)
                taken += 1
            out += staged[:taken]
            del staged[:taken]
            self._staged_items -= taken
            self._staged_bytes -= size + 4 * taken
            if not staged:
                del self._staged[key]
        if self._count[slot] == 0 and key not in self._staged:
            self._free_slot(key, slot)
        self._dequeued += len(out)
        self._maybe_compact()
        return out

    def count(self, key: int) -> int:
        slot = self._slot_of.get(key)
        if slot is None:
            return 0
        staged = self._staged.get(key)
        return self._count[slot] + (len(staged) if staged else 0)

    def __contains__(self, key: object) -> bool:
        return key in self._slot_of

    @property
    def keys_with_data(self) -> int:
        return len(self._slot_of)

    def remove(self, key: int) -> int:
        """Drop every item of ``key`` (a purged host); return how many were dropped."""
        if self._closed or self._failed is not None:
            self._refuse()
        slot = self._slot_of.get(key)
        if slot is None:
            return 0
        dropped = 0
        staged = self._staged.pop(key, None)
        if staged:
            dropped = len(staged)
            self._staged_items -= dropped
            self._staged_bytes -= sum(map(len, staged)) + 4 * dropped
        left, position, skip = self._count[slot], self._head[slot], self._skip[slot]
        dropped += left
        while left > 0:
            next_position, n, size = self._segments.read_block_header(position, key)
            left -= n - skip
            skip = 0
            self._release(position, size)
            position = next_position
        self._disk_items -= self._count[slot]
        self._count[slot] = 0
        self._free_slot(key, slot)
        self._removed += dropped
        self._maybe_compact()
        return dropped

    def flush(self) -> None:
        """Write the write buffer to the segment files (the OS's cache, not yet durable)."""
        if self._closed or self._failed is not None:
            self._refuse()
        with self._writing():
            self._write_staged()

    def _write_staged(self) -> None:
        writer = self._writer
        for key, items in self._staged.items():
            slot = self._slot_of[key]
            previous = self._tail[slot] if self._count[slot] else 0
            for chunk in chunks(items):
                position = writer.append(encode_block(key, chunk))
                if previous:
                    self._patch(previous, position)
                else:
                    self._head[slot] = position
                    self._skip[slot] = 0
                previous = position
            self._tail[slot] = previous
            self._count[slot] += len(items)
            self._disk_items += len(items)
        self._staged.clear()
        self._staged_items = self._staged_bytes = 0
        writer.drain()

    def checkpoint(self) -> None:
        """Make the current state the one that reopening the directory restores."""
        self.commit_checkpoint(self.prepare_checkpoint())

    def prepare_checkpoint(self) -> bytes:
        """First half of a checkpoint shared with other state: write and sync the data, and
        return the index, which the caller persists with its own state.

        Until :meth:`commit_checkpoint`, nothing the previous checkpoint needs is deleted, so
        reopening with ``resume_from=`` the returned index restores this instant and reopening
        without it restores the previous checkpoint.
        """
        if self._closed or self._failed is not None:
            self._refuse()
        self.flush()
        with self._writing():  # a file system may report the lack of room only now
            self._segments.sync(self._fsync)
        return self._index_bytes()

    def commit_checkpoint(self, index_bytes: bytes) -> None:
        """Second half: the caller has persisted ``index_bytes``; make it the directory's own
        index and delete the segments only earlier checkpoints needed."""
        # a failed write leaves the previous index; the caller's copy of this one is what counts
        replace_file(self.directory / "index", index_bytes, fsync=self._fsync, suffix=".tmp")
        self._segments.checkpointed()

    def close(self, *, checkpoint: bool = True) -> None:
        """Checkpoint and release the files. Further calls raise ``ValueError``.

        ``checkpoint=False`` leaves the last checkpoint as the state to resume from (the
        caller owns checkpoints through :meth:`prepare_checkpoint`)."""
        if self._closed:
            return
        if checkpoint:
            self.checkpoint()
        self._segments.close()
        self._closed = True

    def __del__(self) -> None:
        # Like a crash (as the sieve's): give the descriptors back, write nothing.
        if not getattr(self, "_closed", True):
            if hasattr(self, "_segments"):
                self._segments.close()

    def compact(self, target_ratio: float = COMPACT_TO) -> bool:
        """Copy live blocks out of the oldest segments until live/disk ≥ ``target_ratio``.

        ``compact(1.0)`` rewrites everything. Returns whether any segment was replaced.
        Runs by itself when live bytes fall below half the disk bytes.
        """
        if self._closed or self._failed is not None:
            self._refuse()
        victims = self._segments.choose_victims(target_ratio)
        if not victims:
            return False
        with self._writing():
            self._replace(victims)
        self._compactions += 1
        return True

    def _replace(self, victims: list[int]) -> None:
        """Copy the live blocks of ``victims`` into new segments, then drop them."""
        chosen = set(victims)
        if self._writer.segment in chosen:
            self._writer.seal()
        copies: list[int] = []
        self._copier = copier = SegmentWriter(self._segments, self._segment_bytes, lambda old, new: copies.append(new))
        try:
            heads = sorted(
                (self._head[slot], slot)
                for slot in self._slot_of.values()
                if self._count[slot] and self._head[slot] >> SHIFT in chosen
            )
            for _, slot in heads:
                self._copy_prefix(slot, chosen, copier)
            copier.seal()
        finally:
            self._copier = None
        self._segments.replace(victims, copies)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Writes that find no room raise ``StoreFull``, and from then on every call but ``close``
        does too: the lists in memory may point at blocks that never reached the disk. The last
        checkpoint on disk is intact (reopening truncates and deletes what came after it)."""
        try:
            with full_when_no_room(self.directory):
                yield
        except StoreFull as e:
            self._failed = e
            raise

    def _refuse(self) -> NoReturn:
        if self._closed:
            raise ValueError("the virtualizer is closed")
        assert self._failed is not None
        raise self._failed

    def statistics(self) -> VirtualizerStatistics:
        return VirtualizerStatistics(
            keys=len(self._slot_of),
            items=self._disk_items + self._staged_items,
            buffered_items=self._staged_items,
            live_bytes=self._segments.live_total,
            disk_bytes=self._segments.disk,
            retired_bytes=sum(self._segments.retired.values()),
            segments=len(self._segments.order),
            compactions=self._compactions,
            appended=self._appended,
            dequeued=self._dequeued,
            removed=self._removed,
        )

    def __repr__(self) -> str:
        s = self.statistics()
        ratio = s.live_bytes / s.disk_bytes if s.disk_bytes else 1.0
        return (
            f"<WorkbenchVirtualizer keys={s.keys} items={s.items} buffered={s.buffered_items} "
            f"live={s.live_bytes}B disk={s.disk_bytes}B ({ratio:.0%} live) segments={s.segments} "
            f"compactions={s.compactions}{' closed' if self._closed else ''}>"
        )

    # -- reading and releasing blocks -------------------------------------------------

    def _take_from_disk(self, slot: int, key: int, max_items: int, budget: int, out: list[bytes]) -> int:
        used = 0
        left = self._count[slot]
        while left and len(out) < max_items:
            position, skip = self._head[slot], self._skip[slot]
            next_position, lengths, block = self._segments.read_block(position, key)
            n = len(lengths)
            at = BLOCK_HEADER + 4 * n + (sum(lengths[:skip]) if skip else 0)
            i, stop = skip, min(n, skip + left, skip + max_items - len(out))
            while i < stop:
                length = lengths[i]
                if out and used + length > budget:
                    break
                out.append(block[at:at + length])
                at += length
                used += length
                i += 1
            left -= i - skip
            if i == n or left == 0:
                self._release(position, len(block))
                self._head[slot] = next_position if left else 0
                self._skip[slot] = 0
            else:
                self._skip[slot] = i
            if i < stop:  # over the byte budget
                break
        self._disk_items -= self._count[slot] - left
        self._count[slot] = left
        return used

    def _release(self, position: int, size: int) -> None:
        """A block is fully consumed; delete its segment if that was its last live block."""
        if self._segments.consume(position, size) == 0:
            segment = position >> SHIFT
            if segment == self._writer.segment:
                self._writer.seal()  # its buffer is empty outside flush(); the next append opens a new one
            self._segments.remove(segment)

    # -- writing ---------------------------------------------------------------------

    def _patch(self, position: int, next_position: int) -> None:
        """Point the block at ``position`` to ``next_position``."""
        if self._writer.patch(position, next_position):
            return
        if self._copier is not None and self._copier.patch(position, next_position):
            return
        self._segments.patch(position, next_position)

    def _new_active_segment(self, old: int, new: int) -> None:
        self._segments.order.append(new)
        if old and self._segments.live[old] == 0:  # consumed while it was being written
            self._segments.remove(old)

    # -- compaction ------------------------------------------------------------------

    def _maybe_compact(self) -> None:
        segments = self._segments
        if segments.disk > self._segment_bytes and segments.live_total < COMPACT_BELOW * segments.disk:
            self.compact(COMPACT_TO)

    def _copy_prefix(self, slot: int, chosen: set[int], copier: SegmentWriter) -> None:
        """Copy the blocks of one key that lie in ``chosen`` (a prefix of its list)."""
        key = self._keys[slot]
        position, skip, left = self._head[slot], self._skip[slot], self._count[slot]
        first = last = 0
        batch: list[bytes] = []
        size = 0
        while left and position >> SHIFT in chosen:
            next_position, lengths, block = self._segments.read_block(position, key)
            at = BLOCK_HEADER + 4 * len(lengths) + (sum(lengths[:skip]) if skip else 0)
            for i in range(skip, len(lengths)):
                if batch and (len(batch) == BLOCK_ITEMS or size + lengths[i] > BLOCK_PAYLOAD):
                    last = self._copy_block(key, batch, last, copier)
                    first = first or last
                    batch, size = [], 0
                batch.append(block[at:at + lengths[i]])
                size += lengths[i]
                at += lengths[i]
            left -= len(lengths) - skip
            skip = 0
            position = next_position if left else 0
        if batch:
            last = self._copy_block(key, batch, last, copier)
            first = first or last
        self._head[slot], self._skip[slot] = first, 0
        if left:
            self._patch(last, position)
        else:
            self._tail[slot] = last

    def _copy_block(self, key: int, batch: list[bytes], previous: int, copier: SegmentWriter) -> int:
        position = copier.append(encode_block(key, batch))
        if previous:
            self._patch(previous, position)
        return position

    # -- slots, checkpoints, reopening -----------------------------------------------

    def _new_slot(self, key: int) -> int:
        if self._free:
            slot = self._free.pop()
            self._keys[slot] = key
            self._head[slot] = self._skip[slot] = self._tail[slot] = self._count[slot] = 0
        else:
            slot = len(self._keys)
            for column, value in ((self._keys, key), (self._head, 0), (self._skip, 0), (self._tail, 0),
                                  (self._count, 0)):
                column.append(value)
        self._slot_of[key] = slot
        return slot

    def _free_slot(self, key: int, slot: int) -> None:
        del self._slot_of[key]
        self._free.append(slot)

    def _index_bytes(self) -> bytes:
        rows = array("q")
        for key, slot in self._slot_of.items():
            rows.extend((key, self._head[slot], self._skip[slot], self._tail[slot], self._count[slot]))
        counters = IndexCounters(self._segments.next_segment, self._appended, self._dequeued, self._removed,
                                 self._compactions)
        return encode_index(counters, self._segments.listing(), rows)

    def _load(self, resume_from: bytes | None) -> None:
        """Restore the last checkpoint (or ``resume_from``); delete whatever was written after it."""
        (self.directory / "index.tmp").unlink(missing_ok=True)
        index = self.directory / "index"
        data = resume_from if resume_from is not None else index.read_bytes() if index.exists() else None
        listed = array("q")
        if data is not None:
            counters, listed, rows = decode_index(data)
            self._segments.next_segment, self._appended, self._dequeued, self._removed, self._compactions = counters
            for i in range(0, len(rows), 5):
                key, head, skip, tail, count = rows[i:i + 5]
                slot = self._new_slot(key)
                self._head[slot], self._skip[slot], self._tail[slot], self._count[slot] = head, skip, tail, count
                self._disk_items += count
        self._segments.restore(listed)
