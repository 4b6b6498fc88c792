"""The fetch seam (step 6 of ARCHITECTURE.md): what a client is given, what it must do, what it returns.

Holds no I/O: the clients are ``engine/http1.py: Http1Fetcher`` (the default) and
``engine/aiohttp_fetcher.py: AiohttpFetcher``; ``engine/clients.py: make_fetcher`` picks one by
``network.client``. Both are built from one :class:`ClientSettings` and satisfy :class:`Fetcher`.

The contract, the same for every client: ``fetch(url, ip, headers)`` performs exactly one GET
(redirects are *not* followed: the engine records them and enqueues their targets) over a
connection to ``ip``, the address the workbench recorded for the host (or to the proxy, if
one is set), with ``headers`` after its own (a revisit's validators, a credential), and returns a :class:`FetchResult` holding what the WARC needs: the request head
as sent, the response head as received (less ``Transfer-Encoding``, since the body is stored
de-chunked) and the body as transferred (content-encoding kept, cut at ``max_body_bytes``).
It raises only the remote errors of ``engine/errors.py``: ``ConnectFailed``, ``ReadTimeout``,
``BadResponse``.

TLS certificates are not verified, as in Heritrix and BUbiNG: an archival crawler records
what a server serves, and a bad certificate is not a reason to lose the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from engine.config import NetworkConfig

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


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """What an HTTP client is built from; the keys of ``[network]`` that concern it, and the User-Agent."""

    user_agent: str
    proxy: str = ""
    """``http://HOST:PORT`` of an HTTP proxy for every request; empty = connect to the pinned IP"""
    keepalive: bool = False
    """reuse connections; off, every request says ``Connection: close``"""
    connect_timeout: float = 10.0
    """seconds to establish a connection"""
    first_byte_timeout: float = 30.0
    """seconds of silence allowed before the response starts"""
    total_timeout: float = 60.0
    """seconds for the whole exchange"""
    max_body_bytes: int = 2 << 20
    """bodies are cut beyond this many bytes (``FetchResult.truncated == "length"``)"""

    @classmethod
    def from_config(cls, network: NetworkConfig, user_agent: str) -> ClientSettings:
        return cls(
            user_agent=user_agent,
            proxy=network.proxy,
            keepalive=network.keepalive,
            connect_timeout=network.connect_timeout,
            first_byte_timeout=network.first_byte_timeout,
            total_timeout=network.total_timeout,
            max_body_bytes=network.max_body_bytes,
        )


class Fetcher(Protocol):
    """An HTTP client: one per process, shared by every fetch coroutine (see the module docstring)."""

    @property
    def settings(self) -> ClientSettings: ...

    async def fetch(self, url: str, ip: str | None, headers: Sequence[tuple[str, str]] = ()) -> FetchResult:
        """One GET of ``url`` over a connection to ``ip``, with ``headers`` besides the client's own;
        raises ConnectFailed, ReadTimeout or BadResponse."""
        ...

    async def close(self) -> None:
        """Close every connection this client holds (the agent calls it when it stops)."""
        ...
