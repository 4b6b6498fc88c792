"""Pruning (digest §2.10–2.11): edge deletion AT-17…AT-20, node deletion AT-22…AT-25, reachability.

The toys are fed in as statistics: an edge of coverage c into a cluster of universe u
covers the first round(c·u) URLs of that universe.
"""

from __future__ import annotations

import logging

import pytest

from frontier.clustergraph.graph import ClusterGraph, Edge
from frontier.clustergraph.pruning import (
    COVERING,
    COVERING_GREEDY,
    DETOUR,
    DUPLICATE_CONTENT,
    HEADER_FOOTER,
    NODE_DELETED,
    PAGINATION,
    REDUNDANT,
    SELF_LOOP,
    TAU_UNREACHABLE,
    UNINFORMATIVE,
    best_cover,
    delete_edges,
    header_footer,
    prune,
    reachable,
)

Stat = tuple[str, str, float, int, int]  # (src, dst, cov, w_src, instances)


def toy(sizes: dict[str, int], stats: list[Stat], n: int | None = None) -> ClusterGraph:
    edges = {
        (src, dst): Edge.of(src, dst, range(round(cov * sizes[dst])), sizes[dst], w_src, instances)
        for src, dst, cov, w_src, instances in stats
    }
    return ClusterGraph(sizes=sizes, universes=dict(sizes), edges=edges, n=sum(sizes.values()) if n is None else n)


def sets(universe: int, targets: dict[str, set[int]]) -> ClusterGraph:
    """Edges into T covering the given (1-based) URLs of a universe of ``universe``."""
    sizes = {"T": universe, **{src: 1 for src in targets}}
    edges = {(src, "T"): Edge.of(src, "T", [t - 1 for t in covered], universe, len(covered), len(covered))
             for src, covered in targets.items()}
    return ClusterGraph(sizes=sizes, universes=dict(sizes), edges=edges, n=sum(sizes.values()))


def kept_into(graph: ClusterGraph, budget: int = 200_000) -> set[str]:
    return {src for src, dst in delete_edges(graph, budget=budget).kept if dst == "T"}


def test_at17_only_the_best_edge_is_kept() -> None:
    graph = toy({"T": 100, "A": 1, "B": 1, "C": 1}, [("A", "T", 0.9, 1, 1), ("B", "T", 0.7, 1, 1), ("C", "T", 0.01, 1, 1)])
    deletion = delete_edges(graph)
    assert kept_into(graph) == {"A"}
    assert deletion.reasons == {("A", "T"): COVERING, ("B", "T"): REDUNDANT, ("C", "T"): REDUNDANT}
    assert deletion.coverage == {"T": 0.9}


def test_at18_exactly_tau_is_not_enough() -> None:
    graph = sets(10, {"A": {1, 2, 3, 4, 5, 6}, "B": {7}})
    assert kept_into(graph) == {"A", "B"}
    assert delete_edges(graph).coverage["T"] == 0.7


def test_at19_exact_search_beats_greedy() -> None:
    graph = sets(10, {"E1": {1, 2, 3, 4, 5, 6}, "E2": {1, 2, 3, 7, 8}, "E3": {4, 5, 6, 9, 10}})
    deletion = delete_edges(graph)
    assert kept_into(graph) == {"E2", "E3"}
    assert deletion.coverage["T"] == 1.0 and not deletion.greedy
    # with no budget for the exact search, greedy takes E1 first: the wrong answer the exact search avoids
    assert kept_into(graph, budget=0) == {"E1", "E2"}


def test_at20_unreachable_tau_keeps_every_candidate_and_self_loops_never_count() -> None:
    graph = toy({"T": 10, "A": 1, "B": 1}, [("A", "T", 0.3, 1, 1), ("B", "T", 0.2, 1, 1), ("T", "T", 1.0, 5, 9)])
    deletion = delete_edges(graph)
    assert deletion.kept == {("A", "T"), ("B", "T"), ("T", "T")}
    assert deletion.reasons[("A", "T")] == TAU_UNREACHABLE and deletion.reasons[("T", "T")] == SELF_LOOP
    assert deletion.coverage["T"] == 0.3


