"""Which agent owns a host: consistent hashing of the host name over the agents of a crawl.

Hosts, not registered domains, are hashed (BUbiNG does the same): the host is the unit of
politeness, so one owner per host is all the host delay needs, and hashing hosts spreads a
site with many subdomains (a blog platform, a social network's user hosts) over every agent
instead of loading one. The port and scheme are left out, so every service of a host
has the same owner.

A ring of ``VNODES`` points per agent (xxh3 of ``"agent/replica"``) makes the assignment
consistent: with N agents each owns about 1/N of the hosts, and adding an agent would move
only about 1/(N+1) of them. A crawl keeps its number of agents for life (the output folder
records it), since each agent's frontier holds the hosts it owned.
"""

from __future__ import annotations

import bisect

import xxhash

VNODES = 128


class HashRing:
    def __init__(self, agents: int) -> None:
        if agents < 1:
            raise ValueError(f"a crawl has at least one agent, got {agents}")
        self.agents = agents
        points = sorted(
            (xxhash.xxh3_64_intdigest(f"{agent}/{replica}".encode()), agent)
            for agent in range(agents)
            for replica in range(VNODES)
        )
        self._points = [p for p, _ in points]
        self._owners = [a for _, a in points]

    def owner(self, host: str) -> int:
        """The agent that owns ``host`` (a lower-case host name, without port)."""
        if self.agents == 1:
            return 0
        i = bisect.bisect(self._points, xxhash.xxh3_64_intdigest(host.encode()))
        return self._owners[i % len(self._owners)]
