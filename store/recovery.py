"""Rebuilding what is derived from a WARC file (its CDXJ index, its graph segment) after a crash.

The WARC file is the journal: its records are written whole, one write per fetch, and a torn
tail is cut before anything here runs (``store.warc.repair_torn_tail``). The index and the
graph segment are written through buffers, so a kill -9 can leave them short or torn. For
each WARC file of the store's prefix whose index (or graph segment) is not finished,
:func:`rebuild` keeps the whole lines (records) the derived file already has, reads the WARC
records after the last one they cover, derives the missing lines (records) from them exactly
as the live writer does, and finishes the files. Afterwards WARC, index and graph agree.

Reading uses warcio, so what is rebuilt is what replay tools see.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator  # untyped: Any (pyproject.toml)

from store import cdxj, linkgraph

INDEXED = frozenset(("response", "revisit"))


@dataclass(frozen=True, slots=True)
class Rebuilt:
    index_lines: int  # lines added to the index from the WARC
    graph_pages: int  # records added to the graph segment from the WARC
    torn_bytes: int  # bytes cut from the tails of the derived files


@dataclass(frozen=True, slots=True)
class RecordInfo:
    """What the index and the graph need of one WARC record, and where it lies."""

    kind: str
    offset: int
    length: int
    headers: Any  # warcio StatusAndHeaders of the WARC record (warcio is untyped)
    status: int | None
    mime: str
    fields: list[tuple[str, str]]  # a metadata record's fields


def warc_records(path: Path, start: int = 0) -> Iterator[RecordInfo]:
    """The records of a WARC file from the one at ``start``, with their lengths."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        f.seek(start)
        iterator = ArchiveIterator(f)
        previous: tuple[str, int, Any, int | None, str, list[tuple[str, str]]] | None = None
        for record in iterator:
            kind = record.rec_type
            status = mime = None
            fields: list[tuple[str, str]] = []
            if kind in INDEXED and record.http_headers is not None:
                code = record.http_headers.get_statuscode()
                status = int(code) if code and code.isdigit() else None
                mime = "warc/revisit" if kind == "revisit" else cdxj.mime_of(record.http_headers.get_header("Content-Type"))
            if record.rec_headers.get_header("WARC-Target-URI", "").startswith("dns:"):
                mime = "text/dns"
            if kind == "metadata":
                fields = metadata_fields(record.content_stream().read())
            offset = iterator.get_record_offset()  # reads the rest of the record: after its content
            if previous is not None:
                yield RecordInfo(previous[0], previous[1], offset - previous[1], *previous[2:])
            previous = (kind, offset, record.rec_headers, status, mime or "unk", fields)
        if previous is not None:
            yield RecordInfo(previous[0], previous[1], size - previous[1], *previous[2:])


def metadata_fields(block: bytes) -> list[tuple[str, str]]:
    """The ``name: value`` fields of an ``application/warc-fields`` block, in order."""
    fields = []
    for line in block.decode("utf-8", "replace").split("\r\n"):
        name, sep, value = line.partition(": ")
        if sep:
            fields.append((name, value))
    return fields


def links_of(fields: list[tuple[str, str]]) -> list[str]:
    """A page's links as its metadata record lists them: its redirect target, or its outlinks."""
    redirect = [v for n, v in fields if n == "redirect"]
    return redirect or [v for n, v in fields if n == "outlink"]


def _end(line: bytes) -> int:
    entry = cdxj.parse_line(line)
    return entry.offset + entry.length


def rebuild(directory: Path, warc_name: str, *, graph: bool) -> Rebuilt:
    """Bring ``warc_name``'s index (and graph segment if ``graph``) up to date with the WARC and finish them."""
    warc = directory / warc_name
    index = cdxj.IndexWriter(directory, warc_name)
    segment = linkgraph.GraphWriter(directory, warc_name)
    need_index = index.path.exists() or not index.final.exists()
    need_graph = graph and (segment.path.exists() or not segment.final.exists())
    warc_size = warc.stat().st_size
    torn = 0
    lines: list[bytes] = []
    index_covered = graph_covered = -1
    if need_index and index.path.exists():
        before = index.path.stat().st_size
        lines = cdxj.complete_lines(index.path)
        torn += before - index.path.stat().st_size
        inside = [line for line in lines if _end(line) <= warc_size]  # the WARC repair may have cut their records
        torn += sum(map(len, lines)) - sum(map(len, inside))
        lines = inside
        index_covered = max((cdxj.parse_line(line).offset for line in lines), default=-1)
    if need_graph and segment.path.exists():
        cut, last = linkgraph.repair(segment.path, warc_size)
        torn += cut
        graph_covered = -1 if last is None else last
    starts = [c for c, needed in ((index_covered, need_index), (graph_covered, need_graph)) if needed]
    added_lines = added_pages = 0
    if starts:
        capture: RecordInfo | None = None
        for record in warc_records(warc, max(0, min(starts))):
            uri = record.headers.get_header("WARC-Target-URI")
            if record.kind in INDEXED:
                capture = record
                if need_index and record.offset > index_covered:
                    lines.append(cdxj.cdxj_line(
                        uri, record.headers.get_header("WARC-Date"), mime=record.mime,
                        status=record.status, digest=record.headers.get_header("WARC-Payload-Digest") or "",
                        length=record.length, offset=record.offset, filename=warc_name,
                    ))
                    added_lines += 1
            elif (record.kind == "metadata" and need_graph and capture is not None and capture.offset > graph_covered
                  and record.headers.get_header("WARC-Concurrent-To") == capture.headers.get_header("WARC-Record-ID")):
                # a page's own metadata record; one about a host (a quality score) belongs to no capture
                segment.add(capture.offset, uri, links_of(record.fields))
                added_pages += 1
    if need_index:
        cdxj.write_sorted(lines, index.final)
        index.path.unlink(missing_ok=True)
    if need_graph:
        segment.finish()
    return Rebuilt(added_lines, added_pages, torn)
