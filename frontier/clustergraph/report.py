"""The readable side of a model: a Markdown report and an SVG picture of the cluster graph.

Reads a trained model (through the small read-only views below, so that this module needs
nothing from :mod:`frontier.clustergraph.model`, which imports it to write ``report.md`` and
``graph.svg``); returns text, writes no file. The report lists the clusters with sizes and
sample URLs, the kept and the pruned edges with why, the deleted nodes with why, and the
warnings. The picture is :func:`frontier.svg_graph.circle_graph`'s: the nodes of E0 on a
circle, kept edges solid, pruned edges dashed, deleted nodes grey; every edge is one
``<path>`` with class ``kept`` or ``pruned`` (a self-loop is a small loop outside its node).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from frontier.markdown_table import markdown_table
from frontier.svg_graph import Edge, Node, circle_graph


class ClusterView(Protocol):
    @property
    def size(self) -> int: ...
    @property
    def universe(self) -> int | None: ...
    @property
    def samples(self) -> Sequence[str]: ...
    @property
    def status(self) -> str: ...
    @property
    def note(self) -> str: ...


class EdgeView(Protocol):
    @property
    def src(self) -> str: ...
    @property
    def dst(self) -> str: ...
    @property
    def w_src(self) -> int: ...
    @property
    def w_dst(self) -> int: ...
    @property
    def instances(self) -> int: ...
    @property
    def cov(self) -> float: ...
    @property
    def kept(self) -> bool: ...
    @property
    def reason(self) -> str: ...


class ModelView(Protocol):
    @property
    def n(self) -> int: ...
    @property
    def clusters(self) -> Mapping[str, ClusterView]: ...
    @property
    def edges(self) -> Sequence[EdgeView]: ...
    @property
    def seed_clusters(self) -> Sequence[str]: ...
    @property
    def unreachable(self) -> Sequence[str]: ...
    @property
    def warnings(self) -> Sequence[str]: ...
    @property
    def measures(self) -> Mapping[str, int]: ...
    def settings(self) -> Mapping[str, object]: ...


KEPT = "kept"
EDGE_WHY = {
    "self_loop": "self-loop (always kept)",
    "covering": "in the smallest set covering > τ",
    "covering_greedy": "in the greedy cover (over the combination budget)",
    "tau_unreachable": "kept: all incoming edges together cover ≤ τ",
    "redundant": "pruned: other edges cover the target",
    "node_deleted": "pruned: an end was deleted",
    "pagination": "kept: further pages lead where their first page's kept edges lead",
}


def markdown(model: ModelView) -> str:
    """The report: summary, clusters, edges (kept, then pruned), deleted nodes, warnings."""
    clusters = model.clusters
    survivors = [c for c in sorted(clusters) if clusters[c].status == KEPT]
    kept = [e for e in model.edges if e.kept]
    lines = ["# Cluster-graph model", "",
             (f"{model.n} sampled pages; {sum(c.status != 'small_pattern' for c in clusters.values())} clusters "
              f"after δ, {len(survivors)} surviving; {len(model.edges)} edges in E0, {len(kept)} kept."), "",
             "Parameters: " + ", ".join(f"`{key}={value}`" for key, value in model.settings().items()), "",
             "Seed clusters: " + (", ".join(f"`{c}`" for c in model.seed_clusters) or "none"), ""]
    if model.measures:
        lines += ["Training measures: " + ", ".join(f"{key} {value}" for key, value in model.measures.items()), ""]
    lines += ["## Surviving clusters", ""]
    lines += markdown_table(["cluster", "size", "universe", "sample URLs"],
                    [(f"`{c}`", clusters[c].size, clusters[c].universe, " ".join(clusters[c].samples))
                     for c in survivors])
    for title, rows in (("Kept edges", kept), ("Pruned edges", [e for e in model.edges if not e.kept])):
        lines += [f"## {title}", ""]
        lines += markdown_table(["from", "to", "cov", "w_src", "w_dst", "links", "why"],
                        [(f"`{e.src}`", f"`{e.dst}`", f"{e.cov:.3f}", e.w_src, e.w_dst, e.instances,
                          EDGE_WHY.get(e.reason, e.reason)) for e in rows])
    deleted = [c for c in sorted(clusters, key=lambda c: (clusters[c].status, c)) if clusters[c].status != KEPT]
    lines += ["## Deleted clusters", ""]
    lines += markdown_table(["cluster", "reason", "size", "why", "sample URLs"],
                    [(f"`{c}`", clusters[c].status, clusters[c].size, clusters[c].note,
                      " ".join(clusters[c].samples)) for c in deleted])
    lines += ["## Warnings", ""]
    lines += [f"- {warning}" for warning in model.warnings] or ["None."]
    return "\n".join(lines) + "\n"


def svg(model: ModelView) -> str:
    """The cluster graph E0 on a circle: kept edges solid, pruned dashed (drawn first, under), deleted nodes grey."""
    names = sorted(name for name, c in model.clusters.items() if c.status != "small_pattern")
    nodes = [Node(name, f"{name} ({model.clusters[name].size})", model.clusters[name].status,
                  greyed=model.clusters[name].status != KEPT) for name in names]
    edges = [Edge(e.src, e.dst, "kept" if e.kept else "pruned", f"{e.src} → {e.dst}: cov {e.cov:.3f}, {e.reason}",
                  "solid" if e.kept else "dashed")
             for e in sorted(model.edges, key=lambda e: e.kept)]
    return circle_graph(nodes, edges, f"{len(nodes)} clusters, {len(model.edges)} edges")
