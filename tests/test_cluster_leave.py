"""A machine leaving a crawl over several (issue 17, item 4), end to end: kill -9 of its whole
process tree mid-crawl, and the survivors finish without it, taking its hosts over
(``cluster.departure = "take_over"``; the adoption, the default, is ``tests/test_cluster_adopt.py``).

Three ``crawl run --cluster`` machines (a, b, c; one agent each, their output folders side by side
under one root: the shared storage) crawl one in-vitro web through one nats-server on loopback,
with a heartbeat TTL of 2 s. Once a third of the reachable pages are answered, machine b is
killed with its whole process tree. Judged from the web's request log and the WARC files
(warcio): the survivors end the crawl ``done``; every reachable page was requested and is stored
exactly once across the three machines' archives (b's as the kill left them); no page b had
stored was fetched again, and the only pages fetched twice are of b's hosts (its fetches in
flight); no host or IP delay was violated across machines; and b's hosts were fetched again by
the survivors within 30 s of the kill (the TTL, then the takeover). b, started again with
``--resume`` once the others took its hosts, rejoins: they hand its hosts back, it crawls them
again, and all three end ``done`` with still every page stored once. An agent of a survivor
killed alone around the takeover is restarted on the new ring. And a machine cut off from the
server (frozen with SIGSTOP) stops fetching within the TTL: the fence.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench.invitro import WebParams
from engine.cluster import HEARTBEAT
from engine.ownership import GlobalRing
from tests.invitro_harness import WebThread, crawl_command, page_requests, reachable, url_of, when_logged, when_requests
from tests.nats_server import nats_server
from tests.test_agents import check_politeness, records_at_crash, warc_records
from tests.test_cluster_crawl import host

WEB = WebParams(hosts=30, hosts_per_ip=1, mean_pages=20, max_pages=40, mean_links=20, page_bytes=4000)
TTL = 2.0
SETTINGS = ["politeness.host_delay=0.2", "politeness.ip_delay=0.05", "engine.fetchers=30",
            "engine.checkpoint_interval=0.3", "engine.processes=1", "cluster.crawl_id=\"leave\"", f"cluster.ttl={TTL}",
            "cluster.departure=\"take_over\""]  # the takeover, here and in the tests built on these (adoption: test_cluster_adopt)
NODES = ("a", "b", "c")
IN_FLIGHT = 0.5  # seconds after the kill within which a request logged was b's, in flight
TAKEOVER_TARGET = 30.0  # seconds from the kill to the survivors' first fetch of one of its hosts


def start(root: Path, node: str, seeds: list[str], web: WebThread, broker: str, *extra: str,
          size: int = len(NODES)) -> subprocess.Popen[str]:
    """Machine ``node``: a ``crawl run`` process tree in a session of its own, its folder ``root/node``,
    its stderr in ``root/node.stderr`` (a file: read once it exited, and there to read if it failed)."""
    args = ["--cluster", broker, "--node", node, "--cluster-size", str(size), *extra]
    with open(root / f"{node}.stderr", "a") as stderr:
        return subprocess.Popen(crawl_command(root / node, seeds, dns=web.web.dns_address, settings=SETTINGS, args=args),
                                stdout=subprocess.DEVNULL, stderr=stderr, text=True, start_new_session=True)


def finish(process: subprocess.Popen[str], root: Path, node: str, timeout: float) -> str:
    """Wait for machine ``node`` to exit; what it wrote on stderr."""
    process.wait(timeout)
    return (root / f"{node}.stderr").read_text()


def said(root: Path, nodes: Sequence[str] = NODES, lines: int = 15) -> str:
    """The last ``lines`` lines each machine wrote on its stderr: what a failed wait shows, since a
    machine that stalled or died says why there."""
    def tail(node: str) -> str:
        path = root / f"{node}.stderr"
        return "\n".join(path.read_text().splitlines()[-lines:]) if path.exists() else "(no stderr file)"
    return "\n".join(f"--- {node}.stderr\n{tail(node)}" for node in nodes)


def kill_leftovers(machines: dict[str, subprocess.Popen[str]]) -> None:
    """Every machine still running at the end of a test (one that failed), with its whole tree."""
    for process in machines.values():
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)


def wait_manifest(out: Path, live: list[str], timeout: float) -> bool:
    """Whether machine ``out``'s manifest names ``live`` as the live machines within ``timeout`` (the
    supervisor rewrites it when a machine leaves; a poll of a small file, bounded by the deadline)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if orjson.loads((out / "crawl.json").read_bytes()).get("live") == live:
            return True
        time.sleep(0.05)
    return False


