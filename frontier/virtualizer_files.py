"""The workbench virtualizer's files: segment blocks and the index (frontier/virtualizer.py).

Encodes and validates the bytes, and reads or patches a block through a descriptor it is
given (``pread``/``pwrite``); which blocks a key's list holds is the virtualizer's, which
segment files exist is :mod:`frontier.virtualizer_segments`'. Opens, renames and deletes
nothing.

On-disk layout (the virtualizer's ``directory``)::

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

The index is a header (magic, the next segment number, the counters of
:class:`IndexCounters`, the numbers of segments and keys), then (segment, size, live bytes)
per segment in their logical order, then (key, head, skip, tail, count) per key, all
little-endian i64, and a CRC-32 of all that.
"""

from __future__ import annotations

import os
import struct
import sys
import zlib
from array import array
from collections.abc import Iterable
from typing import NamedTuple

_BLOCK = struct.Struct("<IIqqII")  # magic, crc, key, next, n, body_len
_CRC_FIELDS = struct.Struct("<qII")  # key, n, body_len: the header fields the CRC covers
_NEXT = struct.Struct("<q")
_NEXT_AT = 16  # offset of ``next`` inside a block
BLOCK_HEADER = _BLOCK.size  # 32
_MAGIC = 0x31515657  # b"WVQ1"
SHIFT = 40  # position = segment << 40 | offset
OFFSET_MASK = (1 << SHIFT) - 1
MAX_SEGMENT_ID = (1 << (63 - SHIFT)) - 1
BLOCK_ITEMS = 1024  # a block holds at most this many items ...
BLOCK_PAYLOAD = 64 << 10  # ... and about this many bytes of them
_READ_AHEAD = 4096  # first pread of a block; larger blocks take a second one
assert array("I").itemsize == 4, "item lengths are stored as 32-bit unsigned integers"
_INDEX_MAGIC = b"WVIDX001"
_INDEX_HEAD = struct.Struct("<8s7q")
_LITTLE = sys.byteorder == "little"


class CorruptQueueError(Exception):
    """A block or the index failed validation: the disk changed under us. Never retried."""


# -- blocks -----------------------------------------------------------------------------------------


def encode_block(key: int, items: list[bytes]) -> bytes:
    """A block of ``items`` of ``key``, its ``next`` still 0."""
    lengths = array("I", map(len, items))
    if not _LITTLE:
        lengths.byteswap()
    body = lengths.tobytes() + b"".join(items)
    crc = zlib.crc32(body, zlib.crc32(_CRC_FIELDS.pack(key, len(items), len(body))))
    return _BLOCK.pack(_MAGIC, crc, key, 0, len(items), len(body)) + body


def chunks(items: list[bytes]) -> Iterable[list[bytes]]:
    """Split one key's items into blocks of at most 1024 items and about 64 KiB."""
    if len(items) <= BLOCK_ITEMS and sum(map(len, items)) <= BLOCK_PAYLOAD:
        yield items
        return
    chunk: list[bytes] = []
    size = 0
    for item in items:
        if chunk and (len(chunk) == BLOCK_ITEMS or size + len(item) > BLOCK_PAYLOAD):
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += len(item)
    yield chunk


