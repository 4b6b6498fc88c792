"""SOUrCe's navigation table, A, HITS and scores (digest §2.10–2.12, §3.2–3.4): AT-10…AT-13 and the table's invariants.

The AT-10 toy is fed in as training pages: one page per cluster holding all of its groups,
each group's labelled links pointing at distinct pages of D and the rest at unfetched URLs.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier.source.navigation import (
    OUTLIER,
    Key,
    NavigationTable,
    Row,
    TrainingPage,
    build,
    index_of,
    label_of,
)
from frontier.source.scores import (
    ALPHA_TARGET,
    ALPHA_UCC,
    Factors,
    balance,
    hits,
    link_score,
    link_scores,
    target_cluster_scores,
    target_hits,
    ucc_cluster_scores,
)

C0, C1, C2, C3, O = 0, 1, 2, 3, OUTLIER  # List, Detail, Profile, Help, outliers
AT10: dict[Key, tuple[int, dict[int, int]]] = {  # (cluster, apath): (|U|, labelled destination counts)
    (C0, "title"): (10, {C1: 3}),
    (C0, "page"): (4, {C0: 2}),
    (C0, "user"): (10, {C2: 2}),
    (C0, "foot"): (2, {C3: 2}),
    (C1, "user"): (12, {C2: 4}),
    (C1, "related"): (9, {C1: 3}),
    (C1, "crumb"): (3, {C0: 3}),
    (C1, "foot"): (3, {C3: 3}),
    (C1, "reply"): (6, {O: 2}),
    (C2, "posts"): (8, {C1: 3, C0: 1}),
    (C2, "foot"): (2, {C3: 2}),
    (C3, "foot"): (1, {C3: 1}),
    (C3, "home"): (1, {C0: 1}),
}
AT10_A = np.array([
    [4, 10, 10, 2, 0],
    [3, 9, 12, 3, 6],
    [2, 6, 0, 2, 0],
    [1, 0, 0, 1, 0],
    [0, 0, 0, 0, 0],
], dtype=np.float64)
DSIM = (0.30, 0.45, 0.40, 0.02)
HARVESTED = (10, 30, 10, 0, 0)  # AT-12's second state: Balance = 0.8, 0.4, 0.8, 1.0


def at10_training() -> tuple[list[TrainingPage], dict[str, int]]:
    labels: dict[str, int] = {}
    groups: dict[int, dict[str, list[str]]] = {}
    for (cluster, apath), (n_links, labelled) in AT10.items():
        urls = []
        for destination, count in labelled.items():
            for k in range(count):
                url = f"http://s.test/{cluster}/{apath}/{destination}/{k}"
                labels[url] = destination
                urls.append(url)
        urls += [f"http://s.test/unfetched/{cluster}/{apath}/{k}" for k in range(n_links - len(urls))]
        groups.setdefault(cluster, {})[apath] = urls
    return list(groups.items()), labels


def at10_table() -> NavigationTable:
    pages, labels = at10_training()
    return build(pages, labels, n_clusters=4)


def ucc_scores(harvested: tuple[int, ...]) -> np.ndarray:
    return ucc_cluster_scores(hits(at10_table().adjacency()).info(ALPHA_UCC), DSIM, harvested)


def scores_by_key(table: NavigationTable, cluster_scores: np.ndarray) -> dict[Key, float]:
    return dict(zip(table.keys, link_scores(table, cluster_scores).tolist(), strict=True))


# --- cluster ids ------------------------------------------------------------------------------


def test_outliers_are_the_last_index_and_clusters_keep_their_label() -> None:
    assert [index_of(label, 4) for label in (C0, C1, C2, C3, O)] == [0, 1, 2, 3, 4]
    assert [label_of(index, 4) for index in range(5)] == [C0, C1, C2, C3, O]
    for bad in (4, -2):
        with pytest.raises(ValueError, match="label"):
            index_of(bad, 4)
    with pytest.raises(ValueError, match="index"):
        label_of(5, 4)


# --- AT-10: the table and A -------------------------------------------------------------------


def test_at10_rows_and_their_distributions() -> None:
    table = at10_table()
    assert table.keys == tuple(sorted(AT10))
    posts = table.get((C2, "posts"))
    assert posts is not None
    assert posts.distribution() == pytest.approx([0.25, 0.75, 0, 0, 0], abs=1e-4)
    assert (posts.n_links, posts.n_labelled, posts.n_pages) == (8, 4, 1)
    for row in table.rows:
        assert row.distribution().sum() == pytest.approx(1.0, abs=1e-12)
        assert (row.n_links, row.n_labelled) == (AT10[row.key][0], sum(AT10[row.key][1].values()))
    assert table.get((C1, "title")) is None and (C1, "title") not in table


def test_at10_adjacency_matrix_in_order_c0_c1_c2_c3_o() -> None:
    np.testing.assert_allclose(at10_table().adjacency(), AT10_A, rtol=0, atol=1e-4)


def test_group_lists_are_concatenated_over_the_pages_of_a_cluster_with_duplicates() -> None:
    pages: list[TrainingPage] = [
        (C0, {"a": ["u1", "u1", "unfetched"], "b": []}),
        (C0, {"a": ["u2"]}),
        (C1, {"a": ["u1"]}),
    ]
    table = build(pages, {"u1": C1, "u2": C2}, n_clusters=3)
    row = table.get((C0, "a"))
    assert row == Row(C0, "a", (0, 2, 1, 0), n_links=4, n_pages=2)
    assert row.distribution() == pytest.approx([0, 2 / 3, 1 / 3, 0])
    assert table.keys == ((C0, "a"), (C1, "a"))  # "b" is empty: no row, no page counted


def test_redirected_links_take_the_label_of_their_final_page() -> None:
    pages: list[TrainingPage] = [(C0, {"a": ["http://s.test/p/1", "http://s.test/t/1"]})]
    labels = {"http://s.test/t/1": C1}
    table = build(pages, labels, n_clusters=2, redirects={"http://s.test/p/1": "http://s.test/t/1"})
    assert table.get((C0, "a")) == Row(C0, "a", (0, 2, 0), n_links=2, n_pages=1)
    assert build(pages, labels, n_clusters=2).get((C0, "a")) == Row(C0, "a", (0, 1, 0), n_links=2, n_pages=1)


def test_rows_without_a_labelled_destination_are_dropped_a10() -> None:
    pages: list[TrainingPage] = [(C0, {"seen": ["d"], "late": ["x", "y", "z"]})]
    table = build(pages, {"d": C0}, n_clusters=1)
    assert table.keys == ((C0, "seen"),)
    assert table.get((C0, "late")) is None
    np.testing.assert_array_equal(table.adjacency(), [[1, 0], [0, 0]])  # the unlabelled links spread nowhere


def test_outlier_pages_give_rows_keyed_by_o_and_fill_the_last_row_of_a() -> None:
    pages: list[TrainingPage] = [(O, {"nav": ["home", "gone"]}), (C0, {"nav": ["odd"]})]
    table = build(pages, {"home": C0, "odd": O}, n_clusters=1)
    assert table.keys == ((O, "nav"), (C0, "nav"))
    assert table.get((O, "nav")) == Row(O, "nav", (1, 0), n_links=2, n_pages=1)
    np.testing.assert_array_equal(table.adjacency(), [[0, 1], [2, 0]])


def test_labels_outside_the_clusters_are_refused() -> None:
    with pytest.raises(ValueError, match="label 2"):
        build([(2, {"a": ["u"]})], {"u": C0}, n_clusters=2)
    with pytest.raises(ValueError, match="label 5"):
        build([(C0, {"a": ["u"]})], {"u": 5}, n_clusters=2)


def test_the_table_round_trips_through_json_byte_for_byte_whatever_the_input_order() -> None:
    table = at10_table()
    raw = json.dumps(table.to_data(), sort_keys=True)
    again = NavigationTable.from_data(json.loads(raw))
    assert again == table
    assert json.dumps(again.to_data(), sort_keys=True) == raw
    pages, labels = at10_training()
    shuffled = [(cluster, dict(reversed(groups.items()))) for cluster, groups in reversed(pages)]
    assert json.dumps(build(shuffled, labels, n_clusters=4).to_data(), sort_keys=True) == raw


@pytest.mark.parametrize("row", [
    {"cluster": 0, "apath": "a", "destinations": [1, 0], "links": 1, "pages": 1},  # one count short
    {"cluster": 0, "apath": "a", "destinations": [0, 0, 0], "links": 1, "pages": 1},  # nothing labelled
    {"cluster": 0, "apath": "a", "destinations": [2, 0, 0], "links": 1, "pages": 1},  # more labelled than links
])
def test_inconsistent_rows_are_refused(row: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="row"):
        NavigationTable.from_data({"clusters": 2, "rows": [row]})


@st.composite
def training_sets(draw: st.DrawFn) -> tuple[list[TrainingPage], dict[str, int], int]:
    n_clusters = draw(st.integers(1, 4))
    cluster = st.integers(OUTLIER, n_clusters - 1)
    urls = [f"u{i}" for i in range(12)]
    labels = draw(st.dictionaries(st.sampled_from(urls), cluster))
    groups = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.lists(st.sampled_from(urls), max_size=6))
    return draw(st.lists(st.tuples(cluster, groups), max_size=8)), labels, n_clusters


@given(training_sets())
@settings(max_examples=200, deadline=None)
def test_rows_are_distributions_and_a_spreads_every_link_of_a_row(training: tuple[list[TrainingPage],
                                                                                  dict[str, int], int]) -> None:
    pages, labels, n_clusters = training
    table = build(pages, labels, n_clusters)
    matrix = table.adjacency()
    for cluster in range(OUTLIER, n_clusters):
        rows = [row for row in table.rows if row.cluster == cluster]
        assert matrix[index_of(cluster, n_clusters)].sum() == pytest.approx(sum(row.n_links for row in rows))
    for row in table.rows:
        assert row.n_labelled > 0 and row.distribution().sum() == pytest.approx(1.0)
    labelled_groups = {(cluster, apath) for cluster, groups in pages for apath, urls in groups.items()
                       if any(url in labels for url in urls)}
    assert set(table.keys) == labelled_groups


# --- AT-11: HITS, UCC mode --------------------------------------------------------------------


def test_at11_hits_without_self_loops() -> None:
    result = hits(AT10_A)
    assert result.authority == pytest.approx([0.070560, 0.246391, 0.451176, 0.113062, 0.118811], abs=1e-4)
    assert result.hub == pytest.approx([0.455931, 0.422761, 0.116841, 0.004467, 0], abs=1e-4)
    assert result.info(ALPHA_UCC) == pytest.approx([0.263246, 0.334576, 0.284008, 0.058764, 0.059405], abs=1e-4)
    assert result.authority.sum() == pytest.approx(1.0) and result.hub.sum() == pytest.approx(1.0)


def test_hits_starts_uniform_and_normalises_every_step() -> None:
    one_step = hits(AT10_A, drop_self_loops=False, iterations=1)
    hub = AT10_A.sum(axis=1) / AT10_A.sum()  # h¹ = A·(uniform a⁰), normalised
    authority = AT10_A.T @ hub / (AT10_A.T @ hub).sum()
    assert one_step.hub == pytest.approx(hub) and one_step.authority == pytest.approx(authority)
    assert hits(AT10_A, drop_self_loops=False).authority != pytest.approx(hits(AT10_A).authority, abs=1e-4)
    assert hits(AT10_A, iterations=1000, tol=0.0).authority == pytest.approx(hits(AT10_A).authority, abs=1e-9)


def test_hits_of_a_graph_without_edges_is_zero_not_nan() -> None:
    result = hits(np.diag([3.0, 1.0]))
    assert result.authority.tolist() == [0.0, 0.0] and result.hub.tolist() == [0.0, 0.0]


def test_hits_refuses_a_matrix_that_is_not_an_adjacency() -> None:
    for bad in (np.zeros((2, 3)), np.zeros((0, 0)), -np.eye(2)):
        with pytest.raises(ValueError, match="adjacency"):
            hits(bad)


# --- AT-12: scores, UCC mode ------------------------------------------------------------------


def test_at12_cluster_scores_before_and_after_harvesting() -> None:
    assert ucc_scores((0, 0, 0, 0, 0)) == pytest.approx([0.078974, 0.150559, 0.113603, 0.001175, 0], abs=1e-4)
    assert ucc_scores(HARVESTED) == pytest.approx([0.063179, 0.060224, 0.090883, 0.001175, 0], abs=1e-4)


def test_at12_link_scores_and_their_whole_order() -> None:
    table = at10_table()
    scores = scores_by_key(table, ucc_scores(HARVESTED))
    expected = [
        ({(C0, "user"), (C1, "user")}, 0.090883),
        ({(C0, "page"), (C1, "crumb"), (C3, "home")}, 0.063179),
        ({(C2, "posts")}, 0.060963),
        ({(C0, "title"), (C1, "related")}, 0.060224),
        ({(C0, "foot"), (C1, "foot"), (C2, "foot"), (C3, "foot")}, 0.001175),
        ({(C1, "reply")}, 0.0),
    ]
    assert set().union(*(keys for keys, _ in expected)) == set(table.keys)
    for keys, value in expected:
        for key in keys:
            assert scores[key] == pytest.approx(value, abs=1e-4), key
    lowest = [min(scores[key] for key in keys) for keys, _ in expected]
    highest = [max(scores[key] for key in keys) for keys, _ in expected]
    assert all(low > high for low, high in zip(lowest, highest[1:], strict=False))


def test_at12_balance_changes_which_key_is_best() -> None:
    table = at10_table()
    before = scores_by_key(table, ucc_scores((0, 0, 0, 0, 0)))
    after = scores_by_key(table, ucc_scores(HARVESTED))
    assert max(before, key=before.__getitem__) in {(C0, "title"), (C1, "related")}
    assert max(after, key=after.__getitem__) in {(C0, "user"), (C1, "user")}


def test_balance_counts_outliers_in_its_denominator_and_is_one_before_any_page() -> None:
    assert balance([0, 0, 0]).tolist() == [1.0, 1.0, 1.0]
    assert balance([1, 0, 1]).tolist() == [0.5, 1.0, 0.5]  # the last index is O


def test_the_outliers_score_zero_in_both_policies() -> None:
    info = np.ones(5)
    assert ucc_cluster_scores(info, DSIM, (0, 0, 0, 0, 7))[-1] == 0.0
    assert ucc_cluster_scores(info, DSIM, HARVESTED, Factors(False, False, False)).tolist() == [1, 1, 1, 1, 0]
    assert target_cluster_scores(info).tolist() == [1, 1, 1, 1, 0]


def test_each_ablation_sets_its_missing_factor_to_one() -> None:
    info = hits(AT10_A).info(ALPHA_UCC)[:4]
    bal = np.array([0.8, 0.4, 0.8, 1.0])
    dsim = np.array(DSIM)
    expected = {"DSim·Balance": dsim * bal, "Info·Balance": info * bal, "Info·DSim": info * dsim,
                "Info·DSim·Balance": info * dsim * bal}
    ablations = {"DSim·Balance": Factors(info=False), "Info·Balance": Factors(dsim=False),
                 "Info·DSim": Factors(balance=False), "Info·DSim·Balance": Factors()}  # Table 5's variants
    for name, factors in ablations.items():
        scores = ucc_cluster_scores(hits(AT10_A).info(ALPHA_UCC), DSIM, HARVESTED, factors)
        assert scores == pytest.approx([*expected[name], 0.0]), name


def test_score_vectors_of_the_wrong_length_are_refused() -> None:
    with pytest.raises(ValueError, match="DSim"):
        ucc_cluster_scores(np.ones(5), DSIM[:3], HARVESTED)
    with pytest.raises(ValueError, match="harvest counts"):
        ucc_cluster_scores(np.ones(5), DSIM, HARVESTED[:4])


def test_a_key_without_a_row_scores_zero_a11_and_single_keys_match_the_batch() -> None:
    table = at10_table()
    cluster_scores = ucc_scores(HARVESTED)
    assert link_score(table, (C3, "never-seen"), cluster_scores) == 0.0
    assert link_score(table, (O, "foot"), cluster_scores) == 0.0
    batch = scores_by_key(table, cluster_scores)
    for key in table.keys:
        assert link_score(table, key, cluster_scores) == pytest.approx(batch[key], abs=1e-15)


# --- AT-13: target mode -----------------------------------------------------------------------


def test_at13_target_hits_and_info() -> None:
    result = target_hits(AT10_A, C1)
    assert result.hub == pytest.approx([0.40, 0.36, 0.24, 0, 0], abs=1e-4)
    assert result.authority.tolist() == [0, 1, 0, 0, 0]
    assert result.info(ALPHA_TARGET) == pytest.approx([0.08, 0.872, 0.048, 0, 0], abs=1e-4)


def test_at13_link_scores_and_their_whole_order() -> None:
    table = at10_table()
    scores = scores_by_key(table, target_cluster_scores(target_hits(table.adjacency(), C1).info(ALPHA_TARGET)))
    expected = [
        ({(C0, "title"), (C1, "related")}, 0.872),
        ({(C2, "posts")}, 0.674),
        ({(C0, "page"), (C1, "crumb"), (C3, "home")}, 0.08),
        ({(C0, "user"), (C1, "user")}, 0.048),
        ({(C0, "foot"), (C1, "foot"), (C2, "foot"), (C3, "foot"), (C1, "reply")}, 0.0),
    ]
    assert set().union(*(keys for keys, _ in expected)) == set(table.keys)
    for keys, value in expected:
        for key in keys:
            assert scores[key] == pytest.approx(value, abs=1e-4), key


def test_several_targets_are_the_union_of_their_clusters() -> None:
    """A27: each example's cluster is a target (authority 1); hubs lead to any of them."""
    both = target_hits(AT10_A, C1, C2)
    assert both.authority.tolist() == [0, 1, 1, 0, 0]
    into = AT10_A[:, C1] + AT10_A[:, C2]  # 20, 21, 6, 0, 0
    assert both.hub == pytest.approx(into / into.sum())
    assert target_hits(AT10_A, C1, C1).hub == pytest.approx(target_hits(AT10_A, C1).hub)
    with pytest.raises(ValueError, match="at least one"):
        target_hits(AT10_A)


def test_the_target_must_be_a_real_cluster() -> None:
    with pytest.raises(ValueError, match="outliers"):
        target_hits(AT10_A, O)
    with pytest.raises(ValueError, match="label 4"):
        target_hits(AT10_A, 4)
