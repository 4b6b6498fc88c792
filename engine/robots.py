"""robots.txt rules (ARCHITECTURE.md, step 6): RFC 9309 over protego, pure, no I/O.

A fetcher fetches ``/robots.txt`` (following redirects itself) and hands the outcome to
``RobotsRules.from_response``; the visit state keeps the rules until they expire, and every
URL of the host is checked with ``allowed(path_query)`` before it is fetched.

What the status means (RFC 9309 §2.3.1), and where we choose:

* 2xx: parse the body: UTF-8 with errors replaced, a BOM dropped, at most 500 KiB (the
  RFC's minimum; the cut falls at the last line break, so no rule is read half-written).
* 3xx: the engine followed the redirects and gave up ("too many"): allow all, as §2.3.1.2
  says of unfollowed redirects.
* 4xx: "unavailable": allow all. Except 429: a server asking us to slow down is treated as
  unreachable, as Google does, rather than as permission to crawl everything.
* 5xx, a network failure (``status is None``) or a status outside 200–499: "unreachable":
  disallow all. BUbiNG allows here; the RFC says disallow (peers.md §1.7).

``/robots.txt`` itself is always allowed. ``crawl_delay`` comes from the group for our
product token, else ``*``, capped at ``max_crawl_delay``. Allow-all and disallow-all never
call protego, and nothing here raises on any input: garbage in is a rule set out.

Rules go into the frontier's checkpoint (``encode``/``decode``), so a resumed crawl does not
fetch robots.txt again before ``robots.expiry``: a parsed body is kept zlib-compressed (a
tenth of its size, about what protego's own objects cost again), and restored rules parse it
only when first consulted, so resuming a crawl of many hosts does not parse them all at once.
"""

from __future__ import annotations

import math
import re
import struct
import zlib

from protego import Protego

MAX_ROBOTS_BYTES = 500 * 1024
_ALLOW_ALL, _DISALLOW_ALL, _PARSED = "allow all", "disallow all", "parsed"
_MODES = (_ALLOW_ALL, _DISALLOW_ALL, _PARSED)
_REASONS = ("parsed", "unavailable", "unreachable", "redirects", "unparseable")
_SAVED = struct.Struct("<BBd")  # reason, mode, Crawl-delay (NaN: none); the compressed text follows
_PRODUCT_TOKEN = re.compile(r"[A-Za-z_-]+")


def product_token(user_agent: str) -> str:
    """``crawl/0.1 (+http://…)`` → ``crawl``: the name robots.txt groups are matched against.

    Matching the whole header would let a group for any word in its comment (``BUbiNG`` in
    ``(BUbiNG-style crawler)``) apply to us.
    """
    match = _PRODUCT_TOKEN.match(user_agent.strip())
    return match[0] if match else user_agent


def robots_text(body: bytes) -> str:
    """The part of ``body`` a crawler must parse, as text."""
    if len(body) > MAX_ROBOTS_BYTES:
        body = body[:MAX_ROBOTS_BYTES]
        end = body.rfind(b"\n")
        if end >= 0:
            body = body[: end + 1]
    return body.decode("utf-8", errors="replace").removeprefix("\ufeff")


def _may_disallow(text: str) -> bool:
    """False when no line can be a Disallow (protego also reads misspellings, all ``di…``)."""
    return any(line.lstrip().lower().startswith("di") for line in text.splitlines())


