"""The Apath navigation table and the cluster adjacency matrix A (digest §2.10–2.11, §2.12; AT-10).

Learning's last step: once the training pages D are clustered, the link groups U_{p,x} of
the pages of each cluster are concatenated per (cluster, Apath) key, and the links whose
destination page is in D give the row's destination distribution P(C_j | C_i, x) (eq. 5).
A weights each row by its link count (eq. 6). At harvest time the crawl policy reads a row
for every discovered link (§2.12); a key without a row scores 0 (A10, A11). Pure: no I/O.

Cluster ids. DBSCAN labels clusters 0..n−1 and outliers −1 (:data:`OUTLIER`, the
pseudo-cluster O of A12). In every vector and matrix O is the *last* index, n, so that a
real cluster's index is its label: :func:`index_of` and :func:`label_of` are the only
places that know this.

Choices the digest leaves to us:

- Destination labels: ``labels`` maps the *final* URL of every page of D to its label, and
  ``redirects`` maps a requested URL to its final URL (one hop: the sampler records where
  a chain ended). A caller that already resolved redirects passes labels for both URLs and
  no ``redirects``.
- A row stores its labelled destination counts as integers, one per destination index;
  the distribution is derived from them, so serialised tables are exact and byte-stable.
- N_pages counts the training pages of the cluster with a non-empty group for the Apath.
- Rows are ordered by (cluster label, Apath), so O's rows come first in the table while O
  is last in the matrices; the two orders are independent.
- Neither [C]'s per-page weighting variant nor the pooled back-off for missing rows is
  implemented: both are off in reproduction runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

OUTLIER = -1
"""DBSCAN's outlier label, the pseudo-cluster O."""

Key = tuple[int, str]
"""(source cluster label, Apath)."""

TrainingPage = tuple[int, Mapping[str, Sequence[str]]]
"""A page of D: its cluster label and its link groups (Apath → URLs in document order, duplicates kept)."""


def index_of(label: int, n_clusters: int) -> int:
    """The vector/matrix index of a cluster label: the label itself, O last (index n)."""
    if label == OUTLIER:
        return n_clusters
    if not 0 <= label < n_clusters:
        raise ValueError(f"cluster label {label} is outside 0..{n_clusters - 1} and is not {OUTLIER}")
    return label


def label_of(index: int, n_clusters: int) -> int:
    """The cluster label at a vector/matrix index (the inverse of :func:`index_of`)."""
    if not 0 <= index <= n_clusters:
        raise ValueError(f"index {index} is outside 0..{n_clusters}")
    return OUTLIER if index == n_clusters else index


@dataclass(frozen=True)
class Row:
    """Row (cluster, apath) of the table: where links found there led, and how many there were."""

    cluster: int
    apath: str
    destinations: tuple[int, ...]
    """Labelled destinations per destination index (O last): the numerators of eq. 5."""
    n_links: int
    """|U_{C_i,x}|: every link of the group, labelled or not, duplicates included."""
    n_pages: int
    """Training pages of the cluster that have the group."""

    @property
    def key(self) -> Key:
        return (self.cluster, self.apath)

    @property
    def n_labelled(self) -> int:
        """|L_{C_i,x}|: the links whose page is in D (eq. 5's denominator)."""
        return sum(self.destinations)

    def distribution(self) -> FloatArray:
        """P(C_j | cluster, apath) per destination index; it sums to 1."""
        return np.asarray(self.destinations, dtype=np.float64) / self.n_labelled


