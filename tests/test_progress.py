"""The progress display (engine/progress.py): log lines from status dicts, and the summary table."""

from __future__ import annotations

import io
import re

from hypothesis import given
from hypothesis import strategies as st

from engine.progress import ProgressDisplay, add_point, duration, summary_text
from engine.status import AgentStatus
from engine.stats import Counters


class Stream(io.StringIO):
    def __init__(self, tty: bool = False) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def status(pages: int, size: int, **extra: object) -> AgentStatus:
    counters = Counters(pages=pages, bytes=size)
    counters.errors.update({"timeout": 2, "dns": 1})
    return AgentStatus.from_dict({
        "stats": counters.as_dict(), "hosts": 40, "front": 12, "required_front": 100, "todo": 3, "in_flight": 7,
        "workbench_urls": 500, "disk_urls": 20, "sieve_ready": 5, "sieve_pending": 0, **extra})


def test_without_a_terminal_auto_writes_a_plain_line_every_ten_seconds() -> None:
    stream = Stream()
    display = ProgressDisplay("auto", stream)
    for second in range(1, 26):
        display.update(status(pages=second * 50, size=second * 250_000), float(second))
    display.close()
    lines = stream.getvalue().splitlines()
    assert lines == [
        "   10s  pages 500 (50.0/s)  0.25 MB/s  hosts 40  front 12/100  todo 3  queued 525  errors 3",
        "   20s  pages 1,000 (50.0/s)  0.25 MB/s  hosts 40  front 12/100  todo 3  queued 525  errors 3",
    ]
    assert "\x1b" not in stream.getvalue()


def test_rates_cover_the_last_ten_seconds_and_eta_follows_the_nearest_limit() -> None:
    stream = Stream()
    display = ProgressDisplay("log", stream, max_pages=10_000, max_seconds=3600.0)
    for second in range(1, 21):  # 10 pages/s for 10 s, then 100 pages/s
        pages = second * 10 if second <= 10 else 100 + (second - 10) * 100
        display.update(status(pages=pages, size=0, paused=second == 20), float(second))
    last = stream.getvalue().splitlines()[-1]
    assert last.startswith("   20s  pages 1,100 (100.0/s)")
    assert last.endswith("PAUSED  ETA 1m29s")  # 8,900 pages at 100/s; 3,580 s to the time limit
    view = display.view(status(pages=1100, size=0), 3599.0)
    assert view.eta == 1.0


def test_live_mode_draws_a_panel_and_off_draws_nothing() -> None:
    live = Stream(tty=True)
    display = ProgressDisplay("auto", live, max_seconds=60)
    display.update(status(pages=10, size=10), 1.0)
    display.close()
    text = live.getvalue()
    assert "\x1b[" in text  # drawn in place, with colours
    plain = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", text)
    assert "pages 10   pages/s 10.0" in plain and "ETA 59s" in plain and "queued 525" in plain
    off = Stream(tty=True)
    display = ProgressDisplay("off", off)
    display.update(status(pages=10, size=10), 20.0)
    display.close()
    assert off.getvalue() == ""


def test_durations() -> None:
    assert [duration(s) for s in (0, 42.4, 60, 185, 3600, 3725, -3)] == ["0s", "42s", "1m00s", "3m05s", "1h00m",
                                                                          "1h02m", "0s"]


def test_summary_table_as_plain_text() -> None:
    counters = Counters(pages=1234, robots=40, bytes=5_300_000, stored=1274, robots_disallowed=17, stop_reason="done")
    counters.statuses.update({200: 1200, 404: 34})
    counters.errors.update({"timeout": 3})
    counters.truncated.update({"length": 2, "decoded": 1})
    summary = {**counters.as_dict(), "elapsed_seconds": 61.2, "pages_per_second": 20.16, "pages_per_cpu_second": 300.2,
               "hosts": 40, "ips": 10, "rss_bytes": 100 << 20, "processes": 2, "restarts": 0}
    assert summary_text(summary).splitlines() == [
        "crawl summary",
        " stopped      done",
        " pages        1,234 in 1m01s (20.2/s, 300 per CPU-second)",
        " robots.txt   40 fetched, 17 URLs disallowed",
        " bytes        5.3 MB, 1,274 records stored",
        " bodies cut   decoded: 1, length: 2",
        " hosts        40 on 10 IPs",
        " statuses     200: 1,200, 404: 34",
        " errors       timeout: 3",
        " memory       100 MiB resident",
        " agents       2 processes, 0 restarts",
    ]


@given(st.integers(0, 3000), st.integers(2, 50))
def test_a_timeline_stays_within_its_points_and_keeps_the_first_and_the_latest(seconds: int, limit: int) -> None:
    timeline: list[dict[str, float]] = []
    for t in range(seconds):
        add_point(timeline, {"t": float(t)}, limit)
    times = [p["t"] for p in timeline]
    assert len(times) == seconds if seconds <= limit else limit // 2 < len(times) <= limit
    assert times == sorted(set(times))
    if seconds:
        assert times[0] == 0 and times[-1] == seconds - 1
        gaps = [b - a for a, b in zip(times, times[1:])]
        assert gaps == sorted(gaps, reverse=True)  # the older, the sparser
