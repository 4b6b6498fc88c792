"""End-to-end throughput: crawl the in-vitro web for a fixed time and report what it cost.

Starts the in-vitro web (``python -m bench.invitro``) and ``crawl run`` as two processes,
crawls for ``--seconds``, and prints pages/s, pages per CPU-second, MB/s (body bytes as
transferred), resident memory and the in-vitro server's CPU share, so a reader knows whether the
server rather than the crawler was the bottleneck. The crawler runs as shipped (one agent per
core, the archive with its index, link graph and dedup) unless ``--processes`` says otherwise;
``html_pages_per_cpu_second`` is the figure a user would quote: HTML 200 responses in the WARC
files over the CPU of every process of the crawl. Several runs; the figures reported are
medians; ``warm_pages_per_cpu_second`` is pages of any kind per CPU-second over the second half of
the run (the start of every process left out). Output: a table on stdout and JSON (``--json FILE``).

    python -m bench.crawl_bench --seconds 20 --runs 3
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.runner import crawl, invitro_web, machine, medians, warm, whole_run, write_result


def one_run(seconds: float, hosts: int, settings: list[str], web_args: list[str], agents: int | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="crawl-bench-") as tmp:
        folder = Path(tmp)
        with invitro_web(folder, hosts, web_args, log=True) as web:
            run = crawl(web, folder, seconds, settings, agents=agents)
    steady = warm(run.stats)
    return {**whole_run(run), "todo_wait_share_warm": steady["todo_wait_share"],
            "warm_pages_per_cpu_second": steady["pages_per_cpu_second"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--runs", type=int, default=3, help="runs per variant")
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--processes", type=int, help="agent processes (default: as shipped, one per core)")
    parser.add_argument("--set", action="append", default=[], help="crawl.toml override for the crawler")
    parser.add_argument("--variant", action="append", default=[],
                        help="a crawl.toml override defining one variant; variants alternate run by run")
    parser.add_argument("--web", action="append", default=[], help="extra argument for bench.invitro")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    at_start = machine()
    settings = ["politeness.host_delay=0", "politeness.ip_delay=0", *args.set]
    variants = args.variant or [""]
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    for _ in range(args.runs):
        for v in variants:
            runs[v].append(one_run(args.seconds, args.hosts, settings + ([v] if v else []), args.web, args.processes))
    median_of = {v: medians(rs) for v, rs in runs.items()}
    for v, m in median_of.items():
        print(f"-- {v or 'as configured'} (median of {args.runs})")
        for key, value in m.items():
            print(f"{key:22} {value:12.2f}")
    if len(variants) > 1:
        base = median_of[variants[-1]]
        for v in variants[:-1]:
            for key in ("pages_per_second", "pages_per_cpu_second", "html_pages_per_cpu_second", "warm_pages_per_cpu_second"):
                print(f"ratio {key} {v} / {variants[-1]}: {median_of[v][key] / base[key]:.2f}")
    result = {"seconds": args.seconds, "hosts": args.hosts, "settings": settings, "processes": args.processes, "runs": runs,
              "median": median_of[variants[0]], "medians": median_of}
    if args.json:
        write_result(args.json, {**result, "machine": at_start})


if __name__ == "__main__":
    main()
