"""Two machines crawl one in-vitro web through one NATS JetStream server (issue 17), end to end.

One nats-server, started by the test on loopback; two ``crawl run --cluster URL --node a|b
--cluster-size 2`` process trees, each with its own output folder and one agent. Judged from
the web's request log and both machines' WARC files (warcio): every reachable page fetched once
in all, each host by one machine only (the one the ring over both machines' agents gives its IP), and
links crossing between the machines both ways; after a kill -9 of one machine's whole process
tree and its return with ``--resume``, nothing lost and only its cut fetches repeated; a machine
that stops stops the other. One machine's control API lists both; ``crawl stats`` adds up their
``stats.json`` files. The web has one host per IP; hosts of one IP on both machines by name are
``tests/test_cluster_ip.py``'s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.parse
from collections import Counter
from pathlib import Path

import orjson
import pytest

from bench.invitro import WebParams
from engine.cli import main as cli_main
from engine.ownership import GlobalRing
from engine.warc_cli import main as warc_main
from engine.warc_cli import read_member
from frontier.urls import canonicalize, split
from store import cdxj
from tests.invitro_harness import (
    WebThread,
    crawl_command,
    page_links,
    page_requests,
    reachable,
    url_of,
    when_requests,
)
from tests.browser import browser, watched_page
from tests.nats_server import nats_server
from tests.test_agents import check_politeness, records_at_crash, warc_records
from tests.test_control_crawl import TOKEN, Api

WEB = WebParams(hosts=24, hosts_per_ip=1, mean_pages=10, max_pages=24, mean_links=20, page_bytes=4000)
SETTINGS = ["politeness.host_delay=0.2", "politeness.ip_delay=0.05", "engine.fetchers=30",
            "engine.checkpoint_interval=0.3", "engine.processes=1", "cluster.crawl_id=\"two\""]
NODES = ("a", "b")


def start(tmp: Path, node: str, seeds: list[str], web: WebThread, broker: str, *extra: str) -> subprocess.Popen[str]:
    """Machine ``node``: a ``crawl run`` process tree of its own (its own session, for a kill -9 of all of it)."""
    args = ["--cluster", broker, "--node", node, "--cluster-size", "2", *extra]
    return subprocess.Popen(crawl_command(tmp / node, seeds, dns=web.web.dns_address, settings=SETTINGS, args=args),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "CRAWL_CONTROL_TOKEN": TOKEN})


def machines_seen(process: subprocess.Popen[str]) -> tuple[list[dict], list[list[str]], list[str]]:  # type: ignore[type-arg]
    """``GET /status``'s ``machines`` from the control API of a machine started with ``--control``, once
    it lists two (its URL is on stderr once the machines have joined; the view comes with the next beat);
    then, with that machine paused so the crawl cannot end meanwhile, the dashboard's machines table
    as headless Chromium renders it, and the page's console errors."""
    assert process.stderr is not None
    url = next(line.split(": ", 1)[1].strip() for line in process.stderr if line.startswith("control API: "))
    api, deadline = Api(url), time.monotonic() + 30
    while len(seen := api.json("GET", "/status")["machines"]) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # a poll of the API, which answers at once; the beat that fills it comes within 0.5 s
    api.json("POST", "/pause")
    try:
        with browser() as chromium:
            watched = watched_page(chromium)
            watched.page.goto(f"{url}/?token={urllib.parse.quote(TOKEN)}")
            watched.page.wait_for_function("() => document.querySelectorAll('#machines tbody tr').length >= 2",
                                           timeout=30_000)
            rows = [row.locator("td").all_inner_texts() for row in watched.page.locator("#machines tbody tr").all()]
    finally:
        api.json("POST", "/resume")
    return seen, rows, watched.errors  # type: ignore[return-value]


def finish(machines: dict[str, subprocess.Popen[str]]) -> None:
    errors = {}
    try:
        for node, process in machines.items():
            _, errors[node] = process.communicate(timeout=240)
    finally:
        for process in machines.values():  # every machine, whichever failed
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)
    for node, process in machines.items():
        assert process.returncode == 0, f"machine {node}: {errors[node]}"


def outcome(tmp: Path) -> tuple[dict[str, dict], dict[str, set[str]]]:  # type: ignore[type-arg]
    stats = {node: orjson.loads((tmp / node / "stats.json").read_bytes()) for node in NODES}
    pages = {node: {uri for kind, uri in warc_records(tmp / node) if kind in ("response", "revisit")
                    and not uri.endswith("/robots.txt")} for node in NODES}
    return stats, pages


