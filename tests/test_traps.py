"""Crawler traps and absurd URLs: the default scope limits, the URL-shape budget, and a crawl that leaves the traps.

The end-to-end tests crawl an in-vitro web whose trapped hosts (``bench/invitro/traps.py``)
link an endless calendar in the path and one in the query, ``/a/b/a/b/…`` and ``/d1/d2/d3/…``
through relative links, URLs of 2,083, 2,084 and 100,001 characters and a redirect to a
3,000-character one, with the default ``[scope]`` settings, and judge from the server's
request log and the crawl's stats.json.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.invitro import WebModel, WebParams
from bench.invitro.traps import LONG_URLS, PREFIXES, REDIRECTED_LENGTH, long_target
from engine import config as configuration
from frontier.filters import compile_filter
from frontier.frontier import Frontier
from frontier.scope import Scope
from frontier.settings import FrontierSettings
from frontier.shapes import MAX_LIMIT, ShapeBudget
from tests.invitro_harness import WebThread, page_requests, reachable, run_crawl, url_of

DEFAULTS = configuration.ScopeConfig()
LIMITS = {"max_url_length": DEFAULTS.max_url_length, "max_path_depth": DEFAULTS.max_path_depth,
          "max_repeated_segments": DEFAULTS.max_repeated_segments}
ORIGIN = "http://example.com"


def test_the_defaults_are_heritrix_s_and_bound_calendars() -> None:
    assert (DEFAULTS.max_url_length, DEFAULTS.max_path_depth, DEFAULTS.max_repeated_segments) == (2083, 20, 2)
    assert DEFAULTS.max_urls_per_shape == 1000


# -- the scope limits ---------------------------------------------------------------------------------


def _distinct(n: int) -> str:
    return "".join(f"/s{k}" for k in range(n))


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (ORIGIN + "/" + "a" * (2083 - len(ORIGIN) - 1), None),
        (ORIGIN + "/" + "a" * (2084 - len(ORIGIN) - 1), "url_length"),
        (ORIGIN + "/" + "x/" * 100_000, "url_length"),  # long and deep: the cheap test answers first
        (ORIGIN + _distinct(19) + "/", None),  # 20 slashes
        (ORIGIN + _distinct(19) + "/?q=/////", None),  # the query is not the path
        (ORIGIN + _distinct(20) + "/", "path_depth"),
        (ORIGIN + "/a/b/a/b/page.html", None),
        (ORIGIN + "/a/b/a/b/a/b/page.html", "repeated_segments"),
        (ORIGIN + "/x/a/a/a", "repeated_segments"),
        (ORIGIN + "/2020/01/01/", None),
        (ORIGIN + "/?a/b/a/b/a/b/", None),
    ],
)
def test_scope_limits_drop_with_their_reason(url: str, reason: str | None) -> None:
    assert Scope("any", **LIMITS).rejects(url) == reason
    assert Scope("any").rejects(url) is None  # 0 = off, and the frontier's default


def test_a_negative_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="path_depth limit must not be negative"):
        Scope("any", max_path_depth=-1)


_segments = st.lists(st.sampled_from(["a", "b", "c", "", "2024"]), max_size=30).map(lambda s: "/" + "/".join(s))


@given(path=_segments, length=st.integers(0, 120), depth=st.integers(0, 25), repeats=st.integers(0, 4))
def test_scope_agrees_with_the_filter_language(path: str, length: int, depth: int, repeats: int) -> None:
    """The limits are the filters' predicates: scope drops exactly what the equivalent expression refuses."""
    url = ORIGIN + path
    scope = Scope("any", max_url_length=length, max_path_depth=depth, max_repeated_segments=repeats)
    terms = [f"max_url_length({length})"] * bool(length) + [f"max_depth({depth})"] * bool(depth)
    terms += [f"not duplicate_segments({repeats + 1})"] * bool(repeats)
    expected = compile_filter(" and ".join(terms), kind="url")(url) if terms else True
    assert (scope.rejects(url) is None) == expected


# -- the URL-shape budget -------------------------------------------------------------------------------


def test_shape_budget_admits_limit_urls_per_host_and_shape() -> None:
    drops: Counter[str] = Counter()
    budget = ShapeBudget(3, drops)
    months = [f"/calendar/{2026 + k // 12}/{k % 12 + 1:02d}/" for k in range(6)]
    assert [budget.admit(ORIGIN, m) for m in months] == [True] * 3 + [False] * 3
    assert drops == {"url_shape": 3}
    assert budget.admit("http://other.org", months[4])  # another host has its own budget
    assert budget.admit("http://h1.example.com", months[4]) and budget.admit("http://h2.example.com", months[4])
    assert budget.admit(ORIGIN, "/calendar/2027/1/15/")  # another shape: a day
    assert budget.admit(ORIGIN, "/events?month=2027-01")
    assert all(budget.admit(ORIGIN, f"/page-{'x' * k}.html") for k in range(10))  # no digits: not counted
    assert not budget.admit(ORIGIN, "/calendar/123456/7/")  # any digits, any number of them


