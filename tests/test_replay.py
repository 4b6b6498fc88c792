"""Replay and WACZ (issue 19): 200 pages of a crawl replay in pywb byte for byte, and ``crawl warc wacz`` packages it.

A crawl of the in-vitro web (some 350 HTML pages on 14 hosts, where a third of the pages are also
served byte for byte under other URLs, so the archive stores those as ``revisit`` records) is
opened in pywb three ways: as a collection pywb indexes with its own tools (``wb-manager add``),
through the crawl's own CDXJ indexes, and through the index and WARC files of the WACZ that
``crawl warc wacz`` makes of it (unpacked). A sample of 200 of its HTML pages, a quarter of them
revisits, is fetched from each through ``/COLL/TIMESTAMPid_/URL`` (``id_``: the bytes as archived,
nothing rewritten), and every body must be exactly the payload in the WARC file, read with
warcio: the record's own, or for a revisit the payload of the record it refers to.

The WACZ must pass py-wacz's validator (``wacz validate``: the data package, every file's hash),
hold the WARC files unchanged and stored, the crawl's index, and a page list of exactly the
crawl's HTML pages fetched with 200, each with its page's title.
"""

from __future__ import annotations

import gzip
import random
import re
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

from bench.invitro import WebParams
from engine import wacz
from store import cdxj
from store.cdxj import timestamp14
from tests.invitro_harness import WebThread, run_crawl
from tests.pywb_harness import Capture, captures, get, wayback

WEB = WebParams(hosts=14, hosts_per_ip=4, mean_pages=14, max_pages=40, mean_links=10, page_bytes=3000,
                duplicate_share=0.35, duplicate_copies=2, robots_5xx_share=0.0)
SAMPLE = 200
REVISITS = 50  # of the sample, at most
COLLECTIONS = ("indexed", "crawlcdxj", "wacz")


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("replay")
    web = WebThread(WEB, tmp / "requests.jsonl")
    try:
        result = run_crawl(tmp / "out", web.model.seeds(WEB.hosts), dns=web.web.dns_address,
                           settings=["engine.processes=1", "politeness.host_delay=0.01", "politeness.ip_delay=0",
                                     "engine.fetchers=40", 'store.dedup="near"'])
    finally:
        web.stop()
    assert result.stats["stop_reason"] == "done", result.process.stderr[-3000:]
    return result.out


