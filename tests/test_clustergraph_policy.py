"""The clustergraph crawl policy (frontier/policies/clustergraph.py) and the seams it needs.

* the frontier's dg order (``judges_new_links_only``) with a fake policy: a link refused under
  one parent is not lost, and the duplicate-lookup and filter-call counts of d, dg and gd
  satisfy AT-27's equalities on a small static site, where dg and gd fetch the same URLs;
* the policy on a hand-made model (AT-22's final graph): AT-26's cases through ``accept_link``,
  its options and model errors, its counters in ``state()``, stats.json and ``/metrics``;
* an in-process crawl of a one-host in-vitro web whose model keeps no edge to one path
  pattern: the server's log shows no request to it.
"""

from __future__ import annotations

from itertools import product
from pathlib import Path

import orjson
import pytest
import uvloop

from bench.invitro import WebParams
from engine import config as configuration
from engine.agent import Agent
from engine.metrics import Exporter
from frontier.clustergraph.model import ClusterInfo, EdgeInfo, Model, Params
from frontier.clustergraph.patterns import Itemsets, pattern_of
from frontier.clustergraph.urls import normalise
from frontier.frontier import Frontier
from frontier.page import FetchedPage, LinkContext
from frontier.policies.clustergraph import ClusterGraph
from frontier.policy import CrawlPolicy, PolicyError, build, check
from tests.invitro_harness import USER_AGENT, WebThread, page_requests
from tests.test_clustergraph_model import NAMES, at22_model
from tests.test_frontier import FrontierHarness

# -- the frontier's dg order, with a fake policy ----------------------------------------------------

SITE = "http://s.test"


def kind(url: str) -> str:
    """The first path segment of a URL of SITE: its 'cluster' here (``""`` for the home page)."""
    return url[len(SITE) + 1:].partition("/")[0]


class EdgeFilter(CrawlPolicy):
    """Keeps a link only along an allowed (parent kind, link kind) edge; counts its calls."""

    def __init__(self, edges: set[tuple[str, str]], *, dg: bool) -> None:
        super().__init__(None, None)
        self.edges = edges
        self.judges_new_links_only = dg
        self.calls = 0

    def accept_link(self, url: str, parent: str | None, context: LinkContext | None) -> str | None:
        self.calls += 1
        return None if parent is None or (kind(parent), kind(url)) in self.edges else "no_edge"


def test_in_dg_a_link_refused_under_one_parent_is_accepted_under_another(tmp_path: Path) -> None:
    policy = EdgeFilter({("a", "c")}, dg=True)
    f = FrontierHarness(tmp_path, policy=policy).frontier
    link = f"{SITE}/c/1"
    assert f.discover([link], f"{SITE}/b/1") == 0  # no b→c edge: refused, and not remembered
    assert f.discover([link], f"{SITE}/a/1") == 1  # a→c: accepted now
    assert f.discover([link], f"{SITE}/a/2") == 0  # a duplicate: the policy is not asked again
    s = f.statistics()
    assert (s.dup_lookups, s.cache_hits, policy.calls, s.drops) == (3, 1, 2, {"no_edge": 1})
    assert s.discovered == 1
    f.close()


# each page of a static site and its links, in page order; every page links home and to itself
PAGES: dict[str, list[str]] = {
    "/": ["/a/1", "/a/2", "/b/1", "/x/1"],
    "/a/1": ["/", "/a/1", "/a/2", "/b/1", "/c/1"],
    "/a/2": ["/", "/a/1", "/b/2", "/c/2", "/c/1"],
    "/b/1": ["/", "/c/3", "/a/3", "/b/2"],
    "/b/2": ["/", "/b/1", "/c/3", "/x/2"],
    "/a/3": ["/", "/c/3", "/a/2"],
    "/c/1": ["/", "/x/1", "/a/1"],
    "/c/2": ["/", "/c/1"],
    "/c/3": ["/"],
    "/x/1": ["/", "/c/2"],
    "/x/2": ["/"],
}
# b→c is not an edge: /c/3, first linked from /b/1, must still be fetched through /a/3 (dg as gd)
EDGES = {("", "a"), ("", "b"), ("a", "a"), ("a", "b"), ("a", "c"), ("b", "a"), ("b", "b"), ("c", "a"),
         ("c", "c"), ("a", ""), ("b", ""), ("c", "")}


