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

A crawl over several machines (``engine/cluster.py``, issue 17) hashes hosts over the agents of
every machine: :class:`GlobalRing` is a pure function of the sorted member list, (node, agents)
per machine, each global agent (node, local index) with its ``VNODES`` points keyed by
``"node/index/replica"``. Every machine builds the same ring from the same list, with no
message about who owns what; a machine joining takes about 1/(N+1) of the hosts and moves no
host between the machines already there.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

import xxhash

VNODES = 128
NODE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # a NATS subject token and a KV key, as is

Member = tuple[str, int]  # (node name, its number of agents)
GlobalAgent = tuple[str, int]  # (node name, local agent index)


class HashRing:
    """Agents numbered 0..n-1, each with ``VNODES`` points keyed by its label."""

    def __init__(self, agents: int, labels: Sequence[str] | None = None) -> None:
        if agents < 1:
            raise ValueError(f"a crawl has at least one agent, got {agents}")
        self.agents = agents
        names = labels if labels is not None else [str(a) for a in range(agents)]
        points = sorted(
            (xxhash.xxh3_64_intdigest(f"{names[agent]}/{replica}".encode()), agent)
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


class GlobalRing(HashRing):
    """The agents of every machine of a crawl; :meth:`owner` gives an index into :attr:`agents_list`."""

    def __init__(self, members: Sequence[Member]) -> None:
        nodes = [node for node, _ in members]
        if len(set(nodes)) != len(nodes):
            raise ValueError(f"a node name appears twice among {nodes}")
        for node, agents in members:
            if not NODE_NAME.match(node) or agents < 1:
                raise ValueError(f"bad member {node!r} with {agents} agents")
        self.members = sorted(members)
        self.agents_list: list[GlobalAgent] = [(node, i) for node, agents in self.members for i in range(agents)]
        super().__init__(len(self.agents_list), [f"{node}/{i}" for node, i in self.agents_list])

    def index(self, agent: GlobalAgent) -> int:
        return self.agents_list.index(agent)
