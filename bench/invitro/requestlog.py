"""The in-vitro server's request log: one JSON line per request, for tests and benchmarks.

Role: the server's only output besides its responses. A test reads it back with
:func:`read_log` and checks what the crawler did: politeness (gaps between requests to one
host or IP), robots.txt first, no fetch of a disallowed path, one connection per request or
reuse, bytes transferred.

Times are ``time.monotonic()``. On Linux that is CLOCK_MONOTONIC, one clock for the whole
machine, so the crawler's own monotonic timestamps can be compared with these.

Records are serialised at once (orjson, about a microsecond) into a buffer that is written
when it passes 1 MiB and every ``flush_interval`` seconds, and on :meth:`RequestLog.close`.
The timer lives on the event loop; nothing blocks for long (a write of at most 1 MiB).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import orjson

_FLUSH_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One request as the server saw it (the keys of each JSON line are these field names)."""

    start: float
    """monotonic time when the request head was complete"""
    end: float
    """monotonic time when the response was handed to the transport (taken just before the write,
    so a client that received it cannot have finished earlier)"""
    conn: int
    """connection id, counting from 1 in the server process"""
    local: str
    """the server address the connection came to (a model IP, or the proxy's)"""
    proxy: bool
    """True for a proxy-form request (``GET http://host:port/path``), False for origin form"""
    method: str
    host: str
    """the host the client asked for (Host header or proxy URL), lower case, without port"""
    ip: str | None
    """the model IP of that host, None for an unknown host"""
    target: str
    """path and query as requested"""
    status: int
    bytes: int
    """body bytes sent (after gzip; 0 for HEAD or when the client left before the answer)"""
    gzip: bool
    aborted: bool
    """the connection was gone when the (slow) response was due"""
    credential: str | None = None
    """the posting lab's API: the bearer token of a timeline call"""
    lab: float | None = None
    """the posting lab's API: the lab clock when the request head was complete"""
    retry_after: float | None = None
    """the posting lab's API: the Retry-After (wall seconds) of a 429"""


class RequestLog:
    """Buffered JSON-lines writer; with ``path=None`` it only counts."""

    def __init__(self, path: str | Path | None, flush_interval: float = 0.5) -> None:
        self.path = Path(path) if path is not None else None
        self.flush_interval = flush_interval
        self.records = 0
        self._buffer = bytearray()
        self._file: BinaryIO | None = open(self.path, "wb") if self.path is not None else None  # noqa: SIM115
        self._timer: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Flush every ``flush_interval`` seconds from now on."""
        if self._file is not None:
            self._timer = loop.call_later(self.flush_interval, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        self.flush()
        self._timer = loop.call_later(self.flush_interval, self._tick, loop)

    def record(self, entry: dict[str, object]) -> None:
        """Append one record (a dict with :class:`LogRecord`'s fields)."""
        self.records += 1
        if self._file is None:
            return
        self._buffer += orjson.dumps(entry)
        self._buffer += b"\n"
        if len(self._buffer) >= _FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        if self._file is not None and self._buffer:
            self._file.write(self._buffer)
            self._file.flush()
            self._buffer.clear()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None


def read_log(path: str | Path) -> list[LogRecord]:
    """Every complete record of a log file, in the order written (a torn last line is skipped)."""
    records = []
    for line in Path(path).read_bytes().splitlines():
        try:
            records.append(LogRecord(**orjson.loads(line)))
        except (orjson.JSONDecodeError, TypeError):
            continue
    return records
