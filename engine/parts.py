"""How an agent's frontier and archive are built from the configuration, and the figures they report.

The one place that turns crawl.toml's ``[frontier]``, ``[politeness]``, ``[scope]``,
``[policy]``, ``[quality]`` and ``[store]`` into the objects of ``frontier/`` and ``store/``, so the agent
(``engine/agent.py``) only wires them.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from engine.config import Config, ConfigError, describe
from engine.ip_table import SharedIpTable
from engine.histogram import Histogram
from frontier.filters import PhaseFilters
from frontier.frontier import Frontier
from frontier.policy import build
from frontier.quality import QualityFilter
from frontier.scope import Scope
from frontier.settings import FrontierSettings, FrontierStatistics
from store.archive import Archive, config_digest

SOFTWARE = "crawl/0.1.0 (Python, BUbiNG-style)"
"""Who wrote the archive: the ``software`` of each WARC file's warcinfo record, and of a WACZ's data package."""


def build_frontier(config: Config, directory: Path, seeds: list[str], filters: PhaseFilters) -> Frontier:
    """The frontier in ``directory`` (resumed from its checkpoint, if any), with the crawl policy of ``[policy]``."""
    f, scope = config.frontier, config.scope
    settings = FrontierSettings(
        host_delay=config.politeness.host_delay,
        ip_delay=config.politeness.ip_delay,
        workbench_bytes=f.workbench_bytes,
        sieve_bucket_bytes=f.sieve_bucket_bytes,
        url_cache_bytes=f.url_cache_bytes,
        virtualizer_segment_bytes=f.virtualizer_segment_bytes,
        max_urls_per_host=scope.max_urls_per_host,
        max_urls_per_shape=scope.max_urls_per_shape,
        required_front=f.required_front,
        front_step=f.front_step,
        sieve_flush_interval=f.sieve_flush_interval,
        max_fetch_retries=f.max_fetch_retries,
    )
    p = config.policy
    return Frontier(
        directory,
        settings,
        policy=build(p.name, Path(p.model) if p.model else None, p.options),
        scope=Scope(scope.mode, seeds, max_url_length=scope.max_url_length, max_path_depth=scope.max_path_depth,
                    max_repeated_segments=scope.max_repeated_segments),
        schedule=filters.schedule.accepts if filters.schedule else None,
        quality=build_quality(config),
    )


def build_quality(config: Config) -> QualityFilter | None:
    """The host quality filter of ``[quality]``, or None when it is off (no model)."""
    q = config.quality
    if not q.model:
        return None
    from frontier.quality_model import Model  # here: numpy costs every agent ~0.1 CPU-s a start, and only a model needs it

    try:
        model = Model.load(Path(q.model))
    except ValueError as e:
        raise ConfigError("quality.model", str(e)) from None
    return QualityFilter(model, threshold=q.threshold, pages=q.pages or model.pages, read=model.read,
                         action=q.action)


def share_hosts_per_ip(frontier: Frontier, table: SharedIpTable) -> None:
    """With several agents, the quality filter's hosts per IP are those of every agent's workbench, counted
    in the machine's IP table, as ``crawl learn quality`` counts a WARC file's hosts per IP."""
    if frontier.quality is not None:
        frontier.workbench.on_hosts = table.add_host
        frontier.quality.hosts_on = table.hosts


def warc_prefix(config: Config, index: int) -> str:
    """Agent ``index``'s WARC names: ``PREFIX-aN``, or ``PREFIX-NODE-aN`` on a machine of a cluster, so
    the archives of all machines make one collection without a clash."""
    node = f"-{config.cluster.node}" if config.cluster.url else ""
    return f"{config.store.prefix}{node}-a{index}"


def build_archive(config: Config, directory: Path, prefix: str) -> Archive:
    """The WARC archive ``directory/PREFIX-*``; its warcinfo record says who crawled, how."""
    return Archive(
        directory,
        prefix,
        config.store,
        info={
            "software": SOFTWARE,
            "format": "WARC File Format 1.1",
            "hostname": socket.gethostname(),
            "http-header-user-agent": config.engine.user_agent,
            "robots": "obey",
            "config-digest": config_digest(describe(config)),
        },
    )


def histograms(latency: Histogram, politeness_wait: Histogram) -> dict[str, Any]:
    """The agent's histograms by name, per bucket: for ``GET /metrics`` and for stats.json, where the
    supervisor adds them up bucket by bucket and ``crawl report`` draws the politeness waits."""
    return {"fetch_latency_seconds": latency.as_dict(), "politeness_wait_seconds": politeness_wait.as_dict()}


def frontier_figures(fs: FrontierStatistics) -> dict[str, int]:
    """The frontier's sizes, as status lines and stats.json report them."""
    return {
        "required_front": fs.distributor.required_front,
        "front": fs.distributor.front,
        "workbench_urls": fs.workbench.urls,
        "workbench_bytes": fs.workbench.bytes,
        "disk_urls": fs.disk_urls,
        "sieve_known": fs.sieve_known,
        "sieve_ready": fs.sieve_ready,
        "sieve_pending": fs.sieve_pending,
    }
