"""The Mercator sieve's files: their layout, and the frames and headers they hold.

Encodes and decodes what :class:`frontier.sieve.MercatorSieve` keeps on disk, and reads or
writes it at the positions the sieve gives. It decides nothing: what is committed, when to
flush, what to cut after a crash is the sieve's (frontier/sieve.py).

File layout (one directory per sieve)
-------------------------------------
``store``            64-byte header (magic, known count, committed end of the ready queue as
                     segment and offset, epoch of the aux file it consumed, flush count,
                     xxh32 of the header), then the fingerprints of all known URLs: sorted,
                     unique, little-endian uint64, 8 B per known URL.
``aux``              16-byte header (magic, epoch), then frames of the URLs enqueued since the
                     last flush with their fingerprints, in arrival order: the on-disk half of
                     the bucket. Record i of ``aux`` is slot i of the bucket.
``ready.NNNNNNNN``   the ready queue, in segments: frames of the URLs that passed the sieve.
                     A flush starts a new segment once the current one exceeds
                     ``segment_bytes``; segments wholly before the checkpointed read position
                     are deleted by ``checkpoint``.
``state.json``       the read position of the ready queue (segment, frame offset, index in the
                     frame), written by ``checkpoint`` and ``close`` only.

A *frame* is a 16-byte header ``magic, count, nbytes, xxh32(payload, seed=count)`` (u32 each)
and a payload of ``count`` fingerprints (u64, aux only), ``count`` lengths (u32) and
``nbytes`` bytes of URLs. A frame holds up to ``frame_urls`` URLs and is written with one
system call; the checksum detects a torn or garbled frame, which is dropped with everything
after it. Replacements (``store~``, ``state.json~``) are written aside and renamed over the
original (:func:`store.durable.replace_file`); ``aux`` is emptied in place once a flush has
consumed it.
"""

from __future__ import annotations

import io
import json
import os
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import numpy as np
import numpy.typing as npt
import xxhash

_xxh32 = xxhash.xxh32_intdigest

U64 = np.dtype("<u8")
U32 = np.dtype("<u4")

_FRAME = struct.Struct("<IIII")  # magic, count, nbytes, xxh32(payload, seed=count)
_FRAME_MAGIC = 0x31524653  # b"SFR1"
_STORE = struct.Struct("<8sQQQQQ")  # magic, known, ready segment, ready end, aux epoch, flushes
_STORE_MAGIC = b"SIEVSTO1"
STORE_HEADER = 64  # _STORE, then xxh32 of it (u32), then zeros
_AUX = struct.Struct("<8sQ")  # magic, epoch
_AUX_MAGIC = b"SIEVAUX1"
AUX_HEADER = _AUX.size


class SieveCorrupted(Exception):
    """A sieve file is damaged in a way no process crash can cause (a power loss, a bad disk)."""


class StoreHeader(NamedTuple):
    """What a flush commits in the header of ``store``."""

    known: int  # fingerprints in the store
    segment: int  # committed end of the ready queue: segment ...
    end: int  # ... and offset in it
    consumed: int  # the epoch of the last ``aux`` the store took in
    flushes: int


# -- store and aux headers ------------------------------------------------------------------------


def store_header(header: StoreHeader) -> bytes:
    head = _STORE.pack(_STORE_MAGIC, *header)
    return (head + struct.pack("<I", _xxh32(head))).ljust(STORE_HEADER, b"\0")


def read_store_header(path: Path) -> StoreHeader:
    """The header of the store at ``path``, checked against the file's size; all zeros if there is none."""
    if not path.exists():
        return StoreHeader(0, 0, 0, 0, 0)
    with open(path, "rb") as f:
        head = f.read(STORE_HEADER)
    size = path.stat().st_size
    if len(head) < STORE_HEADER or _xxh32(head[: _STORE.size]) != struct.unpack_from("<I", head, _STORE.size)[0]:
        raise SieveCorrupted(f"{path}: bad header")
    magic, *fields = _STORE.unpack_from(head)
    header = StoreHeader(*fields)
    if magic != _STORE_MAGIC or size != STORE_HEADER + 8 * header.known:
        raise SieveCorrupted(f"{path}: {size} bytes for {header.known} fingerprints")
    return header


def aux_header(epoch: int) -> bytes:
    return _AUX.pack(_AUX_MAGIC, epoch)


def reload_aux(path: Path, consumed: int) -> tuple[int, bytes, bool]:
    """(epoch, fingerprints of the intact frames, whether a torn tail was cut) of the ``aux``
    file at ``path``. One the store already consumed (epoch not above ``consumed``) gives no
    fingerprints; an unconsumed one is cut after its last intact frame."""
    if not path.exists():
        return 0, b"", False
    with open(path, "rb+") as f:
        head = f.read(AUX_HEADER)
        magic, epoch = _AUX.unpack(head) if len(head) == AUX_HEADER else (b"", 0)
        if magic != _AUX_MAGIC:
            epoch = 0
        if epoch <= consumed:
            return epoch, b"", False
        size = path.stat().st_size
        end = AUX_HEADER
        chunks: list[bytes] = []
        for count, payload, frame in frames(f, 8, size):
            chunks.append(payload[: 8 * count])
            end += frame
        if end < size:
            f.truncate(end)
    return epoch, b"".join(chunks), end < size


