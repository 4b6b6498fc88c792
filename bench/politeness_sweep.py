"""Politeness sweep (BUbiNG's in-vitro Fig. 4): IP delay from small to large, host delay = 8 × IP delay.

BUbiNG's claim: throughput and CPU stay flat whatever the politeness, because the crawler
widens its *front* (the IPs it keeps busy at once) in proportion to the delay. Here every page
answers after ``--latency`` seconds and ``--fetchers`` coroutines fetch, so the fetchers set
the throughput (fetchers / latency) well below what the web's IPs could give at any delay,
and the question is only whether the crawler finds enough IPs to keep them busy.

So that the front the crawler settles at is its own adaptation, the required front starts at
``--front-step`` IPs and grows by that step (the defaults, 1,000 and 1,000, would start above
what the small delays need). Each host's first page waits for its robots.txt and then a host
delay, so a run lasts ``max(25, 10 + 25 × IP delay)`` seconds and its figures are taken over
the second half (``bench.runner.warm``). Plotted against the delay: the front (IPs with work,
and the required front), the IPs that Little's law says are busy (pages/s × (IP delay + mean
fetch time)), pages/s and CPU.

    python -m bench.politeness_sweep               # about 7 minutes; writes bench/politeness_sweep.{json,png}
    python -m bench.politeness_sweep --smoke --out /tmp/sweep
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

from bench import plots
from bench.runner import RESULTS_DIR, crawl, invitro_web, machine, medians, warm, write_result

IP_DELAYS = (0.125, 0.25, 0.5, 1.0, 2.0)


def seconds_for(ip_delay: float, smoke: bool) -> float:
    """Long enough for robots.txt plus one host delay to be behind the warm half of the run."""
    return 4.0 if smoke else max(25.0, 10.0 + 25.0 * ip_delay)


def one_point(ip_delay: float, args: argparse.Namespace) -> dict[str, float]:
    web_args = ["--hosts-per-ip", str(args.hosts_per_ip), "--set", "frac_slow=1", "--set", f"slow_seconds={args.latency}"]
    settings = [f"politeness.ip_delay={ip_delay}", f"politeness.host_delay={8 * ip_delay}",
                f"engine.fetchers={args.fetchers}", f"frontier.required_front={args.front_step}",
                f"frontier.front_step={args.front_step}"]
    with tempfile.TemporaryDirectory(prefix="politeness-sweep-") as tmp:
        folder = Path(tmp)
        with invitro_web(folder, args.hosts, web_args) as web:
            run = crawl(web, folder, seconds_for(ip_delay, args.smoke), settings)
    figures = warm(run.stats)
    # Little's law: an IP is busy for its fetch plus the IP delay after it; fetch time = in flight / rate.
    fetch_time = figures["in_flight"] / figures["pages_per_second"] if figures["pages_per_second"] else 0.0
    figures["littles_law_front"] = figures["pages_per_second"] * (ip_delay + fetch_time)
    figures["server_cpu_share"] = run.server_cpu_seconds / run.cost.wall_seconds
    figures["load_average_1min"] = run.load_average[0]
    return figures


def linear_fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least-squares slope, intercept and R² of ys against xs."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    intercept = my - slope * mx
    total = sum((y - my) ** 2 for y in ys)
    residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    return slope, intercept, 1 - residual / total if total else 1.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ip-delays", type=float, nargs="+", default=list(IP_DELAYS), metavar="SECONDS")
    parser.add_argument("--runs", type=int, default=2, help="rounds over every delay")
    parser.add_argument("--hosts", type=int, default=16000)
    parser.add_argument("--hosts-per-ip", type=int, default=8, help="8: the host and IP delays allow the same rate")
    parser.add_argument("--fetchers", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds before each page is answered")
    parser.add_argument("--front-step", type=int, default=16, help="initial required front and its growth step")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for politeness_sweep.json and .png")
    parser.add_argument("--smoke", action="store_true", help="seconds-long: two delays, one round, a small web")
    args = parser.parse_args(argv)
    if args.smoke:
        args.ip_delays, args.runs, args.hosts, args.fetchers = [0.05, 0.1], 1, 64, 20
    at_start = machine()
    runs: dict[float, list[dict[str, float]]] = {d: [] for d in args.ip_delays}
    for _ in range(args.runs):
        for d in args.ip_delays:
            runs[d].append(one_point(d, args))
            r = runs[d][-1]
            print(f"IP delay {d:6.3f} s: {r['pages_per_second']:7.1f} pages/s  front {r['front']:7.1f}  "
                  f"required {r['required_front']:7.1f}  Little {r['littles_law_front']:7.1f}  "
                  f"CPU {r['crawler_cpu_share']:.2f}  load {r['load_average_1min']:.2f}", flush=True)
    points = [{"ip_delay": d, "host_delay": 8 * d, **medians(rs)} for d, rs in runs.items()]
    rates = [p["pages_per_second"] for p in points]
    mean_rate = sum(rates) / len(rates)
    fits = {key: dict(zip(("slope", "intercept", "r2"), linear_fit(args.ip_delays, [p[key] for p in points])))
            for key in ("front", "required_front", "littles_law_front")}
    result = {
        "benchmark": "politeness_sweep",
        "machine": at_start,
        "parameters": {k: v for k, v in vars(args).items() if k != "out"},
        "web_ips": math.ceil(args.hosts / args.hosts_per_ip),
        "points": points,
        "pages_per_second_spread": (max(rates) - min(rates)) / mean_rate,
        "linear_fits": fits,
        "runs": {str(d): rs for d, rs in runs.items()},
    }
    print(f"pages/s within {100 * result['pages_per_second_spread']:.0f}% (max - min over mean); "
          + "; ".join(f"{k} against delay R² {f['r2']:.2f}" for k, f in fits.items()))
    write_result(args.out / "politeness_sweep.json", result)
    plots.politeness_sweep(result, args.out / "politeness_sweep.png")


if __name__ == "__main__":
    main()
