"""store/warc.py: records read back with warcio, one gzip member each, files finished by rename, torn tails cut,
revisit and metadata records as WARC 1.1 has them."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import random
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

from store.errors import StoreFull
from store.warc import PROFILE_IDENTICAL, Capture, Exchange, Revisit, WarcStore, is_compressed, repair_torn_tail, warc_date

INFO = {"software": "crawl/test", "format": "WARC File Format 1.1", "hostname": "test-host", "operator": "tests"}
REQUEST = b"GET /page.html HTTP/1.1\r\nHost: example.test\r\nUser-Agent: crawl/test\r\n\r\n"
BODY = b"<!DOCTYPE html><html><body>" + b"<p>Hello, crawler.</p>" * 400 + b"</body></html>"
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(BODY)
FETCHED_AT = 1_700_000_000.25


def store_page(warc: WarcStore, n: int = 0, revisit: Revisit | None = None, **overrides: object) -> Capture:
    args: dict[str, object] = dict(
        url=f"http://example.test/page{n}.html",
        ip="127.0.0.1",
        fetched_at=FETCHED_AT + n,
        request_head=REQUEST,
        response_head=RESPONSE,
        body=BODY,
    )
    args.update(overrides)
    capture = warc.store_exchange(Exchange(**args), revisit=revisit)  # type: ignore[arg-type]
    if warc.full:
        warc.close_file()
    return capture


def records(path: Path) -> list:  # type: ignore[type-arg]
    return records_of_bytes(path.read_bytes())


def records_of_bytes(data: bytes) -> list:  # type: ignore[type-arg]
    """(WARC headers, type, block) of every record: warcio parses and checks digests, the block
    comes from the record's own gzip member (warcio has already consumed the HTTP head)."""
    parsed = []
    for record in ArchiveIterator(io.BytesIO(data), check_digests="raise"):
        record.content_stream().read()
        parsed.append((record.rec_headers, record.rec_type))
    members = gzip_members(data)
    assert len(members) == len(parsed)  # one member per record, never two records in one
    blocks = [zlib.decompress(m, 31).split(b"\r\n\r\n", 1)[1][:-4] for m in members]
    return [(h, t, b) for (h, t), b in zip(parsed, blocks)]


def gzip_members(data: bytes) -> list[bytes]:
    members = []
    while data:
        d = zlib.decompressobj(31)
        d.decompress(data)
        assert d.eof
        members.append(data[: len(data) - len(d.unused_data)])
        data = d.unused_data
    return members


def sha1_b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def serial(path: Path) -> int:
    return int(path.name.removesuffix(".warc.gz").rsplit("-", 1)[1])


