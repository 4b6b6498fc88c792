"""Raw speed (BUbiNG's Table 1 setting): IP delay 0.5 s, host delay 4 s, 1,000 fetchers, for a fixed time.

One agent crawls an in-vitro web with enough hosts that politeness never starves it (by
default 12,000 hosts, eight per IP: 1,500 IPs, where about 800 pages/s need some 400 busy
IPs), with no bandwidth cap and no added latency: what limits it is CPU, the crawler's and
the in-vitro server's, on the same two cores. Reported per run and as medians: pages/s,
MB/s (bodies as transferred), pages per CPU-second of the crawler (warm, and over the whole
run with start-up), resident memory over time, and the server's CPU share.

BUbiNG's figure to compare with: 9,150 pages/s per 64-core agent, about 143 pages/s per core.

    python -m bench.raw_speed                      # about 5 minutes; writes bench/raw_speed.{json,png}
    python -m bench.raw_speed --smoke --out /tmp/raw
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench import plots
from bench.runner import RESULTS_DIR, crawl, invitro_web, machine, medians, warm, whole_run, write_result

TIMELINE_KEYS = ("t", "pages", "bytes", "cpu", "rss", "front", "in_flight")


def one_run(args: argparse.Namespace) -> tuple[dict[str, float], list[dict[str, float]]]:
    settings = [f"politeness.ip_delay={args.ip_delay}", f"politeness.host_delay={args.host_delay}",
                f"engine.fetchers={args.fetchers}"]
    with tempfile.TemporaryDirectory(prefix="raw-speed-") as tmp:
        folder = Path(tmp)
        with invitro_web(folder, args.hosts, ["--hosts-per-ip", str(args.hosts_per_ip)]) as web:
            run = crawl(web, folder, args.seconds, settings)
    whole = whole_run(run)
    figures = {k if k.startswith("warm") else f"warm_{k}": v for k, v in warm(run.stats).items()}
    timeline = run.stats["timeline"]
    rss = [s["rss"] / 2**20 for s in timeline]
    half = rss[len(rss) // 2:]
    figures.update({
        "pages": whole["pages"],
        "pages_per_second": whole["pages_per_second"],
        "pages_per_cpu_second": whole["pages_per_cpu_second"],
        "mb_per_second": whole["mb_per_second"],
        "rss_mib_end": rss[-1],
        "rss_mib_max": max(rss),
        # flat memory: growth over the second half of the run, relative to its start
        "rss_growth_second_half": half[-1] / half[0] - 1,
        "server_cpu_share": whole["server_cpu_share"],
        "errors": whole["errors"],
        "load_average_1min": run.load_average[0],
    })
    return figures, [{k: s[k] for k in TIMELINE_KEYS} for s in timeline]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hosts", type=int, default=12000)
    parser.add_argument("--hosts-per-ip", type=int, default=8)
    parser.add_argument("--ip-delay", type=float, default=0.5)
    parser.add_argument("--host-delay", type=float, default=4.0)
    parser.add_argument("--fetchers", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for raw_speed.json and .png")
    parser.add_argument("--smoke", action="store_true", help="seconds-long: one short run on a small web")
    args = parser.parse_args(argv)
    if args.smoke:
        args.seconds, args.runs, args.hosts, args.ip_delay, args.host_delay = 4, 1, 200, 0.05, 0.4
    at_start = machine()
    runs, timelines = [], []
    for i in range(args.runs):
        figures, timeline = one_run(args)
        runs.append(figures)
        timelines.append(timeline)
        print(f"run {i + 1}: {figures['warm_pages_per_second']:.0f} pages/s warm, "
              f"{figures['warm_pages_per_cpu_second']:.0f} per CPU-second warm, {figures['warm_mb_per_second']:.2f} MB/s, "
              f"RSS {figures['rss_mib_end']:.0f} MiB, load {figures['load_average_1min']:.2f}", flush=True)
    median = medians(runs)
    result = {
        "benchmark": "raw_speed",
        "machine": at_start,
        "hosts": args.hosts,
        "settings": {"ip_delay": args.ip_delay, "host_delay": args.host_delay, "fetchers": args.fetchers,
                     "seconds": args.seconds, "hosts_per_ip": args.hosts_per_ip},
        "median": median,
        "runs": runs,
        "timelines": timelines,
    }
    for key, value in median.items():
        print(f"{key:32} {value:12.2f}")
    write_result(args.out / "raw_speed.json", result)
    plots.raw_speed(result, args.out / "raw_speed.png")


if __name__ == "__main__":
    main()