def test_a_self_loop_alone_is_kept() -> None:
    graph = toy({"T": 10}, [("T", "T", 0.9, 5, 9)])
    assert delete_edges(graph).kept == {("T", "T")}


def test_ties_go_to_the_larger_w_src_then_the_source_name() -> None:
    graph = toy({"T": 10, "A": 1, "B": 1, "C": 1}, [("A", "T", 1.0, 3, 3), ("B", "T", 1.0, 5, 5), ("C", "T", 1.0, 5, 5)])
    assert kept_into(graph) == {"B"}


def test_the_greedy_fallback_is_used_and_logged_beyond_the_budget(caplog: pytest.LogCaptureFixture) -> None:
    # 40 disjoint edges of 2 URLs each: 31 are needed (> 60 of 100), C(40, 5) = 658,008 > 200,000
    graph = sets(100, {f"S{i:02}": {2 * i + 1, 2 * i + 2} for i in range(40)})
    with caplog.at_level(logging.WARNING, logger="frontier.clustergraph.pruning"):
        deletion = delete_edges(graph)
    assert deletion.greedy == ("T",)
    assert "greedy" in caplog.text and "T" in caplog.text
    assert kept_into(graph) == {f"S{i:02}" for i in range(31)}
    assert {deletion.reasons[(f"S{i:02}", "T")] for i in range(31)} == {COVERING_GREEDY}
    assert deletion.coverage["T"] == 0.62
    assert "greedy" in prune(graph).warnings[0]


def test_best_cover_on_masks() -> None:
    assert best_cover([0b0011, 0b1100, 0b0110], universe=4, tau=0.6, budget=10) == ((0, 1), False)
    assert best_cover([0b0001, 0b0010], universe=4, tau=0.6, budget=10) == ((0, 1), False)  # 0.5: keep all


# -- node deletion: the AT-22 toy ----------------------------------------------------------------

AT22_SIZES = {"HOME": 200, "TAG": 150, "POST": 400, "PROF": 200, "TERMS": 2}
AT22_EDGES: list[Stat] = [
    ("HOME", "POST", 0.9, 200, 4000),
    ("TAG", "POST", 0.7, 150, 1500),
    ("PROF", "HOME", 0.95, 200, 400),
    ("POST", "HOME", 0.5, 100, 100),
    ("TAG", "HOME", 0.3, 60, 60),
    ("HOME", "TAG", 0.8, 200, 600),
    ("POST", "TAG", 0.6, 90, 180),
    ("HOME", "PROF", 0.9, 180, 180),
    ("POST", "PROF", 0.4, 80, 80),
    *[(src, "TERMS", 1.0, AT22_SIZES[src], AT22_SIZES[src]) for src in ("HOME", "TAG", "POST", "PROF")],
    ("POST", "POST", 0.5, 300, 600),
    ("TAG", "TAG", 0.2, 30, 30),
    ("PROF", "PROF", 0.6, 150, 900),
]


def at22() -> ClusterGraph:
    return toy(AT22_SIZES, AT22_EDGES, n=952)


def test_at22_edge_deletion() -> None:
    deletion = delete_edges(at22())
    assert deletion.kept == {
        ("HOME", "POST"), ("PROF", "HOME"), ("HOME", "TAG"), ("HOME", "PROF"), ("POST", "TERMS"),
        ("POST", "POST"), ("TAG", "TAG"), ("PROF", "PROF"),
    }


