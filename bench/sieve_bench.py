"""Sieve and URL-cache throughput, flush cost and memory (acceptance tests T9 and T10).

Feeds a :class:`frontier.sieve.MercatorSieve` a stream of ``--urls`` enqueues of ~65-byte
URLs, of which a ``--repeat`` fraction repeat an earlier URL (half of the repeats from the
last 10,000 new URLs, as navigation links do, half from anywhere before). It reports:

* enqueue throughput in URLs/s, flushes included (URL generation is timed apart and excluded);
* each flush's wall time against the known count (a flush rewrites the store: O(known));
* resident memory (VmRSS) after each flush and at 1M, 5M and 10M known URLs: it must stay flat;
* bytes on disk per known URL (store) and in total;
* dequeue throughput, draining the ready queue at the end;
* the URL cache's CPU time per add, for hits and for misses, at ``--cache-bytes``.

Wall-clock rates are given with CPU-time rates beside them, since a shared machine inflates
the former.

The default (20M enqueues, 50% repeats) reaches 10M known URLs. A seconds-long smoke run::

    python -m bench.sieve_bench --urls 200000 --bucket-slots 20000

Prints a table, then the figures as one JSON object (also written to ``--json FILE``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import xxhash

from frontier.sieve import SLOT_BYTES, MercatorSieve
from frontier.url_cache import UrlCache

BATCH = 100_000
MILESTONES = (1_000_000, 5_000_000, 10_000_000)


def rss_bytes() -> int:
    """Resident memory now (VmRSS), from /proc; falls back to the peak on other systems."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def make_url(i: int) -> bytes:
    return b"https://www.host%05d.example.org/section/%d/article-%09d.html" % (i % 50_000, i % 10, i)


def url_batches(total: int, repeat: float, seed: int):  # type: ignore[no-untyped-def]
    """Yield lists of URLs: ``total`` in all, a ``repeat`` fraction of them seen before."""
    rng = np.random.default_rng(seed)
    distinct = 0
    done = 0
    while done < total:
        size = min(BATCH, total - done)
        again = rng.random(size) < repeat
        again[: 1 if distinct == 0 else 0] = False
        ids = np.empty(size, dtype=np.int64)
        fresh = np.flatnonzero(~again)
        ids[fresh] = distinct + np.arange(len(fresh))
        old = np.flatnonzero(again)
        recent = rng.random(len(old)) < 0.5
        low = np.where(recent, max(0, distinct - 10_000), 0)
        ids[old] = low + (rng.random(len(old)) * (distinct - low)).astype(np.int64)
        distinct += len(fresh)
        done += size
        yield [make_url(i) for i in ids.tolist()]


