"""The archive of one agent (ARCHITECTURE.md, step 7): WARC files, their indexes, the link graph, dedup.

The engine holds one :class:`Archive` per process and calls it for every fetch:

1. ``examine(...)`` computes the payload digest of a page (and, with ``store.dedup = "near"``,
   its near-duplicate signature) and asks the :class:`~store.dedup.SignatureIndex` whether
   the archive holds the same payload, or a near-duplicate of it; the answer (:class:`Check`)
   lets the engine skip the links of a duplicate (``store.follow_duplicates``).
2. ``store(...)`` writes the fetch with one write (``store.warc``): request, then response —
   or ``revisit`` if the same payload is stored — then, for pages, a metadata record (outlinks,
   fetch time, IP, redirect target); then the record's CDXJ line (``store.cdxj``) and the
   page's links (``store.linkgraph``), and remembers the keys of what it stored in full.

A revisit record promises that its payload is the one of the record it refers to, and replay
tools serve that record's payload in its place; so revisits are written for **identical
payloads only** (the payload digest, of the body as transferred, equals the original's), with
Heritrix's profile ``http://netpreserve.org/warc/1.1/revisit/identical-payload-digest``; and a
304 (a conditional revisit the server says is unchanged) is one of profile
``server-not-modified``, as Heritrix writes it, naming only the URI it stands for. A
**near-duplicate** (the same page up to HTML attributes, digits, case and whitespace, or the
same content under another content-coding: ``store.signature``) has other bytes, so it is kept
as a full response, and its metadata record names the capture it nearly repeats
(``nearDuplicateOf: URI DATE RECORD-ID``); with ``store.near_duplicates = "skip"`` it is not
written at all, as BUbiNG does (``store`` then returns ``None``). A near-duplicate stored in
full is the original of its own payload. Only complete ``200`` responses with a payload take
part: a truncated page is never an original, and an error page is never a duplicate.

Files, per store instance (``prefix``) in ``directory``, so that agents never share one:
``P-…-NNNNN.warc.gz`` and, beside each, ``.cdxj`` and ``.graph`` (``.open`` while written);
``P-signatures.bloom`` and ``P-signatures.sqlite``. Opening an archive after a kill -9
repairs every file it owns: torn WARC tails are cut, then each index and graph segment that
was not finished is cut back to whole lines (records) and completed from the WARC
(``store.recovery``), so WARC, index and graph agree.

A full disk raises :class:`~store.errors.StoreFull` from ``examine``/``store``; the WARC write
that failed is cut back, so the file holds whole records only. ``close`` then finishes what
it can and leaves the rest ``.open`` for the next open to repair; it does not raise for a
full disk, and ``statistics().unfinished_files`` counts what it left.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import orjson

from store import cdxj, linkgraph, recovery
from store.dedup import DedupStatistics, Original, SignatureIndex, payload_key
from store.errors import StoreError
from store.signature import exact_signature, html_signature
from store.warc import OPEN_SUFFIX, PROFILE_IDENTICAL, PROFILE_NOT_MODIFIED, Capture, Exchange, Revisit, WarcStore, payload_digest

DEDUP_MODES = ("near", "exact", "off")
NEAR_DUPLICATE_MODES = ("store", "skip")
NEAR_DUPLICATE_FIELD = "nearDuplicateOf"
"""The metadata field of a near-duplicate stored in full: ``URI DATE RECORD-ID`` of the capture it nearly repeats."""
CPU_SAMPLE = 17
"""``examine`` and ``store`` read the CPU clock around one call in this many and count it this many times:
the process's CPU clock is a system call (0.6 µs here), four a page in the agents' system calls. Odd,
so that the calls timed fall on both of a page's two, which alternate."""


class ArchiveSettings(Protocol):
    """What the archive reads from ``engine.config.StoreConfig`` (the store never imports the engine)."""

    warc_max_bytes: int
    gzip_level: int
    dedup: str
    near_duplicates: str
    dedup_capacity: int
    dedup_error_rate: float
    link_graph: bool


@dataclass(frozen=True, slots=True)
class Check:
    """What ``examine`` found about a fetch's content."""

    digest: str  # the payload digest
    original: Original | None  # a capture of the same payload: the fetch is a revisit of it
    near: Original | None  # a capture of a near-duplicate (other bytes): the fetch nearly repeats it
    new_keys: tuple[bytes, ...] = ()  # keys the index lacks, to remember if the fetch is stored in full

    @property
    def duplicate(self) -> bool:
        """The content is in the archive already, byte for byte or nearly."""
        return self.original is not None or self.near is not None