def test_at22_node_deletion() -> None:
    pruning = prune(at22())
    assert pruning.nodes.reasons == {"TERMS": HEADER_FOOTER, "TAG": DUPLICATE_CONTENT}
    assert pruning.nodes.protected == {"POST"}
    assert "POST" in pruning.nodes.notes["TAG"] and "10.00" in pruning.nodes.notes["TAG"]
    assert pruning.survivors == {"HOME", "POST", "PROF"}
    assert pruning.final_edges == {("PROF", "HOME"), ("HOME", "POST"), ("HOME", "PROF"), ("POST", "POST"), ("PROF", "PROF")}
    # U did nothing: its threshold is −64.5, and that is a warning
    assert pruning.nodes.u_threshold == pytest.approx(-64.5, abs=0.05)
    assert pruning.warnings == ("rule U deletes nothing: its threshold mean − 2·std = -64.54 is ≤ 0",)


def test_at22_home_meets_two_of_the_three_h_conditions_only() -> None:
    found = header_footer(at22())
    assert list(found) == ["TERMS"]
    assert found["TERMS"] == "linked from 4 clusters and 950 of 952 pages (8 URLs)"


def test_at25_a_deleted_node_takes_its_edges_and_keeps_its_reason() -> None:
    pruning = prune(at22())
    for key in (("HOME", "TAG"), ("TAG", "TAG"), ("POST", "TERMS")):
        assert key in pruning.edges.kept and key not in pruning.final_edges
        assert pruning.edge_reason(key) == NODE_DELETED
    assert pruning.edge_reason(("TAG", "POST")) == REDUNDANT
    assert pruning.edge_reason(("HOME", "POST")) == COVERING
    assert not {node for key in pruning.final_edges for node in key} & set(pruning.nodes.reasons)


# -- H's guard: AT-23 ----------------------------------------------------------------------------


def at23() -> ClusterGraph:
    # HUB is linked from 3 of the 4 other clusters and from 60 of 100 pages; 18 URLs / 60 pages = 0.3
    sizes = {"HUB": 30, "A": 30, "B": 20, "C": 10, "D": 10}
    stats: list[Stat] = [("A", "HUB", 0.2, 30, 30), ("B", "HUB", 0.2, 20, 20), ("C", "HUB", 0.2, 10, 10),
                         ("HUB", "A", 1.0, 30, 60), ("A", "B", 1.0, 30, 30), ("B", "C", 1.0, 20, 20),
                         ("C", "D", 1.0, 10, 10)]
    return toy(sizes, stats, n=100)


def test_at23_the_guard_saves_a_hub_and_literal_mode_deletes_it() -> None:
    assert header_footer(at23()) == {}
    assert list(header_footer(at23(), guard=None)) == ["HUB"]
    assert prune(at23(), guard=None).nodes.reasons["HUB"] == HEADER_FOOTER
    assert "HUB" in prune(at23()).survivors


# -- U: AT-24 ------------------------------------------------------------------------------------


def at24(sizes: dict[str, int], leaves: set[str]) -> ClusterGraph:
    """Every node not in ``leaves`` links to the next one of that kind (a ring); leaves link nowhere."""
    ring = [node for node in sizes if node not in leaves]
    stats: list[Stat] = [(src, dst, 1.0, 1, 1) for src, dst in zip(ring, ring[1:] + ring[:1])]
    return toy(sizes, stats)


def test_at24_u_deletes_the_small_leaf_only() -> None:
    sizes = {**{f"N{i}": 100 for i in range(10)}, "LEAF95": 95, "ACT5": 5}
    pruning = prune(at24(sizes, {"LEAF95", "ACT5"}))
    assert pruning.nodes.reasons == {"ACT5": UNINFORMATIVE}
    assert pruning.nodes.notes["ACT5"] == "a leaf of size 5 < 39.33"
    assert pruning.nodes.u_threshold == pytest.approx(39.33, abs=0.005)
    assert pruning.warnings == ()


