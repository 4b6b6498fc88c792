"""The archive (ARCHITECTURE.md, step 7): WARC/1.1 files of request and response records.

``WarcStore.store_exchange`` turns one HTTP exchange into a ``request`` and a ``response``
record, linked both ways by ``WARC-Concurrent-To``; robots.txt is stored the same way.

Invariants, and why:

* **One gzip member per record, one ``write`` per exchange.** Each record can be read on
  its own from its offset (what CDX indexes and replay tools need), and a crash can only
  tear the *last* member of a file, which ``repair_torn_tail`` cuts off.
* **Files are written as ``*.warc.gz.open`` and renamed when closed** (Heritrix's
  convention), so a reader knows which files are finished. A new store repairs and renames
  the leftovers of its own prefix in its directory; two live stores must not share a
  directory *and* a prefix.
* **Each file begins with a ``warcinfo`` record**, and every other record names it in
  ``WARC-Warcinfo-ID``. A file is opened at the first record, so a store that writes
  nothing leaves no file; it is rotated once it reaches ``max_file_bytes``.

The records are composed here rather than with warcio's ``WARCWriter``: PERF-NOTES.md
measured WARC gzip as the largest per-page cost, and ``bench/warc_bench.py`` compares the
two (this writer with ISA-L level 1 is several times faster; the output passes
``warcio check``). Gzip levels 1–3 use ISA-L; 0 (stored) and 4–9 use zlib, since ISA-L
stops at 3.

Not thread-safe: one store per process, called from the event loop. The store never
imports the engine.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import io
import os
import re
import time
import uuid
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import cast

from isal import isal_zlib

OPEN_SUFFIX = ".open"
_GZIP = 31  # wbits for a gzip header and trailer
_SCAN_CHUNK = 1 << 20
# isal's stubs type ``error`` as an instance; it is the exception class IsalError
_BAD_GZIP: tuple[type[Exception], ...] = (zlib.error, cast("type[Exception]", isal_zlib.error))


@dataclass(frozen=True)
class RecordLocation:
    """Where a record's gzip member lies: enough for a CDX line or a random-access read."""

    filename: str  # the finished name (no ``.open``), relative to the store's directory
    offset: int
    length: int  # compressed bytes


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
    good = _end_of_complete_members(path)
    if good < size:
        with open(path, "r+b") as f:
            f.truncate(good)
            os.fsync(f.fileno())
    return size - good


def _end_of_complete_members(path: Path) -> int:
    end = 0  # offset just past the last complete member
    offset = 0  # file offset of the first byte of ``data``
    decompressor = isal_zlib.decompressobj(wbits=_GZIP)
    data = b""
    with open(path, "rb") as f:
        while True:
            if not data:
                data = f.read(_SCAN_CHUNK)
                if not data:
                    return end
            try:  # output is bounded, so a member of a million zeros costs no memory
                decompressor.decompress(data, _SCAN_CHUNK)
            except _BAD_GZIP:
                return end
            rest = decompressor.unused_data if decompressor.eof else decompressor.unconsumed_tail
            offset += len(data) - len(rest)
            data = rest
            if decompressor.eof:
                end = offset
                decompressor = isal_zlib.decompressobj(wbits=_GZIP)


def _compressor(level: int) -> Callable[[bytes], bytes]:
    if 1 <= level <= 3:
        return functools.partial(isal_zlib.compress, level=level, wbits=_GZIP)
    return functools.partial(zlib.compress, level=level, wbits=_GZIP)


def _digest(*parts: bytes) -> str:
    h = hashlib.sha1()
    for part in parts:
        h.update(part)
    return "sha1:" + base64.b32encode(h.digest()).decode("ascii")


def _record_id() -> str:
    return f"<urn:uuid:{uuid.uuid4()}>"


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


def _record(head: str, block_parts: tuple[bytes, ...]) -> bytes:
    """A whole record: version line and fields (``head``), the blank line, the block, two CRLFs."""
    length = sum(len(p) for p in block_parts)
    return b"".join((f"WARC/1.1\r\n{head}Content-Length: {length}\r\n\r\n".encode(), *block_parts, b"\r\n\r\n"))


