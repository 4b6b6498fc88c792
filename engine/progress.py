"""The live progress display: one line rewritten in place on a terminal, periodic log lines otherwise."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TYPE_CHECKING, TextIO

from engine.stats import cpu_seconds, rss_bytes

if TYPE_CHECKING:
    from engine.agent import Agent


def progress_line(agent: Agent, elapsed: float, rate: float) -> str:
    s = agent.stats
    fs = agent.frontier.statistics()
    errors = sum(s.errors.values())
    mb = s.bytes / 1e6
    return (
        f"{elapsed:6.0f}s  pages {s.pages:,} ({rate:,.1f}/s)  {mb:,.1f} MB  hosts {fs.workbench.visit_states:,}  "
        f"front {fs.distributor.front:,}/{fs.distributor.required_front:,}  todo {len(agent.todo):,}  "
        f"queued {fs.workbench.urls + fs.disk_urls + fs.sieve_ready + fs.sieve_pending:,}  errors {errors:,}"
    )


async def report(agent: Agent, mode: str, stream: TextIO = sys.stderr) -> None:
    """Sample the crawl every second into ``agent.timeline`` and show progress until cancelled.

    ``mode``: auto (a line rewritten in place on a terminal, else a log line every 10 s),
    live, log or off (samples only).
    """
    in_place = mode == "live" or (mode == "auto" and stream.isatty())
    every = 1 if in_place else 10
    last_pages, last_time, ticks = 0, time.monotonic(), 0
    try:
        while True:
            await asyncio.sleep(1.0)  # a sampling period, not a wait for an event
            now = time.monotonic()
            rate = (agent.stats.pages - last_pages) / (now - last_time)
            last_pages, last_time = agent.stats.pages, now
            agent.timeline.append(sample(agent, now))
            ticks += 1
            if mode == "off" or ticks % every:
                continue
            line = progress_line(agent, now - agent.stats.started, rate)
            stream.write(("\r\x1b[2K" + line) if in_place else line + "\n")
            stream.flush()
    finally:
        if in_place:
            stream.write("\n")
            stream.flush()


def sample(agent: Agent, now: float) -> dict[str, float]:
    """One point of the timeline written to stats.json (throughput, front, memory over time)."""
    fs = agent.frontier.statistics()
    return {
        "t": now - agent.stats.started,
        "pages": agent.stats.pages,
        "bytes": agent.stats.bytes,
        "cpu": cpu_seconds(),
        "rss": rss_bytes(),
        "front": fs.distributor.front,
        "required_front": fs.distributor.required_front,
        "todo": len(agent.todo),
        "in_flight": agent.in_flight,
        "todo_wait_seconds": agent.stats.todo_wait_seconds,
        "hosts": fs.workbench.visit_states,
    }


def summary_text(summary: dict) -> str:
    """The final summary printed by ``crawl run``."""
    statuses = ", ".join(f"{k}: {v}" for k, v in summary["statuses"].items()) or "none"
    errors = ", ".join(f"{k}: {v}" for k, v in summary["errors"].items()) or "none"
    return "\n".join(
        [
            f"stopped: {summary['stop_reason']}",
            f"pages      {summary['pages']:,} in {summary['elapsed_seconds']:.1f} s "
            f"({summary['pages_per_second']:.1f}/s, {summary['pages_per_cpu_second']:.0f} per CPU-second)",
            f"robots.txt {summary['robots']:,}   disallowed URLs {summary['robots_disallowed']:,}",
            f"bytes      {summary['bytes'] / 1e6:,.1f} MB   records stored {summary['stored']:,}",
            f"hosts      {summary['hosts']:,} on {summary['ips']:,} IPs",
            f"statuses   {statuses}",
            f"errors     {errors}",
            f"memory     {summary['rss_bytes'] / 2**20:,.0f} MiB resident",
        ]
    )
