"""Virtualizer throughput: append and dequeue rates, disk bytes per item, RSS as items grow.

Drives :class:`frontier.virtualizer.WorkbenchVirtualizer` the way the distributor does:

1. **append**: ``--items`` path+query strings of ``--item-bytes`` bytes, one ``append`` per
   URL, for hosts drawn at random among ``--hosts``. RSS is sampled every tenth of the way.
2. **dequeue**: refill rounds over all hosts, ``dequeue(host, --batch)`` each, until empty;
   every item is checked to come back byte-exact and in per-host order.
3. **steady state**: a backlog of ``--items / 5`` kept level while as many items again go
   through it, with one host in ten consumed at a tenth of the rate, so segments fill with
   garbage and compaction runs (segments of ``--steady-segment-bytes``, 4 MiB).

Only the virtualizer's calls are timed (item generation and checking are not), in wall-clock
and in CPU seconds, since the machine may be shared. Output: a
table on stdout and JSON with ``--json FILE``. A seconds-long smoke run::

    python -m bench.virtualizer_bench --items 200000

The full run (10k hosts, 5M items of 60 bytes)::

    python -m bench.virtualizer_bench --items 5000000 --hosts 10000
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import orjson

from frontier.virtualizer import WorkbenchVirtualizer

CHUNK = 1 << 16


class Timer:
    """Wall and CPU seconds spent inside ``with timer:`` blocks (the machine may be shared)."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def __enter__(self) -> None:
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def __exit__(self, *exc: object) -> None:
        self.wall += time.perf_counter() - self._wall
        self.cpu += time.process_time() - self._cpu

    def rates(self, n: int) -> dict:
        return {"wall_seconds": self.wall, "cpu_seconds": self.cpu,
                "per_wall_second": n / self.wall, "per_cpu_second": n / self.cpu}


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def item(host: int, seq: int, size: int) -> bytes:
    return f"/h{host}/page-{seq}.html?q=".encode().ljust(size, b"x")


def seq_of(data: bytes) -> int:
    return int(data.split(b"page-", 1)[1].split(b".", 1)[0])


def append_phase(v: WorkbenchVirtualizer, args: argparse.Namespace, rng: random.Random) -> dict:
    appended = [0] * args.hosts
    timer = Timer()
    samples: list[tuple[int, float]] = [(0, rss_mib())]
    done = 0
    next_sample = args.items // 10
    while done < args.items:
        n = min(CHUNK, args.items - done)
        keys = [rng.randrange(args.hosts) for _ in range(n)]
        items = []
        for key in keys:
            items.append(item(key, appended[key], args.item_bytes))
            appended[key] += 1
        append = v.append
        with timer:
            for key, data in zip(keys, items):
                append(key, data)
        done += n
        if done >= next_sample:
            samples.append((done, rss_mib()))
            next_sample += args.items // 10
    with timer:
        v.flush()
    stats = v.statistics()
    return {
        "items": done,
        **timer.rates(done),
        "disk_bytes": stats.disk_bytes,
        "disk_bytes_per_item": stats.disk_bytes / done,
        "payload_bytes_per_item": args.item_bytes,
        "segments": stats.segments,
        "rss_mib": samples,
    }


def dequeue_phase(v: WorkbenchVirtualizer, args: argparse.Namespace) -> dict:
    expected = [0] * args.hosts
    timer = Timer()
    done = calls = 0
    hosts = list(range(args.hosts))
    dequeue = v.dequeue
    while hosts:
        remaining = []
        for host in hosts:
            with timer:
                got = dequeue(host, args.batch)
            calls += 1
            for data in got:
                if seq_of(data) != expected[host] or data != item(host, expected[host], args.item_bytes):
                    raise SystemExit(f"host {host}: wrong item {data!r}, expected #{expected[host]}")
                expected[host] += 1
            done += len(got)
            if host in v:
                remaining.append(host)
        hosts = remaining
    stats = v.statistics()
    if stats.items or stats.disk_bytes:
        raise SystemExit(f"not empty after draining: {v!r}")
    return {"items": done, "calls": calls, **timer.rates(done), "disk_bytes_after": stats.disk_bytes}


