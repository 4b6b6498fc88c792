"""The archive reader of a takeover and a resume (``engine/resume.py: replay_file`` over ``store/records.py``)
gives exactly what the warcio-based reader it replaced gave (``bench.replay_bench.warcio_replay_file``).

Judged on real archives: the in-vitro web crawled by ``crawl run`` with duplicates (revisit records),
redirects and robots.txt, WARC files rotated small, the crawl killed with SIGKILL so that its last file
is left ``.open``; then every file, and every file cut at arbitrary points (a torn tail, in a response, in
its metadata record, between them), is read by both. The two hand-written parts, the head parser and
the metadata links, are also checked against warcio's parser and ``store.recovery`` on arbitrary input.
"""

from __future__ import annotations

import gzip
import io
import os
import signal
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.statusandheaders import StatusAndHeadersParser  # type: ignore[import-untyped]

from bench.invitro import WebParams
from bench.replay_bench import warcio_replay_file
from engine.parse import LinkRules
from engine.resume import Replayed, _listed, replay_file
from engine.takeover import stored_in
from store.records import parse_head, status_code
from store.recovery import links_of, metadata_fields, warc_records
from store.warc import end_of_complete_members
from tests.invitro_harness import WebThread, crawl_command, when_requests

WEB = WebParams(hosts=24, hosts_per_ip=4, mean_pages=12, max_pages=30, mean_links=20, page_bytes=4000,
                duplicate_share=0.3, frac_redirect=0.1)
SETTINGS = ["politeness.host_delay=0.05", "politeness.ip_delay=0.01", "engine.fetchers=20", "engine.processes=1",
            "store.warc_max_bytes=150000"]
