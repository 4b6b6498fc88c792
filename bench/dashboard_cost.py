"""What the live dashboard costs the crawl: CPU per page with the control API off, on with nobody looking, and looked at.

Issue 19's target: the dashboard costs the crawl < 1% CPU when nobody is looking. Three modes,
run in turns against the same in-vitro web (``bench/runner.py``), two agent processes, a paced
crawl (a host delay, so the work per second is set by politeness, not by the CPU):

* ``off``: no control API;
* ``idle``: ``--control`` (the dashboard served at ``/``), no client;
* ``looking``: ``--control`` and a client making the page's own requests (``GET /status`` and
  ``GET /timeline?since=`` every second, ``GET /hosts`` every third), from this process.

Two figures per run, each mode's median over ``--runs`` rounds:

* the crawl's CPU per thousand pages in its warm part (:func:`steady`: the timeline's CPU,
  supervisor and agents, without the start-up, where the imports dominate a short run); on a
  shared machine it varies by several per cent from run to run, more than the target;
* the CPU share of the supervisor alone, the process that serves the control API, read from
  ``/proc`` over the middle of the crawl (:class:`SupervisorCpu`): the agents' only new work
  without a client is one clock read per status line, so this is where an idle dashboard would
  show, and it varies far less.

    python -m bench.dashboard_cost            # writes bench/dashboard_cost.json
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson

from bench.runner import CRAWLER_SETTINGS, RESULTS_DIR, checked, invitro_web, machine, medians, run_child, write_result

MODES = ("off", "idle", "looking")
TOKEN = "bench-dashboard-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def look(url: str, done: threading.Event) -> int:
    """The page's requests until ``done``; returns how many were answered."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    since, answered, n = -1.0, 0, 0
    while not done.is_set():
        paths = ["/status", f"/timeline?since={since}"] + (["/hosts"] if n % 3 == 0 else [])
        for path in paths:
            request = urllib.request.Request(url + path, headers={"Authorization": f"Bearer {TOKEN}"})
            try:
                with opener.open(request, timeout=10) as response:
                    body = orjson.loads(response.read())
                answered += 1
                if path.startswith("/timeline") and body:
                    since = body[-1]["t"]
            except OSError:  # not listening yet, or gone at the end
                pass
        n += 1
        done.wait(1.0)
    return answered


