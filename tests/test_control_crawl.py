"""The control API steering a real crawl: `crawl run --control` against the in-vitro web.

Judged from the web server's request log (monotonic times shared with this process): while
the crawl is paused nothing is requested, after resume requests go on, a seed added over the
API is fetched, a host delay changed over the API is obeyed. Two agent processes, so the
parent serves the API and fans each call out.

What the CLI must do: print the control API's URL (``http://127.0.0.1:PORT``) on stderr once
it listens; take the token from ``CRAWL_CONTROL_TOKEN``; answer ``POST /pause`` once no fetch
is in flight in any agent, and ``PATCH /config`` once every agent has applied the change.

Skipped until ``crawl run --help`` lists ``--control``.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bench.invitro import LogRecord, WebParams
from tests.invitro_harness import USER_AGENT, WebThread, allowed, by_key, gaps, page_requests, robots_for, when_requests


def control_supported() -> bool:
    help_text = subprocess.run([sys.executable, "-m", "engine.cli", "run", "--help"], capture_output=True, text=True,
                               timeout=60).stdout
    return "--control" in help_text


pytestmark = pytest.mark.skipif(not control_supported(), reason="`crawl run` has no --control option yet")

TOKEN = "test-token-0123456789"
START_DELAY = 0.2  # host delay the crawl starts with
PATCHED_DELAY = 1.0  # host delay set over the API
QUIET_WINDOW = 1.5  # seconds the crawl stays paused while the log is watched
SEEDED_PATH = "/added-over-the-control-api"
# Hosts link only to themselves: the crawl keeps to its seed hosts, so a host seeded over the
# API starts with an empty queue. No Crawl-delay and no 5xx robots.txt, which would override
# or block the delays under test.
WEB = WebParams(hosts=8, hosts_per_ip=2, mean_pages=300, max_pages=600, external_share=0.0,
                robots_crawl_delay_share=0.0, robots_5xx_share=0.0, page_bytes=3000)


class Api:
    """A synchronous client of the control API (urllib, no proxy)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def call(self, method: str, path: str, body: object = None, token: str | None = TOKEN) -> tuple[int, bytes]:
        request = urllib.request.Request(self.url + path, method=method,
                                         data=None if body is None else orjson.dumps(body))
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def json(self, method: str, path: str, body: object = None) -> Any:
        status, data = self.call(method, path, body)
        assert status == 200, (method, path, status, data)
        return orjson.loads(data)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def when_target(web: WebThread, target: str) -> threading.Event:
    """An event set once the web has answered a request for ``target``."""
    event = threading.Event()
    log = web.web.service.log
    original = log.record

    def record(entry: dict[str, object]) -> None:
        original(entry)
        if entry["target"] == target:
            event.set()

    log.record = record  # type: ignore[method-assign]
    return event


