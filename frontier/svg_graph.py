"""A directed graph drawn as SVG text, nodes on a circle: the picture a learner's model saves (``graph.svg``).

Shared by the offline learners' reports (:mod:`frontier.clustergraph.report`,
:mod:`frontier.source.report`), which turn their own model into :class:`Node` and
:class:`Edge` values and call :func:`circle_graph`. Pure: text in, text out, no file.

Drawn by hand (no graphviz on the machine): the nodes in the order given, clockwise from
the top, each a small circle with its label beside it (grey when ``greyed``); every edge is
one ``<path class="edge …">`` with a ``<title>`` tooltip, drawn in the order given (so the
last edges are on top), ending in an arrowhead. An edge is a curve bent to its left, so
that a→b and b→a stay apart, and a self-loop is a small loop on the far side of its node
from the centre. A solid edge is blue; a dashed one is grey, for edges of lesser standing
(the cluster graph's pruned edges, the links into SOUrCe's outliers).

Our choice: the arrowhead has a fixed size in pixels (``markerUnits="userSpaceOnUse"``)
rather than growing with the stroke width, so that a thick edge keeps a readable head.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from xml.sax.saxutils import escape, quoteattr

Point = tuple[float, float]
EdgeStyle = Literal["solid", "dashed"]

STROKES: dict[EdgeStyle, str] = {
    "solid": 'stroke="#1f4e9c"',
    "dashed": 'stroke="#b0b0b0" stroke-dasharray="5,4"',
}

ARROWHEAD = ('<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerUnits="userSpaceOnUse" '
             'markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/>'
             "</marker></defs>")


@dataclass(frozen=True)
class Node:
    """A node: its name (what edges refer to), the text beside it, extra CSS classes, and whether it is grey."""

    name: str
    label: str
    css_class: str = ""
    greyed: bool = False


@dataclass(frozen=True)
class Edge:
    """An edge between two named nodes, with extra CSS classes, its style and width, and a tooltip."""

    src: str
    dst: str
    css_class: str
    title: str
    style: EdgeStyle = "solid"
    width: float = 1.2


def circle_graph(nodes: Sequence[Node], edges: Sequence[Edge], title: str) -> str:
    """The SVG document of the graph (module docstring); every edge's ends must be among ``nodes``."""
    radius = max(200.0, 18 * len(nodes) / math.pi)  # about 36 px of circle per node
    margin = 7 * max((len(node.label) for node in nodes), default=0) + 40  # room for the labels
    width, height = round(2 * (radius + margin)), round(2 * (radius + 60))
    centre = (width / 2, height / 2)
    where = {
        node.name: (centre[0] + radius * math.cos(2 * math.pi * i / len(nodes) - math.pi / 2),
                    centre[1] + radius * math.sin(2 * math.pi * i / len(nodes) - math.pi / 2))
        for i, node in enumerate(nodes)
    }
    return "\n".join([
        (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">'),
        ARROWHEAD,
        f"<title>{escape(title)}</title>",
        *(_edge(edge, where[edge.src], where[edge.dst], centre) for edge in edges),
        *(_node(node, where[node.name], centre) for node in nodes),
        "</svg>",
    ]) + "\n"


def _node(node: Node, at: Point, centre: Point) -> str:
    """A circle with its label on the outer side, so that labels leave the middle to the edges."""
    x, y = at
    fill, colour = ("#d0d0d0", "#909090") if node.greyed else ("#ffffff", "#000000")
    anchor, shift = ("start", 10) if x >= centre[0] else ("end", -10)
    return (f'<g class={_classes("node", node.css_class)}><circle cx="{x:.1f}" '
            f'cy="{y:.1f}" r="6" fill="{fill}" stroke="{colour}"/><text x="{x + shift:.1f}" y="{y + 4:.1f}" '
            f'text-anchor="{anchor}" fill="{colour}">{escape(node.label)}</text></g>')


def _edge(edge: Edge, start: Point, end: Point, centre: Point) -> str:
    """One edge as a path: a curve bent to its left, or a loop away from the centre.

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
    return (f'<path class={_classes("edge", edge.css_class)} d="{d}" fill="none" '
            f'{STROKES[edge.style]} stroke-width="{edge.width:.1f}" marker-end="url(#arrow)">'
            f"<title>{escape(edge.title)}</title></path>")


def _classes(kind: str, extra: str) -> str:
    """The quoted ``class`` attribute value: the element's kind, then the caller's classes."""
    return quoteattr(f"{kind} {extra}" if extra else kind)
