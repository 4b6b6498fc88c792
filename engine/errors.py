"""Errors sorted by blame, each remote one with a retry hint.

::

    CrawlError
    ├── RemoteError        the server or the network misbehaved; retried with back-off
    │   ├── ConnectFailed  no connection (refused, unreachable, connect timeout); breaks the host
    │   ├── ReadTimeout    the server went silent or was too slow overall
    │   └── BadResponse    the server answered with something that is not HTTP
    └── LocalError         a configuration error or a bug; never retried

``retry_after`` is the first back-off in seconds (it doubles on each retry of the same
host, see ``Frontier.failed``); ``breaks_host`` says whether running out of retries drops
the whole host rather than one URL. DNS failures are ``engine.dns.DnsFailed``.
"""

from __future__ import annotations


class CrawlError(Exception):
    """Base of every error the engine raises on purpose."""


class RemoteError(CrawlError):
    retry_after: float = 60.0
    breaks_host: bool = False
    kind: str = "remote"


class ConnectFailed(RemoteError):
    retry_after = 60.0
    breaks_host = True
    kind = "connect"


class ReadTimeout(RemoteError):
    retry_after = 60.0
    breaks_host = False
    kind = "timeout"


class BadResponse(RemoteError):
    retry_after = 60.0
    breaks_host = False
    kind = "bad_response"


class LocalError(CrawlError):
    """Never retried: fix the configuration or the code."""
