"""A full disk stops the crawl cleanly and says so: real tmpfs mounts, filled for real.

Every writer of the crawl's folder meets a full disk as ``store.errors.StoreFull`` (never as
SIGBUS through a memory mapping, never as a traceback), leaves its files whole, and goes on
(or is reopened from its last checkpoint) once the tmpfs is remounted larger. End to end, a
crawl into a small tmpfs stops with ``stop_reason = "store_full"`` and exit status 3, and
``--resume`` after the remount finishes it with nothing lost.

Needs root to mount tmpfs (as CI and the development machines have); skipped, saying why,
where mounting is impossible.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import shutil
import socket
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from warcio.archiveiterator import ArchiveIterator

from bench.invitro import WebParams
from engine import agent_process
from engine.config import Config, StoreConfig, describe
from engine.ip_table import SharedIpTable
from engine.link_exchange import Inbox, Outbox
from engine.resume import InFlightSlots
from engine.stats import write_json
from engine.channel import MANIFEST
from frontier import snapshot
from frontier.frontier import Frontier
from frontier.settings import FrontierSettings
from frontier.sieve import SLOT_BYTES, MercatorSieve
from frontier.virtualizer import WorkbenchVirtualizer
from store import cdxj
from store.archive import Archive
from store.errors import StoreFull
from store.warc import Exchange
from tests.invitro_harness import (
    WebThread,
    crawl_command,
    page_requests,
    reachable,
    run_crawl,
    url_of,
)

INFO = {"software": "crawl/test", "format": "WARC File Format 1.1"}
REQUEST = b"GET / HTTP/1.1\r\nHost: h.test\r\n\r\n"
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
ARCHIVE = dataclasses.replace(StoreConfig(), dedup="off")  # every page a response record, whatever dedup decides


# -- tmpfs mounts ------------------------------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """``path`` as a tmpfs of ``size``, unmounted on the way out whatever happens."""
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if proc.returncode:
        pytest.skip(f"cannot mount a tmpfs at {path} ({proc.stderr.strip() or 'not root?'}): "
                    "the full-disk tests need real mounts")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def remount(path: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(path)], check=True)


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", "4m") as mount:
        yield mount


def fill(disk: Path, leave: int = 0) -> None:
    """Take every free block of ``disk`` but ``leave`` bytes with a file of its own."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        with pytest.raises(OSError) as full:
            while True:
                os.write(fd, bytes(1 << 16))  # a short write takes the last blocks; the next one fails
        assert full.value.errno == errno.ENOSPC
        os.ftruncate(fd, os.fstat(fd).st_size - leave)
    finally:
        os.close(fd)
    assert shutil.disk_usage(disk).free == leave


def urls(start: int, stop: int) -> list[bytes]:
    return [b"http://h%d.test/page/%d" % (i % 13, i) for i in range(start, stop)]


# -- memory-mapped files: allocated when opened, so a full disk is StoreFull, never SIGBUS ----------


def test_mapped_files_are_allocated_when_opened_so_a_full_disk_is_store_full(disk: Path) -> None:
    SharedIpTable.create(disk / "ip-table", slots=1024)
    table = SharedIpTable(disk / "ip-table", slots=1024)
    slots = InFlightSlots(disk / "in-flight", 64)
    slots.start(3, "http://h.test/cut")  # a fetch the stop below cuts
    slots.close()
    fill(disk)
    ips = [f"10.0.{k >> 8}.{k & 255}" for k in range(1024)]
    for ip in ips:  # slots all over the file are written on the full disk: its blocks are its own
        if table.try_acquire(ip, 1.0, 0.5) is None:
            table.release(ip, 2.0)
    assert {table.try_acquire(ip, 1.5, 0.5) for ip in ips} == {2.0}
    table.close()
    with pytest.raises(StoreFull, match="ip-table.*No space left on device"):
        SharedIpTable.create(disk / "ip-table", slots=1 << 20)
    with pytest.raises(StoreFull, match="in-flight"):
        InFlightSlots(disk / "in-flight", 1 << 20)  # a bigger file, which cannot be had
    (disk / "filler").unlink()
    again = InFlightSlots(disk / "in-flight", 64)
    assert len(again.left_by_crash) == 1, "a failed start keeps the slots of the fetches cut before it"
    again.close()
    fill(disk, leave=256 << 10)  # room for the signature table, not for a Bloom filter of 1.8 MB
    with pytest.raises(StoreFull, match=r"signatures\.bloom \(No space left on device"):  # pybloomfiltermmap3's
        Archive(disk / "warc", "t", dataclasses.replace(StoreConfig(), dedup_capacity=1_000_000), INFO)


