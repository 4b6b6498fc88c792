"""SOUrCe clustering (digest §2.7–2.9, §3.2): K-dist, eps AT-06, DBSCAN AT-07, kNN AT-08, DSim of AT-04."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from frontier.source.clustering import (
    FALLBACK_EPS,
    OUTLIER,
    KnnClassifier,
    bin_factor,
    centroids,
    dbscan,
    distance_matrix,
    dsim,
    estimate_eps,
    first_appearance_order,
    k_dist,
    n_bins,
    weighted_vote,
)

# AT-04's L1-normalised pages
P1 = (0.606684, 0.393316, 0.0)
P2 = (0.327324, 0.0, 0.672676)
P3 = (0.435425, 0.564575, 0.0)
P4 = (0.0, 0.0, 1.0)

AT06_KDISTS = [0.0] + [0.05] * 299 + [0.15] * 2 + [0.25] * 250 + [0.35] * 100 + [0.45] * 3 + [0.55] * 200 \
    + [0.65] * 100 + [0.75] * 40 + [0.85] * 3 + [0.95, 1.0]


def matrix(*rows: tuple[float, ...]) -> np.ndarray:
    return np.array(rows, dtype=np.float64)


def labels(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_at04_distances_and_dsim() -> None:
    X = matrix(P1, P2, P3, P4)
    distances = distance_matrix(X)
    assert distances[0, 2] == pytest.approx(0.242197, abs=1e-4)
    assert distances[1, 3] == pytest.approx(0.462907, abs=1e-4)
    assert np.array_equal(distances, distances.T) and not distances.diagonal().any()
    spread = dsim(X, labels(0, 1, 0, OUTLIER))
    assert spread[0] == pytest.approx(0.121099, abs=1e-4)
    assert spread[1] == 0.0  # a singleton (A15)
    assert OUTLIER not in spread


def test_centroids_are_cluster_means_without_outliers() -> None:
    found = centroids(matrix(P1, P2, P3, P4), labels(0, OUTLIER, 0, 1))
    assert list(found) == [0, 1]
    assert found[0] == pytest.approx([(P1[0] + P3[0]) / 2, (P1[1] + P3[1]) / 2, 0.0])
    assert found[1] == pytest.approx(P4)


def test_k_dist_is_the_kth_nearest_other_row() -> None:
    X = matrix((0.0,), (1.0,), (3.0,), (6.0,), (10.0,))
    assert k_dist(X, k=1) == pytest.approx([1, 1, 2, 3, 4])
    assert k_dist(X, k=3) == pytest.approx([6, 5, 3, 5, 9])


def test_k_dist_counts_a_duplicate_as_a_neighbour_at_zero() -> None:
    X = matrix((0.0,), (0.0,), (2.0,), (5.0,))
    assert k_dist(X, k=1) == pytest.approx([0, 0, 2, 3])


def test_k_dist_needs_more_rows_than_k() -> None:
    with pytest.raises(ValueError, match="k-dist"):
        k_dist(matrix((0.0,), (1.0,), (2.0,)), k=3)


def test_at06_histogram_and_eps() -> None:
    estimate = estimate_eps(np.array(AT06_KDISTS), bins=10)
    assert len(AT06_KDISTS) == 1_000
    assert estimate.counts == (300, 2, 250, 100, 3, 200, 100, 40, 3, 2)
    assert estimate.eps == pytest.approx(0.4, abs=1e-4)
    assert not estimate.fallback


def test_at06_number_of_bins() -> None:
    assert n_bins(48, 4.8) == 10
    assert n_bins(250, bin_factor(1_000)) == 52
    assert n_bins(3, 16.0) == 1  # never zero bins
    assert n_bins(10, 4.0) == 3  # 2.5 rounds up


def test_bin_factor_anchors_interpolation_and_clamp() -> None:
    assert [bin_factor(size) for size in (100, 200, 500, 1_000)] == pytest.approx([16, 12, 6.0, 4.8])
    assert bin_factor(10) == bin_factor(100) == 16.0
    assert bin_factor(5_000) == pytest.approx(4.8)
    share = math.log(300 / 200) / math.log(500 / 200)
    assert bin_factor(300) == pytest.approx(12 + share * (6 - 12))
    with pytest.raises(ValueError):
        bin_factor(0)


def test_eps_falls_back_when_no_bin_is_sparse(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        estimate = estimate_eps(np.repeat([0.1, 0.2, 0.3, 0.4], 5), bins=4)
    assert estimate.fallback and estimate.eps == FALLBACK_EPS
    assert estimate.counts == (5, 5, 5, 5)
    assert "falls back" in caplog.text


def test_at07_four_close_points_cluster_three_do_not() -> None:
    four = [(0.0, 0.0), (0.01, 0.0), (0.0, 0.01), (0.01, 0.01)]
    three = [(5.0, 5.0), (5.01, 5.0), (5.0, 5.01)]
    assert dbscan(matrix(*four), eps=0.05).tolist() == [0, 0, 0, 0]
    assert dbscan(matrix(*three), eps=0.05).tolist() == [OUTLIER] * 3
    assert dbscan(matrix(*three, *four), eps=0.05).tolist() == [OUTLIER] * 3 + [0] * 4


def test_dbscan_numbers_clusters_by_first_appearance() -> None:
    # row 0 is a border point of the right-hand group; sklearn numbers the left group (first core, row 1) first
    left = [(0.0, 0.0), (0.0, 0.1), (0.1, 0.0), (0.1, 0.1)]
    right = [(5.0, 0.0), (5.0, 0.1), (5.1, 0.0), (5.1, 0.1)]
    X = matrix((5.25, 0.05), *left, *right)
    assert dbscan(X, eps=0.2).tolist() == [0, 1, 1, 1, 1, 0, 0, 0, 0]


def test_a_border_point_shared_by_two_clusters_joins_the_first_in_d_order() -> None:
    left = [(0.0, 0.0), (-0.1, 0.0), (-0.2, 0.0), (-0.3, 0.0)]
    right = [(2.0, 0.0), (2.1, 0.0), (2.2, 0.0), (2.3, 0.0)]
    border = (1.0, 0.0)  # within eps of (0, 0) and (2, 0) only, so not a core point
    assert dbscan(matrix(*left, border, *right), eps=1.0).tolist() == [0] * 5 + [1] * 4
    assert dbscan(matrix(*right, border, *left), eps=1.0).tolist() == [0] * 5 + [1] * 4


def test_first_appearance_order_keeps_outliers() -> None:
    assert first_appearance_order(labels(3, -1, 1, 3, -1, 0)).tolist() == [0, -1, 1, 0, -1, 2]


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(5, 30), st.integers(1, 4)), elements=st.integers(0, 8).map(float)),
       st.sampled_from([0.5, 1.0, 1.5, 2.5]))
def test_core_points_are_the_rows_whose_k_dist_is_within_eps(X: np.ndarray, eps: float) -> None:
    found = dbscan(X, eps)
    core = k_dist(X, k=3) <= eps
    assert not (found[core] == OUTLIER).any()
    clusters = [label for label in found.tolist() if label != OUTLIER]
    assert list(dict.fromkeys(clusters)) == list(range(len(set(clusters))))
    # every cluster holds a core point, and no row within eps of a core point is an outlier (a border
    # row within reach of two clusters joins the first: a later cluster may keep fewer than minPts rows)
    for label in set(clusters):
        assert core[found == label].any()
    reach = np.linalg.norm(X[:, None, :] - X[None, :, :], axis=2) <= eps
    assert not (found[reach[core].any(axis=0)] == OUTLIER).any()


def test_at08_outlier_neighbours_give_an_outlier() -> None:
    X = matrix((0.0, 0.0), (0.0, 0.1), (0.1, 0.0), (5.0, 5.0), (5.0, 5.1), (5.1, 5.0))
    classifier = KnnClassifier(X, labels(OUTLIER, OUTLIER, OUTLIER, 0, 0, 0))
    assert classifier.classify(np.array([0.05, 0.05])) == OUTLIER
    assert classifier.classify(np.array([5.05, 5.05])) == 0


def test_at08_an_exact_duplicate_takes_its_training_label() -> None:
    X = matrix((0.0, 0.0), (0.0, 0.1), (0.1, 0.0), (0.3, 0.3))
    classifier = KnnClassifier(X, labels(1, 1, 1, 2))
    assert classifier.classify(np.array([0.3, 0.3])) == 2  # the two other neighbours vote 1
    duplicates = KnnClassifier(matrix((0.3, 0.3), (0.3, 0.3), (0.0, 0.0)), labels(4, 5, 5))
    assert duplicates.classify(np.array([0.3, 0.3])) == 4  # the first duplicate in D order


def test_knn_votes_by_inverse_distance() -> None:
    classifier = KnnClassifier(matrix((0.0,), (1.0,), (-1.0,), (20.0,)), labels(1, 2, 2, 1))
    assert classifier.classify(np.array([0.1])) == 1  # 1/0.1 outweighs 1/0.9 + 1/1.1: not a plain majority
    assert classifier.classify(np.array([0.45])) == 2  # 1/0.55 + 1/1.45 outweighs 1/0.45: not the nearest alone


def test_weighted_vote_and_its_tie_break() -> None:
    assert weighted_vote([1, 2, 2], [1.0, 1.5, 1.5]) == 2  # 1 < 2/1.5
    assert weighted_vote([1, 2, 2], [1.0, 2.0, 2.0]) == 1  # 1 = 1/2 + 1/2: the nearest neighbour's label
    assert weighted_vote([1, 2, 2], [0.3, 0.6, 0.6]) == 1  # the same tie, inexact in floating point
    assert weighted_vote([OUTLIER, 4, 5], [1.0, 1.0, 1.0]) == OUTLIER


def test_knn_with_fewer_training_rows_than_k_and_many_vectors() -> None:
    X = matrix((0.0,), (10.0,))
    classifier = KnnClassifier(X, labels(0, 1))
    queries = matrix((1.0,), (9.0,), (10.0,), (5.0,))
    assert classifier.classify_many(queries).tolist() == [0, 1, 1, 0]  # 5.0: tie, the nearest is row 0
    with pytest.raises(ValueError):
        KnnClassifier(X, labels(0))
