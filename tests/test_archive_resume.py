"""engine/resume.py's replay over every shape of fetch the archive writes: what a resumed agent skips and
discovers again is what the crawl stored and discovered, as the metadata records list it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import brotli  # type: ignore[import-untyped]

from engine.config import StoreConfig
from engine.parse import LinkRules
from engine.resume import Replayed, replay, warc_sizes
from store.archive import Archive
from store.recovery import warc_records
from store.warc import Exchange

INFO = {"software": "crawl/test"}
REQUEST = b"GET / HTTP/1.1\r\nHost: h.test\r\n\r\n"
HTML = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
WHEN = 1_700_000_000.0


def html(edition: int, *links: str) -> bytes:
    anchors = "".join(f'<a href="{link}">link</a>' for link in links)
    return f"<html><body><p>Edition {edition}</p>{anchors}<p>{'words ' * 100}</p></body></html>".encode()


BODY_LINKS = ("http://h.test/x", "http://h.test/y")


def fetch(archive: Archive, url: str, body: bytes, *, head: bytes = HTML, status: int = 200, page: bool = True,
          links: tuple[str, ...] = (), redirect: str | None = None, k: int = 0) -> None:
    check = archive.examine(status=status, body=body, payload=body, html=b"text/html" in head, complete=True)
    archive.store(Exchange(url, "127.0.0.1", WHEN + k, REQUEST, head, body), status=status, mime="text/html",
                  check=check, page=page, links=links, redirect=redirect, fetch_seconds=0.01 if page else None)


def replayed(directory: Path, since: dict[str, int] | None = None) -> list[Replayed]:
    return list(replay(directory, "t", since or {}, rules=LinkRules(), max_body_bytes=1 << 20))


def settings(**changes: object) -> StoreConfig:
    return dataclasses.replace(StoreConfig(), **{"dedup_capacity": 10_000, **changes})  # type: ignore[arg-type]


def test_replay_discovers_what_the_metadata_records_list(tmp_path: Path) -> None:
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        fetch(archive, "http://h.test/robots.txt", b"User-agent: *\n", head=b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n",
              page=False)
        fetch(archive, "http://h.test/", html(0, *BODY_LINKS), links=BODY_LINKS, k=1)
        # a near-duplicate stored in full, whose links were not followed (store.follow_duplicates = false)
        fetch(archive, "http://h.test/?edition=2", html(2, *BODY_LINKS), k=2)
        # an identical payload whose links were followed (store.follow_duplicates = true): a revisit, no body
        fetch(archive, "http://h.test/?mirror=1", html(0, *BODY_LINKS), links=BODY_LINKS, k=3)
        fetch(archive, "http://h.test/old", b"", head=b"HTTP/1.1 301 Moved\r\nLocation: /new\r\n\r\n", status=301,
              redirect="http://h.test/new", k=4)
        # the parse filter kept this page from parsing: nothing was discovered, whatever its body holds
        fetch(archive, "http://h.test/unparsed", html(9, "http://h.test/z"), k=5)
        stats = archive.statistics()
    assert (stats.revisits_identical, stats.near_duplicates_stored) == (1, 1)
    assert [(r.url, r.robots, r.links) for r in replayed(tmp_path)] == [
        ("http://h.test/robots.txt", True, []),
        ("http://h.test/", False, list(BODY_LINKS)),
        ("http://h.test/?edition=2", False, []),
        ("http://h.test/?mirror=1", False, list(BODY_LINKS)),
        ("http://h.test/old", False, ["http://h.test/new"]),
        ("http://h.test/unparsed", False, []),
    ]


def test_replay_starts_at_the_checkpoint_and_reads_a_body_whose_metadata_a_torn_tail_lost(tmp_path: Path) -> None:
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        fetch(archive, "http://h.test/before", html(1, "http://h.test/b"), links=("http://h.test/b",))
        since = warc_sizes(tmp_path, "t")
        fetch(archive, "http://h.test/after", html(3, *BODY_LINKS), links=BODY_LINKS[:1], k=1)
        # brotli on the wire (which warcio's own decoder fails on): decoded as the pipeline does
        fetch(archive, "http://h.test/torn", brotli.compress(html(4, *BODY_LINKS)), links=BODY_LINKS[1:], k=2,
              head=HTML.replace(b"\r\n\r\n", b"\r\nContent-Encoding: br\r\n\r\n"))
    assert [(r.url, r.links) for r in replayed(tmp_path, since)] == [
        ("http://h.test/after", ["http://h.test/x"]),  # the metadata records', not the bodies'
        ("http://h.test/torn", ["http://h.test/y"]),
    ]
    [path] = tmp_path.glob("*.warc.gz")
    last = list(warc_records(path))[-1]
    assert last.kind == "metadata"
    with open(path, "r+b") as f:  # what a crash between two members of one write leaves, once repaired
        f.truncate(last.offset)
    assert [(r.url, r.links) for r in replayed(tmp_path, since)][-1] == ("http://h.test/torn", list(BODY_LINKS))


def test_a_skipped_near_duplicate_leaves_nothing_to_replay(tmp_path: Path) -> None:
    with Archive(tmp_path, "t", settings(near_duplicates="skip"), INFO) as archive:
        fetch(archive, "http://h.test/", html(0, *BODY_LINKS), links=BODY_LINKS)
        fetch(archive, "http://h.test/?edition=1", html(1, *BODY_LINKS), links=BODY_LINKS, k=1)  # links followed
        assert archive.statistics().near_duplicates_skipped == 1
    assert [r.url for r in replayed(tmp_path)] == ["http://h.test/"]
