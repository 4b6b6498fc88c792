"""The frontier's checkpoint file: every visit state, the sieve's read position, the virtualizer's index.

BUbiNG calls this a snapshot. The sieve and the virtualizer keep their bulk on disk all the
time; what only lives in memory is the workbench (each host's queued paths, its politeness
delay, its counters), the URL a fetcher has out (``in_flight``), the read positions of the two
disk structures and the policy's pending revisits. :func:`write` puts all of that in **one
file, replaced atomically**, so the frontier's state after a crash is exactly that of one
checkpoint: the sieve and the virtualizer only delete what the previous checkpoint needs once
the new file is in place (their ``prepare_checkpoint``/``commit_checkpoint`` halves).

Layout, little-endian::

    8s magic "CRAWLCK1" | u64 xxh64 of everything after this field
    u32 n | meta, n bytes of JSON (sieve position, counters, revisits, the engine's extra)
    u64 n | the virtualizer's index, n bytes
    u64 n | the hosts, n bytes: per visit state
        q id | I scheduled | I fetched | I on_disk | I items | d host_delay | B flags | H len | scheme+authority
        I len | items, each a LEB128 length then the path+query (a ranked queue prefixes its priority byte)
        with flag ROBOTS: d robots.txt fetch time (wall clock) | I len | the engine's encoded rules

A visit state's items are, in fetch order, the URL out with a fetcher, the URL waiting for a
retry, then the queue: after a crash they are all still to be fetched (the engine skips those
its archive shows were stored after the checkpoint).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import xxhash

from frontier.visit_state import Phase, PriorityPathQueue, VisitState, varint_at
from store.errors import full_when_no_room

MAGIC = b"CRAWLCK1"
_HEAD = struct.Struct("<8sQ")
_HOST = struct.Struct("<qIIIIdBH")
_PURGED = 1
_ROBOTS = 2
_ROBOTS_HEAD = struct.Struct("<dI")


class SnapshotCorrupted(Exception):
    """The checkpoint file fails its checksum: written atomically, so only a damaged disk does this."""


@dataclass(frozen=True, slots=True)
class SavedHost:
    id: int
    scheme_authority: str
    scheduled: int
    fetched: int
    on_disk: int
    host_delay: float
    purged: bool
    items: list[bytes]  # in fetch order; ranked queues prefix each with its priority byte
    robots: bytes | None = None  # the engine's robots.txt rules (``Rules.encode``), if fetched
    robots_fetched: float = 0.0  # when, wall-clock seconds


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _host_items(vs: VisitState, ranked: bool) -> list[bytes]:
    first = [p for p in (vs.in_flight, vs.retry_path) if p is not None]
    if ranked:
        queue = vs.queue
        assert isinstance(queue, PriorityPathQueue)
        return [b"\x00" + p for p in first] + [bytes([priority]) + item for priority, item in queue.ranked_items()]
    return first + list(vs.queue)


def encode_hosts(states: Iterable[VisitState], ranked: bool) -> bytes:
    parts: list[bytes] = []
    for vs in states:
        items = _host_items(vs, ranked)
        blob = b"".join(_varint(len(i)) + i for i in items)
        name = vs.scheme_authority.encode()
        flags = (_PURGED if vs.phase is Phase.PURGED else 0) | (_ROBOTS if vs.robots is not None else 0)
        parts.append(_HOST.pack(vs.id, vs.scheduled, vs.fetched, vs.on_disk, len(items), vs.host_delay, flags, len(name)))
        parts.append(name)
        parts.append(struct.pack("<I", len(blob)))
        parts.append(blob)
        if vs.robots is not None:
            rules = vs.robots.encode()
            parts.append(_ROBOTS_HEAD.pack(vs.robots_fetched, len(rules)))
            parts.append(rules)
    return b"".join(parts)


def decode_hosts(data: bytes) -> Iterator[SavedHost]:
    pos = 0
    view = memoryview(data)
    while pos < len(data):
        id_, scheduled, fetched, on_disk, count, host_delay, flags, name_len = _HOST.unpack_from(data, pos)
        pos += _HOST.size
        name = bytes(view[pos : pos + name_len]).decode()
        pos += name_len
        (blob_len,) = struct.unpack_from("<I", data, pos)
        pos += 4
        end = pos + blob_len
        items: list[bytes] = []
        while pos < end:
            n, pos = varint_at(data, pos)
            items.append(bytes(view[pos : pos + n]))
            pos += n
        if len(items) != count:
            raise SnapshotCorrupted(f"host {name}: {len(items)} items, header says {count}")
        robots, robots_fetched = None, 0.0
        if flags & _ROBOTS:
            robots_fetched, n = _ROBOTS_HEAD.unpack_from(data, pos)
            pos += _ROBOTS_HEAD.size
            robots = bytes(view[pos : pos + n])
            pos += n
        yield SavedHost(id_, name, scheduled, fetched, on_disk, host_delay, bool(flags & _PURGED), items, robots, robots_fetched)


def write(path: Path, meta: dict, index: bytes, hosts: bytes, *, fsync: bool) -> None:
    """Replace ``path`` atomically with a snapshot (``path~`` is the temporary).

    A write that fails (``StoreFull`` for a full disk) deletes the temporary and leaves the
    previous snapshot in place, whole: it is still the one a restart resumes from.
    """
    meta_bytes = orjson.dumps(meta)
    body = b"".join(
        (struct.pack("<I", len(meta_bytes)), meta_bytes, struct.pack("<Q", len(index)), index,
         struct.pack("<Q", len(hosts)), hosts)
    )
    tmp = path.with_name(path.name + "~")
    try:
        with full_when_no_room(tmp), open(tmp, "wb") as f:
            f.write(_HEAD.pack(MAGIC, xxhash.xxh64_intdigest(body)))
            f.write(body)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    if fsync:
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read(path: Path) -> tuple[dict, bytes, bytes]:
    """(meta, virtualizer index, encoded hosts) of the snapshot at ``path``."""
    data = path.read_bytes()
    if len(data) < _HEAD.size:
        raise SnapshotCorrupted(f"{path}: {len(data)} bytes")
    magic, check = _HEAD.unpack_from(data)
    body = memoryview(data)[_HEAD.size :]
    if magic != MAGIC or xxhash.xxh64_intdigest(body) != check:
        raise SnapshotCorrupted(f"{path}: bad magic or checksum")
    (n,) = struct.unpack_from("<I", body, 0)
    meta = orjson.loads(body[4 : 4 + n])
    pos = 4 + n
    (n,) = struct.unpack_from("<Q", body, pos)
    index = bytes(body[pos + 8 : pos + 8 + n])
    pos += 8 + n
    (n,) = struct.unpack_from("<Q", body, pos)
    hosts = bytes(body[pos + 8 : pos + 8 + n])
    return meta, index, hosts
