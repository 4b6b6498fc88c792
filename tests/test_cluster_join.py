"""A machine that was not a member joining a crawl under way (issue 17, item 1), end to end.

Two ``crawl run --cluster`` machines (a and b, one agent each, ``--cluster-size 2``) crawl one
in-vitro web through one nats-server on loopback, their folders side by side under one root (the
shared storage). Once a third of the reachable pages are answered, machine c, never a member,
starts with the same command line and no manifest: it finds the crawl under way, takes the join
turn, appends itself to the member list, and the others hand its hosts over as to a machine
rejoining; it reads their archives (what they stored of its hosts is not fetched again) and crawls.
Judged from the web's request log and the three machines' WARC files (warcio): all three end
``done`` with the same members and live machines; every reachable page was requested and is
stored exactly once; no page was fetched twice (the others paused until no fetch was in flight);
c stored pages, all of hosts the ring over the three gives it (by name, or by IP); and no host or
IP delay was violated across machines. Two newcomers starting at once join one after the other,
and every machine appends them in the same order. A newcomer joining after a member was killed
reads that member's archive too. A newcomer killed with its whole tree while it joins and started
again with ``--resume`` joins again (the turn, every member's archive); one killed after it joined
and crawled rejoins like any member; either way the crawl ends whole, fetched twice only what the
kill cut.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

from engine.ownership import GlobalRing
from tests.invitro_harness import WebThread, page_requests, reachable, url_of, when_logged, when_requests
from tests.nats_server import nats_server
from tests.test_agents import check_politeness, records_at_crash, warc_records
from tests.test_cluster_crawl import host
from tests.test_cluster_leave import WEB, finish, kill_leftovers, of_b, start, wait_manifest

FIRST, NEWCOMER = ("a", "b"), "c"
NODES = (*FIRST, NEWCOMER)
RING = GlobalRing([(node, 1) for node in NODES])  # the members in join order: c appended
JOIN_TARGET = 30.0  # seconds from c's start to its first fetch


def of_c(name: str) -> bool:
    """Whether a host name or an IP hashes to c on the ring over the three."""
    return RING.agents_list[RING.owner(name)][0] == NEWCOMER


def crawl(root: Path, newcomers: tuple[str, ...]):  # type: ignore[no-untyped-def]
    """a and b crawl; once a third of the pages are answered, ``newcomers`` start at once. Every machine's
    stats and pages (its WARC records, robots.txt left out), the request log, and when they started."""
    web = WebThread(WEB, root / "requests.jsonl")
    seeds = web.web.seeds[:6]
    expected = reachable(web.model, seeds)
    errors: dict[str, str] = {}
    nodes = (*FIRST, *newcomers)
    try:
        with from_a_third(root, web, seeds, expected, errors) as (broker, machines):
            joined = time.monotonic()
            for node in newcomers:
                machines[node] = start(root, node, seeds, web, broker, size=len(FIRST))
    finally:
        log = web.stop()
    stats, pages = outcome(root, nodes, machines, errors)
    return web.model, expected, log, stats, pages, joined


@contextmanager
def from_a_third(root: Path, web: WebThread, seeds: list[str], expected: set[str], errors: dict[str, str],
                 *extra: str) -> Iterator[tuple[str, dict[str, subprocess.Popen[str]]]]:
    """a and b crawl through a broker of their own (``extra``: more arguments of ``crawl run``); the block runs
    once a third of the pages are answered, with the broker's URL and the machines, to which it may add; then
    each machine is waited for (what it wrote on stderr into ``errors``), and any left killed."""
    with nats_server(root / "nats") as broker:
        answered = when_requests(web, len(expected) // 3)
        machines = {node: start(root, node, seeds, web, broker.url, *extra, size=len(FIRST)) for node in FIRST}
        try:
            assert answered.wait(120), "the crawl did not get a third of the way"
            yield broker.url, machines
            for node, process in machines.items():
                errors[node] = finish(process, root, node, 240)
        finally:
            kill_leftovers(machines)


def outcome(root: Path, nodes: Sequence[str], machines: dict[str, subprocess.Popen[str]], errors: dict[str, str]
            ) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Each machine's stats.json and the pages in its WARC files (robots.txt left out), once all exited well."""
    for node in nodes:
        assert machines[node].returncode == 0, f"machine {node}: {errors[node]}"
    stats = {node: orjson.loads((root / node / "stats.json").read_bytes()) for node in nodes}
    pages = {node: [uri for kind, uri in warc_records(root / node) if kind in ("response", "revisit")
                    and not uri.endswith("/robots.txt")] for node in nodes}
    return stats, pages


