"""End to end: `crawl run` crawls the in-vitro web over real sockets and real DNS on loopback.

Judged from the server's side (its request log, with monotonic times) and from the WARC files
read back with warcio.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from bench.invitro import WebParams
from frontier.urls import canonicalize
from tests.invitro_harness import (
    USER_AGENT,
    WebThread,
    allowed,
    by_key,
    gaps,
    page_requests,
    reachable,
    robots_for,
    run_crawl,
    url_of,
    when_requests,
)

HOST_DELAY = 0.2
IP_DELAY = 0.05
CRAWL_DELAY = 0.4
SMALL_WEB = WebParams(
    hosts=24, hosts_per_ip=4, mean_pages=10, max_pages=30, mean_links=20, robots_crawl_delay=CRAWL_DELAY,
    robots_crawl_delay_share=0.15, robots_disallow_share=0.3, page_bytes=6000,
)


@pytest.fixture(scope="module")
def full_crawl(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One complete crawl of a small web, shared by the assertions below."""
    tmp = tmp_path_factory.mktemp("full")
    web = WebThread(SMALL_WEB, tmp / "requests.jsonl")
    seeds = web.web.seeds[:4]
    try:
        result = run_crawl(
            tmp / "out", seeds, dns=web.web.dns_address,
            settings=[f"politeness.host_delay={HOST_DELAY}", f"politeness.ip_delay={IP_DELAY}", "engine.fetchers=50"],
        )
    finally:
        log = web.stop()
    return web.model, seeds, log, result


def test_the_crawl_ends_by_itself(full_crawl) -> None:  # type: ignore[no-untyped-def]
    _, _, _, result = full_crawl
    assert result.stats["stop_reason"] == "done"


def test_every_reachable_allowed_page_is_fetched_exactly_once(full_crawl) -> None:  # type: ignore[no-untyped-def]
    model, seeds, log, _ = full_crawl
    requested = [url_of(r, model.port) for r in page_requests(log)]
    duplicates = {u for u in requested if requested.count(u) > 1}
    assert not duplicates, f"fetched more than once: {sorted(duplicates)[:5]}"
    expected = reachable(model, seeds)
    assert len(expected) > 100, "the test web is too small to mean anything"
    assert set(requested) == expected, (
        f"missing {sorted(expected - set(requested))[:5]}, unexpected {sorted(set(requested) - expected)[:5]}"
    )


def test_no_two_requests_to_a_host_or_ip_closer_than_the_delays(full_crawl) -> None:  # type: ignore[no-untyped-def]
    _, _, log, _ = full_crawl
    for host, records in by_key(log, "host").items():
        assert min(gaps(records), default=HOST_DELAY) >= HOST_DELAY, f"host delay violated on {host}"
    for ip, records in by_key(log, "ip").items():
        assert min(gaps(records), default=IP_DELAY) >= IP_DELAY, f"IP delay violated on {ip}"
        assert len({r.host for r in records}) > 1, "each IP should carry several hosts in this web"


def test_robots_txt_comes_first_and_is_obeyed(full_crawl) -> None:  # type: ignore[no-untyped-def]
    model, _, log, _ = full_crawl
    delayed = disallowing = 0
    for host, records in by_key(log, "host").items():
        assert records[0].target == "/robots.txt", f"{host}: first request was {records[0].target}"
        assert sum(r.target == "/robots.txt" for r in records) == 1
        rules = robots_for(model, host)
        for r in records[1:]:
            assert allowed(rules, url_of(r, model.port)), f"{host}{r.target} is disallowed by robots.txt"
        if rules is False:
            assert len(records) == 1, "a host whose robots.txt answers 5xx must not be crawled"
        elif not isinstance(rules, bool):
            disallowing += not rules.can_fetch(f"http://{host}/private/x", USER_AGENT)
            if rules.crawl_delay(USER_AGENT):
                delayed += 1
                assert min(gaps(records), default=CRAWL_DELAY) >= CRAWL_DELAY, f"Crawl-delay ignored on {host}"
    assert delayed and disallowing, "the test web should exercise Crawl-delay and Disallow"


