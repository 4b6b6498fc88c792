"""Fetching one URL over HTTP with aiohttp: the engine's network seam.

``Fetcher.fetch(url, ip)`` performs exactly one request (redirects are *not* followed: the
engine records them and enqueues their targets) and returns a :class:`FetchResult` holding
what the WARC needs: the request head as sent, the response head as received (less
``Transfer-Encoding``, since the body is stored de-chunked) and the body as transferred
(content-encoding kept, truncated at ``max_body_bytes``).

Connections go to the IP the workbench recorded for the host (T28): a ``PinnedResolver``
answers aiohttp's lookup from a context variable set for the request, so aiohttp never
does DNS of its own. Behind a proxy, aiohttp connects to the proxy only.

TLS certificates are not verified, as in Heritrix and BUbiNG: an archival crawler records
what a server serves, and a bad certificate is not a reason to lose the page.
"""

from __future__ import annotations

import asyncio
import contextvars
import ipaddress
import socket
import time
from dataclasses import dataclass

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from engine.errors import BadResponse, ConnectFailed, ReadTimeout

_pinned_ip: contextvars.ContextVar[str | None] = contextvars.ContextVar("pinned_ip", default=None)

ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.95,text/*;q=0.9,*/*;q=0.8"


@dataclass(slots=True)
class FetchResult:
    url: str
    ip: str | None
    status: int
    headers: dict[str, str]  # lower-case names; the last value of repeated headers
    request_head: bytes
    response_head: bytes
    body: bytes
    truncated: str | None  # "length" when cut at max_body_bytes
    started: float  # monotonic
    ended: float  # monotonic, after the last byte
    fetched_at: float  # epoch seconds, for WARC-Date


class PinnedResolver(AbstractResolver):
    """Resolves only IP literals and the address pinned for the current request."""

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[ResolveResult]:
        try:
            address = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            pinned = _pinned_ip.get()
            if pinned is None:
                raise OSError(f"no address pinned for {host}") from None
            address = ipaddress.ip_address(pinned)
        fam = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        return [{"hostname": host, "host": str(address), "port": port, "family": fam, "proto": 0, "flags": 0}]

    async def close(self) -> None:
        return None


class Fetcher:
    """One aiohttp session shared by every fetch coroutine of a process."""

    def __init__(
        self,
        *,
        user_agent: str,
        proxy: str = "",
        keepalive: bool = False,
        connect_timeout: float = 10.0,
        first_byte_timeout: float = 30.0,
        total_timeout: float = 60.0,
        max_body_bytes: int = 2 << 20,
    ) -> None:
        self.proxy = proxy or None
        self.max_body_bytes = max_body_bytes
        self.headers = {
            "User-Agent": user_agent,
            "Accept": ACCEPT,
            "Accept-Encoding": "gzip, deflate",
        }
        if not keepalive:
            self.headers["Connection"] = "close"
        self.timeout = aiohttp.ClientTimeout(
            total=total_timeout, sock_connect=connect_timeout, sock_read=first_byte_timeout
        )
        self._keepalive = keepalive
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            resolver=PinnedResolver(),
            use_dns_cache=False,
            limit=0,
            force_close=not self._keepalive,
            ssl=False,
        )
        return aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=self.timeout,
            skip_auto_headers=("Content-Type",),
        )

    async def fetch(self, url: str, ip: str | None) -> FetchResult:
        if self._session is None:
            self._session = self._open()
        _pinned_ip.set(ip)
        started = time.monotonic()
        fetched_at = time.time()
        try:
            async with self._session.get(
                url, headers=self.headers, allow_redirects=False, proxy=self.proxy
            ) as resp:
                body, truncated = await self._read_body(resp)
                ended = time.monotonic()
                return FetchResult(
                    url=url,
                    ip=ip,
                    status=resp.status,
                    headers={k.lower(): v for k, v in resp.headers.items()},
                    request_head=_request_head(resp, url, self.proxy is not None),
                    response_head=_response_head(resp),
                    body=body,
                    truncated=truncated,
                    started=started,
                    ended=ended,
                    fetched_at=fetched_at,
                )
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError, ConnectionRefusedError) as e:
            raise ConnectFailed(f"{url}: {e}") from None
        except (asyncio.TimeoutError, aiohttp.ServerTimeoutError) as e:
            raise ReadTimeout(f"{url}: timed out ({type(e).__name__})") from None
        except (aiohttp.ClientError, OSError, ValueError) as e:
            raise BadResponse(f"{url}: {type(e).__name__}: {e}") from None

    async def _read_body(self, resp: aiohttp.ClientResponse) -> tuple[bytes, str | None]:
        limit = self.max_body_bytes
        chunks: list[bytes] = []
        size = 0
        async for chunk in resp.content.iter_chunked(1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                resp.close()  # stop reading; the connection cannot be reused
                return b"".join(chunks)[:limit], "length"
        return b"".join(chunks), None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _request_head(resp: aiohttp.ClientResponse, url: str, proxied: bool) -> bytes:
    info = resp.request_info
    target = url if proxied else (info.url.raw_path_qs or "/")
    lines = [f"{info.method} {target} HTTP/1.1"]
    lines.extend(f"{k}: {v}" for k, v in info.headers.items())
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


def _response_head(resp: aiohttp.ClientResponse) -> bytes:
    version = resp.version or aiohttp.HttpVersion11
    status_line = f"HTTP/{version.major}.{version.minor} {resp.status} {resp.reason or ''}".rstrip()
    parts = [status_line.encode("latin-1", "replace")]
    for name, value in resp.raw_headers:
        if name.lower() != b"transfer-encoding":
            parts.append(name + b": " + value)
    return b"\r\n".join(parts) + b"\r\n\r\n"
