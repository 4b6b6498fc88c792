"""A lean HTTP/1.1 client for the fetch seam: ``asyncio.Protocol`` plus llhttp (``httptools``).

Role: the default :class:`engine.fetch.Fetcher` (``network.client = "lean"``): built from the
same :class:`~engine.fetch.ClientSettings` as ``engine/aiohttp_fetcher.py: AiohttpFetcher``, with
the same results and errors, at about a third of aiohttp's CPU per request
(``bench/fetch_bench.py``). It serves the fetch step of ARCHITECTURE.md; the policy around it
(redirects, robots) is the same for both clients, since it sees the same :class:`FetchResult`.

One request, step by step:

1. ``fetch`` splits the URL with string methods (no yarl) and builds the request head with one
   ``bytes`` join: origin form to ``ip`` (the address the workbench pinned), or absolute form to
   the proxy. ``https`` URLs go to an internal ``AiohttpFetcher``, created on first use.
2. It takes an idle connection for (ip, port) (or the proxy) when keep-alive is on, else it
   connects; the :class:`_Connection` protocol object is its own protocol factory.
3. The connection writes the head and feeds every chunk it receives to its
   ``HttpResponseParser``; the callbacks collect status, headers and body (de-chunked, 1xx
   skipped, cut at ``max_body_bytes``) and resolve one future when the response ends.
4. ``fetch`` awaits that future, then pools or closes the connection and builds the result.

Timeouts: one ``TimerHandle`` per request. ``deadline`` holds the current phase's limit
(connect, then first byte, then total); moving to a later phase only rewrites the float, and a
timer that fires before the current deadline re-arms itself once. Unlike aiohttp's
``sock_read``, there is no limit on the gap between two body chunks: only the total deadline.

Invariants: a connection serves one exchange at a time; every path out of ``fetch`` either
pools the connection (response complete, server allowed keep-alive, nothing extra received)
or closes its transport, so no socket outlives a failed or cancelled fetch. A successful fetch
leaves no reference cycle behind (the parser's is broken when the connection ends): with 300
fetches in flight, leaving them to the GC cost about 10 µs more per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote

import httptools

from engine.errors import BadResponse, ConnectFailed, ReadTimeout
from engine.fetch import ACCEPT, ClientSettings, FetchResult

if TYPE_CHECKING:
    from engine.aiohttp_fetcher import AiohttpFetcher

IDLE_SECONDS = 5.0
"""an idle pooled connection is closed after this long (servers often time out at 5–15 s)"""
MAX_IDLE_PER_ADDRESS = 4
"""idle connections kept per (ip, port); the workbench rarely runs more fetches per IP at once"""
MAX_IDLE = 1024
"""idle connections kept in all: each holds a file descriptor"""
CLOSE_WAIT = 2.0
"""seconds ``close`` waits for the sockets it aborted to be released"""

_CONNECT, _FIRST_BYTE, _BODY = 0, 1, 2  # phases of an exchange, each with its own deadline
_SAFE = "!#$%&'()*+,/:;=?@[]~"  # left as is when a target needs quoting (yarl keeps these too)

Address = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Http1Statistics:
    """Counters since the fetcher was created (``repr`` and tests read them)."""

    requests: int
    connections: int
    """connections opened (connect attempts that succeeded)"""
    reused: int
    """requests sent on a pooled connection"""
    open: int
    """connections open now, idle or busy (not counting those closing)"""
    idle: int
    """connections in the pool now"""
    delegated: int
    """https requests handed to the aiohttp fetcher"""


class _Connection(asyncio.Protocol):
    """One TCP connection and the exchange in progress on it (at most one).

    ``waiter`` is the exchange's future: set while a request is outstanding, None when the
    connection is idle or the exchange has ended. Callbacks that run with no waiter do nothing
    but mark the connection unfit for reuse.
    """

    __slots__ = (
        "fetcher", "loop", "key", "transport", "parser", "waiter", "task", "url", "timer", "deadline",
        "total_deadline", "phase", "timed_out", "limit", "status", "reason", "raw", "in_body", "skip",
        "chunks", "size", "truncated", "now", "got_bytes", "reusable", "idle_since", "version",
    )  # fmt: skip

    def __init__(self, fetcher: Http1Fetcher, key: Address) -> None:
        self.fetcher = fetcher
        self.loop = fetcher._loop
        self.key = key
        self.transport: asyncio.Transport | None = None
        # parser -> callbacks -> self -> parser is a reference cycle: connection_lost (or close(),
        # if never connected) breaks it, so connections are freed by reference counting, not the GC.
        self.parser: httptools.HttpResponseParser | None = httptools.HttpResponseParser(self)
        self.version = b"1.1"
        self.waiter: asyncio.Future[None] | None = None
        self.task: asyncio.Task[object] | None = None
        self.url = ""
        self.timer: asyncio.TimerHandle | None = None
        self.deadline = self.total_deadline = 0.0
        self.phase = _CONNECT
        self.timed_out = False
        self.limit = fetcher.settings.max_body_bytes
        self.reusable = True
        self.idle_since = 0.0
        self._reset()

    def __call__(self) -> _Connection:
        return self  # the protocol factory for create_connection: no closure per connect

    def _reset(self) -> None:
        """Forget the previous exchange (or an interim 1xx response)."""
        self.status = 0
        self.reason = b""
        self.raw: list[tuple[bytes, bytes]] = []
        self.in_body = self.skip = False
        self.chunks: list[bytes] = []
        self.size = 0
        self.truncated: str | None = None
        self.now = 0.0
        self.got_bytes = False

    # Timer: one handle per request, re-armed only when a phase's deadline comes earlier.

    def arm(self, deadline: float) -> None:
        self.deadline = deadline
        timer = self.timer
        if timer is None or deadline < timer.when():
            if timer is not None:
                timer.cancel()
            self.timer = self.loop.call_at(deadline, self._on_timer)

    def disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _on_timer(self) -> None:
        self.timer = None
        if self.deadline > self.loop.time() + 0.001:  # the phase moved on: its deadline is later
            self.timer = self.loop.call_at(self.deadline, self._on_timer)
        elif self.phase == _CONNECT:
            # create_connection is awaited directly (no wait_for, no extra task): cancel the
            # fetching task, as asyncio.timeout() does, and let fetch() turn it into ConnectFailed.
            self.timed_out = True
            if self.task is not None:
                self.task.cancel()
        else:
            what = "first byte" if self.phase == _FIRST_BYTE else "total"
            self._fail(ReadTimeout(f"{self.url}: timed out ({what})"))

    # The exchange.

    def send(self, url: str, head: bytes, first_byte_deadline: float, total_deadline: float) -> asyncio.Future[None]:
        assert self.transport is not None and self.waiter is None
        self._reset()
        self.url = url
        self.waiter = waiter = self.loop.create_future()
        self.phase = _FIRST_BYTE
        self.total_deadline = total_deadline
        self.arm(first_byte_deadline)
        self.transport.write(head)
        return waiter

    def close(self) -> None:
        """Drop the connection at once (RST, buffers discarded) and stop its timer."""
        self.disarm()
        self.reusable = False
        if self.transport is not None:
            self.transport.abort()  # connection_lost follows
        else:
            self.parser = None  # never connected, or already lost

    def release(self) -> None:
        """Close after a complete response: nothing is left to read or to write."""
        self.disarm()
        self.reusable = False
        if self.transport is not None:
            self.transport.close()

    def _finish(self) -> None:
        self.disarm()
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, error: Exception) -> None:
        waiter, self.waiter = self.waiter, None
        self.close()
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if transport.is_closing():  # its connect was cancelled meanwhile: no connection_lost may follow
            return
        self.transport = transport  # type: ignore[assignment]  # uvloop's are not asyncio.Transport subclasses
        self.fetcher._open.add(self)

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:  # an idle connection spoke, or bytes beyond the response
            self.close()
            return
        self.now = time.monotonic()
        if not self.got_bytes:
            self.got_bytes = True
            self.phase = _BODY
            self.deadline = self.total_deadline  # never earlier than the first-byte deadline
        assert self.parser is not None  # set from __init__ to connection_lost
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(BadResponse(f"{self.url}: unexpected protocol switch ({self.status})"))
        except httptools.HttpParserError as e:
            if self.waiter is None:
                self.close()  # garbage after a complete response: answered, but never reuse
            else:
                self._fail(BadResponse(f"{self.url}: HttpParserError: {e}"))

    def eof_received(self) -> bool:
        return False  # close our side too; connection_lost decides what the EOF meant

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.parser = None
        self.reusable = False
        self.fetcher._lost(self)
        if self.waiter is None:
            return
        if self.in_body and _delimited_by_close(self.raw):
            self._finish()  # no Content-Length, not chunked: the body ended with the connection
        else:
            where = "mid-body" if self.in_body else "before the response" if not self.got_bytes else "mid-head"
            self._fail(BadResponse(f"{self.url}: connection closed {where}" + (f" ({exc})" if exc else "")))

    # httptools callbacks

    def on_message_begin(self) -> None:
        if self.waiter is None:
            self.reusable = False  # a second response nobody asked for: the stream is out of step
        elif self.skip:  # the response after a 1xx
            self.status, self.reason, self.raw, self.skip = 0, b"", [], False

    def on_status(self, reason: bytes) -> None:
        if self.waiter is not None:
            self.reason = reason

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.in_body:  # chunked trailers come after the body: dropped, as aiohttp does
            self.raw.append((name, value))

    def on_headers_complete(self) -> None:
        if self.waiter is None:
            return
        assert self.parser is not None
        status = self.parser.get_status_code()
        self.status = status
        self.version = self.parser.get_http_version().encode()
        if status < 200:
            self.skip = True  # an interim response: the real one follows on the same connection
        else:
            self.in_body = True

    def on_body(self, chunk: bytes) -> None:
        if self.waiter is None:
            return
        size = self.size + len(chunk)
        if size > self.limit:
            self.chunks.append(chunk[: self.limit - self.size])
            self.size = self.limit
            self.truncated = "length"
            self._finish()
            self.close()  # the rest is not wanted: the connection cannot be reused
            return
        self.chunks.append(chunk)
        self.size = size

    def on_message_complete(self) -> None:
        if self.skip or self.waiter is None:
            return
        assert self.parser is not None
        self.reusable = self.parser.should_keep_alive()
        self._finish()


def _delimited_by_close(raw: list[tuple[bytes, bytes]]) -> bool:
    """Whether a response with these headers ends its body by closing (RFC 9112 §6.3, item 8)."""
    for name, value in raw:
        lower = name.lower()
        if lower == b"content-length" or (lower == b"transfer-encoding" and value.lower().endswith(b"chunked")):
            return False
    return True


def split_url(url: str) -> tuple[str, str, str, int, str]:
    """``(scheme, host, Host header, port, origin-form target)``; ValueError if not http(s).

    ``host`` has no brackets (an IPv6 literal is ready for ``connect``); the Host header keeps
    them and names the port only when it is not the scheme's default, as aiohttp does.
    """
    colon = url.find("://")
    scheme = url[:colon].lower() if colon > 0 else ""
    if scheme == "http":
        default = 80
    elif scheme == "https":
        default = 443
    else:
        raise ValueError("not an http(s) URL")
    rest = url[colon + 3 :]
    end = len(rest)
    for mark in "/?#":
        at = rest.find(mark, 0, end)
        if at >= 0:
            end = at
    authority, target = rest[:end], rest[end:]
    target = target.partition("#")[0]
    if not target.startswith("/"):
        target = "/" + target
    if not (target.isascii() and target.isprintable() and " " not in target):
        target = quote(target, safe=_SAFE)  # spaces, controls and non-ASCII: percent-encoded UTF-8
    authority = authority.rpartition("@")[2].lower()
    if authority.startswith("["):
        close = authority.find("]")
        host, port_text = authority[1:close], authority[close + 1 :].removeprefix(":")
        shown = authority[: close + 1]
    else:
        host, _, port_text = authority.partition(":")
        shown = host
    if not host.isascii():
        host = shown = host.encode("idna").decode("ascii")
    if not host or not shown.isprintable() or " " in shown:
        raise ValueError("bad host")
    port = int(port_text) if port_text else default
    if not 0 < port < 65536:
        raise ValueError("bad port")
    return scheme, host, shown if port == default else f"{shown}:{port}", port, target


def _ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class Http1Fetcher:
    """An HTTP/1.1 client for the crawler's fetch seam; one per process, shared by every fetch.

    With ``settings.keepalive`` a small pool keeps idle connections per (ip, port) (or to the
    proxy) for ``IDLE_SECONDS``.
    """

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        self._proxy: Address | None = _proxy_address(settings.proxy) if settings.proxy else None
        self._keepalive = settings.keepalive
        self._connect_timeout = min(settings.connect_timeout, settings.total_timeout)
        self._first_byte_timeout = settings.first_byte_timeout
        self._total_timeout = settings.total_timeout
        # Everything after the Host value, in the order aiohttp sends it (engine/aiohttp_fetcher.py).
        tail = [f"User-Agent: {settings.user_agent}", f"Accept: {ACCEPT}", "Accept-Encoding: gzip, deflate"]
        if not settings.keepalive:
            tail.append("Connection: close")
        self._head_tail = ("\r\n" + "\r\n".join(tail) + "\r\n\r\n").encode("latin-1", "replace")
        self._loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # bound on first fetch
        self._open: set[_Connection] = set()  # from connection_made to connection_lost
        self._drained: asyncio.Future[None] | None = None  # close() waits on it for the last connection_lost
        self._idle: dict[Address, list[_Connection]] = {}
        self._idle_count = 0
        self._sweeper: asyncio.TimerHandle | None = None
        self._https: AiohttpFetcher | None = None
        self._requests = self._connections = self._reused = self._delegated = 0

    def __repr__(self) -> str:
        s = self.statistics()
        return (
            f"<Http1Fetcher requests={s.requests} connections={s.connections} reused={s.reused} "
            f"open={s.open} idle={s.idle} delegated={s.delegated}>"
        )

    def statistics(self) -> Http1Statistics:
        alive = sum(1 for conn in self._open if conn.transport is not None and not conn.transport.is_closing())
        return Http1Statistics(
            self._requests, self._connections, self._reused, alive, self._idle_count, self._delegated
        )

    async def fetch(self, url: str, ip: str | None, headers: Sequence[tuple[str, str]] = ()) -> FetchResult:
        try:
            scheme, host, host_header, port, target = split_url(url)
        except ValueError as e:
            raise BadResponse(f"{url}: InvalidURL: {e}") from None
        if scheme == "https":
            return await self._fetch_https(url, ip, headers)
        if self._proxy is not None:
            key = self._proxy
            target = f"http://{host_header}{target}"
        else:
            if ip is not None:
                key = (ip, port)
            elif _ip_literal(host):
                key = (host, port)
            else:
                raise ConnectFailed(f"{url}: no address pinned for {host}")
        head = b"".join(
            (b"GET ", target.encode("ascii"), b" HTTP/1.1\r\nHost: ", host_header.encode("ascii"), self._head_tail)
        )
        if headers:  # before the blank line that ends the head
            extra = "".join(f"{name}: {value}\r\n" for name, value in headers).encode("latin-1", "replace")
            head = head[:-2] + extra + b"\r\n"
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        self._requests += 1
        started = time.monotonic()
        fetched_at = time.time()
        total_deadline = self._loop.time() + self._total_timeout
        conn = self._take_idle(key) if self._keepalive else None
        if conn is not None:
            self._reused += 1
            try:
                await self._exchange(conn, url, head, total_deadline)
            except BadResponse:
                if conn.got_bytes:
                    raise
                conn = None  # the server closed it as we reused it: once more on a new connection
        if conn is None:
            conn = await self._connect(key, url)
            await self._exchange(conn, url, head, total_deadline)
        return self._result(conn, url, ip, head, started, fetched_at)

    async def _connect(self, key: Address, url: str) -> _Connection:
        conn = _Connection(self, key)
        conn.url = url
        conn.task = task = asyncio.current_task(self._loop)
        assert task is not None
        cancelling = task.cancelling()
        conn.arm(self._loop.time() + self._connect_timeout)
        try:
            await self._loop.create_connection(conn, key[0], key[1])
        except asyncio.CancelledError:
            conn.close()
            # As asyncio.timeout() does: ours only if no one else asked to cancel the task meanwhile.
            if conn.timed_out and task.uncancel() <= cancelling:
                raise ConnectFailed(f"{url}: connect timed out after {self._connect_timeout:g} s") from None
            raise
        except OSError as e:
            conn.close()
            raise ConnectFailed(f"{url}: {e}") from None
        except BaseException:
            conn.close()
            raise
        finally:
            conn.task = None  # from here the timer fails the exchange's future, not the task
        self._connections += 1
        return conn

    async def _exchange(self, conn: _Connection, url: str, head: bytes, total_deadline: float) -> None:
        """Send ``head`` on ``conn`` and wait for the whole response; pool or close ``conn`` after."""
        first_byte = min(self._loop.time() + self._first_byte_timeout, total_deadline)
        try:
            await conn.send(url, head, first_byte, total_deadline)
        except BaseException:  # our errors, and cancellation from outside
            conn.close()
            raise
        if self._keepalive and conn.reusable and conn.transport is not None:
            self._put_idle(conn)
        else:
            conn.release()

    def _result(
        self, conn: _Connection, url: str, ip: str | None, head: bytes, started: float, fetched_at: float
    ) -> FetchResult:
        reason = b" " + conn.reason if conn.reason else b""
        lines = [b"HTTP/%s %d%s" % (conn.version, conn.status, reason)]
        headers = {}
        for name, value in conn.raw:  # decoded as aiohttp does; the last of repeated names wins
            lower = name.decode("latin-1").lower()
            headers[lower] = value.decode("utf-8", "surrogateescape")
            if lower != "transfer-encoding":  # the body is stored de-chunked
                lines.append(name + b": " + value)
        lines.append(b"\r\n")
        return FetchResult(
            url=url,
            ip=ip,
            status=conn.status,
            headers=headers,
            request_head=head,
            response_head=b"\r\n".join(lines),
            body=b"".join(conn.chunks),
            truncated=conn.truncated,
            started=started,
            ended=conn.now,
            fetched_at=fetched_at,
        )

    async def _fetch_https(self, url: str, ip: str | None, headers: Sequence[tuple[str, str]]) -> FetchResult:
        if self._https is None:
            from engine.aiohttp_fetcher import AiohttpFetcher  # here: importing aiohttp costs ~0.14 CPU-s a process

            self._https = AiohttpFetcher(self.settings)
        self._delegated += 1
        return await self._https.fetch(url, ip, headers)

    # The pool: a stack per address (the most recently used first, the warmest), swept each second.

    def _take_idle(self, key: Address) -> _Connection | None:
        stack = self._idle.get(key)
        while stack:
            conn = stack.pop()
            self._idle_count -= 1
            if conn.transport is not None and conn.reusable:
                return conn
        return None

    def _put_idle(self, conn: _Connection) -> None:
        stack = self._idle.setdefault(conn.key, [])
        if len(stack) >= MAX_IDLE_PER_ADDRESS or self._idle_count >= MAX_IDLE:
            conn.close()
            return
        conn.idle_since = self._loop.time()
        stack.append(conn)
        self._idle_count += 1
        if self._sweeper is None:
            self._sweeper = self._loop.call_later(1.0, self._sweep)

    def _sweep(self) -> None:
        cutoff = self._loop.time() - IDLE_SECONDS
        for key, stack in list(self._idle.items()):
            kept = [conn for conn in stack if conn.idle_since >= cutoff and conn.transport is not None]
            for conn in stack:
                if conn.idle_since < cutoff:
                    conn.close()
            self._idle_count -= len(stack) - len(kept)
            if kept:
                self._idle[key] = kept
            else:
                del self._idle[key]
        self._sweeper = self._loop.call_later(1.0, self._sweep) if self._idle else None

    def _lost(self, conn: _Connection) -> None:
        self._open.discard(conn)
        if not self._open and self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    async def close(self) -> None:
        """Close every connection, idle or busy (a busy fetch fails with BadResponse), and wait
        until their sockets are released."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        self._idle.clear()
        self._idle_count = 0
        if self._open:
            self._drained = self._loop.create_future()
            for conn in list(self._open):
                conn.close()
            # Bounded: an agent stopping must exit even if a transport never reports its loss (seen after
            # fetches were cancelled mid-connect, when a full disk stopped the agent).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drained, CLOSE_WAIT)
            self._drained = None
            self._open.clear()
        if self._https is not None:
            await self._https.close()
            self._https = None


def _proxy_address(proxy: str) -> Address:
    """``http://HOST:PORT`` → (HOST, PORT); the host should be an IP literal (it is not resolved here)."""
    scheme, host, _, port, _ = split_url(proxy)
    if scheme != "http":
        raise ValueError(f"proxy {proxy!r}: only http:// proxies are supported")
    return host, port
