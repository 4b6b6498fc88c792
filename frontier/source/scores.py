"""Cluster and link scores of SOUrCe's two harvesting policies (digest §3.2–3.4, eqs. 7–12; AT-11…AT-13).

Crawling-for-UCC: HITS on A with its diagonal zeroed (A13), Info = α·a + (1−α)·h with
α = 0.5, and Score(C) = Info·DSim·Balance (eq. 11), where Balance = 1 − r and r is the
cluster's share of every page harvested so far, outliers included, 0 before the first
(A14). Any factor can be switched off, i.e. set to 1, for Table 5's ablations.
Crawling-for-target: a = the indicator of the target cluster t, h ∝ A[:, t] (the diagonal
kept, so the target's self-links count), α = 0.8 and Score(C) = Info. In both, Score(O) = 0
(A12), and a link found under key (c, x) scores Σ_j P(C_j | c, x)·Score(C_j) (eq. 12), 0
when the key has no row (A11).

Only Balance changes during a crawl. A policy recomputes the cluster-score vector (n + 1
products) when the harvest counts change and scores keys with :func:`link_score`, one dot
product over the row's precomputed distribution, or every key at once with
:func:`link_scores`, one matrix-vector product.

HITS (A13): both vectors start uniform at 1/(n+1); each step computes h = A·a, then
a = Aᵀ·h, L1-normalising each; it stops when ‖Δa‖₁ + ‖Δh‖₁ < tol or after ``iterations``
steps. Our choice: a vector whose sum is 0 (a graph with no edge left) stays 0 instead of
being divided by 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from frontier.source.navigation import (
    OUTLIER,
    FloatArray,
    Key,
    NavigationTable,
    index_of,
)

ALPHA_UCC = 0.5
"""α for crawling-for-UCC (eq. 9, after Liu et al. 2011)."""
ALPHA_TARGET = 0.8
"""α for crawling-for-target: target pages matter more than hubs."""


@dataclass(frozen=True, eq=False)
class Hits:
    """HITS authority and hub vectors, one entry per cluster index (O last)."""

    authority: FloatArray
    hub: FloatArray

    def info(self, alpha: float) -> FloatArray:
        """Info = α·authority + (1−α)·hub (eq. 9)."""
        return alpha * self.authority + (1 - alpha) * self.hub


def _square(adjacency: npt.ArrayLike) -> FloatArray:
    matrix = np.array(adjacency, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise ValueError(f"the adjacency matrix must be square and non-empty, not of shape {matrix.shape}")
    if (matrix < 0).any():
        raise ValueError("the adjacency matrix has a negative entry")
    return matrix


def _l1(vector: FloatArray) -> FloatArray:
    total = vector.sum()
    return vector / total if total > 0 else vector


def hits(adjacency: npt.ArrayLike, drop_self_loops: bool = True, iterations: int = 100, tol: float = 1e-10) -> Hits:
    """HITS on A (eqs. 7–8); ``drop_self_loops`` zeroes the diagonal first, as crawling-for-UCC does."""
    matrix = _square(adjacency)
    if drop_self_loops:
        np.fill_diagonal(matrix, 0.0)
    authority = hub = np.full(matrix.shape[0], 1 / matrix.shape[0])
    for _ in range(iterations):
        new_hub = _l1(matrix @ authority)
        new_authority = _l1(matrix.T @ new_hub)
        change = float(np.abs(new_authority - authority).sum() + np.abs(new_hub - hub).sum())
        authority, hub = new_authority, new_hub
        if change < tol:
            break
    return Hits(authority, hub)


def target_hits(adjacency: npt.ArrayLike, *targets: int) -> Hits:
    """Crawling-for-target's HITS: authority fixed to the indicator of the ``targets`` clusters, hub ∝ the
    sum of their columns of A. Several targets are the union of the clusters of several example pages
    (A27: a type spread over layouts); each is a target as a single one would be."""
    matrix = _square(adjacency)
    if not targets:
        raise ValueError("at least one target cluster is needed")
    if OUTLIER in targets:
        raise ValueError("the target must be a cluster, not the outliers (A27)")
    columns = sorted({index_of(target, matrix.shape[0] - 1) for target in targets})
    authority = np.zeros(matrix.shape[0])
    authority[columns] = 1.0
    return Hits(authority, _l1(matrix[:, columns].sum(axis=1)))


@dataclass(frozen=True)
class Factors:
    """Which factors of eq. 11 a UCC score multiplies; one switched off counts as 1 (Table 5)."""

    info: bool = True
    dsim: bool = True
    balance: bool = True


def balance(harvested: npt.ArrayLike) -> FloatArray:
    """Balance = 1 − r per cluster index, r = the index's share of all harvested pages (O included); 1 before any."""
    counts = np.asarray(harvested, dtype=np.float64)
    total = counts.sum()
    shares = counts / total if total > 0 else np.zeros_like(counts)
    return 1 - shares


