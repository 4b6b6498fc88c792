"""What the operator sees: a live panel on a terminal, periodic log lines otherwise, a final table.

The display draws an :class:`~engine.status.AgentStatus` (``Agent.status()``; ``GET /status``
returns its dict form), never the agent itself, so the parent of several agent processes
draws the sum of theirs (``AgentStatus.add_up``) the same way. :class:`ProgressDisplay` is fed
``update(status, elapsed)`` about once a second and keeps the last ten seconds to compute
rates; the clock is the caller's, so the output is a function of its inputs.

Modes (``engine.progress``): ``live`` — a rich panel redrawn in place; ``log`` — one plain
line every ten seconds; ``auto`` — live when the stream is a terminal, log otherwise;
``off`` — nothing. :func:`summary_text` renders the final summary (``stats.json``) as a table.
"""

from __future__ import annotations

import io
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from engine.channel import sleep_on_grid
from engine.config import EngineConfig
from engine.status import AgentStatus

# rich is imported where something is drawn: an agent under a supervisor draws nothing, and the
# import would cost each agent process ~0.04 CPU-s at its start
if TYPE_CHECKING:
    from rich.live import Live
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

RATE_WINDOW = 10.0  # seconds of history behind pages/s and MB/s
LOG_EVERY = 10.0  # seconds between two log lines
TIMELINE_POINTS = 7200  # points a timeline keeps: two hours at one a second (see add_point)


