"""PageRank, CheiRank, 2DRank and κ (``tools/ranking.py``) against a dense Google matrix and hand-made
graphs, the density plot, and ``crawl rank`` end to end on a crawl of the in-vitro web."""

from __future__ import annotations

import csv
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings
from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

from bench.invitro import WebParams
from engine.rank_cli import crawled_graph
from store import linkgraph
from tools.rank_plot import density_grid, density_svg
from tools.ranking import ALPHA, correlator, link_matrices, rank, rank_index, two_d_rank
from tests.invitro_harness import WebThread, run_crawl


def dense_pagerank(n: int, edges: list[tuple[int, int]], alpha: float = ALPHA) -> np.ndarray:
    """G's λ = 1 eigenvector, solved exactly: (I − α·S) p = (1 − α)/N, S with uniform dangling columns."""
    a = np.zeros((n, n))
    for j, i in edges:
        if i != j:
            a[i, j] = 1.0  # a pair given twice is still one link
    sums = a.sum(axis=0)
    s = np.where(sums > 0, a / np.where(sums > 0, sums, 1.0), 1.0 / n)
    p = np.linalg.solve(np.eye(n) - alpha * s, np.full(n, (1.0 - alpha) / n))
    return p / p.sum()


graphs = st.integers(1, 14).flatmap(
    lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=4 * n))
)


@settings(max_examples=150, deadline=None)
@given(graphs, st.sampled_from([0.5, 0.85, 0.95]))
def test_pagerank_and_cheirank_match_the_dense_google_matrix(graph: tuple[int, list[tuple[int, int]]], alpha: float) -> None:
    """Random graphs with self-loops, pairs given twice, dangling and isolated nodes."""
    n, edges = graph
    src, dst = np.array([e[0] for e in edges], dtype=np.int64), np.array([e[1] for e in edges], dtype=np.int64)
    ranking = rank(link_matrices(n, src, dst), alpha=alpha, max_iter=1000)
    assert ranking.pagerank.converged and ranking.cheirank.converged
    assert np.abs(ranking.pagerank.vector - dense_pagerank(n, edges, alpha)).max() < 1e-9
    assert np.abs(ranking.cheirank.vector - dense_pagerank(n, [(d, s) for s, d in edges], alpha)).max() < 1e-9
    assert abs(ranking.pagerank.vector.sum() - 1.0) < 1e-12
    for index in (ranking.k, ranking.k_star, ranking.k2):
        assert sorted(index.tolist()) == list(range(1, n + 1))
    assert ranking.k.tolist() == rank_index(ranking.pagerank.vector).tolist()
    assert abs(ranking.kappa - (n * float(np.dot(dense_pagerank(n, edges, alpha),
                                                  dense_pagerank(n, [(d, s) for s, d in edges], alpha))) - 1)) < 1e-8


def test_a_cycle_is_uniform_and_ranked_in_node_order() -> None:
    n = 6
    ranking = rank(link_matrices(n, np.arange(n), (np.arange(n) + 1) % n))
    assert np.allclose(ranking.pagerank.vector, 1 / n, rtol=0, atol=1e-15)
    assert np.allclose(ranking.cheirank.vector, 1 / n, rtol=0, atol=1e-15)
    assert ranking.k.tolist() == ranking.k_star.tolist() == ranking.k2.tolist() == [1, 2, 3, 4, 5, 6]
    assert abs(ranking.kappa) < 1e-12
    assert ranking.pagerank.iterations == 1  # the uniform start is already the answer


def test_a_star_of_leaves_pointing_at_a_dangling_hub() -> None:
    """Leaves 1..m link to hub 0, which links nowhere: P_leaf = 1/(N + α·m), P_hub = (1 + α·m)/(N + α·m);
    reversed, the hub links to every leaf: P*_hub = 1/(N + α), each leaf gets the rest equally."""
    m, alpha = 4, ALPHA
    n = m + 1
    leaves = np.arange(1, n)
    ranking = rank(link_matrices(n, leaves, np.zeros(m, dtype=np.int64)))
    p, p_star = ranking.pagerank.vector, ranking.cheirank.vector
    assert abs(p[0] - (1 + alpha * m) / (n + alpha * m)) < 1e-10
    assert np.abs(p[1:] - 1 / (n + alpha * m)).max() < 1e-10
    assert abs(p_star[0] - 1 / (n + alpha)) < 1e-10
    assert np.abs(p_star[1:] - (1 - 1 / (n + alpha)) / m).max() < 1e-10
    assert ranking.k.tolist() == [1, 2, 3, 4, 5]  # equal leaves in node order
    assert ranking.k_star.tolist() == [5, 1, 2, 3, 4]
    assert abs(ranking.kappa - (n * float(np.dot(p, p_star)) - 1)) < 1e-12 and ranking.kappa < 0  # hub: popular, not communicative


