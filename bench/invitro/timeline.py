"""The social lab's posting mode: an API-like host whose users post over time, on a lab clock.

Role: what a live freshness recrawl (issue 15) is tested against. One host,
``api.posting.test`` (IP ``127.0.78.1``), served by the in-vitro server like any other web
(origin or proxy form, its DNS, its request log). Its users' posts come from a
:class:`PostSource` (a pure function of its arguments: ``bench/invitro/posting.py``'s
``Population`` is one); the lab only adds a clock and an API:

* **the lab clock**: ``lab = t0 + scale × (monotonic − origin)``, so with ``scale = 3600`` a
  lab hour passes each wall second; a post exists once the lab clock has reached its time;
* ``GET /``: the user directory, an HTML page linking to each user's timeline;
* ``GET /timeline?user=U&count=K[&since_id=I]``: JSON (orjson) of the newest ≤ K posts of U
  with time ≤ lab now (and id > I), ascending: ``{"user", "now", "posts": [{"id", "time"}]}``.
  A post's id is its time in lab milliseconds (unique per user unless two posts share a
  millisecond). With ``ETag`` (the newest id and the count returned) and ``Last-Modified``
  (the newest post's time); 304 with no body on a matching ``If-None-Match``, or, without
  one, an ``If-Modified-Since`` no earlier than the newest post (RFC 9110 §13.2.2);
* **credentials and rate limits**: a timeline call needs ``Authorization: Bearer TOKEN``
  (401 without); each token may make ``calls_per_hour`` calls (304s included) per lab hour,
  the hours counted from ``t0``; every answer says ``X-RateLimit-Limit``,
  ``X-RateLimit-Remaining`` and ``X-RateLimit-Reset`` (the lab's unix time the window ends);
  a call beyond the limit gets 429 with ``Retry-After`` in wall seconds (rounded up) until
  then, and is not counted.

Each timeline answer adds to its request-log line the token (``credential``), the lab time
(``lab``) and, for a 429, ``retry_after``. Bodies are never gzipped: the same URL changes
over time, and the server caches gzip by URL.

State: the per-token windows, nothing else; the answers are a function of (source, params,
clock, token history). Reads no clock itself: the server passes each request's monotonic
start as ``now``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime
from http import HTTPStatus
from typing import Protocol
from urllib.parse import parse_qs, quote, urlsplit

import orjson

from bench.invitro.model import Response

HOST = "api.posting.test"
DOMAIN = "posting.test"
IP = "127.0.78.1"
LAB_HOUR = 3600.0
_JSON = ("Content-Type", "application/json")


class PostSource(Protocol):
    """Who posts and when. ``posts`` is a pure function of its arguments: the posts of [a, c)
    are those of [a, b) followed by those of [b, c)."""

    @property
    def users(self) -> Sequence[str]: ...

    def posts(self, user: str, start: float, end: float) -> Sequence[float]:
        """The post times (unix seconds, ascending) of ``user`` in [start, end)."""
        ...


@dataclass(frozen=True)
class TimelineParams:
    """The posting lab's clock and API limits."""

    source: PostSource
    t0: float = 1_700_000_000.0
    """the lab's unix time when the server starts"""
    scale: float = 3600.0
    """lab seconds per wall second"""
    calls_per_hour: int = 150
    """timeline calls each token may make per lab hour"""
    max_count: int = 200
    """the largest ``count`` a call may ask for"""
    history: float = 30 * 86_400.0
    """how far back before ``t0`` the API lists posts (lab seconds)"""
    listing_count: int = 20
    """the ``count`` of the timeline links on the directory page"""

    def __post_init__(self) -> None:
        for key in ("scale", "calls_per_hour", "max_count", "history", "listing_count"):
            if not getattr(self, key) > 0:
                raise ValueError(f"TimelineParams.{key}: must be > 0, got {getattr(self, key)!r}")