class SupervisorCpu(threading.Thread):
    """The CPU share of ``crawl run``'s own process (found in /proc by its ``--out``) from ``start``
    to ``end`` seconds after the crawl was launched."""

    def __init__(self, out: Path, start: float, end: float) -> None:
        super().__init__(daemon=True)
        self.out, self.start_at, self.end_at = str(out), start, end
        self.share = float("nan")

    def find(self) -> int | None:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    argv = (entry / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if b"engine.cli" in argv and self.out.encode() in argv:
                    return int(entry.name)
        return None

    @staticmethod
    def cpu(pid: int) -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    def run(self) -> None:
        launched = time.monotonic()
        pid = None
        while pid is None and time.monotonic() - launched < self.start_at:
            pid = self.find()
            time.sleep(0.2)
        if pid is None:
            return
        time.sleep(max(0.0, launched + self.start_at - time.monotonic()))
        before = self.cpu(pid)
        time.sleep(self.end_at - self.start_at)
        self.share = (self.cpu(pid) - before) / (self.end_at - self.start_at)


def steady(timeline: list[dict[str, float]]) -> dict[str, float]:
    """Pages per second and CPU share from 40% of the run to three samples before its end (the last
    samples may miss an agent that already exited, whose pages then drop out of the sum)."""
    a, b = timeline[int(len(timeline) * 0.4)], timeline[-3]
    span, cpu, pages = b["t"] - a["t"], b["cpu"] - a["cpu"], b["pages"] - a["pages"]
    return {"pages_per_second": pages / span, "crawler_cpu_share": cpu / span, "pages_per_cpu_second": pages / cpu}


def one_run(mode: str, args: argparse.Namespace, folder: Path) -> dict[str, float]:
    with invitro_web(folder, args.hosts) as web:
        port = free_port()
        cmd = [sys.executable, "-m", "engine.cli", "run", "--seeds", str(web.seeds_file()), "--out",
               str(folder / "out"), "--dns", web.info["dns"], "--max-seconds", str(args.seconds)]
        if mode != "off":
            cmd += ["--control", f"127.0.0.1:{port}"]
        for setting in (*CRAWLER_SETTINGS, "engine.processes=2", f"politeness.host_delay={args.host_delay}",
                        "politeness.ip_delay=0"):
            cmd += ["--set", setting]
        done, answered = threading.Event(), [0]
        looker = threading.Thread(target=lambda: answered.__setitem__(0, look(f"http://127.0.0.1:{port}", done)),
                                  daemon=True)
        if mode == "looking":
            looker.start()
        stderr = folder / "crawl.stderr"
        supervisor = SupervisorCpu(folder / "out", args.seconds / 6, args.seconds * 5 / 6)
        supervisor.start()
        try:
            cost = checked(run_child(cmd, timeout=args.seconds + 120, env={**os.environ, "CRAWL_CONTROL_TOKEN": TOKEN},
                                     stderr=stderr), "crawl run", stderr)
        finally:
            done.set()
            if mode == "looking":
                looker.join()
            supervisor.join()
        stats = orjson.loads((folder / "out" / "stats.json").read_bytes())
    warm = steady(stats["timeline"])
    return {"pages": stats["pages"], "warm_pages_per_second": warm["pages_per_second"],
            "warm_cpu_share": warm["crawler_cpu_share"],
            "cpu_seconds_per_1000_pages": 1000 / warm["pages_per_cpu_second"],
            "supervisor_cpu_share": supervisor.share, "whole_run_cpu_seconds": cost.cpu_seconds,
            "requests_answered": answered[0]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="rounds over the three modes")
    parser.add_argument("--seconds", type=float, default=30.0, help="each crawl's engine.max_seconds")
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--host-delay", type=float, default=0.5)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "dashboard_cost.json")
    args = parser.parse_args(argv)
    at_start = machine()
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for _ in range(args.runs):
        for mode in MODES:
            with tempfile.TemporaryDirectory(prefix=f"dashboard-{mode}-") as tmp:
                runs[mode].append(one_run(mode, args, Path(tmp)))
            r = runs[mode][-1]
            print(f"{mode:8} {r['pages']:6.0f} pages  warm: {r['warm_pages_per_second']:6.1f} pages/s  "
                  f"{r['warm_cpu_share']:.3f} CPU  {r['cpu_seconds_per_1000_pages']:.3f} CPU s / 1000 pages;  "
                  f"supervisor {r['supervisor_cpu_share']:.4f} CPU;  whole run {r['whole_run_cpu_seconds']:6.2f} CPU s  "
                  f"{r['requests_answered']:.0f} requests", flush=True)
    summary = {mode: medians(rs) for mode, rs in runs.items()}
    base = summary["off"]["cpu_seconds_per_1000_pages"]
    extra: dict[str, Any] = {}
    crawl_cpu = summary["off"]["warm_cpu_share"]
    for mode in MODES[1:]:
        share = extra[mode] = summary[mode]["cpu_seconds_per_1000_pages"] / base - 1
        served = summary[mode]["supervisor_cpu_share"] - summary["off"]["supervisor_cpu_share"]
        extra[f"{mode}_supervisor"] = served / crawl_cpu
        print(f"{mode}: {100 * share:+.2f}% CPU per page against off; the supervisor {served:+.4f} CPU, "
              f"{100 * served / crawl_cpu:+.2f}% of the crawl's CPU (medians of {args.runs})")
    write_result(args.out, {"benchmark": "dashboard_cost", "machine": at_start, "settings": vars(args) | {"out": str(args.out)},
                            "runs": runs, "medians": summary, "extra_cpu_share": extra})


if __name__ == "__main__":
    main()