class WarcStore:
    """Appends request/response record pairs to rotating ``.warc.gz`` files in ``directory``."""

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
        self._name_pattern = re.compile(re.escape(prefix) + r"-\d{14}-(\d{5,})\.warc\.gz(?:\.open)?")
        self._out: io.FileIO | None = None
        self._name = ""  # finished name of the open file
        self._size = 0  # bytes in the open file
        self._warcinfo_id = ""
        self._closed = False
        self._records = self._files = self._bytes = self._uncompressed = 0
        self._repaired = self._dropped = 0
        self.directory.mkdir(parents=True, exist_ok=True)
        # serials are taken before recovery, so the name of a dropped empty leftover is not reused
        self._serial = max(self._existing_serials(), default=0)
        self._recover_leftovers()

    # -- writing -----------------------------------------------------------------------------

    def store_exchange(
        self,
        *,
        url: str,
        ip: str | None,
        fetched_at: float,
        request_head: bytes,
        response_head: bytes,
        body: bytes,
        truncated: str | None = None,
    ) -> RecordLocation:
        """Write the request and response records of one fetch; return the response's location.

        ``response_head`` is the status line, the header lines and the blank line as the engine
        gives them; ``body`` is the de-chunked body, which is the payload (and its digest).
        """
        if self._closed:
            raise ValueError("WarcStore is closed")
        if self._out is None:
            self._open_file()
        request_id, response_id = _record_id(), _record_id()
        common = f"WARC-Date: {warc_date(fetched_at)}\r\nWARC-Target-URI: {_field_value(url)}\r\n"
        if ip:
            common += f"WARC-IP-Address: {ip}\r\n"
        common += f"WARC-Warcinfo-ID: {self._warcinfo_id}\r\n"
        request = _record(
            f"WARC-Type: request\r\nWARC-Record-ID: {request_id}\r\n{common}"
            f"WARC-Concurrent-To: {response_id}\r\n"
            "Content-Type: application/http;msgtype=request\r\n"
            f"WARC-Block-Digest: {_digest(request_head)}\r\n",
            (request_head,),
        )
        response = _record(
            f"WARC-Type: response\r\nWARC-Record-ID: {response_id}\r\n{common}"
            f"WARC-Concurrent-To: {request_id}\r\n"
            "Content-Type: application/http;msgtype=response\r\n"
            f"WARC-Block-Digest: {_digest(response_head, body)}\r\n"
            f"WARC-Payload-Digest: {_digest(body)}\r\n" + (f"WARC-Truncated: {_field_value(truncated)}\r\n" if truncated else ""),
            (response_head, body),
        )
        request_member, response_member = self._compress(request), self._compress(response)
        offset = self._size + len(request_member)
        self._write(request_member + response_member, len(request) + len(response), records=2)
        location = RecordLocation(self._name, offset, len(response_member))
        if self._size >= self.max_file_bytes:
            self._close_file()
        return location

    def _write(self, data: bytes, uncompressed: int, records: int) -> None:
        """Append ``data`` (whole gzip members) with one write; a raw file has no buffer to tear."""
        out = self._out
        assert out is not None
        view = memoryview(data)
        try:
            while view:
                view = view[out.write(view) or 0 :]
        except OSError:  # e.g. disk full: cut the partial member, so later records follow whole ones
            with contextlib.suppress(OSError):
                out.truncate(self._size)
                out.seek(self._size)
            raise
        self._size += len(data)
        self._bytes += len(data)
        self._uncompressed += uncompressed
        self._records += records

    # -- files -------------------------------------------------------------------------------

    def _open_file(self) -> None:
        while True:
            self._serial += 1
            name = f"{self.prefix}-{time.strftime('%Y%m%d%H%M%S', time.gmtime())}-{self._serial:05d}.warc.gz"
            if (self.directory / name).exists():
                continue
            try:  # O_EXCL: never append to another writer's file
                self._out = open(self.directory / (name + OPEN_SUFFIX), "xb", buffering=0)
            except FileExistsError:
                continue
            break
        self._name, self._size = name, 0
        self._files += 1
        self._warcinfo_id = _record_id()
        fields = "".join(f"{k}: {_field_value(str(v))}\r\n" for k, v in self.info.items()).encode()
        warcinfo = _record(
            f"WARC-Type: warcinfo\r\nWARC-Record-ID: {self._warcinfo_id}\r\n"
            f"WARC-Date: {warc_date(time.time())}\r\nWARC-Filename: {name}\r\n"
            f"Content-Type: application/warc-fields\r\nWARC-Block-Digest: {_digest(fields)}\r\n",
            (fields,),
        )
        self._write(self._compress(warcinfo), len(warcinfo), records=1)

    def _close_file(self) -> None:
        """Make the open file durable, then give it its finished name."""
        out = self._out
        if out is None:
            return
        self._out = None
        try:
            os.fsync(out.fileno())
        finally:
            out.close()
        os.replace(self.directory / (self._name + OPEN_SUFFIX), self.directory / self._name)
        self._sync_directory()

    def _sync_directory(self) -> None:
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _existing_serials(self) -> list[int]:
        return [int(m[1]) for p in self.directory.iterdir() if (m := self._name_pattern.fullmatch(p.name))]

    def _recover_leftovers(self) -> None:
        """Finish the ``.open`` files of this prefix that a crash left behind."""
        for path in sorted(self.directory.iterdir()):
            if not (path.name.endswith(OPEN_SUFFIX) and self._name_pattern.fullmatch(path.name)):
                continue
            self._dropped += repair_torn_tail(path)
            self._repaired += 1
            if path.stat().st_size == 0:
                path.unlink()  # nothing complete: not even the warcinfo record
            else:
                os.replace(path, path.with_name(path.name[: -len(OPEN_SUFFIX)]))
        if self._repaired:
            self._sync_directory()

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Flush, fsync and rename the open file. Idempotent."""
        if not self._closed:
            self._closed = True
            self._close_file()

    def __enter__(self) -> WarcStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def statistics(self) -> WarcStatistics:
        return WarcStatistics(
            records=self._records,
            files=self._files,
            bytes_written=self._bytes,
            uncompressed_bytes=self._uncompressed,
            repaired_files=self._repaired,
            torn_bytes_dropped=self._dropped,
        )

    def __repr__(self) -> str:
        s = self.statistics()
        return (
            f"<WarcStore {self.directory} {self._name or '-'}: {s.records} records, {s.files} files, "
            f"{s.bytes_written} bytes ({s.uncompressed_bytes} uncompressed)>"
        )
