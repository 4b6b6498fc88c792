"""A machine that rejoined leaving again (issue 17, item 4), end to end: the survivors take its hosts
over a second time.

Three ``crawl run --cluster`` machines (a, b, c; one agent each, side by side under one root, TTL
2 s: the settings of ``tests/test_cluster_leave.py``). b's whole process tree is killed a third of
the way; a and c take its hosts over and crawl them; b comes back with ``--resume`` and rejoins,
and they hand its hosts back; once b crawls them again, it is killed a second time, and a and c
take its hosts over once more. Their sieves remember the URLs of b's hosts from the first takeover
(and the hosts they handed back are purged in their frontiers), so what b had not fetched is
reached only if a takeover queues again what its sieve let through before. Judged from the web's
request log and the WARC files (warcio): the survivors end ``done``; every reachable page is stored
exactly once across the three archives (b's as the second kill left them); no page b stored was
fetched again, and the only pages fetched twice are of b's hosts (its fetches in flight at either
kill); no host or IP delay was violated across machines.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter

import orjson
import pytest

from tests.invitro_harness import page_requests, url_of
from tests.test_agents import check_politeness, records_at_crash
from tests.test_cluster_crawl import host
from tests.test_cluster_leave import IN_FLIGHT, RING, finish, of_b, requests_after, three_machines, wait_manifest

NODES = ("a", "b", "c")
FETCHERS = 30  # engine.fetchers in the settings: at most that many fetches in flight at each kill
IN_FLIGHT_BEFORE = 2.0  # seconds before a kill within which b's fetch in flight was answered (its record unwritten)


def owned_by_b(host_name: str, ip: str) -> bool:
    """b's by name and by its IP: after the others handed its hosts back, only b fetches it."""
    return of_b(ip) and RING.agents_list[RING.owner(host_name)][0] == "b"


@pytest.fixture(scope="module")
def left_twice(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("leave2")
    errors: dict[str, str] = {}
    with three_machines(root) as crawl:
        machines = crawl.machines
        killed, first = crawl.kill_b_and_bring_it_back()
        kills = [killed]
        for node in ("a", "c"):
            assert wait_manifest(root / node, list(NODES), 60), f"{node} never handed b's hosts back"
        handed_back = time.monotonic()
        assert requests_after(crawl.web, handed_back, 10, owned_by_b).wait(60), "b did not crawl its hosts again"
        os.killpg(machines["b"].pid, signal.SIGKILL)
        kills.append(time.monotonic())
        machines["b"].wait(30)
        second = records_at_crash(root / "b")
        for node in ("a", "c"):
            errors[node] = finish(machines[node], root, node, 120)
    for node in ("a", "c"):
        assert machines[node].returncode == 0, f"machine {node}: {errors[node]}"
    stats = {node: orjson.loads((root / node / "stats.json").read_bytes()) for node in ("a", "c")}
    pages = crawl.stored(("a", "c"))
    pages["b"] = [u for u in second if not u.endswith("/robots.txt")]
    at_first = {u for u in first if not u.endswith("/robots.txt")}
    return crawl.web.model, crawl.expected, crawl.log, stats, pages, at_first, kills


def test_the_survivors_of_a_second_departure_finish_with_every_reachable_page_stored_once(left_twice) -> None:  # type: ignore[no-untyped-def]
    model, expected, log, stats, pages, at_first, _ = left_twice
    assert {s["stop_reason"] for s in stats.values()} == {"done"}
    assert all(s["cluster"]["live"] == ["a", "c"] for s in stats.values())
    assert [d["gone"] for d in stats["a"]["cluster"]["departures"]] == [["b"], ["b"]]
    assert stats["a"]["cluster"]["rejoins"] == ["b"]
    stored = Counter(u for node in NODES for u in pages[node])
    lost = expected - set(stored)
    print(f"reachable {len(expected)}; b stored {len(at_first)} before the first kill, {len(pages['b'])} before "
          f"the second; a {len(pages['a'])}, c {len(pages['c'])}; lost {len(lost)}")
    assert not lost, f"lost {len(lost)}: {sorted(lost)[:5]}"
    assert [u for u, n in stored.items() if n > 1] == [], "a page stored by two machines"


def test_no_page_b_stored_is_fetched_again_and_no_delay_is_violated(left_twice) -> None:  # type: ignore[no-untyped-def]
    model, expected, log, stats, pages, at_first, kills = left_twice
    assert len(pages["b"]) > len(at_first), "b stored nothing between its rejoin and the second kill"
    requested = Counter(url_of(r, model.port) for r in page_requests(log))
    repeated = {u for u, n in requested.items() if n > 1}
    assert not repeated & set(pages["b"]), "a page b had stored was fetched again"
    first = {}
    for r in page_requests(log):
        first.setdefault(url_of(r, model.port), r.start)
    assert all(any(k - IN_FLIGHT_BEFORE < first[u] < k + IN_FLIGHT for k in kills) for u in repeated), \
        "a page fetched twice that was not in flight at a kill of b"
    b_crawls = {r.host for r in log if of_b(r.ip) or RING.agents_list[RING.owner(r.host)][0] == "b"}
    assert {host(u) for u in repeated} <= b_crawls, "a page of a live machine's host fetched twice"
    assert len(repeated) <= 2 * FETCHERS, "more repeats than b's fetches in flight at two kills"
    print(f"fetched twice {len(repeated)} (b's fetches in flight)")
    check_politeness(log)