def test_warc_holds_every_response_as_the_server_sent_it(full_crawl) -> None:  # type: ignore[no-untyped-def]
    model, _, log, result = full_crawl
    files = sorted((result.out / "warc").glob("*.warc.gz"))
    assert files, "no finished WARC file"
    responses = requests = 0
    concurrent: set[str] = set()
    response_ids: set[str] = set()
    for path in files:
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                kind = record.rec_headers.get_header("WARC-Type")
                if kind == "request":
                    requests += 1
                    concurrent.add(record.rec_headers.get_header("WARC-Concurrent-To"))
                elif kind == "response":
                    responses += 1
                    response_ids.add(record.rec_headers.get_header("WARC-Record-ID"))
                    uri = record.rec_headers.get_header("WARC-Target-URI")
                    host_port, target = uri.split("//", 1)[1].split("/", 1)
                    expected = model.respond(host_port.rsplit(":", 1)[0], "/" + target)
                    payload = record.content_stream().read()  # content-encoding undone by warcio
                    assert payload == expected.body, f"payload of {uri} differs from what the server sent"
                    assert record.http_headers.get_statuscode() == str(expected.status)
                elif kind == "revisit":  # content stored before under another URL (store/archive.py)
                    responses += 1
                    response_ids.add(record.rec_headers.get_header("WARC-Record-ID"))
    assert responses == len(log), "one response record per request the server answered"
    assert requests == responses and concurrent == response_ids, "request records must point at their responses"


def test_stats_json_agrees_with_the_server(full_crawl) -> None:  # type: ignore[no-untyped-def]
    _, _, log, result = full_crawl
    stats = result.stats
    assert stats["pages"] == len(page_requests(log))
    assert stats["robots"] == len(log) - len(page_requests(log))
    assert stats["bytes"] == sum(r.bytes for r in log)


@pytest.fixture
def big_web(tmp_path: Path):  # type: ignore[no-untyped-def]
    web = WebThread(WebParams(hosts=200, mean_pages=50), tmp_path / "requests.jsonl")
    yield web
    web.stop()


def test_max_pages_stops_the_crawl_exactly(tmp_path: Path, big_web: WebThread) -> None:
    result = run_crawl(tmp_path / "out", big_web.web.seeds, dns=big_web.web.dns_address,
                       settings=["politeness.host_delay=0.01", "politeness.ip_delay=0"], args=["--max-pages", "37"])
    log = big_web.stop()
    assert result.stats["stop_reason"] == "max_pages"
    assert result.stats["pages"] == 37 == len(page_requests(log))


def test_max_seconds_stops_the_crawl(tmp_path: Path, big_web: WebThread) -> None:
    result = run_crawl(tmp_path / "out", big_web.web.seeds, dns=big_web.web.dns_address,
                       settings=["politeness.host_delay=1", "politeness.ip_delay=0.1"], args=["--max-seconds", "1.5"])
    assert result.stats["stop_reason"] == "max_seconds"
    assert 1.5 <= result.stats["elapsed_seconds"] < 5
    assert result.stats["pages"] > 0


def test_sigterm_stops_cleanly_and_stores_every_fetched_page(tmp_path: Path, big_web: WebThread) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(big_web.web.seeds))
    enough = when_requests(big_web, 60)
    child = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "run", "--seeds", str(seeds), "--out", str(tmp_path / "out"),
         "--dns", big_web.web.dns_address, "--set", 'network.allow_networks=["127.0.0.0/8"]',
         "--set", "politeness.host_delay=0.05", "--set", "politeness.ip_delay=0", "--set", 'engine.progress="off"'],
        stderr=subprocess.PIPE, text=True,
    )
    assert enough.wait(60), "the crawl did not get going"
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    log = big_web.stop()
    stored = 0
    for path in (tmp_path / "out" / "warc").glob("*.warc.gz"):
        with path.open("rb") as f:
            stored += sum(r.rec_type in ("response", "revisit") for r in ArchiveIterator(f))
    assert not list((tmp_path / "out" / "warc").glob("*.open")), "a WARC file was left open"
    answered = [r for r in log if not r.aborted]
    assert stored == len(answered) >= 60


