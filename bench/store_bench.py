"""Store cost per page: WARC records, metadata, CDXJ index, link graph and content dedup, in CPU µs.

Two measurements, because the store's cost is a share of a crawl's:

1. **Offline, variant by variant, in one run** (interleaved rounds, least CPU over rounds, since
   the machine is shared): in-vitro HTML pages (about 16 KB, their real links) written by
   * ``warc``: ``WarcStore.store_exchange`` alone (request + response, ISA-L level 1, sha1);
   * ``+meta+index``: ``Archive`` with metadata records (outlinks) and the CDXJ index;
   * ``+graph``: the same with the link graph;
   * ``+dedup near`` (the default): and the near-duplicate signature, the Bloom filter and its table;
   * ``+dedup exact``: identical payloads only, no normalisation.
   Then each addition alone: ``html_signature``, a CDXJ line, a graph record.
2. **In a crawl** (``--crawl-seconds``, 0 to skip): one ``crawl run`` of the in-vitro web with one
   agent process; the archive counts the CPU it spends in ``examine`` and ``store``
   (``stats.json: store.cpu_seconds``), against the agent's CPU (``cpu_seconds``).

    python -m bench.store_bench --pages 2000 --rounds 5 --crawl-seconds 20 [--set store.dedup='"exact"']
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from bench.invitro.model import WebModel, WebParams
from bench.invitro.process import spawn
from engine.config import StoreConfig
from store import cdxj, linkgraph
from store.archive import Archive
from store.signature import html_signature
from store.warc import Exchange, WarcStore

INFO = {"software": "crawl store_bench"}
REQUEST = b"GET / HTTP/1.1\r\nHost: h\r\nUser-Agent: crawl/0.1\r\nAccept-Encoding: gzip, deflate\r\n\r\n"
Page = tuple[Exchange, list[str]]


def pages(count: int) -> list[Page]:
    """``count`` distinct HTML pages of the in-vitro web with their links, as exchanges."""
    model = WebModel(WebParams(hosts=max(10, count // 20)), 8080)
    out: list[Page] = []
    for host in model.hosts():
        for path in model.paths(host):
            r = model.respond(host, path)
            if r.status == 200 and len(out) < count:
                head = "".join(f"{k}: {v}\r\n" for k, v in r.headers)
                response_head = f"HTTP/1.1 200 OK\r\n{head}Content-Length: {len(r.body)}\r\n\r\n".encode()
                exchange = Exchange(f"http://{host}:8080{path}", "127.0.1.1", time.time(), REQUEST, response_head, r.body)
                out.append((exchange, list(dict.fromkeys(r.links))))
    return out


def write_warc(folder: Path, batch: list[Page]) -> None:
    with WarcStore(folder, info=INFO) as warc:
        for exchange, _ in batch:
            warc.store_exchange(exchange)


def archive_writer(**settings: object) -> Callable[[Path, list[Page]], None]:
    config = dataclasses.replace(StoreConfig(), **settings)  # type: ignore[arg-type]

    def write(folder: Path, batch: list[Page]) -> None:
        with Archive(folder, "bench", config, INFO) as archive:
            for exchange, links in batch:
                check = archive.examine(status=200, body=exchange.body, payload=exchange.body, html=True, complete=True)
                archive.store(exchange, status=200, mime="text/html", check=check, page=True, links=links,
                              fetch_seconds=0.01)

    return write


VARIANTS: dict[str, Callable[[Path, list[Page]], None]] = {
    "warc": write_warc,
    "+meta+index": archive_writer(dedup="off", link_graph=False),
    "+graph": archive_writer(dedup="off"),
    "+dedup near": archive_writer(dedup_capacity=1_000_000),
    "+dedup exact": archive_writer(dedup="exact", dedup_capacity=1_000_000),
}


def components(batch: list[Page]) -> dict[str, Callable[[], object]]:
    return {
        "html_signature": lambda: [html_signature(e.body) for e, _ in batch],
        "cdxj line": lambda: [cdxj.cdxj_line(e.url, "2026-11-22T10:00:00.000000Z", mime="text/html", status=200,
                                             digest="sha1:X", length=1, offset=1, filename="f") for e, _ in batch],
        "graph record": lambda: [linkgraph.encode_record(1, e.url, links) for e, links in batch],
    }


def offline(count: int, rounds: int) -> None:
    batch = pages(count)
    print(f"{len(batch)} pages, mean body {sum(len(e.body) for e, _ in batch) / len(batch) / 1000:.1f} KB, "
          f"mean {sum(len(links) for _, links in batch) / len(batch):.0f} distinct links; least CPU of {rounds} rounds")
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="store-bench-") as tmp:
        for round_ in range(rounds):
            for name, write in VARIANTS.items():
                folder = Path(tmp) / f"{name}-{round_}".replace(" ", "_").replace("+", "")
                started = time.process_time()
                write(folder, batch)
                cost = (time.process_time() - started) / len(batch) * 1e6
                best[name] = min(best.get(name, cost), cost)
            for name, run in components(batch).items():
                started = time.process_time()
                run()
                cost = (time.process_time() - started) / len(batch) * 1e6
                best[name] = min(best.get(name, cost), cost)
    base = best["warc"]
    print(f"{'variant':16} {'µs/page':>8} {'vs warc':>8}")
    for name, cost in best.items():
        print(f"{name:16} {cost:8.0f} {cost / base if name in VARIANTS else 0:8.2f}")


def in_crawl(seconds: float, hosts: int, settings: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="store-bench-crawl-") as tmp:
        folder = Path(tmp)
        web, info = spawn(folder / "web", ["--hosts", str(hosts), "--seeds", str(hosts)])
        seeds = folder / "seeds.txt"
        seeds.write_text("\n".join(info["seeds"]) + "\n")
        try:
            subprocess.run(
                [sys.executable, "-m", "engine.cli", "run", "--seeds", str(seeds), "--out", str(folder / "out"),
                 "--dns", info["dns"], "--max-seconds", str(seconds), "--set", 'network.allow_networks=["127.0.0.0/8"]',
                 "--set", 'engine.progress="off"', "--set", "engine.processes=1", "--set", "politeness.host_delay=0",
                 "--set", "politeness.ip_delay=0", "--set", "engine.fetchers=200",
                 *(arg for setting in settings for arg in ("--set", setting))],
                check=True, stderr=subprocess.DEVNULL,
            )
        finally:
            web.send_signal(signal.SIGTERM)
            web.wait(timeout=30)
        stats = orjson.loads((folder / "out" / "stats.json").read_bytes())
    store = stats["store"]
    fetches = stats["pages"] + stats["robots"]
    print(f"crawl of {seconds:g} s: {stats['pages']} pages + {stats['robots']} robots.txt, "
          f"{store['revisits_identical']} revisits, {store['near_duplicates_stored']} near-duplicates; agent CPU {stats['cpu_seconds']:.1f} s, "
          f"store CPU {store['cpu_seconds']:.2f} s = {store['cpu_seconds'] / fetches * 1e6:.0f} µs per fetch, "
          f"{store['cpu_seconds'] / stats['cpu_seconds']:.1%} of the agent's CPU; "
          f"{stats['pages'] / stats['cpu_seconds']:.0f} pages per CPU-second")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--crawl-seconds", type=float, default=20.0, help="0: no crawl")
    parser.add_argument("--hosts", type=int, default=2000, help="hosts of the in-vitro web crawled")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a crawl.toml key for the crawl")
    args = parser.parse_args()
    offline(args.pages, args.rounds)
    if args.crawl_seconds:
        in_crawl(args.crawl_seconds, args.hosts, args.set)


if __name__ == "__main__":
    main()