class TimedSieve(MercatorSieve):
    """Records, for every flush, the known count before it, its wall time and the RSS after it."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        self.flushes: list[dict] = []
        super().__init__(*args, **kwargs)

    def flush(self) -> int:
        known, pending = self.known_count, self.pending_count
        start, cpu = time.perf_counter(), time.process_time()
        fresh = super().flush()
        if pending:
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
            self.flushes.append({"known_before": known, "seconds": seconds, "cpu": cpu, "rss": rss_bytes()})
        return fresh


def bench_sieve(args: argparse.Namespace, directory: Path) -> dict:
    sieve = TimedSieve(directory, bucket_bytes=args.bucket_slots * SLOT_BYTES, fsync=False)
    enqueue = sieve.enqueue
    fp = xxhash.xxh3_64_intdigest
    generating = enqueueing = enqueueing_cpu = 0.0
    at: dict[str, int] = {}
    start = time.perf_counter()
    cpu = time.process_time()
    batches = url_batches(args.urls, args.repeat, args.seed)
    while True:
        t0 = time.perf_counter()
        batch = next(batches, None)
        t1 = time.perf_counter()
        generating += t1 - t0
        if batch is None:
            break
        c1 = time.process_time()
        for url in batch:
            enqueue(url, fp(url))
        enqueueing += time.perf_counter() - t1
        enqueueing_cpu += time.process_time() - c1
        for milestone in MILESTONES:
            if sieve.known_count >= milestone and str(milestone) not in at:
                at[str(milestone)] = rss_bytes()
    t0, c0 = time.perf_counter(), time.process_time()
    sieve.flush()
    enqueueing += time.perf_counter() - t0
    enqueueing_cpu += time.process_time() - c0
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    stats = sieve.statistics()
    ready_bytes = stats.bytes_on_disk - stats.store_bytes
    t0 = time.perf_counter()
    drained = 0
    while batch := sieve.dequeue(1000):
        drained += len(batch)
    dequeueing = time.perf_counter() - t0
    sieve.close()
    flushes = sieve.flushes
    return {
        "urls": args.urls,
        "known": stats.known,
        "repeat_fraction": 1 - stats.known / args.urls,
        "bucket_slots": stats.bucket_slots,
        "bucket_bytes": stats.bucket_bytes,
        "flushes": stats.flushes,
        "enqueue_seconds": enqueueing,
        "enqueue_urls_per_second": args.urls / enqueueing,
        "enqueue_cpu_seconds": enqueueing_cpu,
        "enqueue_urls_per_cpu_second": args.urls / enqueueing_cpu,
        "fingerprint_included": True,
        "flush_seconds_total": sum(f["seconds"] for f in flushes),
        "generate_seconds": generating,
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "dequeue_urls_per_second": drained / dequeueing if dequeueing else 0.0,
        "dequeued": drained,
        "rss_at_known": at,
        "rss_after_flushes": [f["rss"] for f in flushes],
        "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "flush_cpu_seconds_total": sum(f["cpu"] for f in flushes),
        "flush_seconds_vs_known": [[f["known_before"], round(f["seconds"], 4), round(f["cpu"], 4)] for f in flushes],
        "store_bytes_per_known_url": stats.store_bytes / max(1, stats.known),
        "ready_bytes_per_ready_url": ready_bytes / max(1, stats.known),
        "disk_bytes_per_known_url": stats.bytes_on_disk / max(1, stats.known),
    }


def bench_cache(max_bytes: int, seed: int) -> dict:
    cache = UrlCache(max_bytes)
    rng = np.random.default_rng(seed)
    fresh = [int(x) for x in rng.integers(0, 2**64 - 1, 3 * cache.capacity, dtype=np.uint64, endpoint=True)]
    add = cache.add
    for fp in fresh[: cache.capacity]:  # fill it
        add(fp)
    t0 = time.process_time()
    for fp in fresh[cache.capacity :]:
        add(fp)
    misses = time.process_time() - t0
    hot = fresh[-cache.capacity :]
    rng.shuffle(hot)
    t0 = time.process_time()
    for fp in hot:
        add(fp)
    hits = time.process_time() - t0
    t0 = time.process_time()
    for fp in hot:
        pass
    loop = time.process_time() - t0
    return {
        "cache_bytes": max_bytes,
        "cache_capacity": cache.capacity,
        "cache_miss_ns": 1e9 * misses / (2 * cache.capacity),
        "cache_hit_ns": 1e9 * hits / cache.capacity,
        "cache_loop_overhead_ns": 1e9 * loop / cache.capacity,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=int, default=20_000_000, help="enqueues (default 20M: 10M known at 50%% repeats)")
    parser.add_argument("--repeat", type=float, default=0.5, help="fraction of enqueues that repeat an earlier URL")
    parser.add_argument("--bucket-slots", type=int, default=1_000_000, help="sieve bucket size in URLs (16 B each)")
    parser.add_argument("--cache-bytes", type=int, default=64 << 20, help="URL cache budget for the cache benchmark")
    parser.add_argument("--dir", type=Path, help="where the sieve lives (default: a temporary directory, removed)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    directory = args.dir or Path(tempfile.mkdtemp(prefix="sieve-bench-"))
    try:
        result = bench_sieve(args, directory)
    finally:
        if args.dir is None:
            shutil.rmtree(directory, ignore_errors=True)
    result |= bench_cache(args.cache_bytes, args.seed)
    result["python"] = sys.version.split()[0]
    result["cpus"] = os.cpu_count()

    mb = 1 << 20
    print(f"{'known before':>14} {'flush s':>8} {'CPU s':>8} {'RSS MiB':>8}")
    for (known, seconds, cpu), rss in zip(result["flush_seconds_vs_known"], result["rss_after_flushes"]):
        print(f"{known:>14,} {seconds:>8.3f} {cpu:>8.3f} {rss / mb:>8.1f}")
    print(
        f"\n{result['urls']:,} enqueues, {result['known']:,} known, {result['flushes']} flushes: "
        f"{result['enqueue_urls_per_second']:,.0f} URLs/s enqueue+flush "
        f"({result['enqueue_urls_per_cpu_second']:,.0f} per CPU-second) "
        f"({result['flush_seconds_total']:.1f} s of {result['enqueue_seconds']:.1f} s in flushes, "
        f"{result['flush_cpu_seconds_total']:.1f} of {result['enqueue_cpu_seconds']:.1f} CPU-s); "
        f"dequeue {result['dequeue_urls_per_second']:,.0f} URLs/s"
    )
    print("RSS at known: " + ", ".join(f"{int(k):,}: {v / mb:.1f} MiB" for k, v in result["rss_at_known"].items()))
    print(
        f"disk: {result['store_bytes_per_known_url']:.2f} B/URL store, "
        f"{result['disk_bytes_per_known_url']:.1f} B/URL in all; peak RSS {result['peak_rss'] / mb:.1f} MiB"
    )
    print(
        f"URL cache {result['cache_bytes'] / mb:.0f} MiB = {result['cache_capacity']:,} fingerprints: "
        f"hit {result['cache_hit_ns']:.0f} ns, miss {result['cache_miss_ns']:.0f} ns per add "
        f"(loop overhead {result['cache_loop_overhead_ns']:.0f} ns)"
    )
    text = json.dumps(result)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
