"""SOUrCe's training sampler (digest §2.5, A9): AT-09, redirects and failures, the BFS ablation,
and the invariants over random small sites (hypothesis)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier.source.sampler import Groups, Sample, SamplingMode, SourceSampler

Site = Mapping[str, Groups]


def draw_batch(sampler: SourceSampler, batch: int) -> list[str]:
    """Up to ``batch`` URLs to fetch before reporting any of them."""
    urls: list[str] = []
    while len(urls) < batch and (url := sampler.next_url()) is not None:
        urls.append(url)
    return urls


def crawl(sampler: SourceSampler, site: Site, redirects: Mapping[str, str] | None = None,
          failing: frozenset[str] = frozenset(), batch: int = 1) -> tuple[list[str], Sample]:
    """Drive ``sampler`` over an in-memory site the way the learner will; the URLs handed out, and the sample.

    A URL missing from ``site`` (after its redirect) fails, like one in ``failing``."""
    redirects = redirects or {}
    drawn: list[str] = []
    while urls := draw_batch(sampler, batch):
        for url in urls:
            drawn.append(url)
            final = redirects.get(url, url)
            if url in failing or final not in site:
                sampler.failed(url)
            else:
                sampler.record(url, final, site[final])
    return drawn, sampler.sample()


def test_one_link_per_group_and_all_links_kept() -> None:  # AT-09
    groups = {
        "/html/body/ul/li/a[title]": [f"http://s.test/t/{i}" for i in range(10)],
        "/html/body/div/a[page]": [f"http://s.test/p/{i}" for i in range(3)],
        "/html/body/a[]": ["http://s.test/help"],
    }
    sampler = SourceSampler(["http://s.test/"], size=10, rng=random.Random(7))
    assert sampler.next_url() == "http://s.test/"
    sampler.record("http://s.test/", "http://s.test/", groups)
    queued = sampler.queued
    assert len(queued) == 3
    assert [url in urls for url, urls in zip(queued, groups.values())] == [True, True, True]
    assert queued[2] == "http://s.test/help"
    links = sampler.sample().links["http://s.test/"]
    assert sum(len(urls) for urls in links.values()) == 14
    assert links == {apath: tuple(urls) for apath, urls in groups.items()}


def test_duplicates_are_kept_in_u() -> None:
    sampler = SourceSampler(["http://s.test/"], size=5)
    sampler.next_url()
    sampler.record("http://s.test/", "http://s.test/", {"a[]": ["http://s.test/x", "http://s.test/x"]})
    assert sampler.sample().links["http://s.test/"]["a[]"] == ("http://s.test/x", "http://s.test/x")
    assert sampler.queued == ("http://s.test/x",)


def chain_site(n: int) -> dict[str, dict[str, list[str]]]:
    """Page i links back home and on to i+1 and i+2, under three Apaths."""
    return {f"u{i}": {"home": ["u0"], "next": [f"u{i + 1}"], "skip": [f"u{i + 2}"]} for i in range(n)}


def test_never_more_than_size_pages() -> None:  # AT-09
    _, result = crawl(SourceSampler(["u0"], size=5), chain_site(50))
    assert len(result.pages) == 5


def test_never_fetched_twice_and_fifo() -> None:  # AT-09
    # one link per group: no randomness, so the order is exactly the FIFO order of the picks
    drawn, _ = crawl(SourceSampler(["u0"], size=100), chain_site(6))
    assert drawn == ["u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7"]


def test_same_seed_gives_the_same_sample() -> None:  # AT-09
    site = {f"u{i}": {"list": [f"u{j}" for j in range(60) if j != i], "self": [f"u{i}"]} for i in range(60)}
    runs = [crawl(SourceSampler(["u0"], size=20, rng=seed), site)[1] for seed in (3, 3, 4)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_a_random_instance_or_a_seed() -> None:
    site = {f"u{i}": {"list": [f"u{j}" for j in range(30)]} for i in range(30)}
    by_seed = crawl(SourceSampler(["u0"], size=10, rng=11), site)
    by_rng = crawl(SourceSampler(["u0"], size=10, rng=random.Random(11)), site)
    assert by_seed == by_rng


def test_the_pick_is_among_unseen_links_only() -> None:  # A9
    sampler = SourceSampler(["a", "b"], size=5, rng=0)
    sampler.next_url()
    # every link but "c" is already seen: the pick cannot fall on a seen link, so it is "c" whatever the seed
    sampler.record("a", "a", {"x": ["a", "b", "a", "c", "b"]})
    assert sampler.queued == ("b", "c")


def test_a_group_of_seen_links_adds_nothing() -> None:
    sampler = SourceSampler(["a", "b"], size=5)
    sampler.next_url()
    sampler.record("a", "a", {"x": ["a", "b"], "y": []})
    assert sampler.queued == ("b",)


def test_one_url_in_two_groups_is_picked_once() -> None:
    sampler = SourceSampler(["a"], size=5)
    sampler.next_url()
    sampler.record("a", "a", {"x": ["b"], "y": ["b"], "z": ["c"]})
    assert sampler.queued == ("b", "c")


def test_a_failure_is_not_counted_adds_nothing_and_is_not_retried() -> None:
    site = {"a": {"x": ["b", "c"], "y": ["d"]}, "c": {"x": ["b"]}, "d": {}}
    drawn, result = crawl(SourceSampler(["a"], size=10, mode="bfs"), site, failing=frozenset({"b"}))
    assert drawn == ["a", "b", "c", "d"]
    assert result.pages == ("a", "c", "d")
    assert "b" not in result.final_of


def test_failures_leave_room_for_more_pages() -> None:
    site = {f"u{i}": {"next": [f"u{i + 1}"]} for i in range(20)}
    _, result = crawl(SourceSampler(["u0"], size=4), site, failing=frozenset({"u1", "u3"}))
    assert result.pages == ("u0",)  # u1 fails and nothing else leads on
    site = {f"u{i}": {"next": [f"u{i + 1}"], "skip": [f"u{i + 2}"]} for i in range(20)}
    drawn, result = crawl(SourceSampler(["u0"], size=4), site, failing=frozenset({"u1", "u3"}))
    assert result.pages == ("u0", "u2", "u4", "u5")
    assert drawn == ["u0", "u1", "u2", "u3", "u4", "u5"]


def test_pending_fetches_count_against_the_size() -> None:
    sampler = SourceSampler(["a", "b", "c", "d"], size=2)
    assert [sampler.next_url(), sampler.next_url(), sampler.next_url()] == ["a", "b", None]
    sampler.failed("a")
    assert sampler.next_url() == "c"
    sampler.record("b", "b", {})
    sampler.record("c", "c", {})
    assert sampler.next_url() is None
    assert sampler.sample().pages == ("b", "c")


def test_a_redirect_target_counts_as_seen() -> None:
    sampler = SourceSampler(["a"], size=10)
    sampler.next_url()
    sampler.record("a", "a2", {"x": ["a2"], "y": ["a"], "z": ["b"]})
    assert sampler.queued == ("b",)
    result = sampler.sample()
    assert result.pages == ("a2",)
    assert result.final_of == {"a": "a2"}
    assert set(result.links) == {"a2"}


def test_a_queued_url_reached_by_a_redirect_is_not_fetched_again() -> None:
    site = {"a": {"x": ["b"], "y": ["c"]}, "c": {"x": ["d"]}, "d": {}}
    drawn, result = crawl(SourceSampler(["a"], size=10), site, redirects={"b": "c"})
    assert drawn == ["a", "b", "d"]
    assert result.pages == ("a", "c", "d")
    assert result.final_of == {"a": "a", "b": "c", "d": "d"}


def test_a_redirect_onto_a_page_in_d_is_not_a_new_page() -> None:
    site = {"a": {"x": ["b"], "y": ["c"]}, "c": {"x": ["e"]}, "e": {}}
    drawn, result = crawl(SourceSampler(["a"], size=10), site, redirects={"b": "a"})
    assert drawn == ["a", "b", "c", "e"]
    assert result.pages == ("a", "c", "e")
    assert result.final_of["b"] == "a"  # still labels the links to b


def test_two_pending_fetches_landing_on_one_page() -> None:
    sampler = SourceSampler(["a", "b"], size=10)
    assert [sampler.next_url(), sampler.next_url()] == ["a", "b"]
    sampler.record("a", "b", {"x": ["c"]})
    sampler.record("b", "b", {"x": ["d"]})
    result = sampler.sample()
    assert result.pages == ("b",)
    assert result.links == {"b": {"x": ("c",)}}
    assert result.final_of == {"a": "b", "b": "b"}


def test_bfs_enqueues_every_unseen_link_in_order() -> None:
    sampler = SourceSampler(["a"], size=10, mode="bfs")
    sampler.next_url()
    sampler.record("a", "a", {"x": ["c", "a", "b", "c"], "y": ["d", "b"]})
    assert sampler.queued == ("c", "b", "d")
    assert sampler.sample().links["a"] == {"x": ("c", "a", "b", "c"), "y": ("d", "b")}


def test_the_source_sample_is_cheaper_than_bfs_on_one_page() -> None:
    groups = {"big": [f"t{i}" for i in range(10)], "small": ["s"]}
    queues = []
    for mode in ("source", "bfs"):
        sampler = SourceSampler(["home"], size=5, mode=mode)
        sampler.next_url()
        sampler.record("home", "home", groups)
        queues.append(len(sampler.queued))
    assert queues == [2, 11]


def test_entries_are_deduplicated_and_queued_first() -> None:
    sampler = SourceSampler(["a", "b", "a"], size=5)
    assert sampler.queued == ("a", "b")


def test_reporting_an_unknown_url_is_refused() -> None:
    sampler = SourceSampler(["a"], size=5)
    with pytest.raises(ValueError, match="not handed out"):
        sampler.record("a", "a", {})
    sampler.next_url()
    sampler.failed("a")
    with pytest.raises(ValueError, match="not handed out"):
        sampler.failed("a")


@pytest.mark.parametrize(("size", "mode", "match"), [(0, "source", "size"), (5, "dfs", "mode")])
def test_bad_parameters_are_refused(size: int, mode: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SourceSampler(["a"], size=size, mode=mode)  # type: ignore[arg-type]


# -- invariants over random small sites ----------------------------------------------------------


@st.composite
def sites(draw: st.DrawFn) -> tuple[dict[str, dict[str, list[str]]], dict[str, str], frozenset[str], int, int]:
    """A random site: pages with up to four link groups, some redirects, some failing URLs
    (those without a page too), a sample size and a batch size."""
    names = [f"u{i}" for i in range(draw(st.integers(2, 25)))]
    pages = draw(st.lists(st.sampled_from(names), unique=True, min_size=1))
    links = st.lists(st.sampled_from(names), max_size=8)
    site = {page: draw(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), links, max_size=4)) for page in pages}
    redirects = draw(st.dictionaries(st.sampled_from(names), st.sampled_from(names), max_size=4))
    failing = frozenset(draw(st.lists(st.sampled_from(names), max_size=3)))
    return site, redirects, failing, draw(st.integers(1, len(names))), draw(st.integers(1, 3))


def check_picks(groups: Groups, seen: set[str], added: Sequence[str], mode: SamplingMode) -> None:
    """Walking the groups in order, each with an unseen link gave the next added URL: one of those
    links (SOUrCe) or all of them, in document order (BFS); nothing else was added."""
    rest = list(added)
    seen = set(seen)
    for urls in groups.values():
        unseen = list(dict.fromkeys(url for url in urls if url not in seen))
        if not unseen:
            continue
        if mode == "source":
            pick = rest.pop(0)
            assert pick in unseen
            seen.add(pick)
        else:
            assert rest[:len(unseen)] == unseen
            del rest[:len(unseen)]
            seen.update(unseen)
    assert not rest


def checked_crawl(site: Site, redirects: Mapping[str, str], failing: frozenset[str], size: int, batch: int,
                  entries: Sequence[str], seed: int, mode: SamplingMode) -> Sample:
    """``crawl`` with the queue checked at every step: a draw takes its head (less the pages a
    redirect already fetched), a record only appends to its tail, as ``check_picks`` says."""
    sampler = SourceSampler(entries, size=size, rng=seed, mode=mode)
    seen = set(entries)
    pages: list[str] = []
    drawn: list[str] = []
    while True:
        urls: list[str] = []
        while len(urls) < batch:
            before = sampler.queued
            url = sampler.next_url()
            if url is None:
                break
            head = [queued for queued in before if queued not in pages]
            assert url == head[0]
            assert sampler.queued == before[before.index(url) + 1:]
            urls.append(url)
        if not urls:
            break
        assert not set(urls) & set(drawn)
        drawn.extend(urls)
        for url in urls:
            before = sampler.queued
            final = redirects.get(url, url)
            if url in failing or final not in site:
                sampler.failed(url)
                assert sampler.queued == before
                continue
            sampler.record(url, final, site[final])
            added = sampler.queued[len(before):]
            assert sampler.queued[:len(before)] == before
            if final in pages:  # a redirect onto a page in D: nothing new
                assert not added
                continue
            pages.append(final)
            seen.add(final)
            check_picks(site[final], seen, added, mode)
            seen.update(added)
    assert len(pages) == size or not sampler.queued
    result = sampler.sample()
    assert result.pages == tuple(pages)
    assert len(pages) <= size
    assert len(set(pages)) == len(pages)
    assert set(result.final_of) <= set(drawn)
    assert set(result.final_of.values()) == set(pages) == set(result.links)
    return result


@settings(max_examples=300, deadline=None)
@given(sites(), st.lists(st.sampled_from(["u0", "u1"]), min_size=1, max_size=2), st.integers(0, 2**32),
       st.sampled_from(["source", "bfs"]))
def test_invariants_on_random_sites(case: tuple[dict[str, dict[str, list[str]]], dict[str, str], frozenset[str],
                                                int, int],
                                    entries: list[str], seed: int, mode: SamplingMode) -> None:
    site, redirects, failing, size, batch = case
    first = checked_crawl(site, redirects, failing, size, batch, entries, seed, mode)
    again = checked_crawl(site, redirects, failing, size, batch, entries, seed, mode)
    assert first == again
