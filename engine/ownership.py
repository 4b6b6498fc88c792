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
every machine: :class:`GlobalRing` is a pure function of the member list, (node, agents)
per machine, each global agent (node, local index) with its ``VNODES`` points keyed by
``"node/index/replica"``. Every machine builds the same ring from the same list, with no
message about who owns what. Who owns a host depends on the set of members only; their order
gives the places (:attr:`GlobalRing.agents_list`, which name spools and subjects): the members
of the start sorted, then each machine that joined later appended (``engine/machines.py``), so
no place changes. A machine joining takes about 1/(N+1) of the hosts and moves no
host between the machines already there. A machine that left (``live``: the machines still
there) keeps its places in :attr:`GlobalRing.agents_list`, so every spool and subject named
by a place keeps its name, but none of the ring's points: its hosts go to the live agents, each
to the one whose point follows, and no host of a live agent moves.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Sequence

import xxhash

VNODES = 128
NODE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # a NATS subject token and a KV key, as is

Member = tuple[str, int]  # (node name, its number of agents)
GlobalAgent = tuple[str, int]  # (node name, local agent index)


class HashRing:
    """Agents numbered 0..n-1, each with ``VNODES`` points keyed by its label; only the agents in
    ``alive`` (all by default) have points, so only they own hosts."""

    def __init__(self, agents: int, labels: Sequence[str] | None = None, alive: Collection[int] | None = None) -> None:
        if agents < 1:
            raise ValueError(f"a crawl has at least one agent, got {agents}")
        self.agents = agents
        names = labels if labels is not None else [str(a) for a in range(agents)]
        owners = sorted(set(range(agents) if alive is None else alive))
        if not owners:
            raise ValueError("no live agent to own the hosts")
        points = sorted(
            (xxhash.xxh3_64_intdigest(f"{names[agent]}/{replica}".encode()), agent)
            for agent in owners
            for replica in range(VNODES)
        )
        self._points = [p for p, _ in points]
        self._owners = [a for _, a in points]
        self._only = owners[0] if len(owners) == 1 else None

    def owner(self, host: str) -> int:
        """The agent that owns ``host`` (a lower-case host name, without port)."""
        if self._only is not None:
            return self._only
        i = bisect.bisect(self._points, xxhash.xxh3_64_intdigest(host.encode()))
        return self._owners[i % len(self._owners)]


class GlobalRing(HashRing):
    """The agents of every machine of a crawl; :meth:`owner` gives an index into :attr:`agents_list`,
    always an agent of a ``live`` machine (every member by default)."""

    def __init__(self, members: Sequence[Member], live: Collection[str] | None = None) -> None:
        nodes = [node for node, _ in members]
        if len(set(nodes)) != len(nodes):
            raise ValueError(f"a node name appears twice among {nodes}")
        for node, agents in members:
            if not NODE_NAME.match(node) or agents < 1:
                raise ValueError(f"bad member {node!r} with {agents} agents")
        self.members = list(members)  # in join order: a machine joining later takes the places after the others'
        self.agents_list: list[GlobalAgent] = [(node, i) for node, agents in self.members for i in range(agents)]
        self.live: tuple[str, ...] = tuple(sorted(set(nodes if live is None else live)))
        if not set(self.live) <= set(nodes):
            raise ValueError(f"live machines {self.live} not all among the members {nodes}")
        super().__init__(len(self.agents_list), [f"{node}/{i}" for node, i in self.agents_list],
                         [g for g, (node, _) in enumerate(self.agents_list) if node in self.live])

    def index(self, agent: GlobalAgent) -> int:
        return self.agents_list.index(agent)
