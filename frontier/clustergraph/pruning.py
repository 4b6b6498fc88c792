"""Pruning the cluster graph (digest §2.10–2.11): edge deletion, then node deletion H → U → D.

Reads a :class:`~frontier.clustergraph.graph.ClusterGraph` (E0, built from a sample or given
directly as statistics); writes nothing. Every decision is deterministic (sorted iteration,
the digest's tie-breaks) and recorded with its reason, for the model and its report.

Edge deletion, per target cluster C_j on E0's statistics: the candidates are its incoming
non-self edges sorted by (cov desc, w_src desc, source); for m = 1, 2, … the m-combination
with the largest union coverage (the first in lexicographic order of sorted indices on a
tie) is kept as soon as that coverage is *strictly* greater than τ. Unions are built from
the (m−1)-prefix. When C(n, m) exceeds the combination budget the search switches to greedy
maximum coverage, logged. Self-loops are never candidates and always kept; when all
candidates together do not exceed τ, all are kept.

Rule V (ours: :mod:`frontier.clustergraph.variants`), when given, deletes parameter views
before both; rules T and F (ours: :mod:`frontier.clustergraph.thin`, :mod:`frontier.clustergraph.feeds`),
which judge clusters by their sampled pages' content, delete those they name after H, unless a
kept edge leads from one of them to a cluster no other kept edge leads to; rule R (ours, :func:`detours`), when
asked, then deletes the listings entered only from the clusters they lead back to. Node deletion, one pass, no fixed point: H on E0 (more than half the other clusters link in,
more than N/2 distinct outside pages link in, and, unless ``guard`` is None (literal mode),
Σw_dst / Σw_src ≤ guard); U on leaves of E1 (size < mean − σ·std of all sizes, population
std; a warning when that threshold is ≤ 0); D over the pairs (i, k) whose edge i→k edge
deletion removed, both alive leaves, sequentially by fan-out with k protected. A *leaf* has
no surviving non-self outgoing edge in E1. Deleting a node deletes its incident edges.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from frontier.clustergraph.graph import ClusterGraph, Edge, EdgeKey
from frontier.clustergraph.patterns import instance_of
from frontier.clustergraph.variants import PARAMETER_VARIANT

log = logging.getLogger(__name__)

# why an edge of E0 was kept or pruned
SELF_LOOP = "self_loop"
COVERING = "covering"
COVERING_GREEDY = "covering_greedy"
TAU_UNREACHABLE = "tau_unreachable"
REDUNDANT = "redundant"
NODE_DELETED = "node_deleted"
PAGINATION = "pagination"

# why a node was deleted (SMALL_PATTERN is decided earlier, by δ removal)
SMALL_PATTERN = "small_pattern"
HEADER_FOOTER = "header_footer"
UNINFORMATIVE = "uninformative"
DUPLICATE_CONTENT = "duplicate_content"
DETOUR = "detour"


@dataclass(frozen=True)
class EdgeDeletion:
    """E1 and why each edge of E0 is in it or not."""

    kept: frozenset[EdgeKey]
    reasons: Mapping[EdgeKey, str]
    coverage: Mapping[str, float]
    """Per target with candidates: the union coverage of its kept candidates."""
    greedy: tuple[str, ...]
    """The targets whose search fell back to greedy (budget exceeded)."""


def best_cover(masks: Sequence[int], universe: int, tau: float, budget: int) -> tuple[tuple[int, ...], bool]:
    """The indices of ``masks`` to keep and whether greedy was needed (digest §2.10, steps 3–5).

    ``masks`` must already be in candidate order; all are kept when their union does not
    exceed ``tau``.
    """
    everything = 0
    for mask in masks:
        everything |= mask
    reachable = everything.bit_count()
    if reachable / universe <= tau:
        return tuple(range(len(masks))), False
    for size in range(1, len(masks) + 1):
        if math.comb(len(masks), size) > budget:
            return _greedy(masks, universe, tau), True
        count, combination = _best_of_size(masks, size, reachable)
        if count / universe > tau:
            return combination, False
    raise AssertionError("the union of all candidates exceeds tau, so some size must")  # pragma: no cover


def _best_of_size(masks: Sequence[int], size: int, ceiling: int) -> tuple[int, tuple[int, ...]]:
    """The ``size``-combination with the largest union, the first in lexicographic order on a tie.

    Combinations are walked in lexicographic order; ``unions[d]`` is the union of the first
    d chosen masks, so moving to the next combination recomputes only the changed suffix.
    The walk stops early at ``ceiling`` (the union of all masks), which nothing can beat.
    """
    last = len(masks) - size
    chosen = list(range(size))
    unions = [0] * (size + 1)
    for depth in range(size):
        unions[depth + 1] = unions[depth] | masks[chosen[depth]]
    best, best_combination = -1, tuple(chosen)
    while True:
        count = unions[size].bit_count()
        if count > best:
            best, best_combination = count, tuple(chosen)
            if count == ceiling:
                return best, best_combination
        depth = size - 1
        while depth >= 0 and chosen[depth] == last + depth:
            depth -= 1
        if depth < 0:
            return best, best_combination
        chosen[depth] += 1
        for following in range(depth + 1, size):
            chosen[following] = chosen[following - 1] + 1
        for step in range(depth, size):
            unions[step + 1] = unions[step] | masks[chosen[step]]


def _greedy(masks: Sequence[int], universe: int, tau: float) -> tuple[int, ...]:
    """Greedy maximum coverage: add the largest marginal gain (the earliest on a tie) until > tau."""
    chosen: set[int] = set()
    union = 0
    while union.bit_count() / universe <= tau:
        gains = [-1 if index in chosen else (mask & ~union).bit_count() for index, mask in enumerate(masks)]
        pick = max(range(len(masks)), key=lambda index: (gains[index], -index))
        chosen.add(pick)
        union |= masks[pick]
    return tuple(sorted(chosen))


def candidate_order(edge: Edge) -> tuple[int, int, str]:
    """cov desc (w_dst desc: one target, one denominator), then w_src desc, then the source."""
    return (-edge.w_dst, -edge.w_src, edge.src)


def delete_edges(graph: ClusterGraph, tau: float = 0.6, budget: int = 200_000) -> EdgeDeletion:
    """Edge deletion on every target cluster independently (digest §2.10)."""
    kept: set[EdgeKey] = set()
    reasons: dict[EdgeKey, str] = {}
    coverage: dict[str, float] = {}
    greedy: list[str] = []
    for target, incoming in sorted(graph.incoming().items()):
        candidates = sorted((edge for edge in incoming if not edge.is_self_loop), key=candidate_order)
        for edge in incoming:
            if edge.is_self_loop:
                kept.add(edge.key)
                reasons[edge.key] = SELF_LOOP
        if not candidates:
            continue
        masks = [edge.targets for edge in candidates]
        keep, used_greedy = best_cover(masks, graph.universes[target], tau, budget)
        if used_greedy:
            greedy.append(target)
            log.warning("edge deletion into %s: over %d combinations, greedy cover used", target, budget)
        union = 0
        for index in keep:
            union |= masks[index]
        coverage[target] = union.bit_count() / graph.universes[target]
        why = COVERING_GREEDY if used_greedy else COVERING if coverage[target] > tau else TAU_UNREACHABLE
        for index, edge in enumerate(candidates):
            if index in keep:
                kept.add(edge.key)
            reasons[edge.key] = why if index in keep else REDUNDANT
    return EdgeDeletion(frozenset(kept), dict(sorted(reasons.items())), coverage, tuple(greedy))


class _Survivors:
    """The live nodes and, per node, how many live non-self E1 edges leave it (0 = a leaf)."""

    def __init__(self, alive: set[str], kept: frozenset[EdgeKey]) -> None:
        self.alive = alive
        self.kept = kept
        self.out_degree = {node: 0 for node in self.alive}
        for src, dst in self.kept:
            if src != dst and src in self.alive and dst in self.alive:
                self.out_degree[src] += 1

    def is_leaf(self, node: str) -> bool:
        return node in self.alive and self.out_degree[node] == 0

    def is_bypassed(self, node: str) -> bool:
        """Alive, and every other cluster it leads to along a kept edge has a kept way in from a third live one."""
        if node not in self.alive:
            return False
        led = {dst for src, dst in self.kept if src == node != dst and dst in self.alive}
        other_ways = {dst for src, dst in self.kept if src not in (node, dst) and src in self.alive}
        return led <= other_ways

    def delete(self, node: str) -> None:
        self.alive.discard(node)
        for src, dst in self.kept:
            if dst == node and src != node and src in self.alive:
                self.out_degree[src] -= 1


@dataclass(frozen=True)
class NodeDeletion:
    """The deleted nodes with their reason (and a note on why), the protected ones, warnings."""

    reasons: Mapping[str, str]
    notes: Mapping[str, str]
    protected: frozenset[str]
    u_threshold: float
    """Rule U's size threshold, mean − σ·std over E0's sizes."""
    warnings: tuple[str, ...]


def header_footer(graph: ClusterGraph, guard: float | None = 0.05) -> dict[str, str]:
    """Rule H on E0: the header/footer clusters, each with a note of its numbers."""
    found: dict[str, str] = {}
    others = (len(graph.sizes) - 1) / 2
    for target, incoming in sorted(graph.incoming().items()):
        edges = [edge for edge in incoming if not edge.is_self_loop]
        pages = sum(edge.w_src for edge in edges)
        urls = sum(edge.w_dst for edge in edges)
        if len(edges) > others and pages > graph.n / 2 and (guard is None or urls <= guard * pages):
            found[target] = f"linked from {len(edges)} clusters and {pages} of {graph.n} pages ({urls} URLs)"
    return found


def uninformative(
    graph: ClusterGraph, survivors: _Survivors, sigmas: float = 2.0
) -> tuple[dict[str, str], float]:
    """Rule U: the small leaves, and the threshold mean − sigmas·std over all of E0's sizes."""
    sizes = np.array([graph.sizes[node] for node in graph.nodes], dtype=float)
    threshold = float(sizes.mean() - sigmas * sizes.std()) if sizes.size else 0.0
    found = {
        node: f"a leaf of size {graph.sizes[node]} < {threshold:.2f}"
        for node in sorted(survivors.alive)
        if survivors.is_leaf(node) and graph.sizes[node] < threshold
    }
    return found, threshold


