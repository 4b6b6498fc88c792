"""End-to-end throughput: crawl the in-vitro web for a fixed time and report what it cost.

Starts the in-vitro web (``python -m bench.invitro``) and ``crawl run`` as two processes,
crawls for ``--seconds``, and prints pages/s, pages per CPU-second of the crawler process,
MB/s (body bytes as transferred), resident memory and the in-vitro server's CPU share, so a
reader knows whether the server rather than the crawler was the bottleneck. Several runs;
the figures reported are medians. Output: a table on stdout and JSON (``--json FILE``).

    python -m bench.crawl_bench --seconds 20 --runs 3
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from bench.invitro.process import cpu_of, spawn


def start_web(folder: Path, hosts: int, extra: list[str]) -> tuple[subprocess.Popen[bytes], dict]:
    return spawn(folder, ["--hosts", str(hosts), "--seeds", str(hosts), "--log", str(folder / "requests.jsonl"), *extra])


def one_run(seconds: float, hosts: int, settings: list[str], web_args: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="crawl-bench-") as tmp:
        folder = Path(tmp)
        web, info = start_web(folder, hosts, web_args)
        seeds = folder / "seeds.txt"
        seeds.write_text("\n".join(info["seeds"]) + "\n")
        try:
            server_cpu0, t0 = cpu_of(web.pid), time.monotonic()
            cmd = [sys.executable, "-m", "engine.cli", "run", "--seeds", str(seeds), "--out", str(folder / "out"),
                   "--dns", info["dns"], "--max-seconds", str(seconds),
                   "--set", 'network.allow_networks=["127.0.0.0/8"]', "--set", "engine.progress=\"off\""]
            for s in settings:
                cmd += ["--set", s]
            subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
            wall = time.monotonic() - t0
            server_cpu = cpu_of(web.pid) - server_cpu0
        finally:
            web.send_signal(signal.SIGTERM)
            web.wait(timeout=30)
        stats = orjson.loads((folder / "out" / "stats.json").read_bytes())
    elapsed = stats["elapsed_seconds"]
    return {
        "todo_wait_share_warm": warm_wait_share(stats),
        "pages": stats["pages"],
        "pages_per_second": stats["pages"] / elapsed,
        "pages_per_cpu_second": stats["pages_per_cpu_second"],
        "crawler_cpu_share": stats["cpu_seconds"] / elapsed,
        "mb_per_second": stats["bytes"] / elapsed / 1e6,
        "rss_mib": stats["rss_bytes"] / 2**20,
        "server_cpu_share": server_cpu / wall,
        "hosts": stats["hosts"],
        "errors": sum(stats["errors"].values()),
    }


def warm_wait_share(stats: dict) -> float:
    """Share of fetcher time spent waiting on an empty todo ring over the second half of the run."""
    timeline = stats["timeline"]
    if len(timeline) < 4:
        return float("nan")
    a, b = timeline[len(timeline) // 2], timeline[-1]
    fetchers = stats["config"]["engine"]["fetchers"]
    return (b["todo_wait_seconds"] - a["todo_wait_seconds"]) / (fetchers * (b["t"] - a["t"]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--runs", type=int, default=3, help="runs per variant")
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--set", action="append", default=[], help="crawl.toml override for the crawler")
    parser.add_argument("--variant", action="append", default=[],
                        help="a crawl.toml override defining one variant; variants alternate run by run")
    parser.add_argument("--web", action="append", default=[], help="extra argument for bench.invitro")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    settings = ["politeness.host_delay=0", "politeness.ip_delay=0", *args.set]
    variants = args.variant or [""]
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    for _ in range(args.runs):
        for v in variants:
            runs[v].append(one_run(args.seconds, args.hosts, settings + ([v] if v else []), args.web))
    medians = {v: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for v, rs in runs.items()}
    for v, m in medians.items():
        print(f"-- {v or 'as configured'} (median of {args.runs})")
        for key, value in m.items():
            print(f"{key:22} {value:12.2f}")
    if len(variants) > 1:
        base = medians[variants[-1]]
        for v in variants[:-1]:
            for key in ("pages_per_second", "pages_per_cpu_second"):
                print(f"ratio {key} {v} / {variants[-1]}: {medians[v][key] / base[key]:.2f}")
    result = {"seconds": args.seconds, "hosts": args.hosts, "settings": settings, "runs": runs,
              "median": medians[variants[0]], "medians": medians}
    if args.json:
        args.json.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