def check_stored_once(model, expected, log, pages) -> None:  # type: ignore[no-untyped-def]
    """Every reachable page requested once and stored once across the machines; no host or IP delay violated."""
    requested = Counter(url_of(r, model.port) for r in page_requests(log))
    assert set(requested) == expected, f"never fetched: {sorted(expected - set(requested))[:5]}"
    assert [u for u, n in requested.items() if n > 1] == [], "a page fetched twice"
    stored = Counter(u for urls in pages.values() for u in urls)
    assert set(stored) == expected, f"lost: {sorted(expected - set(stored))[:5]}"
    assert [u for u, n in stored.items() if n > 1] == [], "a page stored by two machines"
    check_politeness(log)  # every host and IP, across the machines


@pytest.fixture(scope="module")
def machine_joined(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return crawl(tmp_path_factory.mktemp("join"), (NEWCOMER,))


def test_all_three_end_done_on_one_ring_with_c_appended(machine_joined) -> None:  # type: ignore[no-untyped-def]
    *_, stats, _, _ = machine_joined
    assert {s["stop_reason"] for s in stats.values()} == {"done"}
    for node, s in stats.items():
        assert s["cluster"]["members"] == [[n, 1] for n in NODES], node
        assert s["cluster"]["live"] == list(NODES), node
        assert s["cluster"]["joins"] == [NEWCOMER], node
        assert s["cluster"]["departures"] == [] and s["cluster"]["rejoins"] == [], node


def test_every_reachable_page_is_fetched_and_stored_once(machine_joined) -> None:  # type: ignore[no-untyped-def]
    model, expected, log, stats, pages, _ = machine_joined
    check_stored_once(model, expected, log, pages)


def test_c_crawls_its_share_of_the_hosts_soon_after_it_starts(machine_joined) -> None:  # type: ignore[no-untyped-def]
    model, expected, log, stats, pages, joined = machine_joined
    assert pages[NEWCOMER], "c stored nothing"
    ips = {r.host: r.ip for r in log}
    assert all(of_c(host(u)) or of_c(ips[host(u)]) for u in pages[NEWCOMER]), "c crawled a host that is not its own"
    handed = sum(t["handed_over"] for node in FIRST for agent in stats[node]["agents"]
                 for t in agent.get("takeovers", []))
    assert handed > 0, "a and b purged none of c's hosts"
    skipped = sum(t["skipped"] for agent in stats[NEWCOMER]["agents"] for t in agent.get("takeovers", []))
    mine = set(pages[NEWCOMER])
    first = min(r.start for r in page_requests(log) if url_of(r, model.port) in mine)
    print(f"reachable {len(expected)}: a stored {len(pages['a'])}, b {len(pages['b'])}, c {len(pages['c'])}; "
          f"c's first fetch {first - joined:.2f} s after it started; a and b handed {handed} hosts, "
          f"c skipped {skipped} pages they had stored")
    assert skipped > 0, "c read no page of the others' archives into its skip set"
    assert 0 < first - joined < JOIN_TARGET


def test_two_newcomers_at_once_join_one_after_the_other_in_one_order_everywhere(tmp_path: Path) -> None:
    """c and d start together: one takes the join turn, the other waits for it and then asks with the
    first appended; all four machines end with the same member list, and the crawl is whole."""
    model, expected, log, stats, pages, _ = crawl(tmp_path, ("c", "d"))
    orders = {tuple(tuple(m) for m in s["cluster"]["members"]) for s in stats.values()}
    assert len(orders) == 1, f"the machines disagree on the members: {orders}"
    order = [node for node, _ in orders.pop()]
    assert order[:2] == list(FIRST) and sorted(order[2:]) == ["c", "d"]
    assert {s["stop_reason"] for s in stats.values()} == {"done"}
    assert all(s["cluster"]["joins"] == order[2:] for node, s in stats.items() if node in FIRST)
    # the second read the first's archive too (a newcomer may store nothing: by IP, its hosts may all be
    # others', hosts resolved before it joined staying with their crawler)
    sources = [t["sources"] for t in stats[order[3]]["agents"][0]["takeovers"]]
    assert sources == [[*FIRST, order[2]]], sources
    check_stored_once(model, expected, log, pages)


@pytest.mark.parametrize("resumed", [False, True], ids=["once", "resumed"])
def test_a_newcomer_after_a_member_left_reads_its_archive_too(tmp_path: Path, resumed: bool) -> None:
    """a, b and c crawl; b is killed (its whole tree) a third of the way; once a and c took its hosts over, d
    joins: its places come after b's, which keeps its own, and it reads b's archive with the live ones'
    (b stored pages of d's hosts too). a, c and d end ``done``; every page stored once (b's archive as
    the kill left it), fetched twice only if b's (its fetches in flight). ``resumed``: d is killed too (its
    whole tree) while a hands its hosts over, and started again with ``--resume`` once a and c saw it leave;
    it joins again, and reads b's archive still (not only the live machines', as a member rejoining)."""
    web = WebThread(WEB, tmp_path / "requests.jsonl")
    seeds = web.web.seeds[:6]
    expected = reachable(web.model, seeds)
    three, errors = ("a", "b", "c"), {}
    try:
        with nats_server(tmp_path / "nats") as broker:
            answered = when_requests(web, len(expected) // 3)
            machines = {node: start(tmp_path, node, seeds, web, broker.url, size=3) for node in three}
            try:
                assert answered.wait(120), "the crawl did not get a third of the way"
                os.killpg(machines["b"].pid, signal.SIGKILL)
                machines["b"].wait(30)
                at_crash = [u for u in records_at_crash(tmp_path / "b") if not u.endswith("/robots.txt")]
                assert wait_manifest(tmp_path / "a", ["a", "c"], 60), "a never took b out of its ring"
                machines["d"] = start(tmp_path, "d", seeds, web, broker.url, size=3)
                if resumed:
                    assert wait_until(lambda: "machine d joins; handing" in (tmp_path / "a.stderr").read_text(), 60)
                    os.killpg(machines["d"].pid, signal.SIGKILL)
                    machines["d"].wait(30)
                    assert all(wait_until(lambda: "machine d left" in (tmp_path / f"{node}.stderr").read_text(), 60)
                               for node in ("a", "c")), "a or c never took d out of its ring"
                    machines["d"] = start(tmp_path, "d", seeds, web, broker.url, "--resume", size=3)
                for node in ("a", "c", "d"):
                    errors[node] = finish(machines[node], tmp_path, node, 240)
            finally:
                kill_leftovers(machines)
    finally:
        log = web.stop()
    for node in ("a", "c", "d"):
        assert machines[node].returncode == 0, f"machine {node}: {errors[node]}"
    stats = {node: orjson.loads((tmp_path / node / "stats.json").read_bytes()) for node in ("a", "c", "d")}
    assert {s["stop_reason"] for s in stats.values()} == {"done"}
    for node, s in stats.items():
        assert s["cluster"]["members"] == [["a", 1], ["b", 1], ["c", 1], ["d", 1]], node
        assert s["cluster"]["live"] == ["a", "c", "d"], node
    assert [t["sources"] for t in stats["d"]["agents"][0]["takeovers"]] == [["a", "b", "c"]]
    stored = Counter([*at_crash, *(uri for node in ("a", "c", "d") for kind, uri in warc_records(tmp_path / node)
                                   if kind in ("response", "revisit") and not uri.endswith("/robots.txt"))])
    assert set(stored) == expected, f"lost: {sorted(expected - set(stored))[:5]}"
    assert [u for u, n in stored.items() if n > 1] == [], "a page stored twice"
    requested = Counter(url_of(r, web.model.port) for r in page_requests(log))
    repeated = {u for u, n in requested.items() if n > 1}
    assert not repeated & set(at_crash), "a page b had stored was fetched again"
    assert {host(u) for u in repeated} <= {r.host for r in log if of_b(r.ip)}, "a page of a live machine's host fetched twice"
    check_politeness(log)
    print(f"reachable {len(expected)}: b stored {len(at_crash)} before the kill; a {stats['a']['pages']}, "
          f"c {stats['c']['pages']}, d {stats['d']['pages']}; fetched twice {len(repeated)} (b's in flight)")


def wait_until(check: Callable[[], bool], timeout: float) -> bool:
    """Whether ``check`` (a look at a file a machine writes as it goes: its manifest, its stderr) holds
    within ``timeout``; a poll of a small file, bounded by the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def manifest(root: Path, node: str) -> dict[str, Any]:
    path = root / node / "crawl.json"
    return orjson.loads(path.read_bytes()) if path.exists() else {}


ASKING = "asking"  # c's manifest names it a member: its entry asks to join; c is started again at once
HANDOVER = "handover"  # a hands c's hosts over; c is started again once a and b took it out of their rings
KILL_AT = {ASKING: lambda root: [NEWCOMER, 1] in manifest(root, NEWCOMER).get("members", []),
           HANDOVER: lambda root: "machine c joins; handing" in (root / "a.stderr").read_text()}


def pages_of_c_after(web: WebThread, since: float, n: int) -> threading.Event:
    """Set once the web answered ``n`` requests for pages (robots.txt left out) of c's hosts, by name or by
    IP, that began after ``since``."""
    seen = [0]

    def counts(entry: dict[str, object]) -> bool:
        if (entry["target"] != "/robots.txt" and float(entry["start"]) > since  # type: ignore[arg-type]
                and (of_c(str(entry["host"])) or of_c(str(entry["ip"])))):
            seen[0] += 1
        return seen[0] >= n

    return when_logged(web, counts)


def c_killed_and_resumed(root: Path, joining: str | None, departure: str):  # type: ignore[no-untyped-def]
    """a and b crawl; a third of the way c joins; c is killed with its whole tree, then started again with
    ``--resume``. With ``joining`` (:data:`KILL_AT`), c is killed at that point of its join and started again
    at once (its join turn and entry expire a TTL later), or once a and b saw it leave (``take_over``: out of
    their rings; ``adopt``: one of them adopted it, if they had named it live). Without it, c is killed once
    live and it fetched 20 pages of its hosts, and started again once a and b (or c adopted) fetched 10 pages
    of them. Every machine's stats and pages (their archives at the end: c's as its restart recovered them),
    the request log, and what c's archive held at the kill."""
    settings = ("--set", f'cluster.departure="{departure}"')
    left = "adopts it" if departure == "adopt" else "machine c left"
    web = WebThread(WEB, root / "requests.jsonl")
    seeds = web.web.seeds  # every host's home page: c's agents look up each of its hosts as soon as they own it
    expected = reachable(web.model, seeds)
    errors: dict[str, str] = {}
    try:
        with from_a_third(root, web, seeds, expected, errors, *settings) as (broker, machines):
            machines[NEWCOMER] = start(root, NEWCOMER, seeds, web, broker, *settings, size=len(FIRST))
            if joining is not None:
                assert wait_until(lambda: KILL_AT[joining](root), 60), f"c never got to {joining}"
            else:  # a and b fetch no host of c's once they named it live: c's own requests from then on
                assert wait_until(lambda: NEWCOMER in manifest(root, NEWCOMER).get("live", []), 60), \
                    "c never joined"
                assert pages_of_c_after(web, time.monotonic(), 20).wait(60), "c fetched no page of its hosts"
            os.killpg(machines[NEWCOMER].pid, signal.SIGKILL)
            killed = time.monotonic()
            machines[NEWCOMER].wait(30)
            at_crash = [u for u in records_at_crash(root / NEWCOMER) if not u.endswith("/robots.txt")]
            def gone() -> list[str]:  # adopted, c is by one of a and b; taken over, by both
                return [node for node in FIRST if left in (root / f"{node}.stderr").read_text()]

            if joining != ASKING:
                assert wait_until(lambda: len(gone()) == (1 if departure == "adopt" else 2), 60), \
                    f"a and b did not see c leave: {gone()}"
            if joining is None:
                assert pages_of_c_after(web, killed, 10).wait(60), "c's hosts were not crawled after the kill"
            machines[NEWCOMER] = start(root, NEWCOMER, seeds, web, broker, *settings, "--resume", size=len(FIRST))
    finally:
        log = web.stop()
    stats, pages = outcome(root, NODES, machines, errors)
    return web.model, expected, log, stats, pages, at_crash


def check_c_resumed(model, expected, log, stats, pages, at_crash) -> None:  # type: ignore[no-untyped-def]
    """All three end ``done`` on one member list with c live; every reachable page stored once across the
    archives and requested; no page c had stored fetched again, and a page fetched twice only of c's hosts
    (its fetches in flight at the kill); no host or IP delay violated."""
    assert {s["stop_reason"] for s in stats.values()} == {"done"}, {n: s["stop_reason"] for n, s in stats.items()}
    for node, s in stats.items():
        assert s["cluster"]["members"] == [[n, 1] for n in NODES], node
        assert s["cluster"]["live"] == list(NODES), node
    requested = Counter(url_of(r, model.port) for r in page_requests(log))
    assert set(requested) == expected, f"never fetched: {sorted(expected - set(requested))[:5]}"
    stored = Counter(u for urls in pages.values() for u in urls)
    assert set(stored) == expected, f"lost: {sorted(expected - set(stored))[:5]}"
    assert [u for u, n in stored.items() if n > 1] == [], "a page stored by two machines"
    repeated = {u for u, n in requested.items() if n > 1}
    assert not repeated & set(at_crash), "a page c had stored was fetched again"
    ips = {r.host: r.ip for r in log}
    assert all(of_c(host(u)) or of_c(ips[host(u)]) for u in repeated), f"fetched twice, not c's: {sorted(repeated)[:5]}"
    check_politeness(log)
    print(f"reachable {len(expected)}: a stored {len(pages['a'])}, b {len(pages['b'])}, c {len(pages['c'])} "
          f"({len(at_crash)} before the kill); fetched twice {len(repeated)}; joins "
          f"{ {n: s['cluster']['joins'] for n, s in stats.items()} }, rejoins {stats['a']['cluster']['rejoins']}")


@pytest.mark.parametrize("departure", ["take_over", "adopt"])
@pytest.mark.parametrize("joining", [ASKING, HANDOVER])
def test_a_newcomer_killed_while_joining_and_resumed_joins_again(tmp_path: Path, joining: str, departure: str) -> None:
    """c is killed (its whole tree) as soon as its manifest names it a member (its entry asks to join), and
    started again with ``--resume`` at once; or once a hands its hosts over, and started again once a and b
    took it out of their rings. It is not live on its own manifest's ring, so it joins again (the turn, its
    agents owning no host until they read the archives)."""
    check_c_resumed(*c_killed_and_resumed(tmp_path, joining, departure))


def test_a_newcomer_killed_after_it_joined_rejoins_like_any_member(tmp_path: Path) -> None:
    """c joins and crawls 20 pages of its hosts, is killed (its whole tree); a and b take its hosts over and
    crawl some; c, started again with ``--resume``, rejoins: they hand its hosts back."""
    model, expected, log, stats, pages, at_crash = c_killed_and_resumed(tmp_path, None, "take_over")
    assert at_crash, "c must have stored pages before the kill"
    assert all(s["cluster"]["rejoins"] == [NEWCOMER] for s in stats.values()), "c did not rejoin"
    assert [d["gone"] for node in FIRST for d in stats[node]["cluster"]["departures"]] == [["c"], ["c"]]
    check_c_resumed(model, expected, log, stats, pages, at_crash)


def test_a_newcomer_killed_after_it_joined_is_adopted_then_takes_its_agents_back(tmp_path: Path) -> None:
    """The same with the default departure: one of a and b adopts c and crawls its hosts in c's place; c,
    started again with ``--resume``, takes its agents back; no ring changes after its join."""
    model, expected, log, stats, pages, at_crash = c_killed_and_resumed(tmp_path, None, "adopt")
    assert at_crash, "c must have stored pages before the kill"
    assert sorted(a["node"] for node in FIRST for a in stats[node]["cluster"]["adoptions"]) == [NEWCOMER]
    assert all(s["cluster"]["rejoins"] == [] and s["cluster"]["departures"] == [] for s in stats.values())
    check_c_resumed(model, expected, log, stats, pages, at_crash)
