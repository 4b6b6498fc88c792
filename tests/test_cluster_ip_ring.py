"""IP politeness across a ring change (issue 17, item 3): the IPs that move when a machine leaves and
rejoins change machines whole, never crawled by two at once.

Three ``crawl run --cluster`` machines (a, b, c; the settings of ``tests/test_cluster_leave.py``, TTL
2 s) crawl an in-vitro web with four hosts per IP and an IP delay as long as the host delay, so that
the hosts of one IP have owners by name on several machines, which hand them to the IP's machine
(``LinkRouter.hand_off``). A third of the way, b's whole process tree is killed: its IPs go to a and
c. b comes back with ``--resume``: the others hand its IPs back, the hosts they had resolved
included (``LinkRouter.follow_ips``), and b starts no sooner than the IP delay after they paused.
Judged from the web's request log and the WARC files (warcio): per IP, no two fetches closer than
the IP delay over the whole crawl, before the kill, between it and b's restart and after, whichever
machines made them; every reachable page stored exactly once across the three archives; and the
survivors did hand on hosts they had resolved when b rejoined.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from tests.invitro_harness import by_key, gaps, page_requests, url_of
from tests.test_cluster_crawl import host
from tests.test_cluster_leave import NODES, WEB, finish, three_machines

IP_DELAY = 0.2  # as long as the host delay (0.2 s): two machines crawling one IP break it at once
WEB_IPS = dataclasses.replace(WEB, hosts=32, hosts_per_ip=4)


@pytest.fixture(scope="module")
def ring_changes(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root: Path = tmp_path_factory.mktemp("ipring")
    errors: dict[str, str] = {}
    with three_machines(root, WEB_IPS, ("--set", f"politeness.ip_delay={IP_DELAY}")) as crawl:
        killed, _ = crawl.kill_b_and_bring_it_back()
        restarted = time.monotonic()  # b started again: it rejoins once the others handed its IPs back
        for node in NODES:
            errors[node] = finish(crawl.machines[node], root, node, 240)
    for node in NODES:
        assert crawl.machines[node].returncode == 0, f"machine {node}: {errors[node]}"
    stats = {node: orjson.loads((root / node / "stats.json").read_bytes()) for node in NODES}
    return crawl.web.model, crawl.expected, crawl.log, stats, crawl.stored(NODES), (killed, restarted)


def test_no_ip_is_fetched_closer_than_the_ip_delay_across_the_ring_changes(ring_changes) -> None:  # type: ignore[no-untyped-def]
    _, _, log, _, _, (killed, restarted) = ring_changes
    close = [(ip, b) for ip, records in by_key(log, "ip").items()
             for a, b in zip(records, records[1:]) if b.start - a.end < IP_DELAY]
    phases = Counter("before the kill" if b.start < killed else "before b restarted" if b.start < restarted
                     else "after b restarted" for _, b in close)
    print(f"IP delay violations: {len(close)} over {len({ip for ip, _ in close})} of "
          f"{len(by_key(log, 'ip'))} IPs ({dict(phases)}); requests {len(log)}")
    assert not close, f"IP delay violated: {dict(phases)}"
    for name, records in by_key(log, "host").items():
        assert min(gaps(records), default=IP_DELAY) >= IP_DELAY, f"host delay violated on {name}"


def test_every_reachable_page_is_stored_once(ring_changes) -> None:  # type: ignore[no-untyped-def]
    model, expected, log, stats, pages, _ = ring_changes
    assert {s["stop_reason"] for s in stats.values()} == {"done"}
    assert all(s["cluster"]["rejoins"] == ["b"] for s in stats.values())
    requested = Counter(url_of(r, model.port) for r in page_requests(log))
    assert set(requested) == expected, f"never fetched: {sorted(expected - set(requested))[:5]}"
    stored = Counter(u for node in NODES for u in pages[node])
    assert set(stored) == expected, f"lost: {sorted(expected - set(stored))[:5]}"
    assert [u for u, n in stored.items() if n > 1] == [], "a page stored by two machines"
    print(f"reachable {len(expected)} on {len({host(u) for u in expected})} hosts; stored by a {len(pages['a'])}, "
          f"b {len(pages['b'])}, c {len(pages['c'])}; fetched twice {sum(n > 1 for n in requested.values())}; elapsed "
          f"{max(s['elapsed_seconds'] for s in stats.values()):.1f} s")


def test_the_survivors_hand_on_the_hosts_of_the_ips_that_go_back_to_b(ring_changes) -> None:  # type: ignore[no-untyped-def]
    _, _, _, stats, _, _ = ring_changes
    handed_on = sum(t.get("handed_on", 0) for node in ("a", "c") for agent in stats[node]["agents"]
                    for t in agent.get("takeovers", []))
    print(f"hosts the survivors handed on by their IP when b rejoined: {handed_on}")
    assert handed_on > 0, "no host resolved by a survivor was handed on: the web did not exercise the change"
