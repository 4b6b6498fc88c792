"""Micro-benchmark of observing a fetch latency: ``engine.histogram.Histogram`` against prometheus-client's.

The fetch loop observes once per fetch. prometheus-client's ``Histogram.observe`` takes a
lock and walks its buckets; ours bisects a tuple and adds to a list (and is summed across
agent processes as plain counts). Median of ``--repeat`` passes, CPU ns per observation,
the two taking turns within each pass.

    python -m bench.metrics_bench [--repeat 9]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import prometheus_client

from engine.histogram import LATENCY_BUCKETS, Histogram


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    rng = random.Random(1)
    values = [rng.lognormvariate(-2.5, 1.0) for _ in range(100_000)]  # seconds, median ~80 ms
    ours = Histogram(LATENCY_BUCKETS)
    theirs = prometheus_client.Histogram("latency", "fetch latency", buckets=LATENCY_BUCKETS,
                                         registry=prometheus_client.CollectorRegistry())
    calls: dict[str, Callable[[float], None]] = {"engine.histogram.Histogram": ours.observe,
                                                 "prometheus_client.Histogram": theirs.observe}
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(args.repeat):
        for name, observe in calls.items():
            start = time.process_time_ns()
            for value in values:
                observe(value)
            times[name].append((time.process_time_ns() - start) / len(values))
    for name, per in times.items():
        print(f"{name:<30} {statistics.median(per):6.0f} ns per observe")


if __name__ == "__main__":
    main()
