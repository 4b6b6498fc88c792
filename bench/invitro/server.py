"""The in-vitro web's HTTP/1.1 server: a raw ``asyncio.Protocol`` in front of the model.

Role: turns bytes on a socket into :meth:`WebModel.respond` calls and writes the answers back,
logging each request (:mod:`bench.invitro.requestlog`). One :class:`HttpService` holds what all
connections share (model, options, log, counters, the bandwidth timeline); one
:class:`HttpProtocol` per connection parses request heads and answers them in order.

It is both an origin server and a forward proxy, as BUbiNG's ``NamedGraphServerHttpProxy`` is
a proxy (peers.md §1.3): origin form (``GET /path`` + ``Host``) is served on every model IP,
proxy form (``GET http://host:port/path``) on any listener, usually ``127.0.0.1:PROXYPORT``.

Why not aiohttp's server: the server shares two cores with the crawler it measures, so each
request must cost little; a protocol with no coroutine per request, no header objects and
cached gzip costs a few tens of microseconds besides page generation.

Invariants: responses on a connection go out in request order (a slow response holds back the
requests pipelined behind it); every request that got a head gets exactly one log record.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import time
from collections import Counter
from dataclasses import dataclass
from typing import cast
from email.utils import formatdate

from bench.invitro.model import HeadAwareWeb, Response, Web
from bench.invitro.requestlog import RequestLog

try:  # ISA-L's deflate is about 3x zlib's at level 1 (shared/PERF-NOTES.md); zlib if absent
    from isal import isal_zlib as _zlib
except ImportError:  # pragma: no cover
    import zlib as _zlib  # type: ignore[no-redef]  # the same API under the same name

MAX_HEAD = 64 * 1024
_GZIP_WBITS = 31  # gzip container
_CHUNK = 8192


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """How the server behaves (the model decides what it says)."""

    keepalive: bool = True
    """honour persistent connections; False sends ``Connection: close`` on every response"""
    gzip: bool = True
    """gzip text bodies when the request's Accept-Encoding names gzip"""
    chunked: bool = False
    """send bodies with ``Transfer-Encoding: chunked`` instead of Content-Length"""
    bandwidth: float = 0.0
    """total bytes/s over all responses (each waits for its share of a shared timeline); 0 = no cap"""
    idle_timeout: float = 30.0
    """close connections with no complete request for this many seconds"""


@dataclass(frozen=True, slots=True)
class ServerStatistics:
    """What the server did since it started (``InVitro.statistics()`` adds DNS and CPU per request)."""

    requests: int
    body_bytes: int
    """body bytes sent, as transferred (after gzip)"""
    connections: int
    """connections accepted"""
    open_connections: int
    statuses: dict[int, int]
    cpu_seconds: float
    """process CPU (``time.process_time``) since the service started: server, DNS and model"""
    wall_seconds: float


@dataclass(frozen=True, slots=True)
class _Request:
    """One parsed request head: only what the answer and the log need."""

    method: str
    host: str
    target: str
    proxy: bool
    keep_alive: bool
    http10: bool
    gzip_ok: bool
    started: float
    headers: dict[bytes, bytes]


