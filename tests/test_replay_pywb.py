"""Replay in pywb: every response and revisit of a crawl with duplicates and near-duplicates serves its payload.

The crawl runs over the in-vitro web with ``store.dedup = "near"``, on hosts that serve copies of
some pages byte for byte (``?mirror=k``, ``?utm_source=…``) and near-copies that differ in one
number (``?edition=k``), and on a few hostile hosts (decompression bombs and a big page, stored
cut; a body that is not the gzip it claims). Its WARC files are then opened in pywb, the replay
tool archivists use, twice: as a collection pywb indexes itself (``wb-manager add``), and through
the crawl's own CDXJ indexes. For every response and revisit record, ``/COLL/TIMESTAMPid_/URL``
(``id_``: the original bytes, nothing rewritten) must answer the record's HTTP status with exactly
the payload the record's digest names (for a revisit: the payload of the record it refers to),
and a Content-Length that agrees, but for a body cut at the limit: its record keeps the HTTP head
it came with (``WARC-Truncated``), so pywb announces the whole body's length and sends the part
the record holds.

pywb runs in a virtual environment of its own (``tests/pywb_harness.py`` says why).
"""

from __future__ import annotations

import http.client
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

from bench.invitro import WebParams
from store.archive import NEAR_DUPLICATE_FIELD
from store.recovery import metadata_fields
from store.warc import PROFILE_IDENTICAL, payload_digest
from tests.invitro_harness import WebThread, run_crawl
from tests.pywb_harness import captures, get, wayback

WEB = WebParams(hosts=12, hosts_per_ip=4, mean_pages=10, max_pages=24, mean_links=10, page_bytes=3000,
                duplicate_share=0.4, duplicate_copies=2, robots_5xx_share=0.0,
                hostile_share=0.5, bomb_bytes=1 << 22, big_bytes=1 << 19)  # bodies cut, bad codings: replayed too
LIMIT = 65536  # network.max_body_bytes: the bombs and the big page are stored cut (WARC-Truncated)
COLLECTIONS = ("indexed", "crawlcdxj")  # pywb's own index of the WARC files; the crawl's CDXJ files


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("replay")
    web = WebThread(WEB, tmp / "requests.jsonl")
    seeds = web.model.seeds(WEB.hosts)
    try:
        result = run_crawl(tmp / "out", seeds, dns=web.web.dns_address,
                           settings=["engine.processes=1", "politeness.host_delay=0.02", "politeness.ip_delay=0",
                                     "engine.fetchers=30", f"network.max_body_bytes={LIMIT}", 'store.dedup="near"'])
    finally:
        web.stop()
    assert result.stats["stop_reason"] == "done", result.process.stderr[-3000:]
    return result.out / "warc"


@pytest.fixture(scope="module")
def server(crawl: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A pywb server with both collections of the crawl."""
    with wayback(tmp_path_factory.mktemp("pywb"), indexed={COLLECTIONS[0]: sorted(crawl.glob("*.warc.gz"))},
                 given={COLLECTIONS[1]: (crawl, crawl)}) as port:
        yield port


def test_the_crawl_has_identical_revisits_and_near_duplicates(crawl: Path) -> None:
    found = captures(crawl)
    assert sum(c.truncated for c in found) >= 3
    kinds = Counter((c.kind, c.profile) for c in found)
    assert kinds[("revisit", PROFILE_IDENTICAL)] >= 5, kinds
    assert set(kinds) <= {("response", None), ("revisit", PROFILE_IDENTICAL)}, kinds
    near = 0
    for path in crawl.glob("*.warc.gz"):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type == "metadata":
                    near += any(n == NEAR_DUPLICATE_FIELD for n, _ in metadata_fields(record.content_stream().read()))
    assert near >= 5, "near-duplicates, stored as responses, are replayed too"


@pytest.mark.parametrize("collection", COLLECTIONS)
def test_every_response_and_revisit_replays_its_payload_byte_for_byte(crawl: Path, server: int,
                                                                       collection: str) -> None:
    records = captures(crawl)
    failures = []
    for c in records:
        # a body cut at the limit: pywb announces the whole body's Content-Length, so read what the record has
        try:
            status, headers, body = get(server, f"/{collection}/{c.timestamp}id_/{c.url}", c.length if c.truncated else None)
        except (http.client.HTTPException, OSError) as e:
            failures.append(f"{c.kind} {c.url}: {type(e).__name__}: {e}")
            continue
        if status != c.status or payload_digest(body) != c.digest:
            failures.append(f"{c.kind} {c.url}: {status}, {len(body)} bytes ({payload_digest(body)}), want {c.status} {c.digest}")
        elif not c.truncated and "content-length" in headers and int(headers["content-length"]) != len(body):
            failures.append(f"{c.kind} {c.url}: Content-Length {headers['content-length']} for {len(body)} bytes")
    assert not failures, f"{len(failures)} of {len(records)} captures do not replay:\n" + "\n".join(failures[:20])