@dataclass(frozen=True, slots=True)
class View:
    """The figures shown, computed from a status dict and the recent past."""

    elapsed: float
    pages: int
    pages_per_second: float
    mb_per_second: float
    hosts: int
    front: int
    required_front: int
    todo: int
    queued: int  # URLs waiting: workbench, disk, sieve
    in_flight: int
    errors: int
    paused: bool
    eta: float | None  # seconds left, when a limit is set


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class ProgressDisplay:
    """Shows a crawl's progress in one of the modes; ``update`` once a second, ``close`` at the end."""

    def __init__(self, mode: str, stream: TextIO = sys.stderr, *, max_pages: int = 0, max_seconds: float = 0.0,
                 log_every: float = LOG_EVERY) -> None:
        live = mode == "live" or (mode == "auto" and stream.isatty())
        self.mode = "off" if mode == "off" else "live" if live else "log"
        self.stream = stream
        self.max_pages = max_pages
        self.max_seconds = max_seconds
        self.log_every = log_every
        self._next_log = log_every
        self._history: deque[tuple[float, int, int]] = deque()  # (elapsed, pages, bytes)
        self._live: Live | None = None
        if self.mode == "live":
            from rich.console import Console
            from rich.live import Live

            self._live = Live(console=Console(file=stream, force_terminal=True), auto_refresh=False)
            self._live.start()

    def view(self, status: AgentStatus, elapsed: float) -> View:
        """Record this status in the rate window and compute what to show."""
        stats = status.stats
        pages, size = stats["pages"], stats["bytes"]
        history = self._history
        history.append((elapsed, pages, size))
        while len(history) > 2 and history[1][0] <= elapsed - RATE_WINDOW:
            history.popleft()
        since, pages_then, bytes_then = history[0] if len(history) > 1 else (0.0, 0, 0)
        span = elapsed - since
        rate = (pages - pages_then) / span if span > 0 else 0.0
        etas = []
        if self.max_pages:
            etas.append((self.max_pages - pages) / rate if rate > 0 else float("inf"))
        if self.max_seconds:
            etas.append(self.max_seconds - elapsed)
        return View(
            elapsed=elapsed,
            pages=pages,
            pages_per_second=rate,
            mb_per_second=(size - bytes_then) / span / 1e6 if span > 0 else 0.0,
            hosts=status.hosts,
            front=status.front,
            required_front=status.required_front,
            todo=status.todo,
            queued=status.workbench_urls + status.disk_urls + status.sieve_ready + status.sieve_pending,
            in_flight=status.in_flight,
            errors=sum(stats["errors"].values()),
            paused=status.paused,
            eta=min(etas) if etas else None,
        )

    def update(self, status: AgentStatus, elapsed: float) -> None:
        if self.mode == "off":
            return
        view = self.view(status, elapsed)
        if self._live is not None:
            self._live.update(panel(view), refresh=True)
        elif elapsed >= self._next_log:
            self._next_log = (elapsed // self.log_every + 1) * self.log_every
            self.stream.write(progress_line(view) + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


def _eta(view: View) -> str:
    if view.eta is None:
        return ""
    return "ETA -" if view.eta == float("inf") else f"ETA {duration(view.eta)}"


def progress_line(view: View) -> str:
    """One line for logs: every figure, plain text."""
    parts = [
        f"{duration(view.elapsed):>6}",
        f"pages {view.pages:,} ({view.pages_per_second:,.1f}/s)",
        f"{view.mb_per_second:,.2f} MB/s",
        f"hosts {view.hosts:,}",
        f"front {view.front:,}/{view.required_front:,}",
        f"todo {view.todo:,}",
        f"queued {view.queued:,}",
        f"errors {view.errors:,}",
    ]
    if view.paused:
        parts.append("PAUSED")
    if view.eta is not None:
        parts.append(_eta(view))
    return "  ".join(parts)


def panel(view: View) -> Panel:
    """The live panel: throughput on the first line, the frontier on the second (fits 80 columns)."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.text import Text

    def line(*pairs: tuple[str, str]) -> Text:
        text = Text()
        for label, value in pairs:
            text.append("   " if text else "").append(f"{label} ", style="dim").append(value, style="bold")
        return text

    first = [("elapsed", duration(view.elapsed)), ("pages", f"{view.pages:,}"),
             ("pages/s", f"{view.pages_per_second:,.1f}"), ("MB/s", f"{view.mb_per_second:,.2f}"),
             ("errors", f"{view.errors:,}")]
    if view.eta is not None:
        first.append(("ETA", _eta(view).removeprefix("ETA ")))
    second = [("hosts", f"{view.hosts:,}"), ("front", f"{view.front:,}/{view.required_front:,}"),
              ("todo", f"{view.todo:,}"), ("fetching", f"{view.in_flight:,}"), ("queued", f"{view.queued:,}")]
    title = "crawl [yellow]paused[/yellow]" if view.paused else "crawl"
    return Panel(Group(line(*first), line(*second)), title=title, title_align="left", expand=False)


async def report(status: Callable[[], AgentStatus], started: float, limits: EngineConfig, mode: str,
                 timeline: list[dict[str, float]], stream: TextIO = sys.stderr) -> None:
    """An agent's progress task: sample its timeline and show its status every second until cancelled."""
    display = ProgressDisplay(mode, stream, max_pages=limits.max_pages, max_seconds=limits.max_seconds)
    try:
        while True:
            await sleep_on_grid(1.0)  # a sampling period, with the status lines' wake-ups
            now = status()
            elapsed = time.monotonic() - started
            add_point(timeline, sample(now, elapsed))
            display.update(now, elapsed)
    finally:
        display.close()


def add_point(timeline: list[dict[str, float]], point: dict[str, float], limit: int = TIMELINE_POINTS) -> None:
    """Append ``point`` to a timeline of at most ``limit`` points: a full one first drops every other point.

    A crawl that runs for weeks as a service must not grow by a point a second. Halving keeps the
    whole crawl in view, its first and its latest points included, and the points denser the
    more recent they are: after n halvings the oldest are 2**n seconds apart.
    """
    if len(timeline) >= limit:
        del timeline[1::2]
    timeline.append(point)


def sample(status: AgentStatus, elapsed: float) -> dict[str, float]:
    """One point of the timeline written to stats.json (throughput, front, memory over time)."""
    return {
        "t": elapsed,
        "pages": status.stats["pages"],
        "bytes": status.stats["bytes"],
        "cpu": status.cpu_seconds,
        "rss": status.rss_bytes,
        "front": status.front,
        "required_front": status.required_front,
        "todo": status.todo,
        "in_flight": status.in_flight,
        "todo_wait_seconds": status.stats["todo_wait_seconds"],
        "hosts": status.hosts,
        "workbench_urls": status.workbench_urls,
        "workbench_bytes": status.workbench_bytes,
        "disk_urls": status.disk_urls,
    }


def summary_table(summary: Mapping[str, Any]) -> Table:
    """The final summary (the dict written to stats.json) as a two-column table."""
    from rich import box
    from rich.table import Table

    statuses = ", ".join(f"{k}: {v:,}" for k, v in summary["statuses"].items()) or "none"
    errors = ", ".join(f"{k}: {v:,}" for k, v in sorted(summary["errors"].items())) or "none"
    rows = [
        ("stopped", str(summary["stop_reason"] or "-")),
        ("pages", f"{summary['pages']:,} in {duration(summary['elapsed_seconds'])} "
                  f"({summary['pages_per_second']:,.1f}/s, {summary['pages_per_cpu_second']:,.0f} per CPU-second)"),
        ("robots.txt", f"{summary['robots']:,} fetched, {summary['robots_disallowed']:,} URLs disallowed"),
        ("bytes", f"{summary['bytes'] / 1e6:,.1f} MB, {summary['stored']:,} records stored"),
        ("bodies cut", ", ".join(f"{k}: {v:,}" for k, v in sorted(summary.get("truncated", {}).items())) or "none"),
        ("hosts", f"{summary['hosts']:,} on {summary['ips']:,} IPs"),
        ("statuses", statuses),
        ("errors", errors),
        ("memory", f"{summary['rss_bytes'] / 2**20:,.0f} MiB resident"),
    ]
    if "processes" in summary:
        rows.append(("agents", f"{summary['processes']} processes, {summary.get('restarts', 0)} restarts"))
    table = Table(title="crawl summary", box=box.SIMPLE, show_header=False, show_edge=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def summary_text(summary: Mapping[str, Any], width: int = 100) -> str:
    """The summary table as plain text (no colour codes), for ``crawl run`` to print."""
    from rich.console import Console

    out = io.StringIO()
    Console(file=out, width=width, color_system=None, force_terminal=False).print(summary_table(summary))
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()).strip("\n")
