"""IP politeness across machines (issue 17, item 3): hosts of one IP owned by agents of two machines.

Two ``crawl run --cluster`` machines over one nats-server, as in ``tests/test_cluster_crawl.py``, on
an in-vitro web with four hosts per IP, so that the ring by host name puts hosts of one IP on both
machines (asserted). Judged from the web's request log: per IP, no two fetches closer than the IP
delay, whichever machine made them; every reachable page fetched once in all; and each host
fetched by the machine of its IP (``LinkRouter.hand_off``), never by its owner by name when that
is another machine.
"""

from __future__ import annotations

from collections import Counter

import pytest

from bench.invitro import WebParams
from engine.ownership import GlobalRing
from frontier import snapshot
from tests.invitro_harness import WebThread, by_key, gaps, page_requests, reachable, url_of
from tests.nats_server import nats_server
from tests.test_cluster_crawl import NODES, finish, host, outcome, start

IP_DELAY = 0.2  # as long as the host delay: two machines crawling one IP would break it at once
WEB = WebParams(hosts=24, hosts_per_ip=4, mean_pages=10, max_pages=24, mean_links=20, page_bytes=4000)
RING = GlobalRing([("a", 1), ("b", 1)])


def machine_of(name: str) -> str:
    return RING.agents_list[RING.owner(name)][0]


@pytest.fixture(scope="module")
def shared_ips(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("ips")
    web = WebThread(WEB, tmp / "requests.jsonl")
    seeds = web.web.seeds[:6]
    try:
        with nats_server(tmp / "nats") as broker:
            finish({node: start(tmp, node, seeds, web, broker.url, "--set", f"politeness.ip_delay={IP_DELAY}")
                    for node in NODES})
    finally:
        log = web.stop()
    stats, pages = outcome(tmp)
    handed = {node: snapshot.read(tmp / node / "agent-0" / "frontier" / "checkpoint")[0]["extra"] for node in NODES}
    return web.model, seeds, log, stats, pages, handed


def test_hosts_of_one_ip_fall_on_both_machines_by_name(shared_ips) -> None:  # type: ignore[no-untyped-def]
    model, _, log, *_ = shared_ips
    split = [ip for ip, records in by_key(page_requests(log), "ip").items()
             if len({machine_of(r.host) for r in records}) == 2]
    assert split, "the web must have an IP whose hosts the name ring puts on both machines"


def test_no_ip_is_fetched_closer_than_the_ip_delay_across_machines(shared_ips) -> None:  # type: ignore[no-untyped-def]
    _, _, log, *_ = shared_ips
    violations = {ip: sum(g < IP_DELAY for g in gaps(records)) for ip, records in by_key(log, "ip").items()}
    print(f"IP delay violations: {sum(violations.values())} over {len(violations)} IPs")
    assert sum(violations.values()) == 0, f"IP delay violated: {violations}"


def test_every_page_once_in_all_each_host_by_its_ips_machine(shared_ips) -> None:  # type: ignore[no-untyped-def]
    model, seeds, log, stats, pages, _ = shared_ips
    assert {s["stop_reason"] for s in stats.values()} == {"done"}
    requested = Counter(url_of(r, model.port) for r in page_requests(log))
    assert not [u for u, n in requested.items() if n > 1], "a page was fetched twice"
    assert set(requested) == reachable(model, seeds)
    assert not pages["a"] & pages["b"] and pages["a"] | pages["b"] == set(requested)
    for node, urls in pages.items():
        for url in urls:
            assert machine_of(model.ip_of(host(url))) == node, f"{url} crawled by {node}"
    handed = {host(url) for node, urls in pages.items() for url in urls if machine_of(host(url)) != node}
    assert handed, "no host was handed off"
    print(f"pages {len(requested)} (a {len(pages['a'])}, b {len(pages['b'])}), hosts handed to their IP's machine "
          f"{len(handed)} of {len({host(u) for u in requested})}, elapsed "
          f"{max(s['elapsed_seconds'] for s in stats.values()):.1f} s, links sent between the machines "
          f"{sum(s['cluster']['messages_sent'] for s in stats.values())} messages")


def test_hosts_handed_keep_no_urls_when_machines_are_adopted(shared_ips) -> None:  # type: ignore[no-untyped-def]
    """With the default departure (adopt) no host handed by its IP comes back to its owner by name, so the
    URLs sent with it are not kept: the memory and the checkpoint stay those of the hosts, not their URLs."""
    *_, handed = shared_ips
    assert any(extra["handed"] for extra in handed.values()), "no host was handed off"
    assert {node: extra["handed_urls"] for node, extra in handed.items()} == {node: {} for node in NODES}
