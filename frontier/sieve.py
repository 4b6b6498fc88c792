"""The Mercator sieve: a queue with memory, kept on disk (ARCHITECTURE.md step 2).

Every URL enqueued k ≥ 1 times is dequeued exactly once, in the order of its first enqueue
(guarantee G3), and RAM does not grow with the number of known URLs (G5). This is BUbiNG's
``MercatorSieve`` after Heydon and Najork's Mercator: each URL (canonical bytes) is reduced to
a 64-bit fingerprint; fingerprints wait in an in-memory *bucket* and the URLs in an auxiliary
file; a *flush* sorts the bucket, merges it into the sorted file of every known fingerprint
and appends the new URLs, in arrival order, to the on-disk *ready queue* that ``dequeue``
reads. All big file access is sequential.

The files (``store``, ``aux``, the ``ready.NNNNNNNN`` segments, ``state.json``) and their
frames are described in :mod:`frontier.sieve_files`.

Flush (when the bucket is full, inside ``enqueue``, or on ``flush()``)
---------------------------------------------------------------------
1. The bucket is sorted, deduplicated and merged with ``store`` into ``store~``, reading the
   store sequentially in 4 MiB chunks (:mod:`frontier.sieve_merge`). New arrivals are marked
   in a mask over the bucket.
2. ``aux`` is read sequentially and the URLs at marked positions are appended, in arrival
   order, to the ready segment (a byte mask built with ``np.repeat`` selects them frame by
   frame, with no per-URL Python code).
3. The header of ``store~`` is written and ``store~`` is renamed over ``store``. This rename is
   the commit: the new known set, the new end of the ready queue and "aux epoch e consumed"
   become true together.
4. A fresh ``aux`` of epoch e+1 replaces the old one; the bucket is emptied.

A flush costs O(known + bucket) sequential I/O: the store is rewritten each time (8 B per
known URL). RAM is the bucket (8 B per slot) plus, during a flush, about 6 B per slot of
masks and sort temporaries, so ``bucket_bytes`` is counted at 16 B per slot
(``SLOT_BYTES``); add at most three store chunks (12 MiB) whatever the known count.

Crash semantics
---------------
The files are the state. After a kill -9 at any instant, reopening the directory neither
crashes nor corrupts: ``store~``/``aux~``/``state.json~`` leftovers are deleted; a ready
segment is cut back to the committed end recorded in ``store`` (a flush that died before its
commit leaves no trace), and segments beyond it are deleted; an ``aux`` whose epoch the store
already consumed is discarded, otherwise its intact frames are reloaded into the bucket and its
torn tail is cut. So, across a crash:

* every URL whose frame reached ``aux`` is kept. URLs of the frame still being built in RAM
  (fewer than ``frame_urls``, 1024 by default) are lost; ``checkpoint`` and ``close`` write
  it out.
* delivery is at least once: the read position is persisted only by ``checkpoint`` and
  ``close``, so URLs dequeued after the last checkpoint come out again. A caller that makes its
  own state durable together with ``checkpoint`` (what BUbiNG calls a snapshot) gets exactly once.
* ``checkpoint`` fsyncs the files and the directory; ``fsync=False`` skips that (tests,
  throwaway runs), which keeps kill -9 safety but not power-loss safety. A flush never fsyncs:
  after a power loss, a store renamed since the last checkpoint may be short, which opening
  detects (header checksum and file size) and reports as :class:`SieveCorrupted`.

A full disk
-----------
Every write that finds no room raises ``store.errors.StoreFull`` and leaves the files as they
were: an ``aux`` frame is appended whole or cut back, a flush takes the room for its new
store (``posix_fallocate``) before writing it and, if anything fails before its commit,
deletes ``store~`` and cuts the ready segment back (the bucket stays, for a later flush), and
a failed ``state.json~`` leaves the previous ``state.json``. After freeing space, the same
sieve (or a reopened one) goes on.

Collisions
----------
Two different URLs with the same 64-bit fingerprint are one URL to the sieve: the later one
is dropped. With n known URLs a new URL is lost with probability about n/2^64 (one in 1.8·10^11
at 10^8 known URLs), the exception G3 allows.
"""

from __future__ import annotations

import contextlib
import json
import os
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import numpy as np
import numpy.typing as npt
import xxhash

