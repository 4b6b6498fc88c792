"""The cluster graph E0 (digest §2.9, AT-16): weights, coverage, self-loops and the link universe."""

from __future__ import annotations

import pytest

from frontier.clustergraph.graph import ClusterGraph, Edge, bitmask, build_graph

CLUSTERS = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B"}


def at16(sampled_only: bool = False, pages: list[tuple[str, list[str]]] | None = None) -> ClusterGraph:
    # a1 links to b1 twice; a3 links to itself; a2 links to a3 (a self-loop of A)
    pages = pages or [("a1", ["b1", "b1", "b2", "zz"]), ("a2", ["b1", "a3"]), ("a3", ["a3"])]
    return build_graph(pages, CLUSTERS.get, sampled_only=sampled_only)


def test_at16_weights_and_coverage() -> None:
    graph = at16()
    edge = graph.edges[("A", "B")]
    assert (edge.w_src, edge.w_dst, edge.instances, edge.cov) == (2, 2, 3, 1.0)
    assert edge.fan_out == 1.5
    assert graph.sizes == {"A": 3, "B": 0}  # b1 and b2 were discovered, not sampled
    assert graph.universes == {"A": 3, "B": 2}
    assert graph.n == 3


def test_at16_self_loops_come_from_links_between_two_pages_of_one_cluster() -> None:
    graph = at16()
    loop = graph.edges[("A", "A")]
    assert (loop.w_src, loop.w_dst, loop.instances) == (1, 1, 1)  # a2 → a3 only; a3 → a3 is ignored
    assert loop.is_self_loop
    assert set(graph.edges) == {("A", "A"), ("A", "B")}


def test_unmapped_endpoints_are_ignored() -> None:
    graph = build_graph([("a1", ["b1", "x"]), ("x", ["b2"])], CLUSTERS.get)
    assert set(graph.edges) == {("A", "B")}
    assert graph.edges[("A", "B")].cov == 0.5  # universe of B: b1 (linked) and b2 (linked from x)
    assert graph.n == 2


def test_a_page_given_twice_is_one_page() -> None:
    graph = build_graph([("a1", ["b1"]), ("a1", ["b2"])], CLUSTERS.get)
    edge = graph.edges[("A", "B")]
    assert (edge.w_src, edge.w_dst, edge.instances, graph.n) == (1, 2, 2, 1)


def test_the_sampled_universe_counts_only_fetched_targets() -> None:
    pages = [("a1", ["b1", "b2"]), ("a2", ["b1"]), ("b1", [])]
    every, sampled = at16(pages=pages), at16(sampled_only=True, pages=pages)
    assert every.edges[("A", "B")].w_dst == 2 and every.universes["B"] == 2
    edge = sampled.edges[("A", "B")]
    assert (edge.w_src, edge.w_dst, edge.instances, edge.cov) == (2, 1, 2, 1.0)
    assert sampled.universes == {"A": 2, "B": 1} == sampled.sizes


def test_the_statistics_do_not_depend_on_the_order_of_pages() -> None:
    pages = [("a1", ["b1", "b2", "a2"]), ("a2", ["b1"]), ("b2", ["a1", "a3"])]
    forward, backward = build_graph(pages, CLUSTERS.get), build_graph(pages[::-1], CLUSTERS.get)

    def summary(graph: ClusterGraph) -> dict[tuple[str, str], tuple[int, int, int]]:
        return {key: (e.w_src, e.w_dst, e.instances) for key, e in graph.edges.items()}

    assert summary(forward) == summary(backward)
    assert forward.sizes == backward.sizes and forward.universes == backward.universes


def test_edges_from_given_statistics() -> None:
    edge = Edge.of("A", "B", [0, 2, 2, 5], universe=10, w_src=3, instances=4)
    assert (edge.w_dst, edge.cov, edge.targets) == (3, 0.3, 0b100101)
    assert bitmask([]) == 0
    with pytest.raises(ValueError, match="outside the universe"):
        Edge.of("A", "B", [10], universe=10, w_src=1, instances=1)


def test_incoming_lists_every_node() -> None:
    incoming = at16().incoming()
    assert [edge.src for edge in incoming["B"]] == ["A"]
    assert [edge.key for edge in incoming["A"]] == [("A", "A")]