# -- the sieve's flush ------------------------------------------------------------------------------


def test_a_sieve_flush_on_a_full_disk_commits_nothing_and_loses_nothing(disk: Path) -> None:
    def open_sieve() -> MercatorSieve:
        return MercatorSieve(disk / "sieve", bucket_bytes=SLOT_BYTES * 10_000, frame_urls=64, fsync=False)

    sieve = open_sieve()
    first, second = urls(0, 500), urls(500, 2500)
    for u in first:
        sieve.enqueue(u)
    sieve.flush()
    assert sieve.dequeue(1000) == first
    sieve.checkpoint()  # the previous checkpoint
    for u in second:  # 2,000 URLs: whole frames of 64, all in aux before the disk fills
        sieve.enqueue(u)
    segments = {p.name: p.stat().st_size for p in (disk / "sieve").glob("ready.*")}
    fill(disk)
    with pytest.raises(StoreFull, match=r"sieve/store~ \(No space left on device; 0 bytes free\)"):
        sieve.flush()
    assert not (disk / "sieve" / "store~").exists()
    assert {p.name: p.stat().st_size for p in (disk / "sieve").glob("ready.*")} == segments
    assert sieve.pending_count == len(second) and sieve.ready_count == 0
    remount(disk, "16m")
    assert sieve.flush() == len(second), "the same sieve goes on once there is room"
    sieve.close(checkpoint=False)
    reopened = open_sieve()  # from the previous checkpoint: its read position, the files since
    assert reopened.dequeue(10_000) == second
    reopened.close()


def test_an_aux_frame_that_does_not_fit_is_cut_back_and_kept_for_later(disk: Path) -> None:
    sieve = MercatorSieve(disk / "sieve", bucket_bytes=SLOT_BYTES * 100_000, frame_urls=4096, fsync=False)
    fill(disk)
    batch = urls(0, 4096)
    with pytest.raises(StoreFull, match="sieve/aux"):
        for u in batch:
            sieve.enqueue(u)
    assert (disk / "sieve" / "aux").stat().st_size == 16, "a torn frame would hide every frame after it"
    remount(disk, "16m")
    sieve.flush()
    assert sieve.dequeue(10_000) == batch
    sieve.close()


# -- the virtualizer's spill ------------------------------------------------------------------------


def test_a_virtualizer_spill_on_a_full_disk_refuses_further_use_and_keeps_the_checkpoint(disk: Path) -> None:
    def open_virtualizer() -> WorkbenchVirtualizer:
        return WorkbenchVirtualizer(disk / "virtualizer", segment_bytes=1 << 20, buffer_bytes=4096, fsync=False)

    virtualizer = open_virtualizer()
    saved = {key: [b"/k%d/%d" % (key, i) for i in range(200)] for key in range(10)}
    for key, items in saved.items():
        virtualizer.append_many(key, items)
    virtualizer.checkpoint()  # the previous checkpoint
    fill(disk)
    with pytest.raises(StoreFull, match="virtualizer"):
        for round_ in range(1000):
            for key in saved:
                virtualizer.append_many(key, [b"/later/%d/%d/%s" % (key, round_, b"x" * 50)] * 10)
    with pytest.raises(StoreFull):  # its lists may point at blocks that never reached the disk
        virtualizer.dequeue(0, 10)
    virtualizer.close(checkpoint=False)
    remount(disk, "16m")
    reopened = open_virtualizer()
    for key, items in saved.items():
        assert reopened.dequeue(key, 10_000) == items
    reopened.close()


# -- the frontier's checkpoint ------------------------------------------------------------------------


