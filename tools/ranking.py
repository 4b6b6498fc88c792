"""PageRank, CheiRank, 2DRank and the correlator κ of a directed graph (NADINE report §1.A).

The definitions are those of Eom, Frahm, Benczúr and Shepelyansky's Wikipedia ranking paper,
with the digest's resolutions (``shared/papers/bubing-nadine.md`` §4, items 34 and 35):

- ``A_ij = 1`` if node j links to node i: self-loops dropped, a pair linked twice counted
  once (unweighted). ``S`` is ``A`` with each column divided by its sum; a column with no
  entries (a dangling node) is the uniform ``1/N``. ``G = α·S + (1 − α)/N``, α = 0.85.
- **PageRank** ``P`` is G's eigenvector for λ = 1, found by power iteration from the uniform
  vector until two iterates differ by less than ``tol`` in L1 (1e-10), at most ``max_iter``
  (200: 0.85^150 ≈ 3e-11) times. **CheiRank** ``P*`` is the same on the reversed graph.
- **K** and **K\\*** number the nodes 1..N by decreasing P and P*; equal values are ordered
  by node number (the caller's dense ids, which for the crawl's graphs follow the 64-bit
  node ids of ``store.linkgraph``).
- **2DRank** ``K2`` numbers nodes in the order they appear on the ribs of a square growing
  in the (K, K*) plane: at size n, the node with K = n (if K* ≤ n) and the node with K* = n
  (if K < n). When both appear at the same n, the one whose other index is smaller comes
  first; when those are equal too, the one on the PageRank rib (K = n) comes first. As K and
  K* are permutations this orders every node, so K2 is a permutation.
- **κ** ``= N·Σ_i P(i)·P*(i) − 1``: 0 when P and P* are unrelated (e.g. one of them uniform).

Memory: both link matrices are CSR with int32 column indices and float64 values holding the
column normalisation, so one power-iteration step is one sparse matrix–vector product;
about 24 bytes per edge in all (1M nodes, 20M edges: under 1 GB). Nothing loops over edges in
Python. Pure: arrays in, arrays out (:mod:`engine.rank_cli` reads the crawl's link graph).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp  # type: ignore[import-untyped]

ALPHA = 0.85
TOLERANCE = 1e-10
MAX_ITERATIONS = 200

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class LinkMatrices:
    """A graph of ``n`` nodes ready for power iteration.

    ``forward`` is S without its dangling columns (row i: ``1/outdeg(j)`` for each j → i) and
    ``reversed`` the same for the reversed graph (row j: ``1/indeg(i)`` for each j → i);
    ``dangling`` and ``sinks`` mark the nodes with no out-links and no in-links.
    """

    n: int
    edges: int  # distinct pairs, self-loops dropped
    forward: sp.csr_array
    reversed: sp.csr_array
    dangling: npt.NDArray[np.bool_]
    sinks: npt.NDArray[np.bool_]


def link_matrices(n: int, src: npt.ArrayLike, dst: npt.ArrayLike) -> LinkMatrices:
    """The matrices of the graph on nodes ``0..n-1`` with edges ``src[k] → dst[k]``."""
    if n >= 1 << 31:
        raise ValueError(f"{n} nodes: more than int32 indices hold")
    s = np.asarray(src, dtype=np.int64)
    d = np.asarray(dst, dtype=np.int64)
    if s.shape != d.shape or s.ndim != 1:
        raise ValueError("src and dst must be 1-d arrays of the same length")
    if len(s) and (min(s.min(), d.min()) < 0 or max(s.max(), d.max()) >= n):
        raise ValueError(f"an edge names a node outside 0..{n - 1}")
    keep = s != d
    # one sort of packed (src, dst) keys leaves the edges in CSR order by source, duplicate pairs side by side
    # (a sort and a compare, not np.unique: numpy 2.4's hashing unique took 50x the sort's time here)
    keys = s[keep] * n + d[keep]
    del s, d, keep
    keys.sort()
    if len(keys):
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    out_src = (keys // n).astype(np.int32)
    out_dst = (keys % n).astype(np.int32)
    del keys
    out_degree = np.bincount(out_src, minlength=n)
    in_degree = np.bincount(out_dst, minlength=n)
    indptr = np.zeros(n + 1, dtype=np.int64 if len(out_src) >= 1 << 31 else np.int32)
    np.cumsum(out_degree, out=indptr[1:])
    with np.errstate(divide="ignore"):
        inverse_in = 1.0 / in_degree
    # row j of the reversed graph's S: j's out-links, each weighted by 1/indeg of its target
    reversed_ = sp.csr_array((inverse_in[out_dst], out_dst, indptr), shape=(n, n))
    with np.errstate(divide="ignore"):
        inverse_out = 1.0 / out_degree
    # S itself is the transpose with 1/outdeg(source); scipy's CSC→CSR conversion is a counting sort in C
    forward = sp.csr_array((inverse_out[out_src], out_dst, indptr), shape=(n, n)).T.tocsr()
    return LinkMatrices(n, len(out_src), forward, reversed_, out_degree == 0, in_degree == 0)


@dataclass(frozen=True)
class PowerIteration:
    vector: Floats  # sums to 1
    iterations: int
    converged: bool  # the last step moved it by less than the tolerance in L1
    seconds: float


def power_iteration(matrix: sp.csr_array, dangling: npt.NDArray[np.bool_], *, alpha: float = ALPHA,
                    tol: float = TOLERANCE, max_iter: int = MAX_ITERATIONS) -> PowerIteration:
    """G's eigenvector for λ = 1, G = α·(matrix + dangling columns 1/N) + (1 − α)/N."""
    start = time.perf_counter()
    n = matrix.shape[0]
    if n == 0:
        return PowerIteration(np.empty(0), 0, True, 0.0)
    p = np.full(n, 1.0 / n)
    iteration, error = 0, np.inf
    while error >= tol and iteration < max_iter:
        # the dangling nodes' mass and the teleport's, spread uniformly, as one constant
        spread = (alpha * p[dangling].sum() + (1.0 - alpha)) / n
        step = matrix @ p
        step *= alpha
        step += spread
        error = float(np.abs(step - p).sum())
        p = step
        iteration += 1
    return PowerIteration(p / p.sum(), iteration, error < tol, time.perf_counter() - start)