def test_at24_a_heavy_tail_makes_u_do_nothing_and_warn() -> None:
    sizes = dict(zip("ABCDEFG", [1000, 500, 200, 100, 100, 50, 10]))
    pruning = prune(at24(sizes, {"G"}))
    assert pruning.nodes.reasons == {}
    assert pruning.nodes.u_threshold == pytest.approx(-380.6, abs=0.05)
    assert pruning.warnings == ("rule U deletes nothing: its threshold mean − 2·std = -380.65 is ≤ 0",)


def test_u_is_configurable() -> None:
    sizes = dict(zip("ABCDEFG", [1000, 500, 200, 100, 100, 50, 10]))
    assert prune(at24(sizes, {"G"}), sigmas=0.0).nodes.reasons == {"G": UNINFORMATIVE}


def test_d_processes_pairs_in_order_and_protects_the_kept_content() -> None:
    # L1 and L2 both list C; C → L1 was deleted too. L1 (fan-out 8) goes first and protects C;
    # the pair (C, L1) no longer applies, and L2 (fan-out 4) is deleted as well
    sizes = {"ROOT": 10, "C": 100, "L1": 20, "L2": 20}
    stats: list[Stat] = [("ROOT", "C", 0.9, 10, 10), ("L1", "C", 0.5, 20, 160), ("L2", "C", 0.5, 20, 80),
                         ("C", "L1", 0.3, 10, 10), ("ROOT", "L1", 1.0, 10, 10), ("ROOT", "L2", 1.0, 10, 10)]
    pruning = prune(toy(sizes, stats))
    assert pruning.nodes.reasons == {"L1": DUPLICATE_CONTENT, "L2": DUPLICATE_CONTENT}
    assert pruning.survivors == {"ROOT", "C"}


def test_reachability() -> None:
    edges = [("A", "B"), ("B", "C"), ("D", "A"), ("C", "C")]
    assert reachable(edges, ["A"]) == {"A", "B", "C"}
    assert reachable(edges, []) == set()


# -- rule R (ours): detours -----------------------------------------------------------------


def blog_like(post_self: float) -> ClusterGraph:
    """HOME (the seed) lists POST; POST links itself (previous/next), its TAG listings, its DAY and PROF;
    TAG and DAY list posts and lead nowhere else; DAY also leads to ARCH, which nothing else reaches."""
    sizes = {"HOME": 50, "POST": 1000, "TAG": 100, "DAY": 100, "ARCH": 20, "PROF": 50}
    return toy(sizes, [("HOME", "HOME", 0.9, 50, 500), ("HOME", "POST", 0.25, 50, 750), ("POST", "HOME", 1.0, 500, 500),
                       ("POST", "POST", post_self, 1000, 3000), ("POST", "TAG", 0.9, 1000, 2000),
                       ("POST", "DAY", 0.9, 1000, 1000), ("POST", "PROF", 1.0, 1000, 1000),
                       ("TAG", "TAG", 0.3, 100, 100), ("TAG", "POST", 0.3, 100, 1500),
                       ("DAY", "POST", 0.35, 100, 1200), ("DAY", "ARCH", 0.9, 100, 100), ("PROF", "PROF", 1.0, 50, 500)])


def test_rule_r_deletes_a_listing_entered_from_and_leading_back_only_to_a_self_covering_cluster() -> None:
    graph = blog_like(post_self=0.8)
    assert {("TAG", "POST"), ("DAY", "POST")} <= prune(graph).final_edges  # the paper's rules keep both listings
    assert {"TAG", "DAY"} <= prune(graph).survivors
    pruned = prune(graph, detour_tau=0.6, starts={"HOME"})
    # TAG goes; DAY is the only way into ARCH; PROF is a leaf; HOME is the seed's (it too leads only to POST)
    assert pruned.nodes.reasons == {"TAG": DETOUR}
    assert "POST (self-loop cov 0.80)" in pruned.nodes.notes["TAG"]
    assert prune(graph, detour_tau=0.6).nodes.reasons == {"HOME": DETOUR, "TAG": DETOUR}  # without the seeds


