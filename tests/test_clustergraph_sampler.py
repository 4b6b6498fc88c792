"""The random webpage sampler (Alg. 1, digest §2.2): ξ, AT-29's invariants after every step, re-seeding."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier.clustergraph.sampler import Sampler, SamplerState, xi_for


def test_xi_default_alpha_gives_two_over_k() -> None:
    assert xi_for(92) == pytest.approx(2 / 92)
    assert round(xi_for(92), 4) == 0.0217
    assert xi_for(10) == pytest.approx(0.2)


def test_xi_formula_and_clamp() -> None:
    assert xi_for(10, alpha=3) == pytest.approx(0.1 + 0.9 / 3)
    assert xi_for(10, alpha=1) == 1.0
    assert xi_for(10, alpha=10**9) == pytest.approx(0.1)  # never below 1/K̄
    assert xi_for(1.0) == xi_for(0.0) == xi_for(1.4) == 1.0  # no admissible α: no withdrawals


def test_invalid_xi_is_refused() -> None:
    with pytest.raises(ValueError, match="xi"):
        Sampler(["a"], xi=0.0)


@st.composite
def link_graphs(draw: st.DrawFn) -> tuple[dict[str, list[str]], list[str], set[str], float, int, int]:
    size = draw(st.integers(2, 40))
    names = [f"u{i}" for i in range(size)]
    links = {name: draw(st.lists(st.sampled_from(names), max_size=12)) for name in names}
    seeds = draw(st.lists(st.sampled_from(names), min_size=1, max_size=4))
    failing = set(draw(st.lists(st.sampled_from(names), max_size=3)))
    xi = draw(st.sampled_from([1.0, 0.5, 0.2, 0.1, 0.05]) | st.floats(0.01, 1.0))
    return links, seeds, failing, xi, draw(st.integers(1, size)), draw(st.integers(0, 2**32))


def check_state(state: SamplerState, sampler: Sampler) -> None:
    assert np.allclose(state.s + state.r, 1.0, rtol=0, atol=1e-12)
    assert np.allclose(state.p, sampler.xi - state.s, rtol=0, atol=1e-9)
    assert (state.p > 0).all()
    queued = set(state.urls)
    assert len(queued) == len(state.urls)
    assert not queued & set(sampler.visited)
    assert not any(sampler.is_withdrawn(url) for url in queued)
    assert len(set(sampler.visited)) == len(sampler.visited)


def check_round(before: SamplerState, after: SamplerState, drawn: str, sampler: Sampler, withdrawn: int) -> None:
    """The round's update (p' = p(1 − r/P), s' = s + rq, r' = r(1 − q)) and the withdrawal rules."""
    total = before.total
    position = {url: i for i, url in enumerate(after.urls)}
    gone = 0
    for i, url in enumerate(before.urls):
        if url == drawn:
            continue
        p, r = before.p[i], before.r[i]
        if url not in position:
            gone += 1
            assert sampler.is_withdrawn(url)
            assert r >= total  # p' = p(1 − r/P) ≤ 0
            continue
        j = position[url]
        q = p / total
        assert after.p[j] == pytest.approx(p * (1 - r / total), rel=1e-9, abs=1e-15)
        assert after.s[j] == pytest.approx(before.s[i] + r * q, rel=1e-9, abs=1e-15)
        assert after.r[j] == pytest.approx(r * (1 - q), rel=1e-9, abs=1e-15)
    assert sampler.withdrawn - withdrawn == gone
    if total > 1:
        assert gone == 0
    if total <= 1 - sampler.xi - 1e-12:
        assert not after.urls
    if sampler.xi == 1.0:
        assert sampler.withdrawn == 0


@settings(max_examples=200, deadline=None)
@given(link_graphs())
def test_at29_invariants_after_every_step(case: tuple[dict[str, list[str]], list[str], set[str], float, int, int]) -> None:
    links, seeds, failing, xi, target, seed = case
    sampler = Sampler(seeds, xi, seed=seed)
    ever_withdrawn: set[str] = set()
    check_state(sampler.state(), sampler)
    while sampler.sampled < target:
        before, withdrawn, reseeds = sampler.state(), sampler.withdrawn, sampler.reseeds
        url = sampler.draw()
        if url is None:
            assert not before.urls  # U and W are both empty: nothing left to sample
            break
        after = sampler.state()
        if sampler.reseeds > reseeds:
            assert not before.urls
            ever_withdrawn.clear()
        else:
            check_round(before, after, url, sampler, withdrawn)
        assert not set(after.urls) & ever_withdrawn  # withdrawn URLs never re-enter
        ever_withdrawn |= {u for u in before.urls if sampler.is_withdrawn(u)}
        sampler.record(url, None if url in failing else links[url])
        check_state(sampler.state(), sampler)
        assert not set(sampler.state().urls) & ever_withdrawn
    assert sampler.sampled <= target
    assert sampler.sampled == target or sampler.draw() is None


def test_the_draw_follows_p() -> None:
    # ξ = 1, after drawing a: p_b = 1·(1 − 1/2) = 0.5 and the new c has p = 1, so c is drawn 2/3 of the time
    hits = 0
    for seed in range(3000):
        sampler = Sampler(["a", "b"], xi=1.0, seed=seed)
        first = sampler.draw()
        assert first is not None
        sampler.record(first, ["c"])
        hits += sampler.draw() == "c"
    assert 0.62 < hits / 3000 < 0.71


def test_regimes_on_a_k20_site() -> None:
    """ξ·K > 1: the queue grows and nothing is withdrawn; ξ·K < 1: the queue collapses into W."""
    def run(xi: float) -> Sampler:
        sampler = Sampler(["p0"], xi=xi, seed=7)
        for _ in range(200):
            url = sampler.draw()
            assert url is not None
            sampler.record(url, [f"{url}/{i}" for i in range(20)])
        return sampler

    growing, collapsing = run(2 / 20), run(0.5 / 20)
    assert growing.withdrawn == 0 and growing.queued > 1000
    assert collapsing.withdrawn > 1000 and collapsing.queued < 100
    assert growing.sampled == collapsing.sampled == 200


def test_a_failed_fetch_is_visited_but_not_sampled() -> None:
    sampler = Sampler(["a"], xi=0.5)
    assert sampler.draw() == "a"
    sampler.record("a", None)
    assert (sampler.sampled, sampler.visited, sampler.queued) == (0, ["a"], 0)
    assert sampler.draw() is None


def test_record_needs_a_drawn_url() -> None:
    sampler = Sampler(["a"], xi=0.5)
    with pytest.raises(ValueError, match="not drawn"):
        sampler.record("a", [])
    sampler.draw()
    sampler.record("a", ["b", "b", "a"])
    assert sampler.state().urls == ("b",)
    with pytest.raises(ValueError, match="recorded already"):
        sampler.record("a", [])


def test_an_empty_queue_is_reseeded_from_w() -> None:
    sampler = Sampler(["a", "b", "c"], xi=0.1, seed=1)
    first = sampler.draw()  # P = 0.3 ≤ 1 − ξ: the other two are withdrawn
    assert first is not None and sampler.withdrawn == 2 and sampler.queued == 0
    sampler.record(first, [])
    second = sampler.draw()  # re-seeded with the two; P = 0.2 withdraws the other one again
    assert sampler.reseeds == 1 and second is not None and second != first
    assert sampler.withdrawn == 3 and not sampler.is_withdrawn(second)
    sampler.record(second, [])
    third = sampler.draw()
    assert sampler.reseeds == 2 and sorted(sampler.visited) == ["a", "b", "c"]
    assert third is not None and "reseeds=2" in repr(sampler)
    sampler.record(third, None)
    assert sampler.draw() is None and sampler.sampled == 2


def test_a_batch_may_be_drawn_before_it_is_recorded() -> None:
    sampler = Sampler(["a", "b", "c", "d"], xi=1.0, seed=3)
    batch = [sampler.draw() for _ in range(3)]
    assert len(set(batch)) == 3 and None not in batch
    for url in batch:
        assert url is not None
        sampler.record(url, ["e"])
    assert sampler.sampled == 3 and set(sampler.state().urls) == {"a", "b", "c", "d", "e"} - set(batch)


def test_the_same_seed_gives_the_same_sample() -> None:
    def run(seed: int) -> list[str]:
        sampler = Sampler(["p"], xi=0.2, seed=seed)
        while sampler.sampled < 50:
            url = sampler.draw()
            assert url is not None
            sampler.record(url, [f"{url}{i}" for i in range(8)])
        return sampler.visited

    assert run(5) == run(5) != run(6)
