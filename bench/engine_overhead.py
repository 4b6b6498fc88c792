"""Engine overhead: the whole pipeline with the network replaced, and where its CPU goes, stage by stage.

Runs the real :class:`engine.agent.Agent` in this process, with an agent process's collector
settings (``engine/heap.py``), on the in-vitro web served from memory (``bench/memory_web.py``:
its fetcher answers at once with the bytes the in-vitro server would send, its resolver with the
model's address). Everything else is the engine's own work: fetch bookkeeping (fetcher loops,
todo ring, release), robots.txt rules, gzip decoding, link extraction, canonicalization, sieve,
workbench and distributor, WARC records. No politeness delay, so nothing waits but the event loop.

* ``--runs`` unprofiled runs give the engine's pages per CPU-second: pages over the process CPU
  of the crawl less what the response source spent making pages (measured with thread CPU
  time around it);
* one more run under pyinstrument (statistical sampling, every 0.5 ms) gives each stage's
  share. A sample is charged to the response source if its stack passes through
  ``bench/memory_web.py``, else to the innermost frame of the project's own code (library code
  such as lxml, ISA-L or xxhash counts for the project module that called it), else to "event
  loop and the rest". Stage µs per page = share × the unprofiled runs' CPU per page.

    python -m bench.engine_overhead                # about 1 minute; writes bench/engine_overhead.{json,png}
    python -m bench.engine_overhead --smoke --out /tmp/overhead
"""

from __future__ import annotations

import argparse
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import uvloop

from bench import plots
from bench.invitro.model import WebModel, WebParams
from bench.memory_web import InstantResolver, MemoryFetcher
from bench.profile_stages import REST, SOURCE, stage_of
from bench.runner import RESULTS_DIR, machine, medians, write_result
from engine import config as configuration
from engine import heap
from engine.agent import Agent
from engine.stats import cpu_seconds

PORT = 8000  # the port in the model's URLs; nothing listens on it


def crawl_in_memory(args: argparse.Namespace, profiler: Any = None) -> tuple[dict[str, Any], float, float]:
    """One crawl of ``args.pages`` pages; returns (summary, process CPU seconds, source CPU seconds)."""
    model = WebModel(WebParams(hosts=args.hosts), PORT)
    with tempfile.TemporaryDirectory(prefix="engine-overhead-") as tmp:
        config = configuration.load(None, [
            f'store.dir="{tmp}"', "politeness.host_delay=0", "politeness.ip_delay=0", 'engine.progress="off"',
            f"engine.max_pages={args.pages}", "engine.processes=1", 'network.allow_networks=["127.0.0.0/8"]',
            *args.set,
        ])
        fetcher = MemoryFetcher(model, config.engine.user_agent)

        async def crawl() -> dict[str, Any]:
            agent = Agent(config, model.seeds(args.hosts), fetcher=fetcher, resolver=InstantResolver(model))
            return await agent.run()

        if profiler is not None:
            profiler.start()
        cpu = cpu_seconds()
        summary = uvloop.run(crawl())
        cpu = cpu_seconds() - cpu
        if profiler is not None:
            profiler.stop()
    return summary, cpu, fetcher.source_cpu_seconds


def profile_shares(args: argparse.Namespace) -> tuple[dict[str, float], dict[str, float]]:
    """Each stage's share of the CPU of a profiled crawl.

    The profiler samples wall time; the loop's idle waits (wall minus CPU) are sampled with no
    project frame on the stack, so they are taken out of "event loop and the rest".
    """
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005, async_mode="disabled")
    crawl_in_memory(args, profiler)
    session = profiler.last_session
    assert session is not None
    seconds: dict[str, float] = defaultdict(float)
    for stack, duration in session.frame_records:
        seconds[stage_of(stack)] += duration
    idle = max(0.0, session.duration - session.cpu_time)
    seconds[REST] = max(0.0, seconds[REST] - idle)
    total = sum(seconds.values())
    about = {"samples": session.sample_count, "wall_seconds": session.duration, "cpu_seconds": session.cpu_time,
             "idle_seconds_removed": idle}
    return {stage: t / total for stage, t in sorted(seconds.items(), key=lambda kv: -kv[1])}, about


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=20000, help="pages per crawl")
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3, help="unprofiled runs")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for engine_overhead.json and .png")
    parser.add_argument("--smoke", action="store_true", help="seconds-long: a few hundred pages")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a crawl.toml override")
    parser.add_argument("--no-profile", action="store_true",
                        help="the unprofiled runs only (for alternating comparisons: half the time)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.pages, args.hosts, args.runs = 300, 50, 1
    heap.collect_less_often()  # as an agent process does (engine/agent_process.py)
    heap.keep_buffers_out_of_the_heap()
    at_start = machine()
    runs = []
    for i in range(args.runs):
        summary, cpu, source = crawl_in_memory(args)
        pages = summary["pages"]
        if not pages:
            raise SystemExit(f"engine_overhead: the crawl fetched no pages (stopped: {summary.get('stop_reason')})")
        runs.append({
            "pages": pages,
            "robots": summary["robots"],
            "cpu_seconds": cpu,
            "source_cpu_seconds": source,
            "engine_cpu_seconds": cpu - source,
            "engine_pages_per_cpu_second": pages / (cpu - source),
            "engine_us_per_page": 1e6 * (cpu - source) / pages,
            "pages_per_cpu_second_with_source": pages / cpu,
            "links_per_page": summary["links"] / pages,
        })
        print(f"run {i + 1}: {pages} pages, engine {runs[-1]['engine_pages_per_cpu_second']:.0f} pages per CPU-second "
              f"({runs[-1]['engine_us_per_page']:.0f} µs per page); source {source:.2f} of {cpu:.2f} CPU-s", flush=True)
    median = medians(runs)
    if args.no_profile:
        print(f"engine pages per CPU-second (median of {args.runs}): {median['engine_pages_per_cpu_second']:.0f}")
        return
    shares, profile = profile_shares(args)
    us_per_page = 1e6 * median["cpu_seconds"] / median["pages"]
    stages = {stage: {"share": share, "us_per_page": share * us_per_page} for stage, share in shares.items()}
    engine_share = 1 - shares.get(SOURCE, 0.0)
    result = {
        "benchmark": "engine_overhead",
        "machine": at_start,
        "parameters": {k: v for k, v in vars(args).items() if k != "out"},
        "median": median,
        "runs": runs,
        "profile": profile,
        "stages": stages,
    }
    print(f"{'stage':48} {'share':>6} {'µs/page':>8}   (engine: {100 * engine_share:.0f}% of the profile)")
    for stage, v in stages.items():
        print(f"{stage:48} {100 * v['share']:5.1f}% {v['us_per_page']:8.0f}")
    print(f"profile: {profile['samples']} samples over {profile['wall_seconds']:.1f} s wall, "
          f"{profile['cpu_seconds']:.1f} s CPU")
    print(f"engine pages per CPU-second (median of {args.runs}): {median['engine_pages_per_cpu_second']:.0f}")
    write_result(args.out / "engine_overhead.json", result)
    plots.engine_overhead(result, args.out / "engine_overhead.png")


if __name__ == "__main__":
    main()
