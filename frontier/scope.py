"""Crawl scope: which discovered URLs may be scheduled at all, relative to the seeds.

``any`` accepts every http(s) URL; ``host`` only URLs whose host is a seed's host; ``domain``
only URLs whose host is a seed's host or a subdomain of a seed's domain (the seed host
without a leading ``www.``). Registered domains would need the public suffix list; the
seed-suffix rule is what Heritrix's SURT-prefix scope does for the common case.

Besides the host test, the limits that keep a crawl out of traps and absurd URLs, each
Heritrix's default rule and each a predicate of the filter language (``frontier/filters/``),
compiled once, so the two cannot disagree:

* ``max_url_length`` N: ``max_url_length(N)`` (Heritrix's UURI limit, 2083 characters,
  the longest URL Internet Explorer would open);
* ``max_path_depth`` N: ``max_depth(N)`` (TooManyPathSegmentsDecideRule, 20);
* ``max_repeated_segments`` N: ``not duplicate_segments(N+1)``: a run of segments may occur
  N times in a row, N+1 is the trap ``/a/b/a/b/a/b/`` (PathologicalPathDecideRule, 2).

0 turns a limit off. The length limit comes first, so an absurd URL costs one ``len`` more.
The frontier asks :meth:`Scope.rejects` only about URLs its URL cache has not seen lately:
the limits are pure functions of the URL, so a verdict cannot change, and most links are
links to URLs seen before. Calendars, whose next month has the same depth and no repetition,
are bounded by the frontier's per-shape budget instead (``frontier/shapes.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from frontier.filters import compile_filter
from frontier.urls import host_of, split

MODES = ("any", "host", "domain")


class Scope:
    __slots__ = ("mode", "_hosts", "_suffixes", "_limits")

    def __init__(
        self,
        mode: str,
        seeds: Iterable[str] = (),
        *,
        max_url_length: int = 0,
        max_path_depth: int = 0,
        max_repeated_segments: int = 0,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"scope must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self._hosts: set[str] = set()
        self._suffixes: set[str] = set()
        self._limits = _limits(max_url_length, max_path_depth, max_repeated_segments)
        for url in seeds:
            self.add_seed(url)

    def add_seed(self, url: str) -> None:
        host = host_of(split(url)[0])
        self._hosts.add(host)
        self._suffixes.add(host.removeprefix("www."))

    def rejects(self, url: str) -> str | None:
        """The limit the canonical ``url`` breaks, or None: ``url_length``, ``path_depth`` or ``repeated_segments``.

        The reason is the name the frontier counts the drop under.
        """
        for reason, accepts in self._limits:
            if not accepts(url):
                return reason
        return None

    def allows(self, scheme_authority: str) -> bool:
        if self.mode == "any":
            return True
        host = host_of(scheme_authority)
        if host in self._hosts:
            return True
        if self.mode == "host":
            return False
        return any(host == s or host.endswith("." + s) for s in self._suffixes)


Limits = tuple[tuple[str, Callable[[str], bool]], ...]


def _limits(max_url_length: int, max_path_depth: int, max_repeated_segments: int) -> Limits:
    """(drop reason, acceptance test) of each limit that is on, cheapest and most absurd first."""
    rules = (
        ("url_length", max_url_length, f"max_url_length({max_url_length})"),
        ("path_depth", max_path_depth, f"max_depth({max_path_depth})"),
        ("repeated_segments", max_repeated_segments, f"not duplicate_segments({max_repeated_segments + 1})"),
    )
    for reason, limit, _ in rules:
        if limit < 0:
            raise ValueError(f"the {reason} limit must not be negative, got {limit}")
    return tuple((reason, compile_filter(text, kind="url").accepts) for reason, limit, text in rules if limit)