def test_a_checkpoint_that_does_not_fit_leaves_the_previous_one_whole(disk: Path) -> None:
    settings = FrontierSettings(host_delay=0.1, ip_delay=0.1, sieve_bucket_bytes=SLOT_BYTES * 1000, fsync=False)
    frontier = Frontier(disk / "frontier", settings)
    frontier.discover([u.decode() for u in urls(0, 100)])
    frontier.checkpoint(0.0, {"n": 1})
    before = (disk / "frontier" / "checkpoint").read_bytes()
    frontier.discover([u.decode() for u in urls(100, 5000)])
    frontier.sieve.prepare_checkpoint()  # the sieve's frames are out: the snapshot is the write that fails
    fill(disk)
    with pytest.raises(StoreFull, match=r"frontier/checkpoint~ \(No space left on device"):
        frontier.checkpoint(1.0, {"n": 2, "big": "x" * 100_000})
    assert (disk / "frontier" / "checkpoint").read_bytes() == before
    assert not (disk / "frontier" / "checkpoint~").exists()
    frontier.close()
    remount(disk, "16m")
    meta, *_ = snapshot.read(disk / "frontier" / "checkpoint")
    assert meta["extra"] == {"n": 1}
    reopened = Frontier(disk / "frontier", settings)
    assert reopened.restore(2.0)[1] == {"n": 1}
    reopened.close()


# -- WARC and CDXJ ------------------------------------------------------------------------------------------


def store_pages(archive: Archive, start: int, count: int, body_bytes: int = 40_000) -> int:
    """Store up to ``count`` pages with incompressible bodies; how many were stored before StoreFull."""
    noise = os.urandom(body_bytes + 1000)
    for k in range(start, start + count):
        body = b"<html><body>%d " % k + noise[k % 1000 : k % 1000 + body_bytes]
        check = archive.examine(status=200, body=body, payload=body, html=True, complete=True)
        exchange = Exchange(f"http://h.test/{k}", "127.0.0.1", 1_700_000_000.0 + k, REQUEST, HEAD, body)
        try:
            archive.store(exchange, status=200, mime="text/html", check=check, page=True, links=[f"http://h.test/{k + 1}"])
        except StoreFull:
            return k - start
    return count


def warc_uris(directory: Path) -> list[str]:
    """Target URIs of the responses of every WARC file, every digest checked by warcio."""
    assert not list(directory.glob("*.open")), "a file was left unfinished"
    uris = []
    for path in sorted(directory.glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f, check_digests="raise"):
                record.content_stream().read()
                if record.rec_type == "response":
                    uris.append(record.rec_headers.get_header("WARC-Target-URI"))
    return uris


def test_a_warc_write_on_a_full_disk_leaves_whole_records_and_an_index_that_agrees(disk: Path) -> None:
    archive = Archive(disk / "warc", "t", ARCHIVE, INFO)
    stored = store_pages(archive, 0, 1000)
    assert 0 < stored < 1000, "the 4 MiB disk must fill in the middle"
    archive.close()  # does not raise: what it cannot finish stays .open, for the next open
    remount(disk, "64m")
    with Archive(disk / "warc", "t", ARCHIVE, INFO) as reopened:  # repairs and finishes every file
        assert store_pages(reopened, 1000, 3) == 3, "the store goes on once there is room"
    expected = [f"http://h.test/{k}" for k in [*range(stored), 1000, 1001, 1002]]
    assert warc_uris(disk / "warc") == expected
    indexed = sorted(e.url for p in cdxj.index_files(disk / "warc") for e in map(cdxj.parse_line, p.read_bytes().splitlines()))
    assert indexed == sorted(expected)


def test_a_cdxj_index_that_does_not_fit_stays_open_and_is_finished_later(disk: Path) -> None:
    writer = cdxj.IndexWriter(disk, "t-20260101000000-00001.warc.gz")
    lines = [cdxj.cdxj_line(f"http://h.test/{k}", "2026-01-01T00:00:00Z", mime="text/html", status=200, digest="sha1:X",
                            length=100, offset=1000 * (2000 - k), filename="t-20260101000000-00001.warc.gz")
             for k in range(2000)]
    for line in lines:
        writer.add(line)
    writer._file.flush()  # type: ignore[union-attr]  # the lines are out of the buffer: the sorted copy is what fails
    fill(disk)
    with pytest.raises(StoreFull, match=r"t-20260101000000-00001\.cdxj \(No space left on device"):
        writer.finish()
    assert not writer.final.exists(), "no half-written index passes for finished"
    assert writer.path.read_bytes() == b"".join(lines)
    remount(disk, "16m")
    writer.finish()
    assert writer.final.read_bytes() == b"".join(sorted(lines)) and not writer.path.exists()


