"""Fetch cost: ``AiohttpFetcher`` against ``Http1Fetcher`` on the in-vitro web, in one run.

Role: the evidence for ``engine/http1.py`` (the crawler's budget is about 250 µs of client
CPU per fetch). Starts ``python -m bench.invitro --hosts H --seeds H`` as a child process, then
in this process runs N concurrent workers that fetch the seeds' home pages round-robin (each
with the IP the model gives its host) for T seconds, once per (round, mode, client). Clients
alternate within a round, and their order flips every round, so drift on a shared, noisy
machine falls on both alike. Each run gets a fresh fetcher; a short warm-up fills the server's
caches first.

Per run: requests/s, client CPU µs per request (``getrusage`` of this process, which holds only
the clients), median and p99 latency, errors, and the server's CPU share (near 1.0 means the
server, not the client, set the pace). Printed: the medians over rounds.

    python -m bench.fetch_bench --workers 300 --seconds 8 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import signal
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import uvloop

from bench.invitro.model import WebModel, WebParams
from bench.invitro.process import cpu_of, spawn
from engine.clients import make_fetcher
from engine.errors import RemoteError
from engine.fetch import ClientSettings

USER_AGENT = "fetch-bench/1.0"
CLIENTS = ("aiohttp", "lean")  # the values of network.client, in the order of even rounds


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def one_run(
    client: str,
    proxy: str,
    targets: list[tuple[str, str]],
    workers: int,
    seconds: float,
    keepalive: bool,
    server_pid: int,
) -> dict[str, Any]:
    fetcher = make_fetcher(ClientSettings(user_agent=USER_AGENT, proxy=proxy, keepalive=keepalive), client)
    latencies: list[float] = []
    errors: dict[str, int] = {}
    next_target = 0
    end = time.monotonic() + seconds

    async def worker() -> None:
        nonlocal next_target
        while time.monotonic() < end:
            url, ip = targets[next_target % len(targets)]
            next_target += 1
            t0 = time.monotonic()
            try:
                await fetcher.fetch(url, ip)
            except RemoteError as e:
                errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
                continue
            latencies.append(time.monotonic() - t0)

    server0, cpu0, wall0 = cpu_of(server_pid), cpu_seconds(), time.monotonic()
    await asyncio.gather(*(worker() for _ in range(workers)))
    wall, cpu = time.monotonic() - wall0, cpu_seconds() - cpu0
    server = cpu_of(server_pid) - server0
    await fetcher.close()
    requests = len(latencies) + sum(errors.values())
    latencies.sort()
    return {
        "requests_per_second": requests / wall,
        "cpu_us_per_request": 1e6 * cpu / max(1, requests),
        "latency_p50_ms": 1e3 * latencies[len(latencies) // 2] if latencies else float("nan"),
        "latency_p99_ms": 1e3 * latencies[int(len(latencies) * 0.99)] if latencies else float("nan"),
        "errors": sum(errors.values()),
        "client_cpu_share": cpu / wall,
        "server_cpu_share": server / wall,
        "error_kinds": errors,
    }


async def run_all(args: argparse.Namespace, info: dict[str, Any], server_pid: int) -> list[dict[str, Any]]:
    model = WebModel(WebParams(**info["params"]), info["port"])
    targets = [(url, model.ip_of(url.split("/")[2].rpartition(":")[0])) for url in info["seeds"]]
    proxies = {"direct": "", "proxy": f"http://{info['proxy']}"}
    for mode in args.modes:  # warm-up: the server's page and gzip caches, the client's imports
        await one_run("lean", proxies[mode], targets, args.workers, 1.0, args.keepalive, server_pid)
    runs = []
    for round_ in range(args.rounds):
        order = list(CLIENTS) if round_ % 2 == 0 else list(reversed(CLIENTS))
        for mode in args.modes:
            for client in order:
                result = await one_run(
                    client, proxies[mode], targets, args.workers, args.seconds, args.keepalive, server_pid
                )
                runs.append({"round": round_, "mode": mode, "client": client, **result})
                print(
                    f"round {round_} {mode:6} {client:7} {result['requests_per_second']:8.0f} req/s "
                    f"{result['cpu_us_per_request']:6.0f} µs/req  p50 {result['latency_p50_ms']:6.1f} ms  "
                    f"p99 {result['latency_p99_ms']:6.1f} ms  errors {result['errors']}  "
                    f"server cpu {result['server_cpu_share']:.2f}",
                    flush=True,
                )
    return runs


FIGURES = ("requests_per_second", "cpu_us_per_request", "latency_p50_ms", "latency_p99_ms", "errors",
           "client_cpu_share", "server_cpu_share")  # fmt: skip


def medians(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    table = {}
    for key in sorted({(r["mode"], r["client"]) for r in runs}):
        chosen = [r for r in runs if (r["mode"], r["client"]) == key]
        table[f"{key[0]}/{key[1]}"] = {f: statistics.median(r[f] for r in chosen) for f in FIGURES}
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=300, help="concurrent fetches")
    parser.add_argument("--seconds", type=float, default=8, help="length of one run")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each (mode, client)")
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--modes", nargs="+", default=["direct", "proxy"], choices=["direct", "proxy"])
    parser.add_argument("--keepalive", action="store_true", help="persistent connections (default: close)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fetch-bench-") as tmp:
        web, info = spawn(Path(tmp), ["--hosts", str(args.hosts), "--seeds", str(args.hosts)])
        try:
            runs = uvloop.run(run_all(args, info, web.pid))
        finally:
            web.send_signal(signal.SIGTERM)
            web.wait(timeout=30)
    table = medians(runs)
    print(f"\nmedians of {args.rounds} rounds, {args.workers} workers, {args.seconds:g} s each, "
          f"keepalive={'on' if args.keepalive else 'off'}")  # fmt: skip
    print(f"{'mode/client':16} {'req/s':>8} {'µs/req':>7} {'p50 ms':>7} {'p99 ms':>7} "
          f"{'errors':>7} {'server cpu':>10}")  # fmt: skip
    for name, row in table.items():
        print(
            f"{name:16} {row['requests_per_second']:8.0f} {row['cpu_us_per_request']:7.0f} "
            f"{row['latency_p50_ms']:7.1f} {row['latency_p99_ms']:7.1f} {row['errors']:7.0f} "
            f"{row['server_cpu_share']:10.2f}"
        )
    if args.json:
        result = {"args": {k: str(v) for k, v in vars(args).items()}, "runs": runs, "median": table}
        args.json.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
