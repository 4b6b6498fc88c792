"""The readable side of a SOUrCe site model: ``report.md`` and ``graph.svg`` (digest §2.7–2.11, §3.2).

:meth:`frontier.source.model.Model.save` calls :func:`markdown` and :func:`svg`; both return
text and write nothing, and the same model gives the same text. ``model.py`` imports this
module, so this one reads the model through the small read-only views below and imports
nothing from it (not even for the type checker: the layering test counts that as a cycle).

* :func:`markdown`: a summary (|D|, |V|, eps and how it was chosen, clusters, outliers,
  navigation rows), the parameters, one row per cluster (size, DSim, the HITS authority and
  hub and Info of crawling-for-UCC, sample URLs, tag-path signature), the navigation table
  and the warnings.
* :func:`svg`: the cluster graph of A (eq. 6) through :func:`frontier.svg_graph.circle_graph`,
  one node per cluster and one for O.

Choices the digest leaves to us:

- Clusters are named ``C0``, ``C1``, … by DBSCAN label and the outliers ``O``, in the
  order of the matrices (O last), the names the SOUrCe policies count pages under.
- The report's HITS columns are crawling-for-UCC's (diagonal zeroed, α 0.5): those of
  crawling-for-target depend on a target chosen at crawl time.
- Navigation rows are listed by source cluster (O last), then N_links descending, then Apath;
  a destination distribution lists its non-zero shares, largest first, ties in cluster order.
- The picture omits the edges under :data:`MIN_SHARE` of their source's links (A's row sum)
  and says so in its title; an edge's width grows with log(1 + A_ij), from 0.8 px as A_ij → 0
  to 4 px for the heaviest edge; the edges touching O are dashed (O is no template: its
  score is 0); heavier edges are drawn over lighter ones. O is drawn even without outliers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence, Sized
from typing import Protocol

import numpy as np
import numpy.typing as npt

from frontier.markdown_table import markdown_table
from frontier.source.navigation import OUTLIER, NavigationTable, Row, index_of, label_of
from frontier.source.scores import ALPHA_UCC, hits
from frontier.svg_graph import Edge, Node, circle_graph


class ParamsView(Protocol):
    @property
    def min_df(self) -> int: ...
    @property
    def eps(self) -> float: ...
    def to_data(self) -> Mapping[str, object]: ...


class EpsView(Protocol):
    @property
    def eps(self) -> float: ...
    @property
    def estimated(self) -> float: ...
    @property
    def bins(self) -> int: ...
    @property
    def w(self) -> float: ...
    @property
    def fallback(self) -> bool: ...


class ClusterView(Protocol):
    @property
    def label(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def dsim(self) -> float: ...
    @property
    def samples(self) -> Sequence[str]: ...
    @property
    def signature(self) -> Sequence[str]: ...


class ModelView(Protocol):
    """What the report reads of a :class:`frontier.source.model.Model`."""

    @property
    def params(self) -> ParamsView: ...
    @property
    def site(self) -> str: ...
    @property
    def pages(self) -> Sequence[str]: ...
    @property
    def labels(self) -> npt.NDArray[np.int64]: ...
    @property
    def vocabulary(self) -> Sized: ...
    @property
    def eps(self) -> EpsView: ...
    @property
    def table(self) -> NavigationTable: ...
    @property
    def clusters(self) -> Sequence[ClusterView]: ...
    @property
    def warnings(self) -> Sequence[str]: ...
    @property
    def n_clusters(self) -> int: ...


MIN_SHARE = 0.02
"""The picture omits an edge i→j when A_ij is under this share of A's row i."""
MIN_WIDTH, MAX_WIDTH = 0.8, 4.0
"""Stroke widths of the lightest and the heaviest edges, in px."""


def cluster_name(label: int) -> str:
    """``C3`` for cluster 3, ``O`` for the outliers."""
    return "O" if label == OUTLIER else f"C{label}"


def markdown(model: ModelView) -> str:
    """The report: summary, parameters, clusters, navigation table, warnings."""
    lines = [f"# SOUrCe model of {model.site}", "", _summary(model), "",
             "Parameters: " + ", ".join(f"`{key}={value}`" for key, value in model.params.to_data().items()), "",
             "## Clusters", "",
             (f"HITS on A (eq. 6) with its diagonal zeroed; Info = {ALPHA_UCC}·authority + {1 - ALPHA_UCC}·hub "
              "(crawling-for-UCC)."), ""]
    lines += _clusters(model)
    lines += ["## Navigation table", "",
              ("P(destination cluster | source cluster, Apath) from the links whose page is in D (eq. 5); "
               "rows without such a link are dropped."), ""]
    lines += markdown_table(["from", "Apath", "links", "labelled", "pages", "destinations"],
                    [(cluster_name(row.cluster), f"`{row.apath}`", row.n_links, row.n_labelled, row.n_pages,
                      _distribution(row, model.n_clusters))
                     for row in sorted(model.table.rows, key=lambda row: _row_order(row, model.n_clusters))])
    lines += ["## Warnings", ""]
    lines += [f"- {warning}" for warning in model.warnings] or ["None."]
    return "\n".join(lines) + "\n"


