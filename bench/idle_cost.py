"""Waiting is free: CPU per page of a politeness-bound crawl against an unbound one, and of an idle crawler.

Issue 18's third target: a crawl whose pace is set by the politeness delays must cost the same
CPU per page as one that runs as fast as the machine allows, within 5%; the CPU spent while
waiting is what separates them. Two figures:

* **idle CPU**: a crawl of one IP with delays longer than the run (nothing is ever due), the
  CPU seconds per wall second of each process over the second half (supervisor and agents, from
  ``/proc``), i.e. what the crawler costs doing nothing;
* **bound against unbound**: the same web crawled for the same ``--pages`` pages with no delay
  and with delays that cut the rate to about a tenth (2,000 hosts, host delay 20 s: at most
  100 pages/s), alternately (ABBA...), as shipped (one agent per core); CPU per HTML 200 page
  over the whole run (the WARC's HTML 200 pages over the CPU of every process, start to exit).
  The same pages: the two runs do the same work (the same start, the same share of new links
  per page) and differ only in the time they take, so what separates them is what waiting
  costs. (A window of a run of fixed length would not do: the unbound crawl would be tens of
  thousands of pages further in, where most links are known, and cheaper per page.)

    python -m bench.idle_cost                    # about 5 minutes; writes bench/idle_cost.json
    python -m bench.idle_cost --smoke --out /tmp/idle
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.invitro.process import cpu_of
from bench.runner import CRAWLER_SETTINGS, RESULTS_DIR, alternately, crawl, invitro_web, machine, write_result

def children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def idle_cpu(seconds: float) -> dict[str, Any]:
    """CPU per wall second of each crawler process while nothing is due (second half of the run)."""
    with tempfile.TemporaryDirectory(prefix="idle-cost-") as tmp:
        folder = Path(tmp)
        with invitro_web(folder, 2, ["--hosts-per-ip", "2"]) as web:
            cmd = [sys.executable, "-m", "engine.cli", "run", "--seeds", str(web.seeds_file()),
                   "--out", str(folder / "out"), "--dns", web.info["dns"], "--max-seconds", str(seconds)]
            for setting in (*CRAWLER_SETTINGS, "politeness.host_delay=1000", "politeness.ip_delay=1000"):
                cmd += ["--set", setting]
            crawler = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                time.sleep(seconds / 2)  # a measurement window, not a wait for an event
                pids = [crawler.pid, *children(crawler.pid)]
                before, t0 = [cpu_of(p) for p in pids], time.monotonic()
                time.sleep(seconds / 2 - 2)
                after, t1 = [cpu_of(p) for p in pids], time.monotonic()
            finally:
                crawler.wait(timeout=seconds + 60)
    per_process = [(b - a) / (t1 - t0) * 1000 for a, b in zip(before, after, strict=True)]
    return {"window_seconds": t1 - t0, "ms_per_second": per_process, "total_ms_per_second": sum(per_process)}


def one_run(bound: bool, args: argparse.Namespace) -> dict[str, float]:
    delays = ([f"politeness.host_delay={args.host_delay}", f"politeness.ip_delay={args.host_delay / 4}"] if bound
              else ["politeness.host_delay=0", "politeness.ip_delay=0"])
    with tempfile.TemporaryDirectory(prefix="idle-cost-") as tmp:
        folder = Path(tmp)
        with invitro_web(folder, args.hosts) as web:
            run = crawl(web, folder, args.pages / 20 + 60, [*delays, f"engine.max_pages={args.pages}", *args.set],
                        agents=None)
    return {
        "pages": run.stats["pages"],
        "pages_per_second": run.stats["pages"] / run.stats["elapsed_seconds"],
        "cpu_ms_per_html_page": 1000 * run.cost.cpu_seconds / run.html_pages if run.html_pages else 0.0,
        "html_pages": run.html_pages,
        "cpu_seconds": run.cost.cpu_seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # enough hosts that the unbound crawl is still in the web's body at its end, not in the tail
    # of a few large hosts (400 hosts were crawled out in 20 s, and the warm half measured the tail)
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--host-delay", type=float, default=20.0,
                        help="the bound runs' host delay (IP delay a quarter of it)")
    parser.add_argument("--pages", type=int, default=8000, help="each crawl (robots.txt not counted)")
    parser.add_argument("--runs", type=int, default=3, help="pairs of runs, bound and unbound alternately")
    parser.add_argument("--idle-seconds", type=float, default=30.0)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a crawl.toml override for both kinds of run (repeat it)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for idle_cost.json")
    parser.add_argument("--smoke", action="store_true", help="seconds-long: one pair, a small web")
    args = parser.parse_args()
    if args.smoke:
        args.hosts, args.pages, args.runs, args.idle_seconds, args.host_delay = 40, 150, 1, 8.0, 2.0
    idle = idle_cpu(args.idle_seconds)
    print(f"idle: {idle['total_ms_per_second']:.1f} ms of CPU per second "
          f"({', '.join(f'{x:.1f}' for x in idle['ms_per_second'])} by process)", flush=True)
    runs, median = alternately(
        ("unbound", "bound"), args.runs, lambda kind: one_run(kind == "bound", args),
        lambda _, f: (f"{f['pages']:6.0f} pages at {f['pages_per_second']:7.1f} pages/s  "
                      f"{f['cpu_ms_per_html_page']:.3f} ms CPU per HTML page"))
    ratio = median["bound"]["cpu_ms_per_html_page"] / median["unbound"]["cpu_ms_per_html_page"]
    print(f"bound / unbound CPU per HTML page (medians): {ratio:.3f}")
    write_result(args.out / "idle_cost.json", {"idle": idle, "runs": runs, "median": median,
                                               "bound_over_unbound": ratio, "args": vars(args) | {"out": str(args.out)},
                                               "machine": machine()})


if __name__ == "__main__":
    main()
