"""How fast is the in-vitro server? A loopback load test with an aiohttp client.

Role: tells whether the in-vitro web could be the bottleneck of a crawl benchmark. Starts
``python -m bench.invitro`` as a child process, has ``--concurrency`` aiohttp connections
fetch distinct pages in origin form (to the host's IP, with a Host header) for ``--seconds``,
and prints requests/s and the server's CPU microseconds per request (from /proc, over the
load only). The client runs in this process, so on a small machine the two
compete for cores: the server's CPU per request is the robust figure.

    python -m bench.invitro.loadtest --seconds 5 --concurrency 100 [--no-keepalive] [--gzip]
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import uvloop
from aiohttp.abc import AbstractResolver, ResolveResult

from bench.invitro.model import WebModel, WebParams
from bench.invitro.process import cpu_of, spawn


def start_server(folder: Path, hosts: int, extra: list[str]) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    return spawn(folder, ["--hosts", str(hosts), "--stats", str(folder / "stats.json"), "--no-dns", *extra])


class ModelResolver(AbstractResolver):
    """Host names → model IPs without DNS traffic, so the server measures HTTP only."""

    def __init__(self, model: WebModel) -> None:
        self.model = model

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[ResolveResult]:
        ip = self.model.ip_of(host)
        return [{"hostname": host, "host": ip, "port": port, "family": socket.AF_INET, "proto": 0, "flags": 0}]

    async def close(self) -> None:
        return None


def targets(model: WebModel) -> list[str]:
    """Every page URL of the web, interleaving hosts as a polite crawler does."""
    per_host = [[f"http://{h}:{model.port}{p}" for p in model.paths(h)] for h in model.hosts()]
    width = max(map(len, per_host))
    return [pages[k] for k in range(width) for pages in per_host if k < len(pages)]


async def load(
    model: WebModel, seconds: float, concurrency: int, keepalive: bool, gzip: bool, distinct: int
) -> tuple[int, float]:
    work = targets(model)[: distinct or None]
    connector = aiohttp.TCPConnector(
        limit=concurrency, force_close=not keepalive, resolver=ModelResolver(model), use_dns_cache=False
    )
    headers = {"Accept-Encoding": "gzip" if gzip else "identity"}
    done = 0
    position = 0
    start = time.monotonic()
    deadline = start + seconds
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:

        async def worker() -> None:
            nonlocal done, position
            while time.monotonic() < deadline:
                url = work[position % len(work)]
                position += 1
                async with session.get(url, headers=headers) as response:
                    await response.read()
                done += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done, time.monotonic() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--hosts", type=int, default=400)
    parser.add_argument("--no-keepalive", action="store_true")
    parser.add_argument("--gzip", action="store_true", help="ask for gzip (the server compresses HTML)")
    parser.add_argument("--distinct", type=int, default=0, help="cycle over this many URLs (0: all; small: cached)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="invitro-load-") as tmp:
        child, info = start_server(Path(tmp), args.hosts, [])
        try:
            model = WebModel(WebParams(hosts=args.hosts), info["port"])
            cpu0 = cpu_of(child.pid)
            keepalive = not args.no_keepalive
            done, wall = uvloop.run(load(model, args.seconds, args.concurrency, keepalive, args.gzip, args.distinct))
            cpu = cpu_of(child.pid) - cpu0
        finally:
            child.send_signal(signal.SIGTERM)
            child.wait(timeout=30)
        stats = orjson.loads((Path(tmp) / "stats.json").read_bytes())
    print(
        f"{done / wall:6.0f} requests/s, server {1e6 * cpu / max(1, done):4.0f} µs CPU/request "
        f"({cpu / wall:.0%} of a core; {stats['requests']} requests, "
        f"{stats['body_bytes'] / max(1, stats['requests']):.0f} body bytes each, {stats['connections']} connections)"
    )


if __name__ == "__main__":
    main()