from frontier.sieve_files import (
    AUX_HEADER,
    STORE_HEADER,
    U32,
    U64,
    SieveCorrupted,
    StoreHeader,
    aux_frame,
    aux_header,
    frame_count,
    frames,
    open_or_none,
    parse_state,
    read_ready_frame,
    read_state,
    read_store_header,
    reload_aux,
    split_urls,
    store_header,
    walk_frames,
    write_ready_frame,
)
from frontier.sieve_merge import merge_bucket
from store.durable import fsync_path, replace_file
from store.errors import append_whole, full_when_no_room, preallocate

__all__ = ["SLOT_BYTES", "MercatorSieve", "ReadyOffset", "SieveCorrupted", "SieveStatistics", "fingerprint"]

_xxh3 = xxhash.xxh3_64_intdigest

SLOT_BYTES = 16  # bucket RAM per slot: 8 B fingerprint + a flush's mask and sort temporaries


def fingerprint(url: bytes) -> int:
    """The sieve's 64-bit fingerprint of a URL: xxh3_64 (the URL cache uses the same)."""
    return _xxh3(url)


class ReadyOffset(NamedTuple):
    """A position in the ready queue: segment number, frame offset in it, item's index in the frame."""

    segment: int
    offset: int
    item: int


@dataclass(frozen=True, slots=True)
class SieveStatistics:
    known: int  # fingerprints in the store
    pending: int  # URLs in the bucket, waiting for a flush
    ready: int  # URLs that passed the sieve and wait to be dequeued
    dequeued: int  # URLs ever dequeued (as of the last checkpoint, after a crash)
    flushes: int  # flushes ever committed
    bucket_slots: int
    bucket_bytes: int  # RAM budget of the bucket: slots × SLOT_BYTES
    bytes_on_disk: int  # store + aux + ready segments
    store_bytes: int
    segments: int  # ready-queue segment files
    last_flush_urls: int  # URLs sieved by the last flush of this process ...
    last_flush_new: int  # ... and how many of them were new
    lost_on_open: int  # torn or garbled frames dropped when the sieve was opened
    corrupt_frames: int  # ready frames skipped on a checksum mismatch