def crawl_site(directory: Path, policy: CrawlPolicy | None) -> tuple[list[str], Frontier, int]:
    """Fetch the static site from its home page in the frontier's order; (paths fetched, frontier, L:
    the URLs offered to ``discover``, the seed's included)."""
    harness = FrontierHarness(directory, policy=policy, url_cache_bytes=1 << 16)
    f = harness.frontier
    f.discover([f"{SITE}/"])
    fetched: list[str] = []
    links = 1
    for _ in range(10_000):
        if f.wants_flush(harness.now):
            f.flush()
        for new_host in f.distribute(harness.now):
            f.resolved(new_host, "10.0.0.1")
        vs = f.acquire(harness.now)
        if vs is None:
            deadline = f.next_deadline()
            if deadline is None and f.idle():
                return fetched, f, links
            harness.now = max(harness.now + 0.001, deadline or 0.0)
            continue
        url = f.next_url(vs)
        path = url[len(SITE):]
        fetched.append(path)
        outlinks = [SITE + link for link in PAGES[path]]
        links += len(outlinks)
        f.discover(outlinks, url)
        f.release(vs, harness.now)
    raise AssertionError("the crawl never ended")


def test_d_dg_and_gd_count_lookups_and_filter_calls_as_at27_says(tmp_path: Path) -> None:
    d_order, d, d_links = crawl_site(tmp_path / "d", None)
    dg_policy, gd_policy = EdgeFilter(EDGES, dg=True), EdgeFilter(EDGES, dg=False)
    dg_order, dg, dg_links = crawl_site(tmp_path / "dg", dg_policy)
    gd_order, gd, gd_links = crawl_site(tmp_path / "gd", gd_policy)

    assert sorted(d_order) == sorted(PAGES)
    assert dg_order == gd_order and "/c/3" in gd_order, "dg and gd fetch the same URLs in the same order"
    assert not any(path.startswith("/x/") for path in gd_order)
    ds, dgs, gds = d.statistics(), dg.statistics(), gd.statistics()
    assert ds.dup_lookups == d_links  # d.dup = L
    assert dgs.dup_lookups == dg_links  # dg.dup = L
    assert dg_policy.calls == dg_links - dgs.cache_hits  # dg.filter = L_new
    assert gd_policy.calls == gd_links  # gd.filter = L
    assert gds.dup_lookups == gd_links - gds.drops["no_edge"]  # gd.dup = L_pass
    assert dg_policy.calls < gd_policy.calls and gds.dup_lookups < dgs.dup_lookups
    for f in (d, dg, gd):
        f.close()


# -- the policy on AT-22's final graph (nodes HOME, POST, PROF; edges PROF→HOME, HOME→POST, HOME→PROF,
#    POST↺, PROF↺; TAG and TERMS deleted) -------------------------------------------------------------

HOME, POST, PROF = "https://bob.lj.test/", "https://bob.lj.test/1234.html", "https://bob.lj.test/profile"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("model")
    at22_model().save(folder)
    return folder


def clustergraph(model_dir: Path, **options: object) -> ClusterGraph:
    policy = build("clustergraph", model_dir, options)
    assert isinstance(policy, ClusterGraph)
    return policy


def page(url: str, status: int = 200, redirect: str | None = None) -> FetchedPage:
    return FetchedPage(url, status, {}, b"", fetched_at=0.0, redirect=redirect)


def test_at26_through_accept_link(model_dir: Path) -> None:
    policy = clustergraph(model_dir)
    policy.on_fetched(page(HOME), 0.0)
    assert policy.accept_link("https://alice.lj.test/77.html", HOME, None) is None  # HOME→POST
    assert policy.accept_link("https://bob.lj.test/tag/cats", HOME, None) == "cg_deleted"  # rule 1: TAG deleted
    assert policy.accept_link("https://bob.lj.test/foo/bar/baz", HOME, None) == "cg_unmapped"
    assert policy.accept_link("https://www.lj.test/legal/tos", HOME, None) == "cg_deleted"  # TERMS
    policy.on_fetched(page(POST), 1.0)
    assert policy.accept_link("https://bob.lj.test/", POST, None) == "cg_no_edge"  # rule 2: no POST→HOME
    assert policy.accept_link("https://bob.lj.test/1235.html", POST, None) is None  # the kept self-loop
    assert policy.counters() == {
        "cluster_pages": {NAMES["HOME"]: 1, NAMES["POST"]: 1},
        "cluster_links_kept": {NAMES["POST"]: 2},
        "links_dropped": {"cg_deleted": 2, "cg_unmapped": 1, "cg_no_edge": 1},
        "filter_calls": {"gd": 6},
    }