@dataclass(frozen=True)
class ArchiveStatistics:
    records: int  # WARC records written, warcinfo included
    files: int  # WARC files opened
    bytes_written: int  # compressed WARC bytes
    uncompressed_bytes: int
    responses: int  # response records of fetches (robots.txt included)
    revisits_identical: int  # revisit records of identical payloads
    revisits_not_modified: int  # revisit records of 304 answers to conditional revisits
    near_duplicates_stored: int  # of the responses, near-duplicates stored in full (store.near_duplicates = "store")
    near_duplicates_skipped: int  # near-duplicates not written at all (store.near_duplicates = "skip")
    metadata_records: int
    dns_records: int
    index_lines: int
    graph_pages: int
    graph_edges: int
    repaired_files: int  # WARC files finished at open after a crash
    torn_bytes_dropped: int  # from WARC files, indexes and graph segments
    index_lines_rebuilt: int
    graph_pages_rebuilt: int
    unfinished_files: int  # files ``close`` could not finish (a full disk): left ``.open``
    cpu_seconds: float  # CPU time spent in examine and store, estimated from one call in CPU_SAMPLE
    dedup: DedupStatistics | None


def config_digest(config: Mapping[str, object]) -> str:
    """A digest of a configuration (its tables as JSON with sorted keys), for the warcinfo record."""
    return "sha1:" + hashlib.sha1(orjson.dumps(config, option=orjson.OPT_SORT_KEYS)).hexdigest()


