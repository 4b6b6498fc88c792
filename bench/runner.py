"""What every end-to-end benchmark does: the in-vitro web and a crawler as child processes, and their cost.

Role: the shared machinery of ``bench/crawl_bench.py``, the sweeps, ``raw_speed`` and
``scrapy_side``. One run starts the in-vitro web (``bench.invitro.process.spawn``) in a
temporary folder, runs one crawler process against it for a fixed time, and reads what that
cost: the crawler's ``stats.json`` (with its one-per-second ``timeline``), each child's CPU and
peak memory from ``wait4``, the server's CPU from ``/proc``, and the machine's load average,
because the machine is shared and a reader must know how busy it was.

Our crawler runs as one agent (``engine.processes=1``) unless a benchmark asks for the
configuration as shipped (``agents=None``: one agent per core): the sweeps measure what one
agent process does, as BUbiNG's in-vitro figures are per agent; ``crawl_bench`` quotes what a
user gets. Besides the crawler's own figures, every run counts what a user would count: HTML
responses with status 200 read back from the WARC files, over the CPU of every process of the
crawl from start to exit (``wait4`` of ``crawl run``, whose reaped agents are included).

Steady-state figures come from the warm part of the timeline (``warm``): a crawl starts with
DNS and robots.txt for every host, which are not pages, so a whole-run average understates
the rate the crawler holds once it is running.
"""

from __future__ import annotations

import datetime
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bench.invitro.process import cpu_of, spawn

RESULTS_DIR = Path(__file__).resolve().parent
"""where the benchmarks write their JSON and PNG by default: next to RESULTS.md"""

CRAWLER_SETTINGS = (
    'network.allow_networks=["127.0.0.0/8"]',
    'engine.progress="off"',
)
"""``--set`` overrides of every crawler run here: loopback allowed, no progress line"""

HTML_TYPES = ("text/html", "application/xhtml+xml")
"""the media types of the pages a user counts"""


@dataclass(frozen=True, slots=True)
class ChildCost:
    """What one finished child process cost, from ``wait4`` (its reaped descendants included)."""

    returncode: int
    cpu_seconds: float
    max_rss_bytes: int
    wall_seconds: float


def run_child(cmd: Sequence[str], *, timeout: float, env: dict[str, str] | None = None,
              stderr: Path | None = None) -> ChildCost:
    """Run ``cmd`` to its end and return its cost; a child still running at ``timeout`` is killed.

    ``wait4`` rather than ``Popen.wait``: it returns the resource usage of exactly this child.
    """
    started = time.monotonic()
    with open(stderr or os.devnull, "wb") as err:
        child = subprocess.Popen(list(cmd), stdout=subprocess.DEVNULL, stderr=err, env=env)
    killer = threading.Timer(timeout, child.kill)
    killer.start()
    try:
        _, status, usage = os.wait4(child.pid, 0)
    finally:
        killer.cancel()
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    return ChildCost(
        returncode=child.returncode,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        max_rss_bytes=usage.ru_maxrss * 1024,
        wall_seconds=time.monotonic() - started,
    )


def checked(cost: ChildCost, what: str, stderr: Path) -> ChildCost:
    """``cost``, or RuntimeError with the end of the child's stderr if it failed."""
    if cost.returncode != 0:
        tail = stderr.read_text(errors="replace")[-2000:] if stderr.exists() else ""
        raise RuntimeError(f"{what} exited with status {cost.returncode}:\n{tail}")
    return cost


@dataclass(slots=True)
class Web:
    """The in-vitro web running as a child process, and its ready information."""

    process: subprocess.Popen[bytes]
    info: dict[str, Any]
    folder: Path

    def cpu_seconds(self) -> float:
        return cpu_of(self.process.pid)

    def seeds_file(self) -> Path:
        """The web's seeds (every listed home page), one per line, as ``--seeds`` reads them."""
        path = self.folder / "seeds.txt"
        path.write_text("\n".join(self.info["seeds"]) + "\n")
        return path