RING = GlobalRing([(node, 1) for node in NODES])


def of_b(ip: str) -> bool:
    """A host at ``ip`` is b's: its IP's machine by the ring over all three (``LinkRouter.hand_off``)."""
    return RING.agents_list[RING.owner(ip)][0] == "b"


def requests_after(web: WebThread, since: float, n: int, match: Callable[[str, str], bool]) -> threading.Event:
    """Set once the web answered ``n`` requests that began after ``since`` to hosts ``match(host, ip)``."""
    seen = [0]

    def counts(entry: dict[str, object]) -> bool:
        if match(str(entry["host"]), str(entry["ip"])) and float(entry["start"]) > since:  # type: ignore[arg-type]
            seen[0] += 1
        return seen[0] >= n

    return when_logged(web, counts)


@dataclass
class ThreeMachines:
    """a, b and c crawling one web through one broker, their folders under ``root``; ``log`` is the
    web's request log once the block of :func:`three_machines` ended."""

    root: Path
    web: WebThread
    seeds: list[str]
    expected: set[str]
    broker: str
    machines: dict[str, subprocess.Popen[str]]
    extra: tuple[str, ...] = ()  # more arguments of every machine's command line
    log: list[Any] = field(default_factory=list)

    def kill_b_and_bring_it_back(self) -> tuple[float, list[str]]:
        """Once a third of the pages are answered, kill b's whole tree (supervisor and agent at once);
        once a has taken it out of its ring and the survivors crawled 10 pages of its hosts, start it
        again with ``--resume``. Returns the time of the kill and what b's archive held then."""
        root, web, machines = self.root, self.web, self.machines
        assert when_requests(web, len(self.expected) // 3).wait(120), "the crawl did not get a third of the way"
        os.killpg(machines["b"].pid, signal.SIGKILL)
        killed = time.monotonic()
        machines["b"].wait(30)
        stored_at_crash = records_at_crash(root / "b")
        assert wait_manifest(root / "a", ["a", "c"], 60), "a never took b out of its ring"
        assert requests_after(web, killed, 10, lambda _, ip: of_b(ip)).wait(60), "the survivors did not crawl b's hosts"
        machines["b"] = start(root, "b", self.seeds, web, self.broker, *self.extra, "--resume")
        return killed, stored_at_crash

    def stored(self, nodes: Sequence[str]) -> dict[str, list[str]]:
        """The pages (responses and revisits, robots.txt left out) in each machine's WARC files."""
        return {node: [uri for kind, uri in warc_records(self.root / node) if kind in ("response", "revisit")
                       and not uri.endswith("/robots.txt")] for node in nodes}


@contextmanager
def three_machines(root: Path, params: WebParams = WEB, extra: tuple[str, ...] = ()) -> Iterator[ThreeMachines]:
    """Start a, b and c (``extra`` on their command lines) on an in-vitro web (its first 6 home pages the
    seeds) and a nats-server; at the end of the block, kill any machine still running and stop the web."""
    web = WebThread(params, root / "requests.jsonl")
    seeds = web.web.seeds[:6]
    crawl = None
    try:
        with nats_server(root / "nats") as broker:
            crawl = ThreeMachines(root, web, seeds, reachable(web.model, seeds), broker.url,
                                  {node: start(root, node, seeds, web, broker.url, *extra) for node in NODES}, extra)
            try:
                yield crawl
            finally:
                kill_leftovers(crawl.machines)
    finally:
        log = web.stop()
        if crawl is not None:
            crawl.log = log


@pytest.fixture(scope="module")
def machine_gone(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("leave")
    errors: dict[str, str] = {}
    with three_machines(root) as crawl:
        killed, stored_at_crash = crawl.kill_b_and_bring_it_back()
        rejoined = time.monotonic()
        for node in NODES:
            errors[node] = finish(crawl.machines[node], root, node, 240)
    for node in NODES:
        assert crawl.machines[node].returncode == 0, f"machine {node}: {errors[node]}"
    stats = {node: orjson.loads((root / node / "stats.json").read_bytes()) for node in NODES}
    at_crash = [u for u in stored_at_crash if not u.endswith("/robots.txt")]
    return crawl.web.model, crawl.expected, crawl.log, stats, crawl.stored(NODES), killed, (rejoined, at_crash)


def b_hosts(model, log) -> set[str]:  # type: ignore[no-untyped-def]
    return {r.host for r in log if of_b(r.ip)}


def test_the_survivors_finish_with_every_reachable_page_stored_once(machine_gone) -> None:  # type: ignore[no-untyped-def]
    model, expected, log, stats, pages, *_ = machine_gone
    assert {s["stop_reason"] for s in stats.values()} == {"done"}
    assert all(s["cluster"]["live"] == list(NODES) for s in stats.values())
    assert [d["gone"] for s in stats.values() for d in s["cluster"]["departures"]] == [["b"], ["b"]]
    requested = Counter(url_of(r, model.port) for r in page_requests(log))
    assert set(requested) == expected, f"never fetched: {sorted(expected - set(requested))[:5]}"
    stored = Counter(u for node in NODES for u in pages[node])
    assert set(stored) == expected, f"lost: {sorted(expected - set(stored))[:5]}"
    assert [u for u, n in stored.items() if n > 1] == [], "a page stored by two machines"


def test_no_page_b_stored_is_fetched_again_and_only_its_fetches_in_flight_are(machine_gone) -> None:  # type: ignore[no-untyped-def]
    model, expected, log, stats, pages, killed, (_, at_crash) = machine_gone
    assert at_crash, "b must have stored pages before the kill"
    requested = Counter(url_of(r, model.port) for r in page_requests(log))
    repeated = {u for u, n in requested.items() if n > 1}
    assert not repeated & set(at_crash), "a page b had stored was fetched again"
    hosts = b_hosts(model, log)
    assert {host(u) for u in repeated} <= hosts, "a page of a live machine's host fetched twice"
    assert len(repeated) <= 30, "more repeats than b had fetchers"  # engine.fetchers
    skipped = sum(t["skipped"] for s in stats.values() for agent in s["agents"] for t in agent.get("takeovers", []))
    assert skipped >= len(at_crash), "the survivors' skip sets must hold every page b stored"
    print(f"reachable {len(expected)}, stored by b before the kill {len(at_crash)}, in all {len(pages['b'])}, "
          f"by a {len(pages['a'])}, by c {len(pages['c'])}; fetched twice {len(repeated)} (b's fetches in flight); "
          f"skipped {skipped}")


def test_b_hosts_are_crawled_again_within_30_s_with_no_politeness_violation(machine_gone) -> None:  # type: ignore[no-untyped-def]
    model, expected, log, stats, pages, killed, (rejoined, _) = machine_gone
    check_politeness(log)  # every host and IP, across the three machines
    hosts = b_hosts(model, log)
    # b's own requests in flight at the kill can be logged just after it (the head complete): none of the
    # survivors' can come before b's entry expired, a TTL later
    after = sorted(r.start for r in log if r.host in hosts and killed + IN_FLIGHT < r.start < rejoined)
    assert after, "no host of b was fetched after the kill"
    takeover = after[0] - killed
    print(f"b's hosts fetched again {takeover:.2f} s after the kill (TTL {TTL:g} s)")
    assert TTL - HEARTBEAT <= takeover < TAKEOVER_TARGET  # not before its entry could expire (its last beat: before the kill)
    survivors = {u for node in ("a", "c") for u in pages[node]}
    assert {host(u) for u in survivors} & hosts, "the survivors stored no page of b's hosts"


def test_b_rejoins_and_crawls_its_hosts_again_after_the_others_handed_them_back(machine_gone) -> None:  # type: ignore[no-untyped-def]
    model, expected, log, stats, pages, killed, (rejoined, at_crash) = machine_gone
    assert stats["b"]["cluster"]["rejoins"] == ["b"]
    assert all(s["cluster"]["rejoins"] == ["b"] for node, s in stats.items() if node != "b")
    again = set(pages["b"]) - set(at_crash)
    assert again, "b stored nothing after it rejoined"
    # its own: by IP, or by name (those it had handed to another machine it takes back on rejoining)
    by_name = {host(u) for u in expected if RING.agents_list[RING.owner(host(u))][0] == "b"}
    assert {host(u) for u in again} <= b_hosts(model, log) | by_name, "b crawled a host that is not its own"
    handed = sum(t["handed_over"] for node in ("a", "c") for agent in stats[node]["agents"]
                 for t in agent.get("takeovers", []))
    assert handed > 0, "the survivors purged none of b's hosts"
    print(f"b stored {len(again)} pages after it rejoined; the survivors handed {handed} hosts back")


def test_an_agent_that_dies_after_a_takeover_is_restarted_on_the_new_ring(tmp_path: Path) -> None:
    """Two machines; b killed; once a took b's hosts over, a's agent is killed alone: the supervisor
    restarts it, it resumes from its checkpoint (taken right after the takeover, with the ring and the
    skip set) and is told the live machines again; the crawl ends with every page stored once."""
    web = WebThread(WEB, tmp_path / "requests.jsonl")
    seeds = web.web.seeds[:6]
    expected = reachable(web.model, seeds)
    try:
        with nats_server(tmp_path / "nats") as broker:
            answered = when_requests(web, len(expected) // 3)
            machines = {node: start(tmp_path, node, seeds, web, broker.url, size=2) for node in ("a", "b")}
            try:
                assert answered.wait(120), "the crawl did not get a third of the way"
                os.killpg(machines["b"].pid, signal.SIGKILL)
                machines["b"].wait(30)
                at_crash = [u for u in records_at_crash(tmp_path / "b") if not u.endswith("/robots.txt")]
                assert wait_manifest(tmp_path / "a", ["a"], 60), "a never took b out of its ring"
                agent = int(Path(f"/proc/{machines['a'].pid}/task/{machines['a'].pid}/children").read_text().split()[0])
                os.kill(agent, signal.SIGKILL)  # the agent alone: its supervisor restarts it
                error = finish(machines["a"], tmp_path, "a", 240)
            finally:
                kill_leftovers(machines)
    finally:
        web.stop()
    assert machines["a"].returncode == 0, error
    stats = orjson.loads((tmp_path / "a" / "stats.json").read_bytes())
    assert stats["stop_reason"] == "done" and stats["restarts"] == 1, error
    stored = Counter([*at_crash, *(uri for kind, uri in warc_records(tmp_path / "a")
                                   if kind in ("response", "revisit") and not uri.endswith("/robots.txt"))])
    assert set(stored) == expected, f"lost: {sorted(expected - set(stored))[:5]}"
    assert [u for u, n in stored.items() if n > 1] == [], "a page stored twice"


def test_a_machine_cut_off_from_the_server_stops_before_the_others_could_take_its_hosts(tmp_path: Path) -> None:
    """The fence: a machine that cannot put its entry for half the TTL stops its crawl (the server
    frozen with SIGSTOP here), so no host is fetched by it once its entry has expired."""
    web = WebThread(WEB, tmp_path / "requests.jsonl")
    try:
        with nats_server(tmp_path / "nats") as broker:
            started = when_requests(web, 20)
            args = ["--cluster", broker.url, "--node", "a", "--cluster-size", "1"]
            with open(tmp_path / "a.stderr", "w") as stderr:
                machine = subprocess.Popen(crawl_command(tmp_path / "a", web.web.seeds[:6], dns=web.web.dns_address,
                                                         settings=SETTINGS, args=args),
                                           stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
            try:
                assert started.wait(120), "the crawl did not start"
                os.kill(broker.process.pid, signal.SIGSTOP)
                frozen = time.monotonic()
                try:
                    machine.wait(60)
                finally:
                    os.kill(broker.process.pid, signal.SIGCONT)
            finally:
                if machine.poll() is None:
                    os.killpg(machine.pid, signal.SIGKILL)
                    machine.wait(30)
    finally:
        log = web.stop()
    stats = orjson.loads((tmp_path / "a" / "stats.json").read_bytes())
    assert machine.returncode == 1 and stats["stop_reason"].startswith("cut off"), (tmp_path / "a.stderr").read_text()
    last = max(r.end for r in log)
    print(f"last fetch ended {last - frozen:.2f} s after the server froze (fence {TTL / 2:g} s, TTL {TTL:g} s)")
    assert last - frozen < TTL, f"machine a fetched {last - frozen:.2f} s after it lost the server (TTL {TTL:g} s)"