class NavigationTable:
    """The rows with at least one labelled destination, in (cluster, apath) order, for n clusters plus O.

    ``distributions`` stacks every row's distribution (one row per table row, O's column
    last) so that a policy can score all keys with one matrix-vector product.
    """

    def __init__(self, n_clusters: int, rows: Iterable[Row]) -> None:
        if n_clusters < 0:
            raise ValueError(f"n_clusters must be ≥ 0, not {n_clusters}")
        self.n_clusters = n_clusters
        self.rows = tuple(sorted(rows, key=lambda row: row.key))
        for row in self.rows:
            self._check(row)
        self._position = {row.key: i for i, row in enumerate(self.rows)}
        if len(self._position) != len(self.rows):
            raise ValueError("two rows share a (cluster, apath) key")
        self.distributions: FloatArray = np.zeros((len(self.rows), self.size))
        for i, row in enumerate(self.rows):
            self.distributions[i] = row.distribution()
        self.distributions.flags.writeable = False

    def _check(self, row: Row) -> None:
        index_of(row.cluster, self.n_clusters)
        if len(row.destinations) != self.size:
            raise ValueError(f"row {row.key}: {len(row.destinations)} destination counts for {self.size} clusters")
        if min(row.destinations, default=0) < 0 or row.n_labelled == 0:
            raise ValueError(f"row {row.key}: destination counts must be ≥ 0 with at least one labelled link")
        if row.n_links < row.n_labelled or row.n_pages < 1:
            raise ValueError(f"row {row.key}: {row.n_links} links, {row.n_labelled} labelled, {row.n_pages} pages")

    @property
    def size(self) -> int:
        """n + 1: the clusters and O."""
        return self.n_clusters + 1

    @property
    def keys(self) -> tuple[Key, ...]:
        return tuple(self._position)

    def __len__(self) -> int:
        return len(self.rows)

    def __contains__(self, key: object) -> bool:
        return key in self._position

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NavigationTable):
            return NotImplemented
        return (self.n_clusters, self.rows) == (other.n_clusters, other.rows)

    def __repr__(self) -> str:
        return f"NavigationTable(n_clusters={self.n_clusters}, rows={len(self.rows)})"

    def position(self, key: Key) -> int | None:
        """The index of ``key``'s row in ``rows`` and ``distributions``; None when it has no row."""
        return self._position.get(key)

    def get(self, key: Key) -> Row | None:
        """The row for (cluster, apath), None when the key has none (score 0 at harvest time, A11)."""
        position = self._position.get(key)
        return None if position is None else self.rows[position]

    def adjacency(self) -> FloatArray:
        """A (eq. 6): A_ij = Σ_x P(C_j | C_i, x)·|U_{C_i,x}| over the rows, O last; a new (n+1)×(n+1) array."""
        matrix = np.zeros((self.size, self.size))
        sources = [index_of(row.cluster, self.n_clusters) for row in self.rows]
        links = np.array([row.n_links for row in self.rows], dtype=np.float64)
        np.add.at(matrix, sources, self.distributions * links[:, np.newaxis])
        return matrix

    def to_data(self) -> dict[str, Any]:
        """JSON-able data, integers and strings only, in row order: the same table gives the same bytes."""
        return {
            "clusters": self.n_clusters,
            "rows": [{"cluster": row.cluster, "apath": row.apath, "destinations": list(row.destinations),
                      "links": row.n_links, "pages": row.n_pages} for row in self.rows],
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> NavigationTable:
        return cls(int(data["clusters"]), (
            Row(int(row["cluster"]), str(row["apath"]), tuple(int(count) for count in row["destinations"]),
                int(row["links"]), int(row["pages"]))
            for row in data["rows"]
        ))


def build(
    pages: Iterable[TrainingPage],
    labels: Mapping[str, int],
    n_clusters: int,
    redirects: Mapping[str, str] | None = None,
) -> NavigationTable:
    """The navigation table of the clustered training pages (eqs. 4–5), rows without a labelled link dropped (A10).

    ``labels`` gives the cluster label of every page of D under its final URL; ``redirects``
    maps a requested URL to its final URL before that lookup.
    """
    redirects = redirects or {}
    links: defaultdict[Key, int] = defaultdict(int)
    pages_with: defaultdict[Key, int] = defaultdict(int)
    destinations: defaultdict[Key, list[int]] = defaultdict(lambda: [0] * (n_clusters + 1))
    for cluster, groups in pages:
        index_of(cluster, n_clusters)  # a source label outside the clustering is refused even without a labelled link
        for apath, urls in groups.items():
            if not urls:
                continue
            key = (cluster, apath)
            links[key] += len(urls)
            pages_with[key] += 1
            for url in urls:
                label = labels.get(redirects.get(url, url))
                if label is not None:
                    destinations[key][index_of(label, n_clusters)] += 1
    return NavigationTable(n_clusters, (
        Row(cluster, apath, tuple(counts), links[(cluster, apath)], pages_with[(cluster, apath)])
        for (cluster, apath), counts in destinations.items()
    ))
