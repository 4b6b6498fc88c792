"""The control API (engine/control.py) over a real loopback socket, steering a small real target."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from engine import config as configuration
from engine import dashboard
from engine.config import Config, ConfigError
from engine.control import LIVE_KEYS, TIMELINE_POINTS, TOKEN_ENV, ControlServer, live_changes, token_for
from engine.metrics import Exporter
from engine.stats import Counters
from frontier.urls import canonicalize

TOKEN = "s3cret-token"


class Target:
    """A crawl stand-in whose state the API changes: pause flag, seeds, configuration, stop."""

    def __init__(self) -> None:
        self.paused = False
        self.stopped = False
        self.seeds: list[str] = []
        self.config = Config()
        self.counters = Counters(pages=42, bytes=4200)
        self.counters.statuses[200] = 42
        self.exporter = Exporter(self.status)
        self.timeline = [{"t": float(t), "pages": 10.0 * t} for t in range(1, 2001)]
        self.hosts_asked = 0

    def status(self) -> dict[str, Any]:
        return {"stats": self.counters.as_dict(), "paused": self.paused, "front": 3, "todo": 1,
                "fetchers": self.config.engine.fetchers, "host_delay": self.config.politeness.host_delay}

    def metrics(self) -> bytes:
        return self.exporter.render()

    async def top_hosts(self) -> list[dict[str, Any]]:
        self.hosts_asked += 1
        return [{"host": "http://a.test", "pages": 7, "queued": 3, "agent": 0}]

    async def pause(self) -> None:
        self.paused = True

    async def resume(self) -> None:
        self.paused = False

    async def add_seeds(self, urls: list[str]) -> int:
        accepted = [c for c in map(canonicalize, urls) if c is not None]
        self.seeds += accepted
        return len(accepted)

    async def patch_config(self, changes: dict[str, Any]) -> dict[str, Any]:
        if changes.get("engine.fetchers", 0) > 5000:
            raise ConfigError("engine.fetchers", "this agent takes at most 5000")
        for key, value in changes.items():
            section, name = key.split(".")
            setattr(getattr(self.config, section), name, value)
        return changes

    async def stop(self) -> None:
        self.stopped = True


@pytest.fixture
async def api() -> AsyncIterator[tuple[ControlServer, Target, aiohttp.ClientSession]]:
    target = Target()
    server = ControlServer("127.0.0.1:0", TOKEN, target)
    await server.start()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession(server.url, headers=headers) as session:
        yield server, target, session
    await server.close()


async def test_listens_on_the_loopback_port_it_was_given(api) -> None:  # type: ignore[no-untyped-def]
    server, _, _ = api
    host, port = server.address
    assert host == "127.0.0.1" and port > 0 and server.url == f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", f"Basic {TOKEN}", "Bearer", f"Bearer {TOKEN}x"])
@pytest.mark.parametrize(("method", "path"), [("GET", "/status"), ("POST", "/pause"), ("GET", "/nowhere")])
async def test_without_the_token_401_and_nothing_happens(api, authorization, method, path) -> None:  # type: ignore[no-untyped-def]
    server, target, _ = api
    headers = {} if authorization is None else {"Authorization": authorization}
    async with aiohttp.ClientSession() as anonymous:
        async with anonymous.request(method, server.url + path, headers=headers) as response:
            assert response.status == 401
            assert response.headers["WWW-Authenticate"].startswith("Bearer")
            assert "bearer token" in (await response.json())["error"]
    assert not target.paused


async def test_status_is_the_targets_dict_as_json(api) -> None:  # type: ignore[no-untyped-def]
    _, target, session = api
    async with session.get("/status") as response:
        assert response.status == 200 and response.content_type == "application/json"
        assert await response.json() == orjson.loads(orjson.dumps(target.status()))


async def test_metrics_parse_as_prometheus_text(api) -> None:  # type: ignore[no-untyped-def]
    _, _, session = api
    async with session.get("/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = await response.text()
    values = {(s.name, tuple(s.labels.items())): s.value
              for family in text_string_to_metric_families(text) for s in family.samples}
    assert values[("crawl_pages_total", ())] == 42
    assert values[("crawl_responses_total", (("status", "200"),))] == 42
    assert values[("crawl_paused", ())] == 0


async def test_pause_resume_and_stop_change_the_target(api) -> None:  # type: ignore[no-untyped-def]
    _, target, session = api
    async with session.post("/pause") as response:
        assert await response.json() == {"paused": True}
    assert target.paused
    async with session.get("/status") as response:
        assert (await response.json())["paused"] is True
    async with session.post("/resume") as response:
        assert await response.json() == {"paused": False}
    assert not target.paused
    async with session.post("/stop") as response:
        assert await response.json() == {"stopping": True}
    assert target.stopped


async def test_seeds_are_handed_over_and_counted(api) -> None:  # type: ignore[no-untyped-def]
    _, target, session = api
    urls = ["http://A.test/x", "mailto:nobody@a.test", "https://b.test"]
    async with session.post("/seeds", json={"urls": urls}) as response:
        assert await response.json() == {"received": 3, "accepted": 2}
    assert target.seeds == ["http://a.test/x", "https://b.test/"]


@pytest.mark.parametrize("body", [b"not json", b'{"urls": "http://a.test/"}', b'["http://a.test/"]', b'{"urls": [1]}'])
async def test_bad_seed_bodies_get_400(api, body: bytes) -> None:  # type: ignore[no-untyped-def]
    _, target, session = api
    async with session.post("/seeds", data=body) as response:
        assert response.status == 400
        assert (await response.json())["error"]
    assert target.seeds == []


async def test_patch_config_coerces_and_applies(api) -> None:  # type: ignore[no-untyped-def]
    _, target, session = api
    changes = {"politeness.host_delay": 2, "engine.fetchers": 10, "filters.schedule": "max_depth(3)"}
    async with session.patch("/config", json=changes) as response:
        assert response.status == 200
        assert await response.json() == {"politeness.host_delay": 2.0, "engine.fetchers": 10,
                                         "filters.schedule": "max_depth(3)"}
    assert target.config.politeness.host_delay == 2.0 and isinstance(target.config.politeness.host_delay, float)
    assert target.config.engine.fetchers == 10
    async with session.get("/status") as response:
        assert (await response.json())["host_delay"] == 2.0


@pytest.mark.parametrize(
    ("changes", "key", "problem"),
    [
        ({"network.proxy": "http://x:1"}, "network.proxy", "cannot be changed while the crawl runs"),
        ({"engine.nosuch": 1}, "engine.nosuch", "cannot be changed while the crawl runs"),
        ({"politeness.host_delay": "soon"}, "politeness.host_delay", "expected a number"),
        ({"engine.fetchers": 0}, "engine.fetchers", "must be positive"),
        ({"engine.fetchers": 1.5}, "engine.fetchers", "expected an integer"),
        ({"politeness.ip_delay": -1}, "politeness.ip_delay", "must not be negative"),
        ({"filters.store": "status(200) and"}, "filters.store", "at column 16"),
        ({"filters.schedule": "status(200)"}, "filters.schedule", "tests a response"),
        ({"engine.fetchers": 6000}, "engine.fetchers", "at most 5000"),  # the target's own refusal
    ],
)
async def test_bad_changes_get_422_naming_the_key(api, changes, key, problem) -> None:  # type: ignore[no-untyped-def]
    _, target, session = api
    async with session.patch("/config", json={"politeness.host_delay": 1.0, **changes}) as response:
        assert response.status == 422
        body = await response.json()
    assert body["key"] == key and problem in body["error"]
    assert target.config == Config(), "a refused change must change nothing"


@pytest.mark.parametrize("body", [b"{", b"[]", b"{}", b'"engine.fetchers=1"'])
async def test_patch_bodies_that_are_no_object_get_400(api, body: bytes) -> None:  # type: ignore[no-untyped-def]
    _, _, session = api
    async with session.patch("/config", data=body) as response:
        assert response.status == 400


async def test_unknown_paths_and_methods_answer_in_json(api) -> None:  # type: ignore[no-untyped-def]
    _, _, session = api
    async with session.get("/nowhere") as response:
        assert response.status == 404 and "error" in await response.json()
    async with session.get("/pause") as response:
        assert response.status == 405 and "error" in await response.json()


def test_refuses_to_start_without_a_token() -> None:
    with pytest.raises(ConfigError) as info:
        ControlServer("127.0.0.1:0", "", Target())
    assert info.value.key == "control.token" and TOKEN_ENV in info.value.problem


@pytest.mark.parametrize("listen", ["0.0.0.0:8089", "10.1.2.3:8089", "[::]:8089", "example.com:8089"])
def test_non_loopback_addresses_need_allow_remote(listen: str) -> None:
    with pytest.raises(ConfigError) as info:
        ControlServer(listen, TOKEN, Target())
    assert info.value.key == "control.listen" and "control.allow_remote" in info.value.problem
    ControlServer(listen, TOKEN, Target(), allow_remote=True)  # said explicitly: accepted (not started here)


@pytest.mark.parametrize("listen", ["127.0.0.1:0", "127.9.9.9:1", "localhost:8089", "[::1]:8089"])
def test_loopback_addresses_are_accepted(listen: str) -> None:
    ControlServer(listen, TOKEN, Target())


@pytest.mark.parametrize("listen", ["8089", "127.0.0.1", "127.0.0.1:http", ":8089", "127.0.0.1:70000"])
def test_bad_listen_values_name_the_key(listen: str) -> None:
    with pytest.raises(ConfigError) as info:
        ControlServer(listen, TOKEN, Target())
    assert info.value.key == "control.listen"


def test_token_comes_from_the_config_else_the_environment() -> None:
    assert token_for("from-config", {TOKEN_ENV: "from-env"}) == "from-config"
    assert token_for("", {TOKEN_ENV: "from-env"}) == "from-env"
    assert token_for("", {}) == ""


def test_live_keys_are_configuration_keys() -> None:
    tables = configuration.describe(Config())
    for key in LIVE_KEYS:
        section, name = key.split(".")
        assert name in tables[section], key
    assert live_changes({key: tables[key.split(".")[0]][key.split(".")[1]] for key in LIVE_KEYS if key != "engine.fetchers"})


async def test_config_lists_the_live_settings(api) -> None:  # type: ignore[no-untyped-def]
    _, target, session = api
    async with session.patch("/config", json={"politeness.host_delay": 2}) as response:
        assert response.status == 200
    async with session.get("/config") as response:
        values = await response.json()
    assert list(values) == list(LIVE_KEYS)
    assert values["politeness.host_delay"] == 2.0 and values["engine.fetchers"] == target.config.engine.fetchers


async def test_timeline_gives_the_points_after_since_and_at_most_the_last_ones(api) -> None:  # type: ignore[no-untyped-def]
    _, target, session = api
    async with session.get("/timeline", params={"since": "1995.5"}) as response:
        assert [p["t"] for p in await response.json()] == [1996.0, 1997.0, 1998.0, 1999.0, 2000.0]
    async with session.get("/timeline") as response:
        points = await response.json()
    assert len(points) == TIMELINE_POINTS and points[-1] == target.timeline[-1]
    async with session.get("/timeline", params={"since": "soon"}) as response:
        assert response.status == 400


async def test_hosts_are_the_targets_top_hosts(api) -> None:  # type: ignore[no-untyped-def]
    _, target, session = api
    async with session.get("/hosts") as response:
        assert await response.json() == [{"host": "http://a.test", "pages": 7, "queued": 3, "agent": 0}]
    assert target.hosts_asked == 1


async def test_the_dashboard_files_are_served_from_the_package(api) -> None:  # type: ignore[no-untyped-def]
    server, _, session = api
    async with aiohttp.ClientSession() as anonymous:  # the files hold no data: no token needed
        for name, kind in dashboard.ASSETS.items():
            async with anonymous.get(f"{server.url}/dashboard/{name}") as response:
                assert response.status == 200 and response.content_type == kind
                assert await response.read() == dashboard.asset(name)
                assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
        async with anonymous.get(f"{server.url}/dashboard/secrets.txt") as response:
            assert response.status == 404
    async with session.get("/") as response:  # the bearer token opens the page too
        assert response.status == 200 and b'src="/dashboard/dashboard.js"' in await response.read()


def _cookie_of(response: aiohttp.ClientResponse) -> str:
    return response.headers["Set-Cookie"]


@pytest.mark.parametrize("how", ["query", "form"])
async def test_a_browser_shows_the_token_once_and_gets_a_strict_httponly_cookie(api, how) -> None:  # type: ignore[no-untyped-def]
    server, target, _ = api
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:  # unsafe: keeps an IP's
        async with browser.get(server.url + "/") as response:  # no cookie yet: the login form
            assert response.status == 401 and response.content_type == "text/html"
            assert b'action="/login"' in await response.read()
        if how == "query":
            entering = browser.get(f"{server.url}/?token={TOKEN}", allow_redirects=False)
        else:
            entering = browser.post(server.url + "/login", data={"token": TOKEN}, allow_redirects=False)
        async with entering as response:
            assert response.status == 303 and response.headers["Location"] == "/"  # the token off the address bar
            cookie = _cookie_of(response)
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and TOKEN not in cookie
        assert cookie.startswith(dashboard.cookie_name(server.address[1]) + "=")
        async with browser.get(server.url + "/") as response:
            assert response.status == 200
        async with browser.get(server.url + "/status") as response:
            assert response.status == 200 and (await response.json())["paused"] is False
        async with browser.post(server.url + "/pause") as response:  # a change needs the page's header too
            assert response.status == 403 and "X-Crawl-Dashboard" in (await response.json())["error"]
        assert not target.paused
        async with browser.post(server.url + "/pause", headers={"X-Crawl-Dashboard": "1"}) as response:
            assert response.status == 200
        assert target.paused


@pytest.mark.parametrize("how", ["query", "form"])
async def test_a_wrong_token_gets_the_form_again_and_no_cookie(api, how) -> None:  # type: ignore[no-untyped-def]
    server, _, _ = api
    async with aiohttp.ClientSession() as browser:
        if how == "query":
            entering = browser.get(f"{server.url}/?token=wrong", allow_redirects=False)
        else:
            entering = browser.post(server.url + "/login", data={"token": "wrong"}, allow_redirects=False)
        async with entering as response:
            assert response.status == 401 and "Set-Cookie" not in response.headers
            assert b"not the control API" in await response.read()
        forged = {dashboard.cookie_name(server.address[1]): dashboard.cookie_value(b"wrong")}
        async with browser.get(server.url + "/status", cookies=forged) as response:
            assert response.status == 401