def rank_index(values: Floats) -> Ints:
    """K: 1 for the largest value, then down; equal values in node order."""
    n = len(values)
    order = np.lexsort((np.arange(n), -values))
    k = np.empty(n, dtype=np.int64)
    k[order] = np.arange(1, n + 1)
    return k


def two_d_rank(k: Ints, k_star: Ints) -> Ints:
    """K2 from the permutations K and K* (the rule in the module docstring)."""
    n = len(k)
    side = np.maximum(k, k_star)  # the square size at which the node appears
    other = np.minimum(k, k_star)  # its place along that square's rib
    on_cheirank_rib = (k < k_star).astype(np.int64)  # the PageRank rib (K = n) goes first
    order = np.lexsort((on_cheirank_rib, other, side))
    k2 = np.empty(n, dtype=np.int64)
    k2[order] = np.arange(1, n + 1)
    return k2


def correlator(pagerank: Floats, cheirank: Floats) -> float:
    """κ = N·Σ P(i)·P*(i) − 1."""
    return float(len(pagerank) * np.dot(pagerank, cheirank) - 1.0) if len(pagerank) else 0.0


@dataclass(frozen=True)
class Ranking:
    """Every node's PageRank, CheiRank and their rank indices (arrays indexed by node)."""

    pagerank: PowerIteration
    cheirank: PowerIteration
    k: Ints
    k_star: Ints
    k2: Ints
    kappa: float


def rank(matrices: LinkMatrices, *, alpha: float = ALPHA, tol: float = TOLERANCE,
         max_iter: int = MAX_ITERATIONS) -> Ranking:
    """PageRank, CheiRank, K, K*, 2DRank and κ of a graph."""
    pagerank = power_iteration(matrices.forward, matrices.dangling, alpha=alpha, tol=tol, max_iter=max_iter)
    cheirank = power_iteration(matrices.reversed, matrices.sinks, alpha=alpha, tol=tol, max_iter=max_iter)
    k, k_star = rank_index(pagerank.vector), rank_index(cheirank.vector)
    return Ranking(pagerank, cheirank, k, k_star, two_d_rank(k, k_star), correlator(pagerank.vector, cheirank.vector))