def test_loopback_is_refused_unless_allowed(tmp_path: Path, big_web: WebThread) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(big_web.web.seeds[:3]))
    proc = subprocess.run(
        [sys.executable, "-m", "engine.cli", "run", "--seeds", str(seeds), "--out", str(tmp_path / "out"),
         "--dns", big_web.web.dns_address, "--set", 'engine.progress="off"', "--max-seconds", "30"],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    log = big_web.stop()
    assert log == [], "the crawler connected to a loopback address it was not allowed"
    import orjson

    stats = orjson.loads((tmp_path / "out" / "stats.json").read_bytes())
    assert stats["refused_addresses"] == 3 and stats["stop_reason"] == "done"


def test_through_the_proxy_without_dns(tmp_path: Path) -> None:
    web = WebThread(SMALL_WEB, tmp_path / "requests.jsonl")
    try:
        result = run_crawl(
            tmp_path / "out", web.web.seeds[:2], dns="127.0.0.1:9",  # nothing answers there: names stand in for IPs
            settings=["politeness.host_delay=0.05", "politeness.ip_delay=0", "dns.timeout=0.2"],
            args=["--proxy", f"http://{web.web.proxy_address}", "--max-pages", "40"],
        )
    finally:
        log = web.stop()
    assert result.stats["pages"] == 40
    assert log and all(r.proxy for r in log), "every request must go through the proxy"
    for host, records in by_key(log, "host").items():
        assert min(gaps(records), default=1) >= 0.05


def test_redirects_are_recorded_and_their_targets_enqueued(full_crawl) -> None:  # type: ignore[no-untyped-def]
    model, _, log, result = full_crawl
    redirects = [r for r in log if r.status in (301, 302)]
    assert redirects, "the test web should contain redirects"
    fetched = {url_of(r, model.port) for r in log}
    for r in redirects:
        target = canonicalize(model.respond(r.host, r.target).links[0])
        if allowed(robots_for(model, r.host), target):
            assert target in fetched, f"redirect target {target} was not fetched"
    assert result.stats["redirects"] == len(redirects)




def test_scope_host_and_max_urls_per_host(tmp_path: Path) -> None:
    web = WebThread(SMALL_WEB, tmp_path / "requests.jsonl")
    seeds = web.web.seeds[:3]
    try:
        result = run_crawl(
            tmp_path / "out", seeds, dns=web.web.dns_address,
            settings=["politeness.host_delay=0.02", "politeness.ip_delay=0", 'scope.mode="host"',
                      "scope.max_urls_per_host=5"],
        )
    finally:
        log = web.stop()
    seed_hosts = {s.split("//", 1)[1].split(":", 1)[0] for s in seeds}
    assert {r.host for r in log} == seed_hosts, "scope=host must keep the crawl on the seed hosts"
    for host, records in by_key(page_requests(log), "host").items():
        assert len(records) <= 5, f"{host}: {len(records)} pages fetched, limit 5"
    assert result.stats["frontier"]["drops"].get("scope", 0) > 0


def test_crawl_run_without_seeds_crawls_the_in_vitro_web(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "engine.cli", "run", "--out", str(tmp_path / "out"), "--max-seconds", "3",
         "--set", "politeness.host_delay=0.5"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "in-vitro web" in proc.stderr
    import orjson

    stats = orjson.loads((tmp_path / "out" / "stats.json").read_bytes())
    assert stats["stop_reason"] == "max_seconds" and "max_seconds" in proc.stderr
    assert stats["pages"] > 0 and stats["robots"] > 0
    records = 0
    for path in (tmp_path / "out" / "warc").glob("*.warc.gz"):
        with path.open("rb") as f:
            records += sum(r.rec_type in ("response", "revisit") for r in ArchiveIterator(f))
    assert records == stats["pages"] + stats["robots"]
    served = [line for line in (tmp_path / "out" / "invitro" / "requests.jsonl").read_text().splitlines() if line]
    assert len(served) == records, "the in-vitro child must have been stopped with its log flushed"


def test_a_resumed_demo_crawl_serves_its_web_where_the_queued_urls_point(tmp_path: Path) -> None:
    import orjson

    out = tmp_path / "out"
    for args in (["--max-pages", "150"], ["--resume", "--max-pages", "300"]):
        proc = subprocess.run([sys.executable, "-m", "engine.cli", "run", "--out", str(out), *args,
                               "--set", "politeness.host_delay=0.05"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
    stats = orjson.loads((out / "stats.json").read_bytes())
    assert stats["stop_reason"] == "max_pages" and stats["pages"] == 300
    assert stats["errors"] == {}, "the URLs queued before the resume name the web's first port"


def test_parse_and_store_filters_decide_what_is_parsed_and_archived(tmp_path: Path) -> None:
    web = WebThread(SMALL_WEB, tmp_path / "requests.jsonl")
    seeds = web.web.seeds[:3]
    try:
        result = run_crawl(tmp_path / "out", seeds, dns=web.web.dns_address,
                           settings=["politeness.host_delay=0.01", "politeness.ip_delay=0", "engine.processes=1",
                                     'filters.parse="false"', 'filters.store="not content_type(text/html)"'])
    finally:
        log = web.stop()
    pages = page_requests(log)
    assert sorted(url_of(r, web.model.port) for r in pages) == sorted(canonicalize(s) for s in seeds), \
        "with nothing parsed, only the seeds are fetched"
    assert result.stats["store_filtered"] == len(pages)
    kinds = []
    for path in (tmp_path / "out" / "warc").glob("*.warc.gz"):
        with path.open("rb") as f:
            kinds += [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(f) if r.rec_type == "response"]
    assert kinds and all(uri.endswith("/robots.txt") for uri in kinds), "HTML pages were kept out of the archive"
