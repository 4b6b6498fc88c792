"""Test helpers: the in-vitro web in a background thread, ``crawl run`` in a child process, oracles.

The web runs in-process (its own event loop in a thread) so a test can read its model and its
request log; the crawler runs as the real ``crawl`` CLI in a separate process, over real
sockets on loopback and through the in-vitro DNS server.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import orjson
from protego import Protego

from bench.invitro import (
    InVitro,
    LogRecord,
    Response,
    WebModel,
    WebParams,
    read_log,
    start_invitro,
)
from bench.invitro.page import STYLESHEET
from frontier.urls import canonicalize, split

USER_AGENT = "crawl-test/1.0"
T = TypeVar("T")


class WebThread:
    """The in-vitro web served from a thread; ``stop()`` closes it and flushes its log."""

    def __init__(self, params: WebParams | None, log_path: Path, **kwargs: object) -> None:
        """``params`` None: the default web, or the social lab when ``social=SocialParams(...)`` is given."""
        self.log_path = log_path
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, args=(params, kwargs), daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the in-vitro web did not start")
        if self._error is not None:
            raise self._error

    def _run(self, params: WebParams | None, kwargs: dict) -> None:
        asyncio.set_event_loop(self._loop)
        self._error: BaseException | None = None
        try:
            self.web: InVitro = self._loop.run_until_complete(
                start_invitro(params, log_path=self.log_path, flush_interval=0.05, **kwargs)
            )
        except BaseException as e:  # surfaced in the constructor
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()

    @property
    def model(self) -> WebModel:
        return self.web.model

    def call(self, fn: Callable[..., T], *args: object) -> T:
        """``fn(*args)`` run on the web's loop (e.g. ``web.web.dns.move``); its result, or its exception."""

        async def run() -> T:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(30)

    def stop(self) -> list[LogRecord]:
        """Stop serving (once) and return the request log."""
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self.web.close(), self._loop).result(30)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(30)
        return read_log(self.log_path)


@dataclass
class CrawlResult:
    process: subprocess.CompletedProcess[str]
    stats: dict
    out: Path


def crawl_command(
    out: Path, seeds: list[str], *, dns: str | None, settings: list[str] = (), args: list[str] = ()
) -> list[str]:  # type: ignore[assignment]
    """The ``crawl run`` command line of a test crawl (the seeds go to a file beside ``out``)."""
    seeds_file = out.parent / f"{out.name}-seeds.txt"
    seeds_file.write_text("\n".join(seeds) + "\n")
    cmd = [sys.executable, "-m", "engine.cli", "run", "--seeds", str(seeds_file), "--out", str(out),
           "--set", 'network.allow_networks=["127.0.0.0/8"]', "--set", f'engine.user_agent="{USER_AGENT}"',
           "--set", 'engine.progress="off"', "--set", "frontier.sieve_flush_interval=0.0"]
    if dns:
        cmd += ["--dns", dns]
    for s in settings:
        cmd += ["--set", s]
    return cmd + list(args)


def run_crawl(
    out: Path, seeds: list[str], *, dns: str | None, settings: list[str] = (), args: list[str] = (), timeout: float = 240
) -> CrawlResult:  # type: ignore[assignment]
    cmd = crawl_command(out, seeds, dns=dns, settings=settings, args=args)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return CrawlResult(proc, orjson.loads((out / "stats.json").read_bytes()), out)


def robots_for(model: WebModel, host: str) -> Protego | bool:
    """What robots.txt says for a host, by RFC 9309 and protego: True = allow all, False = none."""
    status, body = model.robots_txt(host)
    if 400 <= status < 500:
        return True
    if status >= 500:
        return False
    return Protego.parse(body.decode("utf-8", "replace"))


def allowed(rules: Protego | bool, url: str) -> bool:
    if isinstance(rules, bool):
        return rules
    return rules.can_fetch(url, USER_AGENT)


def page_links(response: Response) -> list[tuple[str, bool]]:
    """(link, nofollow) of a response in document order, as the crawler reads them.

    A ``<link>`` counts only if it names a page (``scope.link_rels``): the model's stylesheet does not.
    """
    return [
        (link, nofollow)
        for link, nofollow, tag in zip(response.links, response.nofollow, response.tags)
        if not (tag == "link" and split(link)[1] == STYLESHEET)
    ]