@pytest.fixture(scope="module")
def packed(crawl: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The WACZ of the crawl, made by the command line."""
    out = tmp_path_factory.mktemp("wacz") / "crawl.wacz"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "engine.cli", "warc", "wacz", str(crawl), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    print(f"\ncrawl warc wacz: {out.stat().st_size} bytes in {time.monotonic() - started:.2f} s: {done.stderr.strip()}")
    return out


@pytest.fixture(scope="module")
def server(crawl: Path, packed: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    root = tmp_path_factory.mktemp("pywb")
    unpacked = root / "unpacked"
    with zipfile.ZipFile(packed) as zf:
        zf.extractall(unpacked)
    warc = crawl / "warc"
    with wayback(root, indexed={COLLECTIONS[0]: sorted(warc.glob("*.warc.gz"))},
                 given={COLLECTIONS[1]: (warc, warc), COLLECTIONS[2]: (unpacked / "indexes", unpacked / "archive")}) as port:
        yield port


def html_pages(warc: Path) -> list[Capture]:
    """The crawl's HTML pages fetched with 200: responses, and revisits of such responses."""
    return [c for c in captures(warc) if c.status == 200 and c.mime == "text/html"]


def payloads(warc: Path) -> dict[tuple[str, str], bytes]:
    """(URL, timestamp) → the payload replay must serve, as stored: for a revisit, its original's."""
    own: dict[str, bytes] = {}
    refers: list[tuple[tuple[str, str], str]] = []
    found: dict[tuple[str, str], bytes] = {}
    for path in sorted(warc.glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                h = record.rec_headers
                key = (h.get_header("WARC-Target-URI"), timestamp14(h.get_header("WARC-Date")))
                if record.rec_type == "response":
                    own[h.get_header("WARC-Record-ID")] = found[key] = record.raw_stream.read()
                elif record.rec_type == "revisit":
                    refers.append((key, h.get_header("WARC-Refers-To")))
    for key, record_id in refers:
        found[key] = own[record_id]
    return found


def sample(pages: list[Capture]) -> list[Capture]:
    revisits = [c for c in pages if c.kind == "revisit"]
    responses = [c for c in pages if c.kind == "response"]
    rng = random.Random(19)
    picked = rng.sample(revisits, min(REVISITS, len(revisits)))
    return picked + rng.sample(responses, SAMPLE - len(picked))


def test_the_crawl_holds_200_html_pages_and_revisits(crawl: Path) -> None:
    pages = html_pages(crawl / "warc")
    kinds = {kind: sum(c.kind == kind for c in pages) for kind in ("response", "revisit")}
    assert len(pages) >= SAMPLE and kinds["revisit"] >= REVISITS // 2, kinds


@pytest.mark.parametrize("collection", COLLECTIONS)
def test_pywb_replays_200_pages_with_their_exact_payload(crawl: Path, server: int, collection: str) -> None:
    warc = crawl / "warc"
    expected = payloads(warc)
    picked = sample(html_pages(warc))
    assert len(picked) == SAMPLE
    failures = []
    for c in picked:
        status, _, body = get(server, f"/{collection}/{c.timestamp}id_/{c.url}")
        if status != 200 or body != expected[(c.url, c.timestamp)]:
            failures.append(f"{c.kind} {c.url} {c.timestamp}: {status}, {len(body)} bytes, want {len(expected[(c.url, c.timestamp)])}")
    revisits = sum(c.kind == "revisit" for c in picked)
    print(f"\npywb {collection}: {SAMPLE - len(failures)} of {SAMPLE} pages exact ({revisits} revisits)")
    assert not failures, f"{len(failures)} of {SAMPLE} pages do not replay exactly:\n" + "\n".join(failures[:20])


def test_the_wacz_passes_py_wacz_validation(packed: Path) -> None:
    done = subprocess.run([str(Path(sys.executable).parent / "wacz"), "validate", "-f", str(packed)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "Validation succeeded" in done.stdout, done.stdout + done.stderr


def test_the_wacz_holds_the_warc_files_the_index_and_the_pages(crawl: Path, packed: Path) -> None:
    warc = crawl / "warc"
    with zipfile.ZipFile(packed) as zf:
        entries = {info.filename: info for info in zf.infolist()}
        archived = sorted(n for n in entries if n.startswith("archive/"))
        assert archived == [f"archive/{p.name}" for p in sorted(warc.glob("*.warc.gz"))]
        for name in archived:  # unchanged, and stored: a reader seeks to a record inside the entry
            assert entries[name].compress_type == zipfile.ZIP_STORED
            assert zf.read(name) == (warc / name.removeprefix("archive/")).read_bytes()
        index = zf.read(wacz.INDEX_PATH)
        assert index == b"".join(sorted(line for p in cdxj.index_files(warc) for line in p.read_bytes().splitlines(True)))
        header, *lines = [orjson.loads(line) for line in zf.read(wacz.PAGES_PATH).splitlines()]
        package = orjson.loads(zf.read("datapackage.json"))
    assert header["format"] == "json-pages-1.0"
    assert package["wacz_version"] == "1.1.1" and {r["path"] for r in package["resources"]} == set(entries) - {
        "datapackage.json", "datapackage-digest.json"}
    pages = html_pages(warc)
    assert sorted((p["url"], p["ts"]) for p in lines) == sorted(
        (c.url, f"{c.timestamp[:4]}-{c.timestamp[4:6]}-{c.timestamp[6:8]}T{c.timestamp[8:10]}:{c.timestamp[10:12]}:"
                f"{c.timestamp[12:]}Z") for c in pages)
    expected = payloads(warc)
    for page, c in zip(sorted(lines, key=lambda p: (p["url"], p["ts"])), sorted(pages, key=lambda c: (c.url, c.timestamp)),
                       strict=True):
        body = expected[(c.url, c.timestamp)]
        html = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
        title = re.search(rb"<title>(.*?)</title>", html)
        assert title is not None and page.get("title") == title[1].decode(), page


def test_wacz_refuses_an_archive_still_being_written(tmp_path: Path) -> None:
    (tmp_path / "crawl-a0-20261124000000-00001.warc.gz.open").write_bytes(b"")
    with pytest.raises(wacz.NotFinished):
        wacz.package(tmp_path, tmp_path / "crawl.wacz", title="t")
    assert not (tmp_path / "crawl.wacz").exists()