def test_seeds_redirect_targets_and_unmapped_pages_are_unrestricted_sources(model_dir: Path) -> None:
    policy = clustergraph(model_dir)
    assert policy.accept_link("https://bob.lj.test/tag/cats", None, None) is None, "a seed is always taken"
    policy.on_fetched(page(POST, 301, redirect=HOME), 0.0)
    assert policy.accept_link(HOME, POST, None) is None, "a redirect target: rule 1 only"
    assert policy.accept_link("https://alice.lj.test/", POST, None) == "cg_no_edge", "not the target: rule 2"
    policy.on_fetched(page(POST, 301, redirect="https://bob.lj.test/tag/x"), 1.0)
    assert policy.accept_link("https://bob.lj.test/tag/x", POST, None) == "cg_deleted"
    unmapped = "https://bob.lj.test/foo/bar/baz"
    policy.on_fetched(page(unmapped), 2.0)
    assert policy.accept_link(HOME, unmapped, None) is None
    assert policy.accept_link("https://bob.lj.test/tag/x", unmapped, None) == "cg_deleted"
    # links may also come without their page (from another agent): the parent is mapped then
    assert policy.accept_link(HOME, PROF, None) is None and policy.accept_link(HOME, POST, None) == "cg_no_edge"
    assert policy.counters()["cluster_pages"] == {NAMES["POST"]: 2, "(unmapped)": 1}
    assert policy.counters()["filter_calls"] == {"gd": 7}


@pytest.mark.parametrize("order", ["d", "GD", "bfs", ""])
def test_a_bad_order_is_a_policy_error_naming_order(model_dir: Path, order: str) -> None:
    for attempt in (lambda: check("clustergraph", {"order": order}), lambda: build("clustergraph", model_dir,
                                                                                  {"order": order})):
        with pytest.raises(PolicyError) as info:
            attempt()
        assert info.value.key == "order" and "gd, dg" in info.value.problem
    with pytest.raises(configuration.ConfigError, match="policy.order"):
        configuration.load(None, ['policy.name="clustergraph"', f'policy.order="{order}"'])


def test_a_missing_or_unreadable_model_is_a_policy_error_naming_model(tmp_path: Path) -> None:
    (tmp_path / "model.json").write_text('{"format": "something else"}')
    (tmp_path / "broken.json").write_text("{not json")
    for model, problem in [(None, "needs policy.model"), (tmp_path / "nowhere", "does not exist"),
                           (tmp_path, "not a cluster-graph model"), (tmp_path / "broken.json", "cannot read")]:
        with pytest.raises(PolicyError) as info:
            build("clustergraph", model, {})
        assert info.value.key == "model" and problem in info.value.problem


def test_the_counters_survive_in_the_state(model_dir: Path) -> None:
    policy = clustergraph(model_dir, order="dg")
    policy.on_fetched(page(HOME), 0.0)
    policy.accept_link(POST, HOME, None)
    policy.accept_link("https://bob.lj.test/tag/cats", HOME, None)
    resumed = clustergraph(model_dir, order="dg")
    resumed.restore(policy.state())
    assert resumed.counters() == policy.counters() == {
        "cluster_pages": {NAMES["HOME"]: 1}, "cluster_links_kept": {NAMES["POST"]: 1},
        "links_dropped": {"cg_deleted": 1}, "filter_calls": {"dg": 2},
    }
    resumed.restore(b"")  # a crawl started afresh: nothing to restore
    assert resumed.counters()["filter_calls"] == {"dg": 2}