def read_block(fd: int, position: int, key: int) -> tuple[int, array[int], bytes]:
    """Read and validate the block of ``key`` at ``position`` of the segment ``fd``: (next, item
    lengths, raw block); the items start at ``BLOCK_HEADER + 4 × len(lengths)``."""
    offset = position & OFFSET_MASK
    block = os.pread(fd, _READ_AHEAD, offset)
    if len(block) < BLOCK_HEADER:
        raise CorruptQueueError(f"short block at {position:#x}")
    magic, crc, found, next_position, n, body_length = _BLOCK.unpack_from(block)
    if magic != _MAGIC or found != key or 4 * n > body_length:
        raise CorruptQueueError(f"bad block header at {position:#x} (key {key})")
    size = BLOCK_HEADER + body_length
    if len(block) < size:
        block += os.pread(fd, size - len(block), offset + len(block))
        if len(block) < size:
            raise CorruptQueueError(f"truncated block at {position:#x}")
    elif len(block) > size:
        block = block[:size]
    body = memoryview(block)[BLOCK_HEADER:]
    if zlib.crc32(body, zlib.crc32(_CRC_FIELDS.pack(key, n, body_length))) != crc:
        raise CorruptQueueError(f"checksum mismatch in block at {position:#x} (key {key})")
    lengths = array("I")
    lengths.frombytes(body[:4 * n])
    if not _LITTLE:
        lengths.byteswap()
    return next_position, lengths, block


def read_block_header(fd: int, position: int, key: int) -> tuple[int, int, int]:
    """(next, n, size) of the block at ``position`` of the segment ``fd``, checking magic and key only."""
    header = os.pread(fd, BLOCK_HEADER, position & OFFSET_MASK)
    if len(header) < BLOCK_HEADER:
        raise CorruptQueueError(f"short block at {position:#x}")
    magic, _, found, next_position, n, body_length = _BLOCK.unpack(header)
    if magic != _MAGIC or found != key:
        raise CorruptQueueError(f"bad block header at {position:#x} (key {key})")
    return next_position, n, BLOCK_HEADER + body_length


def patch_next(fd: int, position: int, next_position: int) -> None:
    """Point the block at ``position``, in the segment file ``fd``, to ``next_position``."""
    pwrite_all(fd, _NEXT.pack(next_position), (position & OFFSET_MASK) + _NEXT_AT)


def patch_next_in(buffer: bytearray, at: int, next_position: int) -> None:
    """Point the block that starts at ``buffer[at]`` to ``next_position``."""
    _NEXT.pack_into(buffer, at + _NEXT_AT, next_position)


def pwrite_all(fd: int, data: bytes | bytearray, offset: int) -> None:
    view = memoryview(data)
    while view:
        done = os.pwrite(fd, view, offset)
        view, offset = view[done:], offset + done


# -- the index ----------------------------------------------------------------------------------------


class IndexCounters(NamedTuple):
    """The virtualizer's counters an index carries."""

    next_segment: int
    appended: int
    dequeued: int
    removed: int
    compactions: int


def encode_index(counters: IndexCounters, segments: array[int], rows: array[int]) -> bytes:
    """The index of ``segments`` (segment, size, live bytes, flat) and ``rows`` (key, head, skip,
    tail, count, flat)."""
    if not _LITTLE:
        segments, rows = array("q", segments), array("q", rows)
        segments.byteswap()
        rows.byteswap()
    head = _INDEX_HEAD.pack(_INDEX_MAGIC, *counters, len(segments) // 3, len(rows) // 5)
    data = head + segments.tobytes() + rows.tobytes()
    return data + struct.pack("<I", zlib.crc32(data))


def decode_index(data: bytes) -> tuple[IndexCounters, array[int], array[int]]:
    """(counters, segments, rows) of an index, as :func:`encode_index` takes them."""
    if len(data) < _INDEX_HEAD.size + 4 or struct.unpack_from("<I", data, len(data) - 4)[0] != zlib.crc32(data[:-4]):
        raise CorruptQueueError("the index fails its checksum")
    magic, *counters, n_segments, n_keys = _INDEX_HEAD.unpack_from(data)
    if magic != _INDEX_MAGIC:
        raise CorruptQueueError("not a virtualizer index")
    numbers = array("q")
    numbers.frombytes(data[_INDEX_HEAD.size:-4])
    if not _LITTLE:
        numbers.byteswap()
    if len(numbers) != 3 * n_segments + 5 * n_keys:
        raise CorruptQueueError("the index has the wrong length")
    return IndexCounters(*counters), numbers[: 3 * n_segments], numbers[3 * n_segments :]
