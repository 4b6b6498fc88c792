"""Two small charts as inline SVG text: a line chart over time and a horizontal bar chart (``crawl report``).

Drawn by hand, like :mod:`tools.rank_plot` and :mod:`frontier.svg_graph`, so that the report of
every install has its pictures without matplotlib (a benchmark-only extra) and without a script
or a style sheet from elsewhere: the SVG goes into the HTML as is. Pure: numbers in, text out.

Our choices: a line chart's y axis starts at 0 and ends at a "nice" value (1, 2 or 5 times a power
of ten) at or above the largest point, with five gridlines; bars are scaled to the largest value
and carry their value as text, so a reader never has to estimate a length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from xml.sax.saxutils import escape

WIDTH = 760
PLOT_HEIGHT = 200
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 30, 40
COLOURS = ("#1f4e9c", "#c0392b", "#27864a", "#b9770e")
GRIDLINES = 5


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 5 × 10^k at or above ``value`` (1 for nothing to show)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(step * power for step in (1.0, 2.0, 5.0, 10.0) if step * power >= value)


def number(value: float) -> str:
    """A short label: ``1.5k``, ``2M``, ``0.25``."""
    for divisor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= divisor:
            return f"{value / divisor:.3g}{suffix}"
    return f"{value:.3g}"


def line_chart(xs: Sequence[float], series: Sequence[tuple[str, Sequence[float]]], title: str,
               x_label: str, y_label: str) -> str:
    """One line per (name, ys) over the shared ``xs`` (ascending), with a legend when there are several."""
    height = TOP + PLOT_HEIGHT + BOTTOM
    plot_width = WIDTH - LEFT - RIGHT
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">',
           f"<title>{escape(title)}</title>",
           f'<text x="{LEFT}" y="{TOP - 12}" font-size="13">{escape(title)}</text>']
    low, high = (xs[0], xs[-1]) if xs else (0.0, 1.0)
    span = (high - low) or 1.0
    top = nice_ceiling(max((max(ys, default=0.0) for _, ys in series), default=0.0))

    def x(value: float) -> float:
        return LEFT + plot_width * (value - low) / span

    def y(value: float) -> float:
        return TOP + PLOT_HEIGHT - PLOT_HEIGHT * value / top

    for i in range(GRIDLINES + 1):
        level = top * i / GRIDLINES
        out.append(f'<line x1="{LEFT}" y1="{y(level):.1f}" x2="{LEFT + plot_width}" y2="{y(level):.1f}" '
                   f'stroke="#e0e0e0"/><text x="{LEFT - 6}" y="{y(level) + 4:.1f}" text-anchor="end">'
                   f"{number(level)}</text>")
        tick = low + span * i / GRIDLINES
        out.append(f'<text x="{x(tick):.1f}" y="{TOP + PLOT_HEIGHT + 16}" text-anchor="middle">{number(tick)}</text>')
    out.append(f'<text x="{LEFT + plot_width / 2}" y="{height - 6}" text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text transform="translate(14,{TOP + PLOT_HEIGHT / 2}) rotate(-90)" text-anchor="middle">'
               f"{escape(y_label)}</text>")
    for (name, ys), colour in zip(series, COLOURS * len(series)):
        points = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in zip(xs, ys))
        out.append(f'<polyline class="series" fill="none" stroke="{colour}" stroke-width="1.5" points="{points}">'
                   f"<title>{escape(name)}</title></polyline>")
    if len(series) > 1:
        for i, ((name, _), colour) in enumerate(zip(series, COLOURS * len(series))):
            at = LEFT + 10 + 160 * i
            out.append(f'<rect x="{at}" y="{TOP + 4}" width="12" height="3" fill="{colour}"/>'
                       f'<text x="{at + 16}" y="{TOP + 9}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(rows: Sequence[tuple[str, float]], title: str) -> str:
    """One horizontal bar per (label, value), in the order given, each with its value written beside it."""
    bar, gap, label_width = 16, 4, 8 + 7 * max((len(label) for label, _ in rows), default=0)
    height = TOP + len(rows) * (bar + gap) + 10
    room = WIDTH - label_width - RIGHT - 60
    largest = max((value for _, value in rows), default=0.0) or 1.0
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">',
           f"<title>{escape(title)}</title>",
           f'<text x="4" y="{TOP - 12}" font-size="13">{escape(title)}</text>']
    for i, (label, value) in enumerate(rows):
        top = TOP + i * (bar + gap)
        length = room * value / largest
        out.append(f'<text x="{label_width - 6}" y="{top + bar - 4}" text-anchor="end">{escape(label)}</text>'
                   f'<rect class="bar" x="{label_width}" y="{top}" width="{length:.1f}" height="{bar}" '
                   f'fill="{COLOURS[0]}"/><text x="{label_width + length + 4:.1f}" y="{top + bar - 4}">'
                   f"{_exact(value)}</text>")
    out.append("</svg>")
    return "\n".join(out)


def _exact(value: float) -> str:
    """A count in full (``12,345``), any other value short."""
    return f"{int(value):,}" if float(value).is_integer() else number(value)
