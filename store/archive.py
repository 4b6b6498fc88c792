"""The archive of one agent (ARCHITECTURE.md, step 7): WARC files, their indexes, the link graph, dedup.

The engine holds one :class:`Archive` per process and calls it for every fetch:

1. ``examine(...)`` computes the content signature of a page and asks the
   :class:`~store.dedup.SignatureIndex` whether the content was stored before; the answer
   (:class:`Check`) lets the engine skip the links of a duplicate.
2. ``store(...)`` writes the fetch with one write (``store.warc``): request, then response —
   or ``revisit`` if the content was seen — then, for pages, a metadata record (outlinks,
   fetch time, IP, redirect target); then the record's CDXJ line (``store.cdxj``) and the
   page's links (``store.linkgraph``), and remembers the signature of new content.

Revisit profiles: ``http://netpreserve.org/warc/1.1/revisit/identical-payload-digest`` when
the payload digest equals the original's (the same bytes were transferred), else
:data:`PROFILE_NEAR`: the content matched the original's signature (``store.signature``: the
same page up to HTML attributes, digits, case and whitespace, or the same bytes under another
content-coding) but its payload differs. Either way the block holds the HTTP response head,
the payload is not stored again, and replay shows the original. Only complete ``200``
responses with a payload take part: a truncated page is never an original, and an error page
is never a duplicate.

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
from store.dedup import DedupStatistics, Original, SignatureIndex
from store.errors import StoreError
from store.signature import exact_signature, html_signature
from store.warc import OPEN_SUFFIX, PROFILE_IDENTICAL, Capture, Exchange, Revisit, WarcStore, payload_digest

PROFILE_NEAR = "urn:x-crawl:revisit:near-duplicate-signature"
"""Revisits whose content matched the original's signature although their payload differs."""
DEDUP_MODES = ("near", "exact", "off")


class ArchiveSettings(Protocol):
    """What the archive reads from ``engine.config.StoreConfig`` (the store never imports the engine)."""

    warc_max_bytes: int
    gzip_level: int
    dedup: str
    dedup_capacity: int
    dedup_error_rate: float
    link_graph: bool


@dataclass(frozen=True, slots=True)
class Check:
    """What ``examine`` found: the payload digest, the signature (if the content takes part) and its original."""

    digest: str
    signature: bytes | None
    original: Original | None

    @property
    def duplicate(self) -> bool:
        return self.original is not None


@dataclass(frozen=True)
class ArchiveStatistics:
    records: int  # WARC records written, warcinfo included
    files: int  # WARC files opened
    bytes_written: int  # compressed WARC bytes
    uncompressed_bytes: int
    responses: int  # response records of fetches (robots.txt included)
    revisits_identical: int  # revisit records with the identical-payload-digest profile
    revisits_near: int  # revisit records with the near-duplicate profile
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
    cpu_seconds: float  # CPU time spent in examine and store
    dedup: DedupStatistics | None


def config_digest(config: Mapping[str, object]) -> str:
    """A digest of a configuration (its tables as JSON with sorted keys), for the warcinfo record."""
    return "sha1:" + hashlib.sha1(orjson.dumps(config, option=orjson.OPT_SORT_KEYS)).hexdigest()


class Archive:
    """WARC files, CDXJ indexes, link graph and content dedup of one store instance (``prefix``)."""

    def __init__(self, directory: Path, prefix: str, settings: ArchiveSettings, info: Mapping[str, str]) -> None:
        if settings.dedup not in DEDUP_MODES:
            raise ValueError(f"dedup must be one of {', '.join(DEDUP_MODES)}, not {settings.dedup!r}")
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
        self._counts = dict.fromkeys(("responses", "identical", "near", "metadata", "dns", "lines", "pages", "edges"), 0)
        self._rebuilt = recovery.Rebuilt(0, 0, 0)
        self._unfinished = 0
        self._cpu = 0.0
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

    def examine(self, *, status: int, body: bytes, payload: bytes | None, html: bool, complete: bool) -> Check:
        """The payload digest of ``body`` (as transferred) and, for complete 200 responses, whether
        the archive holds the content already. ``payload`` is the body with content-coding
        removed (``None`` if it could not be decoded); ``html`` says to use the near-duplicate
        signature; ``complete`` is false if the body or its decoding was cut."""
        started = time.process_time()
        digest = payload_digest(body)
        signature = original = None
        mode = self.settings.dedup
        if self.signatures is not None and status == 200 and complete and body:
            if mode == "exact":
                signature = digest.encode()[5:21]
            elif payload:
                signature = html_signature(payload) if html else exact_signature(payload)
            if signature is not None:
                original = self.signatures.original(signature)
        self._cpu += time.process_time() - started
        return Check(digest, signature, original)

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
    ) -> Capture:
        """Write one fetch (see the module docstring); ``page`` adds its metadata record and graph record.

        ``links`` are the page's outlinks (none for a duplicate whose links were not
        followed), ``redirect`` its redirect target, ``payload_truncated`` says its decoding was
        cut at the body limit (a decompression bomb).
        """
        started = time.process_time()
        revisit = None
        if check is not None and check.original is not None:
            o = check.original
            profile = PROFILE_IDENTICAL if o.payload_digest == check.digest else PROFILE_NEAR
            revisit = Revisit(o.uri, o.date, o.record_id, profile)
        metadata: list[tuple[str, str]] = []
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
        self._count(capture, revisit, bool(metadata))
        graph_links = ([redirect] if redirect else list(links)) if page else None
        self._derive(capture, exchange.url, status, mime, graph_links)
        if check is not None and check.signature is not None and revisit is None and self.signatures is not None:
            self.signatures.remember(check.signature, Original(exchange.url, capture.date, capture.record_id, capture.payload_digest))
        self._rotate_if_full()
        self._cpu += time.process_time() - started
        return capture

    def store_dns(self, host: str, addresses: Sequence[str], resolved_at: float, ttl: int) -> Capture:
        """A DNS answer as a ``dns:`` response record (``store.dns_records``)."""
        capture = self.warc.store_dns(host, addresses, resolved_at, ttl)
        self._counts["dns"] += 1
        self._derive(capture, f"dns:{host}", None, "text/dns", None)
        self._rotate_if_full()
        return capture

    def _count(self, capture: Capture, revisit: Revisit | None, metadata: bool) -> None:
        c = self._counts
        if revisit is None:
            c["responses"] += 1
        else:
            c["identical" if revisit.profile == PROFILE_IDENTICAL else "near"] += 1
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
            responses=c["responses"], revisits_identical=c["identical"], revisits_near=c["near"],
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
            f"{s.revisits_identical}+{s.revisits_near} revisits, {s.files} files, {s.bytes_written} bytes>"
        )