def test_recovery_on_a_full_disk_fails_with_store_full_and_succeeds_later(disk: Path) -> None:
    archive = Archive(disk / "warc", "t", ARCHIVE, INFO)
    stored = store_pages(archive, 0, 800, body_bytes=100)  # an index of 800 lines: 200 kB
    assert stored == 800
    del archive  # a kill -9: the index and the graph segment are .open, their buffers lost
    fill(disk)
    with pytest.raises(StoreFull, match=r"\.cdxj \(No space left on device"):
        Archive(disk / "warc", "t", ARCHIVE, INFO)
    remount(disk, "64m")
    Archive(disk / "warc", "t", ARCHIVE, INFO).close()
    assert warc_uris(disk / "warc") == [f"http://h.test/{k}" for k in range(stored)]


# -- link spools --------------------------------------------------------------------------------------------


def test_a_link_spool_on_a_full_disk_holds_whole_frames_only(disk: Path) -> None:
    outbox = Outbox(disk / "links", 0, 2, buffer_bytes=1 << 30)
    sent = [[f"http://h.test/{k}/{i}" for i in range(50)] for k in range(2000)]
    for k, links in enumerate(sent[:100]):
        outbox.add(1, f"http://h.test/{k}", links)
    outbox.flush()
    fill(disk)
    for k, links in enumerate(sent[100:], 100):
        outbox.add(1, f"http://h.test/{k}", links)
    with pytest.raises(StoreFull, match="links/000-001"):
        outbox.flush()
    assert outbox.pending, "the frames stay buffered for a later write"
    remount(disk, "64m")
    outbox.close()
    received = [links for _, links, _ in Inbox(disk / "links", 1, 2).poll(max_bytes=1 << 30)]
    assert received == sent


# -- stats.json and the manifest ------------------------------------------------------------------------------


def test_a_json_file_that_does_not_fit_leaves_the_previous_one(disk: Path) -> None:
    write_json(disk / "stats.json", {"pages": 1})
    fill(disk)
    with pytest.raises(StoreFull, match=r"stats\.json\.tmp \(No space left on device; 0 bytes free\)"):
        write_json(disk / "stats.json", {"pages": 2, "timeline": ["x" * 100] * 1000})
    assert orjson.loads((disk / "stats.json").read_bytes()) == {"pages": 1}
    assert not (disk / "stats.json.tmp").exists()


# -- end to end: a crawl fills a small tmpfs, stops, and resumes after a remount ------------------------------

# Binary files (incompressible) make the WARC files grow fast; the tmpfs holds the crawl's fixed files
# (the IP table's 20 MiB, the reserve, the in-flight slots) and a few MB more: it fills mid-crawl.
WEB = WebParams(hosts=40, hosts_per_ip=4, mean_pages=30, max_pages=60, mean_links=10, page_bytes=4000,
                frac_binary=0.3, binary_bytes=20000, robots_crawl_delay_share=0.0)  # no slow tail
SETTINGS = ["politeness.host_delay=0.05", "politeness.ip_delay=0.01", "engine.fetchers=30",
            "engine.checkpoint_interval=0.3", "store.dedup_capacity=10000"]  # default processes: one per core


def records_of(paths: list[Path]) -> list[tuple[str, str]]:
    """(type, URI) of every record of ``paths``, read with warcio, every digest checked."""
    out = []
    for path in paths:
        with open(path, "rb") as f:
            for record in ArchiveIterator(f, check_digests="raise"):
                record.content_stream().read()
                out.append((record.rec_type, record.rec_headers.get_header("WARC-Target-URI") or ""))
    return out


