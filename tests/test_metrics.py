"""Prometheus metrics from status dicts (engine/metrics.py): formats, histograms, sums over agents."""

from __future__ import annotations

from typing import Any

import prometheus_client
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from engine.histogram import LATENCY_BUCKETS, WAIT_BUCKETS, Histogram, bucket_name
from engine.metrics import GAUGES, Exporter
from engine.stats import Counters
from engine.status import add_up


def agent(pages: int, statuses: dict[int, int], errors: dict[str, int], latencies: list[float]) -> dict[str, Any]:
    counters = Counters(pages=pages, bytes=pages * 1000, robots=3)
    counters.statuses.update(statuses)
    counters.errors.update(errors)
    latency = Histogram(LATENCY_BUCKETS)
    for value in latencies:
        latency.observe(value)
    return {"agent": 0, "idle": False, "stats": counters.as_dict(), "cpu_seconds": 2.5, "front": 4, "todo": 1,
            "dns_cache": 9, "paused": False, "histograms": {"fetch_latency_seconds": latency.as_dict()},
            "policy": {"cluster_pages": {"*.s.test/$.html": pages, "(unmapped)": 1}, "links_dropped": {"cg_no_edge": 2}}}


def samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


@given(st.floats(min_value=1e-9, max_value=999_999.0, allow_nan=False)
       | st.sampled_from([*LATENCY_BUCKETS, *WAIT_BUCKETS, float("inf")]))
def test_a_bucket_is_named_as_prometheus_names_it(bound: float) -> None:
    """The agents name buckets without prometheus-client; the supervisor adds them up by name and renders the sum."""
    assert bucket_name(bound) == prometheus_client.utils.floatToGoString(bound)  # type: ignore[no-untyped-call]


def test_histogram_buckets_are_upper_bounds_inclusive() -> None:
    h = Histogram((0.1, 1.0))
    for value in (0.05, 0.1, 0.5, 1.0, 7.0):
        h.observe(value)
    assert h.as_dict() == {"counts": {"0.1": 2, "1.0": 2, "+Inf": 1}, "sum": 8.65}


def test_exposition_parses_and_carries_every_figure() -> None:
    status = agent(10, {200: 8, 404: 2}, {"timeout": 1}, [0.02, 0.3, 0.3, 90.0])
    found = samples(Exporter(lambda: status).render())
    assert found[("crawl_pages_total", ())] == 10
    assert found[("crawl_body_bytes_total", ())] == 10_000
    assert found[("crawl_robots_responses_total", ())] == 3
    assert found[("crawl_responses_total", (("status", "200"),))] == 8
    assert found[("crawl_responses_total", (("status", "404"),))] == 2
    assert found[("crawl_errors_total", (("kind", "timeout"),))] == 1
    assert found[("crawl_cpu_seconds_total", ())] == 2.5
    assert found[("crawl_front", ())] == 4 and found[("crawl_dns_cache", ())] == 9
    assert found[("crawl_paused", ())] == 0
    assert found[("crawl_fetch_latency_seconds_bucket", (("le", "0.025"),))] == 1
    assert found[("crawl_fetch_latency_seconds_bucket", (("le", "0.5"),))] == 3
    assert found[("crawl_fetch_latency_seconds_bucket", (("le", "60.0"),))] == 3
    assert found[("crawl_fetch_latency_seconds_bucket", (("le", "+Inf"),))] == 4
    assert found[("crawl_fetch_latency_seconds_count", ())] == 4
    assert abs(found[("crawl_fetch_latency_seconds_sum", ())] - 90.62) < 1e-9
    # the agent's own bookkeeping is not exported
    assert not any(name.startswith(("crawl_agent", "crawl_idle", "crawl_started")) for name, _ in found)


def test_policy_counters_are_labelled_by_cluster_or_by_key() -> None:
    status = agent(10, {}, {}, [])
    text = Exporter(lambda: status).render()
    found = samples(text)
    assert found[("crawl_policy_cluster_pages_total", (("cluster", "*.s.test/$.html"),))] == 10
    assert found[("crawl_policy_cluster_pages_total", (("cluster", "(unmapped)"),))] == 1
    assert found[("crawl_policy_links_dropped_total", (("key", "cg_no_edge"),))] == 2
    assert b'crawl_policy_cluster_pages_total{cluster="*.s.test/$.html"} 10.0' in text
    assert not any(name.startswith("crawl_policy") for name, _ in samples(Exporter(lambda: {"stats": {}}).render()))


def test_gauges_missing_from_a_status_are_left_out() -> None:
    found = samples(Exporter(lambda: {"stats": Counters().as_dict()}).render())
    assert not any(name == f"crawl_{gauge}" for gauge in GAUGES for name, _ in found)
    assert found[("crawl_pages_total", ())] == 0


@given(st.lists(st.tuples(st.integers(0, 10**6), st.lists(st.floats(0, 100), max_size=20)), min_size=1, max_size=4))
def test_the_sum_of_agents_renders_as_the_sum_of_their_metrics(agents: list[tuple[int, list[float]]]) -> None:
    statuses = [agent(pages, {200: pages}, {"dns": 1}, latencies) for pages, latencies in agents]
    total = samples(Exporter(lambda: add_up(statuses)).render())  # what the parent does with its agents' statuses
    parts = [samples(Exporter(lambda s=s: s).render()) for s in statuses]  # type: ignore[misc]
    for key in total:
        assert abs(total[key] - sum(part[key] for part in parts)) <= 1e-6 * max(1.0, total[key]), key


def test_each_exporter_has_its_own_registry() -> None:
    Exporter(lambda: agent(1, {}, {}, [])).render()
    assert "crawl_pages" not in {family.name for family in prometheus_client.REGISTRY.collect()}
