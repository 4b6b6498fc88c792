"""``engine/http1.py``: Http1Fetcher against AiohttpFetcher, and the edge cases, on real sockets.

Every socket test runs on both event loops (asyncio's and uvloop, the crawler's), through the
``run`` fixture: the scenario is an ``async def`` run to completion on the loop under test.
Servers are the in-vitro web or a :class:`ScriptedServer` whose answer to each request is
a small function; waits are on events and futures with timeouts, never sleeps.
"""

from __future__ import annotations

import asyncio
import gc
import gzip
import os
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import httptools
import pytest
import uvloop

import engine.http1
from bench.invitro import InVitro, ServerOptions, WebParams, start_invitro
from engine.aiohttp_fetcher import AiohttpFetcher
from engine.clients import make_fetcher
from engine.config import NetworkConfig
from engine.errors import BadResponse, ConnectFailed, LocalError, ReadTimeout
from engine.fetch import ClientSettings, FetchResult
from engine.http1 import Http1Fetcher, split_url

UA = "crawl-test/1.0"
SMALL = WebParams(hosts=12, mean_pages=20, seed=7)
TIMEOUT = 10

Runner = Callable[[Coroutine[Any, Any, Any]], Any]


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest) -> Runner:
    if request.param == "uvloop":
        return uvloop.run
    return asyncio.run


# A server whose answers are the test's choice.

Answer = Callable[[asyncio.Transport, int, bytes], None]
"""Called for each request head received: (transport, index of the request on its connection, head)."""


class ScriptedServer:
    """Counts accepts, keeps the request heads, knows when every connection has closed."""

    def __init__(self, answer: Answer, host: str = "127.0.0.1") -> None:
        self.answer = answer
        self.host = host
        self.accepted = 0
        self.heads: list[bytes] = []
        self.open: set[asyncio.Transport] = set()
        self._all_closed = asyncio.Event()
        self.got_head = asyncio.Event()
        self._server: asyncio.AbstractServer | None = None
        self.port = 0

    async def __aenter__(self) -> ScriptedServer:
        self._server = await asyncio.get_running_loop().create_server(lambda: _Scripted(self), self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for transport in list(self.open):
            transport.abort()
        await self._server.wait_closed()

    async def wait_all_closed(self) -> None:
        """Until no connection to this server is open (the client closed its side too)."""
        if self.open:
            self._all_closed.clear()
            await asyncio.wait_for(self._all_closed.wait(), TIMEOUT)


class _Scripted(asyncio.Protocol):
    def __init__(self, server: ScriptedServer) -> None:
        self.server = server
        self.buffer = b""
        self.count = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]
        self.server.accepted += 1
        self.server.open.add(self.transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:
            head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
            self.server.heads.append(head + b"\r\n\r\n")
            self.server.got_head.set()
            self.server.answer(self.transport, self.count, head)
            self.count += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.open.discard(self.transport)
        if not self.server.open:
            self.server._all_closed.set()


def say(data: bytes, close: bool = False) -> Answer:
    def answer(transport: asyncio.Transport, index: int, head: bytes) -> None:
        transport.write(data)
        if close:
            transport.close()

    return answer


def silent(transport: asyncio.Transport, index: int, head: bytes) -> None:
    return None


OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"


def lean(**kwargs: Any) -> Http1Fetcher:
    return Http1Fetcher(ClientSettings(user_agent=UA, **kwargs))


async def fetch_error(fetcher: Http1Fetcher, url: str, ip: str | None = "127.0.0.1") -> Exception:
    try:
        await asyncio.wait_for(fetcher.fetch(url, ip), TIMEOUT)
    except Exception as e:
        return e
    raise AssertionError("the fetch should have failed")


# URLs, without sockets.


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h1.web.test:8080/a/b?x=1", ("http", "h1.web.test", "h1.web.test:8080", 8080, "/a/b?x=1")),
        ("http://Example.COM/", ("http", "example.com", "example.com", 80, "/")),
        ("http://example.com", ("http", "example.com", "example.com", 80, "/")),
        ("http://example.com:80?q#frag", ("http", "example.com", "example.com", 80, "/?q")),
        ("http://user:pw@example.com:81/p#f", ("http", "example.com", "example.com:81", 81, "/p")),
        ("http://[::1]:8080/x", ("http", "::1", "[::1]:8080", 8080, "/x")),
        ("http://[::1]/", ("http", "::1", "[::1]", 80, "/")),
        ("HTTPS://example.com/", ("https", "example.com", "example.com", 443, "/")),
        ("http://127.0.0.1:9/a b/é\r\n", ("http", "127.0.0.1", "127.0.0.1:9", 9, "/a%20b/%C3%A9%0D%0A")),
        ("http://bücher.example/", ("http", "xn--bcher-kva.example", "xn--bcher-kva.example", 80, "/")),
    ],
)
def test_split_url(url: str, expected: tuple[str, str, str, int, str]) -> None:
    assert split_url(url) == expected


