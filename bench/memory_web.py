"""The in-vitro web served from memory: the agent's fetch and DNS seams with no network behind them.

Role: lets ``bench/engine_overhead.py`` run the real agent (frontier, politeness bookkeeping,
robots.txt, gzip decoding, link extraction, canonicalization, sieve, WARC) with the network
replaced, to show what the engine itself costs per page. :class:`MemoryFetcher` is an
:class:`engine.fetch.Fetcher` (``settings``, ``async fetch(url, ip) -> FetchResult``,
``async close()``) and :class:`InstantResolver` has the interface of the agent's resolver
(``async resolve(host, now) -> Answer``, ``async aclose()``).

Responses are :meth:`bench.invitro.model.WebModel.respond`'s, with the heads and the gzip
content-coding (ISA-L, level 1) that the in-vitro server would send, so the engine decodes and
stores exactly what it would over loopback. Making them is the web's work, not the engine's:
the thread CPU time spent on it is counted in ``source_cpu_seconds`` so it can be subtracted.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence

from isal import isal_zlib

from bench.invitro.model import WebModel
from engine.dns import Answer, DnsFailed
from engine.fetch import ACCEPT, ClientSettings, FetchResult
from frontier.urls import host_of, split

_GZIP_WBITS = 31  # the gzip container, as the in-vitro server sends it


class MemoryFetcher:
    """Answers every request at once from the model; one yield to the loop per fetch, as a socket read gives."""

    def __init__(self, model: WebModel, user_agent: str) -> None:
        self.model = model
        self.settings = ClientSettings(user_agent)  # no proxy: the agent pins requests to the IP the resolver gave
        self._head_tail = (f"\r\nUser-Agent: {user_agent}\r\nAccept: {ACCEPT}\r\n"
                           "Accept-Encoding: gzip, deflate\r\nConnection: close\r\n\r\n").encode()
        self.requests = 0
        self.source_cpu_seconds = 0.0

    async def fetch(self, url: str, ip: str | None, headers: Sequence[tuple[str, str]] = ()) -> FetchResult:
        started, fetched_at = time.monotonic(), time.time()
        await asyncio.sleep(0)
        cpu = time.thread_time()
        scheme_authority, target = split(url)
        host_header = scheme_authority.split("://", 1)[1]
        response = self.model.respond(host_of(scheme_authority), target)
        body = response.body
        headers = {name.lower(): value for name, value in response.headers}
        if response.compressible:
            body = isal_zlib.compress(body, 1, _GZIP_WBITS)
            headers["content-encoding"] = "gzip"
        headers["content-length"] = str(len(body))
        lines = [f"HTTP/1.1 {response.status} {response.reason}".encode()]
        lines += [f"{name}: {value}".encode() for name, value in headers.items()]
        request_head = b"".join((b"GET ", target.encode(), b" HTTP/1.1\r\nHost: ", host_header.encode(),
                                 self._head_tail))
        self.requests += 1
        self.source_cpu_seconds += time.thread_time() - cpu
        return FetchResult(
            url=url,
            ip=ip,
            status=response.status,
            headers=headers,
            request_head=request_head,
            response_head=b"\r\n".join(lines) + b"\r\n\r\n",
            body=body,
            truncated=None,
            started=started,
            ended=time.monotonic(),
            fetched_at=fetched_at,
        )

    async def close(self) -> None:
        return None


class InstantResolver:
    """The model's address for its hosts, at once; other names do not exist."""

    def __init__(self, model: WebModel) -> None:
        self.model = model
        self.cache: dict[str, str] = {}

    async def resolve(self, host: str, now: float) -> Answer:
        try:
            ip = self.model.ip_of(host)
        except KeyError:
            raise DnsFailed(host, "nxdomain", permanent=True) from None
        self.cache[host] = ip
        return Answer(ip, math.inf)  # the model never moves a host

    async def aclose(self) -> None:
        return None
