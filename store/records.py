"""Reading back the records ``store/warc.py`` writes, fast: one gzip member at a time, heads parsed as warcio does.

A takeover reads whole archives back (``engine/takeover.py``), and so does an agent resuming after a
crash (``engine/resume.py``), fetching nothing meanwhile. Through warcio's ``ArchiveIterator`` that
cost some 170 µs of CPU per fetch on the shared 2-core machine, three quarters of it in warcio's
record loading and header parsing (buffered and limit readers and header objects per record, the
HTTP head parsed for every response). Through this module replay costs some 70 µs a fetch
(``bench/replay_bench.py``; some 40 % of it inflating the members, which no reader avoids, some 30 %
finding the eighty-odd links of each metadata record), for it reads only what is asked: each
member is inflated whole (ISA-L), a record whose first field says it is of a kind not asked for is
passed over, a plain head (printable ASCII, CRLF lines, no continuation: every head
``store/warc.py`` writes) is searched for the fields asked rather than split, the block is a slice,
and an HTTP head is parsed only for the records whose payload a caller reads (:meth:`Record.http`).

What is read is exactly what warcio reads from the same bytes, for what ``store/warc.py`` writes:

* a head is parsed as ``warcio.statusandheaders.StatusAndHeadersParser`` parses it: lines end at
  ``\\n`` and are right-stripped, each decoded as UTF-8 or else ISO-8859-1; the first line that
  strips to nothing ends the head; a name ends at the first ``:`` and its value is left-stripped;
  a line beginning with a space or a tab continues the value before it; a line with no ``:`` is
  dropped; the first field of a name (any case) is the one given. ``tests/test_resume_reader.py``
  checks this against warcio over arbitrary heads, and the whole reader on crawled archives;
* the block is ``Content-Length`` bytes (0 when that is not a non-negative number, the rest of the
  member when it is absent), ``WARC-Target-URI`` loses enclosing ``<>`` and has its spaces
  percent-encoded, and a record has an HTTP head only where warcio parses one (a request, response
  or revisit of an ``http:``/``https:`` URI with a non-empty block; a revisit whose block is empty has
  none);
* members are read up to the first torn or damaged one, which is left out with all after it, as
  ``store.warc.end_of_complete_members`` leaves them out.

Not read as warcio would (an error here, where warcio reads on or fails otherwise): a member that
is not gzip-compressed WARC (ARC, plain WARC), and a member holding more than one record (what
follows a record's block in its member is not read). ``store/warc.py`` writes neither.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from isal import isal_zlib

from store.warc import BAD_GZIP, GZIP_PIECE

_GZIP = 31  # wbits for a gzip header and trailer
_WARC_VERSIONS = ("WARC/1.1", "WARC/1.0", "WARC/0.17", "WARC/0.18")  # warcio's WARC_TYPES
_HTTP_RECORDS = ("response", "request", "revisit")
_HTTP_SCHEMES = ("http:", "https:")
_TYPE_FIRST = b"WARC/1.1\r\nWARC-Type: "  # the version line and the first field: the record's kind


def gzip_members(f: BinaryIO) -> Iterator[bytes]:
    """The decompressed content of each gzip member of ``f`` from its position, up to the first torn or damaged one."""
    decompressor = isal_zlib.decompressobj(wbits=_GZIP)
    parts: list[bytes] = []
    while piece := f.read(GZIP_PIECE):
        while piece:
            try:
                parts.append(decompressor.decompress(piece))
            except BAD_GZIP:
                return
            if not decompressor.eof:
                break
            yield b"".join(parts) if len(parts) > 1 else parts[0]
            piece, parts = decompressor.unused_data, []
            decompressor = isal_zlib.decompressobj(wbits=_GZIP)


class Head:
    """A WARC or HTTP head: its first line (right-stripped), its fields, and the offset just past it."""

    __slots__ = ("first", "end", "_fields", "_text", "_lower")

    def __init__(self, first: str, end: int, fields: dict[str, str] | None, text: str = "") -> None:
        self.first, self.end = first, end
        self._fields = fields  # lower-case name → the value of its first field; None: found in ``_text``
        self._text, self._lower = text, text.lower()

    def get(self, name: str) -> str | None:
        """The value of the first field of ``name``, in any case (warcio's ``get_header``)."""
        if self._fields is not None:
            return self._fields.get(name.lower())
        key = f"\r\n{name.lower()}:"
        at = self._lower.find(key)
        if at < 0:
            return None
        at += len(key)
        end = self._text.find("\r\n", at)
        return self._text[at : len(self._text) if end < 0 else end].strip()


def _decoded(line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line.decode("iso-8859-1")


def _plain_head(raw: bytes, end: int) -> Head | None:
    """The head whose lines, up to its blank line, are ``raw``, if it is plain: printable ASCII lines ending
    in CRLF, the first not empty, none beginning with a space (no continuation line), no space before a
    colon: what ``store/warc.py`` writes and most servers send. Its fields are then found by searching
    for ``CRLF name:`` (:meth:`Head.get`), which finds the field that reading line by line finds, in a
    fraction of the time."""
    if not raw.isascii():
        return None
    text = raw.decode("ascii")
    if not text.replace("\r\n", "").isprintable() or "\r\n " in text or " :" in text:
        return None
    first = text.partition("\r\n")[0].rstrip()
    return Head(first, end, None, text) if first else None


def parse_head(data: bytes, start: int = 0, stop: int | None = None) -> Head | None:
    """The head that begins at ``start`` in ``data[:stop]``; None if there is nothing there (warcio's EOFError)."""
    stop = len(data) if stop is None else stop
    if start >= stop:
        return None
    blank = data.find(b"\r\n\r\n", start, stop)  # the usual end: no line after it is read
    if blank >= 0 and (head := _plain_head(data[start:blank], blank + 4)) is not None:
        return head
    lines = iter(data[start : stop if blank < 0 else blank + 4].split(b"\n"))
    consumed = 0  # bytes of the lines read, each with its "\n" (the last may have none: capped at ``stop``)

    def line() -> str:
        nonlocal consumed
        raw = next(lines, None)
        if raw is None:
            return ""
        consumed += len(raw) + 1
        return _decoded(raw).rstrip()

    first = line()
    fields: dict[str, str] = {}
    if first:  # else a blank first line: a head of no fields
        text = line()
        while text:
            name, sep, value = text.partition(":")
            value = value.lstrip()
            text = line()
            while text and text[0] in " \t":  # continuation lines
                value += text
                text = line()
            if sep:
                fields.setdefault(name.rstrip(" \t").lower(), value)
    return Head(first, min(start + consumed, stop), fields)


@dataclass(slots=True)  # not frozen: a frozen dataclass is slower to make, and there is one per record
class Record:
    """One WARC record read back: its head, and where its block lies in ``data`` (the member)."""

    kind: str | None  # WARC-Type
    url: str | None  # WARC-Target-URI, as warcio gives it
    head: Head
    data: bytes
    block_start: int
    block_end: int

    def block(self) -> bytes:
        return self.data[self.block_start : self.block_end]

    def http(self) -> tuple[Head, bytes] | None:
        """The HTTP head and the payload after it, where warcio parses an HTTP head; else None."""
        if (self.kind not in _HTTP_RECORDS or self.block_start == self.block_end or self.url is None
                or not self.url.startswith(_HTTP_SCHEMES)):
            return None
        head = parse_head(self.data, self.block_start, self.block_end)
        if head is None:
            return None  # an empty block after all: a revisit with no HTTP head
        return head, self.data[head.end : self.block_end]


def status_code(head: Head) -> str:
    """The status code of an HTTP response head, as warcio's ``get_statuscode`` gives it (``""`` if none)."""
    parts = head.first.split(" ", 1)
    return parts[1].strip().split(" ", 1)[0] if len(parts) > 1 else ""


def records(f: BinaryIO, kinds: Collection[str]) -> Iterator[Record]:
    """The records of ``kinds`` in a WARC file written by ``store/warc.py``, from ``f``'s position (a member's
    start). The others' heads are not parsed where the first field says the kind, as store/warc.py writes it."""
    for data in gzip_members(f):
        kind: str | None = None
        if data.startswith(_TYPE_FIRST):
            end = data.find(b"\r\n", len(_TYPE_FIRST))
            word = data[len(_TYPE_FIRST) : end]
            # letters only, and no continuation line after: the whole value, nothing to strip
            if end > 0 and word.isalpha() and data[end + 2 : end + 3] not in (b" ", b"\t"):
                kind = word.decode()
                if kind not in kinds:
                    continue
        head = parse_head(data)
        if head is None or not head.first:
            continue  # an empty member, or a blank first line: to warcio a record of no fields, no kind
        if not head.first.upper().startswith(_WARC_VERSIONS):
            raise ValueError(f"not a WARC record: {data[:40]!r}")
        if kind is None:
            kind = head.get("warc-type")
            if kind not in kinds:
                continue
        length: int | None = None
        if (text := head.get("content-length")) is not None:
            try:
                length = max(0, int(text))
            except ValueError:
                length = 0
        url = head.get("warc-target-uri")
        if url is not None:
            if url.startswith("<") and url.endswith(">"):
                url = url[1:-1]
            url = url.replace(" ", "%20")
        end = len(data) if length is None else min(len(data), head.end + length)
        yield Record(kind, url, head, data, head.end, end)
