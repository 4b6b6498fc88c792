"""What an agent needs, besides its frontier's checkpoint, to continue a crawl after a crash.

The frontier comes back exactly as it was at its last checkpoint (``frontier/snapshot.py``);
the WARC files are the log of everything since. On resume an agent

1. **replays** the records its WARC files gained after the checkpoint (:func:`replay`): their
   URLs are not fetched again (the *skip set*), and their redirect targets and links are
   discovered again, since the discoveries of the last moments before a crash may not have
   reached the sieve's files. The links are the ones the fetch's metadata record lists,
   i.e. what was discovered then: none for a duplicate whose links were not followed
   (``store.follow_duplicates``), be it a revisit or a near-duplicate stored in full;
2. **counts** the fetches that were in flight when the process died (:class:`InFlightSlots`):
   each fetcher writes the fingerprint of its URL into its own 8-byte slot of a small mapped
   file when the fetch starts and clears it once the exchange is stored. A slot still set
   whose URL is not in the skip set was cut by the crash, and is fetched again.

The positions replay starts from are each WARC file's size at the checkpoint
(:func:`warc_sizes`): a file absent from the map was created after it and is read whole.

A fetch that left no record is not replayed: a near-duplicate that ``store.near_duplicates =
"skip"`` kept out of the archive (as BUbiNG does), or a page the store filter kept out. Fetched
between the checkpoint and the crash, it is fetched again after the resume, and kept out again.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from engine.content import decode_body
from engine.parse import HTML_TYPES, LinkRules, extract_links, parse_location
from engine.pipeline import REDIRECTS
from frontier.urls import fingerprint
from store.errors import preallocate
from store.recovery import links_of, metadata_fields

OPEN_SUFFIX = ".open"


def warc_files(directory: Path, prefix: str) -> list[Path]:
    """This agent's WARC files, finished or open, oldest first."""
    return sorted(directory.glob(f"{prefix}-*.warc.gz*"))


def warc_sizes(directory: Path, prefix: str) -> dict[str, int]:
    """Each WARC file's size now, by its finished name (what a checkpoint records)."""
    return {p.name.removesuffix(OPEN_SUFFIX): p.stat().st_size for p in warc_files(directory, prefix)}


@dataclass(frozen=True, slots=True)
class Replayed:
    url: str
    robots: bool
    links: list[str]  # redirect target or outlinks, to discover again
    ended: float = 0.0  # epoch seconds the fetch ended: its WARC-Date (the start) plus its metadata's fetchTimeMs
    robots_body: bytes = b""  # the payload of a robots.txt answered 2xx (a machine taking the host reads its Crawl-delay)


@dataclass(frozen=True, slots=True)
class _Stored:
    """A response or revisit record read, waiting for the metadata record that lists its links."""

    url: str
    record_id: str
    body_links: Callable[[], list[str]]  # the links its body gives, if no metadata record follows
    started: float  # WARC-Date, epoch seconds
    robots_body: bytes

    def replayed(self, links: list[str], fetch_ms: str | None = None) -> Replayed:
        ended = self.started + (int(fetch_ms) + 1) / 1000 if fetch_ms else self.started  # ms rounded: at most 1 later
        return Replayed(self.url, self.url.endswith("/robots.txt"), links, ended, self.robots_body)


def replay(
    directory: Path, prefix: str, since: dict[str, int], *, rules: LinkRules, max_body_bytes: int
) -> Iterator[Replayed]:
    """The fetches stored after the checkpoint that recorded ``since``: one per response or revisit
    record, with the links of its metadata record (``WARC-Concurrent-To`` it). A response with
    none (robots.txt, or a page whose metadata record a torn tail cut off) has its links
    extracted from its body again, decoded as the pipeline does (cut at ``max_body_bytes``).

    Call it after the archive has repaired its files (torn tails cut, ``.open`` files
    finished), so that every record read is whole.
    """
    for path in warc_files(directory, prefix):
        start = since.get(path.name.removesuffix(OPEN_SUFFIX), 0)
        if start >= path.stat().st_size:
            continue
        with open(path, "rb") as f:
            f.seek(start)
            yield from replay_file(f, rules=rules, max_body_bytes=max_body_bytes)


