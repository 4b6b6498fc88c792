"""What an agent needs, besides its frontier's checkpoint, to continue a crawl after a crash.

The frontier comes back exactly as it was at its last checkpoint (``frontier/snapshot.py``);
the WARC files are the log of everything since. On resume an agent

1. **replays** the records its WARC files gained after the checkpoint (:func:`replay`): their
   URLs are not fetched again (the *skip set*), and their redirect targets and links are
   discovered again, since the discoveries of the last moments before a crash may not have
   reached the sieve's files;
2. **counts** the fetches that were in flight when the process died (:class:`InFlightSlots`):
   each fetcher writes the fingerprint of its URL into its own 8-byte slot of a small mapped
   file when the fetch starts and clears it once the exchange is stored. A slot still set
   whose URL is not in the skip set was cut by the crash, and is fetched again.

The positions replay starts from are each WARC file's size at the checkpoint
(:func:`warc_sizes`): a file absent from the map was created after it and is read whole.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from engine.parse import extract_links, parse_location
from engine.pipeline import HTML_TYPES, REDIRECTS
from frontier.urls import fingerprint

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
    links: list[str]  # redirect target or extracted links, to discover again


def replay(directory: Path, prefix: str, since: dict[str, int], *, follow_nofollow: bool) -> Iterator[Replayed]:
    """The response and revisit records written after the checkpoint that recorded ``since``.

    Call it after the archive has repaired its files (torn tails cut, ``.open`` files
    finished), so that every record read is whole.
    """
    from warcio.archiveiterator import ArchiveIterator  # only a resumed agent pays for the import

    for path in warc_files(directory, prefix):
        start = since.get(path.name.removesuffix(OPEN_SUFFIX), 0)
        if start >= path.stat().st_size:
            continue
        with open(path, "rb") as f:
            f.seek(start)
            for record in ArchiveIterator(f):
                if record.rec_type not in ("response", "revisit"):
                    continue
                url = record.rec_headers.get_header("WARC-Target-URI")
                if not url:
                    continue
                yield Replayed(url, url.endswith("/robots.txt"), _links(record, url, follow_nofollow))


def _links(record, url: str, follow_nofollow: bool) -> list[str]:  # type: ignore[no-untyped-def]
    http = record.http_headers
    if record.rec_type != "response" or http is None:
        return []
    status = int(http.get_statuscode() or 0)
    if status in REDIRECTS:
        location = http.get_header("location")
        target = parse_location(location, url) if location else None
        return [target] if target else []
    content_type = http.get_header("content-type") or ""
    if status != 200 or content_type.split(";", 1)[0].strip().lower() not in HTML_TYPES:
        return []
    body = record.content_stream().read()
    return extract_links(body, url, content_type=content_type, follow_nofollow=follow_nofollow).links


class InFlightSlots:
    """One 8-byte slot per fetcher in a mapped file: the fingerprint of the URL it is fetching."""

    def __init__(self, path: Path, fetchers: int) -> None:
        size = 8 * max(1, fetchers)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            old = os.pread(fd, os.fstat(fd).st_size, 0)
            self.left_by_crash = {v for v in memoryview(old[: len(old) // 8 * 8]).cast("Q") if v}
            os.ftruncate(fd, 0)
            os.ftruncate(fd, size)
            self._map = mmap.mmap(fd, size)
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
