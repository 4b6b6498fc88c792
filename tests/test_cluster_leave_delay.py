"""A machine leaving a crawl over several (issue 17, item 4): its hosts' Crawl-delay is kept across the
takeover, end to end.

Three ``crawl run --cluster`` machines (a, b, c; the settings of ``tests/test_cluster_leave.py``,
TTL 2 s) crawl an in-vitro web whose every robots.txt asks a Crawl-delay of 4 s, above the TTL.
Once b has stored a page of one of its hosts, b's whole process tree is killed; a and c take its
hosts over, each of which they fetch (robots.txt first) only once its Crawl-delay is over since
b's last stored fetch of it (its WARC-Date and fetch time, read from b's archive), not a TTL after
b's last beat. Judged from the web's request log: no gap on any of b's hosts between b's last stored
fetch and the survivors' first is shorter than the Crawl-delay. The crawl is not finished: a and c
are killed once they fetched the host b stored last.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from pathlib import Path

from tests.invitro_harness import WebThread, page_requests, reachable, robots_for, url_of, when_logged
from tests.nats_server import nats_server
from tests.test_agents import records_at_crash
from tests.test_cluster_leave import IN_FLIGHT, NODES, WEB, kill_leftovers, of_b, said, start, wait_manifest

CRAWL_DELAY = 4.0  # above the TTL (2 s) and the host delay (0.2 s)
DELAYED = dataclasses.replace(WEB, robots_crawl_delay_share=1.0, robots_crawl_delay=CRAWL_DELAY)


def wait_stored(out: Path, url: str, timeout: float) -> bool:
    """Whether machine ``out``'s archive holds a whole record of ``url`` within ``timeout`` (a poll of
    its WARC files, bounded by the deadline)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if url in records_at_crash(out):
            return True
        time.sleep(0.05)
    return False


def test_the_survivors_wait_a_host_crawl_delay_since_the_gone_machine_last_fetched_it(tmp_path: Path) -> None:
    web = WebThread(DELAYED, tmp_path / "requests.jsonl")
    seeds = web.web.seeds[:6]
    assert reachable(web.model, seeds)
    port = web.model.port
    page: list[str] = []

    def delayed(host: str) -> bool:
        rules = robots_for(web.model, host)  # some hosts have no robots.txt, or one that fails
        return not isinstance(rules, bool) and rules.crawl_delay("*") == CRAWL_DELAY

    def b_page(entry: dict[str, object]) -> bool:  # a page of b's (its IP's): only b fetches those hosts
        if (of_b(str(entry["ip"])) and not str(entry["target"]).endswith("/robots.txt") and not page
                and delayed(str(entry["host"]))):
            page.append(f"http://{entry['host']}:{port}{entry['target']}")
        return bool(page)

    try:
        with nats_server(tmp_path / "nats") as broker:
            fetched = when_logged(web, b_page)
            machines = {node: start(tmp_path, node, seeds, web, broker.url) for node in NODES}
            try:
                assert fetched.wait(120), (f"b fetched no page of its hosts; the web answered "
                                           f"{web.web.service.log.records} requests\n{said(tmp_path)}")
                assert wait_stored(tmp_path / "b", page[0], 30), "b did not store its page"
                os.killpg(machines["b"].pid, signal.SIGKILL)
                killed = time.monotonic()
                machines["b"].wait(30)
                stored = {u for u in records_at_crash(tmp_path / "b") if not u.endswith("/robots.txt")}
                assert wait_manifest(tmp_path / "a", ["a", "c"], 60), "a never took b out of its ring"
                target = page[0].split("/")[2].rsplit(":", 1)[0]
                again: threading.Event = when_logged(
                    web, lambda r: r["host"] == target and float(r["start"]) > killed)  # type: ignore[arg-type]
                assert again.wait(60), "the survivors did not fetch the host b stored last"
            finally:
                kill_leftovers(machines)
    finally:
        log = web.stop()
    last_stored = {}  # per host of b's with a Crawl-delay, the end of b's last stored fetch (a page: its record tells its end)
    for r in page_requests(log):
        if r.start < killed and url_of(r, port) in stored and delayed(r.host):
            last_stored[r.host] = max(last_stored.get(r.host, 0.0), r.end)
    first_after: dict[str, float] = {}
    for r in log:
        if r.host in last_stored and r.start > killed + IN_FLIGHT:  # not b's own, in flight at the kill
            first_after.setdefault(r.host, r.start)
    gaps = {h: first_after[h] - last_stored[h] for h in first_after}
    assert target in gaps
    print(f"b's hosts fetched again after the kill: {len(gaps)}; gaps since b's last stored fetch "
          f"{min(gaps.values()):.2f}-{max(gaps.values()):.2f} s (Crawl-delay {CRAWL_DELAY:g} s, TTL 2 s)")
    assert min(gaps.values()) >= CRAWL_DELAY, f"a survivor fetched a host of b's before its Crawl-delay: {gaps}"
