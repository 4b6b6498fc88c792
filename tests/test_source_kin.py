"""Crawling-for-target's widened target, role shares and role back-off (frontier/source/kin.py), and its
link scores and row novelty (frontier/source/scores.py).

Small hand-made navigation tables: a page type in two layouts (clusters 0 and 1, both reached
through ``a.message`` and ``a.older`` links), another type (cluster 2, reached through ``a.user``)
and a cluster reached through both (3).
"""

from __future__ import annotations

import numpy as np
import pytest

from frontier.source.kin import anchor_role, example_reach, in_link_profiles, kin_clusters, pooled_roles, role_shares
from frontier.source.navigation import NavigationTable, Row
from frontier.source.scores import novelty, target_link_scores


def table() -> NavigationTable:
    # destinations: counts into clusters 0, 1, 2, 3 and O
    return NavigationTable(4, [
        Row(0, "/html/body/ul/li/a[message]", (3, 2, 0, 0, 0), 5, 2),
        Row(0, "/html/body/ul/li/a[user]", (0, 0, 4, 1, 0), 5, 2),
        Row(1, "/html/body/p/a[message]", (2, 3, 0, 0, 1), 6, 3),
        Row(1, "/html/body/p/a[older]", (1, 1, 0, 0, 0), 2, 2),
        Row(2, "/html/body/div/a[user]", (0, 0, 3, 1, 0), 4, 2),
        Row(2, "/html/body/div/a[message]", (0, 0, 0, 2, 0), 2, 2),
        Row(3, "/html/body/div/a", (0, 0, 0, 0, 2), 2, 2),
    ])


def test_the_role_of_an_apath_is_its_anchor_s_class_or_the_whole_path() -> None:
    assert anchor_role("/html/body/ul/li/a[message]") == "message"
    assert anchor_role("/html/body/nav/a[page next]") == "page next"
    assert anchor_role("/html/body/div/a[]") == "/html/body/div/a[]"
    assert anchor_role("/html/body/div/a") == "/html/body/div/a"


def test_in_link_profiles_count_labelled_links_per_role() -> None:
    profiles = in_link_profiles(table())  # roles sorted: the classless Apath, message, older, user
    assert profiles.tolist() == [
        [0, 5, 1, 0],  # cluster 0: 3 + 2 message links, 1 older
        [0, 5, 1, 0],
        [0, 0, 0, 7],
        [0, 2, 0, 2],
        [2, 1, 0, 0],  # O
    ]


def test_clusters_linked_into_alike_join_the_target() -> None:
    assert kin_clusters(table(), [0], 0.8) == [0, 1]  # the same type in another layout
    assert kin_clusters(table(), [1], 0.8) == [0, 1]
    assert kin_clusters(table(), [2], 0.8) == [2]
    assert kin_clusters(table(), [0], 0.6) == [0, 1, 3]  # on square roots, cos(3, 0) = √10/(√6·2) ≈ 0.65
    assert kin_clusters(table(), [0, 2], 0.8) == [0, 2, 3]  # examples of two types: kin of their mix
    assert kin_clusters(table(), [0], 1.01) == [0]  # above 1: the examples' clusters only
    assert kin_clusters(table(), [], 0.8) == []
    with pytest.raises(ValueError, match="outliers"):
        kin_clusters(table(), [-1], 0.8)


def mixed() -> NavigationTable:
    """One type in three layouts (clusters 0, 1, 2: message links), another type (3: user links), and a
    big cluster that mixes both (4: mostly the other type's pages, so mostly user links)."""
    return NavigationTable(5, [
        Row(0, "/html/body/p/a[message]", (4, 4, 3, 0, 10, 0), 21, 5),
        Row(3, "/html/body/div/a[user]", (0, 0, 0, 5, 30, 0), 35, 5),
    ])


def test_kin_is_measured_against_the_examples_centroid_not_the_nearest_example() -> None:
    # an example page that fell in the mixed cluster: the nearest example would admit cluster 3
    # (cosine 0.87 with cluster 4, on square roots), the centroid of the three (0.94, 0.33) does not
    assert kin_clusters(mixed(), [0, 1, 4], 0.8) == [0, 1, 2, 4]
    # each example weighs as its cluster's unit profile: cluster 4's 40 links weigh as 1 example
    # (summed counts, (14, 30), would admit cluster 3 at a cosine of 0.91 and leave out 1 and 2 at 0.42)
    assert kin_clusters(mixed(), [0, 4], 0.8) == [0, 1, 2, 4]  # centroid (0.87, 0.5): cos(1), cos(2) = 0.87
    # and each example page weighs one: two examples in cluster 4 pull the centroid towards it
    assert kin_clusters(mixed(), [4, 4, 0], 0.8) == [0, 4]  # (0.76, 0.65): cos(2) = 0.76, cos(3) = 0.65


