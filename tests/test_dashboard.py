"""The live dashboard in a real headless browser, over a real crawl of the in-vitro web.

One crawl (`crawl run --control`, two agent processes, as tests/test_control_crawl.py runs it)
and one Chromium page (tests/browser.py) signed in with ``?token=``; the page is driven step by
step and what happened is judged below: the cookie, the charts filling, pause and resume seen in
the web server's request log, the form's refusals word for word as PATCH /config's, the Stop
button ending the crawl, and no console error on the way. Screenshots of the page mid-crawl and
of the login form are taken into a temporary folder; ``SCREENSHOTS=docs pytest tests/test_dashboard.py``
refreshes docs/dashboard.png and docs/dashboard-login.png when the page's look changes (a test
run never writes into the checkout otherwise).
"""

from __future__ import annotations

import fnmatch
import os
import tempfile
import time
import tomllib
import urllib.parse
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench.invitro import LogRecord, WebParams
from engine import dashboard
from tests.browser import browser, watched_page
from tests.invitro_harness import WebThread, when_requests
from tests.test_control_crawl import TOKEN, Api, Crawl

ROOT = Path(__file__).resolve().parent.parent
DOCS = Path(os.environ.get("SCREENSHOTS") or tempfile.mkdtemp(prefix="dashboard-shots-"))
SCREENSHOT, LOGIN_SCREENSHOT = DOCS / "dashboard.png", DOCS / "dashboard-login.png"
QUIET_WINDOW = 1.5  # seconds the crawl stays paused while the log is watched
WAIT_MS = 30_000  # the longest a page may take to show what is asked of it
# Some hosts answer with redirects, errors and missing pages, so the status mix has several bars;
# pages enough that the crawl is still going when the test ends.
WEB = WebParams(hosts=8, hosts_per_ip=2, mean_pages=400, max_pages=800, external_share=0.2,
                robots_crawl_delay_share=0.0, robots_5xx_share=0.0, page_bytes=3000)
# (key, what is typed into the form, the same as PATCH /config takes it: the form types a number as a number)
REFUSED = [("politeness.host_delay", "soon", "soon"), ("engine.fetchers", "1.5", 1.5),
           ("filters.store", "status(200) and", "status(200) and")]
# Chromium logs every answer of status 400 or more as a console error, the page's own 401 too
HTTP_401 = "Failed to load resource: the server responded with a status of 401 (Unauthorized)"
HTTP_422 = "Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)"


def chart_points(selector: str) -> str:
    """A JavaScript expression: the fewest points drawn by a series of the chart ``selector``.

    Tests wrap their expressions in ``() =>``: Playwright runs a function as it is, but evaluates a bare
    expression with ``eval``, which the page's Content-Security-Policy forbids."""
    return f"Math.min(...[...document.querySelectorAll('{selector} path.series')].map(p => +p.dataset.n))"


