"""store/archive.py: revisits for identical payloads, near-duplicates stored in full (or skipped), CDXJ
lookups that land on the record, the link graph, repair after kill -9, a full disk (a real one: a tmpfs
of a few hundred KB), and ``crawl warc verify``'s check of what revisits promise."""

from __future__ import annotations

import dataclasses
import io
import os
import sqlite3
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

from engine.config import ConfigError, StoreConfig, load
from engine.warc_cli import main as warc_main
from engine.warc_cli import read_member, verify, verify_file
from store import cdxj, linkgraph
from store.archive import NEAR_DUPLICATE_FIELD, Archive, Check
from store.dedup import Original
from store.errors import StoreFull
from store.recovery import metadata_fields
from store.signature import html_signature
from store.warc import PROFILE_IDENTICAL, Exchange, Revisit, WarcStore, end_of_complete_members, payload_digest

INFO = {"software": "crawl/test", "format": "WARC File Format 1.1"}
REQUEST = b"GET / HTTP/1.1\r\nHost: example.test\r\n\r\n"
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"


def settings(**changes: object) -> StoreConfig:
    return dataclasses.replace(StoreConfig(), **{"dedup_capacity": 10_000, **changes})  # type: ignore[arg-type]


def page(n: int, edition: int = 0) -> bytes:
    letters = "".join(chr(ord("a") + int(d)) for d in str(n))  # digits would not tell pages apart
    words = " ".join(f"word{letters}x{k}" for k in range(200))
    return f'<html><body class="c{edition}"><p>Edition {edition}</p><p>{words}</p></body></html>'.encode()


def store(archive: Archive, url: str, body: bytes, *, status: int = 200, links: tuple[str, ...] = (),
          truncated: str | None = None, when: float = 1_700_000_000.0) -> tuple[Check, str]:
    check = archive.examine(status=status, body=body, payload=body, html=True, complete=truncated is None)
    exchange = Exchange(url, "127.0.0.1", when, REQUEST, HEAD.replace(b"200 OK", b"%d X" % status), body, truncated)
    capture = archive.store(exchange, status=status, mime="text/html", check=check, page=True, links=links)
    return check, capture.record_type if capture is not None else "skipped"


def records(directory: Path) -> Iterator:  # type: ignore[type-arg]
    for path in sorted(directory.glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f, check_digests="raise"):
                record.content_stream().read()
                yield record


def by_type(directory: Path, kind: str) -> dict[str, object]:
    return {r.rec_headers.get_header("WARC-Target-URI"): r.rec_headers for r in records(directory) if r.rec_type == kind}


def metadata_of(directory: Path) -> dict[str, list[tuple[str, str]]]:
    """The fields of each metadata record, by target URI."""
    found = {}
    for path in sorted(directory.glob("*.warc.gz")):
        with open(path, "rb") as f:
            for r in ArchiveIterator(f):
                if r.rec_type == "metadata":
                    found[r.rec_headers.get_header("WARC-Target-URI")] = metadata_fields(r.content_stream().read())
    return found


# -- dedup -------------------------------------------------------------------------------------------------


def test_the_same_content_under_n_urls_is_one_response_and_n_minus_1_revisits(tmp_path: Path) -> None:
    urls = [f"http://h{k}.test/copy.html" for k in range(4)]
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        kinds = [store(archive, url, page(1), when=1_700_000_000.0 + k)[1] for k, url in enumerate(urls)]
        stats = archive.statistics()
    assert kinds == ["response", "revisit", "revisit", "revisit"]
    responses, revisits = by_type(tmp_path, "response"), by_type(tmp_path, "revisit")
    assert list(responses) == urls[:1] and sorted(revisits) == urls[1:]
    original = responses[urls[0]]
    for headers in revisits.values():
        assert headers.get_header("WARC-Type") == "revisit"  # type: ignore[attr-defined]
        assert headers.get_header("WARC-Profile") == PROFILE_IDENTICAL  # type: ignore[attr-defined]
        assert headers.get_header("WARC-Refers-To-Target-URI") == urls[0]  # type: ignore[attr-defined]
        assert headers.get_header("WARC-Refers-To-Date") == original.get_header("WARC-Date")  # type: ignore[attr-defined]
        assert headers.get_header("WARC-Refers-To") == original.get_header("WARC-Record-ID")  # type: ignore[attr-defined]
        assert headers.get_header("WARC-Payload-Digest") == original.get_header("WARC-Payload-Digest")  # type: ignore[attr-defined]
    assert (stats.responses, stats.revisits_identical, stats.near_duplicates_stored, stats.near_duplicates_skipped) == (1, 3, 0, 0)
    assert stats.dedup is not None and stats.dedup.bloom_hits == 3 and stats.dedup.bloom_false_positives == 0