RULES = LinkRules()


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The WARC files of a crawl killed half way: finished ones, and the last left ``.open``."""
    tmp = tmp_path_factory.mktemp("reader")
    web = WebThread(WEB, tmp / "requests.jsonl")
    out = tmp / "out"
    try:
        answered = when_requests(web, 250)
        crawl = subprocess.Popen(crawl_command(out, web.web.seeds[:6], dns=web.web.dns_address, settings=SETTINGS),
                                 start_new_session=True, stderr=subprocess.DEVNULL)
        assert answered.wait(120), "the crawl did not get far enough"
        os.killpg(crawl.pid, signal.SIGKILL)
        crawl.wait(30)
    finally:
        web.stop()
    return sorted((out / "warc").glob("*.warc.gz*"))


def old(data: bytes) -> list[Replayed]:
    """What the warcio reader read of a file: its complete members only (as ``stored_in`` cuts it)."""
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        whole = data[: end_of_complete_members(Path(f.name))]
    return list(warcio_replay_file(io.BytesIO(whole), rules=RULES, max_body_bytes=1 << 20))


def new(data: bytes) -> list[Replayed]:
    return list(replay_file(io.BytesIO(data), rules=RULES, max_body_bytes=1 << 20))


def test_the_crawl_left_every_shape_of_fetch(archive: list[Path]) -> None:
    assert archive[-1].name.endswith(".open") and len(archive) >= 3
    kinds: Counter[str] = Counter()
    for path in archive:
        for record in warc_records(path):
            kinds[record.kind] += 1
            kinds["redirect"] += record.kind == "response" and record.status in (301, 302, 303, 307, 308)
            kinds["robots.txt"] += record.headers.get_header("WARC-Target-URI", "").endswith("/robots.txt")
    assert min(kinds["revisit"], kinds["redirect"], kinds["robots.txt"], kinds["metadata"]) > 0, kinds


def test_every_file_reads_as_warcio_read_it(archive: list[Path]) -> None:
    pages = 0
    for path in archive:
        data = path.read_bytes()
        expected = old(data)
        assert new(data) == expected, path.name
        pages += len(expected)
    assert pages > 100
    assert sum(p.robots and p.robots_body != b"" for path in archive for p in new(path.read_bytes())) > 0
    assert list(stored_in(archive[0].parent.parent, RULES, 1 << 20)) == [p for a in archive for p in old(a.read_bytes())]


@settings(max_examples=60, deadline=None)
@given(member=st.integers(min_value=0), within=st.floats(min_value=0.0, max_value=1.0))
def test_a_file_cut_anywhere_reads_as_warcio_read_it(archive: list[Path], member: int, within: float) -> None:
    """A torn tail: the cut member and all after it are left out, a response whose metadata record was
    cut off has its links taken from its body, as before."""
    path = archive[0]
    data = path.read_bytes()
    records = list(warc_records(path))
    cut_in = records[member % len(records)]
    cut = cut_in.offset + int(within * cut_in.length)
    assert new(data[:cut]) == old(data[:cut])


def test_a_response_with_its_metadata_record_cut_off_gives_its_bodys_links(archive: list[Path]) -> None:
    path = archive[0]
    data = path.read_bytes()
    records = list(warc_records(path))
    cut = next(m.offset + m.length // 2 for r, m in zip(records, records[1:], strict=False)
               if r.kind == "response" and r.status == 200 and r.mime == "text/html" and m.kind == "metadata")
    pages = new(data[:cut])
    assert pages == old(data[:cut])
    assert pages[-1].links, "an in-vitro page links to others"


ODD_MEMBERS = (
    b"",  # an empty member: to warcio no record
    b"\r\nnot a record\r\n",  # a blank first line: a record of no fields, no kind
    b"WARC/1.1\r\nWARC-Type: metadata\r\n continued\r\nContent-Length: 0\r\n\r\n\r\n\r\n",  # kind "metadata continued"
    b"WARC/1.1\r\nwarc-type:  metadata \r\nX-\xe9: y\r\nContent-Length: 4\r\n\r\nab\n\r\r\n\r\n",  # Latin-1, of no fetch
)


def test_odd_members_between_a_response_and_its_metadata_record_read_as_warcio_read_them(archive: list[Path]) -> None:
    path = archive[0]
    data = path.read_bytes()
    records = list(warc_records(path))
    at = next(m.offset for r, m in zip(records, records[1:], strict=False) if r.kind == "response" and m.kind == "metadata")
    odd = data[:at] + b"".join(gzip.compress(member) for member in ODD_MEMBERS) + data[at:]
    assert new(odd) == old(odd) == old(data)


# -- the hand-written parts against what they replace, on arbitrary input ----------------------------

LINE_CHARS = st.sampled_from(["a", "B", "-", ":", " ", "\t", "\r", "\x0b", "\x1c", "é", "\x85", "1"])
HEAD_LINE = st.lists(LINE_CHARS, max_size=12).map("".join)
NAMES = ("a", "b", "A-b", "")


@settings(max_examples=500)
@given(first=HEAD_LINE, lines=st.lists(st.one_of(HEAD_LINE, st.sampled_from(NAMES).map(lambda n: n + ": v")), max_size=8),
       ending=st.sampled_from(["\r\n\r\n", "\n\n", "\r\n", ""]), latin=st.booleans(), tail=st.binary(max_size=8))
def test_heads_are_parsed_as_warcio_parses_them(first: str, lines: list[str], ending: str, latin: bool,
                                                 tail: bytes) -> None:
    text = "\r\n".join([first, *lines]) + ending
    data = text.encode("iso-8859-1" if latin else "utf-8", "replace") + tail
    head = parse_head(data)
    stream = io.BytesIO(data)
    try:
        expected = StatusAndHeadersParser(["HTTP/1.0", "HTTP/1.1"], verify=False).parse(stream)
    except EOFError:
        assert head is None
        return
    assert head is not None and head.end == stream.tell()
    assert status_code(head) == expected.get_statuscode()
    for name in (*NAMES, "a ", "B"):
        assert head.get(name) == expected.get_header(name), name


FIELD_NAMES = st.sampled_from(["outlink", "redirect", "fetchTimeMs", "ip", "outlinks", "Outlink", ""])
FIELD_VALUE = st.lists(st.sampled_from(["x", ":", " ", ": ", "\r", "\n", "\r\n", "é"]), max_size=5).map("".join)


@settings(max_examples=500)
@given(fields=st.lists(st.tuples(FIELD_NAMES, st.sampled_from([": ", ":", " : "]), FIELD_VALUE), max_size=10),
       garbage=st.binary(max_size=3))
def test_metadata_links_are_found_as_store_recovery_finds_them(fields: list[tuple[str, str, str]], garbage: bytes) -> None:
    block = "".join(f"{n}{sep}{v}\r\n" for n, sep, v in fields).encode() + garbage
    listed = metadata_fields(block)
    assert _listed(block) == (links_of(listed), next((v for n, v in listed if n == "fetchTimeMs"), None))