class HttpService:
    """State shared by every connection: model, options, log, counters, bandwidth timeline."""

    def __init__(self, model: Web, options: ServerOptions, log: RequestLog) -> None:
        self.model = model
        self.head_aware = model if isinstance(model, HeadAwareWeb) else None
        self.options = options
        self.log = log
        self.connections: set[HttpProtocol] = set()
        self.requests = 0
        self.body_bytes = 0
        self.statuses: Counter[int] = Counter()
        self.connections_total = 0
        self._bandwidth_free = 0.0
        self._cpu0 = time.process_time()
        self._wall0 = time.monotonic()
        self._date = (0, b"")
        self._sweeper: asyncio.TimerHandle | None = None
        self._gzipped: dict[tuple[str, str], bytes] = {}

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the timers; CPU and wall time count from here (after the listeners are set up)."""
        self._cpu0 = time.process_time()
        self._wall0 = time.monotonic()
        self.log.start(loop)
        self._sweeper = loop.call_later(1.0, self._sweep, loop)

    def new_id(self) -> int:
        self.connections_total += 1
        return self.connections_total

    def gzipped(self, host: str, target: str, body: bytes) -> bytes:
        """``body`` (the answer to host+target) gzipped at level 1, cached for repeated fetches."""
        key = (host, target)
        zipped = self._gzipped.get(key)
        if zipped is None:
            if len(self._gzipped) >= 1024:
                self._gzipped.clear()  # a crawl fetches each URL about once: no need for LRU order
            zipped = self._gzipped[key] = _zlib.compress(body, 1, _GZIP_WBITS)
        return zipped

    def date(self) -> bytes:
        now = int(time.time())
        if now != self._date[0]:
            self._date = (now, formatdate(now, usegmt=True).encode())
        return self._date[1]

    def bandwidth_delay(self, size: int, now: float) -> float:
        """Seconds to hold a response of ``size`` bytes so that all responses share the cap."""
        if self.options.bandwidth <= 0:
            return 0.0
        self._bandwidth_free = max(now, self._bandwidth_free) + size / self.options.bandwidth
        return self._bandwidth_free - now

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        deadline = time.monotonic() - self.options.idle_timeout
        for connection in [c for c in self.connections if c.idle_since < deadline]:
            connection.close()
        self._sweeper = loop.call_later(1.0, self._sweep, loop)

    def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        for connection in list(self.connections):
            connection.close()
        self.log.close()

    def statistics(self) -> ServerStatistics:
        return ServerStatistics(
            self.requests,
            self.body_bytes,
            self.connections_total,
            len(self.connections),
            dict(self.statuses),
            time.process_time() - self._cpu0,
            time.monotonic() - self._wall0,
        )


def _parse_head(head: bytes, started: float) -> tuple[_Request, int] | None:
    """The request in a head (without the blank line) and its body length; None if malformed."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return None
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon:
            return None
        headers[name.strip().lower()] = value.strip()
    target = parts[1].decode("latin-1")
    proxy = target[:7].lower() == "http://"
    if proxy:  # absolute form: the URL names the host
        rest = target[7:]
        cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
        authority, target = rest[:cut], rest[cut:] or "/"
        if target[0] == "?":
            target = "/" + target
    else:
        authority = headers.get(b"host", b"").decode("latin-1")
    host = authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority
    connection = headers.get(b"connection", b"").lower()
    http10 = parts[2] == b"HTTP/1.0"
    keep_alive = b"keep-alive" in connection if http10 else b"close" not in connection
    try:
        length = int(headers.get(b"content-length", b"0"))
    except ValueError:
        return None
    request = _Request(
        parts[0].decode("latin-1"),
        host.lower(),
        target.partition("#")[0],
        proxy,
        keep_alive,
        http10,
        b"gzip" in headers.get(b"accept-encoding", b"").lower(),
        started,
        headers,
    )
    return request, max(0, length)


