"""The frontier's checkpoint file: every visit state, the sieve's read position, the virtualizer's index.

BUbiNG calls this a snapshot. The sieve and the virtualizer keep their bulk on disk all the
time; what only lives in memory is the workbench (each host's queued paths, its politeness
delay, its counters), the URL a fetcher has out (``in_flight``), the read positions of the two
disk structures, the policy's pending revisits and what the policy has learned. :func:`write`
puts all of that in **one file, replaced atomically**, so the frontier's state after a crash
is exactly that of one checkpoint: the sieve and the virtualizer only delete what the previous
checkpoint needs once the new file is in place (their ``prepare_checkpoint``/``commit_checkpoint``
halves).

Layout, little-endian::

    8s magic "CRAWLCK1" | u64 xxh64 of everything after this field
    u32 n | meta, n bytes of JSON (sieve position, counters, revisits, policy name, the engine's extra)
    u64 n | the virtualizer's index, n bytes
    u64 n | the hosts, n bytes: per visit state
        q id | I scheduled | I fetched | I on_disk | I items | d host_delay | B flags | H len | scheme+authority
        I len | items, each a LEB128 length then the path+query
        with flag LANES: I first | I lanes | per lane: H lane | I items in memory | I items on disk
        with flag ROBOTS: d robots.txt fetch time (wall clock) | I len | the engine's encoded rules
    u64 n | the policy's state, n bytes (absent from files written before it existed: empty)

A visit state's items are, in fetch order, the URL out with a fetcher, the URL waiting for a
retry, the revisits that came due, then the backlog: after a crash they are all still to be
fetched (the engine skips those its archive shows were stored after the checkpoint). A ranked
host (flag LANES) lists the first ``first`` of them, then each lane's items in memory, lane
after lane, as its lane table says.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import xxhash

from frontier.visit_state import Phase, VisitState, varint_at
from store.durable import replace_file

MAGIC = b"CRAWLCK1"
_HEAD = struct.Struct("<8sQ")
_HOST = struct.Struct("<qIIIIdBH")
_PURGED = 1
_ROBOTS = 2
_LANES = 4
_ROBOTS_HEAD = struct.Struct("<dI")
_LANES_HEAD = struct.Struct("<II")
_LANE = struct.Struct("<HII")


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
    items: list[bytes]  # in fetch order; of a ranked host, only those fetched before its lanes
    robots: bytes | None = None  # the engine's robots.txt rules (``Rules.encode``), if fetched
    robots_fetched: float = 0.0  # when, wall-clock seconds
    lanes: list[tuple[int, list[bytes], int]] | None = None  # a ranked host's (lane, items in memory, count on disk)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _first_items(vs: VisitState) -> list[bytes]:
    """What goes before the backlog: the URL out with a fetcher, the one to retry, the due revisits."""
    first = [p for p in (vs.in_flight, vs.retry_path) if p is not None]
    return first + list(vs.due) if vs.due is not None else first


def encode_hosts(states: Iterable[VisitState]) -> bytes:
    parts: list[bytes] = []
    for vs in states:
        items = _first_items(vs)
        lanes = vs.lanes
        table = b""
        if lanes is None:
            items += vs.queue
        else:
            numbers = sorted(lanes.memory.keys() | lanes.disk.keys())
            table = _LANES_HEAD.pack(len(items), len(numbers))
            for lane in numbers:
                in_memory = list(lanes.memory.get(lane, ()))
                items += in_memory
                table += _LANE.pack(lane, len(in_memory), lanes.disk.get(lane, 0))
        blob = b"".join(_varint(len(i)) + i for i in items)
        name = vs.scheme_authority.encode()
        flags = (
            (_PURGED if vs.phase is Phase.PURGED else 0)
            | (_ROBOTS if vs.robots is not None else 0)
            | (_LANES if lanes is not None else 0)
        )
        parts.append(_HOST.pack(vs.id, vs.scheduled, vs.fetched, vs.on_disk, len(items), vs.host_delay, flags, len(name)))
        parts.append(name)
        parts.append(struct.pack("<I", len(blob)))
        parts.append(blob)
        parts.append(table)
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
        lanes = None
        if flags & _LANES:
            items, lanes, pos = _decode_lanes(name, data, pos, items)
        robots, robots_fetched = None, 0.0
        if flags & _ROBOTS:
            robots_fetched, n = _ROBOTS_HEAD.unpack_from(data, pos)
            pos += _ROBOTS_HEAD.size
            robots = bytes(view[pos : pos + n])
            pos += n
        yield SavedHost(id_, name, scheduled, fetched, on_disk, host_delay, bool(flags & _PURGED), items, robots,
                        robots_fetched, lanes)


def _decode_lanes(
    name: str, data: bytes, pos: int, items: list[bytes]
) -> tuple[list[bytes], list[tuple[int, list[bytes], int]], int]:
    """Split a ranked host's items by the lane table at ``pos``: (the items fetched first, the
    lanes, the position after the table)."""
    first, n = _LANES_HEAD.unpack_from(data, pos)
    pos += _LANES_HEAD.size
    lanes = []
    start = first
    for _ in range(n):
        lane, in_memory, on_disk = _LANE.unpack_from(data, pos)
        pos += _LANE.size
        lanes.append((lane, items[start : start + in_memory], on_disk))
        start += in_memory
    if start != len(items):
        raise SnapshotCorrupted(f"host {name}: {len(items)} items, its lanes say {start}")
    return items[:first], lanes, pos


def write(path: Path, meta: dict[str, Any], index: bytes, hosts: bytes, policy: bytes, *, fsync: bool) -> None:
    """Replace ``path`` atomically with a snapshot (``store.durable.replace_file``).

    A write that fails (``StoreFull`` for a full disk) leaves the previous snapshot in place,
    whole: it is still the one a restart resumes from.
    """
    meta_bytes = orjson.dumps(meta)
    parts = [struct.pack("<I", len(meta_bytes)), meta_bytes]
    for blob in (index, hosts, policy):
        parts += (struct.pack("<Q", len(blob)), blob)
    digest = xxhash.xxh64()
    for part in parts:
        digest.update(part)

    def put(f: BinaryIO) -> None:
        f.write(_HEAD.pack(MAGIC, digest.intdigest()))
        f.writelines(parts)

    replace_file(path, put, fsync=fsync)


def read(path: Path) -> tuple[dict[str, Any], bytes, bytes, bytes]:
    """(meta, virtualizer index, encoded hosts, the policy's state) of the snapshot at ``path``."""
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
    blobs = []
    while pos < len(body):
        (n,) = struct.unpack_from("<Q", body, pos)
        blobs.append(bytes(body[pos + 8 : pos + 8 + n]))
        pos += 8 + n
    index, hosts, policy = (blobs + [b""])[:3]  # a snapshot written before policies had state has two
    return meta, index, hosts, policy
