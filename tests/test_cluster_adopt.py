"""A machine leaving a crawl over several, adopted by a survivor (issue 17, item 4; ``cluster.departure =
"adopt"``, the default), end to end.

Three ``crawl run --cluster`` machines (a, b, c; one agent each, side by side under one root, TTL 2 s:
the fixtures of ``tests/test_cluster_leave.py``) crawl one in-vitro web through one nats-server on
loopback. A third of the way, b's whole process tree is killed; once its entry expired, one survivor
adopts it: it runs b's supervisor, resumed from b's folder, in its own process tree
(``engine/adoption.py``), and no host moves. Judged from the web's request log and the WARC files
(warcio): the crawl ends ``done`` with every reachable page stored exactly once across the three
archives; no page b had stored is fetched again, and the only pages fetched twice are of b's hosts
(its fetches in flight); no host or IP delay is violated; b's hosts are fetched again within 30 s of
the kill, and nothing is re-derived (no agent took hosts over). Then, in a second crawl, the adopter
is killed too (its tree, b's adopted supervisor with it): the third machine adopts both; and b comes
back with ``--resume``: it asks for its agents back, the adopted supervisor stops, and b crawls on
with its entry never expired (nobody adopts it again), with the same guarantees.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from engine.cluster import HEARTBEAT
from tests.invitro_harness import page_requests, url_of, when_requests
from tests.test_agents import check_politeness, records_at_crash
from tests.test_cluster_crawl import host
from tests.test_cluster_leave import (IN_FLIGHT, NODES, RING, TAKEOVER_TARGET, TTL, ThreeMachines, finish, requests_after,
                                      start, three_machines)

ADOPT = ("--set", 'cluster.departure="adopt"')
FETCHERS = 30  # engine.fetchers in the settings: at most that many fetches in flight at a kill


def of(nodes: set[str]) -> Callable[[str, str], bool]:
    """Whether a host at an IP is one of ``nodes``' (its IP's machine by the ring over all three)."""
    return lambda _, ip: RING.agents_list[RING.owner(ip)][0] in nodes


def adopter(root: Path, node: str, by: str | None = None, timeout: float = 60.0) -> str:
    """The machine that adopted ``node`` (``by`` only), from the line its supervisor wrote on its stderr
    (a poll of small files, bounded by the deadline)."""
    line = re.compile(rf"crawl: machine {node} left \(no beat for .*\); (\w+) adopts it")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name in ([by] if by else NODES):
            path = root / f"{name}.stderr"
            if path.exists() and (m := line.search(path.read_text())) and m.group(1) == name:
                return name
        time.sleep(0.05)
    raise AssertionError(f"nobody adopted machine {node} within {timeout:g} s")


def kill(crawl: ThreeMachines, node: str, adopted: tuple[str, ...] = ()) -> Kill:
    """kill -9 of machine ``node``'s whole process tree, with the machines it runs, ``adopted``: the time of
    the kill, the pages their folders held then, how many machines it killed."""
    os.killpg(crawl.machines[node].pid, signal.SIGKILL)
    killed = time.monotonic()
    crawl.machines[node].wait(30)
    return killed, {u for n in (node, *adopted) for u in records_at_crash(crawl.root / n)
                    if not u.endswith("/robots.txt")}, 1 + len(adopted)


def outcome(crawl: ThreeMachines, nodes: tuple[str, ...]) -> tuple[dict[str, dict], dict[str, str]]:  # type: ignore[type-arg]
    """Every machine's ``stats.json`` (an adopted one's written by the supervisor that ran it last) and the
    stderr of the machines of ``nodes``, once they exited (each with status 0)."""
    errors = {node: finish(crawl.machines[node], crawl.root, node, 240) for node in nodes}
    for node in nodes:
        assert crawl.machines[node].returncode == 0, f"machine {node}: {errors[node]}"
    return {node: orjson.loads((crawl.root / node / "stats.json").read_bytes()) for node in NODES}, errors


Kill = tuple[float, set[str], int]  # when, the pages stored then, the machines killed (adopted ones included)


def check_pages(crawl: ThreeMachines, stats: dict[str, dict], kills: list[Kill], gone: set[str]) -> None:  # type: ignore[type-arg]
    """The crawl ended ``done`` on every machine, with every reachable page requested and stored exactly once
    across the archives; none stored at a kill fetched after it; the only pages fetched twice are of the
    machines killed (their fetches in flight: a page cut by one kill may be stored before the next); no host
    or IP delay violated; nothing re-derived."""
    assert {s["stop_reason"] for s in stats.values()} == {"done"}
    model, log = crawl.web.model, crawl.log
    requested = Counter(url_of(r, model.port) for r in page_requests(log))
    assert set(requested) == crawl.expected, f"never fetched: {sorted(crawl.expected - set(requested))[:5]}"
    pages = crawl.stored(NODES)
    stored = Counter(u for node in NODES for u in pages[node])
    assert set(stored) == crawl.expected, f"lost: {sorted(crawl.expected - set(stored))[:5]}"
    assert [u for u, n in stored.items() if n > 1] == [], "a page stored twice"
    repeated = {u for u, n in requested.items() if n > 1}
    for killed, at_crash, _ in kills:
        after = {url_of(r, model.port) for r in page_requests(log) if r.start > killed + IN_FLIGHT}
        assert at_crash and not after & at_crash, "a page stored before a kill was fetched after it"
    hosts = {r.host for r in log if of(gone)(r.host, r.ip)}
    assert {host(u) for u in repeated} <= hosts, "a page of a machine not killed fetched twice"
    assert len(repeated) <= FETCHERS * sum(n for *_, n in kills), "more repeats than the machines killed had fetchers"
    check_politeness(log)
    assert not [t for s in stats.values() for agent in s["agents"] for t in agent.get("takeovers", [])], \
        "an agent took hosts over: an adoption moves none"
    print(f"reachable {len(crawl.expected)}, stored at the kills {[len(k[1]) for k in kills]}, "
          f"fetched twice {len(repeated)}")


def first_fetch(crawl: ThreeMachines, nodes: set[str], killed: float, until: float = float("inf")) -> float:
    """Seconds from the kill to the first request to a host of ``nodes`` that began after it (those logged
    within :data:`IN_FLIGHT` of it were the killed machine's own, in flight)."""
    after = sorted(r.start for r in crawl.log if of(nodes)(r.host, r.ip) and killed + IN_FLIGHT < r.start < until)
    assert after, f"no host of {', '.join(sorted(nodes))} fetched after the kill"
    return after[0] - killed


@pytest.fixture(scope="module")
def adopted(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("adopt")
    with three_machines(root, extra=ADOPT) as crawl:
        assert when_requests(crawl.web, len(crawl.expected) // 3).wait(120), "the crawl did not get a third of the way"
        killed = kill(crawl, "b")
        by = adopter(root, "b")
        stats, errors = outcome(crawl, tuple(n for n in NODES if n != "b"))
    return crawl, stats, errors, killed, by


def test_an_adopted_machine_crawls_on_and_every_page_is_stored_once(adopted) -> None:  # type: ignore[no-untyped-def]
    crawl, stats, errors, killed, by = adopted
    check_pages(crawl, stats, [killed], {"b"})
    assert [a["node"] for a in stats[by]["cluster"]["adoptions"]] == ["b"], errors[by]
    assert all(s["cluster"]["adoptions"] == [] for n, s in stats.items() if n != by), "adopted twice"
    assert stats["b"]["cluster"]["adopted_by"] == by
    assert all(s["cluster"]["departures"] == [] and s["cluster"]["live"] == list(NODES) for s in stats.values()), \
        "the ring changed"


def test_the_adopted_machine_s_hosts_are_fetched_again_within_30_s(adopted) -> None:  # type: ignore[no-untyped-def]
    crawl, stats, errors, (killed, *_), by = adopted
    first = first_fetch(crawl, {"b"}, killed)
    print(f"b's hosts fetched again {first:.2f} s after the kill (TTL {TTL:g} s), by b's agent adopted by {by}")
    assert TTL - HEARTBEAT <= first < TAKEOVER_TARGET


@pytest.fixture(scope="module")
def adopter_killed_and_b_back(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("adopt-twice")
    with three_machines(root, extra=ADOPT) as crawl:
        web = crawl.web
        assert when_requests(web, len(crawl.expected) // 3).wait(120), "the crawl did not get a third of the way"
        kill_b = kill(crawl, "b")
        first = adopter(root, "b")
        assert requests_after(web, kill_b[0], 10, of({"b"})).wait(60), "b's adopted agent did not crawl"
        kill_both = kill(crawl, first, adopted=("b",))
        last = next(n for n in NODES if n not in ("b", first))
        adopter(root, first, by=last)
        adopter(root, "b", by=last)
        assert requests_after(web, kill_both[0], 10, of({"b"})).wait(60), "b's agent, adopted again, did not crawl"
        back = time.monotonic()
        crawl.machines["b"] = start(root, "b", crawl.seeds, web, crawl.broker, *ADOPT, "--resume")
        stats, errors = outcome(crawl, ("b", last))
    return crawl, stats, errors, (kill_b, kill_both, back), (first, last)


def test_a_third_machine_adopts_the_adopter_and_the_machine_it_ran(adopter_killed_and_b_back) -> None:  # type: ignore[no-untyped-def]
    crawl, stats, errors, (kill_b, kill_both, back), (first, last) = adopter_killed_and_b_back
    check_pages(crawl, stats, [kill_b, kill_both], {"b", first})
    assert sorted(a["node"] for a in stats[last]["cluster"]["adoptions"]) == sorted(["b", first]), errors[last]
    assert stats[first]["cluster"]["adopted_by"] == last
    again = first_fetch(crawl, {"b", first}, kill_both[0], until=back)
    print(f"{first}'s and b's hosts fetched again {again:.2f} s after {first} was killed (TTL {TTL:g} s), by {last}")
    assert TTL - HEARTBEAT <= again < TAKEOVER_TARGET


def test_b_coming_back_takes_its_agents_back(adopter_killed_and_b_back) -> None:  # type: ignore[no-untyped-def]
    crawl, stats, errors, _, (first, last) = adopter_killed_and_b_back
    assert "was adopted; asking for its agents back" in errors["b"]
    assert f"machine b came back; {last} hands its agents back" in errors[last]
    assert stats["b"]["cluster"]["adopted_by"] == "", "b's last run was its own"
    assert stats["b"]["cluster"]["rejoins"] == [], "b never left the ring: no rejoin"
    # its entry never expired between the handback and b's return: nobody adopted it again
    assert [a["node"] for a in stats[last]["cluster"]["adoptions"]].count("b") == 1, errors[last]