def _summary(model: ModelView) -> str:
    outliers = int((model.labels == OUTLIER).sum())
    share = outliers / len(model.pages) if model.pages else 0.0
    return (f"|D| = {len(model.pages)} training pages; |V| = {len(model.vocabulary)} Xpaths "
            f"(df ≥ {model.params.min_df}); eps = {model.eps.eps:.4f} ({_eps_origin(model)}); "
            f"clusters: {model.n_clusters}; outliers: {outliers} ({share:.1%} of D); "
            f"navigation rows: {len(model.table)}.")


def _eps_origin(model: ModelView) -> str:
    histogram = f"NumBins = {model.eps.bins}, w = {model.eps.w:g}"
    if model.params.eps > 0:
        return f"set; the K-dist histogram gives {model.eps.estimated:.4f} with {histogram}"
    if model.eps.fallback:
        return f"the fallback: no sparse K-dist bin past the median with {histogram}"
    return f"estimated from the K-dist histogram with {histogram}"


def _clusters(model: ModelView) -> list[str]:
    n = model.n_clusters
    found = hits(model.table.adjacency(), drop_self_loops=True)
    info = found.info(ALPHA_UCC)
    rows = []
    for cluster in sorted(model.clusters, key=lambda c: index_of(c.label, n)):
        i = index_of(cluster.label, n)
        rows.append((cluster_name(cluster.label), cluster.size,
                     "–" if cluster.label == OUTLIER else f"{cluster.dsim:.4f}",
                     f"{found.authority[i]:.4f}", f"{found.hub[i]:.4f}", f"{info[i]:.4f}",
                     " ".join(cluster.samples), " ".join(f"`{path}`" for path in cluster.signature)))
    return markdown_table(["cluster", "size", "DSim", "authority", "hub", "Info", "sample URLs", "signature"], rows)


def _row_order(row: Row, n_clusters: int) -> tuple[int, int, str]:
    return index_of(row.cluster, n_clusters), -row.n_links, row.apath


def _distribution(row: Row, n_clusters: int) -> str:
    """``C1 0.75, C0 0.25``: the non-zero shares, largest first."""
    shares = row.distribution()
    order = sorted(np.flatnonzero(shares).tolist(), key=lambda j: (-shares[j], j))
    return ", ".join(f"{cluster_name(label_of(j, n_clusters))} {shares[j]:.2f}" for j in order)


def svg(model: ModelView) -> str:
    """The cluster graph of A: a node per cluster and O, edge width growing with A_ij, small edges omitted."""
    n = model.n_clusters
    sizes = {c.label: c.size for c in model.clusters}
    names = [cluster_name(label_of(i, n)) for i in range(n + 1)]
    nodes = [Node(names[i], f"{names[i]} ({sizes.get(label_of(i, n), 0)})", "outliers" if i == n else "cluster",
                  greyed=i == n) for i in range(n + 1)]
    adjacency = model.table.adjacency()
    totals = adjacency.sum(axis=1)
    drawn = sorted((float(adjacency[i, j]), i, j) for i, j in np.argwhere(adjacency > 0).tolist()
                   if adjacency[i, j] >= MIN_SHARE * totals[i])
    heaviest = max((value for value, _, _ in drawn), default=1.0)
    edges = [Edge(names[i], names[j], "outliers" if n in (i, j) else "link",
                  f"{names[i]} → {names[j]}: A {value:.1f}, {value / totals[i]:.0%} of {names[i]}'s links",
                  "dashed" if n in (i, j) else "solid",
                  MIN_WIDTH + (MAX_WIDTH - MIN_WIDTH) * math.log1p(value) / math.log1p(heaviest))
             for value, i, j in drawn]
    omitted = int(np.count_nonzero(adjacency)) - len(drawn)
    return circle_graph(nodes, edges, f"{n} clusters and O, {len(drawn)} edges of A; {omitted} edges under "
                                      f"{MIN_SHARE:.0%} of their source's links omitted")
