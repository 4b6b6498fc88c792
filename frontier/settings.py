"""What the frontier is given and what it reports: :class:`FrontierSettings` (sizes and delays, from
crawl.toml through ``engine/parts.py``) and :class:`FrontierStatistics` (the figures of
``Frontier.statistics``, read into each agent's stats.json, ``/status`` and ``/metrics``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from frontier.distributor import DistributorStatistics
from frontier.revisits import MEMORY_LIMIT
from frontier.workbench import WorkbenchStatistics


@dataclass(frozen=True, slots=True)
class FrontierSettings:
    """Sizes and delays; ``engine/parts.py`` fills these from crawl.toml's [frontier], [politeness] and [scope]."""

    host_delay: float = 4.0
    ip_delay: float = 0.5
    workbench_bytes: int = 512 << 20
    sieve_bucket_bytes: int = 16 << 20
    url_cache_bytes: int = 64 << 20
    virtualizer_segment_bytes: int = 64 << 20
    max_urls_per_host: int = 100_000
    max_urls_per_shape: int = 0  # new URLs per host differing only in digits (frontier/shapes.py); 0 = no limit
    required_front: int = 1000
    front_step: int = 1000
    sieve_flush_interval: float = 1.0
    max_fetch_retries: int = 5
    revisits_in_memory: int = MEMORY_LIMIT  # pending revisits beyond this many wait on disk
    fsync: bool = True  # checkpoints survive a power loss, not only a crash


@dataclass(frozen=True, slots=True)
class FrontierStatistics:
    workbench: WorkbenchStatistics
    distributor: DistributorStatistics
    sieve_known: int
    sieve_pending: int
    sieve_ready: int
    disk_urls: int
    resolving: int
    revisits: int
    discovered: int
    cache_hits: int
    dup_lookups: int = 0  # URL-cache lookups: one per link that reached the duplicate check
    drops: dict[str, int] = field(default_factory=dict)
    policy: dict[str, dict[str, int]] = field(default_factory=dict)  # the policy's counters(), copied
    quality: dict[str, int] = field(default_factory=dict)  # the quality filter's counts; empty when it is off
