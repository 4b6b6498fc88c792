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

On-disk layout (``directory``)::

    00000001.seg  00000002.seg ...   segment files, at most ``segment_bytes`` each
    index                            the last checkpoint (replaced atomically)

A segment is a sequence of *blocks*. A block holds 1..1024 consecutive items of one key
(all that key's items written by one flush, split at 64 KiB), little-endian::

    u32 magic "WVQ1" | u32 crc32 | i64 key | i64 next | u32 n | u32 body_len
    body = n × u32 item length, then the n items back to back

``next`` is the position of the key's next block, ``(segment << 40) | offset``, patched in
place (``pwrite``, 8 bytes) when that block is written; the CRC covers everything but
``next``. A key's blocks form a linked list from its head to its tail. Blocks are read with
``pread`` (no mmap, so resident memory does not grow with the data read).

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
import os
import struct
import sys
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from store.errors import StoreFull, full_when_no_room

_BLOCK = struct.Struct("<IIqqII")  # magic, crc, key, next, n, body_len
_CRC_FIELDS = struct.Struct("<qII")  # key, n, body_len: the header fields the CRC covers
_NEXT = struct.Struct("<q")
_NEXT_AT = 16  # offset of ``next`` inside a block
_HEADER = _BLOCK.size  # 32
_MAGIC = 0x31515657  # b"WVQ1"
_SHIFT = 40  # position = segment << 40 | offset
_OFFSET_MASK = (1 << _SHIFT) - 1
_MAX_SEGMENT_ID = (1 << (63 - _SHIFT)) - 1
_BLOCK_ITEMS = 1024
_BLOCK_PAYLOAD = 64 << 10
_READ_AHEAD = 4096  # first pread of a block; larger blocks take a second one
assert array("I").itemsize == 4, "item lengths are stored as 32-bit unsigned integers"
_WRITE_CHUNK = 1 << 20
_INDEX_MAGIC = b"WVIDX001"
_INDEX_HEAD = struct.Struct("<8s7q")
_LITTLE = sys.byteorder == "little"
COMPACT_BELOW = 0.5  # compact when live bytes < this × disk bytes ...
COMPACT_TO = 0.75  # ... until live bytes ≥ this × disk bytes


class CorruptQueueError(Exception):
    """A block or the index failed validation: the disk changed under us. Never retried."""


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


def _encode(key: int, items: list[bytes]) -> bytes:
    lengths = array("I", map(len, items))
    if not _LITTLE:
        lengths.byteswap()
    body = lengths.tobytes() + b"".join(items)
    crc = zlib.crc32(body, zlib.crc32(_CRC_FIELDS.pack(key, len(items), len(body))))
    return _BLOCK.pack(_MAGIC, crc, key, 0, len(items), len(body)) + body


def _chunks(items: list[bytes]) -> Iterable[list[bytes]]:
    """Split one key's items into blocks of at most 1024 items and about 64 KiB."""
    if len(items) <= _BLOCK_ITEMS and sum(map(len, items)) <= _BLOCK_PAYLOAD:
        yield items
        return
    chunk: list[bytes] = []
    size = 0
    for item in items:
        if chunk and (len(chunk) == _BLOCK_ITEMS or size + len(item) > _BLOCK_PAYLOAD):
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += len(item)
    yield chunk


class _SegmentWriter:
    """Appends blocks to a run of fresh segments through a buffer of about 1 MiB.

    ``on_new_segment(old, new)`` tells the owner that segment ``old`` (0 if none) is sealed
    and where ``new`` goes in the logical order. A block still in the buffer is patched in
    the buffer.
    """

    def __init__(self, owner: WorkbenchVirtualizer, on_new_segment: Callable[[int, int], None]) -> None:
        self._owner = owner
        self._on_new_segment = on_new_segment
        self.segment = 0  # 0: none open
        self._end = 0  # logical end of the segment (file + buffer)
        self._written = 0  # file offset where the buffer starts
        self._buffer = bytearray()

    def append(self, block: bytes) -> int:
        owner = self._owner
        if self.segment == 0 or (self._end and self._end + len(block) > owner._segment_bytes):
            old = self.segment
            self.seal()
            self.segment = owner._new_segment()
            self._on_new_segment(old, self.segment)
        position = self.segment << _SHIFT | self._end
        self._buffer += block
        self._end += len(block)
        owner._grow(self.segment, len(block))
        if len(self._buffer) >= _WRITE_CHUNK:
            self.drain()
        return position

    def patch(self, position: int, next_position: int) -> bool:
        at = (position & _OFFSET_MASK) - self._written
        if position >> _SHIFT != self.segment or at < 0:
            return False
        _NEXT.pack_into(self._buffer, at + _NEXT_AT, next_position)
        return True

    def drain(self) -> None:
        if self._buffer:
            _pwrite_all(self._owner._fds[self.segment], self._buffer, self._written)
            self._owner._dirty.add(self.segment)
            self._written = self._end
            self._buffer.clear()

    def seal(self) -> None:
        """Write out the buffer and stop appending to the current segment."""
        self.drain()
        self.segment = self._end = self._written = 0


def _pwrite_all(fd: int, data: bytes | bytearray, offset: int) -> None:
    view = memoryview(data)
    while view:
        done = os.pwrite(fd, view, offset)
        view, offset = view[done:], offset + done


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
        if segment_bytes < _HEADER + 4:
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
        # Per segment: file descriptor, bytes, live bytes; and the logical order.
        self._fds: dict[int, int] = {}
        self._size: dict[int, int] = {}
        self._live: dict[int, int] = {}
        self._order: list[int] = []
        self._next_segment = 1
        self._disk = 0
        self._live_total = 0
        self._dirty: set[int] = set()  # written or patched since the last checkpoint
        self._pinned: set[int] = set()  # listed by the last checkpoint
        self._retired: dict[int, int] = {}  # pinned, emptied: deleted at the next checkpoint
        self._appended = self._dequeued = self._removed = self._compactions = 0
        self.directory.mkdir(parents=True, exist_ok=True)
        self._load(resume_from)
        self._writer = _SegmentWriter(self, self._new_active_segment)
        self._copier: _SegmentWriter | None = None  # the compaction's writer, while it runs

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
            next_position, n, size = self._read_header(position, key)
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
            for chunk in _chunks(items):
                position = writer.append(_encode(key, chunk))
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
        if self._fsync:
            with self._writing():  # a file system may report the lack of room only now
                for segment in self._dirty:
                    os.fsync(self._fds[segment])
        self._dirty.clear()
        return self._index_bytes()

    def commit_checkpoint(self, index_bytes: bytes) -> None:
        """Second half: the caller has persisted ``index_bytes``; make it the directory's own
        index and delete the segments only earlier checkpoints needed."""
        index, temporary = self.directory / "index", self.directory / "index.tmp"
        try:
            with full_when_no_room(temporary), open(temporary, "wb") as f:
                f.write(index_bytes)
                if self._fsync:
                    f.flush()
                    os.fsync(f.fileno())
        except BaseException:  # the previous index stays; the caller's copy of this one is what counts
            temporary.unlink(missing_ok=True)
            raise
        os.replace(temporary, index)
        if self._fsync:
            directory = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        for segment in self._retired:
            self._segment_path(segment).unlink(missing_ok=True)
        self._retired.clear()
        self._pinned = set(self._order)

    def close(self, *, checkpoint: bool = True) -> None:
        """Checkpoint and release the files. Further calls raise ``ValueError``.

        ``checkpoint=False`` leaves the last checkpoint as the state to resume from (the
        caller owns checkpoints through :meth:`prepare_checkpoint`)."""
        if self._closed:
            return
        if checkpoint:
            self.checkpoint()
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        self._closed = True

    def __del__(self) -> None:
        # Like a crash (as the sieve's): give the descriptors back, write nothing.
        if not getattr(self, "_closed", True):
            for fd in getattr(self, "_fds", {}).values():
                os.close(fd)

    def compact(self, target_ratio: float = COMPACT_TO) -> bool:
        """Copy live blocks out of the oldest segments until live/disk ≥ ``target_ratio``.

        ``compact(1.0)`` rewrites everything. Returns whether any segment was replaced.
        Runs by itself when live bytes fall below half the disk bytes.
        """
        if self._closed or self._failed is not None:
            self._refuse()
        victims = self._choose_victims(target_ratio)
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
        self._copier = copier = _SegmentWriter(self, lambda old, new: copies.append(new))
        try:
            heads = sorted(
                (self._head[slot], slot)
                for slot in self._slot_of.values()
                if self._count[slot] and self._head[slot] >> _SHIFT in chosen
            )
            for _, slot in heads:
                self._copy_prefix(slot, chosen, copier)
            copier.seal()
        finally:
            self._copier = None
        self._order[:] = copies + [segment for segment in self._order if segment not in chosen]
        for segment in victims:
            self._live_total -= self._live[segment]
            self._drop(segment)

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
            live_bytes=self._live_total,
            disk_bytes=self._disk,
            retired_bytes=sum(self._retired.values()),
            segments=len(self._order),
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
            next_position, lengths, block = self._read_block(position, key)
            n = len(lengths)
            at = _HEADER + 4 * n + (sum(lengths[:skip]) if skip else 0)
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

    def _read_block(self, position: int, key: int) -> tuple[int, array[int], bytes]:
        """Read and validate the block at ``position``: (next, item lengths, raw block)."""
        fd, offset = self._fds[position >> _SHIFT], position & _OFFSET_MASK
        block = os.pread(fd, _READ_AHEAD, offset)
        if len(block) < _HEADER:
            raise CorruptQueueError(f"short block at {position:#x}")
        magic, crc, found, next_position, n, body_length = _BLOCK.unpack_from(block)
        if magic != _MAGIC or found != key or 4 * n > body_length:
            raise CorruptQueueError(f"bad block header at {position:#x} (key {key})")
        size = _HEADER + body_length
        if len(block) < size:
            block += os.pread(fd, size - len(block), offset + len(block))
            if len(block) < size:
                raise CorruptQueueError(f"truncated block at {position:#x}")
        elif len(block) > size:
            block = block[:size]
        body = memoryview(block)[_HEADER:]
        if zlib.crc32(body, zlib.crc32(_CRC_FIELDS.pack(key, n, body_length))) != crc:
            raise CorruptQueueError(f"checksum mismatch in block at {position:#x} (key {key})")
        lengths = array("I")
        lengths.frombytes(body[:4 * n])
        if not _LITTLE:
            lengths.byteswap()
        return next_position, lengths, block

    def _read_header(self, position: int, key: int) -> tuple[int, int, int]:
        """(next, n, size) of the block at ``position``, checking magic and key only."""
        header = os.pread(self._fds[position >> _SHIFT], _HEADER, position & _OFFSET_MASK)
        if len(header) < _HEADER:
            raise CorruptQueueError(f"short block at {position:#x}")
        magic, _, found, next_position, n, body_length = _BLOCK.unpack(header)
        if magic != _MAGIC or found != key:
            raise CorruptQueueError(f"bad block header at {position:#x} (key {key})")
        return next_position, n, _HEADER + body_length

    def _release(self, position: int, size: int) -> None:
        """A block is fully consumed; delete its segment if that was its last live block."""
        segment = position >> _SHIFT
        live = self._live[segment] - size
        self._live[segment] = live
        self._live_total -= size
        if live == 0:
            if segment == self._writer.segment:
                self._writer.seal()  # its buffer is empty outside flush(); the next append opens a new one
            self._order.remove(segment)
            self._drop(segment)

    # -- writing ---------------------------------------------------------------------

    def _patch(self, position: int, next_position: int) -> None:
        """Point the block at ``position`` to ``next_position``."""
        if self._writer.patch(position, next_position):
            return
        if self._copier is not None and self._copier.patch(position, next_position):
            return
        segment = position >> _SHIFT
        _pwrite_all(self._fds[segment], _NEXT.pack(next_position), (position & _OFFSET_MASK) + _NEXT_AT)
        self._dirty.add(segment)

    def _new_segment(self) -> int:
        segment = self._next_segment
        if segment > _MAX_SEGMENT_ID:
            raise OverflowError("out of segment numbers")
        self._next_segment += 1
        self._fds[segment] = os.open(self._segment_path(segment), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self._size[segment] = self._live[segment] = 0
        self._dirty.add(segment)
        return segment

    def _new_active_segment(self, old: int, new: int) -> None:
        self._order.append(new)
        if old and self._live[old] == 0:  # consumed while it was being written
            self._order.remove(old)
            self._drop(old)

    def _grow(self, segment: int, size: int) -> None:
        self._size[segment] += size
        self._live[segment] += size
        self._disk += size
        self._live_total += size

    def _drop(self, segment: int) -> None:
        """Forget a segment no list points into; keep its file if the checkpoint needs it."""
        os.close(self._fds.pop(segment))
        size = self._size.pop(segment)
        del self._live[segment]
        self._disk -= size
        self._dirty.discard(segment)
        if segment in self._pinned:
            self._retired[segment] = size
        else:
            self._segment_path(segment).unlink()

    # -- compaction ------------------------------------------------------------------

    def _maybe_compact(self) -> None:
        if self._disk > self._segment_bytes and self._live_total < COMPACT_BELOW * self._disk:
            self.compact(COMPACT_TO)

    def _choose_victims(self, target_ratio: float) -> list[int]:
        """The shortest prefix of the logical order whose replacement reaches the target."""
        live, disk = self._live_total, self._disk
        if disk == 0 or live >= target_ratio * disk:
            return []
        victims: list[int] = []
        freed = copied = 0
        for segment in self._order:
            victims.append(segment)
            freed += self._size[segment]
            copied += self._live[segment]
            if live >= target_ratio * (disk - freed + copied):
                break
        return victims

    def _copy_prefix(self, slot: int, chosen: set[int], copier: _SegmentWriter) -> None:
        """Copy the blocks of one key that lie in ``chosen`` (a prefix of its list)."""
        key = self._keys[slot]
        position, skip, left = self._head[slot], self._skip[slot], self._count[slot]
        first = last = 0
        batch: list[bytes] = []
        size = 0
        while left and position >> _SHIFT in chosen:
            next_position, lengths, block = self._read_block(position, key)
            at = _HEADER + 4 * len(lengths) + (sum(lengths[:skip]) if skip else 0)
            for i in range(skip, len(lengths)):
                if batch and (len(batch) == _BLOCK_ITEMS or size + lengths[i] > _BLOCK_PAYLOAD):
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

    def _copy_block(self, key: int, batch: list[bytes], previous: int, copier: _SegmentWriter) -> int:
        position = copier.append(_encode(key, batch))
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

    def _segment_path(self, segment: int) -> Path:
        return self.directory / f"{segment:08x}.seg"

    def _index_bytes(self) -> bytes:
        segments = array("q")
        for segment in self._order:
            segments.extend((segment, self._size[segment], self._live[segment]))
        rows = array("q")
        for key, slot in self._slot_of.items():
            rows.extend((key, self._head[slot], self._skip[slot], self._tail[slot], self._count[slot]))
        if not _LITTLE:
            segments.byteswap()
            rows.byteswap()
        head = _INDEX_HEAD.pack(_INDEX_MAGIC, self._next_segment, self._appended, self._dequeued,
                                self._removed, self._compactions, len(self._order), len(self._slot_of))
        data = head + segments.tobytes() + rows.tobytes()
        return data + struct.pack("<I", zlib.crc32(data))

    def _load(self, resume_from: bytes | None) -> None:
        """Restore the last checkpoint (or ``resume_from``); delete whatever was written after it."""
        (self.directory / "index.tmp").unlink(missing_ok=True)
        index = self.directory / "index"
        listed: dict[int, tuple[int, int]] = {}
        if resume_from is not None:
            listed = self._read_index(resume_from)
        elif index.exists():
            listed = self._read_index(index.read_bytes())
        for path in self.directory.glob("*.seg"):
            try:
                segment = int(path.stem, 16)
            except ValueError:
                continue
            if segment not in listed:
                path.unlink()
        for segment in self._order:
            size, live = listed[segment]
            try:
                fd = os.open(self._segment_path(segment), os.O_RDWR)
            except FileNotFoundError:
                raise CorruptQueueError(f"segment {segment:08x} listed by the index is missing") from None
            self._fds[segment] = fd
            actual = os.fstat(fd).st_size
            if actual < size:
                raise CorruptQueueError(f"segment {segment:08x} is shorter than the index says")
            if actual > size:
                os.ftruncate(fd, size)  # appends made after the checkpoint
            self._size[segment], self._live[segment] = size, live
            self._disk += size
            self._live_total += live
        self._pinned = set(self._order)

    def _read_index(self, data: bytes) -> dict[int, tuple[int, int]]:
        if len(data) < _INDEX_HEAD.size + 4 or struct.unpack_from("<I", data, len(data) - 4)[0] != zlib.crc32(
            data[:-4]
        ):
            raise CorruptQueueError("the index fails its checksum")
        magic, self._next_segment, self._appended, self._dequeued, self._removed, self._compactions, n_segments, \
            n_keys = _INDEX_HEAD.unpack_from(data)
        if magic != _INDEX_MAGIC:
            raise CorruptQueueError("not a virtualizer index")
        numbers = array("q")
        numbers.frombytes(data[_INDEX_HEAD.size:-4])
        if not _LITTLE:
            numbers.byteswap()
        if len(numbers) != 3 * n_segments + 5 * n_keys:
            raise CorruptQueueError("the index has the wrong length")
        listed: dict[int, tuple[int, int]] = {}
        for i in range(0, 3 * n_segments, 3):
            segment, size, live = numbers[i:i + 3]
            listed[segment] = (size, live)
            self._order.append(segment)
        for i in range(3 * n_segments, len(numbers), 5):
            key, head, skip, tail, count = numbers[i:i + 5]
            slot = self._new_slot(key)
            self._head[slot], self._skip[slot], self._tail[slot], self._count[slot] = head, skip, tail, count
            self._disk_items += count
        return listed