def test_a_near_duplicate_is_a_full_response_whose_metadata_names_the_capture_it_nearly_repeats(tmp_path: Path) -> None:
    a, edition = "http://h.test/a", "http://h.test/a?edition=7"
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        store(archive, a, page(1, edition=0))
        check, kind = store(archive, edition, page(1, edition=7), links=("http://h.test/x",))
        _, other = store(archive, "http://h.test/b", page(2))
        stats = archive.statistics()
    assert (kind, other) == ("response", "response") and check.duplicate and check.original is None
    assert not by_type(tmp_path, "revisit")
    original, near = by_type(tmp_path, "response")[a], by_type(tmp_path, "response")[edition]
    assert near.get_header("WARC-Payload-Digest") == check.digest == payload_digest(page(1, edition=7))  # type: ignore[attr-defined]
    fields = metadata_of(tmp_path)[edition]
    named = " ".join(original.get_header(h) for h in ("WARC-Target-URI", "WARC-Date", "WARC-Record-ID"))  # type: ignore[attr-defined]
    assert (NEAR_DUPLICATE_FIELD, named) in fields and ("outlink", "http://h.test/x") in fields
    assert not [f for f in metadata_of(tmp_path)[a] if f[0] == NEAR_DUPLICATE_FIELD]
    assert (stats.responses, stats.revisits_identical, stats.near_duplicates_stored, stats.near_duplicates_skipped) == (3, 0, 1, 0)


def test_a_copy_of_a_near_duplicate_is_a_revisit_of_the_near_duplicate(tmp_path: Path) -> None:
    """A near-duplicate stored in full holds its own payload: an identical copy refers to it, not to the first page."""
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        kinds = [store(archive, url, page(1, edition=e), when=1_700_000_000.0 + k)[1]
                 for k, (url, e) in enumerate((("http://h.test/a", 0), ("http://h.test/e5", 5), ("http://h.test/e5-copy", 5),
                                               ("http://h.test/a-copy", 0)))]
    assert kinds == ["response", "response", "revisit", "revisit"]
    revisits, responses = by_type(tmp_path, "revisit"), by_type(tmp_path, "response")
    for copy, original in (("http://h.test/e5-copy", "http://h.test/e5"), ("http://h.test/a-copy", "http://h.test/a")):
        assert revisits[copy].get_header("WARC-Refers-To-Target-URI") == original  # type: ignore[attr-defined]
        assert revisits[copy].get_header("WARC-Payload-Digest") == responses[original].get_header("WARC-Payload-Digest")  # type: ignore[attr-defined]
        assert revisits[copy].get_header("WARC-Profile") == PROFILE_IDENTICAL  # type: ignore[attr-defined]
    assert all(verify_file(path) == "" for path in tmp_path.glob("*.warc.gz"))
    assert verify(tmp_path) == 0


def test_skipped_near_duplicates_are_not_written_but_counted(tmp_path: Path) -> None:
    with Archive(tmp_path, "t", settings(near_duplicates="skip"), INFO) as archive:
        kinds = [store(archive, f"http://h.test/{k}", body)[1]
                 for k, body in enumerate((page(1), page(1, 5), page(1, 5), page(1), page(2)))]
        stats = archive.statistics()
    assert kinds == ["response", "skipped", "skipped", "revisit", "response"]
    uris = {r.rec_headers.get_header("WARC-Target-URI") for r in records(tmp_path) if r.rec_type != "warcinfo"}
    assert uris == {"http://h.test/0", "http://h.test/3", "http://h.test/4"}, "a skipped fetch leaves no record"
    assert (stats.responses, stats.revisits_identical, stats.near_duplicates_stored, stats.near_duplicates_skipped) == (2, 1, 0, 2)
    assert sum(1 for index in tmp_path.glob("*.cdxj") for _ in index.read_bytes().splitlines()) == 3


