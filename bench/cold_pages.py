"""Pages one at a time: what a page's CPU becomes when the crawler waits between pages (issue 18, item 3).

A politeness-bound crawl handles its pages one by one with the process asleep in between; an
unbound one handles them back to back. `bench.idle_cost` found the bound crawl dearer per page
while the crawler costs almost nothing doing nothing; this asks whether the same work, with the
same code and nothing else, costs more per page only because of the wait before it (caches and
branch predictors cooled by the sleep and by whatever else ran meanwhile).

One process, no event loop, no network: for each in-vitro page, the CPU stages of the hot path
(link extraction with canonicalization, the near-duplicate signature, the WARC records with the
CDXJ line and the link graph), timed with the thread's CPU clock around the page's work only, so
the sleep itself and the clock reads are outside it. Gaps of ``--gaps`` milliseconds between
pages, in alternating rounds; reported: the median CPU µs per page at each gap, and its ratio to
back to back (gap 0). ``time.sleep`` here makes the gap being measured; nothing waits for an event.

    python -m bench.cold_pages                        # about 2 minutes
    python -m bench.cold_pages --pages 300 --rounds 1 --gaps 0 5
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.runner import machine
from bench.store_bench import INFO, pages
from engine.config import StoreConfig
from engine.parse import extract_links
from store.archive import Archive


def one_round(folder: Path, batch: list, gap: float, burst: int) -> list[float]:
    """CPU µs of each page's work, with ``gap`` seconds asleep before each ``burst`` pages."""
    costs = []
    with Archive(folder, "cold", StoreConfig(), INFO) as archive:
        for i, (exchange, _) in enumerate(batch):
            if gap and i % burst == 0:
                time.sleep(gap)
            started = time.thread_time()
            links = extract_links(exchange.body, exchange.url).links
            check = archive.examine(status=200, body=exchange.body, payload=exchange.body, html=True, complete=True)
            archive.store(exchange, status=200, mime="text/html", check=check, page=True, links=links, fetch_seconds=0.01)
            costs.append((time.thread_time() - started) * 1e6)
    return costs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gaps", type=float, nargs="+", default=[0, 1, 5, 13, 50], help="milliseconds")
    parser.add_argument("--burst", type=int, default=1, help="pages handled back to back after each gap")
    args = parser.parse_args(argv)
    print(machine())
    batch = pages(args.pages)
    costs: dict[float, list[float]] = {gap: [] for gap in args.gaps}
    with tempfile.TemporaryDirectory(prefix="cold-pages-") as tmp:
        for round_ in range(args.rounds):
            for gap in args.gaps if round_ % 2 == 0 else reversed(args.gaps):
                costs[gap] += one_round(Path(tmp) / f"{round_}-{gap}", batch, gap / 1000, args.burst)
    base = statistics.median(costs[args.gaps[0]])
    print(f"{'gap ms':>7} {'µs/page':>8} {'ratio':>6}")
    for gap, values in costs.items():
        median = statistics.median(values)
        print(f"{gap:7g} {median:8.0f} {median / base:6.2f}")


if __name__ == "__main__":
    main()
