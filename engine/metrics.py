"""Prometheus metrics of a running crawl, rendered from its status dict.

One source of truth (STYLE.md §3.7): an agent describes itself as an
:class:`~engine.status.AgentStatus` (``Agent.status()``); ``GET /status`` returns its dict
form, ``GET /metrics`` renders that here, the progress display (``engine/progress.py``) draws
it. With several agent processes the parent adds the agents up (``AgentStatus.add_up``) and
renders the sum once, so every value read here is a number, or a dict of numbers, that adds
up across agents:

* ``stats``: ``engine.stats.Counters.as_dict()`` — counters (pages, bytes, ``statuses`` and
  ``errors`` by label, robots, todo waits, ...); every numeric field becomes
  ``crawl_<name>_total``;
* ``cpu_seconds`` (a counter) and the gauges of :data:`GAUGES` (front, todo, workbench bytes,
  sieve, DNS cache, ...), at the top level;
* ``histograms``: name → :meth:`Histogram.as_dict`, counts per bucket that add up bucket by
  bucket; ``paused``: true while paused (a bool, not added: the parent sets its own);
* ``policy``: the crawl policy's labelled counters (``CrawlPolicy.counters()``, name → label →
  count), each exported as ``crawl_policy_<name>_total`` with one label: ``cluster`` for a
  counter whose name starts with ``cluster_`` (per-cluster counts of the clustergraph policy),
  ``key`` for any other.

:class:`~engine.histogram.Histogram` (``engine/histogram.py``) is what the fetch loop observes
into (fetch latency; the todo filler's politeness waits): a bisect and two additions, no lock and
no label lookup, several times cheaper than prometheus-client's own ``Histogram.observe``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.registry import CollectorRegistry

from engine.histogram import LATENCY_BUCKETS, WAIT_BUCKETS

__all__ = ["CONTENT_TYPE", "GAUGES", "HISTOGRAMS", "Exporter"]

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4

# counters of ``stats`` → (metric name after crawl_, help); fields not listed are exported under their own name
_COUNTERS = {
    "pages": ("pages", "Responses to page requests (robots.txt excluded), any status."),
    "robots": ("robots_responses", "robots.txt responses."),
    "bytes": ("body_bytes", "Response body bytes received, as transferred."),
    "stored": ("stored_records", "Response records written to the WARC files."),
    "robots_disallowed": ("robots_disallowed_urls", "URLs dropped because robots.txt disallows them."),
    "links": ("links", "Links extracted from pages."),
    "redirects": ("redirects", "Redirects whose targets were discovered."),
    "refused_addresses": ("refused_addresses", "Hosts whose address network.allow_networks refuses."),
    "todo_waits": ("todo_waits", "Times a fetcher found the todo ring empty."),
    "todo_wait_seconds": ("todo_wait_seconds", "Fetcher-seconds spent waiting on an empty todo ring."),
}
# labelled counters of ``stats`` → (metric name, label, help)
_LABELLED = {
    "statuses": ("responses", "status", "Page responses by HTTP status."),
    "errors": ("errors", "kind", "Fetch and DNS errors by kind."),
    "truncated": ("truncated_bodies", "kind", "Bodies cut at network.max_body_bytes: length (while received), "
                  "decoded (once content-coding was removed)."),
}
GAUGES = {
    "front": "IPs with work on the workbench or being fetched (BUbiNG's front).",
    "required_front": "The front the distributor aims for.",
    "todo": "Visit states ready to fetch, waiting for a fetcher.",
    "in_flight": "Fetches in progress.",
    "hosts": "Hosts (visit states) attached to an IP.",
    "ips": "IPs (workbench entries) known.",
    "workbench_urls": "URLs held in memory on the workbench.",
    "workbench_bytes": "Bytes of the URLs held on the workbench.",
    "disk_urls": "URLs spilled to disk by the workbench virtualizer.",
    "sieve_known": "URL fingerprints the sieve knows.",
    "sieve_ready": "URLs out of the sieve, not yet distributed.",
    "sieve_pending": "URLs in the sieve's bucket, awaiting a flush.",
    "dns_cache": "Entries in the DNS cache.",
    "rss_bytes": "Resident memory of the crawling processes.",
}
HISTOGRAMS = {
    "fetch_latency_seconds": ("Seconds from the start of a fetch to its last byte.", LATENCY_BUCKETS),
    "politeness_wait_seconds": ("Seconds the todo filler slept because no host and IP were polite yet.",
                                WAIT_BUCKETS),
}


_METRIC_NAME = re.compile(r"[^a-zA-Z0-9_]")  # a policy names its counters freely; a metric name may not


def _policy_families(counters: Mapping[str, Mapping[str, int]]) -> Iterator[Metric]:
    for name, table in sorted(counters.items()):
        label = "cluster" if name.startswith("cluster_") else "key"
        family = CounterMetricFamily(f"crawl_policy_{_METRIC_NAME.sub('_', name)}",
                                     f"The crawl policy's counter {name!r}, by {label}.", labels=[label])
        for label_value, count in sorted(table.items()):
            family.add_metric([str(label_value)], count)
        yield family


def _families(status: Mapping[str, Any]) -> Iterator[Metric]:
    for key, value in status["stats"].items():
        if key in _LABELLED:
            name, label, text = _LABELLED[key]
            family = CounterMetricFamily(f"crawl_{name}", text, labels=[label])
            for label_value, count in sorted(value.items()):
                family.add_metric([str(label_value)], count)
            yield family
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and key != "started":
            name, text = _COUNTERS.get(key, (key, f"Counters.{key} (engine/stats.py)."))
            yield CounterMetricFamily(f"crawl_{name}", text, value=value)
    if "cpu_seconds" in status:
        yield CounterMetricFamily("crawl_cpu_seconds", "CPU seconds of the crawling processes.",
                                  value=status["cpu_seconds"])
    for key, text in GAUGES.items():
        if key in status:
            yield GaugeMetricFamily(f"crawl_{key}", text, value=status[key])
    yield GaugeMetricFamily("crawl_paused", "1 while the crawl is paused.", value=int(bool(status.get("paused"))))
    for name, h in status.get("histograms", {}).items():
        cumulative, buckets = 0, []
        for bound, count in sorted(h["counts"].items(), key=lambda item: float(item[0])):
            cumulative += count
            buckets.append((bound, cumulative))
        text = HISTOGRAMS[name][0] if name in HISTOGRAMS else f"{name} (see GET /status)."
        yield HistogramMetricFamily(f"crawl_{name}", text, buckets=buckets, sum_value=h["sum"])
    yield from _policy_families(status.get("policy", {}))


class _StatusCollector:
    """A prometheus-client collector reading its metrics off a status dict at each scrape."""

    def __init__(self, source: Callable[[], Mapping[str, Any]]) -> None:
        self.source = source

    def collect(self) -> Iterator[Metric]:
        return _families(self.source())


class Exporter:
    """The Prometheus text of a status source, through a registry of its own (not the global one)."""

    def __init__(self, source: Callable[[], Mapping[str, Any]]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_StatusCollector(source))

    def render(self) -> bytes:
        return generate_latest(self.registry)