@pytest.mark.parametrize("url", ["ftp://example.com/", "example.com/", "http://:80/", "http://a b/", "http://a:99999/"])
def test_split_url_refuses(url: str) -> None:
    with pytest.raises(ValueError):
        split_url(url)


# Against AiohttpFetcher, on the in-vitro web.


def sample_targets(web: InVitro) -> list[tuple[str, str]]:
    """(host, target) pairs: pages, robots.txt, a binary file, a 404, a redirect, a query string."""
    model = web.model
    host = "h00003.web.test"
    info = model.host_info(host)
    assert info is not None and info.files
    paths = model.paths(host)
    redirect_host, redirect = next(
        (h, p) for h in model.hosts() for p in model.paths(h) if model.respond(h, p).status in (301, 302)
    )
    query = next((p for p in paths if "?" in p), paths[-1])
    return [
        (host, "/"),
        (host, paths[1]),
        (host, query),
        (host, "/robots.txt"),
        (host, model.file_path(info, 0)),
        (host, "/missing/nothing.html"),
        (redirect_host, redirect),
    ]


def without_date(head: bytes) -> bytes:
    return b"\r\n".join(line for line in head.split(b"\r\n") if not line.startswith(b"Date:"))


class _HeadOnly:
    """httptools callbacks that collect a head: the WARC reader's view of ``response_head``."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self.complete = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode().lower()] = value.decode()

    def on_headers_complete(self) -> None:
        self.complete = True


def parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    collected = _HeadOnly()
    parser = httptools.HttpResponseParser(collected)
    parser.feed_data(head)
    assert collected.complete
    return parser.get_status_code(), collected.headers


def check_against_model(web: InVitro, host: str, target: str, result: FetchResult) -> None:
    expected = web.model.respond(host, target)
    body = gzip.decompress(result.body) if result.headers.get("content-encoding") == "gzip" else result.body
    assert (result.status, body) == (expected.status, expected.body)
    assert result.response_head.startswith(b"HTTP/1.1 %d " % expected.status)
    assert result.response_head.endswith(b"\r\n\r\n") and b"\r\n\r\n" not in result.response_head[:-4]
    status, headers = parse_head(result.response_head)
    assert status == result.status
    assert headers == {k: v for k, v in result.headers.items() if k != "transfer-encoding"}
    assert result.started <= result.ended and result.truncated is None


@pytest.mark.parametrize("mode", ["direct", "proxy"])
def test_same_result_as_the_aiohttp_fetcher(run: Runner, mode: str) -> None:
    async def scenario() -> None:
        web = await start_invitro(SMALL, log_path=None)
        proxy = f"http://{web.proxy_address}" if mode == "proxy" else ""
        settings = ClientSettings(user_agent=UA, proxy=proxy)
        ours, theirs = make_fetcher(settings, "lean"), make_fetcher(settings, "aiohttp")
        try:
            for host, target in sample_targets(web):
                url = f"http://{host}:{web.port}{target}"
                ip = web.model.ip_of(host)
                a, b = await ours.fetch(url, ip), await theirs.fetch(url, ip)
                check_against_model(web, host, target, a)
                line = f"GET {url if mode == 'proxy' else target} HTTP/1.1\r\nHost: {host}:{web.port}\r\n"
                assert a.request_head.startswith(line.encode())
                assert (a.url, a.ip, a.status, a.body, a.truncated) == (b.url, b.ip, b.status, b.body, b.truncated)
                assert a.request_head == b.request_head
                assert without_date(a.response_head) == without_date(b.response_head)
                assert {k: v for k, v in a.headers.items() if k != "date"} == {
                    k: v for k, v in b.headers.items() if k != "date"
                }
                assert "Connection: close" in a.request_head.decode() and a.headers["connection"] == "close"
        finally:
            await ours.close()
            await theirs.close()
            await web.close()

    run(scenario())


def test_chunked_bodies_are_stored_dechunked_without_the_transfer_encoding_line(run: Runner) -> None:
    async def scenario() -> None:
        web = await start_invitro(SMALL, log_path=None, options=ServerOptions(chunked=True), dns=False)
        fetcher = lean(proxy=f"http://{web.proxy_address}")
        try:
            host = "h00001.web.test"
            result = await fetcher.fetch(f"http://{host}:{web.port}/", None)
            check_against_model(web, host, "/", result)
            assert result.headers["transfer-encoding"] == "chunked"
            assert b"transfer-encoding" not in result.response_head.lower()
            assert b"content-length" not in result.response_head.lower()
        finally:
            await fetcher.close()
            await web.close()

    run(scenario())


@pytest.mark.parametrize("chunked", [False, True])
def test_bodies_over_max_body_bytes_are_cut_to_exactly_that(run: Runner, chunked: bool) -> None:
    async def scenario() -> None:
        web = await start_invitro(SMALL, log_path=None, options=ServerOptions(chunked=chunked, gzip=False))
        host = "h00002.web.test"
        url, ip = f"http://{host}:{web.port}/", web.model.ip_of(host)
        full = web.model.respond(host, "/").body
        assert len(full) > 10_000
        try:
            for limit, truncated in ((1000, "length"), (len(full), None), (len(full) - 1, "length")):
                fetcher = lean(max_body_bytes=limit, keepalive=True)
                result = await fetcher.fetch(url, ip)
                assert (result.body, result.truncated) == (full[:limit], truncated)
                assert fetcher.statistics().idle == (0 if truncated else 1)  # a cut connection is not reused
                await fetcher.close()
        finally:
            await web.close()

    run(scenario())


def test_request_head_is_exactly_the_bytes_sent(run: Runner) -> None:
    async def scenario() -> None:
        async with ScriptedServer(say(OK)) as server:
            for keepalive in (False, True):
                fetcher = lean(keepalive=keepalive)
                result = await fetcher.fetch(f"http://a.example:{server.port}/p?q=1#frag", "127.0.0.1")
                assert server.heads[-1] == result.request_head
                assert result.request_head.startswith(b"GET /p?q=1 HTTP/1.1\r\nHost: a.example:%d\r\n" % server.port)
                assert (b"Connection: close\r\n" in result.request_head) == (not keepalive)
                assert result.body == b"hello"
                assert result.headers == {"content-type": "text/plain", "content-length": "5"}
                await fetcher.close()

    run(scenario())


@pytest.mark.parametrize(
    ("reply", "body", "head"),
    [
        # no Content-Length, not chunked: the body ends when the server closes
        (b"HTTP/1.1 200 OK\r\nX-A:  spaced  \r\n\r\nuntil the end", b"until the end",
         b"HTTP/1.1 200 OK\r\nX-A: spaced  \r\n\r\n"),
        (b"HTTP/1.0 200 OK\r\n\r\nold", b"old", b"HTTP/1.0 200 OK\r\n\r\n"),
        # interim responses are skipped
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n" + OK, b"hello", None),
        # chunk trailers are dropped, no reason phrase is kept as such
        (b"HTTP/1.1 404\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n", b"abc",
         b"HTTP/1.1 404\r\n\r\n"),
        (b"HTTP/1.1 204 No Content\r\nA: 1\r\nA: 2\r\n\r\n", b"", b"HTTP/1.1 204 No Content\r\nA: 1\r\nA: 2\r\n\r\n"),
    ],
)
def test_response_framing(run: Runner, reply: bytes, body: bytes, head: bytes | None) -> None:
    async def scenario() -> None:
        async with ScriptedServer(say(reply, close=True)) as server:
            fetcher = lean()
            result = await fetcher.fetch(f"http://127.0.0.1:{server.port}/", None)
            assert result.body == body
            assert result.response_head == (head or OK[: OK.index(b"\r\n\r\n") + 4])
            if reply.startswith(b"HTTP/1.1 204"):
                assert result.headers["a"] == "2"
            await fetcher.close()
            await server.wait_all_closed()

    run(scenario())


# Failures, each with the engine's error.


def test_refused_connection_is_connect_failed(run: Runner) -> None:
    async def scenario() -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]  # bound, never listening: connecting is refused
            fetcher = lean()
            error = await fetch_error(fetcher, f"http://x.example:{port}/")
            assert isinstance(error, ConnectFailed) and "x.example" in str(error)
            assert isinstance(await fetch_error(fetcher, "http://no-address.example/", None), ConnectFailed)
            await fetcher.close()

    run(scenario())


def test_connect_timeout_is_connect_failed(run: Runner) -> None:
    async def scenario() -> None:
        with socket.socket() as listener, socket.socket() as filler:
            listener.bind(("127.0.0.1", 0))
            listener.listen(0)
            filler.connect(listener.getsockname())  # the accept queue is full: later SYNs are dropped
            fetcher = lean(connect_timeout=0.2)
            t0 = time.monotonic()
            error = await fetch_error(fetcher, f"http://127.0.0.1:{listener.getsockname()[1]}/")
            assert isinstance(error, ConnectFailed) and "timed out" in str(error)
            assert 0.19 < time.monotonic() - t0 < 2
            assert fetcher.statistics().open == 0
            await fetcher.close()

    run(scenario())


def test_a_server_that_never_answers_is_a_read_timeout_after_first_byte_timeout(run: Runner) -> None:
    async def scenario() -> None:
        async with ScriptedServer(silent) as server:
            fetcher = lean(first_byte_timeout=0.2)
            t0 = time.monotonic()
            error = await fetch_error(fetcher, f"http://127.0.0.1:{server.port}/")
            assert isinstance(error, ReadTimeout) and "first byte" in str(error)
            assert 0.19 < time.monotonic() - t0 < 2
            await server.wait_all_closed()  # the client closed the connection
            await fetcher.close()

    run(scenario())


def test_a_stalled_body_is_a_read_timeout_at_the_total_deadline(run: Runner) -> None:
    async def scenario() -> None:
        stall = say(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..")
        async with ScriptedServer(stall) as server:
            fetcher = lean(first_byte_timeout=0.1, total_timeout=0.4)
            t0 = time.monotonic()
            error = await fetch_error(fetcher, f"http://127.0.0.1:{server.port}/")
            assert isinstance(error, ReadTimeout) and "total" in str(error)
            assert 0.39 < time.monotonic() - t0 < 2
            await server.wait_all_closed()
            await fetcher.close()

    run(scenario())


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n", "HttpParserError"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..", "mid-body"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", "mid-body"),
        (b"HTTP/1.1 200 OK\r\nContent-Le", "mid-head"),
        (b"", "before the response"),
        (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: upgrade\r\n\r\n", "protocol switch"),
    ],
)
def test_garbage_and_early_close_are_bad_responses(run: Runner, reply: bytes, words: str) -> None:
    async def scenario() -> None:
        async with ScriptedServer(say(reply, close=True)) as server:
            fetcher = lean()
            error = await fetch_error(fetcher, f"http://127.0.0.1:{server.port}/")
            assert isinstance(error, BadResponse) and words in str(error)
            await server.wait_all_closed()
            await fetcher.close()

    run(scenario())


def test_a_cancelled_fetch_closes_its_connection(run: Runner) -> None:
    async def scenario() -> None:
        async with ScriptedServer(silent) as server:
            fetcher = lean()
            task = asyncio.ensure_future(fetcher.fetch(f"http://127.0.0.1:{server.port}/", None))
            await asyncio.wait_for(server.got_head.wait(), TIMEOUT)  # the request is on the wire
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await server.wait_all_closed()
            await fetcher.close()

    run(scenario())


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_no_file_descriptor_leaks_after_200_failing_fetches(run: Runner) -> None:
    async def scenario() -> None:
        garbage = ScriptedServer(say(b"NOT HTTP AT ALL\r\n\r\n"))  # and keeps the connection open
        mid_body = ScriptedServer(say(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", close=True))
        mute = ScriptedServer(silent)
        async with garbage, mid_body, mute:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                refused = probe.getsockname()[1]
                fetcher = lean(first_byte_timeout=0.1)
                before = fd_count()
                ports = [garbage.port, mid_body.port, mute.port, refused] * 50
                results = await asyncio.gather(
                    *(fetcher.fetch(f"http://127.0.0.1:{port}/", None) for port in ports), return_exceptions=True
                )
                kinds = [type(r) for r in results[:4]]
                assert kinds == [BadResponse, BadResponse, ReadTimeout, ConnectFailed]
                assert all(type(r) is kind for r, kind in zip(results, kinds * 50))
                for server in (garbage, mid_body, mute):
                    await server.wait_all_closed()  # the client closed every connection it opened
                ok = ScriptedServer(say(OK, close=True))
                async with ok:  # a good fetch afterwards: the loop has run the closes it scheduled
                    assert (await fetcher.fetch(f"http://127.0.0.1:{ok.port}/", None)).body == b"hello"
                    await ok.wait_all_closed()
                assert fetcher.statistics().open == 0  # every socket it opened is closed or closing
                await fetcher.close()  # waits until the closing ones are released
                assert fd_count() <= before

    run(scenario())


# Keep-alive.


@pytest.mark.parametrize("mode", ["direct", "proxy"])
def test_keepalive_reuses_one_connection_and_close_opens_one_per_request(run: Runner, mode: str) -> None:
    async def scenario() -> None:
        web = await start_invitro(SMALL, log_path=None, dns=False)
        proxy = f"http://{web.proxy_address}" if mode == "proxy" else ""
        host = "h00004.web.test"
        urls = [f"http://{host}:{web.port}/", f"http://{host}:{web.port}/robots.txt"]
        try:
            for keepalive, connections in ((True, 1), (False, 2)):
                fetcher = lean(proxy=proxy, keepalive=keepalive)
                before = web.service.connections_total
                for url in urls:
                    result = await fetcher.fetch(url, web.model.ip_of(host))
                    check_against_model(web, host, url.split(str(web.port))[1], result)
                assert web.service.connections_total - before == connections
                stats = fetcher.statistics()
                assert (stats.connections, stats.reused, stats.idle) == (connections, 2 - connections, keepalive)
                await fetcher.close()
        finally:
            await web.close()

    run(scenario())


def test_a_pooled_connection_the_server_dropped_is_replaced_once(run: Runner) -> None:
    def answer_first_only(transport: asyncio.Transport, index: int, head: bytes) -> None:
        if index == 0:
            transport.write(OK)
        else:
            transport.close()  # the keep-alive connection died just as it was reused

    async def scenario() -> None:
        async with ScriptedServer(answer_first_only) as server:
            fetcher = lean(keepalive=True)
            url = f"http://127.0.0.1:{server.port}/"
            for _ in range(2):
                assert (await fetcher.fetch(url, None)).body == b"hello"
            assert server.accepted == 2 and fetcher.statistics().reused == 1
            await fetcher.close()
            await server.wait_all_closed()

    run(scenario())


def test_idle_connections_are_closed_by_the_sweep_and_by_close(run: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with ScriptedServer(say(OK)) as server:
            fetcher = lean(keepalive=True)
            await fetcher.fetch(f"http://127.0.0.1:{server.port}/", None)
            assert fetcher.statistics().idle == 1 and len(server.open) == 1
            monkeypatch.setattr(engine.http1, "IDLE_SECONDS", -1.0)
            fetcher._sweep()  # what the one-second timer runs
            assert fetcher.statistics().idle == 0 and fetcher._sweeper is None
            await server.wait_all_closed()
            await fetcher.fetch(f"http://127.0.0.1:{server.port}/", None)
            await fetcher.close()
            await server.wait_all_closed()
            assert server.accepted == 2

    run(scenario())


def test_successful_fetches_leave_no_reference_cycles() -> None:
    """Connections are freed by reference counting (the GC would cost ~10 µs per fetch).

    uvloop only: asyncio's own selector transports hold cycles of their own.
    """

    async def scenario() -> None:
        for keepalive in (False, True):
            async with ScriptedServer(say(OK, close=not keepalive)) as server:
                fetcher = lean(keepalive=keepalive)
                url = f"http://127.0.0.1:{server.port}/"
                await fetcher.fetch(url, None)
                gc.collect()
                gc.disable()
                try:
                    for _ in range(20):
                        await fetcher.fetch(url, None)
                    await fetcher.close()
                    await server.wait_all_closed()
                    found = gc.collect()
                finally:
                    gc.enable()
                assert found == 0

    uvloop.run(scenario())


# Addresses and schemes.


def test_ipv6_literal_and_pinned_address(run: Runner) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")

    async def scenario() -> None:
        try:
            server = ScriptedServer(say(OK, close=True), host="::1")
            await server.__aenter__()
        except OSError:
            pytest.skip("no IPv6 loopback")
        try:
            fetcher = lean()
            result = await fetcher.fetch(f"http://[::1]:{server.port}/", None)
            assert result.body == b"hello" and result.ip is None
            assert server.heads[-1].startswith(b"GET / HTTP/1.1\r\nHost: [::1]:%d\r\n" % server.port)
            result = await fetcher.fetch(f"http://v6.example:{server.port}/", "::1")
            assert result.body == b"hello" and result.ip == "::1"
            await fetcher.close()
        finally:
            await server.__aexit__()

    run(scenario())


def self_signed(folder: Path) -> ssl.SSLContext:
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
         "-subj", "/CN=localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


def test_https_goes_to_the_aiohttp_fetcher(run: Runner, tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command")
    context = self_signed(tmp_path)

    async def scenario() -> None:
        server = await asyncio.get_running_loop().create_server(
            lambda: _Scripted(ScriptedServer(say(OK, close=True))), "127.0.0.1", 0, ssl=context
        )
        port = server.sockets[0].getsockname()[1]
        fetcher = lean()
        try:
            result = await fetcher.fetch(f"https://localhost:{port}/", "127.0.0.1")
            assert (result.status, result.body) == (200, b"hello")
            assert fetcher.statistics().delegated == 1 and fetcher.statistics().connections == 0
        finally:
            await fetcher.close()
            server.close()
            await server.wait_closed()

    run(scenario())


def test_statistics_and_repr(run: Runner) -> None:
    async def scenario() -> None:
        async with ScriptedServer(say(OK)) as server:
            fetcher = lean(keepalive=True)
            for _ in range(3):
                await fetcher.fetch(f"http://127.0.0.1:{server.port}/", None)
            assert repr(fetcher) == "<Http1Fetcher requests=3 connections=1 reused=2 open=1 idle=1 delegated=0>"
            await fetcher.close()
            await server.wait_all_closed()

    run(scenario())



def test_one_settings_object_builds_either_client() -> None:
    network = NetworkConfig(proxy="http://127.0.0.1:3128", keepalive=True, connect_timeout=1.5,
                            first_byte_timeout=2.5, total_timeout=3.5, max_body_bytes=4096)  # fmt: skip
    settings = ClientSettings.from_config(network, UA)
    assert settings == ClientSettings(UA, "http://127.0.0.1:3128", True, 1.5, 2.5, 3.5, 4096)
    lean_client, aiohttp_client = make_fetcher(settings, "lean"), make_fetcher(settings, "aiohttp")
    assert isinstance(lean_client, Http1Fetcher) and isinstance(aiohttp_client, AiohttpFetcher)
    assert lean_client.settings is settings and aiohttp_client.settings is settings
    with pytest.raises(LocalError, match="network.client"):
        make_fetcher(settings, "curl")