class RobotsRules:
    """The rules of one host for one user agent; immutable once made (the parser may come later)."""

    __slots__ = ("reason", "crawl_delay", "_mode", "_parser", "_agent", "_text")

    def __init__(
        self,
        reason: str,
        mode: str,
        parser: Protego | None = None,
        agent: str = "*",
        crawl_delay: float | None = None,
        text: bytes = b"",
    ) -> None:
        self.reason = reason  # "parsed", "unavailable", "unreachable", "redirects", "unparseable"
        self.crawl_delay = crawl_delay
        self._mode = mode
        self._parser = parser
        self._agent = agent
        self._text = text  # the parsed text, UTF-8 and zlib-compressed: for checkpoints and lazy parsing

    @classmethod
    def from_response(
        cls, status: int | None, body: bytes, user_agent: str, *, max_crawl_delay: float = 30
    ) -> RobotsRules:
        if status is None or status == 429 or not 200 <= status < 500:
            return cls("unreachable", _DISALLOW_ALL)
        if status >= 400:
            return cls("unavailable", _ALLOW_ALL)
        if status >= 300:
            return cls("redirects", _ALLOW_ALL)
        return cls.parse(body, user_agent, max_crawl_delay=max_crawl_delay)

    @classmethod
    def parse(cls, body: bytes, user_agent: str, *, max_crawl_delay: float = 30) -> RobotsRules:
        """The rules of a robots.txt body fetched with a 2xx status."""
        agent = product_token(user_agent)
        try:
            text = robots_text(body)
            parser = Protego.parse(text)
            delay = parser.crawl_delay(agent)
        except Exception:  # protego has no documented errors; a parser bug must not stop a crawl
            return cls("unparseable", _DISALLOW_ALL)
        if delay is not None:
            delay = min(delay, max_crawl_delay)
        mode = _PARSED if _may_disallow(text) else _ALLOW_ALL
        return cls("parsed", mode, parser, agent, delay, zlib.compress(text.encode()))

    def encode(self) -> bytes:
        """These rules as bytes, for the frontier's checkpoint (:meth:`decode` reads them back)."""
        delay = math.nan if self.crawl_delay is None else self.crawl_delay
        return _SAVED.pack(_REASONS.index(self.reason), _MODES.index(self._mode), delay) + self._text

    @classmethod
    def decode(cls, data: bytes, user_agent: str) -> RobotsRules:
        """Rules saved by :meth:`encode`; their text is parsed again when first consulted."""
        reason, mode, delay = _SAVED.unpack_from(data)
        crawl_delay = None if math.isnan(delay) else delay
        return cls(_REASONS[reason], _MODES[mode], None, product_token(user_agent), crawl_delay, data[_SAVED.size :])

    @classmethod
    def restore(cls, data: bytes, fetched: float, *, now: float, expiry: float, user_agent: str) -> RobotsRules | None:
        """Rules from a checkpoint, fetched at ``fetched``; None once ``expiry`` seconds have passed
        since (then robots.txt is fetched again). Both times are wall-clock seconds: the crawl
        may resume after a reboot, and the time it was down counts."""
        return cls.decode(data, user_agent) if now < fetched + expiry else None

    @property
    def sitemaps(self) -> list[str]:
        """The Sitemap URLs of a parsed robots.txt (site-wide, whatever the group)."""
        parser = self._protego()
        try:
            return list(parser.sitemaps) if parser is not None else []
        except Exception:  # as in parse: a parser bug must not stop a crawl
            return []

    def _protego(self) -> Protego | None:
        """The parser; restored rules make it from their saved text the first time it is needed."""
        if self._parser is None and self._text:
            try:
                self._parser = Protego.parse(zlib.decompress(self._text).decode())
            except Exception:  # it parsed when fetched: only a changed protego could fail here
                self._mode, self._text = _DISALLOW_ALL, b""
        return self._parser

    def allowed(self, path_query: str) -> bool:
        """May we fetch ``path_query`` (``/a/b?x=1``, as sent in the request line)?"""
        mode = self._mode
        if mode is _ALLOW_ALL:
            return True
        if path_query == "/robots.txt" or path_query.startswith("/robots.txt?"):
            return True
        parser = self._protego() if mode is _PARSED else None
        if parser is None:
            return False
        if not path_query.startswith("/"):
            path_query = "/" + path_query
        try:
            # a dummy authority: a bare "//x" path would be read as a host by urlsplit
            return parser.can_fetch("http://robots.invalid" + path_query, self._agent)
        except Exception:
            return False  # cannot tell: the polite answer

    def __repr__(self) -> str:
        delay = "-" if self.crawl_delay is None else f"{self.crawl_delay:g}s"
        return f"<RobotsRules {self.reason}, {self._mode}, crawl-delay {delay}>"
