"""The (K, K*) density plot of a ranking, as SVG text (``crawl rank --plot FILE.svg``).

As in the Wikipedia ranking paper (Eom et al., NADINE report §1.A): the plane of PageRank
index K (x) and CheiRank index K* (y) is cut into 100×100 cells equally spaced in ln K and
ln K* over 0..ln N; a cell's density W is the number of nodes in it divided by the number of
integer (K, K*) points it covers, normalised so that ΣW = 1. Empty cells are black; the others
are coloured by log10 W from dark blue (the smallest) to red (the largest), because W spans
many decades (the cells near K = 1 cover a single point, those near N cover millions).

Drawn by hand, like :mod:`frontier.svg_graph`, so every install gets the picture without
matplotlib (a benchmark-only extra here). Pure: arrays in, text out.
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

import numpy as np
import numpy.typing as npt

CELLS = 100
PLOT = 500  # pixels per side of the plotting area
MARGIN = 60
BAR = 16  # colour bar width
# colour stops from the lowest density to the highest (blue → cyan → green → yellow → red)
STOPS = ((0.0, (20, 30, 140)), (0.25, (0, 140, 255)), (0.5, (40, 200, 90)), (0.75, (250, 220, 0)), (1.0, (220, 20, 20)))


def density_grid(k: npt.NDArray[np.int64], k_star: npt.NDArray[np.int64], cells: int = CELLS
                 ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """W[i, j] for the cell i along ln K and j along ln K*, and the cells' edges in ln units."""
    n = len(k)
    edges = np.linspace(0.0, math.log(max(n, 2)), cells + 1)
    counts, _, _ = np.histogram2d(np.log(k), np.log(k_star), bins=(edges, edges))
    points, _ = np.histogram(np.log(np.arange(1, n + 1)), bins=edges)  # integers per cell along one axis
    area = np.outer(points, points).astype(np.float64)
    density = np.divide(counts, area, out=np.zeros_like(counts), where=area > 0)
    total = density.sum()
    return (density / total if total else density), edges


def _colour(t: float) -> str:
    for (t0, c0), (t1, c1) in zip(STOPS, STOPS[1:]):
        if t <= t1:
            f = (t - t0) / (t1 - t0)
            return "#%02x%02x%02x" % tuple(round(a + (b - a) * f) for a, b in zip(c0, c1))
    return "#%02x%02x%02x" % STOPS[-1][1]


def _power_of_ten(power: int) -> str:
    return f'10<tspan dy="-5" font-size="9">{power}</tspan>'


def density_svg(k: npt.NDArray[np.int64], k_star: npt.NDArray[np.int64], title: str, cells: int = CELLS) -> str:
    """The density plot of K and K* (see the module docstring)."""
    density, edges = density_grid(k, k_star, cells)
    top = float(edges[-1])
    size = PLOT / cells

    def x(ln_k: float) -> float:
        return MARGIN + PLOT * ln_k / top

    def y(ln_k: float) -> float:
        return MARGIN + PLOT - PLOT * ln_k / top

    lit = density > 0
    logs = np.log10(density[lit]) if lit.any() else np.zeros(1)
    low, high = float(logs.min()), float(logs.max())
    width = MARGIN * 2 + PLOT + BAR + 70
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{MARGIN * 2 + PLOT}" '
           f'font-family="sans-serif" font-size="12">',
           f'<text x="{MARGIN}" y="{MARGIN - 20}" font-size="14">{escape(title)}</text>',
           f'<rect x="{MARGIN}" y="{MARGIN}" width="{PLOT}" height="{PLOT}" fill="black"/>']
    for i, j in zip(*np.nonzero(lit)):
        t = (math.log10(density[i, j]) - low) / (high - low) if high > low else 1.0
        out.append(f'<rect x="{MARGIN + i * size:.2f}" y="{MARGIN + PLOT - (j + 1) * size:.2f}" '
                   f'width="{size:.2f}" height="{size:.2f}" fill="{_colour(t)}"/>')
    for power in range(int(top / math.log(10)) + 1):  # ticks at K = 1, 10, 100, …
        at = power * math.log(10)
        out.append(f'<line x1="{x(at):.1f}" y1="{MARGIN + PLOT}" x2="{x(at):.1f}" y2="{MARGIN + PLOT + 5}" stroke="black"/>')
        out.append(f'<text x="{x(at):.1f}" y="{MARGIN + PLOT + 18}" text-anchor="middle">{_power_of_ten(power)}</text>')
        out.append(f'<line x1="{MARGIN - 5}" y1="{y(at):.1f}" x2="{MARGIN}" y2="{y(at):.1f}" stroke="black"/>')
        out.append(f'<text x="{MARGIN - 8}" y="{y(at) + 4:.1f}" text-anchor="end">{_power_of_ten(power)}</text>')
    out.append(f'<text x="{MARGIN + PLOT / 2}" y="{MARGIN + PLOT + 40}" text-anchor="middle">K (PageRank index)</text>')
    out.append(f'<text transform="translate({MARGIN - 46},{MARGIN + PLOT / 2}) rotate(-90)" text-anchor="middle">'
               "K* (CheiRank index)</text>")
    bar_x = MARGIN * 2 + PLOT - 30
    steps = 50
    for s in range(steps):  # the colour bar, lowest density at the bottom
        out.append(f'<rect x="{bar_x}" y="{MARGIN + PLOT - (s + 1) * PLOT / steps:.1f}" width="{BAR}" '
                   f'height="{PLOT / steps + 0.5:.1f}" fill="{_colour(s / (steps - 1))}"/>')
    out.append(f'<text x="{bar_x + BAR + 4}" y="{MARGIN + 10}">{high:.1f}</text>')
    out.append(f'<text x="{bar_x + BAR + 4}" y="{MARGIN + PLOT}">{low:.1f}</text>')
    out.append(f'<text x="{bar_x + BAR + 4}" y="{MARGIN + PLOT / 2}">log10 W</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
