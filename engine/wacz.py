"""``crawl warc wacz OUT``: a finished crawl's archive as one WACZ file (WACZ 1.1.1), for ReplayWeb.page and the like.

A WACZ is a ZIP file that a replay tool opens as it is, reading records at their offsets:

* ``archive/``: the WARC files, unchanged and *stored* (not deflated again: each record is a gzip
  member already, and a reader seeks to a record's offset inside the entry).
* ``indexes/index.cdx``: the crawl's own CDXJ indexes (``store.cdxj``) merged into one sorted
  index; their filenames are already the bare names of ``archive/``. pywb reads the same lines.
* ``pages/pages.jsonl``: the page list a replay tool shows: a ``json-pages-1.0`` header, then one
  line per HTML page fetched with 200 (``url``, ``ts``, ``title`` when the page has one, ``id``).
  The pages come from the index: a response of ``text/html`` and status 200, or a revisit of
  status 200 with the payload digest of such a response (the same payload, so the same page).
  The title is read from the record's first ``TITLE_BYTES`` of payload, its content-coding
  undone (``engine.content``), as the parser reads it; a revisit takes its original's (the same
  payload digest).
* ``datapackage.json``: every other file's path, size and SHA-256 (a Frictionless data package),
  with ``wacz_version``, ``software`` and ``created``; ``datapackage-digest.json``: its SHA-256.

Written here with the standard library's ``zipfile`` rather than py-wacz, which is a test
dependency only (its ``wacz validate`` checks what this writes, ``tests/test_replay.py``): the
crawl's index is reused as it is instead of indexing every WARC file again. The file is written
aside and renamed (``store.durable``), so a crash leaves no half WACZ under its name. Files still
``.open`` (a crawl running, or one that crashed and was not resumed) are refused, as
``cdxj-merge`` refuses them.
"""

from __future__ import annotations

import hashlib
import re
import time
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

import orjson

from engine.content import decode
from engine.parse import title_of
from engine.parts import SOFTWARE
from store import cdxj
from store.durable import replace_file
from store.warc import OPEN_SUFFIX, WARC_SUFFIX

WACZ_VERSION = "1.1.1"
INDEX_PATH = "indexes/index.cdx"
PAGES_PATH = "pages/pages.jsonl"
HTML = frozenset(("text/html", "application/xhtml+xml"))
TITLE_BYTES = 1 << 13  # of payload read for a page's title: the <title> is near the top (the quality filter looks in 4 KiB)
_HEADS_BYTES = 1 << 14  # of a record read beyond the title's bytes: room for its WARC and HTTP heads
_CHUNK = 1 << 20
_GZIP = 31  # wbits: a gzip member
_CONTENT_ENCODING = re.compile(rb"^content-encoding:[ \t]*([^\r\n]*)", re.I | re.M).search


@dataclass(frozen=True, slots=True)
class Page:
    """One line of ``pages.jsonl``."""

    url: str
    timestamp: str  # 14 digits, as in the index
    title: str | None

    def line(self) -> bytes:
        t = self.timestamp
        fields = {"url": self.url, "ts": f"{t[:4]}-{t[4:6]}-{t[6:8]}T{t[8:10]}:{t[10:12]}:{t[12:14]}Z"}
        if self.title:
            fields["title"] = self.title
        fields["id"] = hashlib.sha1(f"{t}/{self.url}".encode()).hexdigest()[:22]
        return orjson.dumps(fields) + b"\n"


@dataclass(frozen=True)
class Packaged:
    """What ``package`` wrote."""

    warc_files: int
    index_lines: int
    pages: int
    bytes: int  # of the WACZ file


class NotFinished(Exception):
    """The folder holds files still ``.open``: its crawl is running, or crashed and was not resumed."""


def _pages(folder: Path, lines: Iterable[bytes]) -> list[Page]:
    """The HTML pages fetched with 200, oldest first, each with its title (see the module docstring)."""
    entries = [e for e in map(cdxj.parse_line, lines) if e.status == 200 and (e.mime in HTML or e.mime == "warc/revisit")]
    html = [e for e in entries if e.mime in HTML]
    readers: dict[str, BinaryIO] = {}
    try:
        titles = {e.digest: _title(readers, folder, e) for e in html}
    finally:
        for f in readers.values():
            f.close()
    revisits = [e for e in entries if e.mime == "warc/revisit" and e.digest in titles]
    pages = [Page(e.url, e.timestamp, titles[e.digest]) for e in html + revisits]
    return sorted(pages, key=lambda p: (p.timestamp, p.url))