def duplicate_content(
    graph: ClusterGraph, deletion: EdgeDeletion, survivors: _Survivors, min_cov: float = 0.0,
    min_fan_out: float = 0.0,
) -> tuple[dict[str, str], set[str]]:
    """Rule D, sequential: delete listing i, protect content k, for each pair in fan-out order.

    ``min_cov`` and ``min_fan_out`` (ours; 0 is the paper): the pruned edge i→k must have covered
    at least that share of k, with at least that many links per page of i. A listing covers a real
    share of what it lists and lists several items on each page; a template link from every profile
    to its own tag list or to a help page (fan-out 1, cov 0.01–0.6) is no listing, and without the
    floors D deleted the profiles, tag lists, comment and journal pages of the blog lab site."""
    pairs = sorted(
        (
            edge
            for key, edge in graph.edges.items()
            if not edge.is_self_loop and key not in deletion.kept and edge.cov >= min_cov
            and edge.fan_out >= min_fan_out
            and survivors.is_leaf(edge.src) and survivors.is_leaf(edge.dst)
        ),
        key=lambda edge: (-edge.fan_out, -edge.cov, graph.sizes[edge.src], edge.src, edge.dst),
    )
    found: dict[str, str] = {}
    protected: set[str] = set()
    for edge in pairs:
        if edge.src in protected or not (survivors.is_leaf(edge.src) and survivors.is_leaf(edge.dst)):
            continue
        survivors.delete(edge.src)
        protected.add(edge.dst)
        found[edge.src] = (f"a leaf listing the leaf {edge.dst} along a pruned edge "
                           f"(fan-out {edge.fan_out:.2f}, cov {edge.cov:.2f}); {edge.dst} protected")
    return found, protected