def test_dangling_and_isolated_nodes_spread_their_mass_uniformly() -> None:
    """0 → 1 and three isolated nodes: all but 0 are dangling, so every node gets the same share
    x = (α·(1 − P0) + 1 − α)/5, and 1 gets α·P0 more: P0 = x, P1 = (1 + α)·x, 5x + α·x = 1."""
    ranking = rank(link_matrices(5, [0], [1]))
    p = ranking.pagerank.vector
    x = 1 / (5 + ALPHA)
    assert np.abs(p - np.array([x, (1 + ALPHA) * x, x, x, x])).max() < 1e-10
    no_edges = rank(link_matrices(3, [], []))
    assert np.abs(no_edges.pagerank.vector - 1 / 3).max() < 1e-15 and no_edges.pagerank.iterations == 1


def test_self_loops_and_pairs_given_twice_do_not_count() -> None:
    once = link_matrices(3, [0, 1], [1, 2])
    noisy = link_matrices(3, [0, 0, 1, 1, 2, 0], [1, 1, 2, 1, 2, 1])
    assert noisy.edges == once.edges == 2
    assert (noisy.forward != once.forward).nnz == 0 and (noisy.reversed != once.reversed).nnz == 0


def test_edges_outside_the_nodes_are_refused() -> None:
    with pytest.raises(ValueError, match="outside 0..2"):
        link_matrices(3, [0], [3])


def test_equal_values_are_ranked_in_node_order() -> None:
    assert rank_index(np.array([0.2, 0.3, 0.2, 0.3])).tolist() == [3, 1, 4, 2]


def test_two_d_rank_orders_nodes_on_the_same_square_by_the_other_index_then_pagerank_first() -> None:
    # nodes:        a  b  c  d  e  f  g
    k = np.array([2, 1, 3, 4, 5, 6, 7])
    k_star = np.array([1, 2, 4, 3, 7, 5, 6])
    # square 1: nobody (b has K* = 2, a has K = 2). Square 2: a (K = 2, K* = 1) and b (K* = 2, K = 1), whose
    # other indices are equal: the PageRank rib first, a then b. Square 4: d (K = 4) before c (K* = 4), the same
    # way. Square 6: f (K = 6, K* = 5) alone. Square 7: e (K* = 7, K = 5) and g (K = 7, K* = 6): e's other
    # index is the smaller, so e first, though g is on the PageRank rib
    assert two_d_rank(k, k_star).tolist() == [1, 2, 4, 3, 6, 5, 7]
    assert two_d_rank(k, k).tolist() == k.tolist()


def test_kappa_of_hand_made_vectors() -> None:
    assert correlator(np.array([0.5, 0.25, 0.25]), np.array([0.25, 0.25, 0.5])) == pytest.approx(-0.0625, abs=1e-15)
    assert correlator(np.array([0.5, 0.5]), np.array([0.9, 0.1])) == pytest.approx(0.0, abs=1e-15)  # one uniform
    assert correlator(np.array([0.9, 0.1]), np.array([0.9, 0.1])) == pytest.approx(2 * 0.82 - 1, abs=1e-15)


def test_the_density_plot_counts_every_node_on_a_log_grid() -> None:
    n = 5000
    k = np.arange(1, n + 1)
    density, edges = density_grid(k, k)  # K* = K: the diagonal
    assert density.shape == (100, 100) and abs(density.sum() - 1) < 1e-12 and edges[-1] == pytest.approx(np.log(n))
    assert np.count_nonzero(density - np.diag(np.diag(density))) == 0
    points = np.histogram(np.log(k), bins=edges)[0]  # a diagonal cell holds `points` nodes over points² places
    lit = points > 0
    per_place = np.diag(density)[lit] * points[lit]  # W is per place: the same on every diagonal cell
    assert np.allclose(per_place, per_place[0]) and not np.diag(density)[~lit].any()
    k_star = np.random.default_rng(3).permutation(n) + 1
    density, _ = density_grid(k, k_star)
    svg = ET.fromstring(density_svg(k, k_star, "a <test> & more"))
    rects = [e for e in svg.iter("{http://www.w3.org/2000/svg}rect")]
    assert len(rects) == 1 + int((density > 0).sum()) + 50  # the background, the cells, the colour bar


# --- crawl rank, end to end -------------------------------------------------------------------------------

