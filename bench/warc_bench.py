"""WARC writer benchmark: µs of CPU per request+response record pair, warcio against ``store/warc.py``.

PERF-NOTES.md found WARC gzip to be the largest per-page cost (warcio with its default
gzip: ~1.2 ms per page). This benchmark writes the same exchanges (in-vitro pages of about
15 KB, or synthetic ones if ``bench/invitro`` cannot be imported) with:

* ``warcio``: ``WARCWriter(gzip=True)``, records built by ``create_warc_record`` with block
  and payload digests, written by ``write_request_response_pair`` (warcio's gzip is zlib 9);
* ``warcio+isal1``: the same with warcio's gzip wrapper swapped for ISA-L level 1, to
  separate the cost of compression from the cost of warcio itself;
* ``lean``: ``store.warc.WarcStore`` (headers composed by hand, hashlib sha1, one ISA-L
  level-1 gzip member per record, one write per pair);
* ``lean-zlib1``: ``WarcStore`` with zlib level 1, for comparison.

Each output is read back with warcio's ``ArchiveIterator`` with digests checked. Figures
are the best and the median of ``--runs`` runs, in CPU µs per pair (``time.process_time``,
since the machine is shared). Run: ``.venv/bin/python -m bench.warc_bench [--pages N] [--runs R]``.
"""

from __future__ import annotations

import argparse
import io
import random
import statistics
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

from isal import isal_zlib
from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]
from warcio.warcwriter import GzippingWrapper, WARCWriter  # type: ignore[import-untyped]

import store.warc
from store.warc import Exchange as Fetch
from store.warc import WarcStore

Exchange = tuple[str, bytes, bytes, bytes]  # url, request head, response head, body
INFO = {"software": "crawl warc_bench", "format": "WARC File Format 1.1"}


def exchanges(count: int) -> list[Exchange]:
    """``count`` distinct exchanges: in-vitro pages when available (realistic compression)."""
    try:
        from bench.invitro.model import WebModel, WebParams

        model = WebModel(WebParams(), 8080)
        pages: list[tuple[str, bytes, bytes]] = []
        for url in model.seeds(count):
            r = model.respond_url(url)
            headers = "".join(f"{k}: {v}\r\n" for k, v in r.headers)
            status = f"HTTP/1.1 {r.status} {r.reason}\r\n{headers}Content-Length: {len(r.body)}\r\n\r\n"
            pages.append((url, status.encode(), r.body))
    except Exception:  # the in-vitro web is another module; any page of words will do
        rng = random.Random(1)
        words = "crawler sieve workbench frontier politeness archive robots harbour museum river".split()
        pages = []
        for i in range(count):
            text = " ".join(rng.choice(words) for _ in range(2400))
            body = f"<html><body><p>{text}</p></body></html>".encode()
            status = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n\r\n"
            pages.append((f"http://h{i:05d}.web.test/", status.encode(), body))
    pages = [pages[i % len(pages)] for i in range(count)]  # the model may have fewer hosts than count
    out = []
    for url, head, body in pages:
        host = url.split("/")[2]
        request = (
            f"GET {url[len('http://') + len(host):] or '/'} HTTP/1.1\r\nHost: {host}\r\n"
            "User-Agent: crawl/0.1\r\nAccept: text/html,*/*;q=0.8\r\nAccept-Encoding: gzip, deflate\r\n\r\n"
        )
        out.append((url, request.encode(), head, body))
    return out


def write_warcio(path: Path, pages: list[Exchange]) -> None:
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True, warc_version="1.1")
        writer.write_record(writer.create_warcinfo_record(path.name, INFO))
        for url, request_head, response_head, body in pages:
            resp_block = response_head + body
            resp = writer.create_warc_record(
                url, "response", payload=io.BytesIO(resp_block), length=len(resp_block),
                warc_headers_dict={"WARC-IP-Address": "127.0.0.1"},
            )
            req = writer.create_warc_record(url, "request", payload=io.BytesIO(request_head), length=len(request_head))
            writer.write_request_response_pair(req, resp)


def write_warcio_isal(path: Path, pages: list[Exchange]) -> None:
    original = GzippingWrapper.__init__

    def isal_init(self: GzippingWrapper, out: object) -> None:
        self.compressor = isal_zlib.compressobj(1, isal_zlib.DEFLATED, 31)
        self.out = out

    GzippingWrapper.__init__ = isal_init
    try:
        write_warcio(path, pages)
    finally:
        GzippingWrapper.__init__ = original


def _write_lean(path: Path, pages: list[Exchange], level: int) -> None:
    with WarcStore(path, info=INFO, gzip_level=level) as warc:
        for url, request_head, response_head, body in pages:
            warc.store_exchange(Fetch(url, "127.0.0.1", time.time(), request_head, response_head, body))


def write_lean(path: Path, pages: list[Exchange]) -> None:
    _write_lean(path, pages, 1)


def write_lean_zlib1(path: Path, pages: list[Exchange]) -> None:
    original = store.warc._compressor
    store.warc._compressor = lambda level: lambda data: zlib.compress(data, 1, wbits=31)
    try:
        _write_lean(path, pages, 1)
    finally:
        store.warc._compressor = original


VARIANTS: dict[str, Callable[[Path, list[Exchange]], None]] = {
    "warcio": write_warcio,
    "warcio+isal1": write_warcio_isal,
    "lean": write_lean,
    "lean-zlib1": write_lean_zlib1,
}


def read_back(path: Path, expected_pairs: int) -> None:
    """Every record parses, every digest checks, and the pairs are all there."""
    files = sorted(path.glob("*.warc.gz")) if path.is_dir() else [path]
    types: dict[str, int] = {}
    for file in files:
        with open(file, "rb") as f:
            for record in ArchiveIterator(f, check_digests="raise"):
                record.content_stream().read()
                types[record.rec_type] = types.get(record.rec_type, 0) + 1
    assert types.get("request") == expected_pairs == types.get("response"), types


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=400, help="distinct exchanges written per run")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    pages = exchanges(args.pages)
    mean_body = sum(len(p[2]) + len(p[3]) for p in pages) / len(pages)
    print(f"{len(pages)} exchanges, mean response block {mean_body / 1000:.1f} KB, {args.runs} runs each")
    print(f"{'variant':14} {'best µs/pair':>13} {'median':>8} {'KB/pair':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, write in VARIANTS.items():
            times, size = [], 0
            for run in range(args.runs):
                target = Path(tmp) / f"{name}-{run}"
                if name.startswith("warcio"):
                    target = target.with_suffix(".warc.gz")
                started = time.process_time()
                write(target, pages)
                times.append((time.process_time() - started) / len(pages) * 1e6)
                files = sorted(target.glob("*.warc.gz")) if target.is_dir() else [target]
                size = sum(f.stat().st_size for f in files)
                read_back(target, len(pages))
            print(f"{name:14} {min(times):13.0f} {statistics.median(times):8.0f} {size / len(pages) / 1000:8.1f}")
    print("all outputs read back with warcio ArchiveIterator, digests checked")


if __name__ == "__main__":
    main()
