"""Crawler traps of the in-vitro web: endless calendars, repeating and deepening paths, absurd URLs.

Role: what a crawl with the default scope limits must leave by itself (``tests/test_traps.py``).
A host chosen by ``WebParams.trap_share`` links the entrances from its home page:

- ``/calendar/2026/12/``: a month that links the month before and after and the same month a
  year before and after, root-relative, without end (the depth stays the same and no segment
  repeats; the year links make the calendar wide, so a crawl reaches its bound in few steps);
- ``/events?month=2026-12``: the same calendar in the query, linking ``?month=2027-01`` (a
  query-only reference);
- ``/loop/a/``: links the relative ``b/``, whose page links ``a/``: ``/loop/a/b/a/b/…``;
- ``/deep/d1/``: links the relative ``d2/``: ``/deep/d1/d2/d3/…``, every segment new;
- ``/long/aaa…``: URLs of exactly :data:`LONG_URLS` characters, origin included (the server
  logs requests up to its 64 KiB head limit, so a fetched 2,084-character URL would show);
- ``/long-redirect``: a 302 to a URL of :data:`REDIRECTED_LENGTH` characters that nothing links.

A month lists events drawn from the hash of its URL, so two months are never near-duplicates:
the crawler's dedup, which does not follow the links of a duplicate, is not what stops a
calendar. Pure and deterministic, like the model.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from bench.invitro import html

PREFIXES = ("/calendar/", "/events?month=", "/loop/", "/deep/", "/long")
LONG_URLS = (2083, 2084, 100_001)
REDIRECTED_LENGTH = 3000
_CALENDAR = re.compile(r"/calendar/([1-9]\d*)/(0[1-9]|1[0-2])/")
_EVENTS = re.compile(r"/events\?month=([1-9]\d*)-(0[1-9]|1[0-2])")
_LOOP = re.compile(r"/loop/(?:[ab]/)+")
_DEEP = re.compile(r"/deep/(?:d[1-9]\d*/)+")
_LONG = re.compile(r"/long/a+")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


class Trap(NamedTuple):
    """A trap's answer: 200 with a page, or a 302 whose ``links`` hold the Location."""

    status: int
    body: bytes
    links: list[str]  # absolute URLs


def long_target(origin: str, length: int) -> str:
    """The ``/long/aaa…`` target whose URL on ``origin`` is ``length`` characters long."""
    return "/long/" + "a" * (length - len(origin) - len("/long/"))


def entrances(origin: str) -> list[str]:
    """The targets a trapped host's home page links (the long ones sized for ``origin``)."""
    longs = [long_target(origin, length) for length in LONG_URLS]
    return ["/calendar/2026/12/", "/events?month=2026-12", "/loop/a/", "/deep/d1/", "/long-redirect", *longs]


def respond(target: str, origin: str, h: int) -> Trap | None:
    """The trap at ``target`` on ``origin``, or None if there is none.

    ``h`` is a hash of the host and target: it picks the month's events.
    """
    if match := _CALENDAR.fullmatch(target):
        year, month = int(match[1]), int(match[2])
        hrefs = [f"/calendar/{y}/{m:02d}/" for y, m in _neighbours(year, month)]
        return Trap(200, _page(f"{_MONTHS[month - 1]} {year}", h, hrefs), [origin + href for href in hrefs])
    if match := _EVENTS.fullmatch(target):
        year, month = int(match[1]), int(match[2])
        hrefs = [f"?month={y}-{m:02d}" for y, m in _neighbours(year, month)]
        title = f"Events, {_MONTHS[month - 1]} {year}"
        return Trap(200, _page(title, h, hrefs), [origin + "/events" + href for href in hrefs])
    if _LOOP.fullmatch(target):
        other = "b/" if target.endswith("/a/") else "a/"
        return Trap(200, _page("Around again", h, [other]), [origin + target + other])
    if _DEEP.fullmatch(target):
        deeper = f"d{int(target[target.rindex('/d') + 2 : -1]) + 1}/"
        return Trap(200, _page("Further down", h, [deeper]), [origin + target + deeper])
    if _LONG.fullmatch(target):
        return Trap(200, _page("A long way", h, []), [])
    if target == "/long-redirect":
        return Trap(302, html.small_page("Found", "Elsewhere."), [origin + long_target(origin, REDIRECTED_LENGTH)])
    return None


def _neighbours(year: int, month: int) -> list[tuple[int, int]]:
    """The months before and after, then the same month a year before and after (none before year 1)."""
    before = [(year, month - 1)] if month > 1 else ([(year - 1, 12)] if year > 1 else [])
    after = (year + 1, 1) if month == 12 else (year, month + 1)
    return [*before, after, *([(year - 1, month)] if year > 1 else []), (year + 1, month)]


def _page(title: str, h: int, hrefs: list[str]) -> bytes:
    events = "".join(f"<li>{html.SENTENCES[(h >> (10 * k)) & 1023]}</li>\n" for k in range(4))
    links = "".join(f'<li><a href="{href}">{href}</a></li>\n' for href in hrefs)
    return (f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>\n<body>\n<h1>{title}</h1>\n"
            f"<ul class=\"events\">\n{events}</ul>\n<ul class=\"pager\">\n{links}</ul>\n</body></html>\n").encode()