WEB = WebParams(hosts=12, hosts_per_ip=3, mean_pages=6, max_pages=14, mean_links=8, page_bytes=2000,
                robots_5xx_share=0.0, robots_disallow_share=0.0)


def test_only_stored_nodes_are_ranked_and_links_to_others_dropped() -> None:
    ids = np.array([10, 20, 30, 40], dtype=np.uint64)  # 30 was linked to, never fetched
    graph = linkgraph.Graph(ids, {10: "a", 20: "b", 40: "d"}, np.array([[0, 1], [1, 2], [1, 3], [3, 3], [2, 0]]),
                            np.ones(5, dtype=np.int64))
    names, matrices = crawled_graph(graph)
    assert names == ["a", "b", "d"] and matrices.edges == 2  # a → b, b → d; the self-loop and 30's links gone
    assert matrices.dangling.tolist() == [False, False, True]


def rank_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine.cli", "rank", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("rank")
    web = WebThread(WEB, tmp / "requests.jsonl")
    try:
        result = run_crawl(tmp / "out", web.model.seeds(WEB.hosts), dns=web.web.dns_address,
                           settings=["engine.processes=2", "politeness.host_delay=0.02", "politeness.ip_delay=0"])
    finally:
        web.stop()
    assert result.stats["stop_reason"] == "done", result.process.stderr[-3000:]
    return result.out


def test_crawl_rank_writes_every_crawled_host_ranked(crawl: Path, tmp_path: Path) -> None:
    out, plot = tmp_path / "hosts.csv", tmp_path / "kk.svg"
    proc = rank_command(str(crawl), "--out", str(out), "--top", "3", "--plot", str(plot))
    assert proc.returncode == 0, proc.stderr
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    crawled = set()
    for path in (crawl / "warc").glob("*.warc.gz"):
        with open(path, "rb") as f:
            crawled |= {linkgraph.host_of(r.rec_headers.get_header("WARC-Target-URI"))
                        for r in ArchiveIterator(f) if r.rec_type == "metadata"}  # one per stored page
    assert list(rows[0]) == ["host", "pagerank", "cheirank", "k", "k_star", "k2"]
    assert {r["host"] for r in rows} == crawled and len(rows) == len(crawled) == WEB.hosts
    for column in ("pagerank", "cheirank"):
        assert abs(sum(float(r[column]) for r in rows) - 1) < 1e-12
    assert [int(r["k"]) for r in rows] == list(range(1, len(rows) + 1))
    assert all(float(a["pagerank"]) >= float(b["pagerank"]) for a, b in zip(rows, rows[1:]))
    for column in ("k_star", "k2"):
        assert sorted(int(r[column]) for r in rows) == list(range(1, len(rows) + 1))
    # both agents' segments were read: the ranking is that of the whole host graph
    _, hosts = linkgraph.read_graph(crawl / "warc")
    assert len({p.name.split("-a")[1][:1] for p in (crawl / "warc").glob("*.graph")}) == 2
    assert "κ = " in proc.stdout and "PageRank: " in proc.stdout and "iterations" in proc.stdout, proc.stdout
    assert f"{len(crawled)} hosts" in proc.stdout and rows[0]["host"] in proc.stdout  # the top-3 table
    assert ET.parse(plot).getroot().tag.endswith("svg")


def test_crawl_rank_of_pages_to_stdout(crawl: Path) -> None:
    proc = rank_command(str(crawl), "--graph", "page", "--out", "-")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(proc.stdout.splitlines()))
    pages, _ = linkgraph.read_graph(crawl / "warc")
    assert {r["url"] for r in rows} == set(pages.names.values())
    assert "κ = " in proc.stderr  # the summary keeps out of the CSV


def test_crawl_rank_tells_what_is_wrong(tmp_path: Path) -> None:
    missing = rank_command(str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and missing.stderr.startswith("crawl: error: OUT_DIR") and "no such folder" in missing.stderr
    (tmp_path / "warc").mkdir()
    empty = rank_command(str(tmp_path))
    assert empty.returncode == 2 and "no link graph in" in empty.stderr and "store.link_graph" in empty.stderr
    for flag, value, words in (("--alpha", "1.5", "strictly between 0 and 1"), ("--top", "-2", "0 or more"),
                               ("--graph", "site", "invalid choice")):
        bad = rank_command(str(tmp_path), flag, value)
        assert bad.returncode == 2 and f"argument {flag}" in bad.stderr and words in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr
    plot = rank_command(str(tmp_path), "--plot", "k.png")
    assert plot.returncode == 2 and "SVG" in plot.stderr
