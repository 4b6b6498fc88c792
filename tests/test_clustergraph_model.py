"""Training, the model file, the report and the runtime filter (digest §2.0, §2.12–2.14).

AT-15 (byte-identical models), AT-21 (fragments collapse; one incoming edge kept) through
``train`` on small synthetic samples, AT-26 (the runtime filter) on AT-22's final graph.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from frontier.clustergraph.graph import ClusterGraph
from frontier.clustergraph.model import ClusterFilter, ClusterInfo, EdgeInfo, Model, Params
from frontier.clustergraph.patterns import Itemsets
from frontier.clustergraph.pruning import prune
from frontier.clustergraph.train import SampleRecord, measures, read_sample, stable_size, train, write_sample
from tests.test_clustergraph_pruning import AT22_EDGES, AT22_SIZES, toy

# -- synthetic samples ---------------------------------------------------------------------------


def lj_sample(pages: int = 600, links: int = 20, seed: int = 1, port: int = 8042) -> list[SampleRecord]:
    """A LiveJournal-like sample: user homes, profiles, posts, tag listings, reply forms, a footer page."""
    rng = random.Random(seed)
    users = [f"user{i}" for i in range(max(150, pages // 4))] + [str(1000 + i) for i in range(10)]
    tags = ["cats", "dogs", "food", "travel", "music", "2009"]

    def url(kind: str, user: str) -> str:
        base = f"http://{user}.lj.test:{port}"
        post = rng.randrange(10_000, 99_999)
        return {"home": f"{base}/", "profile": f"{base}/profile", "post": f"{base}/{post}.html",
                "tag": f"{base}/tag/{rng.choice(tags)}", "reply": f"{base}/{post}.html?mode=reply",
                "tos": f"http://www.lj.test:{port}/legal/tos"}[kind]

    kinds = ["home", "profile", "post", "post", "tag", "reply"]
    records: list[SampleRecord] = []
    seen: set[str] = set()
    for attempt in itertools.count():
        if len(records) == pages:
            break
        user = rng.choice(users)
        page = url(kinds[attempt % len(kinds)], user)
        if page in seen:  # a sampler never fetches a URL twice
            continue
        seen.add(page)
        outlinks = [url("tos", user), url("home", user), url("profile", user)]
        outlinks += [url(rng.choice(kinds[:5]), rng.choice(users if rng.random() < 0.3 else [user]))
                     for _ in range(links)]
        records.append(SampleRecord(len(records), page, page, 200, tuple(dict.fromkeys(outlinks))))
    return records


def forum_sample(threads: int = 60, per_thread: int = 4) -> list[SampleRecord]:
    """AT-21: posts /post?id=X, shown on /thread/Y with anchors #X; user lists link half the posts."""
    records: list[SampleRecord] = []
    base = "https://forum.test"
    post_ids = [[1000 + t * per_thread + i for i in range(per_thread)] for t in range(threads)]
    for t in range(threads):
        thread = f"{base}/thread/{t}"
        anchors = [f"{thread}#{x}" for x in post_ids[t]]
        permalinks = [f"{base}/post?id={x}" for x in post_ids[t]]
        user = f"{base}/user/{t // 2}/posts?page={t + 1}"
        post = permalinks[0]
        pages = [(thread, [*anchors, *permalinks, user]),
                 (user, [f"{base}/post?id={x}" for x in post_ids[t][: per_thread // 2]]
                  + [f"{base}/user/{t // 2}/posts?page={t + 2}"]),
                 (post, [thread, user])]
        for url, links in pages:
            records.append(SampleRecord(len(records), url, url, 200, tuple(dict.fromkeys(links))))
    return records


# -- parameters ------------------------------------------------------------------------------------


def test_params_defaults_are_the_digests() -> None:
    params = Params()
    assert (params.bins, params.min_support, params.delta, params.tau, params.header_guard) == (6, 5, 0.03, 0.6, 0.05)
    assert (params.literal, params.strict_nesting, params.edge_universe, params.combination_budget) == (False, False, "all", 200_000)
    assert (params.u_sigmas, params.max_itemset, params.xi, params.alpha) == (2.0, 12, 0.0, 0)
    assert (params.pilot_pages, params.batch, params.seed) == (200, 1, 0)


def test_params_parse_text() -> None:
    params = Params.parse({"tau": "0.7", "literal": "true", "bins": "4", "edge_universe": "sampled"})
    assert (params.tau, params.literal, params.bins, params.edge_universe) == (0.7, True, 4, "sampled")


@pytest.mark.parametrize(("settings", "message"), [
    ({"taus": "0.7"}, "taus: unknown parameter"),
    ({"bins": "six"}, "bins: 'six' is not an int"),
    ({"tau": "x"}, "tau: 'x' is not a float"),
    ({"literal": "maybe"}, "literal: 'maybe' is not a boolean"),
    ({"edge_universe": "some"}, "edge_universe: 'some' is out of range"),
    ({"batch": "9"}, "batch: 9 is out of range"),
])
def test_params_errors_name_the_key(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Params.parse(settings)


# -- AT-15: the same sample and parameters give the same bytes --------------------------------------


def test_at15_same_sample_same_bytes(tmp_path: Path) -> None:
    sample = lj_sample()
    first = train(sample, Params(), ["http://user1.lj.test:8042/"]).to_bytes()
    assert train(sample, Params(), ["http://user1.lj.test:8042/"]).to_bytes() == first
    shuffled = list(sample)
    random.Random(3).shuffle(shuffled)
    write_sample(tmp_path / "sample.jsonl", shuffled)
    assert read_sample(tmp_path / "sample.jsonl") == shuffled
    assert train(read_sample(tmp_path / "sample.jsonl"), Params(), ["http://user1.lj.test:8042/"]).to_bytes() == first
    # the lab serves on a new port every run: the model does not depend on it
    assert train(lj_sample(port=9999), Params(), ["http://user1.lj.test:9999/"]).to_bytes() == first
    assert train(sample, Params(tau=0.8), ["http://user1.lj.test:8042/"]).to_bytes() != first


def test_a_synthetic_lj_sample_gives_the_papers_patterns() -> None:
    model = train(lj_sample(), Params(), ["http://user1.lj.test/"])
    assert {"*.lj.test/", "*.lj.test/profile", "*.lj.test/$.html", "*.lj.test/tag/*",
            "*.lj.test/$.html?mode=reply"} <= set(model.nodes)
    assert model.n == 600 and model.seed_clusters == ("*.lj.test/",)
    assert model.clusters["*.lj.test/profile"].samples[0].startswith("user") and ":8042" not in model.to_bytes().decode()
    assert model.measures["clusters"] == len(model.nodes)
    assert model.measures["surviving_edges"] == sum(edge.kept for edge in model.edges)


def test_failed_records_are_left_out_and_redirects_are_pages() -> None:
    sample = forum_sample()
    extra = [SampleRecord(len(sample), "https://forum.test/gone", "https://forum.test/gone", 404, ()),
             SampleRecord(len(sample) + 1, "http://forum.test/thread/1", "https://forum.test/thread/1", 301,
                          ("https://forum.test/thread/1",))]
    assert train(sample + extra, Params(), []).to_bytes() == train(sample, Params(), []).to_bytes()


# -- AT-21, reachability ---------------------------------------------------------------------------

THREAD, POST, LIST = "forum.test/thread/$", "forum.test/post?id=$", "forum.test/user/$/posts?page=$"


def test_at21_fragments_collapse_and_the_post_cluster_keeps_one_incoming_edge() -> None:
    model = train(forum_sample(), Params(), ["https://forum.test/thread/0"])
    assert set(model.nodes) == {THREAD, POST, LIST}
    assert not any("#" in name for name in model.clusters)
    into_post = {edge.src: edge for edge in model.edges if edge.dst == POST}
    assert into_post[THREAD].cov == 1.0 and into_post[LIST].cov == 0.5
    assert [edge.src for edge in model.edges if edge.dst == POST and edge.kept] == [THREAD]
    assert into_post[LIST].reason == "redundant"
    assert model.unreachable == () and model.survivors == sorted([THREAD, POST, LIST])


def test_survivors_unreachable_from_the_seeds_are_a_warning() -> None:
    # from a user list, the only way on is list → post, which edge deletion removed
    model = train(forum_sample(), Params(), ["https://forum.test/user/3/posts?page=7"])
    assert model.seed_clusters == (LIST,)
    assert model.unreachable == tuple(sorted([THREAD, POST]))
    assert any("2 surviving clusters are unreachable from the seeds" in w for w in model.warnings)


def test_an_unmapped_seed_starts_from_its_links() -> None:
    sample = forum_sample()
    front = SampleRecord(-1, "https://forum.test/", "https://forum.test/", 200, ("https://forum.test/thread/0",))
    model = train([front, *sample], Params(), ["https://forum.test/"])
    assert model.seed_clusters == () and model.unreachable == ()


def test_training_measures_on_prefixes() -> None:
    sample = lj_sample(pages=900)
    rows = measures(sample, Params(), ["http://user1.lj.test/"], sizes=[300, 600, 900, 1200])
    assert [row["pages"] for row in rows] == [300, 600, 900]
    assert set(rows[0]) == {"pages", "clusters", "edges", "surviving_clusters", "surviving_edges"}
    steady = [{"pages": n, "clusters": 10, "edges": e} for n, e in ((1, 50), (2, 40), (3, 41), (4, 42), (5, 60))]
    assert stable_size(steady) == 4
    assert stable_size(steady[:3]) is None


# -- the model file --------------------------------------------------------------------------------


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    model = train(forum_sample(), Params(), ["https://forum.test/user/3/posts?page=7"])
    path = model.save(tmp_path / "model")
    assert path == tmp_path / "model" / "model.json"
    assert {p.name for p in path.parent.iterdir()} == {"model.json", "report.md", "graph.svg"}
    assert Model.load(path.parent).to_bytes() == model.to_bytes() == Model.load(path).to_bytes()
    assert Model.from_bytes(model.to_bytes()).clusters == model.clusters
    with pytest.raises(ValueError, match="not a cluster-graph model"):
        Model.from_bytes(b'{"format": "other"}')


def test_the_report_says_what_was_kept_and_pruned_and_why() -> None:
    model = train(forum_sample(), Params(), ["https://forum.test/user/3/posts?page=7"])
    from frontier.clustergraph.report import markdown

    text = markdown(model)
    assert "## Surviving clusters" in text and f"`{POST}`" in text and "forum.test/post?id=1000" in text
    assert "## Pruned edges" in text and "pruned: other edges cover the target" in text
    assert "2 surviving clusters are unreachable" in text


def test_the_svg_draws_kept_edges_solid_and_pruned_edges_dashed(tmp_path: Path) -> None:
    model = at22_model()
    model.save(tmp_path)
    root = ET.parse(tmp_path / "graph.svg").getroot()
    ns = {"svg": "http://www.w3.org/2000/svg"}
    paths = root.findall(".//svg:path[@class]", ns)
    kept = [p for p in paths if p.get("class") == "edge kept"]
    pruned = [p for p in paths if p.get("class") == "edge pruned"]
    assert len(kept) == sum(edge.kept for edge in model.edges) == 5
    assert len(pruned) == len(model.edges) - 5
    assert all(p.get("stroke-dasharray") for p in pruned) and not any(p.get("stroke-dasharray") for p in kept)
    grey = {text.text for g in root.findall(".//svg:g", ns) if "kept" not in (g.get("class") or "")
            for text in g.findall("svg:text", ns)}
    assert grey == {"*.lj.test/tag/* (150)", "www.lj.test/legal/tos (2)"}


# -- AT-26: the runtime filter on AT-22's final graph -----------------------------------------------

NAMES = {"HOME": "*.lj.test/", "TAG": "*.lj.test/tag/*", "POST": "*.lj.test/$.html", "PROF": "*.lj.test/profile",
         "TERMS": "www.lj.test/legal/tos"}


def at22_model() -> Model:
    """AT-22's toy with its clusters written as patterns, so that URLs map to them."""
    toy_graph = toy(AT22_SIZES, AT22_EDGES, n=952)
    graph = ClusterGraph(
        sizes={NAMES[c]: s for c, s in toy_graph.sizes.items()},
        universes={NAMES[c]: s for c, s in toy_graph.universes.items()},
        edges={(NAMES[a], NAMES[b]): dataclasses.replace(e, src=NAMES[a], dst=NAMES[b])
               for (a, b), e in toy_graph.edges.items()},
        n=952,
    )
    pruning = prune(graph)
    support = (10,) * 6
    itemsets = Itemsets({frozenset({"lj", "test"}): support, frozenset({"www", "lj", "test"}): support},
                        {frozenset({"tag"}): support, frozenset({"html"}): support, frozenset({"profile"}): support,
                         frozenset({"legal", "tos"}): support}, {})
    clusters = {name: ClusterInfo(graph.sizes[name], graph.universes[name], (), pruning.nodes.reasons.get(name, "kept"))
                for name in graph.sizes}
    edges = tuple(EdgeInfo(e.src, e.dst, e.w_src, e.w_dst, e.instances, e.cov, key in pruning.final_edges,
                           pruning.edge_reason(key)) for key, e in sorted(graph.edges.items()))
    return Model(Params(), 952, itemsets, clusters, edges)


def test_at26_the_runtime_filter() -> None:
    cg = ClusterFilter.from_model(at22_model())
    home = cg.cluster("https://bob.lj.test/")
    post = cg.cluster("https://bob.lj.test/1234.html")
    assert (home, post) == (NAMES["HOME"], NAMES["POST"])
    # from a HOME page
    assert cg.judge("https://alice.lj.test/77.html", home) == (NAMES["POST"], None)
    assert cg.judge("https://bob.lj.test/tag/cats", home) == (None, "cg_deleted")
    assert cg.judge("https://bob.lj.test/foo/bar/baz", home) == (None, "cg_unmapped")
    assert cg.judge("https://www.lj.test/legal/tos", home) == (None, "cg_deleted")
    assert cg.judge("https://bob.lj.test/profile", home) == (NAMES["PROF"], None)
    # from a POST page
    assert cg.judge("https://bob.lj.test/", post) == (NAMES["HOME"], "cg_no_edge")
    assert cg.judge("https://bob.lj.test/1235.html", post) == (NAMES["POST"], None)
    # a seed or an unmapped source: rule 1 only
    assert cg.judge("https://bob.lj.test/", None) == (NAMES["HOME"], None)
    assert cg.judge("https://bob.lj.test/tag/dogs", None) == (None, "cg_deleted")


def test_the_filter_knows_the_kept_edges_and_refuses_a_url_as_source() -> None:
    cg = ClusterFilter.from_model(at22_model())
    assert cg.kept_edges == {
        NAMES["HOME"]: frozenset({NAMES["POST"], NAMES["PROF"]}),
        NAMES["POST"]: frozenset({NAMES["POST"]}),
        NAMES["PROF"]: frozenset({NAMES["HOME"], NAMES["PROF"]}),
    }
    assert cg.cluster("https://bob.lj.test/tag/cats") is None
    with pytest.raises(ValueError, match="not a surviving cluster"):
        cg.judge("https://bob.lj.test/", "https://bob.lj.test/1.html")
    assert "kept_edges=5" in repr(cg)


def test_a_loaded_model_filters_the_same(tmp_path: Path) -> None:
    at22_model().save(tmp_path)
    cg = ClusterFilter.from_model(Model.load(tmp_path))
    assert cg.judge("https://bob.lj.test/", cg.cluster("https://bob.lj.test/1.html")) == (NAMES["HOME"], "cg_no_edge")