def test_shape_budget_state_round_trips_and_limits_are_checked() -> None:
    budget = ShapeBudget(2, Counter())
    assert budget.admit(ORIGIN, "/p/1") and budget.admit(ORIGIN, "/p/2")
    restored = ShapeBudget(2, Counter())
    restored.load(budget.state())
    assert not restored.admit(ORIGIN, "/p/3") and restored.admit(ORIGIN, "/q/3")
    for bad in (0, MAX_LIMIT + 1):
        with pytest.raises(ValueError, match="shape limit"):
            ShapeBudget(bad, Counter())


def _frontier(directory: Path, shapes: int) -> Frontier:
    return Frontier(directory, FrontierSettings(max_urls_per_shape=shapes, sieve_flush_interval=0.0, fsync=False),
                    scope=Scope("any", **LIMITS))


def _scheduled(frontier: Frontier) -> int:
    frontier.sieve.flush()
    frontier.distribute(0.0)
    return frontier.workbench.urls + frontier.virtualizer.statistics().items


def test_the_frontier_counts_drops_by_reason_and_the_budget_survives_a_checkpoint(tmp_path: Path) -> None:
    frontier = _frontier(tmp_path, shapes=5)
    months = [f"{ORIGIN}/calendar/{2000 + k // 12}/{k % 12 + 1:02d}/" for k in range(12)]
    absurd = [ORIGIN + "/" + "a" * 3000, ORIGIN + "/d" * 30, ORIGIN + "/a/b/a/b/a/b/"]
    # a URL linked again is a cache hit, judged once: one drop each
    assert frontier.discover(months[:4] + absurd + months[:4] + absurd) == 4
    assert _scheduled(frontier) == 4
    frontier.checkpoint(0.0, {})
    frontier.close()

    resumed = _frontier(tmp_path, shapes=5)
    resumed.restore(0.0)
    resumed.discover(months[4:])
    assert _scheduled(resumed) == 5  # one more of the shape: the four before the checkpoint count
    assert resumed.statistics().drops == {"url_length": 1, "path_depth": 1, "repeated_segments": 1, "url_shape": 7}
    resumed.close()


@pytest.mark.parametrize(
    ("override", "key", "problem"),
    [
        ("scope.max_url_length=-1", "scope.max_url_length", "must not be negative"),
        ("scope.max_path_depth=-5", "scope.max_path_depth", "must not be negative"),
        ("scope.max_repeated_segments=-1", "scope.max_repeated_segments", "must not be negative"),
        ("scope.max_urls_per_shape=70000", "scope.max_urls_per_shape", "between 0 (no limit) and 65535"),
    ],
)
def test_bad_limits_name_the_key(override: str, key: str, problem: str) -> None:
    with pytest.raises(configuration.ConfigError) as info:
        configuration.load(None, [override])
    assert info.value.key == key and problem in str(info.value)


# -- the in-vitro traps ------------------------------------------------------------------------------


TRAP_WEB = WebParams(hosts=12, hosts_per_ip=1, mean_pages=8, max_pages=20, mean_links=10, page_bytes=3000,
                     trap_share=0.4, robots_5xx_share=0.0, robots_crawl_delay_share=0.0)
SETTINGS = ["politeness.host_delay=0.001", "politeness.ip_delay=0.001", "engine.fetchers=40",
            "engine.max_seconds=200"]
CALENDARS = ("/calendar/", "/events?month=")
_REPEATED = re.compile(r".*(/.*)\1{2,}(/.*)?")  # bubing's oracle for a run repeated three times


def _trap_hosts(model: WebModel) -> list[str]:
    return [h for h in model.hosts() if model.is_trapped(model.host_info(h))]  # type: ignore[arg-type]


def test_the_trap_web_is_off_by_default_and_its_long_urls_have_their_lengths() -> None:
    plain = WebModel(dataclasses.replace(TRAP_WEB, trap_share=0.0), 8080)
    trapped = WebModel(TRAP_WEB, 8080)
    hosts = _trap_hosts(trapped)
    assert len(hosts) == 2 and not _trap_hosts(plain)
    for host in plain.hosts():
        assert not [u for u in plain.respond(host, "/").links if "/calendar/" in u]
        assert plain.respond(host, "/calendar/2026/12/").status == 404
    info = trapped.host_info(hosts[0])
    assert info is not None
    assert [len(u) for u in trapped.respond(hosts[0], "/").links if "/long/" in u] == list(LONG_URLS)
    redirect = trapped.respond(hosts[0], "/long-redirect")
    assert redirect.status == 302 and redirect.links == [info.origin + long_target(info.origin, REDIRECTED_LENGTH)]


