"""robots.txt rules survive a resume: kept in the checkpoint with their wall-clock fetch time.

End to end on the in-vitro web, judged from its request log: over a run stopped by
``--max-pages``, by SIGTERM or by ``kill -9`` (after a checkpoint), and the ``--resume`` that
follows, each host's ``/robots.txt`` is requested exactly once. And, with explicit times and no
network, rules older than ``robots.expiry`` are not restored, so they are fetched again.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from bench.invitro import WebParams
from engine.robots import RobotsRules
from frontier.frontier import Frontier
from frontier.settings import FrontierSettings
from tests.invitro_harness import (
    USER_AGENT,
    WebThread,
    crawl_command,
    run_crawl,
    when_logged,
)

WEB = WebParams(hosts=6, hosts_per_ip=2, mean_pages=20, max_pages=30, mean_links=15, page_bytes=3000)
SETTINGS = ["politeness.host_delay=0.2", "politeness.ip_delay=0.05", "engine.fetchers=20",
            "engine.processes=2", "engine.checkpoint_interval=0.3"]


def robots_requests(log) -> Counter[str]:  # type: ignore[no-untyped-def]
    return Counter(r.host for r in log if r.target == "/robots.txt")


def all_robots_answered(web: WebThread):  # type: ignore[no-untyped-def]
    """An event set once every host of the web has been sent its robots.txt."""
    hosts = set(web.model.hosts())
    seen: set[str] = set()

    def done(entry: dict[str, object]) -> bool:
        if entry["target"] == "/robots.txt":
            seen.add(str(entry["host"]))
        return seen >= hosts

    return when_logged(web, done)


def checkpointed_twice(out: Path, agents: int, timeout: float = 60) -> None:
    """Return once every agent has replaced its checkpoint twice from now on: the second one
    was started after the first was written, so it holds what the agent knew at this call."""
    paths = [out / f"agent-{i}" / "frontier" / "checkpoint" for i in range(agents)]

    def inode(path: Path) -> int | None:
        try:
            return path.stat().st_ino
        except FileNotFoundError:
            return None

    seen = [[inode(p)] for p in paths]
    deadline = time.monotonic() + timeout
    while any(len(s) < 3 for s in seen):
        assert time.monotonic() < deadline, "the agents stopped checkpointing"
        time.sleep(0.02)  # another process's file: there is no event to wait on
        for s, path in zip(seen, paths):
            if (now := inode(path)) != s[-1]:
                s.append(now)


@pytest.fixture
def web(tmp_path: Path):  # type: ignore[no-untyped-def]
    web = WebThread(WEB, tmp_path / "requests.jsonl")
    yield web
    web.stop()


def start(web: WebThread, out: Path) -> subprocess.Popen[str]:
    cmd = crawl_command(out, web.web.seeds[: WEB.hosts], dns=web.web.dns_address, settings=SETTINGS)
    return subprocess.Popen(cmd, start_new_session=True, stderr=subprocess.PIPE, text=True)


def resume_and_check(web: WebThread, out: Path, stopped_at: float) -> None:
    """Resume the crawl to its end; each host's robots.txt was requested once, in the first run."""
    result = run_crawl(out, web.web.seeds[: WEB.hosts], dns=web.web.dns_address, settings=SETTINGS, args=["--resume"])
    assert result.stats["stop_reason"] == "done"
    log = web.stop()
    hosts = web.model.hosts()
    assert robots_requests(log) == Counter({host: 1 for host in hosts}), "robots.txt fetched again after the resume"
    first_run = {r.host for r in log if r.target == "/robots.txt" and r.start < stopped_at}
    assert first_run == set(hosts), "the first run must have fetched every robots.txt, or the test proves nothing"
    assert any(r.start > stopped_at and r.target != "/robots.txt" for r in log), "the resumed run fetched no page"


def test_stopped_by_max_pages_then_resumed(web: WebThread, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = run_crawl(out, web.web.seeds[: WEB.hosts], dns=web.web.dns_address, settings=SETTINGS, args=["--max-pages", "20"])
    assert first.stats["stop_reason"] == "max_pages"
    resume_and_check(web, out, time.monotonic())


def test_stopped_by_sigterm_then_resumed(web: WebThread, tmp_path: Path) -> None:
    out = tmp_path / "out"
    answered = all_robots_answered(web)
    crawl = start(web, out)
    assert answered.wait(60), "the first run did not fetch every robots.txt"
    crawl.send_signal(signal.SIGTERM)
    assert crawl.wait(60) == 0, crawl.stderr.read() if crawl.stderr else ""
    resume_and_check(web, out, time.monotonic())


def test_killed_after_a_checkpoint_then_resumed(web: WebThread, tmp_path: Path) -> None:
    out = tmp_path / "out"
    answered = all_robots_answered(web)
    crawl = start(web, out)
    assert answered.wait(60), "the first run did not fetch every robots.txt"
    checkpointed_twice(out, agents=2)
    assert crawl.poll() is None, "the first run ended before it could be killed"
    os.killpg(crawl.pid, signal.SIGKILL)  # the supervisor and both agents at once
    crawl.wait(30)
    resume_and_check(web, out, time.monotonic())


# -- expiry, with explicit times --------------------------------------------------------------------------

EXPIRY = 86400.0
NOW = 1_750_000_000.0  # wall-clock seconds when the crawl resumes


def test_rules_older_than_the_expiry_are_fetched_again_after_a_resume(tmp_path: Path) -> None:
    rules = RobotsRules.from_response(200, b"User-agent: *\nDisallow: /private\n", USER_AGENT)
    frontier = Frontier(tmp_path, FrontierSettings(fsync=False))
    frontier.discover(["http://old.test/", "http://fresh.test/", "http://never.test/"])
    frontier.sieve.flush()
    hosts = {vs.scheme_authority: vs for vs in frontier.distribute(0.0)}
    # fetched just over a day before the resume, a minute before it, and not at all
    hosts["http://old.test"].robots, hosts["http://old.test"].robots_fetched = rules, NOW - EXPIRY - 1
    hosts["http://fresh.test"].robots, hosts["http://fresh.test"].robots_fetched = rules, NOW - 60
    frontier.checkpoint(0.0, {})
    frontier.close()

    resumed = Frontier(tmp_path, FrontierSettings(fsync=False))
    restored, _ = resumed.restore(
        5.0, functools.partial(RobotsRules.restore, now=NOW, expiry=EXPIRY, user_agent=USER_AGENT)
    )
    by_host = {vs.scheme_authority: vs for vs in restored}
    assert by_host["http://old.test"].robots_due(NOW, EXPIRY), "expired rules must be fetched again"
    assert by_host["http://never.test"].robots_due(NOW, EXPIRY)
    fresh = by_host["http://fresh.test"]
    assert not fresh.robots_due(NOW, EXPIRY) and fresh.robots_fetched == NOW - 60
    assert fresh.robots.allowed("/private/x") is False and fresh.robots.allowed("/open") is True
    # the day is counted from the original fetch, not from the resume
    assert not fresh.robots_due(NOW - 60 + EXPIRY - 1, EXPIRY) and fresh.robots_due(NOW - 60 + EXPIRY, EXPIRY)
    resumed.close()
