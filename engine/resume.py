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

import functools
import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from engine.content import decode_body
from engine.parse import HTML_TYPES, LinkRules, extract_links, parse_location
from engine.pipeline import REDIRECTS
from frontier.urls import fingerprint
from store.errors import preallocate
from store.records import Head, Record, records, status_code

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
    record_id: str | None
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


_READ = frozenset(("response", "revisit", "metadata"))  # a request, a warcinfo record: nothing to replay


def replay_file(f: BinaryIO, *, rules: LinkRules, max_body_bytes: int) -> Iterator[Replayed]:
    """What :func:`replay` yields for one WARC file, read from ``f``'s position to its end, or to its first
    torn member (which is left out, with all after it).

    Read with ``store/records.py``, not warcio's ``ArchiveIterator``, which cost 2.4 to 2.5 times as much CPU
    per fetch (``bench/replay_bench.py``); an HTTP head is parsed only for what the metadata record does not
    say: a robots.txt's body, and the links of a response that has no metadata record. The same
    ``Replayed`` come out as through warcio (``tests/test_resume_reader.py``).
    """
    stored: _Stored | None = None  # the records of one fetch are written together, in this order
    for record in records(f, _READ):
        kind = record.kind
        if kind == "metadata" and stored is not None and record.head.get("WARC-Concurrent-To") == stored.record_id:
            yield stored.replayed(*_listed(record.block()))
            stored = None
        elif kind in ("response", "revisit"):
            if stored is not None:
                yield stored.replayed(stored.body_links())
            url = record.url
            if url:
                robots = _robots_body(record, max_body_bytes) if url.endswith("/robots.txt") else b""
                # read only if no metadata record follows (most have one, which says the links): the
                # record, its whole member, is kept until then
                links = functools.partial(_body_links, record, url, rules, max_body_bytes)
                started = datetime.fromisoformat(record.head.get("WARC-Date")).timestamp()  # type: ignore[arg-type]
                stored = _Stored(url, record.head.get("WARC-Record-ID"), links, started, robots)
            else:
                stored = None
    if stored is not None:
        yield stored.replayed(stored.body_links())


def _listed(block: bytes) -> tuple[list[str], str | None]:
    """A metadata record's links (``store.recovery.links_of``) and its first ``fetchTimeMs``, as
    ``store.recovery.metadata_fields`` finds them (lines split at CRLF, a name ended by the first ``": "``),
    but searched for rather than split line by line: a page lists some eighty links."""
    text = "\r\n" + block.decode("utf-8", "replace")
    links = _values(text, "redirect") or _values(text, "outlink")
    fetch_ms = _values(text, "fetchTimeMs")
    return links, fetch_ms[0] if fetch_ms else None


def _values(text: str, name: str) -> list[str]:
    """The values of the lines of ``text`` (each after a CRLF) that begin with ``name: ``."""
    sep = f"\r\n{name}: "
    first, last = text.find(sep), text.rfind(sep)
    if first < 0:
        return []
    run = text[first:last]  # from the first such line to the last, not included
    values = run.split(sep)[1:]
    if run.count("\r\n") != len(values):  # other lines among them: cut each value at its line's end
        return [value.partition("\r\n")[0] for value in text.split(sep)[1:]]
    values.append(text[last + len(sep) :].partition("\r\n")[0])
    return values


def _response(record: Record) -> tuple[int, Head, bytes] | None:
    """A response record's HTTP status, head and payload (None for a revisit, or a record of no HTTP head)."""
    http = record.http() if record.kind == "response" else None
    if http is None:
        return None
    return int(status_code(http[0]) or 0), *http


def _robots_body(record: Record, limit: int) -> bytes:
    """The payload of a robots.txt response answered 2xx, else b""."""
    response = _response(record)
    if response is None or not 200 <= response[0] < 300:
        return b""
    _, head, payload = response
    return decode_body(payload, head.get("content-encoding"), limit)


def _body_links(record: Record, url: str, rules: LinkRules, limit: int) -> list[str]:
    """The links of a response as its body gives them (its redirect target, or its outlinks if HTML), decoded
    as the pipeline decodes it."""
    response = _response(record)
    if response is None:
        return []
    status, head, payload = response
    if status in REDIRECTS:
        location = head.get("location")
        target = parse_location(location, url, sort_query=rules.sort_query) if location else None
        return [target] if target else []
    content_type = head.get("content-type") or ""
    if status != 200 or content_type.split(";", 1)[0].strip().lower() not in HTML_TYPES:
        return []
    return extract_links(decode_body(payload, head.get("content-encoding"), limit), url, content_type=content_type,
                         rules=rules).links


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
