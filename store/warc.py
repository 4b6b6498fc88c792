"""WARC/1.1 files (ARCHITECTURE.md, step 7): the records of each fetch, one gzip member each.

``WarcStore.store_exchange`` turns one HTTP exchange into a ``request`` record, a
``response`` record (or a ``revisit`` record when the archive already holds the content) and,
when given, a ``metadata`` record (outlinks, fetch time, IP, redirect target), all linked by
``WARC-Concurrent-To``. ``store_dns`` writes a DNS answer as Heritrix does (``dns:`` URI,
``text/dns``). :class:`store.archive.Archive` decides what to write; this module only writes.

Invariants, and why:

* **One gzip member per record, one ``write`` per exchange.** Each record can be read on
  its own from its offset (what CDX indexes and replay tools need), and a crash can only
  tear the *last* member of a file, which ``repair_torn_tail`` cuts off. A write that fails
  (a full disk) is cut back at once, so records after it follow whole members.
* **Files are written as ``*.warc.gz.open`` and renamed when closed** (Heritrix's
  convention), so a reader knows which files are finished. A new store repairs and renames
  the leftovers of its own prefix in its directory (``recovered`` names them); two live
  stores must not share a directory *and* a prefix.
* **Each file begins with a ``warcinfo`` record**, and every other record names it in
  ``WARC-Warcinfo-ID``. A file is opened at the first record, so a store that writes
  nothing leaves no file. The owner rotates files: ``full`` says the open file has reached
  ``max_file_bytes`` and ``close_file`` finishes it, so the owner can finish what it derives
  from the file (its index) at the same moment.
* **Revisit records** keep ``WARC-Target-URI`` and the HTTP response head as their block,
  name the original in ``WARC-Refers-To``, ``WARC-Refers-To-Target-URI`` and
  ``WARC-Refers-To-Date``, carry the payload digest that was compared, and state their
  ``WARC-Profile`` (WARC 1.1 §6.7). A 304 answer to a conditional revisit is a revisit record
  of profile ``server-not-modified`` (§6.7.3, as Heritrix writes it) that names only the URI it
  stands for: which earlier record holds the content is not known when it is written.

The records are composed here rather than with warcio's ``WARCWriter``: PERF-NOTES.md
measured WARC gzip as the largest per-page cost, and ``bench/warc_bench.py`` compares the
two (this writer with ISA-L level 1 is several times faster; the output passes
``warcio check``). Gzip levels 1–3 use ISA-L; 0 (stored) and 4–9 use zlib, since ISA-L
stops at 3. At level 1, the default, records up to 16 KB (a fetch's request, its response's
fields and head, its metadata) are written with one Huffman code chosen once
(``store.deflate``), which costs a third of ISA-L's time on them for some 7% more bytes.

Not thread-safe: one store per process, called from the event loop. The store never
imports the engine.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import os
import re
import random
import struct
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from isal import isal_zlib

from store import deflate
from store.durable import fsync_directory
from store.errors import StoreFull, full_when_no_room, is_no_room

OPEN_SUFFIX = ".open"
WARC_SUFFIX = ".warc.gz"
PROFILE_IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
PROFILE_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
_GZIP = 31  # wbits for a gzip header and trailer
_SCAN_CHUNK = 1 << 20
# Members are scanned from pieces of the file this long: at the end of a member the decompressor
# copies the input left over (``unused_data``), so pieces of a megabyte would be copied whole once
# per record (some 5 KB), which made the scan of a 48 MB file cost 0.78 CPU-s instead of 0.3
GZIP_PIECE = 1 << 14
# isal's stubs type ``error`` as an instance; it is the exception class IsalError
BAD_GZIP: tuple[type[Exception], ...] = (zlib.error, cast("type[Exception]", isal_zlib.error))


@dataclass(frozen=True, slots=True)
class Exchange:
    """One HTTP exchange as fetched: what the request and response records hold."""

    url: str
    ip: str | None
    fetched_at: float  # epoch seconds
    request_head: bytes
    response_head: bytes  # status line, header lines and the blank line
    body: bytes  # de-chunked, content-coding kept: the payload
    truncated: str | None = None  # WARC-Truncated reason ("length") when the body was cut
    compressed: bool = False  # the body is compressed already (see ``is_compressed``): its record stores it as it is


# Media types whose bytes deflate gains nothing on: compressed images, archives (audio and video are
# left out: WAV and raw formats deflate well, and a crawl of pages rarely stores either)
_COMPRESSED_TYPES = frozenset((
    "image/jpeg", "image/png", "image/gif", "image/webp", "image/avif", "image/heic",
    "application/zip", "application/gzip", "application/x-gzip", "application/zstd", "application/x-xz",
    "application/x-bzip2", "application/x-7z-compressed", "application/vnd.rar",
))  # fmt: skip


def is_compressed(content_coding: str | None, mime: str) -> bool:
    """Whether a response body is compressed already: a content-coding other than ``identity``, or a
    compressed media type (``mime`` lower-case, without parameters)."""
    if content_coding and content_coding.strip().lower() != "identity":
        return True
    return mime in _COMPRESSED_TYPES


@dataclass(frozen=True, slots=True)
class Revisit:
    """What a revisit record says about the original capture it stands in for."""

    uri: str
    date: str  # WARC-Date of the original; "" when unknown (then not written)
    record_id: str  # WARC-Record-ID of the original; "" when unknown (then not written)
    profile: str  # WARC-Profile


@dataclass(frozen=True, slots=True)
class Capture:
    """A stored fetch: where its response or revisit record lies, and what an index says of it."""

    record_type: str  # "response" or "revisit"; "metadata" for a record of no fetch (store_metadata)
    filename: str  # the finished name (no ``.open``), relative to the store's directory
    offset: int
    length: int  # compressed bytes of the record's gzip member
    record_id: str
    date: str  # WARC-Date
    payload_digest: str


@dataclass(frozen=True)
class WarcStatistics:
    records: int  # every record written, warcinfo included
    files: int  # files opened by this store
    bytes_written: int  # compressed, as on disk
    uncompressed_bytes: int
    repaired_files: int  # leftover ``.open`` files finished when the store was created
    torn_bytes_dropped: int


def repair_torn_tail(path: Path) -> int:
    """Cut ``path`` just after its last complete gzip member; return the bytes dropped.

    Records are appended one complete member per write, so only the tail can be torn (a
    crash mid-write, or a zero-filled block after a power loss). Members are found by
    decompressing, since gzip has no length field; a damaged member ends the scan there.
    """
    size = path.stat().st_size
    good = end_of_complete_members(path)
    if good < size:
        with open(path, "r+b") as f:
            f.truncate(good)
            os.fsync(f.fileno())
    return size - good


def end_of_complete_members(path: Path) -> int:
    """The offset just past the last complete gzip member of ``path`` (its size if all are whole)."""
    end = 0  # offset just past the last complete member
    offset = 0  # file offset of the first byte of ``data``
    decompressor = isal_zlib.decompressobj(wbits=_GZIP)
    data = b""
    with open(path, "rb") as f:
        while True:
            if not data:
                data = f.read(GZIP_PIECE)
                if not data:
                    return end
            try:  # output is bounded, so a member of a million zeros costs no memory
                decompressor.decompress(data, _SCAN_CHUNK)
            except BAD_GZIP:
                return end
            rest = decompressor.unused_data if decompressor.eof else decompressor.unconsumed_tail
            offset += len(data) - len(rest)
            data = rest
            if decompressor.eof:
                end = offset
                decompressor = isal_zlib.decompressobj(wbits=_GZIP)


def _compressor(level: int) -> Callable[[bytes], bytes]:
    if level == 1:
        isal = functools.partial(isal_zlib.compress, level=1, wbits=_GZIP)

        def compress(data: bytes) -> bytes:
            member = deflate.gzip_member(data)
            return isal(data) if member is None else member

        return compress
    if 2 <= level <= 3:
        return functools.partial(isal_zlib.compress, level=level, wbits=_GZIP)
    return functools.partial(zlib.compress, level=level, wbits=_GZIP)


def _head_deflater(level: int) -> Callable[[bytes], bytes]:
    """Raw deflate of the start of a member, ending on a byte boundary in a block that is not the last."""
    new = functools.partial(isal_zlib.compressobj, level, isal_zlib.DEFLATED, -15) if 1 <= level <= 3 \
        else functools.partial(zlib.compressobj, level, zlib.DEFLATED, -15)

    def sync_flushed(data: bytes) -> bytes:
        compressor = new()
        return compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)

    if level != 1:
        return sync_flushed

    def head(data: bytes) -> bytes:
        block = deflate.deflate_head(data)
        return sync_flushed(data) if block is None else block

    return head


_STORED_MAX = 0xFFFF  # bytes of a stored block at most
_RECORD_END = b"\r\n\r\n"
_LAST_EMPTY_BLOCK = b"\x01\x00\x00\xff\xff"  # BFINAL, stored, length 0 and its complement


def stored_tail_member(deflate_head: Callable[[bytes], bytes], head: bytes, tail: Sequence[bytes]) -> bytes:
    """One gzip member of ``head`` and the ``tail`` parts after it: ``head`` deflated, the tail in
    stored blocks (RFC 1951 §3.2.4), then an empty last block.

    For a block whose payload is compressed already (a gzip content-coding, a JPEG): deflating it
    again cost a fifth of writing the fetch's records and made the member larger, while the WARC
    fields and the HTTP head before it still shrink to a fifth.
    """
    crc, size = isal_zlib.crc32(head), len(head)
    parts: list[bytes | memoryview] = [deflate.GZIP_HEADER, deflate_head(head)]
    for data in tail:
        crc, size = isal_zlib.crc32(data, crc), size + len(data)
        view = memoryview(data)
        for at in range(0, len(data), _STORED_MAX):
            chunk = view[at : at + _STORED_MAX]
            parts += (struct.pack("<BHH", 0, len(chunk), len(chunk) ^ 0xFFFF), chunk)
    parts += (_LAST_EMPTY_BLOCK, struct.pack("<II", crc, size & 0xFFFFFFFF))
    return b"".join(parts)


def payload_digest(body: bytes) -> str:
    """``sha1:`` and the base32 SHA-1 of ``body``: the form of WARC-Block/Payload-Digest."""
    return _digest(body)


# base32 of 10 bits at a time: base64.b32encode is pure Python, 13 µs a digest, four digests a page
_B32 = [a + b for a in "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567" for b in "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"]


def _digest(*parts: bytes) -> str:
    h = hashlib.sha1()
    for part in parts:
        h.update(part)
    n = int.from_bytes(h.digest(), "big")  # 160 bits: 16 groups of 10, no padding
    return "sha1:" + "".join([_B32[(n >> shift) & 1023] for shift in range(150, -1, -10)])


_random = random.Random(os.urandom(32))
# A forked child must not repeat its parent's identifiers: it reseeds once, at the fork, rather
# than every record asking the kernel for its pid.
os.register_at_fork(after_in_child=lambda: _random.seed(os.urandom(32)))


def _record_id() -> str:
    """A random (version 4) UUID URN. ``uuid.uuid4`` costs a system call, and a page has four records;
    this takes its 122 random bits from a generator seeded from the OS in each process."""
    h = f"{_random.getrandbits(128):032x}"
    return f"<urn:uuid:{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}>"


def warc_date(epoch: float) -> str:
    """``2024-05-01T12:00:00.123456Z``: WARC/1.1 allows (and we keep) microseconds."""
    seconds = int(epoch)
    micros = min(999_999, int((epoch - seconds) * 1_000_000))
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{micros:06d}Z"


def _field_value(value: str) -> str:
    # a CR or LF would end the header line and let a URL forge WARC fields
    if "\r" in value or "\n" in value:
        value = value.replace("\r", "%0D").replace("\n", "%0A")
    return value


def warc_fields(fields: Sequence[tuple[str, str]]) -> bytes:
    """An ``application/warc-fields`` block: ``name: value`` lines."""
    return "".join(f"{name}: {_field_value(value)}\r\n" for name, value in fields).encode("utf-8", "replace")


def _record_front(head: str, length: int) -> bytes:
    """The start of a record: version line and fields (``head``), its length, the blank line."""
    return f"WARC/1.1\r\n{head}Content-Length: {length}\r\n\r\n".encode()


def _record(head: str, block_parts: tuple[bytes, ...]) -> bytes:
    """A whole record: version line and fields (``head``), the blank line, the block, two CRLFs."""
    return b"".join((_record_front(head, sum(len(p) for p in block_parts)), *block_parts, _RECORD_END))


class WarcStore:
    """Appends the records of each fetch to rotating ``.warc.gz`` files in ``directory``."""

    def __init__(
        self,
        directory: Path,
        *,
        prefix: str = "crawl",
        max_file_bytes: int = 1 << 30,
        info: Mapping[str, str],
        gzip_level: int = 1,
    ) -> None:
        self.directory = Path(directory)
        self.prefix = prefix
        self.max_file_bytes = max_file_bytes
        self.info = dict(info)
        self._compress = _compressor(gzip_level)
        self._deflate_head = _head_deflater(gzip_level)
        self.name_pattern = re.compile(re.escape(prefix) + r"-\d{14}-(\d{5,})\.warc\.gz")
        self._out: io.FileIO | None = None
        self._name = ""  # finished name of the open file
        self._size = 0  # bytes in the open file
        self._warcinfo_id = ""
        self._closed = False
        self._records = self._files = self._bytes = self._uncompressed = 0
        self._dropped = 0
        self.recovered: list[str] = []  # finished names of the leftovers repaired at creation
        self.directory.mkdir(parents=True, exist_ok=True)
        # serials are taken before recovery, so the name of a dropped empty leftover is not reused
        self._serial = max(self._existing_serials(), default=0)
        self._recover_leftovers()

    # -- writing -----------------------------------------------------------------------------

    def store_exchange(
        self,
        exchange: Exchange,
        *,
        digest: str | None = None,
        revisit: Revisit | None = None,
        metadata: Sequence[tuple[str, str]] = (),
    ) -> Capture:
        """Write the records of one fetch with one write; return where the response (or revisit) lies.

        ``digest`` is the payload digest if the caller has computed it already. With
        ``revisit`` the body is left out: the block is the response head alone. ``metadata``
        fields, if any, become a ``metadata`` record about the response.
        """
        out_name = self._ensure_open()
        e = exchange
        date = warc_date(e.fetched_at)
        request_id, response_id = _record_id(), _record_id()
        common = f"WARC-Date: {date}\r\nWARC-Target-URI: {_field_value(e.url)}\r\n"
        if e.ip:
            common += f"WARC-IP-Address: {e.ip}\r\n"
        common += f"WARC-Warcinfo-ID: {self._warcinfo_id}\r\n"
        request = _record(
            f"WARC-Type: request\r\nWARC-Record-ID: {request_id}\r\n{common}"
            f"WARC-Concurrent-To: {response_id}\r\n"
            "Content-Type: application/http;msgtype=request\r\n"
            f"WARC-Block-Digest: {_digest(e.request_head)}\r\n",
            (e.request_head,),
        )
        digest = digest or _digest(e.body)
        block: tuple[bytes, ...]
        if revisit is None:
            kind, block = "response", (e.response_head, e.body)
            extra = f"WARC-Truncated: {_field_value(e.truncated)}\r\n" if e.truncated else ""
        else:
            kind, block = "revisit", (e.response_head,)
            extra = (
                (f"WARC-Refers-To: {revisit.record_id}\r\n" if revisit.record_id else "")
                + f"WARC-Refers-To-Target-URI: {_field_value(revisit.uri)}\r\n"
                + (f"WARC-Refers-To-Date: {revisit.date}\r\n" if revisit.date else "")
                + f"WARC-Profile: {revisit.profile}\r\n"
            )
        response_fields = (
            f"WARC-Type: {kind}\r\nWARC-Record-ID: {response_id}\r\n{common}"
            f"WARC-Concurrent-To: {request_id}\r\n"
            "Content-Type: application/http;msgtype=response\r\n"
            f"WARC-Block-Digest: {_digest(*block)}\r\nWARC-Payload-Digest: {digest}\r\n{extra}"
        )
        if revisit is None and e.compressed and e.body:
            front = _record_front(response_fields, len(e.response_head) + len(e.body)) + e.response_head
            response_member = stored_tail_member(self._deflate_head, front, (e.body, _RECORD_END))
            response_bytes = len(front) + len(e.body) + len(_RECORD_END)
        else:
            response = _record(response_fields, block)
            response_member, response_bytes = self._compress(response), len(response)
        members = [self._compress(request), response_member]
        uncompressed = len(request) + response_bytes
        if metadata:
            fields = warc_fields(metadata)
            record = _record(
                f"WARC-Type: metadata\r\nWARC-Record-ID: {_record_id()}\r\n{common}"
                f"WARC-Concurrent-To: {response_id}\r\nContent-Type: application/warc-fields\r\n"
                f"WARC-Block-Digest: {_digest(fields)}\r\n",
                (fields,),
            )
            members.append(self._compress(record))
            uncompressed += len(record)
        offset = self._size + len(members[0])
        self._write(b"".join(members), uncompressed, records=len(members))
        return Capture(kind, out_name, offset, len(members[1]), response_id, date, digest)

    def store_metadata(self, uri: str, fields: Sequence[tuple[str, str]], when: float) -> Capture:
        """A ``metadata`` record about ``uri`` that belongs to no fetch (no ``WARC-Concurrent-To``)."""
        out_name = self._ensure_open()
        block = warc_fields(fields)
        record_id, date, digest = _record_id(), warc_date(when), _digest(block)
        head = (f"WARC-Type: metadata\r\nWARC-Record-ID: {record_id}\r\nWARC-Date: {date}\r\n"
                f"WARC-Target-URI: {_field_value(uri)}\r\nWARC-Warcinfo-ID: {self._warcinfo_id}\r\n"
                f"Content-Type: application/warc-fields\r\nWARC-Block-Digest: {digest}\r\n")
        return self._store_alone(out_name, "metadata", head, block, record_id, date, digest)

    def store_dns(self, host: str, addresses: Sequence[str], resolved_at: float, ttl: int) -> Capture:
        """A DNS answer as a ``response`` record for ``dns:host`` (Heritrix's form)."""
        out_name = self._ensure_open()
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(resolved_at))
        block = (stamp + "\n" + "".join(f"{host}.\t{ttl}\tIN\tA\t{a}\n" for a in addresses)).encode()
        record_id, date, digest = _record_id(), warc_date(resolved_at), _digest(block)
        head = (f"WARC-Type: response\r\nWARC-Record-ID: {record_id}\r\nWARC-Date: {date}\r\n"
                f"WARC-Target-URI: dns:{_field_value(host)}\r\nWARC-Warcinfo-ID: {self._warcinfo_id}\r\n"
                f"Content-Type: text/dns\r\nWARC-Block-Digest: {digest}\r\nWARC-Payload-Digest: {digest}\r\n")
        return self._store_alone(out_name, "response", head, block, record_id, date, digest)

    def _store_alone(self, out_name: str, kind: str, head: str, block: bytes, record_id: str, date: str,
                     digest: str) -> Capture:
        """One record in a gzip member of its own, part of no fetch's group (a DNS answer, a host's metadata)."""
        record = _record(head, (block,))
        member = self._compress(record)
        offset = self._size
        self._write(member, len(record), records=1)
        return Capture(kind, out_name, offset, len(member), record_id, date, digest)

    def _ensure_open(self) -> str:
        if self._closed:
            raise ValueError("WarcStore is closed")
        if self._out is None:
            self._open_file()
        return self._name

    def _write(self, data: bytes, uncompressed: int, records: int) -> None:
        """Append ``data`` (whole gzip members) with one write; a raw file has no buffer to tear."""
        out = self._out
        assert out is not None
        view = memoryview(data)
        try:
            while view:
                view = view[out.write(view) or 0 :]
        except OSError as e:  # e.g. disk full: cut the partial member, so later records follow whole ones
            with contextlib.suppress(OSError):
                out.truncate(self._size)
                out.seek(self._size)
            if is_no_room(e):
                raise StoreFull(self.directory / (self._name + OPEN_SUFFIX), e) from e
            raise
        self._size += len(data)
        self._bytes += len(data)
        self._uncompressed += uncompressed
        self._records += records

    # -- files -------------------------------------------------------------------------------

    @property
    def full(self) -> bool:
        """The open file has reached ``max_file_bytes``: time for ``close_file``."""
        return self._out is not None and self._size >= self.max_file_bytes

    @property
    def open_name(self) -> str | None:
        """The finished name of the file being written, if one is open."""
        return self._name if self._out is not None else None

    def _open_file(self) -> None:
        while True:
            self._serial += 1
            name = f"{self.prefix}-{time.strftime('%Y%m%d%H%M%S', time.gmtime())}-{self._serial:05d}{WARC_SUFFIX}"
            if (self.directory / name).exists():
                continue
            try:  # O_EXCL: never append to another writer's file
                self._out = open(self.directory / (name + OPEN_SUFFIX), "xb", buffering=0)
            except FileExistsError:
                continue
            except OSError as e:
                if is_no_room(e):
                    raise StoreFull(self.directory / name, e) from e
                raise
            break
        self._name, self._size = name, 0
        self._warcinfo_id = _record_id()
        fields = warc_fields(list(self.info.items()))
        warcinfo = _record(
            f"WARC-Type: warcinfo\r\nWARC-Record-ID: {self._warcinfo_id}\r\n"
            f"WARC-Date: {warc_date(time.time())}\r\nWARC-Filename: {name}\r\n"
            f"Content-Type: application/warc-fields\r\nWARC-Block-Digest: {_digest(fields)}\r\n",
            (fields,),
        )
        try:
            self._write(self._compress(warcinfo), len(warcinfo), records=1)
        except (OSError, StoreFull):  # not even the warcinfo fits: leave no empty file behind
            out, self._out = self._out, None
            out.close()
            with contextlib.suppress(OSError):
                os.unlink(self.directory / (name + OPEN_SUFFIX))
            raise
        self._files += 1

    def close_file(self) -> str | None:
        """Make the open file durable, then give it its finished name; return that name."""
        out = self._out
        if out is None:
            return None
        self._out = None
        try:
            with full_when_no_room(self.directory / (self._name + OPEN_SUFFIX)):  # some file systems say so only now
                os.fsync(out.fileno())
        finally:
            out.close()
        os.replace(self.directory / (self._name + OPEN_SUFFIX), self.directory / self._name)
        fsync_directory(self.directory)
        return self._name

    def _existing_serials(self) -> list[int]:
        return [int(m[1]) for p in self.directory.iterdir() if (m := self.name_pattern.fullmatch(p.name.removesuffix(OPEN_SUFFIX)))]

    def _recover_leftovers(self) -> None:
        """Finish the ``.open`` files of this prefix that a crash left behind."""
        for path in sorted(self.directory.iterdir()):
            name = path.name.removesuffix(OPEN_SUFFIX)
            if name == path.name or not self.name_pattern.fullmatch(name):
                continue
            self._dropped += repair_torn_tail(path)
            if path.stat().st_size == 0:
                path.unlink()  # nothing complete: not even the warcinfo record
            else:
                os.replace(path, path.with_name(name))
            self.recovered.append(name)
        if self.recovered:
            fsync_directory(self.directory)

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Flush, fsync and rename the open file. Idempotent."""
        if not self._closed:
            self._closed = True
            self.close_file()

    def __enter__(self) -> WarcStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def statistics(self) -> WarcStatistics:
        return WarcStatistics(
            records=self._records,
            files=self._files,
            bytes_written=self._bytes,
            uncompressed_bytes=self._uncompressed,
            repaired_files=len(self.recovered),
            torn_bytes_dropped=self._dropped,
        )

    def __repr__(self) -> str:
        s = self.statistics()
        return (
            f"<WarcStore {self.directory} {self._name or '-'}: {s.records} records, {s.files} files, "
            f"{s.bytes_written} bytes ({s.uncompressed_bytes} uncompressed)>"
        )