def test_a_bad_near_duplicates_setting_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"store\.near_duplicates.*must be store or skip, got 'drop'"):
        load(None, ["store.near_duplicates=drop"])
    with pytest.raises(ValueError, match="near_duplicates must be one of store, skip, not 'drop'"):
        Archive(tmp_path, "t", settings(near_duplicates="drop"), INFO)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("mode", "expected", "near"),
    [("near", ["response", "response", "revisit"], 1), ("exact", ["response", "response", "revisit"], 0),
     ("off", ["response", "response", "response"], 0)],
)
def test_dedup_modes(tmp_path: Path, mode: str, expected: list[str], near: int) -> None:
    with Archive(tmp_path, "t", settings(dedup=mode), INFO) as archive:
        kinds = [store(archive, f"http://h.test/{k}", body)[1] for k, body in enumerate((page(1), page(1, 5), page(1)))]
        assert archive.statistics().near_duplicates_stored == near
    assert kinds == expected


def test_a_table_from_before_payload_keys_still_finds_identical_payloads(tmp_path: Path) -> None:
    """A signature table written by an earlier version holds near signatures only: one whose capture has
    the same payload digest is an identical revisit, one whose capture differs a near-duplicate."""
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        assert archive.signatures is not None
        first = Original("http://h.test/old", "2023-11-14T22:13:20.000000Z", "<urn:uuid:old>", payload_digest(page(1)))
        archive.signatures.remember(html_signature(page(1)), first)
        same = archive.examine(status=200, body=page(1), payload=page(1), html=True, complete=True)
        near = archive.examine(status=200, body=page(1, 3), payload=page(1, 3), html=True, complete=True)
    assert same.original == first and same.near is None
    assert near.original is None and near.near == first


def test_errors_and_truncated_bodies_take_no_part(tmp_path: Path) -> None:
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        assert store(archive, "http://h.test/cut", page(1), truncated="length")[1] == "response"
        assert store(archive, "http://h.test/whole", page(1))[1] == "response"  # a truncated page is no original
        assert store(archive, "http://h.test/404a", page(9), status=404)[1] == "response"
        assert store(archive, "http://h.test/404b", page(9), status=404)[1] == "response"
        assert store(archive, "http://h.test/empty", b"")[1] == "response"
        assert store(archive, "http://h.test/empty2", b"")[1] == "response"


def test_signatures_outlive_the_archive_and_the_bloom_file(tmp_path: Path) -> None:
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        store(archive, "http://h.test/first", page(1))
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        assert store(archive, "http://h.test/again", page(1))[1] == "revisit"
    (tmp_path / "t-signatures.bloom").unlink()
    with Archive(tmp_path, "t", settings(dedup_error_rate=1e-4), INFO) as archive:  # rebuilt from the table
        assert store(archive, "http://h.test/third", page(1))[1] == "revisit"
        assert archive.statistics().dedup.bloom_error_rate == 1e-4  # type: ignore[union-attr]
    with Archive(tmp_path, "t", settings(), INFO) as archive:  # sized differently again: rebuilt again
        assert store(archive, "http://h.test/fourth", page(1))[1] == "revisit"


def test_a_signature_table_of_the_former_layout_is_read_and_written_as_it_is(tmp_path: Path) -> None:
    """Before rows were appended, the table was keyed by the signature itself: a crawl resumed from
    such a folder still finds its originals, and adds its own in that layout."""
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        store(archive, "http://h.test/first", page(1))
    table = tmp_path / "t-signatures.sqlite"
    with sqlite3.connect(table) as db:  # the same rows, in the former layout
        rows = db.execute("SELECT key, tail, uri, date, record_id, digest FROM signatures").fetchall()
        db.execute("DROP TABLE signatures")
        db.execute("CREATE TABLE signatures (key INTEGER PRIMARY KEY, tail INTEGER NOT NULL, uri TEXT NOT NULL, "
                    "date TEXT NOT NULL, record_id TEXT NOT NULL, digest TEXT NOT NULL)")
        db.executemany("INSERT INTO signatures VALUES (?, ?, ?, ?, ?, ?)", rows)
    (tmp_path / "t-signatures.bloom").unlink()  # rebuilt from the table
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        assert store(archive, "http://h.test/again", page(1))[1] == "revisit"
        assert store(archive, "http://h.test/second", page(2))[1] == "response"
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        assert store(archive, "http://h.test/second-again", page(2))[1] == "revisit"
    with sqlite3.connect(table) as db:
        assert [c[1] for c in db.execute("PRAGMA table_info(signatures)")][0] == "key"
        assert db.execute("SELECT count(*) FROM signatures").fetchone()[0] == len(rows) * 2


