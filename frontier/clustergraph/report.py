"""The readable side of a model: a Markdown report and an SVG picture of the cluster graph.

Reads a trained model (through the small read-only views below, so that this module needs
nothing from :mod:`frontier.clustergraph.model`, which imports it to write ``report.md`` and
``graph.svg``); returns text, writes no file. The report lists the clusters with sizes and
sample URLs, the kept and the pruned edges with why, the deleted nodes with why, and the
warnings. The picture is drawn by hand (no graphviz on the machine): the nodes of E0 on a
circle, kept edges solid, pruned edges dashed, deleted nodes grey; every edge is one
``<path>`` with class ``kept`` or ``pruned`` (a self-loop is a small arc above its node).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol
from xml.sax.saxutils import escape, quoteattr


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
}


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|")


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]
    return [*lines, ""]


def markdown(model: ModelView) -> str:
    """The report: summary, clusters, edges (kept, then pruned), deleted nodes, warnings."""
    clusters = model.clusters
    survivors = [c for c in sorted(clusters) if clusters[c].status == KEPT]
    kept = [e for e in model.edges if e.kept]
    lines = ["# Cluster-graph model", "",
             f"{model.n} sampled pages; {sum(c.status != 'small_pattern' for c in clusters.values())} clusters "
             f"after δ, {len(survivors)} surviving; {len(model.edges)} edges in E0, {len(kept)} kept.", "",
             "Parameters: " + ", ".join(f"`{key}={value}`" for key, value in model.settings().items()), "",
             "Seed clusters: " + (", ".join(f"`{c}`" for c in model.seed_clusters) or "none"), ""]
    if model.measures:
        lines += ["Training measures: " + ", ".join(f"{key} {value}" for key, value in model.measures.items()), ""]
    lines += ["## Surviving clusters", ""]
    lines += _table(["cluster", "size", "universe", "sample URLs"],
                    [(f"`{c}`", clusters[c].size, clusters[c].universe, " ".join(clusters[c].samples))
                     for c in survivors])
    for title, rows in (("Kept edges", kept), ("Pruned edges", [e for e in model.edges if not e.kept])):
        lines += [f"## {title}", ""]
        lines += _table(["from", "to", "cov", "w_src", "w_dst", "links", "why"],
                        [(f"`{e.src}`", f"`{e.dst}`", f"{e.cov:.3f}", e.w_src, e.w_dst, e.instances,
                          EDGE_WHY.get(e.reason, e.reason)) for e in rows])
    deleted = [c for c in sorted(clusters, key=lambda c: (clusters[c].status, c)) if clusters[c].status != KEPT]
    lines += ["## Deleted clusters", ""]
    lines += _table(["cluster", "reason", "size", "why", "sample URLs"],
                    [(f"`{c}`", clusters[c].status, clusters[c].size, clusters[c].note,
                      " ".join(clusters[c].samples)) for c in deleted])
    lines += ["## Warnings", ""]
    lines += [f"- {warning}" for warning in model.warnings] or ["None."]
    return "\n".join(lines) + "\n"


def svg(model: ModelView) -> str:
    """The cluster graph E0 on a circle: kept edges solid, pruned dashed, deleted nodes grey."""
    nodes = sorted(name for name, c in model.clusters.items() if c.status != "small_pattern")
    labels = {name: f"{name} ({model.clusters[name].size})" for name in nodes}
    radius = max(200.0, 18 * len(nodes) / math.pi)  # about 36 px of circle per node
    margin = 7 * max((len(label) for label in labels.values()), default=0) + 40  # room for the labels
    width, height = round(2 * (radius + margin)), round(2 * (radius + 60))
    centre = (width / 2, height / 2)
    where = {
        name: (centre[0] + radius * math.cos(2 * math.pi * i / len(nodes) - math.pi / 2),
               centre[1] + radius * math.sin(2 * math.pi * i / len(nodes) - math.pi / 2))
        for i, name in enumerate(nodes)
    }
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/></marker></defs>',
        f"<title>{escape(f'{len(nodes)} clusters, {len(model.edges)} edges')}</title>",
        *(_edge(edge, where[edge.src], where[edge.dst], centre) for edge in sorted(model.edges, key=_on_top)),
    ]
    for name in nodes:
        kept = model.clusters[name].status == KEPT
        x, y = where[name]
        fill, colour = ("#ffffff", "#000000") if kept else ("#d0d0d0", "#909090")
        anchor, shift = ("start", 10) if x >= centre[0] else ("end", -10)
        parts.append(f'<g class="node {escape(model.clusters[name].status)}"><circle cx="{x:.1f}" cy="{y:.1f}" '
                     f'r="6" fill="{fill}" stroke="{colour}"/><text x="{x + shift:.1f}" y="{y + 4:.1f}" '
                     f'text-anchor="{anchor}" fill="{colour}">{escape(labels[name])}</text></g>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _edge(edge: EdgeView, start: tuple[float, float], end: tuple[float, float], centre: tuple[float, float]) -> str:
    """One edge as a path: a curve bent to its left (so a→b and b→a differ), or a loop away from the centre.

    The curve stops short of the destination's circle, so that the arrowhead shows.
    """
    (x1, y1), (x2, y2) = start, end
    if edge.src == edge.dst:
        dx, dy = x1 - centre[0], y1 - centre[1]
        length = math.hypot(dx, dy) or 1.0
        ox, oy = dx / length * 28, dy / length * 28
        d = (f"M {x1:.1f} {y1:.1f} C {x1 + ox - oy:.1f} {y1 + oy + ox:.1f} "
             f"{x1 + ox + oy:.1f} {y1 + oy - ox:.1f} {x1:.1f} {y1:.1f}")
    else:
        cx, cy = (x1 + x2) / 2 - 0.15 * (y2 - y1), (y1 + y2) / 2 + 0.15 * (x2 - x1)
        tangent = math.hypot(x2 - cx, y2 - cy) or 1.0
        ex, ey = x2 - 8 * (x2 - cx) / tangent, y2 - 8 * (y2 - cy) / tangent
        d = f"M {x1:.1f} {y1:.1f} Q {cx:.1f} {cy:.1f} {ex:.1f} {ey:.1f}"
    style = 'stroke="#1f4e9c"' if edge.kept else 'stroke="#b0b0b0" stroke-dasharray="5,4"'
    title = escape(f"{edge.src} → {edge.dst}: cov {edge.cov:.3f}, {edge.reason}")
    return (f'<path class={quoteattr("edge " + ("kept" if edge.kept else "pruned"))} d="{d}" fill="none" '
            f'{style} stroke-width="1.2" marker-end="url(#arrow)"><title>{title}</title></path>')


def _on_top(edge: EdgeView) -> bool:
    """Pruned edges first, so that the kept ones are drawn over them."""
    return edge.kept
