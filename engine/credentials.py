"""API credentials as a politeness resource beside host and IP (``[[credentials]]``, issue 15).

A credential (``engine.config.CredentialConfig``) is a bearer token with a budget of calls per
hour for some hosts. Each has a token bucket: ``calls_per_hour / 3600`` calls a second flow
in, at most ``burst`` wait. A fetch of one of its hosts (robots.txt aside) takes a call from
the first of the host's credentials that has one and carries ``Authorization: Bearer TOKEN``;
when none has, the fetcher gives the host back to the workbench with its next fetch set to
the moment the first call comes in, so the host waits in the workbench's order of deadlines
and nothing spins. A 429 holds the credential (and the host) until its Retry-After has
passed (``hold``).

With several agents, each credential belongs to exactly one agent, so its budget is spent by
one process and the limit holds across processes without shared state: credentials that
share a host form a group (connected through their hosts), the groups go to the agents in
turn in the order of the configuration, and the hosts of a group are owned by its agent
(:func:`pinned_hosts`, which ``engine/routing.py`` consults before the hash ring).

A group whose credentials say ``spread = true`` is dealt instead: its j-th credential goes to
agent ``j mod agents``, so each agent has its own budget for the group's hosts (a token's limit
still holds, its calls all made by one process), and the hosts are not pinned: the crawl
policy says which agent fetches each URL (``CrawlPolicy.owner``; ``--policy freshness`` splits
its users), the hash ring the others. :func:`check_spread` refuses a spread group with fewer
credentials than agents (an agent without one would call the API with no token) or whose
members disagree.

Reads no clock: ``now`` is monotonic seconds passed in. The fetchers own this object.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.config import ConfigError, CredentialConfig


# Refilling up to ``ready_at`` can land a rounding error short of a whole call (0.9999999999999999);
# a host that came back at ``ready_at`` must then get its call, not be sent away for a nanosecond.
_ROUNDING = 1e-9


@dataclass(slots=True)
class Credential:
    """One credential's token bucket. Invariant: ``0 <= tokens <= burst``; ``held_until``, when
    later than ``now``, bars every call (a 429's Retry-After)."""

    name: str
    token: str
    rate: float  # calls per second
    burst: int
    tokens: float = field(init=False)
    stamp: float = float("-inf")  # when ``tokens`` was last brought up to date
    held_until: float = float("-inf")
    calls: int = 0
    refused: int = 0  # 429 answers

    def __post_init__(self) -> None:
        self.tokens = float(self.burst)

    @property
    def header(self) -> tuple[str, str]:
        return ("Authorization", f"Bearer {self.token}")

    def _refill(self, now: float) -> None:
        if now > self.stamp:
            self.tokens = min(float(self.burst), self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now

    def ready_at(self, now: float) -> float:
        """The first instant, ``now`` or later, at which a call may be taken."""
        self._refill(now)
        at = now if self.tokens >= 1.0 - _ROUNDING else now + (1.0 - self.tokens) / self.rate
        return max(at, self.held_until)

    def take(self, now: float) -> bool:
        """Spend a call now if one is there."""
        if self.ready_at(now) > now:
            return False
        self.tokens = max(0.0, self.tokens - 1.0)
        self.calls += 1
        return True

    def hold(self, until: float) -> None:
        """Make no call before ``until`` (a 429's Retry-After)."""
        self.refused += 1
        self.held_until = max(self.held_until, until)


class Credentials:
    """The credentials this agent holds, by host. Empty (falsy) when the crawl configures none."""

    def __init__(self, configs: Sequence[CredentialConfig], index: int = 0, agents: int = 1) -> None:
        groups = credential_groups(configs)
        self.by_host: dict[str, list[Credential]] = {}
        for number, group in enumerate(groups):
            if group[0].spread:
                group = group[index::agents]  # dealt, one to each agent in turn
            elif number % agents != index:
                continue
            for config in group:
                credential = Credential(config.name, config.token, config.calls_per_hour / 3600.0, config.burst)
                for host in config.hosts:
                    self.by_host.setdefault(host, []).append(credential)

    def __bool__(self) -> bool:
        return bool(self.by_host)

    def take(self, host: str, now: float) -> tuple[Credential | None, float]:
        """For a fetch of ``host`` now: (the credential that gave a call, now), or (None, when to come back).

        A host no credential is for gets (None, now): it is fetched without one."""
        credentials = self.by_host.get(host)
        if credentials is None:
            return None, now
        for credential in credentials:
            if credential.take(now):
                return credential, now
        return None, min(credential.ready_at(now) for credential in credentials)

    def statistics(self) -> dict[str, dict[str, int]]:
        """Calls made and 429s met, per credential name."""
        seen = {c.name: c for credentials in self.by_host.values() for c in credentials}
        return {name: {"calls": c.calls, "refused": c.refused} for name, c in sorted(seen.items())}


def credential_groups(configs: Sequence[CredentialConfig]) -> list[list[CredentialConfig]]:
    """The credentials in groups connected through shared hosts, in the order of their first member."""
    group_of_host: dict[str, int] = {}
    parent = list(range(len(configs)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, config in enumerate(configs):
        for host in config.hosts:
            j = group_of_host.setdefault(host, i)
            parent[root(i)] = root(j)
    groups: dict[int, list[CredentialConfig]] = {}
    for i, config in enumerate(configs):
        groups.setdefault(root(i), []).append(config)
    return sorted(groups.values(), key=lambda group: configs.index(group[0]))


def pinned_hosts(configs: Sequence[CredentialConfig], agents: int) -> dict[str, int]:
    """The agent that owns each credential's host: its group's (see the module docstring); a spread
    group's hosts are not pinned."""
    return {host: number % agents for number, group in enumerate(credential_groups(configs))
            if not group[0].spread for config in group for host in config.hosts}


def check_spread(configs: Sequence[CredentialConfig], agents: int) -> None:
    """ConfigError unless every spread group agrees on ``spread`` and, with several agents, has a
    credential for each."""
    for group in credential_groups(configs):
        if len({config.spread for config in group}) > 1:
            i = next(configs.index(c) for c in group if c.spread != group[0].spread)
            raise ConfigError(f"credentials[{i}].spread", f"credentials sharing a host must all spread or none: "
                                                          f"{', '.join(repr(c.name) for c in group)} share one")
        if group[0].spread and agents > 1 and len(group) < agents:
            raise ConfigError(f"credentials[{configs.index(group[0])}].spread",
                              f"{len(group)} credential(s) for {', '.join(group[0].hosts)} cannot be dealt to "
                              f"{agents} agents: give one per agent")
