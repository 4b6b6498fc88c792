"""What an agent says about itself, typed: built by the agent, read by everyone who shows or steers the crawl.

An agent builds one :class:`AgentStatus` twice a second (``Agent.status``) and sends its
dict form (:meth:`AgentStatus.as_dict`) to the supervisor; the supervisor reads it back
(:meth:`AgentStatus.from_dict`), checks the end of the crawl and samples its timeline from
the fields, and adds the agents up (:meth:`AgentStatus.add_up`) for the progress display,
``GET /status`` and ``GET /metrics`` (``engine/metrics.py`` renders the dict form, whose
numbers all add up across agents). A one-process crawl shows its only agent's status.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TOP_HOSTS = 10  # hosts an agent lists in ``top_hosts``, and the dashboard shows over all agents
# the fields that describe one agent, not a quantity: the sum of several agents leaves them at their default
_IDENTITY = frozenset({"agent", "pid", "command_seq", "paused", "idle", "links_out", "links_in", "top_hosts"})


@dataclass(frozen=True, slots=True)
class AgentStatus:
    agent: int = 0
    pid: int = 0
    paused: bool = False
    command_seq: int = 0  # the last control command applied (the supervisor waits for it)
    idle: bool = False  # nothing to do here (others may still send links)
    stats: Mapping[str, Any] = field(default_factory=dict)  # engine.stats.Counters.as_dict()
    cpu_seconds: float = 0.0
    rss_bytes: int = 0
    in_flight: int = 0
    todo: int = 0
    hosts: int = 0
    ips: int = 0
    required_front: int = 0
    front: int = 0
    workbench_urls: int = 0
    workbench_bytes: int = 0
    disk_urls: int = 0
    sieve_known: int = 0
    sieve_ready: int = 0
    sieve_pending: int = 0
    dns_cache: int = 0
    histograms: Mapping[str, Any] = field(default_factory=dict)  # name -> engine.histogram.Histogram.as_dict()
    policy: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # the crawl policy's counters()
    links_out: Mapping[str, Sequence[int]] = field(default_factory=dict)  # receiver -> spool end, as written
    links_in: Mapping[str, Sequence[int]] = field(default_factory=dict)  # sender -> read position
    # (host, pages fetched, URLs waiting) of the hosts with the most pages, only while watched (engine/steering.py)
    top_hosts: Sequence[Sequence[Any]] = ()

    @property
    def pages(self) -> int:
        return int(self.stats.get("pages", 0))

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentStatus:
        """The status an agent sent; keys this version does not know are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    @classmethod
    def add_up(cls, parts: Sequence[AgentStatus], **identity: Any) -> AgentStatus:
        """Several agents as one: every quantity added (nested tables key by key), ``identity`` set as given."""
        total = add_up([{k: v for k, v in p.as_dict().items() if k not in _IDENTITY} for p in parts])
        return cls.from_dict({**total, **identity})


def add_up(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Numbers added key by key, nested tables too (counters of several agents); rates take the maximum."""
    out: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, Mapping):
                out[key] = add_up([out.get(key, {}), value])
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                # a rate (the dedup filter's error rate) is the same kind of figure per agent: the worst one
                out[key] = max(out.get(key, 0), value) if key.endswith("_rate") else out.get(key, 0) + value
    return out