def test_a_type_s_clusters_are_kin_whatever_the_proportions_of_its_roles() -> None:
    # one type reached through message and comments links, mostly the first in the examples'
    # layouts (0, 1), mostly the second in another (2); another type, through user links (3)
    layouts = NavigationTable(4, [
        Row(0, "/html/body/p/a[message]", (40, 30, 5, 5, 0), 80, 5),
        Row(0, "/html/body/p/a[comments]", (5, 4, 10, 0, 0), 19, 5),
        Row(3, "/html/body/div/a[user]", (0, 0, 0, 50, 0), 50, 5),
    ])
    # raw counts: cos(2) = 0.55, message decides alone; square roots: 0.82 (cos(3) = 0.28)
    assert kin_clusters(layouts, [0, 1], 0.8) == [0, 1, 2]


def test_a_cluster_nothing_links_into_is_kin_of_none() -> None:
    lonely = NavigationTable(2, [Row(0, "/a[x]", (1, 0, 0), 1, 1)])
    assert kin_clusters(lonely, [1], 0.5) == [1]
    assert kin_clusters(lonely, [0], 0.5) == [0]


def test_novelty_is_the_smoothed_share_of_new_content() -> None:
    assert novelty([0, 1, 1, 3, 4], [0, 0, 1, 3, 1]).tolist() == [1.0, 1.0, 0.5, 0.25, 0.8]
    assert novelty([2], [2], prior=2.0).tolist() == [0.5]
    with pytest.raises(ValueError, match="repeats"):
        novelty([1], [2])
    with pytest.raises(ValueError, match="repeats"):
        novelty([1, 2], [1])
    assert np.array_equal(novelty([], []), np.zeros(0))


def test_role_shares_tell_how_often_a_role_led_into_the_target() -> None:
    shares = role_shares(table(), [0, 1])
    # message: 3+2, 2+3 into 0/1 of 3+2+2+3+1+2 = 13 links; older: all; user: none of 9; classless: none
    assert shares.by_role == pytest.approx({"message": 10 / 13, "older": 1.0, "user": 0.0, "/html/body/div/a": 0.0})
    assert shares.by_row.tolist() == pytest.approx([10 / 13, 0.0, 10 / 13, 1.0, 10 / 13, 0.0, 0.0])  # rows by key


def test_a_role_s_rows_pooled_are_the_back_off_of_a_key_without_a_row() -> None:
    pooled = pooled_roles(table())
    assert pooled.roles == ("/html/body/div/a", "message", "older", "user")
    assert np.allclose(pooled.distributions, [
        [0, 0, 0, 0, 1],
        [5 / 13, 5 / 13, 0, 2 / 13, 1 / 13],
        [0.5, 0.5, 0, 0, 0],
        [0, 0, 7 / 9, 2 / 9, 0],
    ])


def test_the_target_part_of_a_link_score_is_weighted_by_its_role_share() -> None:
    scores = np.array([0.9, 0.8, 0.1, 0.05, 0.0])  # clusters 0, 1 the target; 2, 3 hubs; O
    distributions = np.array([[0.5, 0.0, 0.5, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0, 0.0]])
    got = target_link_scores(distributions, scores, [0, 1], [0.5, 0.0])
    assert got.tolist() == pytest.approx([0.5 * 0.45 + 0.05, 0.05])  # the hub part is kept whole
    assert target_link_scores(distributions, scores, [0, 1], [1.0, 1.0]).tolist() == pytest.approx(
        (distributions @ scores).tolist())


def test_example_reach_demotes_a_role_that_missed_the_example_links_it_should_have_had() -> None:
    # into targets 0/1: message 10 labelled links, older 2; 4 message links reached an example
    reach = example_reach(table(), [0, 1], {"older": 1})
    # rate = 1 / 12: message's 10 labelled links into the target should have reached 10/12 examples
    assert reach == pytest.approx({"message": 1.0, "older": 1.0, "user": 1.0, "/html/body/div/a": 1.0})
    strict = example_reach(table(), [0, 1], {"older": 1}, evidence=0.5)
    assert strict == pytest.approx({"message": 1 / (10 / 12 + 1), "older": 1.0, "user": 1.0, "/html/body/div/a": 1.0})
    assert example_reach(table(), [0, 1], {"message": 4})["older"] == 1.0  # 2·4/12 expected: no evidence
    assert example_reach(table(), [0, 1], {}) == dict.fromkeys(reach, 1.0)  # no evidence: no demotion
