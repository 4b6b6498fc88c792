"""The SOUrCe evaluation's pure parts (``bench/source_eval.py``): scoring, budgets, example pages, goals, plot.

The scoring is checked on synthetic request-log records over a tiny real forum (30 threads,
60 users, census in well under a second), the census's own walk standing in for a crawl; the
figures' golden values are counted from the census independently of the scorer. No server
and no crawl: a learn-then-crawl run of one site takes over a minute (see the module's
``--sites forum --variants 0 --tasks ucc --budget 500`` example).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest

from bench.invitro.requestlog import LogRecord
from bench.invitro.social.census import Census, census
from bench.invitro.social.web import SocialParams, SocialWeb, split_url
from bench.plots import source_eval
from bench.source_eval import (
    TARGETS,
    checks,
    clustergraph_args,
    example_pages,
    harvest_curve,
    source_args,
    target_budget,
    target_figures,
    type_entropy,
    ucc_figures,
)
from frontier.source.train import SamplePage

PORT = 80
TINY = SocialParams(("forum",), 1, {"forum": {"threads": 30.0, "users": 60.0, "comments": 10.0}})


@functools.cache
def lab() -> tuple[SocialWeb, Census]:
    web = SocialWeb(TINY, PORT)
    return web, census(web.site_named("forum"))


def record(web: SocialWeb, url: str, n: int, status: int | None = None) -> LogRecord:
    host, target = split_url(url)
    answer = web.answer(host, target)
    code = status if status is not None else (answer.status if answer else 404)
    return LogRecord(float(n), float(n), 1, "127.0.77.1", False, "GET", host, None, target, code, 0, False, False)


def records_of(urls: list[str]) -> list[LogRecord]:
    web = lab()[0]
    return [record(web, url, n) for n, url in enumerate(urls)]


def urls_of_type(page_type: str) -> list[str]:
    _, walk = lab()
    return [url for url, truth in zip(walk.urls, walk.truths, strict=True) if truth.type == page_type]


# -- curve and entropy --------------------------------------------------------------------------------


def test_harvest_curve_has_a_point_every_step_and_at_the_last_download() -> None:
    hits = [n % 2 == 0 for n in range(250)]
    assert harvest_curve(hits) == [[100, 50], [200, 100], [250, 125]]
    assert harvest_curve(hits[:200]) == [[100, 50], [200, 100]]
    assert harvest_curve([]) == []


@pytest.mark.parametrize(("counts", "expected"), [
    ([2, 2], 1.0), ([1, 1, 1, 1], 2.0), ([5], 0.0), ([], 0.0), ([3, 1, 0], 0.811278),
])
def test_type_entropy_is_eq_13_in_bits(counts: list[int], expected: float) -> None:
    assert type_entropy(counts) == pytest.approx(expected, abs=1e-4)


# -- UCC ----------------------------------------------------------------------------------------------


def test_a_crawl_of_the_whole_census_has_every_ucc_key() -> None:
    web, walk = lab()
    figures = ucc_figures(records_of(list(walk.urls)), web, "forum", walk)
    ucc_pages = sum(truth.ucc for truth in walk.truths)
    assert figures["downloads"] == walk.pages
    assert figures["ratio"] == pytest.approx(ucc_pages / walk.pages, abs=1e-4)
    assert figures["recall"] == pytest.approx(1.0)
    assert figures["f"] == pytest.approx(2 * figures["ratio"] / (figures["ratio"] + 1), abs=1e-4)
    assert figures["ratio_new"] <= figures["ratio"]  # a duplicate's key carried earlier is not new
    shares = [count / walk.pages for count in walk.by_type.values()]
    assert figures["entropy"] == pytest.approx(-sum(p * math.log2(p) for p in shares), abs=1e-4)
    assert figures["by_type"] == walk.by_type
    assert figures["curve"][-1] == [walk.pages, ucc_pages]


def test_a_ucc_page_downloaded_again_is_ucc_but_not_new() -> None:
    web, walk = lab()
    threads = urls_of_type("thread")
    figures = ucc_figures(records_of(threads + threads), web, "forum", walk)
    assert figures["ratio"] == 1.0
    assert figures["ratio_new"] == pytest.approx(0.5)
    assert figures["recall"] == pytest.approx(len(threads) / sum(t.ucc for t in walk.truths), abs=1e-4)  # pages
    assert figures["recall_keys"] == pytest.approx(len(threads) / len(walk.ucc_keys), abs=1e-4)
    assert figures["entropy"] == 0.0


def test_robots_txt_and_other_hosts_are_not_downloads() -> None:
    web, walk = lab()
    profiles = records_of(urls_of_type("profile")[:10])
    robots = record(web, "http://www.forum.test:80/robots.txt", 98, status=200)
    elsewhere = LogRecord(99.0, 99.0, 1, "127.0.77.9", False, "GET", "elsewhere.test", None, "/", 200, 0, False, False)
    figures = ucc_figures([*profiles, robots, elsewhere], web, "forum", walk)
    assert figures["downloads"] == 10 and figures["ratio"] == 1.0


# -- target -------------------------------------------------------------------------------------------


def test_target_figures_count_pages_of_the_type() -> None:
    web, walk = lab()
    threads = urls_of_type("thread")
    assert len(threads) == walk.by_type["thread"] >= 18 and len(urls_of_type("profile")) >= 6
    whole = target_figures(records_of(list(walk.urls)), web, "forum", "thread", walk)
    assert whole["ratio"] == pytest.approx(len(threads) / walk.pages, abs=1e-4) and whole["recall"] == 1.0
    half = target_figures(records_of(threads[:18] + urls_of_type("profile")[:6]), web, "forum", "thread", walk)
    assert (half["ratio"], half["recall"]) == (pytest.approx(0.75), pytest.approx(0.5))
    assert half["f"] == pytest.approx(0.6, abs=1e-4)
    assert half["curve"] == [[24, 18]]


def test_a_failed_download_of_a_target_counts_for_hr_but_not_for_recall() -> None:
    web, walk = lab()
    failed = [record(web, url, n, status=503) for n, url in enumerate(urls_of_type("profile")[:4])]
    figures = target_figures(failed, web, "forum", "profile", walk)
    assert (figures["ratio"], figures["recall"], figures["f"]) == (1.0, 0.0, 0.0)


def test_target_budget_is_the_census_count_capped() -> None:
    _, walk = lab()
    profiles = walk.by_type["profile"]
    assert profiles == 60  # one per user of the tiny forum
    assert target_budget(walk, "profile") == profiles
    assert target_budget(walk, "profile", 50) == 50
    assert target_budget(walk, "profile", 500) == profiles
    assert target_budget(walk, "no_such_type") == 0


def test_example_pages_are_drawn_from_the_sample_pages_of_the_type() -> None:
    web, walk = lab()
    sample = [SamplePage(n, url, url, {}, {}) for n, url in enumerate(walk.urls[:100])]
    profiles = [url for url in walk.urls[:100] if url in set(urls_of_type("profile"))]
    assert len(profiles) >= 4
    three = example_pages(sample, web, "profile", 3)
    assert len(set(three)) == 3 and set(three) <= set(profiles)
    assert three == sorted(three, key=profiles.index) == example_pages(sample, web, "profile", 3)  # seeded
    assert example_pages(sample, web, "profile", 1000) == profiles
    assert example_pages(sample[:1], web, "profile") == []


def test_every_site_has_a_detail_and_a_profile_target() -> None:
    assert sorted(TARGETS) == ["blog", "books", "forum", "microblog"]
    assert all(sorted(roles) == ["detail", "profile"] for roles in TARGETS.values())


# -- crawl arguments, goals, plot ---------------------------------------------------------------------


def test_policy_arguments_of_source_and_the_cluster_graph() -> None:
    model = Path("/m")
    assert source_args(model) == ["--policy", "source-ucc", "--model", "/m"]
    urls = ['http://www.forum.test:4000/t/1/a"b?page=2', "http://www.forum.test:4000/t/2"]
    assert source_args(model, urls) == ["--policy", "source-target", "--model", "/m",
                                        "--target-example", urls[0], "--target-example", urls[1]]
    assert clustergraph_args(model) == ["--policy", "clustergraph", "--model", "/m", "--set", 'policy.order="gd"']


def method(ratio: float, recall: float, f: float) -> dict[str, object]:
    return {"ratio": ratio, "recall": recall, "f": f, "curve": [[100, int(100 * ratio)], [150, int(150 * ratio)]]}


def site_result() -> dict[str, object]:
    return {
        "label": "forum",
        "ucc": {"budget": 150, "ratio_name": "VR",
                "methods": {"bfs": method(0.9, 0.30, 0.45), "source": method(0.995, 0.31, 0.47),
                            "clustergraph": method(0.97, 0.32, 0.48)}},
        "target": {"detail": {"type": "thread", "budget": 150, "ratio_name": "HR",
                              "methods": {"bfs": method(0.3, 0.3, 0.3), "source": method(0.9, 0.9, 0.9)}},
                   "profile": {"type": "profile", "budget": 150, "ratio_name": "HR",
                               "methods": {"bfs": method(0.3, 0.3, 0.3)}}},
    }


def test_checks_are_the_issue_goals() -> None:
    found = {c["name"]: c["ok"] for c in checks(site_result())}
    assert found == {"UCC: VR": True, "UCC: recall vs BFS": True, "target detail (thread): F": True,
                     "target profile (profile): F": False}  # no example page: no SOUrCe crawl, a miss


def test_checks_fail_on_a_low_vr_or_a_recall_below_bfs() -> None:
    result = site_result()
    result["ucc"]["methods"]["source"] = method(0.98, 0.29, 0.44)  # type: ignore[index]
    found = {c["name"]: (c["ok"], c["goal"]) for c in checks(result)}
    assert found["UCC: VR"] == (False, 0.99)
    assert found["UCC: recall vs BFS"] == (False, 0.30)


def test_the_plot_draws_every_task(tmp_path: Path) -> None:
    path = tmp_path / "source_eval.png"
    targets_only = {key: value for key, value in site_result().items() if key != "ucc"}
    source_eval({"sites": [site_result(), {**site_result(), "label": "blog", "target": {}}, targets_only]}, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
