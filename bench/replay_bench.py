"""Reading archives back (issue 17, item 4): CPU µs per fetch read, warcio's ArchiveIterator against ``store/records.py``.

A takeover reads whole archives back (``engine.takeover.stored_in``: each file's complete members
found by ``store.warc.end_of_complete_members``, then ``engine.resume.replay_file``), and a resumed
agent replays its own (``engine.resume.replay``), fetching nothing meanwhile. This benchmark
crawls the in-vitro web for ``--crawl-seconds`` (or takes the output folder ``--folder`` of an
earlier crawl) and then reads its archive back ``--runs`` times with each reader, alternately:

* ``warcio``: the reader ``replay_file`` was until 2026-11-25 (:func:`warcio_replay_file`), fed
  what ``stored_in`` feeds it (the complete members, as bytes);
* ``records``: ``replay_file`` as it is, fed the same;
* ``scan``: ``end_of_complete_members`` alone, as it was (pieces of 1 MiB) and as it is (16 KiB);
* ``stored_in``: the whole of it, scan included, as a takeover pays it now;
* ``records, file``: ``replay_file`` on the file itself, which stops at a torn member on its own.

Both readers must give the same ``Replayed`` sequence (checked on every run). Figures: the best and
the median CPU µs (``time.process_time``: the machine is shared) per fetch read.

    python -m bench.replay_bench                              # a 30-s crawl of 300 hosts, 5 runs
    python -m bench.replay_bench --folder OUT --runs 3        # an earlier crawl's output folder
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

import store.warc
from bench.runner import crawl, invitro_web
from engine.content import decode_body
from engine.parse import HTML_TYPES, LinkRules, extract_links, parse_location
from engine.pipeline import REDIRECTS
from engine.resume import Replayed, _Stored, replay_file
from engine.takeover import archive_of, stored_in
from store.recovery import links_of, metadata_fields
from store.warc import end_of_complete_members

MAX_BODY = 1 << 20


def warcio_replay_file(f: BinaryIO, *, rules: LinkRules, max_body_bytes: int) -> Iterator[Replayed]:
    """``engine.resume.replay_file`` as it was, through warcio: the reference the new reader must equal."""
    stored: _Stored | None = None
    for record in ArchiveIterator(f):
        kind, headers = record.rec_type, record.rec_headers
        if kind == "metadata" and stored is not None and headers.get_header("WARC-Concurrent-To") == stored.record_id:
            fields = metadata_fields(record.content_stream().read())
            yield stored.replayed(links_of(fields), next((v for n, v in fields if n == "fetchTimeMs"), None))
            stored = None
        elif kind in ("response", "revisit"):
            if stored is not None:
                yield stored.replayed(stored.body_links())
            url = headers.get_header("WARC-Target-URI")
            if url:
                robots = _warcio_robots_body(record, max_body_bytes) if url.endswith("/robots.txt") else b""
                links = _warcio_body_links(record, url, rules, max_body_bytes)
                started = datetime.fromisoformat(headers.get_header("WARC-Date")).timestamp()
                stored = _Stored(url, headers.get_header("WARC-Record-ID"), links, started, robots)
            else:
                stored = None
    if stored is not None:
        yield stored.replayed(stored.body_links())


def _warcio_robots_body(record: Any, limit: int) -> bytes:
    http = record.http_headers
    if record.rec_type != "response" or http is None or not 200 <= int(http.get_statuscode() or 0) < 300:
        return b""
    return decode_body(record.raw_stream.read(), http.get_header("content-encoding"), limit)


def _warcio_body_links(record: Any, url: str, rules: LinkRules, limit: int) -> Callable[[], list[str]]:
    http = record.http_headers
    if record.rec_type != "response" or http is None:
        return list
    status = int(http.get_statuscode() or 0)
    if status in REDIRECTS:
        location = http.get_header("location")
        target = parse_location(location, url, sort_query=rules.sort_query) if location else None
        return lambda: [target] if target else []
    content_type = http.get_header("content-type") or ""
    if status != 200 or content_type.split(";", 1)[0].strip().lower() not in HTML_TYPES:
        return list
    body = record.raw_stream.read()
    encoding = http.get_header("content-encoding")
    return lambda: extract_links(decode_body(body, encoding, limit), url, content_type=content_type, rules=rules).links


def complete(path: Path) -> bytes:
    """What ``stored_in`` reads of a file: its complete members."""
    with open(path, "rb") as f:
        return f.read(end_of_complete_members(path))


def read_with(reader: Callable[..., Iterator[Replayed]], archive: list[bytes]) -> list[Replayed]:
    """What ``reader`` reads from each file's complete members (``archive``)."""
    rules = LinkRules()
    return [page for data in archive for page in reader(io.BytesIO(data), rules=rules, max_body_bytes=MAX_BODY)]