class TimelineWeb:
    """The posting lab as a :class:`bench.invitro.model.Web` whose answers also read the request head.

    Invariant: a token's calls counted in one lab hour never exceed ``calls_per_hour``.
    """

    def __init__(self, params: TimelineParams, port: int, origin: float) -> None:
        self.params = params
        self.port = port
        self.origin = origin
        """the monotonic instant the lab clock reads ``t0``"""
        self._windows: dict[str, tuple[int, int]] = {}  # token → (lab hour, calls counted in it)
        self._users = frozenset(params.source.users)

    @property
    def domain(self) -> str:
        return DOMAIN

    def lab_time(self, now: float) -> float:
        """The lab clock at monotonic instant ``now``."""
        return self.params.t0 + self.params.scale * (now - self.origin)

    def host_index(self, host: str) -> int | None:
        return 0 if host.lower() == HOST else None

    def ip_of(self, host: str) -> str:
        if self.host_index(host) is None:
            raise KeyError(host)
        return IP

    def ips(self) -> list[str]:
        return [IP]

    def seeds(self, n: int) -> list[str]:
        return [f"http://{HOST}:{self.port}/"][:n]

    def respond(self, host: str, target: str) -> Response:
        """What needs no head: robots.txt, the directory, 404s (a timeline call needs one: 401)."""
        if self.host_index(host) is None:
            return _text(404, f"No host {host} here.")
        path = urlsplit(target).path
        if path == "/robots.txt":
            return _text(200, "User-agent: *\nAllow: /\n")
        if path == "/":
            return self._directory()
        if path == "/timeline":
            return _json(401, {"error": "a bearer token is needed"}, [("WWW-Authenticate", "Bearer")])
        return _text(404, "No such page.")

    def respond_head(self, host: str, target: str, headers: Mapping[bytes, bytes], now: float) -> Response:
        """The answer to a request with its head (lower-case names) at monotonic ``now``."""
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        if (self.host_index(host) is None or urlsplit(target).path != "/timeline"
                or not authorization.lower().startswith("bearer ")):
            return self.respond(host, target)
        token = authorization[7:].strip()
        lab = self.lab_time(now)
        limit = self.params.calls_per_hour
        hour = math.floor((lab - self.params.t0) / LAB_HOUR)
        window, used = self._windows.get(token, (hour, 0))
        if window != hour:
            used = 0
        reset = self.params.t0 + (hour + 1) * LAB_HOUR
        log: dict[str, object] = {"credential": token, "lab": lab}
        if used >= limit:
            wait = max(1, math.ceil((reset - lab) / self.params.scale))
            log["retry_after"] = wait
            return _json(429, {"error": "rate limit exceeded"}, _limits(limit, 0, reset) + [("Retry-After", str(wait))],
                         log)
        self._windows[token] = (hour, used + 1)
        answer = self._timeline(target, headers, lab, log)
        answer.headers.extend(_limits(limit, limit - used - 1, reset))
        return answer

    def _timeline(self, target: str, headers: Mapping[bytes, bytes], lab: float, log: dict[str, object]) -> Response:
        query = parse_qs(urlsplit(target).query)
        user = query.get("user", [""])[0]
        if user not in self._users:
            return _json(404, {"error": f"no user {user!r}"}, [], log)
        try:
            count = int(query.get("count", ["20"])[0])
            since_id = int(query.get("since_id", ["0"])[0])
        except ValueError:
            return _json(400, {"error": "count and since_id are integers"}, [], log)
        if not 1 <= count <= self.params.max_count:
            return _json(400, {"error": f"count is 1 to {self.params.max_count}"}, [], log)
        times = self.newest(user, lab, count, since_id / 1000)
        newest = times[-1] if times else self.params.t0 - self.params.history
        etag = f'"{_post_id(newest) if times else 0}.{len(times)}"'
        validators = [("ETag", etag), ("Last-Modified", formatdate(math.floor(newest), usegmt=True))]
        if _not_modified(headers, etag, newest):
            return Response(304, "Not Modified", validators, b"", log=log)
        body = orjson.dumps({"user": user, "now": lab, "posts": [{"id": _post_id(t), "time": t} for t in times]})
        return Response(200, "OK", [_JSON, *validators, ("Cache-Control", "no-cache")], body, log=log)

    def newest(self, user: str, lab: float, count: int, since: float) -> list[float]:
        """The newest ``count`` post times of ``user`` in (since, lab], ascending: windows doubling back from ``lab``."""
        floor = max(since, self.params.t0 - self.params.history)
        end = math.nextafter(lab, math.inf)
        span = LAB_HOUR
        while True:
            start = max(floor, lab - span)
            times = [t for t in self.params.source.posts(user, start, end) if t > since]
            if len(times) >= count or start <= floor:
                return times[-count:]
            span *= 2

    def _directory(self) -> Response:
        count = self.params.listing_count
        links = [f"http://{HOST}:{self.port}/timeline?count={count}&user={quote(u)}" for u in self.params.source.users]
        items = "".join(f'<li><a href="{html.escape(link)}">{html.escape(u)}</a></li>'
                        for u, link in zip(self.params.source.users, links, strict=True))
        body = f"<!doctype html><title>Users</title><h1>Users</h1><ul>{items}</ul>".encode()
        return Response(200, "OK", [("Content-Type", "text/html; charset=utf-8")], body, 0.0, links,
                        [False] * len(links), ["a"] * len(links), True)


def _post_id(t: float) -> int:
    return round(t * 1000)


def _not_modified(headers: Mapping[bytes, bytes], etag: str, newest: float) -> bool:
    """RFC 9110 §13.2.2: If-None-Match decides when present, else If-Modified-Since."""
    match = headers.get(b"if-none-match")
    if match is not None:
        tags = [t.strip().removeprefix("W/") for t in match.decode("latin-1").split(",")]
        return "*" in tags or etag in tags
    since = headers.get(b"if-modified-since")
    if since is None:
        return False
    try:
        return math.floor(newest) <= parsedate_to_datetime(since.decode("latin-1")).timestamp()
    except (TypeError, ValueError):
        return False  # an unreadable date is ignored, as RFC 9110 says


def _limits(limit: int, remaining: int, reset: float) -> list[tuple[str, str]]:
    return [("X-RateLimit-Limit", str(limit)), ("X-RateLimit-Remaining", str(remaining)),
            ("X-RateLimit-Reset", str(math.floor(reset)))]


def _json(status: int, value: object, headers: list[tuple[str, str]], log: dict[str, object] | None = None) -> Response:
    return Response(status, HTTPStatus(status).phrase, [_JSON, *headers], orjson.dumps(value), log=log)


def _text(status: int, text: str) -> Response:
    return Response(status, HTTPStatus(status).phrase, [("Content-Type", "text/plain; charset=utf-8")], text.encode())
