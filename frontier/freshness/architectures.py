"""The two ways of running the plan over several agents (digest §4.3–4.5), as pure state.

- :class:`CentralizedDispatcher` (Fig. 9): one server plans and sends each crawl, one at a time,
  to the client with the shortest to-do list, ties broken uniformly at random (seeded). The
  granularity is one crawl, so with equal service rates the lists never differ by more than one.
- :class:`DistributedOwnership` (Fig. 10): every agent owns its users and plans them itself; the
  only traffic is moving users. :meth:`~DistributedOwnership.rebalance` moves users away from an
  agent whose calls due exceed its quota to agents with quota to spare. Every user has exactly
  one owner at all times; the granularity is one user.
- :func:`initial_owners`: the position split: Poisson users RR over the global organ pipe,
  Hash users greedily to the least loaded agent by predicted calls.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

U = TypeVar("U", bound=Hashable)


class CentralizedDispatcher:
    """To-do list lengths of ``clients``; each task goes to a shortest one."""

    def __init__(self, clients: int, seed: int = 0) -> None:
        if clients < 1:
            raise ValueError(f"clients: must be 1 or more, not {clients!r}")
        self.queues = [0] * clients
        self._random = random.Random(seed)

    def __repr__(self) -> str:
        return f"<CentralizedDispatcher queues={self.queues}>"

    def dispatch(self) -> int:
        """The client the next crawl goes to (its list grows by one)."""
        shortest = min(self.queues)
        client = self._random.choice([c for c, n in enumerate(self.queues) if n == shortest])
        self.queues[client] += 1
        return client

    def done(self, client: int) -> None:
        """``client`` finished one crawl of its list."""
        if self.queues[client] == 0:
            raise ValueError(f"client {client} has nothing to do")
        self.queues[client] -= 1


@dataclass(frozen=True, slots=True)
class Move(Generic[U]):
    user: U
    source: int
    target: int


class DistributedOwnership(Generic[U]):
    """Which agent owns each user. Invariant: every user known has exactly one owner."""

    def __init__(self, owners: Mapping[U, int], agents: int) -> None:
        if any(not 0 <= a < agents for a in owners.values()):
            raise ValueError(f"owners: every owner must be an agent in 0..{agents - 1}")
        self.agents = agents
        self.owner: dict[U, int] = dict(owners)

    def users_of(self, agent: int) -> list[U]:
        return [u for u, a in self.owner.items() if a == agent]

    def rebalance(self, calls_due: Mapping[U, float], quota: Sequence[float]) -> list[Move[U]]:
        """Move users from agents whose calls due exceed their quota to agents with quota left.

        From an overloaded agent, the largest users that fit in a receiver's spare quota go first
        (fewest moves); a user fits nowhere stays. Returns the moves, already applied.
        """
        load = [0.0] * self.agents
        for user, agent in self.owner.items():
            load[agent] += calls_due.get(user, 0.0)
        moves: list[Move[U]] = []
        for source in range(self.agents):
            if load[source] <= quota[source]:
                continue
            mine = sorted(self.users_of(source), key=lambda u: -calls_due.get(u, 0.0))
            for user in mine:
                excess, need = load[source] - quota[source], calls_due.get(user, 0.0)
                if excess <= 0:
                    break
                if need <= 0:
                    continue
                spare = [(quota[a] - load[a], a) for a in range(self.agents) if a != source and quota[a] - load[a] >= need]
                if not spare:
                    continue
                target = max(spare)[1]
                self.owner[user] = target
                load[source] -= need
                load[target] += need
                moves.append(Move(user, source, target))
        return moves


def initial_owners(organ_pipe: Sequence[U], hash_calls: Mapping[U, float], agents: int) -> dict[U, int]:
    """Poisson users by position on the organ pipe (``j mod agents``); Hash users, largest first, to the
    agent with the fewest predicted calls so far, then the fewest Hash users (users with no history
    predict no calls, and must not all land on one agent)."""
    owners = {user: j % agents for j, user in enumerate(organ_pipe)}
    loads = [(0.0, 0, a) for a in range(agents)]
    for user in sorted(hash_calls, key=lambda u: -hash_calls[u]):
        load, users, agent = heapq.heappop(loads)
        owners[user] = agent
        heapq.heappush(loads, (load + hash_calls[user], users + 1, agent))
    return owners