class Archive:
    """WARC files, CDXJ indexes, link graph and content dedup of one store instance (``prefix``)."""

    def __init__(self, directory: Path, prefix: str, settings: ArchiveSettings, info: Mapping[str, str]) -> None:
        if settings.dedup not in DEDUP_MODES:
            raise ValueError(f"dedup must be one of {', '.join(DEDUP_MODES)}, not {settings.dedup!r}")
        if settings.near_duplicates not in NEAR_DUPLICATE_MODES:
            raise ValueError(
                f"near_duplicates must be one of {', '.join(NEAR_DUPLICATE_MODES)}, not {settings.near_duplicates!r}"
            )
        self.directory = Path(directory)
        self.settings = settings
        self.warc = WarcStore(
            self.directory, prefix=prefix, max_file_bytes=settings.warc_max_bytes, info=info, gzip_level=settings.gzip_level
        )
        self.signatures = (
            None
            if settings.dedup == "off"
            else SignatureIndex(self.directory, prefix, capacity=settings.dedup_capacity, error_rate=settings.dedup_error_rate)
        )
        self._index: cdxj.IndexWriter | None = None
        self._graph: linkgraph.GraphWriter | None = None
        self._counts = dict.fromkeys(
            ("responses", "identical", "not_modified", "near_stored", "near_skipped", "metadata", "dns", "lines", "pages", "edges"), 0
        )
        self._rebuilt = recovery.Rebuilt(0, 0, 0)
        self._unfinished = 0
        self._cpu = 0.0
        self._calls = 0
        self._closed = False
        self._recover()

    # -- recovery ----------------------------------------------------------------------------

    def _recover(self) -> None:
        """Finish the index and graph segment of every WARC file of this prefix that lacks them."""
        owned: dict[str, list[Path]] = {}
        for path in self.directory.iterdir():
            stem = path.name.removesuffix(OPEN_SUFFIX)
            for suffix in (cdxj.CDXJ_SUFFIX, linkgraph.GRAPH_SUFFIX):
                if stem.endswith(suffix) and self.warc.name_pattern.fullmatch(stem.removesuffix(suffix) + ".warc.gz"):
                    owned.setdefault(stem.removesuffix(suffix) + ".warc.gz", []).append(path)
            if self.warc.name_pattern.fullmatch(path.name):
                owned.setdefault(path.name, [])
        lines = pages = torn = 0
        for name, derived in sorted(owned.items()):
            if not (self.directory / name).exists():  # an empty leftover the WARC store deleted
                for path in derived:
                    path.unlink()
                continue
            done = {p.name for p in derived if not p.name.endswith(OPEN_SUFFIX)}
            wanted = {cdxj.index_name(name)} | ({linkgraph.graph_name(name)} if self.settings.link_graph else set())
            if wanted <= done and all(not p.name.endswith(OPEN_SUFFIX) for p in derived):
                continue
            r = recovery.rebuild(self.directory, name, graph=self.settings.link_graph)
            lines, pages, torn = lines + r.index_lines, pages + r.graph_pages, torn + r.torn_bytes
        self._rebuilt = recovery.Rebuilt(lines, pages, torn)

    # -- per fetch -----------------------------------------------------------------------------

    def _clock(self) -> float:
        """The CPU clock for one call in :data:`CPU_SAMPLE`, else -1 (not timed)."""
        self._calls += 1
        return -1.0 if self._calls % CPU_SAMPLE else time.process_time()

    def _spent(self, started: float) -> None:
        if started >= 0:
            self._cpu += (time.process_time() - started) * CPU_SAMPLE

    def examine(self, *, status: int, body: bytes, payload: bytes | None, html: bool, complete: bool) -> Check:
        """The payload digest of ``body`` (as transferred) and, for complete 200 responses, whether
        the archive holds the same payload or (``near`` mode) a near-duplicate. ``payload`` is
        the body with content-coding removed (``None`` if it could not be decoded); ``html`` says
        to use the HTML near-duplicate signature; ``complete`` is false if the body or its
        decoding was cut."""
        started = self._clock()
        digest = payload_digest(body)
        index = self.signatures
        if index is None or status != 200 or not complete or not body:
            self._spent(started)
            return Check(digest, None, None)
        key = payload_key(digest)
        original = index.original(key)
        new_keys: tuple[bytes, ...] = () if original is not None else (key,)
        if original is not None and original.payload_digest != digest:
            original = None  # two digests under one key: never a revisit without the same payload
        near = None
        if original is None and self.settings.dedup == "near" and payload:
            signature = html_signature(payload) if html else exact_signature(payload)
            near = index.original(signature)
            if near is None:
                new_keys += (signature,)
            elif near.payload_digest == digest:  # a table written before payload keys existed
                original, near = near, None
        self._spent(started)
        return Check(digest, original, near, new_keys)

    def store(
        self,
        exchange: Exchange,
        *,
        status: int | None,
        mime: str,
        check: Check | None = None,
        page: bool = False,
        links: Sequence[str] = (),
        redirect: str | None = None,
        fetch_seconds: float | None = None,
        payload_truncated: bool = False,
    ) -> Capture | None:
        """Write one fetch (see the module docstring); ``page`` adds its metadata record and graph record.

        ``links`` are the page's outlinks (none for a duplicate whose links were not
        followed), ``redirect`` its redirect target, ``payload_truncated`` says its decoding was
        cut at the body limit (a decompression bomb). Returns ``None``, having written nothing,
        for a near-duplicate when ``store.near_duplicates`` is ``"skip"``.
        """
        started = self._clock()
        revisit = near = None
        if status == 304:  # a conditional revisit answered "not modified": the body is the earlier one
            revisit = Revisit(exchange.url, "", "", PROFILE_NOT_MODIFIED)
        elif check is not None:
            if check.original is not None:
                o = check.original
                revisit = Revisit(o.uri, o.date, o.record_id, PROFILE_IDENTICAL)
            near = check.near
        if near is not None and self.settings.near_duplicates == "skip":
            self._counts["near_skipped"] += 1
            self._spent(started)
            return None
        metadata: list[tuple[str, str]] = []
        if near is not None:
            metadata.append((NEAR_DUPLICATE_FIELD, f"{near.uri} {near.date} {near.record_id}"))
        if page:
            if fetch_seconds is not None:
                metadata.append(("fetchTimeMs", str(round(fetch_seconds * 1000))))
            if exchange.ip:
                metadata.append(("ip", exchange.ip))
            if redirect:
                metadata.append(("redirect", redirect))
            if payload_truncated:
                metadata.append(("payloadTruncated", "length"))
            metadata += [("outlink", link) for link in dict.fromkeys(links)]
        capture = self.warc.store_exchange(exchange, digest=check.digest if check else None, revisit=revisit, metadata=metadata)
        self._count(revisit, near is not None, bool(metadata))
        graph_links = ([redirect] if redirect else list(links)) if page else None
        self._derive(capture, exchange.url, status, mime, graph_links)
        if check is not None and revisit is None and self.signatures is not None:
            stored = Original(exchange.url, capture.date, capture.record_id, capture.payload_digest)
            for key in check.new_keys:
                self.signatures.remember(key, stored)
        self._rotate_if_full()
        self._spent(started)
        return capture

    def store_dns(self, host: str, addresses: Sequence[str], resolved_at: float, ttl: int) -> Capture:
        """A DNS answer as a ``dns:`` response record (``store.dns_records``)."""
        capture = self.warc.store_dns(host, addresses, resolved_at, ttl)
        self._counts["dns"] += 1
        self._derive(capture, f"dns:{host}", None, "text/dns", None)
        self._rotate_if_full()
        return capture

    def store_metadata(self, uri: str, fields: Sequence[tuple[str, str]], when: float) -> Capture:
        """A metadata record about ``uri`` that belongs to no fetch, such as a host's quality score
        (``engine/quality_log.py``); neither indexed nor in the link graph."""
        capture = self.warc.store_metadata(uri, fields, when)
        self._counts["metadata"] += 1
        self._rotate_if_full()
        return capture

    def _count(self, revisit: Revisit | None, near: bool, metadata: bool) -> None:
        c = self._counts
        c["responses" if revisit is None else "identical" if revisit.profile == PROFILE_IDENTICAL else "not_modified"] += 1
        c["near_stored"] += near
        c["metadata"] += metadata

    def _derive(self, capture: Capture, url: str, status: int | None, mime: str, links: Sequence[str] | None) -> None:
        """The capture's index line, and its graph record when it is a page."""
        if self._index is None or self._index.final.name != cdxj.index_name(capture.filename):
            self._index = cdxj.IndexWriter(self.directory, capture.filename)
            self._graph = linkgraph.GraphWriter(self.directory, capture.filename) if self.settings.link_graph else None
        mime = "warc/revisit" if capture.record_type == "revisit" else mime
        self._index.add(cdxj.cdxj_line(
            url, capture.date, mime=mime, status=status, digest=capture.payload_digest,
            length=capture.length, offset=capture.offset, filename=capture.filename,
        ))
        self._counts["lines"] += 1
        if self._graph is not None and links is not None:
            self._graph.add(capture.offset, url, links)
            self._counts["pages"] += 1
            self._counts["edges"] += len(set(links))

    def _rotate_if_full(self) -> None:
        if self.warc.full:
            self._finish_file()

    def _finish_file(self) -> None:
        """Finish the WARC file, then what derives from it (a crash in between is repaired at open)."""
        self.warc.close_file()
        index, graph, self._index, self._graph = self._index, self._graph, None, None
        if index is not None:
            index.finish()
        if graph is not None:
            graph.finish()

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Finish every file. Idempotent; a full disk leaves files ``.open`` (counted) rather than raising."""
        if self._closed:
            return
        self._closed = True
        try:
            self._finish_file()
        except (StoreError, OSError):
            for writer in (self._index, self._graph):
                if writer is not None:
                    writer.abandon()
            self._unfinished = sum(1 for p in self.directory.iterdir() if p.name.endswith(OPEN_SUFFIX) and self._owns(p.name))
        finally:
            with contextlib.suppress(StoreError, OSError):
                self.warc.close()
            if self.signatures is not None:
                with contextlib.suppress(StoreError, OSError):
                    self.signatures.close()

    def _owns(self, filename: str) -> bool:
        stem = filename.removesuffix(OPEN_SUFFIX)
        for suffix in (".warc.gz", cdxj.CDXJ_SUFFIX, linkgraph.GRAPH_SUFFIX):
            if stem.endswith(suffix) and self.warc.name_pattern.fullmatch(stem.removesuffix(suffix) + ".warc.gz"):
                return True
        return False

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def statistics(self) -> ArchiveStatistics:
        w, c, r = self.warc.statistics(), self._counts, self._rebuilt
        return ArchiveStatistics(
            records=w.records, files=w.files, bytes_written=w.bytes_written, uncompressed_bytes=w.uncompressed_bytes,
            responses=c["responses"], revisits_identical=c["identical"], revisits_not_modified=c["not_modified"],
            near_duplicates_stored=c["near_stored"],
            near_duplicates_skipped=c["near_skipped"],
            metadata_records=c["metadata"], dns_records=c["dns"], index_lines=c["lines"],
            graph_pages=c["pages"], graph_edges=c["edges"], repaired_files=w.repaired_files,
            torn_bytes_dropped=w.torn_bytes_dropped + r.torn_bytes, index_lines_rebuilt=r.index_lines,
            graph_pages_rebuilt=r.graph_pages, unfinished_files=self._unfinished, cpu_seconds=self._cpu,
            dedup=self.signatures.statistics() if self.signatures is not None else None,
        )

    def __repr__(self) -> str:
        s = self.statistics()
        return (
            f"<Archive {self.directory} {self.warc.open_name or '-'}: {s.responses} responses, "
            f"{s.revisits_identical} revisits, {s.near_duplicates_stored}+{s.near_duplicates_skipped} near-duplicates "
            f"stored+skipped, {s.files} files, {s.bytes_written} bytes>"
        )
