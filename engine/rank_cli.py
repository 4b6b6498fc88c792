"""``crawl rank OUT_DIR``: PageRank, CheiRank, 2DRank and κ of a crawl's host graph (or page graph).

Reads the link graph the archive wrote beside the WARC files of every agent (``OUT/warc/*.graph``,
:mod:`store.linkgraph`), ranks it with :mod:`tools.ranking`, and writes one CSV row per node,
``host,pagerank,cheirank,k,k_star,k2`` sorted by k (``url,…`` for ``--graph page``), a summary
(nodes, edges, κ, iterations, times) and, with ``--top N``, the top N by each ranking.

Our choices where the issue is silent:

- The ranked graph is the crawled one: the nodes whose pages were stored (a host with at least
  one stored page; for ``--graph page``, a stored page), and the links between them. A link to a
  host never fetched leads to a node with no name and unknown out-links (the graph stores only
  its 64-bit id), so it is left out; a host whose every link leaves the crawl is dangling.
- The CSV goes to ``OUT_DIR/rank-host.csv`` (``rank-page.csv``) by default, beside the crawl's
  other outputs: a million rows are no use on a terminal, and the file is then where the next
  reader looks. ``--out -`` writes it to stdout, and the summary then goes to stderr.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path
from typing import TextIO

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table

from engine.warc_cli import warc_folder
from store import linkgraph
from tools.rank_plot import density_svg
from tools.ranking import TOLERANCE, LinkMatrices, Ranking, link_matrices, rank


class RankError(Exception):
    """A problem with the command's input, told to the user in one line."""


def crawled_graph(graph: linkgraph.Graph) -> tuple[list[str], LinkMatrices]:
    """The names of the stored nodes, and the matrices of the links between them (their dense order kept)."""
    named = np.fromiter(graph.names, dtype=np.uint64, count=len(graph.names))
    keep = np.isin(graph.ids, named)
    number = np.cumsum(keep) - 1  # old dense id → new one, for the nodes kept
    src, dst = graph.edges[:, 0], graph.edges[:, 1]
    both = keep[src] & keep[dst]
    names = [graph.names[int(i)] for i in graph.ids[keep]]
    return names, link_matrices(len(names), number[src[both]], number[dst[both]])


def write_csv(stream: TextIO, column: str, names: list[str], ranking: Ranking) -> None:
    order = np.argsort(ranking.k)
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow([column, "pagerank", "cheirank", "k", "k_star", "k2"])
    # tolist(): Python floats print the shortest text that reads back as the same number
    writer.writerows(zip([names[i] for i in order], ranking.pagerank.vector[order].tolist(),
                         ranking.cheirank.vector[order].tolist(), ranking.k[order].tolist(),
                         ranking.k_star[order].tolist(), ranking.k2[order].tolist()))


def top_table(names: list[str], ranking: Ranking, top: int) -> Table:
    table = Table(title=f"top {top}", box=box.SIMPLE, title_justify="left")
    table.add_column("#", justify="right")
    for title in ("PageRank (K)", "CheiRank (K*)", "2DRank (K2)"):
        table.add_column(title, overflow="fold")
    firsts = [np.argsort(index)[:top] for index in (ranking.k, ranking.k_star, ranking.k2)]
    for place, row in enumerate(zip(*firsts), start=1):
        table.add_row(str(place), *(names[i] for i in row))
    return table


def summary(kind: str, folder: Path, matrices: LinkMatrices, ranking: Ranking, seconds: dict[str, float]) -> list[str]:
    lines = [f"{kind} graph of {folder}: {matrices.n} {kind}s, {matrices.edges} links between them "
             f"(self-loops dropped, each pair once), {int(matrices.dangling.sum())} with no out-link",
             f"κ = {ranking.kappa:.4f}"]
    for name, result in (("PageRank", ranking.pagerank), ("CheiRank", ranking.cheirank)):
        state = "" if result.converged else f" (did not reach L1 < {TOLERANCE:g}: the figures are approximate)"
        lines.append(f"{name}: {result.iterations} iterations, {result.seconds:.2f}s{state}")
    lines.append(", ".join(f"{step} {s:.2f}s" for step, s in seconds.items()))
    return lines


def rank_crawl(args: argparse.Namespace) -> int:
    try:
        return _rank(args)
    except RankError as e:
        sys.stderr.write(f"crawl: error: {e}\n")
        return 2


def _rank(args: argparse.Namespace) -> int:
    if not args.out_dir.is_dir():
        raise RankError(f"OUT_DIR {args.out_dir}: no such folder")
    if args.plot is not None and args.plot.suffix.lower() != ".svg":
        raise RankError(f"--plot {args.plot}: the plot is written as SVG; give a FILE.svg")
    folder = warc_folder(args.out_dir)
    if not any(folder.glob(f"*{linkgraph.GRAPH_SUFFIX}*")):
        raise RankError(f"no link graph in {folder}: no {linkgraph.GRAPH_SUFFIX} segments "
                        "(the crawl ran with store.link_graph = false, or has stored nothing yet)")
    out = args.out if args.out is not None else str(args.out_dir / f"rank-{args.graph}.csv")
    console = Console(stderr=out == "-", highlight=False)
    started = time.perf_counter()
    pages, hosts = linkgraph.read_graph(folder, pages=args.graph == "page")
    read = time.perf_counter()
    names, matrices = crawled_graph(hosts if args.graph == "host" else pages)
    if not names:
        raise RankError(f"the link graph in {folder} holds no stored page yet")
    built = time.perf_counter()
    ranking = rank(matrices, alpha=args.alpha)
    ranked = time.perf_counter()
    column = "host" if args.graph == "host" else "url"
    try:
        if out == "-":
            write_csv(sys.stdout, column, names, ranking)
        else:
            with open(out, "w", newline="") as f:
                write_csv(f, column, names, ranking)
        if args.plot is not None:
            title = f"{args.graph} graph: {matrices.n} nodes, {matrices.edges} links, κ = {ranking.kappa:.3f}"
            args.plot.write_text(density_svg(ranking.k, ranking.k_star, title))
    except OSError as e:
        raise RankError(f"cannot write {e.filename}: {e.strerror}") from None
    if args.top:
        console.print(top_table(names, ranking, args.top))
    timings = {"read": read - started, "build": built - read, "rank": ranked - built,
               "total": time.perf_counter() - started}
    for line in summary(args.graph, folder, matrices, ranking, timings):
        console.print(line)
    console.print(f"output: {'stdout' if out == '-' else out}" + (f", plot {args.plot}" if args.plot else ""))
    return 0