def test_a_crawl_that_fills_its_disk_stops_store_full_and_resumes_with_nothing_lost(tmp_path: Path) -> None:
    web = WebThread(WEB, tmp_path / "requests.jsonl")
    seeds = web.web.seeds[:10]
    expected = reachable(web.model, seeds)
    try:
        with tmpfs(tmp_path / "disk", "26m") as disk:
            out = disk / "out"
            first = subprocess.run(crawl_command(out, seeds, dns=web.web.dns_address, settings=SETTINGS),
                                   capture_output=True, text=True, timeout=240)
            stopped = orjson.loads((out / "stats.json").read_bytes())
            at_stop = records_of(sorted((out / "warc").glob("*.warc.gz*")))  # .open ones too: whole records only
            still_full = subprocess.run(crawl_command(out, seeds, dns=web.web.dns_address, settings=SETTINGS,
                                                      args=["--resume"]), capture_output=True, text=True, timeout=240)
            refused = orjson.loads((out / "stats.json").read_bytes())
            remount(disk, "256m")
            resumed = run_crawl(out, seeds, dns=web.web.dns_address, settings=SETTINGS, args=["--resume"])
            after = records_of(sorted((out / "warc").glob("*.warc.gz")))
            assert not list((out / "warc").glob("*.open")), "a file was left unfinished after the resume"
    finally:
        log = web.stop()

    assert first.returncode == 3, first.stderr
    lines = first.stderr.splitlines()
    full = [line for line in lines if line.startswith("crawl: stopped: the store is full (")]
    assert len(full) == 1 and f"bytes free on {disk}" in full[0] and "--resume" in full[0], first.stderr
    assert not [line for line in lines if "Traceback" in line or "Fatal Python error" in line  # SIGBUS says so
                or "died" in line or line.startswith("crawl: error")]
    assert stopped["stop_reason"] == "store_full" and stopped["restarts"] == 0
    assert stopped["store_full"]["mount"] == str(disk) and stopped["store_full"]["free_bytes"] < 1 << 20
    # resumed before making room: it stops at once, says so again, and restarts nothing
    assert still_full.returncode == 3, still_full.stderr
    assert [line for line in still_full.stderr.splitlines() if line.startswith("crawl: stopped: the store is full (")]
    assert "Traceback" not in still_full.stderr and "died" not in still_full.stderr
    assert refused["stop_reason"] == "store_full" and refused["restarts"] == 0

    stored_at_stop = {uri for kind, uri in at_stop if kind in ("response", "revisit") and not uri.endswith("/robots.txt")}
    assert 0 < len(stored_at_stop) < len(expected), "the disk must fill in the middle of the crawl"

    assert resumed.stats["stop_reason"] == "done" and resumed.stats["restarts"] == 0
    requested = Counter(url_of(r, web.model.port) for r in page_requests(log))
    assert set(requested) == expected, f"lost: {sorted(expected - set(requested))[:5]}"
    repeated = {u for u, n in requested.items() if n > 1}
    assert not repeated & stored_at_stop, "a page stored before the stop was fetched again"
    in_flight = sum(agent["resumed"].get("in_flight_at_crash", 0) for agent in resumed.stats["agents"])
    assert len(repeated) <= in_flight, (sorted(repeated)[:5], in_flight)
    stored = Counter(uri for kind, uri in after if kind in ("response", "revisit"))
    assert expected <= set(stored) and not [u for u in expected if stored[u] > 1]


def test_a_crawl_that_cannot_start_for_lack_of_room_says_so_and_writes_its_stats(disk: Path) -> None:
    out = disk / "out"  # 4 MiB: room for the reserve and the manifest, not for the IP table's 16 MiB
    proc = subprocess.run(crawl_command(out, ["http://h00000.test/"], dns=None, settings=["engine.processes=2"]),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert "crawl: stopped: the store is full (" in proc.stderr and f"could not write {out / 'ip-table'};" in proc.stderr
    assert "Traceback" not in proc.stderr
    stats = orjson.loads((out / "stats.json").read_bytes())
    assert stats["stop_reason"] == "store_full" and stats["pages"] == 0 and stats["store_full"]["who"] == "the supervisor"
    assert not (out / "ip-table").exists() and not (out / "reserve").exists()
    assert orjson.loads((out / "crawl.json").read_bytes())["agents"] == 2


def test_an_agent_that_finds_no_room_to_open_its_files_exits_3_and_says_why(disk: Path) -> None:
    out = disk / "out"
    config = Config()
    config.store.dir = str(out)
    config.store.dedup = "off"
    out.mkdir()
    write_json(out / MANIFEST, {"version": 1, "agents": 1, "config": describe(config), "seeds": []})
    fill(disk)
    supervisor_end, agent_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with supervisor_end:
        code = agent_process.main([str(out), "0", str(agent_end.detach())])
        supervisor_end.settimeout(10)
        said = orjson.loads(supervisor_end.makefile("rb").readline())
    assert code == 3, "a restart would only meet the full disk again"
    assert said["store_full"]["path"].startswith(str(out)) and "No space left on device" in said["store_full"]["message"]
