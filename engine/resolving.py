"""Resolve tasks: one per new host, and one per host whose DNS answer expired.

Reads the caching resolver (``engine/dns.py``, which bounds how many lookups run at once)
and ``network.allow_networks`` (``engine/addresses.py``); writes the frontier only through
``resolved``/``resolve_failed``/``retry_resolve``/``refused``, which attach the host to the
workbench entry of its IP, move it there, back it off or purge it. Never fetches.

A host purged while its lookup ran (a machine rejoined and took it back) ends its
resolution there: its answer is dropped.

Every answer is checked against ``network.allow_networks``, not only the first: a host whose
name now points somewhere forbidden is purged, as at its first resolution. Behind a proxy a
name that does not resolve is fetched anyway (the proxy resolves it), and the name stands in
for the IP in politeness.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sized
from typing import Protocol

from engine.addresses import AddressPolicy
from engine.crew import Crew
from engine.dns import Answer, DnsFailed
from frontier.urls import host_of
from frontier.visit_state import Phase, VisitState


class Resolver(Protocol):
    """What resolves names: ``engine/dns.py: CachingResolver``, or a benchmark's stand-in."""

    @property
    def cache(self) -> Sized: ...

    async def resolve(self, host: str, now: float) -> Answer: ...

    async def aclose(self) -> None: ...


class Resolvers:
    """Starts and tracks the resolve tasks; ``pending`` counts lookups and back-offs still to come."""

    def __init__(self, crew: Crew, resolver: Resolver, addresses: AddressPolicy, *, proxied: bool,
                 hand_off: Callable[[VisitState, str], bool] | None = None) -> None:
        self.crew = crew
        self.hand_off = hand_off  # True: another machine crawls the host of that IP (``LinkRouter.hand_off``)
        self.resolver = resolver
        self.addresses = addresses
        self.proxied = proxied
        self.pending = 0

    def start(self, vs: VisitState) -> None:
        self.crew.spawn(self.resolve(vs))

    async def resolve(self, vs: VisitState) -> None:
        crew, frontier = self.crew, self.crew.frontier
        self.pending += 1
        try:
            host = host_of(vs.scheme_authority)
            try:
                ip, expires = await self.resolver.resolve(host, time.monotonic())
            except DnsFailed as e:
                if frontier.purged_meanwhile(vs):
                    return
                if not self.proxied:
                    crew.stats.errors["dns"] += 1
                    backoff = frontier.resolve_failed(vs, permanent=e.permanent)
                    if backoff is not None:
                        asyncio.get_running_loop().call_later(backoff, self._retry, vs)
                        self.pending += 1  # the retry keeps the crawl alive
                    return
                ip, expires = host, math.inf
            else:
                if frontier.purged_meanwhile(vs):
                    return
                if not self.addresses.permits(ip):
                    crew.stats.refused_addresses += 1
                    frontier.refused(vs, "address")
                    return
            if self.hand_off is not None and self.hand_off(vs, ip):
                return
            frontier.resolved(vs, ip, expires)
            crew.todo_alarm.fire()
        finally:
            self.pending -= 1
            crew.distributor_alarm.fire()

    def _retry(self, vs: VisitState) -> None:
        self.pending -= 1
        if not self.crew.stopping and vs.phase is not Phase.PURGED:
            self.crew.frontier.retry_resolve(vs)
            self.start(vs)

    async def close(self) -> None:
        await self.resolver.aclose()