def reachable(model: WebModel, seeds: list[str], follow_nofollow: bool = False) -> set[str]:
    """Every URL a polite breadth-first crawl from ``seeds`` must fetch (robots.txt excluded)."""
    seen: set[str] = set()
    queue = deque(u for u in (canonicalize(s) for s in seeds) if u)
    rules: dict[str, Protego | bool] = {}
    while queue:
        url = queue.popleft()
        if url in seen:
            continue
        sa, target = split(url)
        host = sa.split("//", 1)[1].rsplit(":", 1)[0]
        if model.host_info(host) is None:
            continue  # not in the web's DNS: never fetched
        if host not in rules:
            rules[host] = robots_for(model, host)
        if not allowed(rules[host], url):
            continue
        seen.add(url)
        response = model.respond(host, target)
        follow: dict[str, bool] = {}
        for link, nofollow in page_links(response):
            follow[link] = follow.get(link, False) or follow_nofollow or not nofollow
        for link, ok in follow.items():
            c = canonicalize(link)
            if ok and c and c not in seen:
                queue.append(c)
    return seen


def page_requests(log: list[LogRecord]) -> list[LogRecord]:
    return [r for r in log if r.target != "/robots.txt"]


def url_of(record: LogRecord, port: int) -> str:
    return f"http://{record.host}:{port}{record.target}"


def by_key(log: list[LogRecord], key: str) -> dict[str, list[LogRecord]]:
    groups: dict[str, list[LogRecord]] = defaultdict(list)
    for r in sorted(log, key=lambda r: r.start):
        groups[getattr(r, key)].append(r)
    return groups


def gaps(records: list[LogRecord]) -> list[float]:
    """start(n+1) − end(n) for consecutive requests, in start order."""
    return [b.start - a.end for a, b in zip(records, records[1:])]


def when_logged(web: WebThread, done: Callable[[dict[str, object]], bool]) -> threading.Event:
    """An event set (from the server's thread) once ``done`` is true of a request just logged
    (``done`` sees each record, a dict of :class:`LogRecord`'s fields, in the order served)."""
    event = threading.Event()
    log = web.web.service.log
    original = log.record

    def record(entry: dict[str, object]) -> None:
        original(entry)
        if done(entry):
            event.set()

    log.record = record  # type: ignore[method-assign]
    return event


def when_requests(web: WebThread, n: int) -> threading.Event:
    """An event set (from the server's thread) once the web has answered ``n`` requests."""
    log = web.web.service.log
    return when_logged(web, lambda _: log.records >= n)


# -- the social lab: a learn run and a crawl against a fresh lab server ------------------------

NO_DELAYS = ("politeness.host_delay=0", "politeness.ip_delay=0")


@dataclass
class LabCrawl:
    """One crawl of a lab site: its page requests (log order), stats.json and the server's port."""

    records: list[LogRecord]
    stats: dict
    port: int


def crawl_lab(tmp: Path, site: str, name: str, budget: int, args: list[str]) -> LabCrawl:
    """One ``crawl run`` of ``budget`` pages, one agent, no delays, against a fresh server of ``site``."""
    from bench.invitro.social.web import SocialParams

    web = WebThread(None, tmp / f"{name}.jsonl", social=SocialParams((site,)))
    try:
        done = run_crawl(tmp / name, [web.web.seeds[0]], dns=str(web.web.dns_address),
                         settings=[*NO_DELAYS, "engine.processes=1"], args=["--max-pages", str(budget), *args])
    finally:
        log = web.stop()
    return LabCrawl(list(page_requests(log)), done.stats, web.model.port)


def learn_lab(tmp: Path, site: str, method: str, pages: int, settings: list[str] = ()) -> tuple[Path, int]:  # type: ignore[assignment]
    """``crawl learn METHOD`` of ``pages`` downloads against a fresh server of ``site``: the model's
    folder and the page downloads the server logged."""
    from bench.invitro.social.web import SocialParams

    web = WebThread(None, tmp / f"learn-{method}.jsonl", social=SocialParams((site,)))
    seeds = tmp / f"learn-{method}-seeds.txt"
    seeds.write_text(web.web.seeds[0] + "\n")
    out = tmp / f"model-{method}"
    every = ['network.allow_networks=["127.0.0.0/8"]', f'engine.user_agent="{USER_AGENT}"', *NO_DELAYS, *settings]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "engine.cli", "learn", method, "--seeds", str(seeds), "--out", str(out),
             "--dns", str(web.web.dns_address), "--max-pages", str(pages),
             *(arg for setting in every for arg in ("--set", setting))],
            capture_output=True, text=True, timeout=240,
        )
    finally:
        downloads = len(page_requests(web.stop()))
    assert done.returncode == 0, done.stderr
    return out, downloads