# -- crawl warc verify: what revisits promise -------------------------------------------------------------


def test_verify_follows_revisits_to_originals_in_older_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Archive(tmp_path, "t", settings(warc_max_bytes=2_000), INFO) as archive:
        for k in range(6):  # a file per page or so: each revisit's original lies in an older file
            store(archive, f"http://h.test/{k}", page(k % 2), when=1_700_000_000.0 + k)
    assert len(list(tmp_path.glob("*.warc.gz"))) >= 3 and len(by_type(tmp_path, "revisit")) == 4
    assert verify(tmp_path) == 0
    assert capsys.readouterr().out.count("ok\t") == len(list(tmp_path.glob("*.warc.gz")))


def revisit_file(directory: Path, refers_to: Original, body: bytes) -> Path:
    """A WARC file holding one revisit of ``refers_to`` whose payload is ``body``."""
    with WarcStore(directory, prefix="z", info=INFO) as warc:
        capture = warc.store_exchange(
            Exchange("http://h.test/copy", None, 1_700_000_100.0, REQUEST, HEAD, body),
            revisit=Revisit(refers_to.uri, refers_to.date, refers_to.record_id, PROFILE_IDENTICAL),
        )
    archive_path = directory / capture.filename
    (directory / cdxj.index_name(capture.filename)).write_bytes(cdxj.cdxj_line(
        "http://h.test/copy", capture.date, mime="warc/revisit", status=200, digest=capture.payload_digest,
        length=capture.length, offset=capture.offset, filename=capture.filename))
    return archive_path


