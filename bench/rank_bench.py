"""Ranking speed against graph size: ``tools.ranking`` (scipy CSR) beside networkx's scipy PageRank (issue 16).

For each size N (default 10k, 100k, 1M nodes) a seeded power-law graph of about ``--degree``
(20) edges per node is generated with numpy. Sources are drawn with weight ∝ r^(-1/2) over the
first 90% of the nodes (the last 10% are dangling, as the hosts a crawl never fetched). 80% of
the links go to a node nearby (a geometric distance, mean 100, in node order), as a host's
links mostly stay among related hosts, and 20% to a node drawn with weight ∝ r^(-2/3) (an
in-degree tail ≈ 2.5; the web's is ≈ 2.1). The locality makes the power iteration take 50-60
steps, as web graphs do; without it a random graph mixes in 15. Node numbers are then shuffled.
Each size runs ``--runs`` times in a fresh child process, so that its peak RSS is its own, and
reports, medians over the runs:

* ``build``: :func:`tools.ranking.link_matrices` from the edge arrays (self-loops dropped,
  duplicate pairs counted once, both CSR matrices);
* ``pagerank`` and ``cheirank``: the power iterations (α = 0.85, L1 < 1e-10), and their
  iteration counts; seconds per edge per iteration;
* peak RSS of the child (``ru_maxrss``) and its RSS before the build (the edge arrays);
* one power-iteration step, ours (``S @ p``) against networkx's (``x @ A`` on the matrix with rows
  the sources, as ``_pagerank_scipy`` does it), alternated on the same graph at every size;
* with networkx (sizes up to ``--nx-max``): ``nx.pagerank`` on a DiGraph of the same distinct
  edges (its own scipy implementation, which converts the graph to a sparse matrix first), the
  part of that call spent in ``nx.to_scipy_sparse_array`` (timed inside it), and the largest
  difference from ours. networkx stops when ``Σ|x − x_prev| < N·tol``; we pass ``tol = 1e-10/N``,
  so both stop at the same L1 step, and ``max_iter = 1000`` so it never raises first. The
  comparison per edge is ours (build + PageRank) against ``nx.pagerank``, measured in one child.

Then once, on a 2,000-node graph of the same kind, the largest difference of PageRank and
CheiRank from a dense solve of the Google matrix (numpy).

    python -m bench.rank_bench                         # the full run (~10 minutes)
    python -m bench.rank_bench --sizes 10000 --runs 1  # a smoke run

Writes ``bench/rank_bench.json`` (``--json``) and, with ``--plot``, the (K, K*) density plot of
the largest graph as SVG.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from tools.rank_plot import density_svg
from tools.ranking import ALPHA, TOLERANCE, link_matrices, power_iteration, rank

HERE = Path(__file__).resolve().parent
LOCAL = 0.8  # the share of links to a nearby node
NEIGHBOURHOOD = 100  # the mean distance of such a link, in node order before the shuffle
STEPS = 15  # matrix-vector products timed for the per-step comparison


def power_law_graph(n: int, degree: int, seed: int, local: float = LOCAL) -> tuple[np.ndarray, np.ndarray]:
    """``degree·n`` edges (src, dst), int64 (see the module docstring)."""
    rng = np.random.default_rng(seed)
    edges = degree * n
    src = (int(n * 0.9) * rng.random(edges) ** 2).astype(np.int64)
    dst = (n * rng.random(edges) ** 3).astype(np.int64)
    near = rng.random(edges) < local
    offsets = rng.geometric(1 / NEIGHBOURHOOD, int(near.sum())) * rng.choice([-1, 1], int(near.sum()))
    dst[near] = (src[near] + offsets) % n
    shuffle = rng.permutation(n)  # node numbers in no useful order, as the crawl's hash-ordered ids
    return shuffle[src], shuffle[dst]


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one_run(n: int, degree: int, seed: int, with_nx: bool, plot: str | None) -> dict[str, Any]:
    """One child's measurements (see the module docstring)."""
    src, dst = power_law_graph(n, degree, seed)
    before = rss_mib()
    started = time.perf_counter()
    matrices = link_matrices(n, src, dst)
    build = time.perf_counter() - started
    pagerank = power_iteration(matrices.forward, matrices.dangling)
    cheirank = power_iteration(matrices.reversed, matrices.sinks)
    figures: dict[str, Any] = {
        "nodes": n, "edges_generated": len(src), "edges": matrices.edges, "dangling": int(matrices.dangling.sum()),
        "build_s": build, "pagerank_s": pagerank.seconds, "cheirank_s": cheirank.seconds,
        "pagerank_iterations": pagerank.iterations, "cheirank_iterations": cheirank.iterations,
        "converged": pagerank.converged and cheirank.converged,
        "ns_per_edge_iteration": 1e9 * pagerank.seconds / (pagerank.iterations * matrices.edges),
        "ours_pagerank_ns_per_edge": 1e9 * (build + pagerank.seconds) / matrices.edges,
        "rss_before_build_mib": before, "peak_rss_mib": peak_rss_mib(),
    }
    figures.update(step_comparison(matrices.forward))
    if plot:
        ranking = rank(matrices)
        started = time.perf_counter()
        Path(plot).write_text(density_svg(ranking.k, ranking.k_star, f"generated power-law graph: {n} nodes, "
                                          f"{matrices.edges} edges, κ = {ranking.kappa:.3f}"))
        figures["kappa"] = ranking.kappa
        figures["plot_s"] = time.perf_counter() - started
    if with_nx:
        import networkx as nx

        forward = matrices.forward.tocoo()  # row i, column j: the distinct edge j → i
        graph = nx.DiGraph()
        graph.add_nodes_from(range(n))
        graph.add_edges_from(zip(forward.col.tolist(), forward.row.tolist()))
        del forward
        # networkx's PageRank converts the graph with nx.to_scipy_sparse_array (a Python loop over edges),
        # then iterates on the matrix: a wrapper times the conversion inside the same call
        convert = [0.0]
        to_matrix = nx.to_scipy_sparse_array

        def timed_conversion(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return to_matrix(*args, **kwargs)
            finally:
                convert[0] += time.perf_counter() - started

        nx.to_scipy_sparse_array = timed_conversion
        try:
            started = time.perf_counter()
            scores = nx.pagerank(graph, alpha=ALPHA, tol=TOLERANCE / n, max_iter=1000)
            nx_seconds = time.perf_counter() - started
        finally:
            nx.to_scipy_sparse_array = to_matrix
        theirs = np.array([scores[i] for i in range(n)])
        theirs /= theirs.sum()  # ours is normalised at the end; networkx's x sums to 1 up to rounding
        figures.update({
            "nx_pagerank_s": nx_seconds, "nx_convert_s": convert[0],
            "nx_ns_per_edge": 1e9 * nx_seconds / matrices.edges,
            # the rest of the call: normalising the matrix, the iterations, the answer's dict
            "nx_ns_per_edge_iteration": 1e9 * (nx_seconds - convert[0]) / (pagerank.iterations * matrices.edges),
            "nx_max_abs_difference": float(np.abs(theirs - pagerank.vector).max()),
            "nx_l1_difference": float(np.abs(theirs - pagerank.vector).sum()),
            "nx_peak_rss_mib": peak_rss_mib(),
        })
        figures["speedup_per_edge"] = figures["nx_ns_per_edge"] / figures["ours_pagerank_ns_per_edge"]
    return figures


def step_comparison(forward: Any, steps: int = STEPS) -> dict[str, float]:
    """One multiplication of our step (``S @ p``, rows the targets) against networkx's (``x @ A``, rows the
    sources, ``_pagerank_scipy``'s orientation) on the same graph, alternated, medians in ns per edge: the
    per-step ratio also at sizes where networkx's DiGraph does not fit in memory."""
    by_source = forward.T.tocsr()
    x = np.full(forward.shape[0], 1.0 / forward.shape[0])
    ours, theirs = [], []
    for _ in range(steps):
        started = time.perf_counter()
        forward @ x
        middle = time.perf_counter()
        x @ by_source
        ours.append(middle - started)
        theirs.append(time.perf_counter() - middle)
    edges = forward.nnz
    return {"step_ns_per_edge": 1e9 * statistics.median(ours) / edges,
            "nx_style_step_ns_per_edge": 1e9 * statistics.median(theirs) / edges,
            "step_speedup": statistics.median(theirs) / statistics.median(ours)}


def dense_agreement(n: int = 2000, degree: int = 20, seed: int = 7) -> dict[str, float]:
    """Largest |ours − dense solve| for PageRank and CheiRank on one generated graph."""
    src, dst = power_law_graph(n, degree, seed)
    ranking = rank(link_matrices(n, src, dst))
    out: dict[str, float] = {"nodes": n}
    for name, (s, d), ours in (("pagerank", (src, dst), ranking.pagerank.vector),
                                ("cheirank", (dst, src), ranking.cheirank.vector)):
        a = np.zeros((n, n))
        keep = s != d
        a[d[keep], s[keep]] = 1.0
        sums = a.sum(axis=0)
        columns = np.where(sums > 0, a / np.where(sums > 0, sums, 1.0), 1.0 / n)
        exact = np.linalg.solve(np.eye(n) - ALPHA * columns, np.full(n, (1 - ALPHA) / n))
        out[f"{name}_max_abs_error"] = float(np.abs(ours - exact / exact.sum()).max())
    return out


def median_figures(runs: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {"runs": len(runs)}
    for key, value in runs[0].items():
        values = [r[key] for r in runs if key in r]  # the plot's figures are in the first run only
        merged[key] = statistics.median(values) if isinstance(value, float) else value
        if isinstance(value, float) and len(runs) > 1:
            merged[f"{key}_all"] = values
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--degree", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nx-max", type=int, default=100_000, help="largest size given to networkx too")
    parser.add_argument("--json", type=Path, default=HERE / "rank_bench.json")
    parser.add_argument("--plot", type=Path, help="the largest graph's (K, K*) density plot, SVG")
    parser.add_argument("--child", nargs=4, metavar=("N", "SEED", "NX", "PLOT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        n, seed, with_nx, plot = args.child
        print(json.dumps(one_run(int(n), args.degree, int(seed), with_nx == "1", plot or None)))
        return
    results: dict[str, Any] = {"command": " ".join(["python -m bench.rank_bench", *sys.argv[1:]]),
                               "alpha": ALPHA, "tolerance_l1": TOLERANCE, "degree": args.degree, "sizes": []}
    for n in args.sizes:
        runs = []
        for run in range(args.runs):
            plot = str(args.plot) if args.plot and n == max(args.sizes) and run == 0 else ""
            child = subprocess.run([sys.executable, "-m", "bench.rank_bench", "--degree", str(args.degree), "--child",
                                    str(n), "1", "1" if n <= args.nx_max else "0", plot],
                                   capture_output=True, text=True)
            if child.returncode:
                raise SystemExit(f"N={n} run {run + 1} failed:\n{child.stderr}")
            runs.append(json.loads(child.stdout))
            print(f"N={n} run {run + 1}: {runs[-1]}", file=sys.stderr)
        results["sizes"].append(median_figures(runs))
    results["dense_reference"] = dense_agreement()
    text = json.dumps(results, indent=2)
    args.json.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