# -- frames ---------------------------------------------------------------------------------------


def _frame_header(count: int, nbytes: int, payload: bytes) -> bytes:
    return _FRAME.pack(_FRAME_MAGIC, count, nbytes, _xxh32(payload, count))


def aux_frame(fps: npt.NDArray[np.uint64], urls: list[bytes]) -> bytes:
    """The ``aux`` frame of ``urls`` and their fingerprints."""
    lengths = np.fromiter(map(len, urls), dtype=U32, count=len(urls))
    payload = b"".join((fps.astype(U64, copy=False).tobytes(), lengths.tobytes(), *urls))
    return _frame_header(len(urls), int(lengths.sum()), payload) + payload


def write_ready_frame(fd: int, offset: int, count: int, parts: list[bytes], texts: list[bytes]) -> int:
    """Write a ready frame of ``count`` URLs (their lengths in ``parts``, their bytes in ``texts``)
    at ``offset``; returns the offset just past it."""
    payload = b"".join(parts + texts)
    frame = _frame_header(count, len(payload) - 4 * count, payload) + payload
    while frame:
        written = os.pwrite(fd, frame, offset)
        offset += written
        frame = frame[written:]
    return offset


def frames(f: BinaryIO, fp_bytes: int, limit: int) -> Iterator[tuple[int, bytes, int]]:
    """(count, payload, frame size) of each intact frame from ``f``'s position, up to ``limit``.

    Stops at the first torn or garbled frame.
    """
    position = f.tell()
    while position + _FRAME.size <= limit:
        magic, count, nbytes, check = _FRAME.unpack(f.read(_FRAME.size))
        size = count * (fp_bytes + 4) + nbytes
        if magic != _FRAME_MAGIC or position + _FRAME.size + size > limit:
            return
        payload = f.read(size)
        if len(payload) != size or _xxh32(payload, count) != check:
            return
        position += _FRAME.size + size
        yield count, payload, _FRAME.size + size


def read_ready_frame(fd: int, offset: int, limit: int, name: str) -> tuple[int, bytes | None, int]:
    """(count, payload, frame size) of the ready frame at ``offset``; the payload is None if it
    fails its checksum. A header that is no frame's, or runs past ``limit``, is corruption."""
    magic, count, nbytes, check = _FRAME.unpack(os.pread(fd, _FRAME.size, offset))
    size = 4 * count + nbytes
    if magic != _FRAME_MAGIC or offset + _FRAME.size + size > limit:
        raise SieveCorrupted(f"{name}: bad frame header at {offset}")
    payload = os.pread(fd, size, offset + _FRAME.size)
    if len(payload) != size or _xxh32(payload, count) != check:
        return count, None, _FRAME.size + size
    return count, payload, _FRAME.size + size


def split_urls(payload: bytes, count: int) -> list[bytes]:
    """The URLs of a ready frame's payload, in order."""
    ends = (np.cumsum(np.frombuffer(payload, dtype=U32, count=count), dtype=np.int64) + 4 * count).tolist()
    starts = [4 * count, *ends[:-1]]
    return [payload[a:b] for a, b in zip(starts, ends)]


def walk_frames(f: BinaryIO, offset: int, limit: int) -> tuple[int, int]:
    """Follow ready-frame headers from ``offset``: (end of the last whole frame, URLs in them)."""
    count = 0
    while offset + _FRAME.size <= limit:
        f.seek(offset)
        magic, records, nbytes, _ = _FRAME.unpack(f.read(_FRAME.size))
        end = offset + _FRAME.size + 4 * records + nbytes
        if magic != _FRAME_MAGIC or end > limit:
            break
        offset, count = end, count + records
    return offset, count


def frame_count(f: BinaryIO, offset: int) -> int:
    """The number of URLs in the frame at ``offset``."""
    f.seek(offset)
    return int(_FRAME.unpack(f.read(_FRAME.size))[1])


# -- the read position and small helpers ----------------------------------------------------------


def read_state(path: Path) -> tuple[int, int, int, int]:
    """(segment, offset, index, dequeued) from ``state.json``; the start if there is none."""
    try:
        return parse_state(json.loads(path.read_text()))
    except FileNotFoundError:
        return 0, 0, 0, 0
    except ValueError as exc:  # written atomically: only a bad disk gets here
        raise SieveCorrupted(f"{path}: {exc}") from exc


def parse_state(state: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """(segment, offset, index, dequeued) from a checkpoint's read position."""
    try:
        segment, offset, index = (int(x) for x in state["read"])
        return segment, offset, index, int(state["dequeued"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SieveCorrupted(f"bad read position {state!r}: {exc}") from exc


def open_or_none(path: Path) -> io.BufferedReader:
    """``path`` open for reading, or an empty stream if there is no such file."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        return open(os.devnull, "rb")
