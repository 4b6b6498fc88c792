"""The HTTP clients by name: ``network.client`` → a :class:`engine.fetch.Fetcher`.

Role: the one place that knows every client, so the agent and the benchmarks build them alike
and ``engine/fetch.py`` (the seam) imports none of them. Opens no connection: a client connects
on its first fetch.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.errors import LocalError
from engine.fetch import ClientSettings, Fetcher
from engine.http1 import Http1Fetcher


def _aiohttp(settings: ClientSettings) -> Fetcher:
    # imported here: aiohttp costs ~0.14 CPU-s to import, paid by every agent process otherwise
    from engine.aiohttp_fetcher import AiohttpFetcher

    return AiohttpFetcher(settings)


CLIENTS: dict[str, Callable[[ClientSettings], Fetcher]] = {"lean": Http1Fetcher, "aiohttp": _aiohttp}
"""the values ``network.client`` takes, each with its client's constructor (typed, so mypy checks
that both satisfy the protocol)"""


def make_fetcher(settings: ClientSettings, client: str) -> Fetcher:
    """The client named ``client`` ("lean" or "aiohttp"), built from ``settings``."""
    try:
        build = CLIENTS[client]
    except KeyError:
        raise LocalError(f"network.client: must be one of {', '.join(CLIENTS)}, got {client!r}") from None
    return build(settings)
