"""End to end: ``crawl run`` over an in-vitro web with duplicates, near-duplicates and hostile resources,
then ``crawl warc verify|cat|ls`` over its output. Judged from the WARC files read back with warcio."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import orjson
import pytest
from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

from bench.invitro import WebParams
from store import linkgraph
from engine.config import StoreConfig
from store.archive import NEAR_DUPLICATE_FIELD, Archive
from store.recovery import metadata_fields
from store.signature import exact_signature, html_signature
from store.warc import PROFILE_IDENTICAL, end_of_complete_members
from tests.invitro_harness import WebThread, page_links, page_requests, reachable, run_crawl, url_of
from tests.invitro_harness import crawl_command as run_command

LIMIT = 65536
WEB = WebParams(
    hosts=16, hosts_per_ip=4, mean_pages=8, max_pages=20, mean_links=10, page_bytes=4000, duplicate_share=0.25,
    hostile_share=0.3, bomb_bytes=1 << 27, big_bytes=1 << 19, robots_5xx_share=0.0, robots_disallow_share=0.0,
)


def crawl_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine.cli", "warc", *args], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("archive")
    web = WebThread(WEB, tmp / "requests.jsonl")
    model = web.model
    seeds = model.seeds(WEB.hosts)
    try:
        result = run_crawl(
            tmp / "out", seeds, dns=web.web.dns_address,
            settings=["engine.processes=1", "politeness.host_delay=0.02", "politeness.ip_delay=0",
                      "engine.fetchers=40", f"network.max_body_bytes={LIMIT}"],
        )
    finally:
        log = web.stop()
    records = {}
    for path in sorted((result.out / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f, check_digests="raise"):
                # the payload as stored (content-coding kept), after the HTTP head warcio has parsed
                payload = record.raw_stream.read() if record.rec_type in ("response", "revisit", "metadata") else b""
                key = (record.rec_type, record.rec_headers.get_header("WARC-Target-URI"))
                records[key] = (record.rec_headers, payload, record.http_headers)
    return model, seeds, log, result, records


def test_the_crawl_survives_everything_and_fetches_every_page_once(crawl) -> None:  # type: ignore[no-untyped-def]
    model, seeds, log, result, _ = crawl
    assert result.stats["stop_reason"] == "done" and not result.stats["errors"], result.process.stderr[-3000:]
    requested = [url_of(r, model.port) for r in page_requests(log)]
    assert sorted(requested) == sorted(reachable(model, seeds)), "duplicates' links are the originals': nothing lost"
    assert any("mirror=" in u for u in requested) and any("edition=" in u for u in requested)
    assert any("/hostile/" in u for u in requested)


def test_identical_payloads_are_revisits_and_near_duplicates_full_responses(crawl) -> None:  # type: ignore[no-untyped-def]
    model, _, _, result, records = crawl
    groups: dict[bytes, list[str]] = defaultdict(list)  # near-duplicate signature → URIs
    for kind, uri in records:
        if kind in ("response", "revisit") and "/hostile/" not in uri and not uri.endswith("/robots.txt"):
            answer = model.respond_url(uri)
            if answer.status == 200:
                html = answer.content_type.startswith("text/html")
                groups[(html_signature if html else exact_signature)(answer.body)].append(uri)
    counts: Counter[str] = Counter()
    for uris in groups.values():
        payloads: dict[bytes, list[str]] = defaultdict(list)
        for uri in uris:
            payloads[model.respond_url(uri).body].append(uri)
        firsts = []
        for same in payloads.values():
            originals = [u for u in same if ("response", u) in records]
            assert len(originals) == 1, f"one response per payload, not {originals}"
            original = records[("response", originals[0])][0]
            for uri in same:
                if uri != originals[0]:
                    headers, payload, http = records[("revisit", uri)]
                    assert headers.get_header("WARC-Profile") == PROFILE_IDENTICAL
                    assert headers.get_header("WARC-Refers-To-Target-URI") == originals[0]
                    assert headers.get_header("WARC-Refers-To-Date") == original.get_header("WARC-Date")
                    assert headers.get_header("WARC-Refers-To") == original.get_header("WARC-Record-ID")
                    assert headers.get_header("WARC-Payload-Digest") == original.get_header("WARC-Payload-Digest")
                    assert payload == b"" and http.get_statuscode() == "200"  # the HTTP head alone
                    counts["revisits"] += 1
            fields = metadata_fields(records[("metadata", originals[0])][1])
            near = [value.split(" ") for name, value in fields if name == NEAR_DUPLICATE_FIELD]
            if not near:
                firsts.append(originals[0])
                continue
            [(uri, date, record_id)] = near  # names the first capture of its content, which names none
            assert uri in uris and uri != originals[0]
            first = records[("response", uri)][0]
            assert (date, record_id) == (first.get_header("WARC-Date"), first.get_header("WARC-Record-ID"))
            counts["near"] += 1
        assert len(firsts) == 1, f"one first capture per content, not {firsts}"
    assert counts["revisits"] >= 5 and counts["near"] >= 2, dict(counts)
    store = result.stats["store"]
    assert (store["revisits_identical"], store["near_duplicates_stored"], store["near_duplicates_skipped"]) == (
        sum(1 for kind, _ in records if kind == "revisit"), counts["near"], 0)


def test_bombs_and_an_oversized_body_are_stored_cut_and_marked(crawl) -> None:  # type: ignore[no-untyped-def]
    model, _, _, result, records = crawl
    hostile = defaultdict(dict)
    for (kind, uri), (headers, block, _) in records.items():
        if "/hostile/" in (uri or ""):  # the warcinfo record has no URI
            hostile[uri.rsplit("/", 1)[1]][kind] = (headers, block)
    assert set(hostile) == {"bomb-gzip.html", "bomb-deflate.html", "bomb-br.html", "big.html", "bad-gzip.html",
                            "bad-charset.html", "broken.html"}
    for name in ("bomb-gzip.html", "bomb-deflate.html", "big.html"):  # more than the limit on the wire
        headers, block = hostile[name]["response"]
        assert headers.get_header("WARC-Truncated") == "length", name
        assert len(block) == LIMIT
    headers, block = hostile["bomb-br.html"]["response"]  # a few hundred bytes on the wire, 128 MiB decoded
    assert headers.get_header("WARC-Truncated") is None and len(block) < 2000
    assert b"payloadTruncated: length" in hostile["bomb-br.html"]["metadata"][1]
    for name in ("bad-gzip.html", "bad-charset.html", "broken.html"):
        assert "response" in hostile[name] and "metadata" in hostile[name], name
    hostile_hosts = sum(1 for h in model.hosts() if model.is_hostile(model.host_info(h)))
    # cut while received (two bombs and the big page), and cut once decoded (the br bomb): counted apart
    assert result.stats["truncated"]["length"] >= 3 * hostile_hosts
    assert result.stats["truncated"]["decoded"] >= hostile_hosts


def test_metadata_records_carry_outlinks_fetch_time_and_ip(crawl) -> None:  # type: ignore[no-untyped-def]
    model, seeds, _, _, records = crawl
    headers, block, _ = records[("metadata", seeds[0])]
    fields = [line.split(": ", 1) for line in block.decode().splitlines()]
    names = {name for name, _ in fields}
    assert {"fetchTimeMs", "ip", "outlink"} <= names
    assert headers.get_header("WARC-Concurrent-To") == records[("response", seeds[0])][0].get_header("WARC-Record-ID")
    outlinks = {value for name, value in fields if name == "outlink"}
    assert model.respond_url(seeds[0]).links[-1] in outlinks


def test_warc_verify_passes_and_fails_on_a_corrupted_file(crawl, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = crawl[3]
    ok = crawl_command("verify", str(result.out))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.count("ok\t") == len(list((result.out / "warc").glob("*.warc.gz")))
    broken = tmp_path / "warc"
    shutil.copytree(result.out / "warc", broken)
    path = sorted(broken.glob("*.warc.gz"))[0]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    failed = crawl_command("verify", str(broken))
    assert failed.returncode == 1 and f"FAIL\t{path.name}" in failed.stdout, failed.stdout


def test_warc_cat_and_ls_find_records_through_the_index(crawl) -> None:  # type: ignore[no-untyped-def]
    _, seeds, _, result, records = crawl
    revisit = next(uri for kind, uri in records if kind == "revisit")
    shown = crawl_command("cat", str(result.out), revisit)
    lines = shown.stdout.splitlines()  # text mode: CRLF read as newlines
    assert shown.returncode == 0 and f"WARC-Target-URI: {revisit}" in lines and "WARC-Type: revisit" in lines
    assert crawl_command("cat", str(result.out), seeds[0] + "nowhere").returncode == 1
    listed = crawl_command("ls", str(result.out)).stdout.splitlines()
    assert len(listed) == sum(1 for _ in listed) and any(line.split("\t")[3] == "metadata" for line in listed)


def test_the_link_graph_has_the_crawled_pages_and_hosts(crawl) -> None:  # type: ignore[no-untyped-def]
    model, seeds, _, result, records = crawl
    pages, hosts = linkgraph.read_graph(result.out / "warc")
    assert set(seeds) <= set(pages.names.values())
    home = pages.index(linkgraph.node_id(seeds[0]))
    targets = {int(pages.ids[d]) for s, d in pages.edges if s == home}
    assert targets == {linkgraph.node_id(u) for u, _ in page_links(model.respond_url(seeds[0]))}
    assert len(hosts.names) == WEB.hosts and len(hosts.edges) > WEB.hosts  # links between hosts, not only within
    store = result.stats["store"]
    assert store["graph_pages"] == len(pages.names) and store["revisits_identical"] > 0 and store["near_duplicates_stored"] > 0
    assert store["dedup"]["bloom_false_positives"] == 0 and store["dedup"]["bloom_fill_false_positive_rate"] < 1e-9


def test_skipped_near_duplicates_leave_no_record_and_are_counted(tmp_path: Path) -> None:
    """``store.near_duplicates = "skip"`` (BUbiNG's way), here with ``store.follow_duplicates = true``:
    every page is fetched once, and no edition (a near-duplicate) is in the archive."""
    params = WebParams(hosts=6, mean_pages=8, max_pages=16, mean_links=6, page_bytes=3000, duplicate_share=0.5,
                       robots_5xx_share=0.0)
    web = WebThread(params, tmp_path / "requests.jsonl")
    seeds = web.model.seeds(params.hosts)
    try:
        result = run_crawl(tmp_path / "out", seeds, dns=web.web.dns_address,
                           settings=["engine.processes=1", "politeness.host_delay=0.02", "politeness.ip_delay=0",
                                     'store.near_duplicates="skip"', "store.follow_duplicates=true"])
    finally:
        log = web.stop()
    requested = Counter(url_of(r, web.model.port) for r in page_requests(log))
    assert set(requested) == reachable(web.model, seeds) and max(requested.values()) == 1
    editions = {u for u in requested if "edition=" in u}
    assert len(editions) >= 4
    stored = set()
    for path in (tmp_path / "out" / "warc").glob("*.warc.gz"):
        with open(path, "rb") as f:
            stored |= {(r.rec_type, r.rec_headers.get_header("WARC-Target-URI")) for r in ArchiveIterator(f)}
    assert not {u for _, u in stored} & editions, "a skipped near-duplicate leaves no record"
    assert {u for kind, u in stored if kind == "revisit"} >= {u for u in requested if "mirror=" in u}
    store = result.stats["store"]
    assert (store["near_duplicates_skipped"], store["near_duplicates_stored"]) == (len(editions), 0)
    assert result.stats["stored"] == len(requested) - len(editions) + result.stats["robots"]
    assert crawl_command("verify", str(tmp_path / "out")).returncode == 0


def test_a_full_disk_stops_the_crawl_cleanly(tmp_path: Path) -> None:
    warc = tmp_path / "out" / "warc"
    warc.mkdir(parents=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(warc)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (not root?)")
    web = WebThread(WebParams(hosts=40, mean_pages=20, page_bytes=20000), tmp_path / "requests.jsonl")
    try:
        proc = subprocess.run(run_command(tmp_path / "out", web.web.seeds, dns=web.web.dns_address,
                                          settings=["engine.processes=1", "politeness.host_delay=0.02",
                                                    "politeness.ip_delay=0", "store.gzip_level=0",
                                                    "store.dedup_capacity=1000"]),
                              capture_output=True, text=True, timeout=240)
        assert proc.returncode == 3, proc.stderr  # the store is full: stopped, not restarted (engine/supervisor.py)
        stats = orjson.loads((tmp_path / "out" / "stats.json").read_bytes())
        assert stats["stop_reason"] == "store_full", stats["stop_reason"]
        assert "No space left on device" in stats["agents"][0]["store_full"]["message"]
        for path in warc.glob("*.warc.gz*"):  # finished or left .open: whole records only
            assert verify_file_members(path)
        subprocess.run(["mount", "-o", "remount,size=8m", str(warc)], check=True)
        reopened = Archive(warc, "crawl-a0", StoreConfig(dedup_capacity=1000), {"software": "test"})
        reopened.close()
        verified = crawl_command("verify", str(tmp_path / "out"))
        assert verified.returncode == 0 and "still .open" not in verified.stdout, verified.stdout
    finally:
        web.stop()
        subprocess.run(["umount", "-l", str(warc)], check=False)


def verify_file_members(path: Path) -> bool:
    return end_of_complete_members(path) == path.stat().st_size
