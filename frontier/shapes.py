"""The per-host budget of URLs that differ only in their digits: the default bound on calendars.

A calendar's "next month" link keeps the path depth (``/calendar/2026/12/`` →
``/calendar/2027/01/``, or ``?month=2027-01``) and repeats no segment, so neither
``scope.max_path_depth`` nor ``scope.max_repeated_segments`` ever stops it. What it does keep
is its *shape*: the path and query with their digits taken out (``/calendar///``,
``?month=-``). This budget admits at most ``limit`` new URLs of one shape per host
(scheme+authority), i.e. URLs that differ only in their digits; a trap that mints dates,
session or page numbers then costs its host at most ``limit`` fetches, and the crawl goes on.
(Taking digits out is one ``bytes.translate``, 3-5x cheaper here than a regular expression that
replaces each run by a placeholder, which would keep ``/a1b`` and ``/ab1`` apart: no real loss.)

Why this and not Heritrix's hop limit (``TooManyHopsDecideRule``, 20 hops from a seed), which
bounds any trap: a hop count must travel with every URL through the sieve, the virtualizer,
the visit states, the link spools between agents and the checkpoint, and be recovered for the
pages replayed from the WARC files after a crash: a second field in every stored record, on
the hottest path, for a limit that also cuts legitimate deep chains (pagination) at the same
depth. The shape budget is a pure function of the URL and a few megabytes of counters. Its
price: a host with more than ``limit`` pages of one shape (``/item?id=N`` on a large site)
gets ``limit`` of them; drops are counted under ``url_shape`` and ``0`` turns it off.

URLs without a digit are not counted (their shape is the URL itself, which the sieve already
admits once). The budget is asked by the distributor as each URL leaves the sieve, so every
URL is counted exactly once, however often it is linked.

Memory is constant: the counts live in a count-min sketch (two rows of 2^20 16-bit counters,
4 MiB) with conservative update, so a count is never too low and, once the smaller counter of
a shape reaches ``limit``, nothing is incremented any more (counters never pass ``limit``,
hence ``MAX_LIMIT``). A collision can only make a count too high; at 10^8 counted URLs per
agent the typical excess is below a hundred. The sketch is part of the frontier checkpoint.
"""

from __future__ import annotations

import base64
import sys
import zlib
from array import array
from collections import Counter

import xxhash

__all__ = ["MAX_LIMIT", "ShapeBudget"]

MAX_LIMIT = 0xFFFF
_ROW_BITS = 20
_MASK = (1 << _ROW_BITS) - 1
_DIGITS = b"0123456789"
_hash = xxhash.xxh3_64_intdigest


class ShapeBudget:
    """Admits at most ``limit`` URLs of each (host, shape); drops are counted in ``drops["url_shape"]``."""

    __slots__ = ("limit", "drops", "_counts")

    def __init__(self, limit: int, drops: Counter[str]) -> None:
        if not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"the URL shape limit must lie between 1 and {MAX_LIMIT}, got {limit}")
        self.limit = limit
        self.drops = drops
        self._counts = array("H", bytes(4 << _ROW_BITS))  # two rows of 16-bit counters

    def admit(self, scheme_authority: str, path_query: str) -> bool:
        """Count a new URL against its shape's budget; False (and a drop) once the budget is spent."""
        data = path_query.encode()
        form = data.translate(None, _DIGITS)
        if len(form) == len(data):
            return True
        h = _hash(scheme_authority.encode() + form)  # the host keeps its digits: h1.example and h2.example differ
        counts = self._counts
        i, j = h & _MASK, (1 << _ROW_BITS) + ((h >> 32) & _MASK)
        a, b = counts[i], counts[j]
        low = a if a < b else b
        if low >= self.limit:
            self.drops["url_shape"] += 1
            return False
        # conservative update: only the counters at the minimum grow, so estimates stay tight
        if a == low:
            counts[i] = low + 1
        if b == low:
            counts[j] = low + 1
        return True

    def state(self) -> str:
        """The counters, for the checkpoint (zlib, base64; a young sketch is mostly zeros)."""
        counts = self._counts
        if sys.byteorder == "big":  # stored little-endian, like the rest of the checkpoint
            counts = array("H", counts)
            counts.byteswap()
        return base64.b64encode(zlib.compress(counts.tobytes(), 1)).decode("ascii")

    def load(self, state: str) -> None:
        """Take back the counters :meth:`state` saved."""
        counts = array("H", zlib.decompress(base64.b64decode(state)))
        if len(counts) != len(self._counts):
            raise ValueError(f"a URL shape sketch of {len(counts)} counters, expected {len(self._counts)}")
        if sys.byteorder == "big":
            counts.byteswap()
        self._counts = counts
