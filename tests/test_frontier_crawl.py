"""The frontier at work on the in-vitro web: spilling to disk keeps exactly-once and per-host BFS order.

Each host is an island (no links between hosts), so a host's pages are fetched one at a time
and the order in which the crawler discovers its URLs can be replayed exactly from the server
log: the fetch order of every host must equal that discovery order (BUbiNG's per-host
breadth-first visit), with 1000 fetchers and a workbench of a few hundred bytes that sends
nearly every URL through the virtualizer.
"""

from __future__ import annotations

from pathlib import Path

from bench.invitro import WebParams
from frontier.urls import canonicalize
from tests.invitro_harness import (
    WebThread, allowed, by_key, gaps, page_links, page_requests, robots_for, run_crawl, url_of,
)

HOST_DELAY = 0.03
IP_DELAY = 0.01
ISLANDS = WebParams(hosts=16, hosts_per_ip=2, mean_pages=30, max_pages=80, mean_links=15, external_share=0.0,
                    robots_crawl_delay_share=0.0, page_bytes=4000)


def discovery_order(model, host: str, fetched_in_order: list[str]) -> list[str]:  # type: ignore[no-untyped-def]
    """Replay the crawler's discovery for one island host, given the order its pages were fetched."""
    rules = robots_for(model, host)
    order: list[str] = []
    seen: set[str] = set()

    def offer(url: str | None) -> None:
        if url and url not in seen:
            seen.add(url)
            order.append(url)

    offer(canonicalize(f"http://{host}:{model.port}/"))
    for url in fetched_in_order:
        target = url.split(str(model.port), 1)[1]
        response = model.respond(host, target)
        follow: dict[str, bool] = {}
        for link, nofollow in page_links(response):
            follow[link] = follow.get(link, False) or not nofollow
        for link, ok in follow.items():
            if ok:
                offer(canonicalize(link))
    return [u for u in order if allowed(rules, u)]


def test_spilling_crawl_is_exactly_once_breadth_first_and_polite(tmp_path: Path) -> None:
    web = WebThread(ISLANDS, tmp_path / "requests.jsonl")
    try:
        result = run_crawl(
            tmp_path / "out", web.web.seeds, dns=web.web.dns_address,
            settings=[f"politeness.host_delay={HOST_DELAY}", f"politeness.ip_delay={IP_DELAY}",
                      "engine.fetchers=1000", "frontier.workbench_bytes=300"],
        )
    finally:
        log = web.stop()
    model = web.model
    assert result.stats["stop_reason"] == "done"
    frontier = result.stats["frontier"]
    assert frontier["to_disk"] > 200, "the workbench budget should have forced spilling"
    assert frontier["from_disk"] == frontier["to_disk"]
    pages = page_requests(log)
    requested = [url_of(r, model.port) for r in pages]
    assert len(requested) == len(set(requested)), "a page was fetched twice"
    checked = 0
    for host, records in by_key(pages, "host").items():
        fetched = [url_of(r, model.port) for r in records]
        assert fetched == discovery_order(model, host, fetched), f"{host} was not visited breadth-first"
        checked += len(fetched)
    assert checked > 300
    for host, records in by_key(log, "host").items():
        assert min(gaps(records), default=HOST_DELAY) >= HOST_DELAY, f"host delay violated on {host}"
    for ip, records in by_key(log, "ip").items():
        assert min(gaps(records), default=IP_DELAY) >= IP_DELAY, f"IP delay violated on {ip}"