class Crawl:
    """``crawl run --control`` in a child process; stderr is read in a thread. ``settings`` (KEY=VALUE)
    are set after this module's own."""

    def __init__(self, tmp: Path, seeds: list[str], dns: str, settings: Sequence[str] = ()) -> None:
        (tmp / "seeds.txt").write_text("\n".join(seeds) + "\n")
        port = free_port()
        cmd = [sys.executable, "-m", "engine.cli", "run", "--seeds", str(tmp / "seeds.txt"), "--out", str(tmp / "out"),
               "--dns", dns, "--control", f"127.0.0.1:{port}", "--processes", "2",
               "--set", 'network.allow_networks=["127.0.0.0/8"]', "--set", f'engine.user_agent="{USER_AGENT}"',
               "--set", 'engine.progress="off"', "--set", f"politeness.host_delay={START_DELAY}",
               "--set", "politeness.ip_delay=0.05", "--set", "engine.fetchers=20", "--set", "engine.max_seconds=120"]
        cmd += [arg for setting in settings for arg in ("--set", setting)]
        env = {**os.environ, "CRAWL_CONTROL_TOKEN": TOKEN}
        self.process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        self.url = f"http://127.0.0.1:{port}"
        self.stderr: list[str] = []
        self.listening = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def kill_if_running(self) -> None:
        """The end of a test that failed before the crawl ended: no crawl outlives its test."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)
            if re.search(rf"{re.escape(self.url)}\b", line):
                self.listening.set()


@pytest.fixture(scope="module")
def steered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One crawl, steered step by step; what happened, for the tests below to judge."""
    tmp = tmp_path_factory.mktemp("control")
    web = WebThread(WEB, tmp / "requests.jsonl")
    model = web.model
    seeded_host = next(h for h in model.hosts()[4:] if allowed(robots_for(model, h), f"http://{h}{SEEDED_PATH}"))
    seeded_url = f"http://{seeded_host}:{model.port}{SEEDED_PATH}"
    crawl = Crawl(tmp, model.seeds(4), web.web.dns_address)
    happened: dict[str, Any] = {"seeded_host": seeded_host}
    try:
        started = when_requests(web, 20)
        assert crawl.listening.wait(60), "no control API URL on stderr:\n" + "".join(crawl.stderr)
        api = Api(crawl.url)
        assert started.wait(60), "the crawl did not start"

        happened["unauthorized"] = [api.call("GET", "/status", token=None)[0], api.call("POST", "/pause", token="no")[0]]
        happened["status"] = api.json("GET", "/status")
        happened["metrics"] = api.call("GET", "/metrics")

        api.json("POST", "/pause")
        happened["paused_at"] = time.monotonic()
        happened["paused_status"] = api.json("GET", "/status")
        count = web.web.service.log.records
        happened["requests_while_paused"] = when_requests(web, count + 1).wait(QUIET_WINDOW)
        happened["resumed_at"] = time.monotonic()
        api.json("POST", "/resume")
        happened["continued"] = when_requests(web, count + 10).wait(60)

        happened["patch"] = api.json("PATCH", "/config", {"politeness.host_delay": PATCHED_DELAY})
        happened["patched_at"] = time.monotonic()
        fetched = when_target(web, SEEDED_PATH)
        happened["seeds"] = api.json("POST", "/seeds", {"urls": [seeded_url]})
        happened["seed_fetched"] = fetched.wait(60)
        # enough requests at the new delay: each seed host fetches about once a second
        when_requests(web, web.web.service.log.records + 16).wait(60)

        happened["stop"] = api.json("POST", "/stop")
        happened["exit"] = crawl.process.wait(120)
    finally:
        crawl.kill_if_running()
        happened["log"] = web.stop()
    happened["stats"] = orjson.loads((tmp / "out" / "stats.json").read_bytes())
    return happened


def test_requests_without_the_token_get_401(steered: dict[str, Any]) -> None:
    assert steered["unauthorized"] == [401, 401]


def test_status_and_metrics_describe_the_running_crawl(steered: dict[str, Any]) -> None:
    assert steered["status"]["stats"]["pages"] >= 1
    status, text = steered["metrics"]
    assert status == 200
    values = {s.name: s.value for family in text_string_to_metric_families(text.decode()) for s in family.samples
              if not s.labels}
    assert values["crawl_pages_total"] >= 1 and "crawl_front" in values


def test_nothing_is_requested_while_paused_and_requests_go_on_after_resume(steered: dict[str, Any]) -> None:
    assert steered["paused_status"]["paused"] is True
    assert steered["paused_status"]["in_flight"] == 0
    assert not steered["requests_while_paused"]
    log: list[LogRecord] = steered["log"]
    during = [r for r in log if steered["paused_at"] < r.start < steered["resumed_at"]]
    assert during == []
    assert steered["continued"], "no requests after resume"
    assert any(r.start > steered["resumed_at"] for r in log)


def test_a_seed_added_over_the_api_is_fetched(steered: dict[str, Any]) -> None:
    assert steered["seeds"] == {"received": 1, "accepted": 1}
    assert steered["seed_fetched"]
    requested = [r for r in steered["log"] if r.host == steered["seeded_host"]]
    assert [r.target for r in requested][:2] == ["/robots.txt", SEEDED_PATH]


def test_a_host_delay_changed_over_the_api_is_obeyed(steered: dict[str, Any]) -> None:
    assert steered["patch"] == {"politeness.host_delay": PATCHED_DELAY}
    checked = 0
    for host, records in by_key(steered["log"], "host").items():
        after = [r for r in records if r.start > steered["patched_at"]]
        for gap in gaps(after):
            assert gap >= PATCHED_DELAY, f"{host}: {gap:.3f} s between requests after the change"
            checked += 1
    assert checked >= 8, "too few requests after the change to tell"
    before = [g for records in by_key(page_requests(steered["log"]), "host").values()
              for g in gaps([r for r in records if r.end < steered["paused_at"]])]
    assert min(before) < PATCHED_DELAY, "the crawl was not faster before the change: the test proves nothing"


def test_stop_ends_the_crawl_cleanly(steered: dict[str, Any]) -> None:
    assert steered["stop"] == {"stopping": True}
    assert steered["exit"] == 0
    assert steered["stats"]["pages"] >= 10