def detours(graph: ClusterGraph, survivors: _Survivors, tau: float, starts: Iterable[str],
            paginations: Mapping[str, str] | None = None) -> dict[str, str]:
    """Rule R (ours), sequential in sorted order: the listings that only lead back to where they are entered from.

    A live cluster i, not a seed's, whose kept non-self edges lead to the very clusters k its kept
    edges come in from, where each such k's own pages link more than τ of k (its self-loop's
    coverage) and i's pattern is no instance of k's (``$.lj/…`` of ``*.lj/…`` is k's own kind,
    under all-digit names) nor i's further pages (``paginations``: a post's next comment pages are
    the post's own content): i is entered from k and leads back only to k, which reaches
    most of itself without i. A cluster entered from elsewhere as well (reviews, reached from
    books and from their writers, leading to the writers) is a way through the site, not a
    detour. That is a listing kept beside its content, the non-leaf case of
    rule D (which needs both ends to be leaves): the blog's tag listings and calendar days
    are entered from the posts, which link their tags and day, and lead back to posts, which
    link their previous and next posts. Deleting i changes no cluster's reachability; what
    it loses are the items only it lists, which the self-loop's coverage bounds. Seeds'
    clusters are kept, as the crawl starts there.
    """
    protected = set(starts)
    pages_of = paginations or {}
    found: dict[str, str] = {}
    for node in sorted(survivors.alive):
        if node in protected or survivors.is_leaf(node):
            continue
        led = {dst for src, dst in survivors.kept if src == node != dst and dst in survivors.alive}
        entered = {src for src, dst in survivors.kept if dst == node != src and src in survivors.alive}
        selves = {k: graph.edges[(k, k)].cov if (k, k) in graph.edges else 0.0 for k in led}
        if (led == entered and all(cov > tau for cov in selves.values())
                and not any(instance_of(node, k) or pages_of.get(node) == k for k in led)):
            survivors.delete(node)
            shown = ", ".join(f"{k} (self-loop cov {cov:.2f})" for k, cov in sorted(selves.items()))
            found[node] = f"entered from and leading back only to {shown}"
    return found