def scan(folder: Path, piece: int) -> None:
    """``end_of_complete_members`` over every file, reading pieces of ``piece`` bytes."""
    saved, store.warc.GZIP_PIECE = store.warc.GZIP_PIECE, piece
    try:
        for path in archive_of(folder):
            end_of_complete_members(path)
    finally:
        store.warc.GZIP_PIECE = saved


def on_files(folder: Path) -> list[Replayed]:
    rules = LinkRules()
    pages = []
    for path in archive_of(folder):
        with open(path, "rb") as f:
            pages += replay_file(f, rules=rules, max_body_bytes=MAX_BODY)
    return pages


def timed(what: Callable[[], object], fetches: int) -> float:
    """CPU µs per fetch of ``what``."""
    started = time.process_time()
    what()
    return (time.process_time() - started) / fetches * 1e6


def measure(folder: Path, runs: int) -> dict[str, dict[str, float]]:
    archive = [complete(path) for path in archive_of(folder)]  # the scan and the reads are stored_in's: timed apart
    expected = read_with(warcio_replay_file, archive)
    fetches = len(expected)
    if not fetches:
        raise SystemExit(f"no fetch stored in {folder}")
    rules = LinkRules()
    kinds: dict[str, Callable[[], float]] = {
        "warcio": lambda: timed(lambda: read_with(warcio_replay_file, archive), fetches),
        "records": lambda: timed(lambda: read_with(replay_file, archive), fetches),
        "scan, 1 MiB pieces (before)": lambda: timed(lambda: scan(folder, 1 << 20), fetches),
        "scan, 16 KiB pieces": lambda: timed(lambda: scan(folder, store.warc.GZIP_PIECE), fetches),
        "stored_in": lambda: timed(lambda: list(stored_in(folder, rules, MAX_BODY)), fetches),
        "records, file": lambda: timed(lambda: on_files(folder), fetches),
    }
    times: dict[str, list[float]] = {kind: [] for kind in kinds}
    for _ in range(runs):
        for kind, run in kinds.items():
            times[kind].append(run())
    assert read_with(replay_file, archive) == expected, "the readers disagree"
    assert list(stored_in(folder, rules, MAX_BODY)) == expected == on_files(folder), "the readers disagree"
    print(f"{fetches} fetches read back, {runs} runs each, CPU µs per fetch:")
    print(f"{'reader':30} {'best':>7} {'median':>7}")
    result = {}
    for kind, values in times.items():
        result[kind] = {"best": round(min(values), 1), "median": round(statistics.median(values), 1)}
        print(f"{kind:30} {min(values):7.1f} {statistics.median(values):7.1f}")
    warcio, records = result["warcio"]["median"], result["records"]["median"]
    print(f"the reader: {warcio / records:.1f}x cheaper; a takeover's read (scan + reader, before / now): "
          f"{result['scan, 1 MiB pieces (before)']['median'] + warcio:.0f} / {result['stored_in']['median']:.0f} µs per fetch")
    return {"fetches": {"count": fetches}, **result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, help="an earlier crawl's output folder (no crawl then)")
    parser.add_argument("--crawl-seconds", type=float, default=30.0)
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if args.folder is not None:
        measure(args.folder, args.runs)
        return
    with tempfile.TemporaryDirectory() as tmp, invitro_web(Path(tmp), args.hosts) as web:
        run = crawl(web, Path(tmp), args.crawl_seconds)
        print(f"crawled {run.stats.get('pages', '?')} pages in {args.crawl_seconds:g} s")
        measure(Path(tmp) / "out", args.runs)


if __name__ == "__main__":
    main()
