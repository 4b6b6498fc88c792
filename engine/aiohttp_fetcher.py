"""The fetch seam over aiohttp (``network.client = "aiohttp"``), and https for ``engine/http1.py``.

Role: a :class:`engine.fetch.Fetcher` built on one aiohttp session shared by every fetch
coroutine of a process; the contract (one GET, no redirects, what the result holds, which
errors) is in ``engine/fetch.py``. Owns the session and its connections; reads nothing else.

Connections go to the IP the workbench recorded for the host (T28): a ``PinnedResolver``
answers aiohttp's lookup from a context variable set for the request, so aiohttp never
does DNS of its own. Behind a proxy, aiohttp connects to the proxy only.
"""

from __future__ import annotations

import contextvars
import ipaddress
import socket
import time
from collections.abc import Sequence

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from engine.errors import BadResponse, ConnectFailed, ReadTimeout
from engine.fetch import ACCEPT, ClientSettings, FetchResult

_pinned_ip: contextvars.ContextVar[str | None] = contextvars.ContextVar("pinned_ip", default=None)


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


class AiohttpFetcher:
    """One aiohttp session shared by every fetch coroutine of a process, opened on the first fetch."""

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        self._proxy = settings.proxy or None
        self._headers = {
            "User-Agent": settings.user_agent,
            "Accept": ACCEPT,
            "Accept-Encoding": "gzip, deflate",
        }
        if not settings.keepalive:
            self._headers["Connection"] = "close"
        self._timeout = aiohttp.ClientTimeout(
            total=settings.total_timeout, sock_connect=settings.connect_timeout, sock_read=settings.first_byte_timeout
        )
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            resolver=PinnedResolver(),
            use_dns_cache=False,
            limit=0,
            force_close=not self.settings.keepalive,
            ssl=False,
        )
        return aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=self._timeout,
            skip_auto_headers=("Content-Type",),
        )

    async def fetch(self, url: str, ip: str | None, headers: Sequence[tuple[str, str]] = ()) -> FetchResult:
        if self._session is None:
            self._session = self._open()
        _pinned_ip.set(ip)
        started = time.monotonic()
        fetched_at = time.time()
        try:
            async with self._session.get(
                url, headers={**self._headers, **dict(headers)} if headers else self._headers, allow_redirects=False,
                proxy=self._proxy
            ) as resp:
                body, truncated = await self._read_body(resp)
                ended = time.monotonic()
                return FetchResult(
                    url=url,
                    ip=ip,
                    status=resp.status,
                    headers={k.lower(): v for k, v in resp.headers.items()},
                    request_head=_request_head(resp, url, self._proxy is not None),
                    response_head=_response_head(resp),
                    body=body,
                    truncated=truncated,
                    started=started,
                    ended=ended,
                    fetched_at=fetched_at,
                )
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError, ConnectionRefusedError) as e:
            raise ConnectFailed(f"{url}: {e}") from None
        except (TimeoutError, aiohttp.ServerTimeoutError) as e:
            raise ReadTimeout(f"{url}: timed out ({type(e).__name__})") from None
        except (aiohttp.ClientError, OSError, ValueError) as e:
            raise BadResponse(f"{url}: {type(e).__name__}: {e}") from None

    async def _read_body(self, resp: aiohttp.ClientResponse) -> tuple[bytes, str | None]:
        limit = self.settings.max_body_bytes
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