def delete_nodes(
    graph: ClusterGraph, deletion: EdgeDeletion, guard: float | None = 0.05, sigmas: float = 2.0,
    listing_cov: float = 0.0, listing_fan_out: float = 0.0, by_content: Mapping[str, tuple[str, str]] | None = None,
    detour_tau: float | None = None, starts: Iterable[str] = (), paginations: Mapping[str, str] | None = None,
) -> NodeDeletion:
    """H → T/F → R → U → D, one pass (digest §2.11; T and F, ours, delete the ``by_content`` clusters that nothing
    needs: whatever they lead to along a kept edge has another kept way in, as a leaf trivially has; R, ours,
    runs when ``detour_tau`` is given, sparing the clusters of ``starts``)."""
    reasons: dict[str, str] = {}
    notes: dict[str, str] = {}
    warnings: list[str] = []
    survivors = _Survivors(set(graph.sizes), deletion.kept)

    def delete(found: Mapping[str, str], reason: str) -> None:
        for node, note in found.items():
            survivors.delete(node)
            reasons[node], notes[node] = reason, note

    delete(header_footer(graph, guard), HEADER_FOOTER)
    by_content = by_content or {}
    for node in sorted(by_content):  # one at a time: two clusters may each be the other's bypass
        if survivors.is_bypassed(node):
            reason, note = by_content[node]
            delete({node: note}, reason)
    if detour_tau is not None:
        delete(detours(graph, survivors, detour_tau, starts, paginations), DETOUR)
    small, threshold = uninformative(graph, survivors, sigmas)
    if threshold <= 0:
        warnings.append(f"rule U deletes nothing: its threshold mean − {sigmas:g}·std = {threshold:.2f} is ≤ 0")
    delete(small, UNINFORMATIVE)
    listings, protected = duplicate_content(graph, deletion, survivors, listing_cov, listing_fan_out)
    for node, note in listings.items():
        reasons[node], notes[node] = DUPLICATE_CONTENT, note
    return NodeDeletion(dict(sorted(reasons.items())), dict(sorted(notes.items())), frozenset(protected),
                        threshold, tuple(warnings))


