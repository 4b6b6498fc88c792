"""Side by side with Scrapy: the same in-vitro web, through the same proxy, with the same per-host delay.

Our crawler (as shipped: one agent per core; ``--proxy``) and Scrapy (``bench/scrapy_spider.py``: Scrapy's documented
broad-crawl settings, a LinkExtractor following every link, ``http_proxy`` set) crawl the same
web for the same time, one after the other, alternating, ``--runs`` times each; each run has a
fresh server with the same parameters, so both see the same bytes. Politeness is the same for
both: robots.txt obeyed, one request at a time per host and ``--host-delay`` between two
requests to a host (our IP delay is 0 and the web has one host per IP, so nothing else binds).

Measured per run: pages (responses to page requests, robots.txt excluded: for Scrapy,
``downloader/response_count`` less the robots.txt responses), the HTML responses with status
200 among them, each payload once (what a user counts: ours read back from the WARC files, Scrapy's
from its feed; ``html_pages``), and with the duplicates too (``html_fetches``: a payload fetched
before under another URL, which our archive writes as a revisit record and Scrapy's feed lists
again), pages/s over the crawl's own elapsed time, pages per CPU-second of the whole crawler
(every process, start-up included, from ``wait4``), peak RSS (of its largest process), what it
stored (our WARC request+response records; Scrapy's feed of URL, status, length, type and SHA-1) and
its size on disk. Reported: medians and the ratios of the
medians, our crawler over Scrapy.

Scrapy is installed by the ``bench`` extra only; it is never a dependency of the crawler.

In equal time our crawler fetches some 30 times more pages than Scrapy and so goes deeper into the web, where
its 404s, redirects, binary files and duplicate URLs are; ``--pages`` has both fetch the same number of pages
(breadth-first, both), so that both fetch the same part of the web.

    python -m bench.scrapy_side                    # about 4 minutes; writes bench/scrapy_side.{json,png}
    python -m bench.scrapy_side --pages 15000 --seconds 600 --out /tmp/side   # equal pages, not equal time
    python -m bench.scrapy_side --smoke --out /tmp/side
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from bench import plots
from bench.runner import (HTML_TYPES, RESULTS_DIR, Web, checked, crawl, invitro_web, load_average, machine, medians,
                          run_child, write_result)

SPIDER = Path(__file__).with_name("scrapy_spider.py")
CRAWLERS = ("crawl", "scrapy")


def disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else path.stat().st_size


def run_ours(web: Web, folder: Path, args: argparse.Namespace) -> dict[str, float]:
    settings = [f"politeness.host_delay={args.host_delay}", "politeness.ip_delay=0"]
    run = crawl(web, folder, args.seconds, settings + ([f"engine.max_pages={args.pages}"] if args.pages else []),
                proxy=True, agents=None)
    stats = run.stats
    return {
        "pages": stats["pages"],
        "html_pages": run.html_pages,
        "html_pages_per_cpu_second": run.html_pages / run.cost.cpu_seconds,
        "html_fetches_per_cpu_second": (run.html_pages + run.html_duplicates) / run.cost.cpu_seconds,
        "pages_per_second": stats["pages"] / stats["elapsed_seconds"],
        "pages_per_cpu_second": stats["pages"] / run.cost.cpu_seconds,
        "cpu_seconds": run.cost.cpu_seconds,
        "max_rss_mib": run.cost.max_rss_bytes / 2**20,
        "stored": stats["stored"],  # WARC response records (each with its request record)
        "stored_mib": disk_bytes(folder / "out" / "warc") / 2**20,
        "server_cpu_share": run.server_cpu_seconds / run.cost.wall_seconds,
        "load_average_1min": run.load_average[0],
    }


def run_scrapy(web: Web, folder: Path, args: argparse.Namespace) -> dict[str, float]:
    feed, stats_file, stderr = folder / "feed.jsonl", folder / "scrapy-stats.json", folder / "scrapy.stderr"
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(SPIDER), "-a", f"seeds={web.seeds_file()}",
           "-a", f"stats_file={stats_file}", "-O", str(feed), "-s", f"DOWNLOAD_DELAY={args.host_delay}",
           "-s", f"CLOSESPIDER_TIMEOUT={args.seconds}"]
    if args.pages:  # Scrapy counts every response, robots.txt too: one a host, all fetched first from the seeds
        cmd += ["-s", f"CLOSESPIDER_PAGECOUNT={args.pages + args.hosts}"]
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "no_proxy")}
    env["http_proxy"] = f"http://{web.info['proxy']}"
    server_cpu = web.cpu_seconds()
    cost = checked(run_child(cmd, timeout=args.seconds + 120, env=env, stderr=stderr), "scrapy", stderr)
    server_cpu = web.cpu_seconds() - server_cpu
    stats = orjson.loads(stats_file.read_bytes())
    pages = stats.get("downloader/response_count", 0) - stats.get("robotstxt/response_count", 0)
    html, duplicates = html_pages_in_feed(feed)
    return {
        "pages": pages,
        "html_pages": html,
        "html_pages_per_cpu_second": html / cost.cpu_seconds,
        "html_fetches_per_cpu_second": (html + duplicates) / cost.cpu_seconds,
        "pages_per_second": pages / stats["elapsed_seconds"],
        "pages_per_cpu_second": pages / cost.cpu_seconds,
        "cpu_seconds": cost.cpu_seconds,
        "max_rss_mib": cost.max_rss_bytes / 2**20,
        "stored": stats.get("item_scraped_count", 0),  # feed lines
        "stored_mib": disk_bytes(feed) / 2**20 if feed.exists() else 0.0,
        "server_cpu_share": server_cpu / cost.wall_seconds,
        "load_average_1min": load_average()[0],
    }


def html_pages_in_feed(feed: Path) -> tuple[int, int]:
    """The feed's HTML responses with status 200, each payload once, and the duplicates among them (a payload
    seen before): the pages a user counts, as ours are counted in the WARC, where a duplicate is a revisit."""
    if not feed.exists():
        return 0, 0
    items = [orjson.loads(line) for line in feed.read_bytes().splitlines() if line.strip()]
    html = [item["sha1"] for item in items
            if item["status"] == 200 and item["type"].split(";", 1)[0].strip().lower() in HTML_TYPES]
    distinct = len(set(html))
    return distinct, len(html) - distinct


def one_run(name: str, args: argparse.Namespace) -> dict[str, float]:
    web_args = ["--hosts-per-ip", "1"]
    with tempfile.TemporaryDirectory(prefix=f"side-{name}-") as tmp:
        folder = Path(tmp)
        with invitro_web(folder, args.hosts, web_args) as web:
            return run_ours(web, folder, args) if name == "crawl" else run_scrapy(web, folder, args)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30, help="crawl time of each run")
    parser.add_argument("--runs", type=int, default=3, help="runs of each crawler, alternating")
    parser.add_argument("--hosts", type=int, default=3000)
    parser.add_argument("--host-delay", type=float, default=1.0, help="seconds between two requests to a host")
    parser.add_argument("--pages", type=int, default=0,
                        help="stop each crawler after this many pages (robots.txt not counted), so that both fetch "
                             "the same part of the web; --seconds then only bounds a run")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for scrapy_side.json and .png")
    parser.add_argument("--smoke", action="store_true", help="seconds-long: one short run of each on a small web")
    args = parser.parse_args(argv)
    if args.smoke:
        args.seconds, args.runs, args.hosts, args.host_delay = 4, 1, 50, 0.2
        args.pages = min(args.pages, 100)
    at_start = machine()
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in CRAWLERS}
    for i in range(args.runs):
        for name in CRAWLERS:
            runs[name].append(one_run(name, args))
            r = runs[name][-1]
            print(f"run {i + 1} {name:6}: {r['pages']:7.0f} pages, {r['pages_per_second']:7.1f} pages/s, "
                  f"{r['pages_per_cpu_second']:6.1f} per CPU-second ({r['html_pages_per_cpu_second']:6.1f} HTML 200), RSS {r['max_rss_mib']:.0f} MiB, "
                  f"stored {r['stored']:.0f} ({r['stored_mib']:.1f} MiB), load {r['load_average_1min']:.2f}",
                  flush=True)
    median = {name: medians(rs) for name, rs in runs.items()}
    ratios = {key: median["crawl"][key] / median["scrapy"][key] if median["scrapy"][key] else float("inf")
              for key in ("pages_per_second", "pages_per_cpu_second", "html_pages_per_cpu_second",
                          "html_fetches_per_cpu_second")}
    result: dict[str, Any] = {
        "benchmark": "scrapy_side",
        "machine": at_start,
        "parameters": {k: v for k, v in vars(args).items() if k != "out"},
        "host_delay": args.host_delay,
        "median": median,
        "ratios": ratios,
        "runs": runs,
        "stores": {"crawl": "WARC/1.1 request and response records (ISA-L gzip), bodies included",
                   "scrapy": "a JSON-lines feed: url, status, length, content type and SHA-1 of each 2xx response"},
    }
    for key, ratio in ratios.items():
        print(f"ratio {key}: crawl {median['crawl'][key]:.1f} / scrapy {median['scrapy'][key]:.1f} = {ratio:.1f}x")
    write_result(args.out / "scrapy_side.json", result)
    plots.scrapy_side(result, args.out / "scrapy_side.png")


if __name__ == "__main__":
    main()
