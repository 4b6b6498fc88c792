"""Fetchers sweep (BUbiNG's in-vitro Fig. 3): throughput against fetch coroutines on a bandwidth-capped web.

No politeness delay; every page answers after ``--latency`` seconds (a network's round trip)
and all responses share ``--bandwidth`` bytes/s (the in-vitro server's cap). Pages/s should
grow linearly with the number of fetchers, as N / latency, until the bandwidth is full, then
stay on a plateau with no decline however many fetchers are added: the crawler itself adds
no hindrance. The plateau is the web's cap, not the crawler's CPU: the crawler's CPU share is
recorded next to each point to show it.

Hosts are two per IP and robots.txt has no Crawl-delay here, so that up to the number of IPs
(1,000 by default) fetches can really be in flight. The rate is taken over the second half of
each run (``bench.runner.warm``), after the robots.txt fetches of the start. Fetcher counts
are run in turn within each round, rounds repeated ``--runs`` times; figures are medians.

    python -m bench.fetchers_sweep                 # about 6 minutes; writes bench/fetchers_sweep.{json,png}
    python -m bench.fetchers_sweep --smoke --out /tmp/sweep
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench import plots
from bench.runner import RESULTS_DIR, crawl, invitro_web, machine, medians, warm, write_result

FETCHERS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000)


def one_point(fetchers: int, args: argparse.Namespace) -> dict[str, float]:
    web_args = ["--hosts-per-ip", "2", "--bandwidth", str(args.bandwidth), "--set", "frac_slow=1",
                "--set", f"slow_seconds={args.latency}", "--set", "robots_crawl_delay_share=0"]
    settings = ["politeness.host_delay=0", "politeness.ip_delay=0", f"engine.fetchers={fetchers}"]
    with tempfile.TemporaryDirectory(prefix="fetchers-sweep-") as tmp:
        folder = Path(tmp)
        with invitro_web(folder, args.hosts, web_args) as web:
            run = crawl(web, folder, args.seconds, settings)
    figures = warm(run.stats)
    figures["server_cpu_share"] = run.server_cpu_seconds / run.cost.wall_seconds
    figures["bytes_per_page"] = run.stats["bytes"] / max(1, run.stats["pages"])
    figures["load_average_1min"] = run.load_average[0]
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fetchers", type=int, nargs="+", default=list(FETCHERS))
    parser.add_argument("--seconds", type=float, default=12, help="crawl time of each point")
    parser.add_argument("--runs", type=int, default=2, help="rounds over every fetcher count")
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--bandwidth", type=float, default=1_000_000, help="the web's cap, bytes/s")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds before each page is answered")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for fetchers_sweep.json and .png")
    parser.add_argument("--smoke", action="store_true", help="seconds-long: two points, one round, a small web")
    args = parser.parse_args(argv)
    if args.smoke:
        args.fetchers, args.seconds, args.runs, args.hosts = [1, 8], 3, 1, 50
    at_start = machine()
    runs: dict[int, list[dict[str, float]]] = {n: [] for n in args.fetchers}
    for _ in range(args.runs):
        for n in args.fetchers:
            runs[n].append(one_point(n, args))
            r = runs[n][-1]
            print(f"fetchers {n:5d}: {r['pages_per_second']:8.1f} pages/s  crawler CPU {r['crawler_cpu_share']:.2f}  "
                  f"server CPU {r['server_cpu_share']:.2f}  load {r['load_average_1min']:.2f}", flush=True)
    points = [{"fetchers": n, **medians(rs)} for n, rs in runs.items()]
    result = {
        "benchmark": "fetchers_sweep",
        "machine": at_start,
        "parameters": {k: v for k, v in vars(args).items() if k != "out"},
        "points": points,
        "runs": {str(n): rs for n, rs in runs.items()},
    }
    print(f"{'fetchers':>8} {'pages/s':>9} {'CPU':>5} {'in flight':>9}")
    for p in points:
        print(f"{p['fetchers']:8d} {p['pages_per_second']:9.1f} {p['crawler_cpu_share']:5.2f} {p['in_flight']:9.1f}")
    write_result(args.out / "fetchers_sweep.json", result)
    plots.fetchers_sweep(result, args.out / "fetchers_sweep.png")


if __name__ == "__main__":
    main()