def finished(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.warc.gz"))


# -- what a file holds ---------------------------------------------------------------------


def test_exchange_reads_back_as_a_linked_request_response_pair(tmp_path: Path) -> None:
    with WarcStore(tmp_path, info=INFO) as warc:
        store_page(warc)
    [path] = finished(tmp_path)
    (info, info_type, info_block), (req, req_type, req_block), (resp, resp_type, resp_block) = records(path)

    assert info_type == "warcinfo" and info.get_header("Content-Type") == "application/warc-fields"
    assert info.get_header("WARC-Filename") == path.name
    assert info_block.decode().splitlines() == [f"{k}: {v}" for k, v in INFO.items()]

    assert (req_type, resp_type) == ("request", "response")
    assert req.get_header("Content-Type") == "application/http;msgtype=request"
    assert resp.get_header("Content-Type") == "application/http;msgtype=response"
    assert req_block == REQUEST and resp_block == RESPONSE + BODY
    assert req.get_header("WARC-Concurrent-To") == resp.get_header("WARC-Record-ID")
    assert resp.get_header("WARC-Concurrent-To") == req.get_header("WARC-Record-ID")
    for headers in (req, resp):
        assert headers.protocol == "WARC/1.1"
        assert headers.get_header("WARC-Target-URI") == "http://example.test/page0.html"
        assert headers.get_header("WARC-IP-Address") == "127.0.0.1"
        assert headers.get_header("WARC-Date") == "2023-11-14T22:13:20.250000Z"
        assert headers.get_header("WARC-Warcinfo-ID") == info.get_header("WARC-Record-ID")
    assert resp.get_header("WARC-Payload-Digest") == sha1_b32(BODY)
    assert resp.get_header("WARC-Block-Digest") == sha1_b32(RESPONSE + BODY)
    assert req.get_header("WARC-Block-Digest") == sha1_b32(REQUEST)
    assert resp.get_header("WARC-Truncated") is None


def test_optional_fields_truncation_and_no_ip(tmp_path: Path) -> None:
    with WarcStore(tmp_path, info=INFO) as warc:
        store_page(warc, ip=None, truncated="length", body=BODY[:100])
    resp = records(finished(tmp_path)[0])[2][0]
    assert resp.get_header("WARC-Truncated") == "length"
    assert resp.get_header("WARC-IP-Address") is None
    assert resp.get_header("WARC-Payload-Digest") == sha1_b32(BODY[:100])


def test_a_url_with_cr_lf_cannot_forge_fields(tmp_path: Path) -> None:
    with WarcStore(tmp_path, info=INFO) as warc:
        store_page(warc, url="http://example.test/a\r\nWARC-Type: revisit")
    [path] = finished(tmp_path)
    resp = records(path)[2][0]
    assert resp.get_header("WARC-Type") == "response"
    assert b"WARC-Target-URI: http://example.test/a%0D%0AWARC-Type: revisit\r\n" in gzip.decompress(path.read_bytes())


def test_every_record_is_its_own_gzip_member_and_location_points_at_the_response(tmp_path: Path) -> None:
    with WarcStore(tmp_path, info=INFO) as warc:
        locations = [store_page(warc, n) for n in range(5)]
    [path] = finished(tmp_path)
    data = path.read_bytes()
    assert len(gzip_members(data)) == 1 + 2 * 5
    for n, location in enumerate(locations):
        assert location.filename == path.name
        member = data[location.offset : location.offset + location.length]
        [(headers, rec_type, block)] = records_of_bytes(member)
        assert rec_type == "response" and block == RESPONSE + BODY
        assert headers.get_header("WARC-Target-URI") == f"http://example.test/page{n}.html"
        assert gzip.decompress(member).startswith(b"WARC/1.1\r\nWARC-Type: response\r\n")


@pytest.mark.parametrize("level", [0, 1, 3, 6, 9])
def test_every_gzip_level_reads_back(tmp_path: Path, level: int) -> None:
    with WarcStore(tmp_path, info=INFO, gzip_level=level) as warc:
        store_page(warc)
    assert [t for _, t, _ in records(finished(tmp_path)[0])] == ["warcinfo", "request", "response"]


@pytest.mark.parametrize("level", [0, 1, 3, 6])
@pytest.mark.parametrize("size", [1, 5_000, 65_535, 65_536, 200_000])
def test_a_compressed_body_is_stored_as_it_is_and_reads_back(tmp_path: Path, level: int, size: int) -> None:
    body = zlib.compress(random.Random(size).randbytes(size), 1, 31)[:size]  # bytes deflate cannot shrink
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\r\n"
    with WarcStore(tmp_path, info=INFO, gzip_level=level) as warc:
        capture = store_page(warc, response_head=head, body=body, compressed=True)
        plain = store_page(warc, 1, response_head=head, body=body)
    data = finished(tmp_path)[0].read_bytes()
    [(headers, rec_type, block)] = records_of_bytes(data[capture.offset : capture.offset + capture.length])
    assert rec_type == "response" and block == head + body
    assert headers.get_header("WARC-Payload-Digest") == sha1_b32(body)
    member = data[capture.offset : capture.offset + capture.length]
    assert body[: 0xFFFF] in member  # stored, not deflated again
    # the record's fields and HTTP head are deflated: the member is at most its blocks' framing (~20 bytes) longer,
    # and at level 1 the head's fixed code's price (store/deflate.py: up to a tenth of the deflated head)
    slack = 32 + ((capture.length - len(body)) // 10 if level == 1 else 0)
    assert capture.length <= plain.length + slack


@pytest.mark.parametrize(("coding", "mime", "expected"), [
    ("gzip", "text/html", True), ("br", "text/html", True), (" Identity ", "text/html", False),
    (None, "text/html", False), ("", "image/jpeg", True), (None, "image/svg+xml", False), (None, "application/pdf", False),
])  # fmt: skip
def test_what_counts_as_compressed_already(coding: str | None, mime: str, expected: bool) -> None:
    assert is_compressed(coding, mime) is expected


@pytest.mark.skipif(shutil.which("warcio", path=str(Path(sys.executable).parent)) is None, reason="no warcio CLI")
def test_warcio_check_and_index_accept_the_file(tmp_path: Path) -> None:
    with WarcStore(tmp_path, info=INFO) as warc:
        for n in range(3):
            store_page(warc, n)
        store_page(warc, 9, response_head=b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", body=b"")
        store_page(warc, 10, response_head=RESPONSE, body=gzip.compress(BODY), compressed=True)
    warcio = str(Path(sys.executable).parent / "warcio")
    [path] = finished(tmp_path)
    check = subprocess.run([warcio, "check", "-v", str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("digest pass") == 11
    index = subprocess.run([warcio, "index", str(path)], capture_output=True, text=True, check=True)
    assert len(index.stdout.splitlines()) == 11


# -- files: naming, .open, rotation ------------------------------------------------------------


def test_file_is_open_while_writing_and_finished_by_close(tmp_path: Path) -> None:
    warc = WarcStore(tmp_path, prefix="job", info=INFO)
    assert list(tmp_path.iterdir()) == []  # nothing written, no file
    location = store_page(warc)
    [open_file] = list(tmp_path.iterdir())
    assert open_file.name == location.filename + ".open"
    assert location.filename.startswith("job-") and location.filename.endswith("-00001.warc.gz")
    assert len(location.filename) == len("job-YYYYmmddHHMMSS-00001.warc.gz")
    warc.close()
    warc.close()  # idempotent
    assert [p.name for p in tmp_path.iterdir()] == [location.filename]
    with pytest.raises(ValueError):
        store_page(warc)


def test_files_rotate_past_max_bytes_each_with_its_warcinfo(tmp_path: Path) -> None:
    with WarcStore(tmp_path, info=INFO, max_file_bytes=3000) as warc:
        locations = [store_page(warc, n) for n in range(6)]
        stats = warc.statistics()
    paths = finished(tmp_path)
    assert len(paths) == stats.files >= 2
    assert [serial(p) for p in paths] == list(range(1, len(paths) + 1))
    for path in paths:
        types = [t for _, t, _ in records(path)]
        assert types[0] == "warcinfo" and types.count("warcinfo") == 1
    assert {loc.filename for loc in locations} == {p.name for p in paths}
    assert stats.records == 6 * 2 + stats.files
    assert stats.bytes_written == sum(p.stat().st_size for p in paths)
    assert stats.uncompressed_bytes > stats.bytes_written


def test_a_new_store_continues_the_serials_of_the_directory(tmp_path: Path) -> None:
    for _ in range(2):
        with WarcStore(tmp_path, info=INFO) as warc:
            store_page(warc)
    assert [serial(p) for p in finished(tmp_path)] == [1, 2]


# -- crash safety ---------------------------------------------------------------------------------


def written_file(tmp_path: Path, pages: int = 3, body: bytes = BODY) -> bytes:
    with WarcStore(tmp_path / "w", info=INFO) as warc:
        for n in range(pages):
            store_page(warc, n, body=body)
    [path] = finished(tmp_path / "w")
    data = path.read_bytes()
    shutil.rmtree(tmp_path / "w")
    return data


def test_repair_at_any_cut_keeps_exactly_the_complete_members(tmp_path: Path) -> None:
    data = written_file(tmp_path, pages=2, body=b"<p>short</p>")
    boundaries = [0]
    for member in gzip_members(data):
        boundaries.append(boundaries[-1] + len(member))
    path = tmp_path / "cut.warc.gz.open"
    near_boundaries = {b + d for b in boundaries for d in range(-3, 4) if 0 <= b + d <= len(data)}
    for cut in sorted(near_boundaries | set(range(0, len(data), 7))):  # every byte is slow: repair fsyncs
        path.write_bytes(data[:cut])
        keep = max(b for b in boundaries if b <= cut)
        assert repair_torn_tail(path) == cut - keep
        assert path.read_bytes() == data[:keep]


@pytest.mark.parametrize(
    "tail",
    [b"", b"\0" * 4096, b"\x1f\x8b\x08", b"not gzip at all", gzip.compress(b"WARC/1.1\r\n" * 50)[:-7]],
    ids=["whole", "zeros", "gzip-magic-only", "garbage", "torn-member"],
)
def test_repair_drops_only_the_torn_tail(tmp_path: Path, tail: bytes) -> None:
    data = written_file(tmp_path)
    path = tmp_path / "x.warc.gz"
    path.write_bytes(data + tail)
    assert repair_torn_tail(path) == len(tail)
    assert path.read_bytes() == data
    assert [t for _, t, _ in records(path)].count("response") == 3


def test_leftover_open_files_are_repaired_and_finished_on_open(tmp_path: Path) -> None:
    data = written_file(tmp_path)
    leftover = tmp_path / "crawl-20240101000000-00007.warc.gz.open"
    leftover.write_bytes(data + b"\x1f\x8b\x08\0garbage")
    empty = tmp_path / "crawl-20240101000000-00008.warc.gz.open"
    empty.write_bytes(b"\x1f\x8b")
    other = tmp_path / "other-20240101000000-00001.warc.gz.open"  # another writer's file
    other.write_bytes(b"\x1f\x8b")

    with WarcStore(tmp_path, info=INFO) as warc:
        stats = warc.statistics()
        location = store_page(warc)
    assert (stats.repaired_files, stats.torn_bytes_dropped) == (2, 11 + 2)
    assert (tmp_path / "crawl-20240101000000-00007.warc.gz").read_bytes() == data
    assert not leftover.exists() and not empty.exists() and other.exists()
    assert location.filename.endswith("-00009.warc.gz")  # serials continue past the leftovers


def test_warc_date_keeps_microseconds() -> None:
    assert warc_date(0.0) == "1970-01-01T00:00:00.000000Z"
    assert warc_date(1_700_000_000.123456) == "2023-11-14T22:13:20.123456Z"


def test_a_failed_write_leaves_no_partial_member_behind(tmp_path: Path) -> None:
    class DiskFullHalfway:
        def __init__(self, f: io.FileIO) -> None:
            self.f = f

        def write(self, data: memoryview) -> int:
            self.f.write(data[: len(data) // 2])
            raise OSError(28, "No space left on device")

        def __getattr__(self, name: str) -> object:
            return getattr(self.f, name)

    with WarcStore(tmp_path, info=INFO) as warc:
        store_page(warc, 0)
        real = warc._out
        assert real is not None
        warc._out = DiskFullHalfway(real)  # type: ignore[assignment]
        with pytest.raises(StoreFull, match="store full: cannot write .*No space left on device"):
            store_page(warc, 1)
        warc._out = real
        store_page(warc, 2)
    uris = [h.get_header("WARC-Target-URI") for h, t, _ in records(finished(tmp_path)[0]) if t == "response"]
    assert uris == ["http://example.test/page0.html", "http://example.test/page2.html"]


# -- revisit, metadata and dns records ----------------------------------------------------------------


ORIGINAL = Revisit("http://example.test/page0.html", "2023-11-14T22:13:20.250000Z", "<urn:uuid:0>", PROFILE_IDENTICAL)


def test_a_revisit_is_a_revisit_record_with_the_head_only_and_refers_to_the_original(tmp_path: Path) -> None:
    """The Common Crawl fork once wrote revisits as ``WARC-Type: response`` (peers.md §2): not here."""
    with WarcStore(tmp_path, info=INFO) as warc:
        capture = store_page(warc, 1, revisit=ORIGINAL)
    assert capture.record_type == "revisit"
    [path] = finished(tmp_path)
    (_, _, _), (req, _, _), (rev, rev_type, block) = records(path)
    assert rev_type == "revisit" and rev.get_header("WARC-Type") == "revisit"
    assert block == RESPONSE  # the payload is not stored again
    assert rev.get_header("WARC-Target-URI") == "http://example.test/page1.html"
    assert rev.get_header("WARC-Profile") == "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
    assert rev.get_header("WARC-Refers-To-Target-URI") == ORIGINAL.uri
    assert rev.get_header("WARC-Refers-To-Date") == ORIGINAL.date
    assert rev.get_header("WARC-Refers-To") == ORIGINAL.record_id
    assert rev.get_header("WARC-Payload-Digest") == sha1_b32(BODY)  # the digest that was compared
    assert rev.get_header("WARC-Block-Digest") == sha1_b32(RESPONSE)
    assert req.get_header("WARC-Concurrent-To") == rev.get_header("WARC-Record-ID")


def test_metadata_record_follows_its_response(tmp_path: Path) -> None:
    fields = [("fetchTimeMs", "12"), ("outlink", "http://example.test/a\r\nWARC-Type: x"), ("outlink", "http://b.test/")]
    with WarcStore(tmp_path, info=INFO) as warc:
        warc.store_exchange(Exchange("http://example.test/", None, FETCHED_AT, REQUEST, RESPONSE, BODY), metadata=fields)
    [_, _, (resp, _, _), (meta, meta_type, block)] = records(finished(tmp_path)[0])
    assert meta_type == "metadata" and meta.get_header("Content-Type") == "application/warc-fields"
    assert meta.get_header("WARC-Concurrent-To") == resp.get_header("WARC-Record-ID")
    assert meta.get_header("WARC-Target-URI") == "http://example.test/"
    assert block.decode().splitlines() == [
        "fetchTimeMs: 12", "outlink: http://example.test/a%0D%0AWARC-Type: x", "outlink: http://b.test/"]


def test_dns_record_as_heritrix_writes_it(tmp_path: Path) -> None:
    with WarcStore(tmp_path, info=INFO) as warc:
        warc.store_dns("h1.web.test", ["127.0.1.1"], FETCHED_AT, 60)
    [_, (dns, kind, block)] = records(finished(tmp_path)[0])
    assert kind == "response" and dns.get_header("WARC-Target-URI") == "dns:h1.web.test"
    assert dns.get_header("Content-Type") == "text/dns"
    assert block == b"20231114221320\nh1.web.test.\t60\tIN\tA\t127.0.1.1\n"


@pytest.mark.skipif(shutil.which("warcio", path=str(Path(sys.executable).parent)) is None, reason="no warcio CLI")
def test_warcio_check_accepts_revisit_metadata_and_dns_records(tmp_path: Path) -> None:
    with WarcStore(tmp_path, info=INFO) as warc:
        warc.store_exchange(Exchange("http://example.test/", "127.0.0.1", FETCHED_AT, REQUEST, RESPONSE, BODY),
                            metadata=[("outlink", "http://example.test/x")])
        store_page(warc, 1, revisit=ORIGINAL)
        warc.store_dns("example.test", ["127.0.0.1"], FETCHED_AT, 60)
    [path] = finished(tmp_path)
    check = subprocess.run([str(Path(sys.executable).parent / "warcio"), "check", "-v", str(path)],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_forked_child_never_repeats_its_parents_record_ids() -> None:
    """The ids' generator is reseeded in a forked child (agents are started by a supervisor that may fork)."""
    import os

    from store.warc import _record_id

    _record_id()  # the parent's generator in use before the fork
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, then out at once
        os.write(write, "\n".join(_record_id() for _ in range(3)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        child = set(f.read().split("\n"))
    parent = {_record_id() for _ in range(3)}
    assert len(child) == 3 and not child & parent