@pytest.mark.parametrize("case", ["other payload", "no original"])
def test_verify_fails_a_revisit_that_does_not_repeat_its_original(tmp_path: Path, case: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """What the near-duplicate revisits of old did (their payload differs), or a revisit whose original is gone."""
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        store(archive, "http://h.test/a", page(1))
    [response] = [r for r in records(tmp_path) if r.rec_type == "response"]
    get = response.rec_headers.get_header
    original = Original(get("WARC-Target-URI"), get("WARC-Date"), get("WARC-Record-ID"), get("WARC-Payload-Digest"))
    if case == "other payload":
        bad = revisit_file(tmp_path, original, page(1, edition=3))
        problem = f"the revisit of http://h.test/copy says http://h.test/a {original.date} {payload_digest(page(1, edition=3))}"
    else:
        bad = revisit_file(tmp_path, dataclasses.replace(original, record_id="<urn:uuid:gone>"), page(1))
        problem = "the revisit of http://h.test/copy refers to <urn:uuid:gone>, which is not in the archive"
    assert verify_file(bad) == "", "each file alone is sound: only the archive as a whole shows the broken promise"
    assert verify(tmp_path) == 1
    out = capsys.readouterr().out
    assert f"FAIL\t{bad.name}\t{problem}" in out and out.count("ok\t") == 1


# -- index and graph ---------------------------------------------------------------------------------------


def test_cdxj_lookup_seeks_to_a_record_warcio_reads(tmp_path: Path) -> None:
    urls = [f"http://www.h{k % 3}.test:8080/p/{k}?b=2&a={k}" for k in range(30)]
    with Archive(tmp_path, "t", settings(warc_max_bytes=20_000), INFO) as archive:
        for k, url in enumerate(urls):
            store(archive, url, page(k))
        store(archive, urls[0] + "&copy", page(0))  # a revisit is indexed too
    indexes = sorted(tmp_path.glob("*.cdxj"))
    assert len(indexes) == len(list(tmp_path.glob("*.warc.gz"))) > 1, "one index per WARC file, files rotated"
    for index in indexes:
        lines = index.read_bytes().splitlines()
        assert lines == sorted(lines), "a finished index is sorted"
    for url in urls + [urls[0] + "&copy"]:
        [entry] = cdxj.lookup(tmp_path, url)
        with open(tmp_path / entry.filename, "rb") as f:
            f.seek(entry.offset)
            record = next(iter(ArchiveIterator(io.BytesIO(f.read(entry.length)), check_digests="raise")))
        assert record.rec_headers.get_header("WARC-Target-URI") == url
        assert record.rec_type == ("revisit" if url.endswith("&copy") else "response")
        assert entry.mime == ("warc/revisit" if url.endswith("&copy") else "text/html") and entry.status == 200
        assert record.rec_headers.get_header("WARC-Payload-Digest") == entry.digest
    assert list(cdxj.lookup(tmp_path, "http://www.h0.test:8080/p/0?b=2&a=0#x")) == []  # exact URLs only


def two_machines_archives(tmp_path: Path, prefixes: tuple[str, str]) -> list[str]:
    """Two output folders ``a`` and ``b``, their pages of the same hosts interleaved, files rotated."""
    urls = [f"http://h{k % 4}.test/p/{k}" for k in range(40)]
    for folder, prefix in zip("ab", prefixes, strict=True):
        with Archive(tmp_path / folder / "warc", prefix, settings(warc_max_bytes=20_000), INFO) as archive:
            for k, url in enumerate(urls):
                if k % 2 == (folder == "b"):
                    store(archive, url, page(k))
    return urls


def test_cdxj_merge_streams_the_indexes_of_several_folders_into_one_sorted_index(tmp_path: Path) -> None:
    urls = two_machines_archives(tmp_path, ("crawl-a-a0", "crawl-b-a0"))
    inputs = sorted((tmp_path / "a" / "warc").glob("*.cdxj")) + sorted((tmp_path / "b" / "warc").glob("*.cdxj"))
    assert len(inputs) > 2, "several files per folder"
    everything = sorted(line for path in inputs for line in path.read_bytes().splitlines())
    assert warc_main(["cdxj-merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "all.cdxj")]) == 0
    assert (tmp_path / "all.cdxj").read_bytes().splitlines() == everything, "every line once, sorted"
    assert warc_main(["cdxj-merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "rel.cdxj"),
                      "--relative-to", str(tmp_path)]) == 0
    lines = (tmp_path / "rel.cdxj").read_bytes().splitlines()
    assert lines == sorted(lines) and len(lines) == len(urls)
    for line in lines:  # each filename resolves from the collection folder to its record
        entry = cdxj.parse_line(line)
        assert entry.filename.startswith(("a/warc/crawl-a-a0-", "b/warc/crawl-b-a0-"))
        assert f"WARC-Target-URI: {entry.url}\r\n".encode() in read_member(tmp_path / entry.filename, entry.offset,
                                                                           entry.length)


def test_cdxj_merge_refuses_a_name_in_two_folders_and_an_open_index(tmp_path: Path) -> None:
    two_machines_archives(tmp_path, ("crawl-a0", "crawl-a0"))  # two machines without their node in the names
    args = ["cdxj-merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "all.cdxj")]
    assert warc_main(args) == 1 and not (tmp_path / "all.cdxj").exists()
    assert warc_main([*args, "--relative-to", str(tmp_path)]) == 0, "paths from a collection folder do not clash"
    (tmp_path / "b" / "warc" / "crawl-a0-x.cdxj.open").touch()
    assert warc_main([*args, "--relative-to", str(tmp_path)]) == 1


@given(st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"") + b"\n"), max_size=80), st.integers(1, 9))
@examples(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_an_index_sorted_in_runs_is_the_lines_sorted_and_leaves_no_scratch(tmp_path: Path, lines: list[bytes],
                                                                          run: int) -> None:
    final = tmp_path / "x.cdxj"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cdxj, "SORT_RUN", run)  # small runs: many of them, and runs of one line
        cdxj.write_sorted(iter(lines), final)
    assert final.read_bytes() == b"".join(sorted(lines))
    assert [p.name for p in tmp_path.iterdir()] == ["x.cdxj"]


@pytest.mark.parametrize(
    ("url", "key"),
    [("http://www.Example.com/A/b/?z=1&a=2", "com,example)/a/b?a=2&z=1"), ("https://example.com:443/", "com,example)/"),
     ("http://example.com:8080", "com,example:8080)/"), ("http://127.0.0.1/x", "127.0.0.1)/x"), ("dns:example.com", "dns:example.com")],
)
def test_surt_keys(url: str, key: str) -> None:
    assert cdxj.surt(url) == key


def test_page_and_host_graph(tmp_path: Path) -> None:
    a, b, c = "http://a.test/", "http://a.test/x", "http://b.test:81/"
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        store(archive, a, page(1), links=(b, c, b, "http://c.test/never"))
        store(archive, b, page(2), links=(a,))
        store(archive, c, page(1), links=(a, b))  # a duplicate: links given are kept as given
    pages, hosts = linkgraph.read_graph(tmp_path)
    edges = {(pages.names.get(int(pages.ids[s])), int(pages.ids[d])) for s, d in pages.edges}
    assert edges == {(a, linkgraph.node_id(b)), (a, linkgraph.node_id(c)), (a, linkgraph.node_id("http://c.test/never")),
                     (b, linkgraph.node_id(a)), (c, linkgraph.node_id(a)), (c, linkgraph.node_id(b))}
    host_edges = {(hosts.names[int(hosts.ids[s])], int(hosts.ids[d]), int(w)) for (s, d), w in zip(hosts.edges, hosts.weights)}
    assert ("a.test", linkgraph.node_id("a.test"), 2) in host_edges  # two pages of a.test link a.test
    assert ("b.test:81", linkgraph.node_id("a.test"), 1) in host_edges
    assert pages.index(linkgraph.node_id(a)) < len(pages.ids)


# -- crash safety -------------------------------------------------------------------------------------------


CHILD = """
import sys, time
from pathlib import Path
from tests.test_archive import page, settings, store, INFO
from store.archive import Archive
archive = Archive(Path(sys.argv[1]), "t", settings(), INFO)
for k in range(40):
    store(archive, f"http://h.test/{k}", page(k % 30), links=(f"http://h.test/{k + 1}",))
print("stored", flush=True)
time.sleep(60)
"""


def test_after_kill_9_the_index_and_graph_are_rebuilt_to_agree_with_the_warc(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                             cwd=Path(__file__).parent.parent)
    assert child.stdout is not None and child.stdout.readline() == "stored\n"
    child.kill()
    child.wait()
    [warc] = tmp_path.glob("*.warc.gz.open")
    stem = warc.name.removesuffix(".warc.gz.open")
    # the buffers were lost with the process; tear what did reach the files, and the WARC's tail too
    for suffix in (".cdxj.open", ".graph.open"):
        with open(tmp_path / (stem + suffix), "ab") as f:
            f.write(b"\0\0torn")
    with open(warc, "ab") as f:
        f.write(zlib.compress(b"WARC/1.1\r\n" * 100, wbits=31)[:-9])
    with Archive(tmp_path, "t", settings(), INFO) as archive:
        stats = archive.statistics()
        store(archive, "http://h.test/after", page(99))
    assert not list(tmp_path.glob("*.open"))
    for path in tmp_path.glob("*.warc.gz"):
        assert verify_file(path) == "", path
    assert stats.repaired_files == 1 and stats.index_lines_rebuilt == 40 and stats.graph_pages_rebuilt == 40
    revisits = by_type(tmp_path, "revisit")
    assert len(revisits) == 10 and len(by_type(tmp_path, "response")) == 31
    pages, _ = linkgraph.read_graph(tmp_path)
    assert len(pages.edges) == 40 and set(pages.names.values()) == {f"http://h.test/{k}" for k in range(40)} | {"http://h.test/after"}


# -- a full disk ---------------------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of 400 KiB (needs root, as CI and the development machines have)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (not root?)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_raises_store_full_and_leaves_only_whole_records(small_disk: Path) -> None:
    archive = Archive(small_disk, "t", settings(dedup_capacity=1000), INFO)
    noise = os.urandom(30_000)  # incompressible: the disk fills after a dozen pages
    stored = 0
    with pytest.raises(StoreFull, match=r"store full: cannot write .*t-.*\(No space left on device; \d+ bytes free\)"):
        for k in range(100):
            store(archive, f"http://h.test/{k}", page(k) + noise[k:])
            stored += 1
    assert 0 < stored < 100
    archive.close()  # does not raise: what it cannot finish stays .open
    for path in small_disk.glob("*.warc.gz*"):
        assert end_of_complete_members(path) == path.stat().st_size, "a half-written record"
    subprocess.run(["mount", "-o", "remount,size=4m", str(small_disk)], check=True)
    with Archive(small_disk, "t", settings(dedup_capacity=1000), INFO):
        pass
    assert not list(small_disk.glob("*.open"))
    uris = [r.rec_headers.get_header("WARC-Target-URI") for r in records(small_disk) if r.rec_type == "response"]
    assert uris == [f"http://h.test/{k}" for k in range(stored)]
    for path in small_disk.glob("*.warc.gz"):
        assert verify_file(path) == ""


def test_a_store_that_wrote_nothing_leaves_nothing(tmp_path: Path) -> None:
    with Archive(tmp_path, "t", settings(dedup="off", link_graph=False), INFO) as archive:
        assert archive.statistics().files == 0
    assert list(tmp_path.iterdir()) == []
