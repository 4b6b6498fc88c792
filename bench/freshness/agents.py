"""Several agents on one simulated API, each with a credential of its own (digest §4.3–4.5, E-6, E-7).

Role: the multi-agent driver of the simulator (``simulator.py`` is the one-agent one). Every agent
has ``per_hour`` calls in each clock hour (its own token); what any call archives is archived for
all (one archive). Two architectures, as :mod:`frontier.freshness.architectures` defines them:

- **distributed**: each agent owns users from the position split (the live crawl's
  :func:`~frontier.freshness.sharing.position_split`, Hash users at c = C) and
  plans them with a planner of its own; the granularity of balance is one user;
- **centralized**: one planner plans every user with the calls of all credentials, and each crawl
  goes to the client with the shortest to-do list, the calls it was handed in the current hour
  window (a :class:`~frontier.freshness.architectures.CentralizedDispatcher` whose lists empty
  at each window's end: the client has made those calls). With equal limits the shortest list
  is the one with the most calls left, so a crawl handed out can always be made; the
  granularity is one crawl.

Agents share one virtual clock and act in the order of their due times, so the archive sees the
calls in time order.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bench.freshness.api import EmulatedApi
from bench.freshness.simulator import Limits, Run
from bench.freshness.trace import Trace
from frontier.freshness.architectures import CentralizedDispatcher
from frontier.freshness.planner import Planner
from frontier.freshness.routing import RoutingParams
from frontier.freshness.sharing import position_split

ARCHITECTURES = ("distributed", "centralized")
HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class AgentsRun:
    """A multi-agent run: the shared API (credential i is agent i's) and the owner of each user
    (distributed; empty when centralized)."""

    run: Run
    owners: Mapping[str, int]
    agents: int

    def calls_by_agent(self) -> list[int]:
        calls = [0] * self.agents
        for agent in self.run.api.credential_of_call:
            calls[agent] += 1
        return calls

    def messages_by_agent(self) -> list[int]:
        """The posts each agent's calls archived first."""
        messages = [0] * self.agents
        for agent, (_, _, _, new) in zip(self.run.api.credential_of_call, self.run.api.calls, strict=True):
            messages[agent] += new
        return messages


def simulate_agents(factory: Callable[[], Planner], trace: Trace, start: float, end: float, limits: Limits,
                    agents: int, architecture: str, seed: int = 0) -> AgentsRun:
    """``agents`` credentials over ``trace`` in [start, end), planned by ``factory``'s planners."""
    if architecture not in ARCHITECTURES:
        raise ValueError(f"architecture: must be one of {', '.join(ARCHITECTURES)}, not {architecture!r}")
    if agents < 1 or not end > start:
        raise ValueError(f"agents must be >= 1 ({agents}) and end ({end}) after start ({start})")
    api = EmulatedApi(trace, start, limits.per_crawl, limits.per_hour, agents)
    history = trace.history(start)
    if architecture == "centralized":
        planner = factory()
        planner.begin(trace.users, history, start, end)
        _centralized(planner, api, agents, start, end, seed)
        return AgentsRun(Run(api, start, end), {}, agents)
    owners = position_split(trace.users, history, agents, RoutingParams(), threshold=limits.per_crawl)
    planners = [factory() for _ in range(agents)]
    for a, planner in enumerate(planners):
        mine = [u for u in trace.users if owners[u] == a]
        planner.begin(mine, {u: history[u] for u in mine}, start, end)
    _distributed(planners, api, start, end)
    return AgentsRun(Run(api, start, end), owners, agents)


def _distributed(planners: list[Planner], api: EmulatedApi, start: float, end: float) -> None:
    hold = [start] * len(planners)  # an agent out of calls waits for its next window

    def ready(a: int) -> tuple[float, int] | None:
        due = planners[a].next_at()
        return None if due is None else (max(due, hold[a]), a)

    heap = [r for a in range(len(planners)) if (r := ready(a)) is not None]
    heapq.heapify(heap)
    clock = start
    while heap:
        at, a = heapq.heappop(heap)
        clock = max(clock, at)
        if clock >= end:
            break
        left = api.calls_left(clock, a)
        if left == 0:
            hold[a] = start + (api.window(clock) + 1) * HOUR
        else:
            for user in _taken(planners[a], clock, left):
                _call(planners[a], api, clock, user, a)
        if (r := ready(a)) is not None:
            heapq.heappush(heap, r)


def _centralized(planner: Planner, api: EmulatedApi, agents: int, start: float, end: float, seed: int) -> None:
    dispatcher = CentralizedDispatcher(agents, seed)
    window, clock = 0, start
    while (due := planner.next_at()) is not None:
        clock = max(clock, due)
        if api.window(clock) != window:  # the clients made the calls they were handed
            window = api.window(clock)
            for client, queued in enumerate(dispatcher.queues):
                for _ in range(queued):
                    dispatcher.done(client)
        left = sum(api.calls_left(clock, c) for c in range(agents))
        if left == 0:
            clock = start + (window + 1) * HOUR
        if clock >= end:
            break
        if left == 0:
            continue
        for user in _taken(planner, clock, left):
            _call(planner, api, clock, user, dispatcher.dispatch())


def _taken(planner: Planner, now: float, left: int) -> list[str]:
    """The users ``planner`` hands out at ``now``, held to the contract (some, at most ``left``)."""
    users = planner.take(now, left)
    if not users or len(users) > left:
        raise RuntimeError(f"{type(planner).__name__}.take({now}, {left}) returned {len(users)} users although a crawl was due")
    return users


def _call(planner: Planner, api: EmulatedApi, now: float, user: str, credential: int) -> None:
    response = api.timeline(user, now, credential)
    planner.crawled(user, now, response.new.tolist(), response.overflow)


def spread(values: Sequence[float]) -> float:
    """(max − min) ÷ mean: the workload gap of the digest's Tables 5–6 (0 for one agent)."""
    mean = sum(values) / len(values)
    return (max(values) - min(values)) / mean if mean else math.nan