def test_rule_r_keeps_a_listing_of_a_cluster_that_does_not_reach_most_of_itself() -> None:
    assert prune(blog_like(post_self=0.5), detour_tau=0.6, starts={"HOME"}).nodes.reasons == {}


def test_rule_r_spares_a_way_through_the_site_and_a_twin_of_the_content() -> None:
    sizes = {"HOME": 50, "POST": 1000, "TAG": 100}
    stats: list[Stat] = [("HOME", "POST", 0.25, 50, 750), ("POST", "HOME", 1.0, 500, 500), ("POST", "POST", 0.8, 1000, 3000),
                         ("POST", "TAG", 0.9, 1000, 2000), ("TAG", "POST", 0.3, 100, 1500)]
    assert prune(toy(sizes, stats), detour_tau=0.6, starts={"HOME"}).nodes.reasons == {"TAG": DETOUR}
    # entered from HOME as well: a way through the site (the books' reviews, reached from books and writers)
    stats_through = [*stats[:3], ("POST", "TAG", 0.5, 1000, 2000), stats[4], ("HOME", "TAG", 0.5, 50, 50)]
    through = prune(toy(sizes, stats_through), detour_tau=0.6, starts={"HOME"})
    assert ("HOME", "TAG") in through.final_edges and through.nodes.reasons == {}
    # the posts of all-digit user names, entered from and leading back to the others: the same kind of page
    twins = {"*.lj.test/": 50, "*.lj.test/$.html": 1000, "$.lj.test/$.html": 100}
    renamed = {"HOME": "*.lj.test/", "POST": "*.lj.test/$.html", "TAG": "$.lj.test/$.html"}
    graph = toy(twins, [(renamed[s], renamed[d], cov, w, i) for s, d, cov, w, i in stats])
    assert prune(graph, detour_tau=0.6, starts={"*.lj.test/"}).nodes.reasons == {}


def test_further_pages_lead_where_their_first_pages_kept_edges_lead() -> None:
    """A journal's older pages (OLDER) list posts as its first pages (HOME) do; edge deletion keeps HOME → POST only."""
    sizes = {"HOME": 50, "OLDER": 10, "POST": 1000, "PROF": 50}
    graph = toy(sizes, [("HOME", "OLDER", 0.9, 50, 50), ("HOME", "POST", 0.7, 50, 750), ("OLDER", "POST", 0.2, 10, 200),
                        ("HOME", "PROF", 0.9, 50, 50), ("POST", "HOME", 1.0, 500, 500)])
    plain = prune(graph)
    assert ("OLDER", "POST") not in plain.final_edges and plain.edge_reason(("OLDER", "POST")) == REDUNDANT
    pruned = prune(graph, paginations={"OLDER": "HOME"})
    # OLDER → PROF is no edge of E0 (its pages do not link profiles): nothing to inherit there
    assert pruned.final_edges - plain.final_edges == {("OLDER", "POST")} == pruned.inherited
    assert pruned.edge_reason(("OLDER", "POST")) == PAGINATION


def test_rule_r_spares_further_pages_of_the_content() -> None:
    """A post's next comment pages are entered from the post and lead back to posts: the post's own content."""
    sizes = {"HOME": 50, "POST": 1000, "MORE": 100}
    graph = toy(sizes, [("HOME", "POST", 0.25, 50, 750), ("POST", "HOME", 1.0, 500, 500), ("POST", "POST", 0.8, 1000, 3000),
                        ("POST", "MORE", 0.9, 100, 100), ("MORE", "POST", 0.3, 100, 1500)])
    assert prune(graph, detour_tau=0.6, starts={"HOME"}).nodes.reasons == {"MORE": DETOUR}
    assert prune(graph, detour_tau=0.6, starts={"HOME"}, paginations={"MORE": "POST"}).nodes.reasons == {}