def test_order_dg_judges_after_the_lookup_and_loses_no_link(tmp_path: Path, model_dir: Path) -> None:
    policy = clustergraph(model_dir, order="dg")
    assert policy.judges_new_links_only and not clustergraph(model_dir).judges_new_links_only
    f = FrontierHarness(tmp_path, policy=policy).frontier
    assert f.discover([HOME], POST) == 0  # no POST→HOME edge
    assert f.discover([HOME], PROF) == 1  # PROF→HOME: the same URL, not lost
    assert f.discover([HOME, HOME], PROF) == 0  # duplicates, never judged
    s = f.statistics()
    assert (s.dup_lookups, s.cache_hits, s.drops) == (4, 2, {"cg_no_edge": 1})
    assert s.policy["filter_calls"] == {"dg": 2} and s.policy["cluster_links_kept"] == {NAMES["HOME"]: 1}
    f.close()


# -- a crawl of the in-vitro web through a hand-made model ---------------------------------------------

SUPPORT = (9,) * 6
WEB_ITEMSETS = Itemsets(
    {frozenset({"web", "test"}): SUPPORT},
    {frozenset({"html"}): SUPPORT, frozenset({"list"}): SUPPORT, frozenset({"item"}): SUPPORT,
     frozenset({"archive", "html"}): SUPPORT},
    {frozenset({"page"}): SUPPORT, frozenset({"id", "lang", "en"}): SUPPORT},
)
ITEM = "*.web.test/item?id=$&lang=en"  # the in-vitro web's /item?id=N&lang=en pages


def web_model(urls: list[str]) -> Model:
    """Every pattern of ``urls`` a kept cluster, linked to every other, except that no edge into ITEM is kept."""
    patterns = sorted({pattern_of(normalise(url), WEB_ITEMSETS) for url in urls})
    assert ITEM in patterns
    clusters = {p: ClusterInfo(1, 1, (), "kept") for p in patterns}
    edges = tuple(EdgeInfo(a, b, 1, 1, 1, 1.0, b != ITEM, "kept" if b != ITEM else "not a test edge")
                  for a, b in product(patterns, patterns))
    return Model(Params(), len(urls), WEB_ITEMSETS, clusters, edges)


def test_a_crawl_fetches_nothing_the_model_keeps_no_edge_to(tmp_path: Path) -> None:
    web = WebThread(WebParams(hosts=1, mean_pages=150, max_pages=150, frac_redirect=0.0), tmp_path / "log.jsonl")
    try:
        host, port = web.model.hosts()[0], web.model.port
        web_model([f"http://{host}:{port}{path}" for path in web.model.paths(host)]).save(tmp_path / "model")
        config = configuration.load(None, [
            f'store.dir="{tmp_path / "out"}"', 'engine.progress="off"', f'engine.user_agent="{USER_AGENT}"',
            f'dns.servers=["{web.web.dns_address}"]', 'network.allow_networks=["127.0.0.0/8"]',
            "politeness.host_delay=0.01", "politeness.ip_delay=0", "frontier.sieve_flush_interval=0",
            'policy.name="clustergraph"', f'policy.model="{tmp_path / "model"}"',
        ])
        agent = Agent(config, web.web.seeds)
        summary = uvloop.run(agent.run())
    finally:
        log = web.stop()
    targets = [r.target for r in page_requests(log)]
    assert summary["stop_reason"] == "done" and len(targets) > 50
    assert not any(target.startswith("/item") for target in targets), "no edge leads to the item pages"
    policy = orjson.loads((tmp_path / "out" / "stats.json").read_bytes())["policy"]
    assert policy["links_dropped"]["cg_no_edge"] > 0 and policy["cluster_pages"]["*.web.test/"] == 1
    assert sum(policy["cluster_pages"].values()) == len(targets)
    assert summary["frontier"]["dup_lookups"] >= summary["frontier"]["discovered"] > 50
    status = agent.status().as_dict()  # what GET /status returns and GET /metrics renders
    assert status["policy"] == policy
    metrics = Exporter(lambda: status).render().decode()
    assert 'crawl_policy_cluster_pages_total{cluster="*.web.test/"} 1.0' in metrics
    assert 'crawl_policy_links_dropped_total{key="cg_no_edge"}' in metrics