def _seeds(model: WebModel) -> list[str]:
    """Every home page, and a 2,500-character seed the length limit must refuse."""
    first = model.host_info(model.hosts()[0])
    assert first is not None
    return [*model.seeds(len(model.hosts())), first.origin + long_target(first.origin, 2500)]


def _calendar_pages(log: list, host: str, prefix: str) -> Counter[str]:
    return Counter(r.target for r in log if r.host == host and r.target.startswith(prefix))


@pytest.fixture(scope="module")
def trap_crawl(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("traps")
    web = WebThread(TRAP_WEB, tmp / "requests.jsonl")
    try:
        result = run_crawl(tmp / "out", _seeds(web.model), dns=web.web.dns_address, settings=SETTINGS)
    finally:
        log = web.stop()
    return web.model, log, result


def test_the_crawl_ends_by_itself_with_the_traps_present(trap_crawl) -> None:  # type: ignore[no-untyped-def]
    model, log, result = trap_crawl
    assert result.stats["stop_reason"] == "done"
    plain = WebModel(dataclasses.replace(TRAP_WEB, trap_share=0.0), model.port)
    requested = Counter(url_of(r, model.port) for r in page_requests(log) if not r.target.startswith(PREFIXES))
    assert not [u for u, n in requested.items() if n > 1]
    assert set(requested) == reachable(plain, plain.seeds(len(plain.hosts()))), "the rest of the web is all fetched"


def test_no_url_past_a_limit_is_requested_and_each_limit_is_reached(trap_crawl) -> None:  # type: ignore[no-untyped-def]
    model, log, _ = trap_crawl
    requests = page_requests(log)
    assert max(len(url_of(r, model.port)) for r in requests) == 2083  # the 2,083-character link is fetched
    paths = [r.target.partition("?")[0] for r in requests]
    assert max(p.count("/") for p in paths) == 20
    assert not [p for p in paths if _REPEATED.fullmatch(p)]
    for host in _trap_hosts(model):
        targets = {r.target for r in requests if r.host == host}
        assert "/deep/" + "".join(f"d{k}/" for k in range(1, 19)) in targets  # 20 slashes
        assert {"/loop/a/b/a/b/a/", "/long-redirect"} <= targets  # a/b twice, then a: allowed


def test_each_calendar_costs_its_host_exactly_the_shape_budget(trap_crawl) -> None:  # type: ignore[no-untyped-def]
    model, log, result = trap_crawl
    hosts = _trap_hosts(model)
    for host in hosts:
        for prefix in CALENDARS:
            pages = _calendar_pages(log, host, prefix)
            assert len(pages) == DEFAULTS.max_urls_per_shape and set(pages.values()) == {1}, (host, prefix)
    drops = result.stats["frontier"]["drops"]
    # per trapped host: the 2,084 and 100,001-character links and the redirect target; and the long seed
    assert drops["url_length"] == 3 * len(hosts) + 1
    assert drops["path_depth"] >= len(hosts) and drops["repeated_segments"] >= len(hosts)
    assert drops["url_shape"] >= 2 * len(hosts)


@pytest.fixture(scope="module")
def resumed_trap_crawl(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The same crawl stopped in the middle of the calendars (it checkpoints on stop), then resumed. It stops
    at a page count, not a time: a fast machine fetched a whole calendar in 5 seconds."""
    tmp = tmp_path_factory.mktemp("traps-resumed")
    web = WebThread(TRAP_WEB, tmp / "requests.jsonl")
    seeds = _seeds(web.model)
    try:
        first = run_crawl(tmp / "out", seeds, dns=web.web.dns_address, settings=[*SETTINGS, "engine.max_pages=2000"])
        answered_first = web.web.service.log.records
        second = run_crawl(tmp / "out", seeds, dns=web.web.dns_address, settings=SETTINGS, args=["--resume"])
    finally:
        log = web.stop()
    return web.model, log[:answered_first], log, first, second


def test_the_shape_budget_survives_checkpoint_and_resume(resumed_trap_crawl) -> None:  # type: ignore[no-untyped-def]
    model, before_stop, log, first, second = resumed_trap_crawl
    assert first.stats["stop_reason"] == "max_pages" and second.stats["stop_reason"] == "done"
    for host in _trap_hosts(model):
        for prefix in CALENDARS:
            assert 0 < len(_calendar_pages(before_stop, host, prefix)) < DEFAULTS.max_urls_per_shape, (host, prefix)
            assert len(_calendar_pages(log, host, prefix)) == DEFAULTS.max_urls_per_shape, (host, prefix)
