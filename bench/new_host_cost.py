"""What a new host costs the crawler, piece by piece, over loopback: DNS, the robots.txt fetch, its rules, its records.

Role: the per-host table of ``bench/RESULTS.md`` (issue 18). In a 25-s crawl of the 20,000-host
in-vitro web the crawler meets ~8,800 hosts and fetches ~3.5 pages of each, so what it pays once
per host weighs on every page. ``bench/engine_overhead.py`` shows the engine's share with the
network replaced; this shows the pieces that touch the network, each alone, on the real web:
starts ``python -m bench.invitro --hosts H`` as a child (its CPU is not counted), then in this
process, for the first ``--sample`` hosts, one phase after another:

* **dns**: ``engine/dns.py: CachingResolver.resolve`` of every host (a miss each: a query to the
  web's DNS server), ``dns.concurrency`` at a time, as the agent's resolve tasks do;
* **robots.txt fetch**: ``Http1Fetcher.fetch`` of each host's ``/robots.txt`` on a new connection
  (``network.keepalive`` is off by default), ``--workers`` at a time;
* **a page fetch**, the same for each host's home page, for comparison;
* **robots.txt rules**: the body decoded and ``RobotsRules.from_response`` (protego);
* **robots.txt records**: ``Archive.store`` of the exchange (request and response records, the
  CDXJ line), as ``Pipeline.robots`` calls it.

Each phase's CPU is this process's (``getrusage``) over the phase, divided by the hosts (the web's
server is another process and is not counted). Each round takes hosts not met before, so every
lookup is a miss and every robots.txt new; printed: each round, then the least and the median.

    python -m bench.new_host_cost --hosts 20000 --sample 4000 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import uvloop

from bench.invitro.model import WebModel, WebParams
from bench.invitro.process import spawn
from bench.runner import medians
from engine import config as configuration
from engine.clients import make_fetcher
from engine.content import decode
from engine.dns import CachingResolver
from engine.errors import RemoteError
from engine.fetch import ClientSettings, FetchResult
from engine.robots import RobotsRules
from engine.stats import cpu_seconds
from engine.parts import build_archive
from store.cdxj import mime_of
from store.warc import Exchange, is_compressed


async def _each(items: Sequence[Any], workers: int, work: Callable[[Any], Awaitable[None]]) -> None:
    """``work`` on every item, ``workers`` at a time."""
    queue = list(reversed(items))

    async def worker() -> None:
        while queue:
            await work(queue.pop())

    await asyncio.gather(*(worker() for _ in range(workers)))


async def one_round(info: dict[str, Any], hosts: list[str], workers: int, out: Path) -> dict[str, float]:
    config = configuration.load(None, [f'store.dir="{out}"'])
    model = WebModel(WebParams(**info["params"]), info["port"])
    d = config.dns
    resolver = CachingResolver([info["dns"]], max_entries=d.cache_entries, min_ttl=d.min_ttl, max_ttl=d.max_ttl,
                               negative_ttl=d.negative_ttl, timeout=d.timeout, concurrency=d.concurrency)
    fetcher = make_fetcher(ClientSettings(config.engine.user_agent), config.network.client)
    n = len(hosts)
    figures: dict[str, float] = {}

    async def timed(name: str, items: Sequence[Any], concurrency: int, work: Callable[[Any], Awaitable[None]]) -> None:
        cpu = cpu_seconds()
        await _each(items, concurrency, work)
        figures[name] = 1e6 * (cpu_seconds() - cpu) / n

    async def resolve(host: str) -> None:
        await resolver.resolve(host, time.monotonic())

    robots: list[FetchResult] = []

    async def fetch_into(results: list[FetchResult], path: str, host: str) -> None:
        try:
            results.append(await fetcher.fetch(f"http://{host}:{info['port']}{path}", model.ip_of(host)))
        except RemoteError:
            pass

    await timed("dns", hosts, d.concurrency, resolve)
    await timed("robots.txt fetch", hosts, workers, lambda h: fetch_into(robots, "/robots.txt", h))
    await timed("page fetch", hosts, workers, lambda h: fetch_into([], "/", h))
    await fetcher.close()
    await resolver.aclose()

    cpu = cpu_seconds()
    for r in robots:
        body = decode(r.body, r.headers.get("content-encoding"), config.network.max_body_bytes).payload or b""
        RobotsRules.from_response(r.status, body, config.engine.user_agent)
    figures["robots.txt rules"] = 1e6 * (cpu_seconds() - cpu) / n
    archive = build_archive(config, out, "cost")
    cpu = cpu_seconds()
    for r in robots:
        mime = mime_of(r.headers.get("content-type"))
        compressed = is_compressed(r.headers.get("content-encoding"), mime)
        exchange = Exchange(r.url, r.ip, r.fetched_at, r.request_head, r.response_head, r.body, r.truncated, compressed)
        archive.store(exchange, status=r.status, mime=mime)
    figures["robots.txt records"] = 1e6 * (cpu_seconds() - cpu) / n
    archive.close()
    figures["fetched"] = len(robots) / n
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=20000, help="hosts of the in-vitro web")
    parser.add_argument("--sample", type=int, default=4000, help="new hosts per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each on hosts not met before")
    parser.add_argument("--workers", type=int, default=100, help="fetches at once")
    args = parser.parse_args(argv)
    if args.sample * args.rounds > args.hosts:
        raise SystemExit("new_host_cost: --sample × --rounds must not exceed --hosts (every host must be new)")
    with tempfile.TemporaryDirectory(prefix="new-host-cost-") as tmp:
        child, info = spawn(Path(tmp) / "web", ["--hosts", str(args.hosts), "--seeds", str(args.hosts)])
        try:
            names = [url.split("/")[2].rpartition(":")[0] for url in info["seeds"]]
            rounds = []
            for i in range(args.rounds):
                hosts = names[i * args.sample:(i + 1) * args.sample]
                rounds.append(uvloop.run(one_round(info, hosts, args.workers, Path(tmp) / f"out{i}")))
                print(f"round {i + 1}: " + ", ".join(f"{k} {v:.1f}" for k, v in rounds[-1].items()), flush=True)
        finally:
            child.send_signal(signal.SIGTERM)
            child.wait(timeout=30)
    least = {k: min(r[k] for r in rounds) for k in rounds[0]}
    median = medians(rounds)
    print(f"{'CPU µs per new host':24} {'least':>8} {'median':>8}")
    for k in rounds[0]:
        if k != "fetched":
            print(f"{k:24} {least[k]:8.1f} {median[k]:8.1f}")


if __name__ == "__main__":
    main()
