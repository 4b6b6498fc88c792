"""What the robots.txt files a crawl obeyed asked of it, for the robots.txt section of ``crawl report``.

The index tells each robots.txt answer's status, so its outcome (parsed, allow all, disallow
all); what a parsed file asks is in its body, in the WARC file. Each 2xx answer is read at its
offset (one gzip member, decoded by warcio: chunked transfer and content coding undone) and
parsed by the engine's own rules (:class:`engine.robots.RobotsRules`, with the crawl's user
agent and ``politeness.max_crawl_delay``), so that the census says what the crawl obeyed: the
Crawl-delay of the group our product token falls in, whether ``/`` itself was disallowed to us,
and the files that did not parse (then: disallow all).

A record that cannot be read (its WARC file still ``.open`` and the record not yet flushed, or
the file gone) is counted as unread, never an error. One record costs a seek and a small inflate:
about one per host.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from engine.robots import MAX_ROBOTS_BYTES, RobotsRules


@dataclass(frozen=True, slots=True)
class RecordRef:
    """Where a record is: its WARC file's name (as the index gives it), offset and compressed length."""

    filename: str
    offset: int
    length: int


@dataclass(frozen=True)
class RobotsFiles:
    """A census of the robots.txt files answered 2xx: read or not, and what they asked of the crawl."""

    read: int
    unread: int
    unparseable: int
    root_disallowed: int  # files that disallow "/" to our user agent
    crawl_delays: tuple[float, ...]  # the Crawl-delay each file set for us (capped as the crawl caps it), ascending


def body_of(folder: Path, ref: RecordRef) -> bytes | None:
    """The payload of the record at ``ref`` (in ``folder``, its WARC file finished or ``.open``), or None."""
    for name in (ref.filename, ref.filename + ".open"):
        try:
            with open(folder / name, "rb") as f:
                f.seek(ref.offset)
                member = f.read(ref.length)
        except OSError:
            continue
        try:
            for record in ArchiveIterator(io.BytesIO(member)):
                body: bytes = record.content_stream().read(MAX_ROBOTS_BYTES + 1)
                return body
        except Exception:  # warcio raises what its parsers and zlib raise: a torn record is unread, whatever the cause
            return None
    return None


def census(folder: Path, refs: Iterable[RecordRef], user_agent: str, max_crawl_delay: float) -> RobotsFiles:
    read = unread = unparseable = root = 0
    delays: list[float] = []
    for ref in refs:
        body = body_of(folder, ref)
        if body is None:
            unread += 1
            continue
        read += 1
        rules = RobotsRules.parse(body, user_agent, max_crawl_delay=max_crawl_delay)
        unparseable += rules.reason == "unparseable"
        root += not rules.allowed("/")
        if rules.crawl_delay is not None:
            delays.append(rules.crawl_delay)
    return RobotsFiles(read, unread, unparseable, root, tuple(sorted(delays)))
