"""The crawl-policy seam (frontier/policy.py): the registry, options checked like config keys, the
hooks' defaults, what the frontier asks of the engine for a policy, and the example policy."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from frontier import policy as seam
from frontier.frontier import Frontier
from frontier.page import FetchedPage, LinkContext
from frontier.policies.breadth_first import BreadthFirst
from frontier.policies.shallow_first import ShallowFirst, depth
from frontier.policy import CheckpointMismatch, CrawlPolicy, PolicyError, Revisit, build, check, known
from frontier.settings import FrontierSettings
from tests.test_frontier import FrontierHarness


def test_the_shipped_policies_are_found_by_name() -> None:
    assert {"breadth-first", "shallow-first"} <= set(known())
    assert type(build("breadth-first", None, {})) is BreadthFirst
    shallow = build("shallow-first", Path("ignored"), {"max_depth": 3})
    assert isinstance(shallow, ShallowFirst) and shallow.max_depth == 3 and shallow.model == Path("ignored")


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(PolicyError) as info:
        check("nosuch", {})
    assert info.value.key == "name"
    assert info.value.problem.startswith("unknown policy 'nosuch'; known: ")
    assert "breadth-first" in info.value.problem and "shallow-first" in info.value.problem


class Tuned(CrawlPolicy):
    """A policy with one option of each kind."""

    name = "test-tuned"

    @dataclass(frozen=True, slots=True)
    class Options:
        rate: float = 1.0
        depth: int = 2
        strict: bool = False
        label: str = "x"
        weights: list[float] = field(default_factory=list)
        tags: list[str] = field(default_factory=list)

    def __init__(self, options: Tuned.Options, model: Path | None) -> None:
        super().__init__(options, model)
        self.tuned = options


class Needy(CrawlPolicy):
    name = "test-needy"

    @dataclass(frozen=True, slots=True)
    class Options:
        target: str


def test_a_policy_is_looked_for_in_its_own_module_first() -> None:
    """Every process of a crawl checks its policy: naming one must not import every policy module
    (the search imports the freshness and SOUrCe policies with numpy, ~0.1 CPU-s)."""
    probe = ("import sys; from frontier.policy import check; check('shallow-first', {}); "
             "print(*sorted(m for m in sys.modules if m.startswith('frontier.policies.')))")
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=Path(__file__).parent.parent, capture_output=True,
                            text=True, check=True)
    assert loaded.stdout.split() == ["frontier.policies.shallow_first"]


def test_options_are_converted_and_defaulted() -> None:
    policy = build("test-tuned", None, {"rate": 3, "weights": [1, 2.5], "tags": ["a"]})
    assert isinstance(policy, Tuned)
    assert policy.tuned == Tuned.Options(rate=3.0, depth=2, weights=[1.0, 2.5], tags=["a"])
    assert type(policy.tuned.rate) is float and all(type(w) is float for w in policy.tuned.weights)


@pytest.mark.parametrize(
    ("options", "key", "problem"),
    [
        ({"rate": "fast"}, "rate", "expected a number, got 'fast'"),
        ({"rate": True}, "rate", "expected a number"),
        ({"depth": 2.5}, "depth", "expected an integer"),
        ({"depth": False}, "depth", "expected an integer"),
        ({"strict": 1}, "strict", "expected true or false"),
        ({"label": 5}, "label", "expected a string"),
        ({"weights": [1, "x"]}, "weights", "expected a list of numbers"),
        ({"tags": "a"}, "tags", "expected a list of strings"),
        ({"speed": 1}, "speed", "unknown key for policy 'test-tuned' (known: depth, label, rate, strict, tags, weights)"),
    ],
)
def test_a_bad_option_names_its_key(options: dict[str, object], key: str, problem: str) -> None:
    for attempt in (lambda: check("test-tuned", options), lambda: build("test-tuned", None, options)):
        with pytest.raises(PolicyError) as info:
            attempt()
        assert info.value.key == key and problem in info.value.problem


def test_a_key_without_default_is_required_and_breadth_first_takes_none() -> None:
    with pytest.raises(PolicyError, match="target: policy 'test-needy' needs this key"):
        check("test-needy", {})
    check("test-needy", {"target": "forum"})
    with pytest.raises(PolicyError, match="has no keys of its own"):
        check("breadth-first", {"max_depth": 1})


def test_check_reads_no_model(tmp_path: Path) -> None:
    class Reader(CrawlPolicy):
        name = "test-reader"

        def __init__(self, options: object, model: Path | None) -> None:
            super().__init__(options, model)
            assert model is not None
            self.table = model.read_text()

    check("test-reader", {})  # the model does not exist: only build reads it
    (tmp_path / "model.txt").write_text("learned")
    assert build("test-reader", tmp_path / "model.txt", {}).table == "learned"  # type: ignore[attr-defined]


def test_a_name_taken_by_another_module_is_refused() -> None:
    with pytest.raises(TypeError, match="taken by frontier.policies.shallow_first.ShallowFirst"):
        type("Impostor", (CrawlPolicy,), {"name": "shallow-first", "__module__": "elsewhere"})


def test_a_policy_joins_from_an_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another package's policy: a new module and an entry point, no edit of the seam or the engine."""
    (tmp_path / "outside_policy.py").write_text(
        "from frontier.policy import CrawlPolicy\n\n"
        "class Outside(CrawlPolicy):\n"
        "    name = 'test-outside'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = importlib.metadata.EntryPoint("outside", "outside_policy:Outside", seam.ENTRY_POINTS)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group: [entry] if group == seam.ENTRY_POINTS else [])
    monkeypatch.setattr(seam, "_searched", False)
    try:
        assert "test-outside" in known()
        assert type(build("test-outside", None, {})).__name__ == "Outside"
    finally:
        seam._registry.pop("test-outside", None)
        sys.modules.pop("outside_policy", None)


def test_the_defaults_do_nothing() -> None:
    policy = CrawlPolicy(None, None)
    page = FetchedPage("http://a.test/", 200, {}, b"", fetched_at=0.0)
    assert policy.accept_link("http://a.test/x", None, None) is None
    assert policy.priority("http://a.test/x", None, None) == 0
    assert policy.lane_rank("http://a.test", 7) == 7.0
    assert list(policy.on_fetched(page, 1.0)) == [] and list(policy.on_failed("http://a.test/", "connect", 1.0, True)) == []
    assert policy.state() == b""
    policy.restore(b"")
    assert policy.counters() == {} and not policy.judges_new_links_only


class Hears(CrawlPolicy):
    """Hears of failures only, and asks for each failed URL again at ``now`` + 100."""

    def __init__(self) -> None:
        super().__init__(None, None)
        self.heard: list[tuple[str, str, float, bool]] = []

    def on_failed(self, url: str, error: str, now: float, final: bool) -> list[Revisit]:
        self.heard.append((url, error, now, final))
        return [Revisit(url, now + 100)] if final else []


def test_the_engine_builds_nothing_for_breadth_first(tmp_path: Path) -> None:
    f = Frontier(tmp_path / "a", FrontierSettings(fsync=False))
    assert (f.wants_pages, f.wants_context, f.wants_document, f.ranked) == (False, False, False, False)
    f.close()
    g = Frontier(tmp_path / "b", FrontierSettings(fsync=False), policy=Hears())
    assert g.wants_pages and not g.ranked
    g.close()
    h = Frontier(tmp_path / "c", FrontierSettings(fsync=False), policy=build("shallow-first", None, {}))
    assert h.ranked and not h.wants_pages
    h.close()


def test_failures_reach_the_policy_with_final_when_retries_ran_out(tmp_path: Path) -> None:
    policy = Hears()
    harness = FrontierHarness(tmp_path, policy=policy, max_fetch_retries=1)
    f = harness.frontier
    f.discover(["http://a.test/x"])
    f.flush()
    for new_host in f.distribute(0.0):
        f.resolved(new_host, "10.0.0.1")
    for attempt, now in enumerate((0.0, 10.0)):
        vs = f.acquire(now)
        assert vs is not None
        url = f.next_url(vs)
        f.failed(vs, url, now, backoff=1.0, breaks_host=False, error="connect")
    assert policy.heard == [("http://a.test/x", "connect", 0.0, False), ("http://a.test/x", "connect", 10.0, True)]
    assert f.statistics().drops["fetch_failed"] == 1
    assert f.next_revisit() == 110.0  # the revisit on_failed asked for
    f.close()


class Learner(CrawlPolicy):
    """Counts the pages it saw; the count is its state."""

    name = "test-learner"

    def __init__(self, options: object, model: Path | None) -> None:
        super().__init__(options, model)
        self.seen = 0

    def on_fetched(self, page: FetchedPage, now: float) -> list[Revisit]:
        self.seen += 1
        return []

    def state(self) -> bytes:
        return str(self.seen).encode()

    def restore(self, state: bytes) -> None:
        self.seen = int(state)

    def counters(self) -> dict[str, dict[str, int]]:
        return {"pages": {"seen": self.seen}}


def test_the_policy_state_is_in_the_checkpoint(tmp_path: Path) -> None:
    f = Frontier(tmp_path, FrontierSettings(fsync=False), policy=build("test-learner", None, {}))
    for n in range(3):
        f.fetched(FetchedPage(f"http://a.test/{n}", 200, {}, b"", fetched_at=0.0), float(n))
    f.discover(["http://a.test/1", "http://a.test/1"])
    assert f.statistics().policy == {"pages": {"seen": 3}}
    f.checkpoint(5.0, {})
    f.close()
    resumed = Learner(None, None)
    g = Frontier(tmp_path, FrontierSettings(fsync=False), policy=resumed)
    g.restore(7.0)
    assert resumed.seen == 3
    assert (g.statistics().policy, g.statistics().dup_lookups, g.statistics().cache_hits) == ({"pages": {"seen": 3}}, 2, 1)
    g.close()


def test_a_checkpoint_resumes_only_with_its_own_policy(tmp_path: Path) -> None:
    f = Frontier(tmp_path, FrontierSettings(fsync=False))
    f.checkpoint(0.0, {})
    f.close()
    with pytest.raises(CheckpointMismatch, match="'breadth-first', not 'shallow-first'"):
        Frontier(tmp_path, FrontierSettings(fsync=False), policy=build("shallow-first", None, {}))


# -- the example policy ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [("http://a.test", 0), ("http://a.test/", 0), ("http://a.test/a", 1), ("http://a.test/a/", 1),
     ("http://a.test/a/b/c.html", 3), ("http://a.test/a//b?x=/1/2/3", 2)],
)
def test_depth_counts_path_segments(url: str, expected: int) -> None:
    assert depth(url) == expected


def test_shallow_first_ranks_by_depth_and_drops_deeper_than_max_depth() -> None:
    policy = build("shallow-first", None, {"max_depth": 2})
    context = LinkContext("a", "html/body/a", "x")
    assert policy.priority("http://a.test/a/b", "http://a.test/", context) == 2
    assert policy.accept_link("http://a.test/a/b", None, None) is None
    assert policy.accept_link("http://a.test/a/b/c", None, None) == "too_deep"
    assert build("shallow-first", None, {}).accept_link("http://a.test/" + "a/" * 50, None, None) is None
    assert policy.lane_rank("http://a.test", 3) < policy.lane_rank("http://a.test", 4)