class HttpProtocol(asyncio.Protocol):
    """One client connection: parse heads, answer in order, honour keep-alive and back-pressure."""

    def __init__(self, service: HttpService) -> None:
        self.service = service
        self.id = 0
        self.local = ""
        self.idle_since = time.monotonic()
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._busy = False  # a delayed response is pending: later requests wait
        self._paused = False  # the transport's write buffer is full

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        self.id = self.service.new_id()
        self.local = (transport.get_extra_info("sockname") or ("",))[0]
        self.service.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        self.service.connections.discard(self)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._serve()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        self._serve()

    def _serve(self) -> None:
        """Answer every complete request in the buffer, unless one must wait."""
        buffer = self._buffer
        while not self._busy and not self._paused and self._transport is not None:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > MAX_HEAD:
                    self._refuse(431, "Request Header Fields Too Large")
                return
            parsed = _parse_head(bytes(buffer[:end]), time.monotonic())
            if parsed is None:
                self._refuse(400, "Bad Request")
                return
            request, body_length = parsed
            if len(buffer) < end + 4 + body_length:
                return  # a request body (never used) has not all arrived
            del buffer[: end + 4 + body_length]
            self.idle_since = request.started
            self._answer(request)

    def _refuse(self, status: int, reason: str) -> None:
        assert self._transport is not None
        self._transport.write(f"HTTP/1.1 {status} {reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode())
        self._transport.close()

    def _answer(self, request: _Request) -> None:
        service = self.service
        if request.method not in ("GET", "HEAD"):
            if request.method == "CONNECT":
                response = Response(501, "Not Implemented", [], b"")
            else:
                response = Response(405, "Method Not Allowed", [("Allow", "GET, HEAD")], b"")
        else:
            try:
                if service.head_aware is None:
                    response = service.model.respond(request.host, request.target)
                else:
                    response = service.head_aware.respond_head(request.host, request.target, request.headers,
                                                               request.started)
            except Exception as e:  # a model bug must not take the server down; the log shows 500
                response = Response(500, "Internal Server Error", [("Content-Type", "text/plain")], repr(e).encode())
        gzip = service.options.gzip and response.compressible and request.gzip_ok
        body = service.gzipped(request.host, request.target, response.body) if gzip else response.body
        delay = response.delay + service.bandwidth_delay(len(body), request.started)
        if delay > 0:
            self._busy = True
            asyncio.get_running_loop().call_later(delay, self._send_later, request, response, body, gzip)
        else:
            self._send(request, response, body, gzip)

    def _send_later(self, request: _Request, response: Response, body: bytes, gzip: bool) -> None:
        self._busy = False
        self._send(request, response, body, gzip)
        self._serve()

    def _head(self, request: _Request, response: Response, length: int, gzip: bool, chunked: bool, keep: bool) -> bytes:
        """The status line and headers: the model's, then the server's own."""
        status = b"HTTP/1.1 %d %s\r\nDate: %s\r\nServer: invitro\r\n" % (
            response.status,
            response.reason.encode(),
            self.service.date(),
        )
        head = [status, *(f"{name}: {value}\r\n".encode() for name, value in response.headers)]
        if gzip:
            head.append(b"Content-Encoding: gzip\r\n")
        if response.compressible and self.service.options.gzip:
            head.append(b"Vary: Accept-Encoding\r\n")
        head.append(b"Transfer-Encoding: chunked\r\n" if chunked else b"Content-Length: %d\r\n" % length)
        if not keep:
            head.append(b"Connection: close\r\n")
        elif request.http10:
            head.append(b"Connection: keep-alive\r\n")
        head.append(b"\r\n")
        return b"".join(head)

    def _send(self, request: _Request, response: Response, body: bytes, gzip: bool) -> None:
        """Write the answer (unless the client left), then count and log it."""
        service = self.service
        options = service.options
        transport = self._transport
        keep = request.keep_alive and options.keepalive
        sent = 0
        aborted = transport is None or transport.is_closing()
        if not aborted:
            assert transport is not None
            chunked = options.chunked and not request.http10 and request.method != "HEAD"
            head = self._head(request, response, len(body), gzip, chunked, keep)
            # The end is taken as the response is handed over: the client cannot finish earlier,
            # so gaps measured from it never overstate the client's politeness.
            end = time.monotonic()
            if request.method == "HEAD":
                transport.write(head)
            else:
                transport.write(head + (_chunked(body) if chunked else body))
                sent = len(body)
            if not keep:
                transport.close()
        else:
            end = time.monotonic()
        self.idle_since = time.monotonic()
        service.requests += 1
        service.body_bytes += sent
        service.statuses[response.status] += 1
        try:
            ip: str | None = service.model.ip_of(request.host)
        except KeyError:
            ip = None
        entry: dict[str, object] = {
            "start": request.started,
            "end": end,
            "conn": self.id,
            "local": self.local,
            "proxy": request.proxy,
            "method": request.method,
            "host": request.host,
            "ip": ip,
            "target": request.target,
            "status": response.status,
            "bytes": sent,
            "gzip": gzip,
            "aborted": aborted,
        }
        if response.log is not None:
            entry.update(response.log)
        service.log.record(entry)


def _chunked(body: bytes) -> bytes:
    """The body as chunks of 8 KiB and the last, empty chunk (no trailers)."""
    pieces = []
    for at in range(0, len(body), _CHUNK):
        chunk = body[at : at + _CHUNK]
        pieces += [b"%x\r\n" % len(chunk), chunk, b"\r\n"]
    pieces.append(b"0\r\n\r\n")
    return b"".join(pieces)


def bind_listeners(ips: list[str], port: int = 0, attempts: int = 20) -> tuple[int, list[socket.socket]]:
    """Listening sockets on every IP, all on one port: the first IP picks it when ``port`` is 0.

    If a later IP has that port taken, start again with a new one (unless ``port`` was given).
    """
    for _ in range(attempts):
        sockets: list[socket.socket] = []
        try:
            chosen = port
            for ip in ips:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sockets.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((ip, chosen))
                chosen = sock.getsockname()[1]
                sock.setblocking(False)
            return chosen, sockets
        except OSError as e:
            for sock in sockets:
                sock.close()
            if e.errno != errno.EADDRINUSE or port != 0:
                raise
    raise OSError(errno.EADDRINUSE, f"no port free on all of {len(ips)} IPs after {attempts} attempts")


async def serve_sockets(service: HttpService, sockets: list[socket.socket]) -> list[asyncio.AbstractServer]:
    """Start serving on already bound sockets (see :func:`bind_listeners`)."""
    loop = asyncio.get_running_loop()
    return [await loop.create_server(lambda: HttpProtocol(service), sock=sock, backlog=1024) for sock in sockets]
