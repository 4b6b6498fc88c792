"""Crawl scope: which discovered URLs may be scheduled at all, relative to the seeds.

``any`` accepts every http(s) URL; ``host`` only URLs whose host is a seed's host; ``domain``
only URLs whose host is a seed's host or a subdomain of a seed's domain (the seed host
without a leading ``www.``). Registered domains would need the public suffix list; the
seed-suffix rule is what Heritrix's SURT-prefix scope does for the common case.
"""

from __future__ import annotations

from frontier.urls import host_of, split

MODES = ("any", "host", "domain")


class Scope:
    __slots__ = ("mode", "_hosts", "_suffixes")

    def __init__(self, mode: str, seeds: list[str] = ()) -> None:  # type: ignore[assignment]
        if mode not in MODES:
            raise ValueError(f"scope must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self._hosts: set[str] = set()
        self._suffixes: set[str] = set()
        for url in seeds:
            self.add_seed(url)

    def add_seed(self, url: str) -> None:
        host = host_of(split(url)[0])
        self._hosts.add(host)
        self._suffixes.add(host.removeprefix("www."))

    def allows(self, scheme_authority: str) -> bool:
        if self.mode == "any":
            return True
        host = host_of(scheme_authority)
        if host in self._hosts:
            return True
        if self.mode == "host":
            return False
        return any(host == s or host.endswith("." + s) for s in self._suffixes)
