"""SOUrCe's page clustering: K-dist, eps, DBSCAN, the kNN classifier and DSim (digest §2.7–2.9, §3.2).

Pure functions over numpy float64 matrices of L1-normalised page vectors (rows = pages, in D
order), with Euclidean distance. Nothing here reads a file or a clock; every result depends on
its inputs only.

Distances are computed exactly, as the norm of the row difference, not with the faster
‖a‖² − 2a·b + ‖b‖² expansion: that expansion leaves about 1e-8 between duplicate pages, and the
classifier's exact-match rule (d = 0) and the core condition "K-dist ≤ eps" (A2) need duplicates
at exactly 0. :func:`k_dist` and :func:`dbscan` read the same :func:`distance_matrix`, so a page
is a DBSCAN core point exactly when its K-dist (K = minPts − 1 other pages) is ≤ eps.

Choices the digest leaves open (ours):

- :func:`n_bins` rounds halves up, as Python 2's ``round`` (the [C] code's language) did.
- :func:`estimate_eps` logs a warning and sets :attr:`EpsEstimate.fallback` when no bin
  qualifies (A3).
- :func:`dbscan`: sklearn processes points in D order and expands a cluster fully before
  starting the next, so a border point reachable from two clusters joins the one whose first
  core point comes first in D (our reading of §2.8's "first core point that reaches it").
- :class:`KnnClassifier`: neighbours are ordered by (distance, training index); two labels
  whose vote totals agree within a relative 1e-9 are tied (1/d sums are not exact in floating
  point), and a tie goes to the label of the nearer neighbour.
- :func:`dsim` and :func:`centroids` leave the outliers (−1) out: they are no cluster, and
  Score(O) = 0 whatever their spread (§3.2).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from sklearn.cluster import DBSCAN

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

OUTLIER = -1
FALLBACK_EPS = 0.10
BIN_FACTORS: tuple[tuple[int, float], ...] = ((100, 16.0), (200, 12.0), (500, 6.0), (1_000, 4.8))
"""(|D|, w) anchors from [C] (§2.7, A1)."""
TIE_TOLERANCE = 1e-9


def distances_to(X: FloatArray, vector: FloatArray) -> FloatArray:
    """The exact Euclidean distance from ``vector`` to every row of ``X``."""
    difference = X - vector
    squared: FloatArray = np.einsum("ij,ij->i", difference, difference)
    return np.sqrt(squared)


def distance_matrix(X: FloatArray) -> FloatArray:
    """All pairwise exact Euclidean distances between the rows of ``X`` (zero diagonal)."""
    matrix = np.empty((X.shape[0], X.shape[0]))
    for row in range(X.shape[0]):
        matrix[row] = distances_to(X, X[row])
    return matrix


def k_dist(X: FloatArray, k: int = 3) -> FloatArray:
    """The distance of each row to its k-th nearest *other* row (§2.7, A2)."""
    if not 0 < k < X.shape[0]:
        raise ValueError(f"k-dist needs 0 < k < number of rows, not k={k} with {X.shape[0]} rows")
    # each row's own distance is an exact 0, the smallest, so position k is the k-th other row
    return np.partition(distance_matrix(X), k, axis=1)[:, k]


def bin_factor(n_pages: int) -> float:
    """w for |D| = ``n_pages``: the [C] anchors, log-linear between them, clamped outside (§2.7)."""
    if n_pages < 1:
        raise ValueError(f"the training set must have at least one page, not {n_pages}")
    sizes = [math.log(size) for size, _ in BIN_FACTORS]
    factors = [factor for _, factor in BIN_FACTORS]
    return float(np.interp(math.log(n_pages), sizes, factors))


def n_bins(n_features: int, w: float) -> int:
    """NumBins = max(1, round(|V| / w)), halves rounded up (A1)."""
    return max(1, math.floor(n_features / w + 0.5))


@dataclass(frozen=True)
class EpsEstimate:
    """eps, the K-dist histogram it was read from, and whether it is the fallback."""

    eps: float
    counts: tuple[int, ...]
    edges: tuple[float, ...]
    fallback: bool


def estimate_eps(kdists: FloatArray, bins: int, min_pts: int = 4) -> EpsEstimate:
    """The left edge of the first sparse bin past the median (§2.7, A3), or the fallback 0.10.

    Sparse: fewer than ``min_pts`` values. Past the median: the values up to and including that
    bin are more than half of all. Bins are equal-width over [min, max] of ``kdists``.
    """
    if kdists.size == 0:
        raise ValueError("no K-dist values to estimate eps from")
    counts, edges = np.histogram(kdists, bins=bins)
    histogram = tuple(int(count) for count in counts), tuple(float(edge) for edge in edges)
    cumulative = np.cumsum(counts)
    for index, count in enumerate(counts):
        if count < min_pts and cumulative[index] > 0.5 * kdists.size:
            return EpsEstimate(float(edges[index]), *histogram, fallback=False)
    log.warning("no K-dist bin has fewer than %d values past the median: eps falls back to %g", min_pts, FALLBACK_EPS)
    return EpsEstimate(FALLBACK_EPS, *histogram, fallback=True)


def first_appearance_order(labels: IntArray) -> IntArray:
    """``labels`` with the clusters renumbered 0, 1, … in order of first appearance; −1 stays."""
    renumbered = np.full(labels.shape, OUTLIER, dtype=np.int64)
    numbers: dict[int, int] = {}
    for index, label in enumerate(labels.tolist()):
        if label != OUTLIER:
            renumbered[index] = numbers.setdefault(label, len(numbers))
    return renumbered


def dbscan(X: FloatArray, eps: float, min_pts: int = 4) -> IntArray:
    """DBSCAN labels of the rows (−1: outlier), a core point counting itself among its ``min_pts`` (§2.8)."""
    clusterer = DBSCAN(eps=eps, min_samples=min_pts, metric="precomputed")
    labels = np.asarray(clusterer.fit_predict(distance_matrix(X)), dtype=np.int64)
    return first_appearance_order(labels)


class KnnClassifier:
    """kNN over every training row, votes weighted by 1/distance, −1 a class like any other (§2.9)."""

    def __init__(self, X: FloatArray, labels: IntArray, k: int = 3) -> None:
        if X.ndim != 2 or X.shape[0] == 0 or labels.shape != (X.shape[0],):
            raise ValueError(f"need a non-empty matrix and one label per row, not {X.shape} and {labels.shape}")
        if k < 1:
            raise ValueError(f"k must be at least 1, not {k}")
        self.X = np.asarray(X, dtype=np.float64)
        self.labels = np.asarray(labels, dtype=np.int64)
        self.k = min(k, X.shape[0])

    def classify(self, vector: FloatArray) -> int:
        """The cluster of one page vector; a training page's duplicate gets that page's label."""
        distances = distances_to(self.X, vector)
        nearest = np.argsort(distances, kind="stable")[: self.k]
        if distances[nearest[0]] == 0:
            return int(self.labels[nearest[0]])
        return weighted_vote(self.labels[nearest].tolist(), distances[nearest].tolist())

    def classify_many(self, vectors: FloatArray) -> IntArray:
        """The cluster of each row of ``vectors``."""
        return np.array([self.classify(vector) for vector in vectors], dtype=np.int64)


def weighted_vote(labels: Sequence[int], distances: Sequence[float]) -> int:
    """The label with the largest Σ 1/d; on a tie, the one met first in ``labels`` (nearest first)."""
    totals: dict[int, float] = {}
    for label, distance in zip(labels, distances, strict=True):
        totals[label] = totals.get(label, 0.0) + 1.0 / distance
    best = max(totals.values())
    return next(label for label, total in totals.items() if math.isclose(total, best, rel_tol=TIE_TOLERANCE))


def centroids(X: FloatArray, labels: IntArray) -> dict[int, FloatArray]:
    """M_i, the mean vector of each cluster's rows, by label; outliers left out."""
    if labels.shape != (X.shape[0],):
        raise ValueError(f"need one label per row, not {labels.shape} for {X.shape[0]} rows")
    return {label: X[labels == label].mean(axis=0) for label in _clusters(labels)}


def dsim(X: FloatArray, labels: IntArray) -> dict[int, float]:
    """DSim(C_i) = mean ‖V_j − M_i‖₂ over the cluster's rows (eq. 10, A15); a singleton gets 0."""
    return {
        label: float(distances_to(X[labels == label], centroid).mean())
        for label, centroid in centroids(X, labels).items()
    }


def _clusters(labels: IntArray) -> list[int]:
    return [int(label) for label in np.unique(labels) if label != OUTLIER]