class MercatorSieve:
    """A queue with memory, on disk: enqueued k ≥ 1 times, dequeued exactly once, in first-enqueue order.

    Invariants: the store holds ``known_count`` fingerprints; bucket slot i is record i of
    ``aux`` (the records from ``_frame_start`` on are still in the RAM frame); the ready queue
    holds, from the read position to the committed end, ``ready_count`` URLs that passed the
    sieve and were not dequeued. Not thread-safe: one owner calls every method.
    """

    __slots__ = (
        "directory", "bucket_slots", "fsync", "_segment_bytes", "_frame_urls", "_closed",
        "_known", "_ready_seg", "_ready_end", "_aux_consumed", "_flushes",
        "_fps", "_pending", "_frame", "_frame_start", "_stop", "_aux_fd", "_aux_epoch",
        "_segment_ends", "_ready_count", "_writer", "_unsynced", "_store_unsynced",
        "_read_seg", "_read_off", "_reader", "_buffer", "_buffer_index", "_buffer_size", "_skip",
        "_dequeued", "_last_flush", "_lost_on_open", "_corrupt_frames",
    )  # fmt: skip
    # Set when the files are opened (_open_ready, _open_aux), and kept up to date after:
    _fps: array[int]  # the bucket's fingerprints, ``bucket_slots`` of them (more after a reload)
    _pending: int  # bucket slots in use
    _frame: list[bytes]  # URLs of the RAM frame: slots ``_frame_start`` to ``_pending``
    _frame_start: int
    _stop: int  # the slot at which the RAM frame or the bucket is full
    _aux_epoch: int
    _segment_ends: dict[int, int]  # committed end of each ready segment from the read position on
    _ready_count: int
    _read_seg: int
    _read_off: int  # offset of the buffered frame
    _buffer: list[bytes]  # the URLs of the frame at the read position
    _buffer_index: int  # the next of them to hand out
    _buffer_size: int  # the buffered frame's size in bytes
    _skip: int  # URLs already handed out of the frame at the read position, before it is buffered
    _dequeued: int

    def __init__(
        self,
        directory: Path | str,
        *,
        bucket_bytes: int = 64 << 20,
        segment_bytes: int = 64 << 20,
        frame_urls: int = 1024,
        fsync: bool = True,
        resume_from: Mapping[str, Any] | None = None,
    ) -> None:
        if bucket_bytes < SLOT_BYTES:
            raise ValueError(f"bucket_bytes must be at least {SLOT_BYTES}, got {bucket_bytes}")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.bucket_slots = bucket_bytes // SLOT_BYTES
        self.fsync = fsync
        self._segment_bytes = segment_bytes
        self._frame_urls = max(1, frame_urls)
        self._closed = False
        self._aux_fd = -1
        self._writer: tuple[int, int] | None = None  # (segment, fd) being appended to
        self._reader: tuple[int, int] | None = None  # (segment, fd) being read
        self._unsynced: set[int] = set()
        self._store_unsynced = False
        self._last_flush = (0, 0)
        self._lost_on_open = self._corrupt_frames = 0
        for leftover in ("store~", "aux~", "state.json~"):
            (self.directory / leftover).unlink(missing_ok=True)
        header = read_store_header(self.directory / "store")
        self._known, self._ready_seg, self._ready_end, self._aux_consumed, self._flushes = header
        with full_when_no_room(self.directory):
            self._open_ready(resume_from)
            self._open_aux()
        if self._pending >= self.bucket_slots:
            self.flush()

    # -- enqueue and flush -----------------------------------------------------------------

    def enqueue(self, url: bytes, fp: int | None = None) -> None:
        """Offer a canonical URL; ``fp`` is its :func:`fingerprint` if the caller has it.

        Flushes (O(known) sequential I/O) when the bucket becomes full.
        """
        if fp is None:
            fp = _xxh3(url)
        n = self._pending
        self._fps[n] = fp
        self._frame.append(url)
        n += 1
        self._pending = n
        if n >= self._stop:  # the frame or the bucket is full
            self._write_frame()
            if n >= self.bucket_slots:
                self.flush()

    def flush(self) -> int:
        """Sieve the bucket into the ready queue (see the module docstring); returns how many URLs were new."""
        self._check_open()
        n = self._pending
        if n == 0:
            return 0
        self._write_frame()
        fps = np.frombuffer(self._fps, dtype=np.uint64, count=n)
        headers: list[StoreHeader] = []  # the header the new store commits, once written
        try:  # the rename of store~ over store is the commit
            replace_file(self.directory / "store", lambda dst: headers.append(self._write_store(dst, fps)), fsync=False)
        except BaseException:  # nothing is committed: free what the attempt took, keep the bucket for the next
            if self._writer is not None:
                with contextlib.suppress(OSError):  # the next flush cuts it again (_writer_fd)
                    os.ftruncate(self._writer[1], self._ready_end if self._writer[0] == self._ready_seg else 0)
            raise
        [header] = headers
        fresh = header.known - self._known
        self._known, self._ready_seg, self._ready_end, self._aux_consumed, self._flushes = header
        self._store_unsynced = True
        self._segment_ends[header.segment] = header.end
        self._ready_count += fresh
        self._last_flush = (n, fresh)
        self._new_aux(self._aux_epoch + 1)
        return fresh

    def _write_store(self, dst: BinaryIO, fps: npt.NDArray[np.uint64]) -> StoreHeader:
        """Write to ``dst`` the store with the bucket's fingerprints merged in, and the new URLs
        to the ready queue; returns the header ``dst`` now begins with."""
        with open_or_none(self.directory / "store") as src:
            # room for the largest store this flush can make, taken before writing any of it
            preallocate(dst.fileno(), STORE_HEADER + 8 * (self._known + len(fps)), Path(dst.name))
            dst.write(bytes(STORE_HEADER))
            src.seek(STORE_HEADER if self._known else 0)
            new = merge_bucket(fps, src, self._known, dst)
        fresh = int(np.count_nonzero(new))
        with full_when_no_room(self.directory):  # the ready queue
            segment, end = self._append_ready(new, fresh)
        header = StoreHeader(self._known + fresh, segment, end, self._aux_epoch, self._flushes + 1)
        dst.truncate(dst.tell())  # what the bucket's known URLs did not take of the preallocation
        dst.seek(0)
        dst.write(store_header(header))
        return header

    def _write_frame(self) -> None:
        """Append the RAM frame (the newest bucket records) to ``aux`` with one system call."""
        if self._aux_fd < 0:
            self._check_open()
            self._start_aux()
        urls = self._frame
        if not urls:
            return
        self._check_open()
        start, end = self._frame_start, self._pending
        fps = np.frombuffer(self._fps, dtype=np.uint64, count=end - start, offset=8 * start)
        # whole or not at all: a frame torn by a full disk would hide every frame after it
        append_whole(self._aux_fd, aux_frame(fps, urls), self.directory / "aux")
        self._frame = []
        self._frame_start = end
        self._stop = min(end + self._frame_urls, self.bucket_slots)

    def _append_ready(self, new: npt.NDArray[np.bool_], fresh: int) -> tuple[int, int]:
        """Copy the URLs of ``aux`` marked in ``new`` to the ready queue (not yet committed)."""
        segment, end = self._ready_seg, self._ready_end
        if fresh == 0:
            return segment, end
        if end >= self._segment_bytes:
            segment, end = segment + 1, 0
        fd = self._writer_fd(segment, end)
        parts: list[bytes] = []
        texts: list[bytes] = []
        count = seen = 0
        path = self.directory / "aux"
        with open(path, "rb") as aux:
            aux.seek(AUX_HEADER)
            for records, payload, _ in frames(aux, 8, path.stat().st_size):
                keep = new[seen : seen + records]
                seen += records
                if not keep.any():
                    continue
                lengths = np.frombuffer(payload, dtype=U32, count=records, offset=8 * records)
                data = np.frombuffer(payload, dtype=np.uint8, offset=12 * records)
                chosen = lengths[keep]
                parts.append(chosen.tobytes())
                texts.append(data[np.repeat(keep, lengths)].tobytes())
                count += len(chosen)
                if count >= self._frame_urls:
                    end = write_ready_frame(fd, end, count, parts, texts)
                    parts, texts, count = [], [], 0
        if count:
            end = write_ready_frame(fd, end, count, parts, texts)
        if seen != self._pending:
            raise SieveCorrupted(f"{path} holds {seen} URLs but the bucket {self._pending}")
        self._unsynced.add(segment)
        return segment, end

    # -- dequeue -----------------------------------------------------------------------------

    def dequeue(self, max_items: int) -> list[bytes]:
        """Up to ``max_items`` ready URLs, oldest first; fewer (maybe none) if fewer are ready.

        URLs still in the bucket are not ready until a flush.
        """
        self._check_open()
        out: list[bytes] = []
        while len(out) < max_items:
            i = self._buffer_index
            if i < len(self._buffer):
                j = min(len(self._buffer), i + max_items - len(out))
                out += self._buffer[i:j]
                self._buffer_index = j
            elif not self._next_frame():
                break
        self._ready_count -= len(out)
        self._dequeued += len(out)
        return out

    def _next_frame(self) -> bool:
        """Move past the buffered frame and buffer the next one; False at the committed end."""
        self._read_off += self._buffer_size
        self._buffer, self._buffer_index, self._buffer_size = [], 0, 0
        while True:
            segment, offset = self._read_seg, self._read_off
            if offset >= self._segment_ends.get(segment, 0):
                if segment >= self._ready_seg:
                    return False
                self._read_seg, self._read_off = segment + 1, 0
                continue
            path = self._segment_path(segment)
            count, payload, size = read_ready_frame(self._reader_fd(segment), offset, self._segment_ends[segment], path.name)
            if payload is None:
                self._corrupt_frames += 1
                self._ready_count -= count - self._skip
                self._read_off, self._skip = offset + size, 0
                continue
            self._buffer = split_urls(payload, count)
            self._buffer_size = size
            self._buffer_index, self._skip = min(self._skip, count), 0
            return True

    # -- durability ----------------------------------------------------------------------------

    @property
    def ready_offset(self) -> ReadyOffset:
        """Where the next dequeue reads; ``checkpoint`` persists it, and a reopen resumes from it."""
        return ReadyOffset(self._read_seg, self._read_off, self._buffer_index or self._skip)

    def checkpoint(self) -> None:
        """Make the current state durable: bucket, known set, ready queue and read position.

        After a crash the sieve reopens at least at this point: no URL enqueued before it is
        lost, and no URL dequeued before it comes out again. Also deletes consumed segments.
        """
        self.commit_checkpoint(self.prepare_checkpoint())

    def prepare_checkpoint(self) -> dict[str, Any]:
        """First half of a checkpoint shared with other state: make everything but the read
        position durable and return that position, which the caller persists with its own state.

        Until :meth:`commit_checkpoint`, reopening with ``resume_from=`` the returned dict
        resumes exactly here, and reopening without it resumes at the previous checkpoint.
        """
        self._check_open()
        self._write_frame()
        if self.fsync:
            with full_when_no_room(self.directory):  # a file system may report the lack of room only now
                os.fsync(self._aux_fd)
                for segment in sorted(self._unsynced):
                    fsync_path(self._segment_path(segment))
                if self._store_unsynced and self._known:
                    fsync_path(self.directory / "store")
        self._unsynced.clear()
        self._store_unsynced = False
        return {"version": 1, "read": list(self.ready_offset), "dequeued": self._dequeued}

    def commit_checkpoint(self, state: Mapping[str, Any]) -> None:
        """Second half: the caller has persisted ``state``; record it here too and delete the
        ready segments wholly before it."""
        self._check_open()
        # a failed write leaves the previous state.json
        replace_file(self.directory / "state.json", json.dumps(state).encode(), fsync=self.fsync)
        for segment in [s for s in self._segment_ends if s < state["read"][0]]:
            if self._reader is not None and self._reader[0] == segment:
                self._close_reader()
            del self._segment_ends[segment]
            self._segment_path(segment).unlink(missing_ok=True)

    def close(self, *, checkpoint: bool = True) -> None:
        """Checkpoint and release the files; reopening the directory continues exactly.

        ``checkpoint=False`` leaves the last checkpoint as the state to resume from (the
        caller owns checkpoints through :meth:`prepare_checkpoint`)."""
        if self._closed:
            return
        if checkpoint:
            self.checkpoint()
        if self._aux_fd >= 0:
            os.close(self._aux_fd)
        self._aux_fd = -1
        self._close_reader()
        if self._writer is not None:
            os.close(self._writer[1])
            self._writer = None
        self._closed = True

    def __del__(self) -> None:
        # Like a crash: give the descriptors back, write nothing.
        if not getattr(self, "_closed", True):
            for fd in (self._aux_fd, *(x[1] for x in (self._reader, self._writer) if x is not None)):
                if fd >= 0:
                    os.close(fd)

    def __enter__(self) -> MercatorSieve:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"sieve {self.directory} is closed")

    # -- opening ---------------------------------------------------------------------------------

    def _open_ready(self, resume_from: Mapping[str, Any] | None) -> None:
        """Cut the ready queue back to its committed end and count the URLs left to read."""
        if resume_from is None:
            segment, offset, index, self._dequeued = read_state(self.directory / "state.json")
        else:
            segment, offset, index, self._dequeued = parse_state(resume_from)
        if (segment, offset) > (self._ready_seg, self._ready_end):
            segment, offset, index = self._ready_seg, self._ready_end, 0
        for path in self.directory.glob("ready.*"):
            number = int(path.suffix[1:]) if path.suffix[1:].isdigit() else -1
            if number < segment or number > self._ready_seg:
                path.unlink()
        self._segment_ends, self._ready_count = {}, 0
        for number in range(segment, self._ready_seg + 1):
            with open(self._segment_path(number), "ab+") as f:
                size = f.seek(0, os.SEEK_END)
                limit = min(size, self._ready_end) if number == self._ready_seg else size
                if number == segment and offset > limit:
                    offset, index = limit, 0
                start = offset if number == segment else 0
                end, count = walk_frames(f, start, limit)
                if number == segment:
                    index = min(index, frame_count(f, start)) if end > start else 0
                    count -= index
                if end < size:  # an uncommitted tail (normal after a crash), or damage
                    self._lost_on_open += end < limit
                    f.truncate(end)
            self._segment_ends[number] = end
            self._ready_count += count
        self._ready_end = self._segment_ends[self._ready_seg]
        self._read_seg, self._read_off, self._skip = segment, offset, index
        self._buffer, self._buffer_index, self._buffer_size = [], 0, 0

    def _open_aux(self) -> None:
        """Reload the intact frames of an unconsumed ``aux`` into the bucket, or start a new one."""
        path = self.directory / "aux"
        epoch, fps, torn = reload_aux(path, self._aux_consumed)
        self._lost_on_open += torn
        pending = len(fps) // 8
        self._fps = array("Q", [0]) * max(self.bucket_slots, pending)
        np.frombuffer(self._fps, dtype=np.uint64, count=pending)[:] = np.frombuffer(fps, dtype=U64)
        self._pending = self._frame_start = pending
        self._frame = []
        self._stop = min(pending + self._frame_urls, self.bucket_slots)
        if epoch > self._aux_consumed:
            self._aux_epoch = epoch
            self._aux_fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        else:
            self._new_aux(self._aux_consumed + 1)

    def _new_aux(self, epoch: int) -> None:
        """Empty the bucket and start ``aux`` over with ``epoch``.

        The file is emptied in place, not replaced: the old one is consumed (by the store's
        header, or it is empty), and this way a full disk still has room for the new header,
        in the blocks just freed. A crash between the two steps leaves an empty file, which
        opening takes for a consumed one.
        """
        self._pending = self._frame_start = 0
        self._frame = []
        self._stop = min(self._frame_urls, self.bucket_slots)
        self._aux_epoch = epoch
        self._start_aux()

    def _start_aux(self) -> None:
        """Empty ``aux`` and write its header; if that fails, no descriptor stays open, and the
        next frame tries again (a frame must never follow a missing header)."""
        path = self.directory / "aux"
        if self._aux_fd < 0:
            self._aux_fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.ftruncate(self._aux_fd, 0)
        try:
            append_whole(self._aux_fd, aux_header(self._aux_epoch), path)
        except BaseException:
            os.close(self._aux_fd)
            self._aux_fd = -1
            raise

    # -- files -----------------------------------------------------------------------------------

    def _segment_path(self, segment: int) -> Path:
        return self.directory / f"ready.{segment:08d}"

    def _writer_fd(self, segment: int, end: int) -> int:
        if self._writer is None or self._writer[0] != segment:
            if self._writer is not None:
                os.close(self._writer[1])
            self._writer = (segment, os.open(self._segment_path(segment), os.O_WRONLY | os.O_CREAT, 0o644))
        os.ftruncate(self._writer[1], end)  # drop what a failed flush may have left
        return self._writer[1]

    def _reader_fd(self, segment: int) -> int:
        if self._reader is None or self._reader[0] != segment:
            self._close_reader()
            self._reader = (segment, os.open(self._segment_path(segment), os.O_RDONLY))
        return self._reader[1]

    def _close_reader(self) -> None:
        if self._reader is not None:
            os.close(self._reader[1])
            self._reader = None

    # -- summaries ---------------------------------------------------------------------------------

    @property
    def known_count(self) -> int:
        return self._known

    @property
    def pending_count(self) -> int:
        return self._pending

    @property
    def ready_count(self) -> int:
        return self._ready_count

    def statistics(self) -> SieveStatistics:
        def size(path: Path) -> int:
            try:
                return path.stat().st_size
            except FileNotFoundError:
                return 0

        store = size(self.directory / "store")
        segments = sum(size(self._segment_path(s)) for s in self._segment_ends)
        return SieveStatistics(
            known=self._known,
            pending=self._pending,
            ready=self._ready_count,
            dequeued=self._dequeued,
            flushes=self._flushes,
            bucket_slots=self.bucket_slots,
            bucket_bytes=self.bucket_slots * SLOT_BYTES,
            bytes_on_disk=store + size(self.directory / "aux") + segments,
            store_bytes=store,
            segments=len(self._segment_ends),
            last_flush_urls=self._last_flush[0],
            last_flush_new=self._last_flush[1],
            lost_on_open=self._lost_on_open,
            corrupt_frames=self._corrupt_frames,
        )

    def __repr__(self) -> str:
        return (
            f"<MercatorSieve {str(self.directory)!r} known={self._known:,} pending={self._pending:,}"
            f"/{self.bucket_slots:,} ready={self._ready_count:,} flushes={self._flushes:,}"
            f"{' closed' if self._closed else ''}>"
        )