@contextmanager
def invitro_web(folder: Path, hosts: int, args: Sequence[str] = (), seeds: int = 0, log: bool = False) -> Iterator[Web]:
    """Serve an in-vitro web of ``hosts`` hosts until the block ends.

    ``seeds``: the home pages of the first ``seeds`` hosts are the crawl's seeds (0: every host).
    ``args`` are further ``python -m bench.invitro`` arguments; ``log`` keeps its request log
    (it costs the server CPU, so only the benchmarks that published figures with it keep it).
    """
    web_folder = folder / "web"
    extra = ["--log", str(web_folder / "requests.jsonl")] if log else []
    process, info = spawn(web_folder, ["--hosts", str(hosts), "--seeds", str(seeds or hosts), *extra, *args])
    try:
        yield Web(process, info, web_folder)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


@dataclass(slots=True)
class CrawlRun:
    """One run of ``crawl run`` against a web: its stats.json, its cost, and the server's CPU meanwhile."""

    stats: dict[str, Any]
    cost: ChildCost
    server_cpu_seconds: float
    load_average: tuple[float, float, float]
    html_pages: int
    """HTML responses with status 200 in the WARC files: the pages a user counts, each payload once"""
    html_duplicates: int
    """HTML 200 fetches stored as revisits: a payload stored before (the same page under another URL)"""


def crawl(web: Web, folder: Path, seconds: float, settings: Sequence[str] = (), proxy: bool = False,
          agents: int | None = 1) -> CrawlRun:
    """Run our crawler against ``web`` for ``seconds``; DNS through the web's server.

    ``proxy``: every request goes through the web's forward proxy (``--proxy``), as Scrapy's do.
    ``agents``: agent processes (``None``: as shipped, one per core).
    """
    out = folder / "out"
    cmd = [sys.executable, "-m", "engine.cli", "run", "--seeds", str(web.seeds_file()), "--out", str(out),
           "--dns", web.info["dns"], "--max-seconds", str(seconds)]
    if proxy:
        cmd += ["--proxy", f"http://{web.info['proxy']}"]
    for setting in (*CRAWLER_SETTINGS, *([] if agents is None else [f"engine.processes={agents}"]), *settings):
        cmd += ["--set", setting]
    stderr = folder / "crawl.stderr"
    server_cpu = web.cpu_seconds()
    cost = checked(run_child(cmd, timeout=seconds + 120, stderr=stderr), "crawl run", stderr)
    server_cpu = web.cpu_seconds() - server_cpu
    stats = orjson.loads((out / "stats.json").read_bytes())
    return CrawlRun(stats, cost, server_cpu, load_average(), *html_pages(out / "warc"))


def html_pages(warc_dir: Path) -> tuple[int, int]:
    """HTML responses with status 200 in the WARC files of ``warc_dir``, and the revisits among them: fetches whose
    payload the archive had stored already, written as a revisit record that keeps the HTTP head."""
    from warcio.archiveiterator import ArchiveIterator

    count = {"response": 0, "revisit": 0}
    for path in sorted(warc_dir.glob("*.warc.gz")):
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type in count and record.http_headers.get_statuscode() == "200":
                    mime = record.http_headers.get_header("Content-Type", "").split(";", 1)[0].strip().lower()
                    count[record.rec_type] += mime in HTML_TYPES
    return count["response"], count["revisit"]