@pytest.fixture(scope="module")
def two_machines(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("machines")
    web = WebThread(WEB, tmp / "requests.jsonl")
    seeds = web.web.seeds[:6]
    try:
        with nats_server(tmp / "nats") as broker:
            machines = {node: start(tmp, node, seeds, web, broker.url, *(["--control", "127.0.0.1:0"] if node == "a" else []))
                        for node in NODES}
            try:
                seen = machines_seen(machines["a"])
            finally:
                finish(machines)
    finally:
        log = web.stop()
    stats, pages = outcome(tmp)
    return web.model, seeds, log, stats, pages, tmp, seen


def host(url: str) -> str:
    return split(url)[0].split("//", 1)[1].rsplit(":", 1)[0]


def test_two_machines_fetch_every_page_once_in_all_and_stop_together(two_machines) -> None:  # type: ignore[no-untyped-def]
    model, seeds, log, stats, pages, *_ = two_machines
    assert {s["stop_reason"] for s in stats.values()} == {"done"}
    requested = Counter(url_of(r, model.port) for r in page_requests(log))
    assert not [u for u, n in requested.items() if n > 1], "a page was fetched twice"
    assert set(requested) == reachable(model, seeds)
    assert all(pages.values()), "both machines must have crawled"
    assert not pages["a"] & pages["b"], "a page is in both machines' WARC files"
    assert pages["a"] | pages["b"] == set(requested)


def test_each_host_is_crawled_by_the_machine_the_global_ring_gives_its_ip(two_machines) -> None:  # type: ignore[no-untyped-def]
    model, _, log, stats, pages, *_ = two_machines
    ring = GlobalRing([("a", 1), ("b", 1)])
    assert stats["a"]["cluster"]["members"] == stats["b"]["cluster"]["members"] == [["a", 1], ["b", 1]]
    for node, urls in pages.items():
        for url in urls:
            assert ring.agents_list[ring.owner(model.ip_of(host(url)))][0] == node, f"{url} crawled by {node}"
    check_politeness(log)


def test_links_cross_between_the_machines_both_ways(two_machines) -> None:  # type: ignore[no-untyped-def]
    model, seeds, log, stats, pages, *_ = two_machines
    for node in NODES:
        assert stats[node]["cluster"]["messages_sent"] > 0 and stats[node]["cluster"]["messages_received"] > 0
    seeds = {canonicalize(s) for s in seeds}
    for node, urls in pages.items():
        # a page this machine fetched before any of its earlier pages linked to it (nor is it a seed):
        # it can only have learnt of it from the other machine
        known: set[str | None] = set()
        from_the_other = []
        for record in sorted(page_requests(log), key=lambda r: r.start):
            url = url_of(record, model.port)
            if url not in urls:
                continue
            if url not in known and url not in seeds:
                from_the_other.append(url)
            known.update(canonicalize(link) for link, _ in page_links(model.respond(record.host, record.target)))
        assert from_the_other, f"machine {node} fetched no page first discovered by the other"


def test_each_machine_names_its_archive_with_its_node_and_one_index_merges_both(two_machines) -> None:  # type: ignore[no-untyped-def]
    *_, pages, tmp, _ = two_machines
    for node in NODES:
        names = [p.name for p in (tmp / node / "warc").iterdir() if p.name.endswith((".warc.gz", ".cdxj"))]
        assert names and all(name.startswith(f"crawl-{node}-a0-") for name in names), names
    assert warc_main(["cdxj-merge", *(str(tmp / node) for node in NODES), "--out", str(tmp / "index.cdxj"),
                      "--relative-to", str(tmp)]) == 0
    entries = [cdxj.parse_line(line) for line in (tmp / "index.cdxj").read_bytes().splitlines()]
    assert [(e.key, e.timestamp) for e in entries] == sorted((e.key, e.timestamp) for e in entries)
    indexed = Counter((e.filename.split("/", 1)[0], e.url) for e in entries if not e.url.endswith("/robots.txt"))
    assert set(indexed.values()) == {1} and set(indexed) == {(node, url) for node in NODES for url in pages[node]}
    for e in entries[:: max(1, len(entries) // 20)]:
        assert f"WARC-Target-URI: {e.url}\r\n".encode() in read_member(tmp / e.filename, e.offset, e.length)


def test_the_control_api_of_one_machine_lists_every_machine(two_machines) -> None:  # type: ignore[no-untyped-def]
    *_, (seen, _, _) = two_machines
    assert [(m["node"], m["agents"]) for m in seen] == [("a", 1), ("b", 1)]
    for m in seen:
        assert m["state"] in ("crawling", "quiet") and m["beat"] > 0 and 0 <= m["beat_age_seconds"] < 10
        assert isinstance(m["pages"], int)


def test_the_dashboard_of_one_machine_has_a_row_per_machine(two_machines) -> None:  # type: ignore[no-untyped-def]
    *_, (_, rows, errors) = two_machines
    assert [(row[0], row[1]) for row in rows] == [("a", "1"), ("b", "1")]  # node, agents
    assert errors == []


# -- kill -9 of one machine mid-crawl, then it comes back with --resume --------------------------------------


@pytest.fixture(scope="module")
def machine_crash(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("crash")
    web = WebThread(WEB, tmp / "requests.jsonl")
    seeds = web.web.seeds[:6]
    expected = reachable(web.model, seeds)
    try:
        with nats_server(tmp / "nats") as broker:
            answered = when_requests(web, len(expected) // 2)
            a, b = (start(tmp, node, seeds, web, broker.url) for node in NODES)
            assert answered.wait(120), "the crawl did not get half way"
            os.killpg(b.pid, signal.SIGKILL)  # machine b's supervisor and agent at once; a goes on
            b.wait(30)
            stored_at_crash = records_at_crash(tmp / "b")
            finish({"a": a, "b": start(tmp, "b", seeds, web, broker.url, "--resume")})
    finally:
        log = web.stop()
    stats, pages = outcome(tmp)
    return web.model, expected, log, stats, pages, stored_at_crash


def test_a_machine_killed_and_resumed_loses_no_link_and_refetches_only_its_fetches_in_flight(machine_crash) -> None:  # type: ignore[no-untyped-def]
    model, expected, log, stats, pages, stored_at_crash = machine_crash
    assert {s["stop_reason"] for s in stats.values()} == {"done"}
    crashed = {u for u in stored_at_crash if not u.endswith("/robots.txt")}
    assert 0 < len(crashed) < len(pages["b"]), "b must have crawled before the crash and after its return"
    requested = Counter(url_of(r, model.port) for r in page_requests(log))
    assert set(requested) == expected, f"missing: {sorted(expected - set(requested))[:5]}"
    assert pages["a"] | pages["b"] >= expected
    assert not pages["a"] & pages["b"], "a page is in both machines' WARC files"
    repeated = {u for u, n in requested.items() if n > 1}
    assert not repeated & stored_at_crash, "a page b had stored was fetched again"
    assert all(host(u) in {host(p) for p in pages["b"]} for u in repeated), "only b's fetches were cut"


def test_a_machine_that_stops_stops_the_others(tmp_path: Path) -> None:
    web = WebThread(WEB, tmp_path / "requests.jsonl")
    try:
        with nats_server(tmp_path / "nats") as broker:
            finish({"a": start(tmp_path, "a", web.web.seeds[:6], web, broker.url, "--max-pages", "20"),
                    "b": start(tmp_path, "b", web.web.seeds[:6], web, broker.url)})
    finally:
        web.stop()
    stats, _ = outcome(tmp_path)
    assert stats["a"]["stop_reason"] == "max_pages"
    assert stats["b"]["stop_reason"] == "machine a: max_pages"  # not left waiting for a for ever


def test_crawl_stats_adds_up_the_machines_stats_json(two_machines) -> None:  # type: ignore[no-untyped-def]
    *_, stats, pages, tmp, _ = two_machines
    assert cli_main(["stats", *(str(tmp / node) for node in NODES), "--out", str(tmp / "cluster-stats.json")]) == 0
    summary = orjson.loads((tmp / "cluster-stats.json").read_bytes())
    responses = [uri for node in NODES for kind, uri in warc_records(tmp / node)
                 if kind in ("response", "revisit") and not uri.endswith("/robots.txt")]
    assert summary["pages"] == sum(s["pages"] for s in stats.values()) == len(responses) == len(pages["a"] | pages["b"])
    for key in ("bytes", "stored", "robots", "links"):
        assert summary[key] == sum(s[key] for s in stats.values()), key
    for code in {c for s in stats.values() for c in s["statuses"]}:
        assert summary["statuses"][code] == sum(s["statuses"].get(code, 0) for s in stats.values())
    assert summary["cpu_seconds"] == pytest.approx(sum(s["cpu_seconds"] for s in stats.values()))
    assert summary["elapsed_seconds"] == max(s["elapsed_seconds"] for s in stats.values())
    assert summary["stop_reasons"] == ["done"]
    assert [(m["node"], m["pages"], m["messages_sent"]) for m in summary["machines"]] == [
        (node, stats[node]["pages"], stats[node]["cluster"]["messages_sent"]) for node in NODES]
    # the same machine twice would count it twice: refused
    assert cli_main(["stats", str(tmp / "a"), str(tmp / "a")]) == 2