def _title(readers: dict[str, BinaryIO], folder: Path, entry: cdxj.IndexEntry) -> str | None:
    """The title in the first ``TITLE_BYTES`` of the record's payload. The record is read straight from its
    gzip member, which the index locates (a third cheaper than warcio's reader here), its output bounded,
    so a record of a large page costs no more than a small one."""
    f = readers.get(entry.filename)
    if f is None:
        f = readers[entry.filename] = open(folder / entry.filename, "rb")
    f.seek(entry.offset)
    try:
        record = zlib.decompressobj(wbits=_GZIP).decompress(f.read(entry.length), _HEADS_BYTES + TITLE_BYTES)
    except zlib.error:
        return None
    _, _, message = record.partition(b"\r\n\r\n")  # the WARC head, then the HTTP response
    http_head, _, body = message.partition(b"\r\n\r\n")
    coding = _CONTENT_ENCODING(http_head)
    payload = decode(body[:TITLE_BYTES], coding[1].decode("latin-1") if coding else None, TITLE_BYTES).payload
    return title_of(payload) if payload else None


def _pages_jsonl(pages: list[Page]) -> bytes:
    header = orjson.dumps({"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}) + b"\n"
    return header + b"".join(p.line() for p in pages)


def _resource(path: str, data: Iterable[bytes], zf: zipfile.ZipFile, info: zipfile.ZipInfo,
              large: bool = False) -> dict[str, object]:
    """Write one entry from ``data``; its datapackage resource (name, path, SHA-256, size)."""
    sha, size = hashlib.sha256(), 0
    with zf.open(info, "w", force_zip64=large) as out:
        for chunk in data:
            sha.update(chunk)
            size += len(chunk)
            out.write(chunk)
    return {"name": path.rsplit("/", 1)[-1].lower(), "path": path, "hash": "sha256:" + sha.hexdigest(), "bytes": size}


def _chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            yield chunk


def _entry(path: str, stored: bool) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(path, time.gmtime()[:6])
    info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    return info


def package(folder: Path, out: Path, *, title: str) -> Packaged:
    """Write the WACZ of the archive in ``folder`` (a crawl's ``warc/`` folder) to ``out``."""
    names = sorted(p.name for p in folder.iterdir())
    still_open = [n for n in names if n.endswith(OPEN_SUFFIX)]
    if still_open:
        raise NotFinished(", ".join(still_open))
    warcs = [n for n in names if n.endswith(WARC_SUFFIX)]
    indexes = [(folder / n, "") for n in names if n.endswith(cdxj.CDXJ_SUFFIX)]
    pages = _pages(folder, cdxj.merge(indexes))
    lines = 0

    def index() -> Iterator[bytes]:  # streamed: the index of a large crawl need not fit in memory
        nonlocal lines
        for line in cdxj.merge(indexes):
            lines += 1
            yield line

    def write(f: IO[bytes]) -> None:
        with zipfile.ZipFile(f, "w") as zf:
            resources = [_resource(f"archive/{n}", _chunks(folder / n), zf, _entry(f"archive/{n}", stored=True),
                                   large=(folder / n).stat().st_size >= 1 << 31) for n in warcs]
            resources.append(_resource(INDEX_PATH, index(), zf, _entry(INDEX_PATH, stored=False)))
            resources.append(_resource(PAGES_PATH, [_pages_jsonl(pages)], zf, _entry(PAGES_PATH, stored=False)))
            datapackage = orjson.dumps({
                "profile": "data-package", "resources": resources, "title": title,
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "wacz_version": WACZ_VERSION, "software": SOFTWARE,
            }, option=orjson.OPT_INDENT_2)
            zf.writestr(_entry("datapackage.json", stored=False), datapackage)
            digest = {"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(datapackage).hexdigest()}
            zf.writestr(_entry("datapackage-digest.json", stored=False), orjson.dumps(digest, option=orjson.OPT_INDENT_2))

    replace_file(out, write)
    return Packaged(len(warcs), lines, len(pages), out.stat().st_size)