def whole_run(run: CrawlRun) -> dict[str, float]:
    """Figures over the whole run (startup included), as ``crawl_bench`` has always reported them."""
    stats = run.stats
    elapsed = stats["elapsed_seconds"]
    return {
        "pages": stats["pages"],
        "html_pages": run.html_pages,
        "html_duplicates": run.html_duplicates,
        # what a user counts and pays: HTML 200 pages over the CPU of every process, start to exit
        "html_pages_per_cpu_second": run.html_pages / run.cost.cpu_seconds if run.cost.cpu_seconds else 0.0,
        "pages_per_second": stats["pages"] / elapsed,
        "pages_per_cpu_second": stats["pages_per_cpu_second"],
        "crawler_cpu_share": stats["cpu_seconds"] / elapsed,
        "mb_per_second": stats["bytes"] / elapsed / 1e6,
        "rss_mib": stats["rss_bytes"] / 2**20,
        "server_cpu_share": run.server_cpu_seconds / run.cost.wall_seconds,
        "hosts": stats["hosts"],
        "errors": sum(stats["errors"].values()),
        "load_average_1min": run.load_average[0],
    }


def warm(stats: dict[str, Any], start_share: float = 0.5) -> dict[str, float]:
    """Steady-state figures over the timeline from ``start_share`` of the run to its end.

    Rates are differences of the cumulative counters between the first and the last sample of
    the window; front, in-flight fetches and memory are averaged (memory also as its maximum).
    """
    timeline = stats["timeline"]
    if len(timeline) < 2:
        raise ValueError(f"a timeline of {len(timeline)} samples has no warm part: run longer")
    window = timeline[min(int(len(timeline) * start_share), len(timeline) - 2):]
    a, b = window[0], window[-1]
    span = b["t"] - a["t"]
    cpu = b["cpu"] - a["cpu"]
    pages = b["pages"] - a["pages"]
    fetchers = stats["config"]["engine"]["fetchers"]
    return {
        "warm_seconds": span,
        "pages_per_second": pages / span,
        "pages_per_cpu_second": pages / cpu if cpu else 0.0,
        "crawler_cpu_share": cpu / span,
        "mb_per_second": (b["bytes"] - a["bytes"]) / span / 1e6,
        "front": statistics.fmean(s["front"] for s in window),
        "required_front": statistics.fmean(s["required_front"] for s in window),
        "in_flight": statistics.fmean(s["in_flight"] for s in window),
        "todo_wait_share": (b["todo_wait_seconds"] - a["todo_wait_seconds"]) / (fetchers * span),
        "rss_mib": statistics.fmean(s["rss"] for s in window) / 2**20,
        "rss_mib_max": max(s["rss"] for s in window) / 2**20,
    }


def medians(runs: Sequence[dict[str, float]]) -> dict[str, float]:
    """Key by key median of runs that report the same numeric keys."""
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def alternately(kinds: tuple[str, str], pairs: int, run: Callable[[str], dict[str, float]],
                show: Callable[[str, dict[str, float]], str]) -> tuple[dict[str, list[dict[str, float]]], dict[str, dict[str, float]]]:
    """``pairs`` runs of each of two kinds in ABBA order (a drift of the machine weighs on both alike),
    each printed with ``show``; every run's figures by kind, and their medians by kind."""
    runs: dict[str, list[dict[str, float]]] = {kind: [] for kind in kinds}
    for i in range(2 * pairs):
        kind = kinds[(i + i // 2) % 2]  # A B B A A B ...
        figures = run(kind)
        runs[kind].append(figures)
        print(f"{kind:8s} {show(kind, figures)}", flush=True)
    return runs, {kind: medians(rs) for kind, rs in runs.items()}


def load_average() -> tuple[float, float, float]:
    with open("/proc/loadavg") as f:
        one, five, fifteen = f.read().split()[:3]
    return float(one), float(five), float(fifteen)


def machine() -> dict[str, Any]:
    """What the figures were measured on, and when (stored in every result file)."""
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "date": datetime.date.today().isoformat(),
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": platform.python_version(),
        "load_average_at_start": load_average(),
    }


def write_result(path: Path, result: dict[str, Any]) -> None:
    """The result as indented JSON, with the machine and the load average at the end added."""
    result = {**result, "load_average_at_end": load_average()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    print(f"wrote {path}")