def steady_phase(v: WorkbenchVirtualizer, args: argparse.Namespace, rng: random.Random) -> dict:
    """Keep a backlog level; slow hosts leave garbage behind, so compaction has work."""
    backlog, through = args.items // 5, args.items // 5
    appended = [0] * args.hosts
    taken = [0] * args.hosts
    timer = Timer()
    peak_disk = 0
    ratios = []
    rss = [rss_mib()]
    moved = 0
    while moved < backlog + through:
        n = min(CHUNK, backlog + through - moved)
        keys = [rng.randrange(args.hosts) for _ in range(n)]
        items = []
        for key in keys:
            items.append(item(key, appended[key], args.item_bytes))
            appended[key] += 1
        with timer:
            for key, data in zip(keys, items):
                v.append(key, data)
        moved += n
        if moved <= backlog:
            continue
        # Consume about n items: fast hosts fully, slow hosts (host % 10 == 0) a tenth.
        want = n
        while want > 0:
            host = rng.randrange(args.hosts)
            if host % 10 == 0 and rng.random() > 0.1:
                continue
            with timer:
                got = v.dequeue(host, args.batch)
            for data in got:
                if seq_of(data) != taken[host]:
                    raise SystemExit(f"host {host}: out of order in the steady phase")
                taken[host] += 1
            want -= max(1, len(got))
        stats = v.statistics()
        peak_disk = max(peak_disk, stats.disk_bytes)
        ratios.append(stats.live_bytes / stats.disk_bytes if stats.disk_bytes else 1.0)
        rss.append(rss_mib())
    stats = v.statistics()
    return {
        "items_appended": sum(appended),
        "items_dequeued": sum(taken),
        **timer.rates(sum(appended) + sum(taken)),
        "compactions": stats.compactions,
        "peak_disk_bytes": peak_disk,
        "final_backlog": stats.items,
        "min_live_ratio": min(ratios) if ratios else 1.0,
        "rss_mib_first_last_max": [rss[0], rss[-1], max(rss)],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=5_000_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--item-bytes", type=int, default=60)
    parser.add_argument("--batch", type=int, default=64, help="items per dequeue (a refill batch)")
    parser.add_argument("--segment-bytes", type=int, default=64 << 20)
    parser.add_argument("--steady-segment-bytes", type=int, default=4 << 20,
                        help="segments of the steady phase: small, so that compaction runs in a short run")
    parser.add_argument("--dir", type=Path, help="where the segments go (default: a temporary directory)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    folder = Path(tempfile.mkdtemp(prefix="virtualizer-bench-", dir=args.dir))
    rng = random.Random(args.seed)
    try:
        v = WorkbenchVirtualizer(folder / "fill", segment_bytes=args.segment_bytes)
        result = {"args": {k: str(x) for k, x in vars(args).items()}}
        result["append"] = append_phase(v, args, rng)
        result["dequeue"] = dequeue_phase(v, args)
        v.close()
        v = WorkbenchVirtualizer(folder / "steady", segment_bytes=args.steady_segment_bytes)
        result["steady"] = steady_phase(v, args, rng)
        t0 = time.perf_counter()
        v.close()
        result["steady"]["close_seconds"] = time.perf_counter() - t0
        result["max_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    a, d, s = result["append"], result["dequeue"], result["steady"]
    rss = a["rss_mib"]
    print(f"virtualizer: {args.items:,} items of {args.item_bytes} B over {args.hosts:,} hosts, "
          f"segments of {args.segment_bytes >> 20} MiB, Python {sys.version.split()[0]}")
    print("  rates are items (steady: appends + dequeues) per second of wall clock / of CPU")
    print(f"  append    {a['per_wall_second']:>10,.0f} / {a['per_cpu_second']:>10,.0f} items/s   "
          f"{a['disk_bytes_per_item']:.1f} disk B/item "
          f"({a['disk_bytes'] / 2**20:,.0f} MiB, {a['segments']} segments)")
    print(f"  RSS during append: " + ", ".join(f"{n // 1000:,}k:{m:.0f}" for n, m in rss) + " MiB")
    print(f"  dequeue   {d['per_wall_second']:>10,.0f} / {d['per_cpu_second']:>10,.0f} items/s   "
          f"({d['calls']:,} calls of up to {args.batch}), "
          f"all byte-exact and in order; disk after drain {d['disk_bytes_after']} B")
    print(f"  steady    {s['per_wall_second']:>10,.0f} / {s['per_cpu_second']:>10,.0f} ops/s     "
          f"{s['compactions']} compactions, live/disk ≥ "
          f"{s['min_live_ratio']:.2f}, peak disk {s['peak_disk_bytes'] / 2**20:,.0f} MiB, RSS first/last/max "
          + "/".join(f"{m:.0f}" for m in s["rss_mib_first_last_max"]) + " MiB")
    print(f"  max RSS {result['max_rss_mib']:.0f} MiB; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    if args.json:
        args.json.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