def reachable(edges: Iterable[EdgeKey], starts: Iterable[str]) -> set[str]:
    """The nodes reachable from ``starts`` (included) along ``edges``."""
    following: dict[str, list[str]] = {}
    for src, dst in edges:
        following.setdefault(src, []).append(dst)
    seen = set(starts)
    todo = sorted(seen)
    while todo:
        node = todo.pop()
        for nxt in following.get(node, ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


@dataclass(frozen=True)
class Pruning:
    """The whole pruning of E0: E1, the node deletions, E_final and the surviving nodes."""

    edges: EdgeDeletion
    nodes: NodeDeletion
    survivors: frozenset[str]
    final_edges: frozenset[EdgeKey]
    warnings: tuple[str, ...]
    inherited: frozenset[EdgeKey] = frozenset()
    """The edges of E_final that a cluster of further pages has from its base (``paginations``)."""

    def edge_reason(self, key: EdgeKey) -> str:
        """Why edge ``key`` of E0 is in E_final or not (edge deletion first, then node deletion)."""
        if key in self.inherited:
            return PAGINATION
        why = self.edges.reasons.get(key, NODE_DELETED)  # an edge of a rule-V view never reached edge deletion
        return NODE_DELETED if why != REDUNDANT and key not in self.final_edges else why


def prune(
    graph: ClusterGraph,
    *,
    tau: float = 0.6,
    budget: int = 200_000,
    guard: float | None = 0.05,
    sigmas: float = 2.0,
    views: Mapping[str, str] | None = None,
    by_content: Mapping[str, tuple[str, str]] | None = None,
    listing_cov: float = 0.0,
    listing_fan_out: float = 0.0,
    detour_tau: float | None = None,
    starts: Iterable[str] = (),
    paginations: Mapping[str, str] | None = None,
) -> Pruning:
    """Edge deletion, then node deletion; the warnings of both (greedy fallbacks, U's threshold).

    ``views`` (rule V, :mod:`frontier.clustergraph.variants`: cluster → note) are deleted first,
    with their edges, so that edge deletion and H/U/D run on the graph without them. ``by_content`` (rules T and F:
    cluster → (reason, note)) are deleted before U, if nothing depends on them; rule R (:func:`detours`) after
    them, when ``detour_tau`` is given (the clusters of ``starts``, the seeds', spared). ``paginations`` (ours,
    :func:`~frontier.clustergraph.variants.paginations`: cluster of further pages → its base) adds to E_final,
    for each surviving pair, the edges of E0 from the further pages to where the base's kept edges lead: a
    journal's older pages list posts as its first page does, though edge deletion found the first enough."""
    views = dict(views or {})
    if views:
        graph = ClusterGraph({c: s for c, s in graph.sizes.items() if c not in views},
                             {c: u for c, u in graph.universes.items() if c not in views},
                             {k: e for k, e in graph.edges.items() if k[0] not in views and k[1] not in views}, graph.n)
    edges = delete_edges(graph, tau, budget)
    nodes = delete_nodes(graph, edges, guard, sigmas, listing_cov, listing_fan_out, by_content, detour_tau, starts,
                         paginations)
    if views:
        nodes = NodeDeletion(dict(sorted({**nodes.reasons, **dict.fromkeys(views, PARAMETER_VARIANT)}.items())),
                             dict(sorted({**nodes.notes, **views}.items())), nodes.protected, nodes.u_threshold,
                             nodes.warnings)
    survivors = frozenset(graph.sizes) - set(nodes.reasons)
    final = frozenset(key for key in edges.kept if key[0] in survivors and key[1] in survivors)
    inherited = frozenset(
        (page, dst) for page, base in (paginations or {}).items() if page in survivors and base in survivors
        for src, dst in final if src == base and dst not in (base, page) and (page, dst) in graph.edges
    ) - final
    warnings = [f"edge deletion into {target}: greedy cover (over {budget} combinations)" for target in edges.greedy]
    return Pruning(edges, nodes, survivors, final | inherited, (*warnings, *nodes.warnings), inherited)
