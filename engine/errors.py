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

A 429 (Too Many Requests) is no error: the server answered, and asked to be asked again later.
The fetchers hold the host (and the credential used) for its ``Retry-After`` (:func:`retry_after`)
and fetch the URL again then, counting no failure (``Frontier.deferred``).
"""

from __future__ import annotations

from email.utils import parsedate_to_datetime

TOO_MANY_REQUESTS_WAIT = 60.0
"""seconds a 429 without a readable Retry-After holds its host"""


def retry_after(value: str | None, now: float) -> float:
    """Seconds to wait for a ``Retry-After`` value (delay-seconds or an HTTP-date, RFC 9110 §10.2.3)
    read at wall-clock ``now``; :data:`TOO_MANY_REQUESTS_WAIT` when absent or unreadable."""
    if value is None:
        return TOO_MANY_REQUESTS_WAIT
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - now)
    except (TypeError, ValueError):
        return TOO_MANY_REQUESTS_WAIT


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