def _outlier_zeroed(scores: FloatArray) -> FloatArray:
    scores[index_of(OUTLIER, len(scores) - 1)] = 0.0
    return scores


def ucc_cluster_scores(
    info: npt.ArrayLike, dsim: npt.ArrayLike, harvested: npt.ArrayLike, factors: Factors = Factors()
) -> FloatArray:
    """Score(C) = Info·DSim·Balance (eq. 11) per cluster index, Score(O) = 0.

    ``info`` and ``harvested`` (pages classified into each cluster so far) have one entry
    per index, O last; ``dsim`` one per real cluster (O has none).
    """
    info_vector = np.asarray(info, dtype=np.float64)
    dsim_vector = np.asarray(dsim, dtype=np.float64)
    harvested_vector = np.asarray(harvested)
    n_clusters = len(info_vector) - 1
    if len(dsim_vector) != n_clusters or len(harvested_vector) != len(info_vector):
        raise ValueError(f"{len(info_vector)} Info values need {n_clusters} DSim values and as many harvest counts "
                         f"as Info values, not {len(dsim_vector)} and {len(harvested_vector)}")
    scores = np.ones(len(info_vector))
    if factors.info:
        scores *= info_vector
    if factors.dsim:
        scores *= np.insert(dsim_vector, index_of(OUTLIER, n_clusters), 0.0)
    if factors.balance:
        scores *= balance(harvested_vector)
    return _outlier_zeroed(scores)


def target_cluster_scores(info: npt.ArrayLike) -> FloatArray:
    """Crawling-for-target's Score(C) = Info, Score(O) = 0."""
    return _outlier_zeroed(np.array(info, dtype=np.float64))


def link_score(table: NavigationTable, key: Key, cluster_scores: FloatArray) -> float:
    """Score(u) of a link found under ``key`` (eq. 12); 0 when the key has no row (A11)."""
    position = table.position(key)
    return 0.0 if position is None else float(table.distributions[position] @ cluster_scores)


def link_scores(table: NavigationTable, cluster_scores: FloatArray) -> FloatArray:
    """Score(u) of every key of ``table``, aligned with ``table.rows``."""
    return table.distributions @ cluster_scores


def novelty(downloads: npt.ArrayLike, repeats: npt.ArrayLike, prior: float = 1.0) -> FloatArray:
    """Per navigation-table row, the share of its downloads whose content no earlier download of the
    crawl carried, smoothed by ``prior`` new downloads: (prior + downloads − repeats) / (prior + downloads).

    Ours (crawling-for-target): a row whose links lead to aliases of pages already fetched (a
    page-number widget beside a "older" cursor, both reaching one listing page) is demoted as
    the crawl finds out; 1 for a row not downloaded yet."""
    fetched = np.asarray(downloads, dtype=np.float64)
    repeated = np.asarray(repeats, dtype=np.float64)
    if fetched.shape != repeated.shape or (repeated > fetched).any() or (repeated < 0).any():
        raise ValueError("repeats must be between 0 and the downloads, one per row")
    return (prior + fetched - repeated) / (prior + fetched)


def target_link_scores(distributions: FloatArray, cluster_scores: FloatArray, targets: Sequence[int],
                       agreement: npt.ArrayLike) -> FloatArray:
    """Score(u) of the links of each row of ``distributions`` (destination distributions, one column
    per cluster index, O last; eq. 12) with the part that leads into ``targets`` (cluster labels)
    weighted by the row's ``agreement`` (:func:`frontier.source.kin.role_shares`); the hub part,
    into other clusters, as it is."""
    n_clusters = len(cluster_scores) - 1
    into = np.zeros(len(cluster_scores), dtype=bool)
    into[[index_of(label, n_clusters) for label in targets]] = True
    target_part = distributions[:, into] @ cluster_scores[into]
    return np.asarray(agreement, dtype=np.float64) * target_part + distributions[:, ~into] @ cluster_scores[~into]