def replay_file(f: BinaryIO, *, rules: LinkRules, max_body_bytes: int) -> Iterator[Replayed]:
    """What :func:`replay` yields for one WARC file, read from ``f``'s position to its end (whole records)."""
    from warcio.archiveiterator import ArchiveIterator  # only a resumed agent pays for the import

    stored: _Stored | None = None  # the records of one fetch are written together, in this order
    for record in ArchiveIterator(f):
        kind, headers = record.rec_type, record.rec_headers
        if kind == "metadata" and stored is not None and headers.get_header("WARC-Concurrent-To") == stored.record_id:
            fields = metadata_fields(record.content_stream().read())
            yield stored.replayed(links_of(fields), next((v for n, v in fields if n == "fetchTimeMs"), None))
            stored = None
        elif kind in ("response", "revisit"):
            if stored is not None:
                yield stored.replayed(stored.body_links())
            url = headers.get_header("WARC-Target-URI")
            if url:
                robots = _robots_body(record, max_body_bytes) if url.endswith("/robots.txt") else b""
                links = _body_links(record, url, rules, max_body_bytes)
                started = datetime.fromisoformat(headers.get_header("WARC-Date")).timestamp()
                stored = _Stored(url, headers.get_header("WARC-Record-ID"), links, started, robots)
            else:
                stored = None
    if stored is not None:
        yield stored.replayed(stored.body_links())


def _robots_body(record: Any, limit: int) -> bytes:
    """The payload of a robots.txt response answered 2xx, else b"" (``record``: as for :func:`_body_links`)."""
    http = record.http_headers
    if record.rec_type != "response" or http is None or not 200 <= int(http.get_statuscode() or 0) < 300:
        return b""
    return decode_body(record.raw_stream.read(), http.get_header("content-encoding"), limit)


def _body_links(record: Any, url: str, rules: LinkRules, limit: int) -> Callable[[], list[str]]:
    """The links of a response as its body gives them, decoded and extracted only when called.

    ``record`` is a warcio ``ArcWarcRecord`` (an untyped library's class).
    """
    http = record.http_headers
    if record.rec_type != "response" or http is None:
        return list
    status = int(http.get_statuscode() or 0)
    if status in REDIRECTS:
        location = http.get_header("location")
        target = parse_location(location, url, sort_query=rules.sort_query) if location else None
        return lambda: [target] if target else []
    content_type = http.get_header("content-type") or ""
    if status != 200 or content_type.split(";", 1)[0].strip().lower() not in HTML_TYPES:
        return list
    body = record.raw_stream.read()  # now, as stored: the stream moves on with the next record
    encoding = http.get_header("content-encoding")
    return lambda: extract_links(decode_body(body, encoding, limit), url, content_type=content_type, rules=rules).links


class InFlightSlots:
    """One 8-byte slot per fetcher in a mapped file: the fingerprint of the URL it is fetching."""

    def __init__(self, path: Path, fetchers: int) -> None:
        size = 8 * max(1, fetchers)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            old = os.pread(fd, os.fstat(fd).st_size, 0)
            self.left_by_crash = {v for v in memoryview(old[: len(old) // 8 * 8]).cast("Q") if v}
            # allocated, not sparse: a full disk is StoreFull here (the old slots kept for the next
            # start to read), never SIGBUS at a fetcher's first store into the mapping
            preallocate(fd, size, path)
            os.ftruncate(fd, size)
            self._map = mmap.mmap(fd, size)
            self._map[:] = bytes(size)
        finally:
            os.close(fd)
        self._slots = memoryview(self._map).cast("Q")

    def start(self, fetcher: int, url: str) -> None:
        self._slots[fetcher] = fingerprint(url) or 1

    def done(self, fetcher: int) -> None:
        self._slots[fetcher] = 0

    def close(self) -> None:
        self._slots.release()
        self._map.close()