@pytest.fixture(scope="module")
def looked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One crawl watched and steered through the dashboard; what happened, for the tests to judge."""
    tmp = tmp_path_factory.mktemp("dashboard")
    web = WebThread(WEB, tmp / "requests.jsonl")
    crawl = Crawl(tmp, web.model.seeds(4), web.web.dns_address, ["engine.max_seconds=600"])
    happened: dict[str, Any] = {}
    try:
        started = when_requests(web, 20)
        assert crawl.listening.wait(60), "no control API URL on stderr:\n" + "".join(crawl.stderr)
        assert started.wait(60), "the crawl did not start"
        api = Api(crawl.url)
        happened["anonymous"] = {path: api.call("GET", path, token=None) for path in ("/", "/status", "/?token=wrong")}
        happened["refusals"] = {key: orjson.loads(api.call("PATCH", "/config", {key: value})[1])
                                for key, _, value in REFUSED}
        with browser() as chromium:
            stranger = watched_page(chromium)  # no token: the login form
            response = stranger.page.goto(crawl.url + "/")
            assert response is not None
            happened["login"] = (response.status, stranger.page.locator("form[action='/login']").count())
            DOCS.mkdir(exist_ok=True)
            stranger.page.screenshot(path=str(LOGIN_SCREENSHOT))
            happened["errors_login"] = list(stranger.errors)
            watched = watched_page(chromium)
            page = watched.page
            page.set_viewport_size({"width": 1400, "height": 1000})
            page.goto(f"{crawl.url}/?token={urllib.parse.quote(TOKEN)}")
            happened["url"] = page.url
            happened["cookies"] = page.context.cookies()
            page.wait_for_function(f"() => {chart_points('#chart-pages')} >= 10 && {chart_points('#chart-front')} >= 10",
                                   timeout=WAIT_MS)
            page.wait_for_function("() => document.querySelectorAll('#hosts tbody tr').length >= 3 && "
                                   "document.querySelectorAll('#statuses rect').length >= 2", timeout=WAIT_MS)
            happened["charts"] = page.evaluate(
                "() => Object.fromEntries([...document.querySelectorAll('svg.chart path.series')]"
                ".map(p => [p.dataset.series, +p.dataset.n]))")
            happened["statuses"] = page.evaluate("() => [...document.querySelectorAll('#statuses rect')].map(r => +r.dataset.value)")
            happened["agents"] = page.locator("#agents tbody tr").count()
            happened["hosts"] = page.locator("#hosts tbody tr td:first-child").all_inner_texts()
            page.screenshot(path=str(SCREENSHOT), full_page=True)
            happened["errors_looking"] = list(watched.errors)

            page.click("#pause")
            page.wait_for_function("() => document.getElementById('state').textContent === 'paused'", timeout=WAIT_MS)
            happened["paused_at"] = time.monotonic()
            count = web.web.service.log.records
            happened["requests_while_paused"] = when_requests(web, count + 1).wait(QUIET_WINDOW)
            happened["resumed_at"] = time.monotonic()
            page.click("#resume")
            happened["continued"] = when_requests(web, count + 10).wait(60)
            page.wait_for_function("() => document.getElementById('state').textContent === 'running'", timeout=WAIT_MS)

            happened["form"] = {}
            for key, typed, _ in REFUSED:
                page.reload()  # a fresh form: the one refused value only
                field = page.locator(f'input[name="{key}"]')
                field.wait_for(timeout=WAIT_MS)
                field.fill(typed)
                page.click("#config button[type=submit]")
                error = page.locator("#config-error")
                error.wait_for(state="visible", timeout=WAIT_MS)
                happened["form"][key] = (error.text_content(), field.get_attribute("class"))
            page.reload()
            field = page.locator('input[name="politeness.host_delay"]')
            field.wait_for(timeout=WAIT_MS)
            field.fill("0.25")
            page.click("#config button[type=submit]")
            page.locator("#config-done").wait_for(state="visible", timeout=WAIT_MS)
            happened["applied"] = api.json("GET", "/config")["politeness.host_delay"]
            happened["errors_steering"] = list(watched.errors)

            page.once("dialog", lambda dialog: dialog.accept())
            page.click("#stop")
            happened["exit"] = crawl.process.wait(120)
    finally:
        crawl.kill_if_running()
        happened["log"] = web.stop()
    happened["stats"] = orjson.loads((tmp / "out" / "stats.json").read_bytes())
    return happened


def test_without_the_token_the_page_and_the_api_are_refused(looked: dict[str, Any]) -> None:
    for path, (status, body) in looked["anonymous"].items():
        assert status == 401, path
    assert b'action="/login"' in looked["anonymous"]["/"][1]
    assert b"not the control API" in looked["anonymous"]["/?token=wrong"][1]


def test_a_browser_without_the_token_gets_the_login_form(looked: dict[str, Any]) -> None:
    assert looked["login"] == (401, 1)
    assert looked["errors_login"] == [HTTP_401], "only the browser's note of the form's own status"


def test_the_token_in_the_address_becomes_a_strict_httponly_cookie(looked: dict[str, Any]) -> None:
    assert "token" not in looked["url"] and looked["url"].endswith("/")
    (cookie,) = looked["cookies"]
    assert cookie["name"].startswith("crawl-dashboard-")
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert TOKEN not in cookie["value"]


def test_the_page_loads_and_the_charts_fill_without_a_console_error(looked: dict[str, Any]) -> None:
    assert looked["errors_looking"] == []
    assert looked["charts"]["pages"] >= 10 and looked["charts"]["front"] >= 10
    assert len(looked["statuses"]) >= 2 and all(n > 0 for n in looked["statuses"])
    assert looked["agents"] == 2
    assert all(host.startswith("http://") for host in looked["hosts"])


def test_pause_stops_the_requests_and_resume_starts_them_again(looked: dict[str, Any]) -> None:
    assert not looked["requests_while_paused"]
    log: list[LogRecord] = looked["log"]
    assert [r for r in log if looked["paused_at"] < r.start < looked["resumed_at"]] == []
    assert looked["continued"], "no requests after resume"


def test_the_form_refuses_a_bad_value_with_patch_configs_own_words(looked: dict[str, Any]) -> None:
    for key, _, _ in REFUSED:
        refusal = looked["refusals"][key]
        assert refusal["key"] == key
        text, marks = looked["form"][key]
        assert text == refusal["error"]
        assert "refused" in marks
    assert looked["applied"] == 0.25
    # the only errors: the browser's note of each refused PATCH /config
    assert looked["errors_steering"] == [HTTP_422] * len(REFUSED)


def test_the_stop_button_ends_the_crawl_cleanly(looked: dict[str, Any]) -> None:
    assert looked["exit"] == 0
    assert looked["stats"]["stop_reason"] == "control API"


def test_every_file_of_the_page_goes_into_the_wheel() -> None:
    """pyproject's package-data names every file the server serves (an editable install would hide a miss:
    it serves from the tree; checked by hand with ``pip wheel . --no-deps`` and the wheel's listing)."""
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["engine.dashboard"]
    folder = ROOT / "engine" / "dashboard"
    files = {p.name for p in folder.iterdir() if p.is_file() and p.suffix != ".py"}
    assert files == set(dashboard.ASSETS)
    assert all(any(fnmatch.fnmatch(name, pattern) for pattern in patterns) for name in files)
