"""Frontier memory against discovered URLs (BUbiNG's promise: flat in URLs, linear in hosts).

Drives a real :class:`~frontier.frontier.Frontier` (sieve, URL cache, workbench, virtualizer,
distributor; files in a temporary folder) with synthetic discoveries over a fixed set of
hosts, the way the engine does but with no network: links in, sieve flushes, distribution,
DNS answered from a table, and a simulated fetcher that acquires and releases visit states on
a fake clock. Resident memory is sampled every ``--step`` discovered URLs. Also measures the
RAM each host costs in the workbench (visit state + IP entry, no URLs), with tracemalloc.

    python -m bench.frontier_memory --urls 10000000 --hosts 10000 --plot bench/frontier_memory.png

Prints a table and JSON (``--json``); ``--plot`` draws RSS against discovered URLs (matplotlib,
the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import gc
import random
import tempfile
import time
import tracemalloc
from pathlib import Path

import orjson

from engine.stats import rss_bytes
from frontier.frontier import Frontier
from frontier.settings import FrontierSettings
from frontier.visit_state import VisitState
from frontier.workbench import Workbench

PATHS = ["/articles/{}/comments?page={}", "/users/{}/posts/{}.html", "/tag/{}/{}", "/archive/{}/{}/index.html"]


def synthetic_urls(hosts: int, rng: random.Random, batch: int, repeat_share: float, recent: list[str]) -> list[str]:
    out = []
    for _ in range(batch):
        if recent and rng.random() < repeat_share:
            out.append(rng.choice(recent))
            continue
        h = rng.randrange(hosts)
        path = rng.choice(PATHS).format(rng.randrange(10**9), rng.randrange(10**6))
        url = f"http://host{h:06d}.example{h % 97}.test{path}"
        out.append(url)
        if len(recent) < 100_000:
            recent.append(url)
        else:
            recent[rng.randrange(len(recent))] = url
    return out


def drive(args: argparse.Namespace) -> dict:
    rng = random.Random(7)
    samples = []
    with tempfile.TemporaryDirectory(prefix="frontier-memory-") as tmp:
        frontier = Frontier(
            Path(tmp),
            FrontierSettings(
                host_delay=0.0,
                ip_delay=0.0,
                workbench_bytes=args.workbench_bytes,
                sieve_bucket_bytes=args.sieve_bytes,
                url_cache_bytes=args.cache_bytes,
                sieve_flush_interval=0.0,
                max_urls_per_host=10**9,
            ),
        )
        now = 0.0
        discovered = fetched = 0
        recent: list[str] = []
        next_sample = args.step
        started = time.perf_counter()
        while discovered < args.urls:
            batch = synthetic_urls(args.hosts, rng, 10_000, 0.3, recent)
            frontier.discover(batch)
            discovered += len(batch)
            if frontier.wants_flush(now):
                frontier.sieve.flush()
                frontier.flush_sieve(now, now)
            for vs in frontier.distribute(now, budget=20_000):
                frontier.resolved(vs, f"10.0.{vs.id % args.ips // 250}.{vs.id % args.ips % 250}")
            for _ in range(args.fetch_per_batch):  # a fetcher drains some of the work
                vs = frontier.acquire(now)
                if vs is None:
                    break
                frontier.next_url(vs)
                frontier.release(vs, now)
                fetched += 1
            now += 0.001
            if discovered >= next_sample:
                gc.collect()
                s = frontier.statistics()
                samples.append({
                    "discovered": discovered, "rss_mib": rss_bytes() / 2**20, "fetched": fetched,
                    "sieve_known": s.sieve_known, "workbench_urls": s.workbench.urls,
                    "workbench_bytes": s.workbench.bytes, "disk_urls": s.disk_urls, "hosts": s.workbench.visit_states,
                    "seconds": time.perf_counter() - started,
                })
                print(" ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in samples[-1].items()),
                      flush=True)
                next_sample += args.step
        frontier.close()
    return {"samples": samples}


def bytes_per_host(n: int = 20_000) -> float:
    """RAM of a host in the workbench with no URLs queued: visit state, its queue, its share of an IP entry."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    wb = Workbench(0.5)
    states = []
    for i in range(n):
        vs = VisitState(i, f"http://host{i:07d}.example.test", 4.0)
        vs.transition("resolve")
        wb.attach(vs, f"10.{i % 250}.{i // 250 % 250}.{i // 62500}")
        states.append(vs)
    host_map = {vs.scheme_authority: vs for vs in states}  # the distributor's host_to_visit_state
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    size = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    del host_map
    return size / n


def plot(samples: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [s["discovered"] / 1e6 for s in samples]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(x, [s["rss_mib"] for s in samples], marker="o", label="resident memory (MiB)")
    ax.set_xlabel("discovered URLs (millions)")
    ax.set_ylabel("RSS (MiB)")
    ax.set_ylim(bottom=0)
    ax2 = ax.twinx()
    ax2.plot(x, [s["disk_urls"] / 1e6 for s in samples], color="tab:orange", linestyle="--", label="URLs on disk (M)")
    ax2.set_ylabel("URLs in the virtualizer (millions)")
    ax2.set_ylim(bottom=0)
    ax.set_title(f"Frontier memory, {samples[-1]['hosts']:,} hosts")
    fig.legend(loc="center right", bbox_to_anchor=(0.85, 0.35))
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=int, default=10_000_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--ips", type=int, default=100, help="hosts share this many IPs (few IPs: a small front, a deep backlog)")
    parser.add_argument("--step", type=int, default=1_000_000)
    parser.add_argument("--workbench-bytes", type=int, default=16 << 20)
    parser.add_argument("--sieve-bytes", type=int, default=16 << 20)
    parser.add_argument("--cache-bytes", type=int, default=16 << 20)
    parser.add_argument("--fetch-per-batch", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args(argv)
    result = drive(args)
    result["bytes_per_host"] = bytes_per_host()
    samples = result["samples"]
    if len(samples) >= 2:
        first, last = samples[0], samples[-1]
        result["rss_growth"] = last["rss_mib"] / first["rss_mib"] - 1
        print(f"RSS {first['rss_mib']:.0f} MiB at {first['discovered']:,} URLs -> {last['rss_mib']:.0f} MiB at "
              f"{last['discovered']:,}: growth {100 * result['rss_growth']:.1f}%")
    print(f"workbench RAM per host (no URLs queued): {result['bytes_per_host']:.0f} bytes")
    if args.json:
        args.json.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    if args.plot and samples:
        plot(samples, args.plot)


if __name__ == "__main__":
    main()
