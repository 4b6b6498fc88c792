"""The cluster graph E0 (digest §2.9): clusters as nodes, "some page of C_i links to some URL of C_j" as edges.

Reads (source URL, outlinks) pairs and a cluster function; writes nothing. URLs are opaque
strings here: the caller normalises them (``urls.normalise``) so that equal strings are equal
URLs. Per edge it keeps the paper's two weights (w_src: distinct source pages, w_dst: distinct
destination URLs), the number of link instances (distinct (u, v) pairs: the fan-out is
instances / w_src) and the *set* of destinations, because the edge deletion of
:mod:`frontier.clustergraph.pruning` needs the coverage of unions of edges, not only of each.

A destination set is a Python ``int`` used as a bitmask over the target cluster's universe
(the distinct URLs mapped to that cluster): a union is one ``|`` and its size one
``bit_count()``, which keeps the exact search over combinations of edges cheap.

Link universe (digest §2.9 [R], ``edge_universe``): with ``sampled_only=False`` (the default,
"all") the targets are every mapped outlink of a sampled page, fetched or not, and a
cluster's universe is its distinct sampled-or-discovered URLs; with ``sampled_only=True``
("sampled", the literal reading) only sampled pages count as targets. Sizes are sampled
counts in both cases. A page's link to itself is ignored, a link given twice counts once,
and unmapped endpoints are ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

EdgeKey = tuple[str, str]
"""(source cluster, destination cluster)."""


def bitmask(indices: Iterable[int]) -> int:
    """The set of non-negative ``indices`` as an int bitmask (built in one go, not bit by bit)."""
    positions = np.fromiter(indices, dtype=np.int64)
    if not positions.size:
        return 0
    bits = np.zeros(int(positions.max()) + 1, dtype=bool)
    bits[positions] = True
    return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")


@dataclass(frozen=True, slots=True)
class Edge:
    """One edge e_ij of E0 with its statistics.

    Invariant: ``w_dst == targets.bit_count() <= universe`` and ``w_src <= instances``.
    """

    src: str
    dst: str
    w_src: int
    """Distinct pages of ``src`` that link to some URL of ``dst``."""
    w_dst: int
    """Distinct URLs of ``dst`` that some page of ``src`` links to."""
    instances: int
    """Distinct (page, URL) links from ``src`` to ``dst``."""
    targets: int
    """The destination set, a bitmask over ``dst``'s universe."""
    universe: int
    """The size of ``dst``'s universe: the coverage denominator."""

    @classmethod
    def of(cls, src: str, dst: str, targets: Iterable[int], universe: int, w_src: int, instances: int) -> Edge:
        """An edge from given statistics (``targets`` are indices into ``dst``'s universe)."""
        mask = bitmask(targets)
        if mask.bit_length() > universe:
            raise ValueError(f"edge {src} → {dst}: a target index is outside the universe of {universe}")
        return cls(src, dst, w_src, mask.bit_count(), instances, mask, universe)

    @property
    def key(self) -> EdgeKey:
        return (self.src, self.dst)

    @property
    def is_self_loop(self) -> bool:
        return self.src == self.dst

    @property
    def cov(self) -> float:
        """cov(e_ij) = w_dst / |C_j| (digest §2.9)."""
        return self.w_dst / self.universe

    @property
    def fan_out(self) -> float:
        """Links per source page: how strongly the source lists this destination (rule D's order)."""
        return self.instances / self.w_src


@dataclass(frozen=True)
class ClusterGraph:
    """E0: every cluster with its sampled size and universe, and every edge between clusters.

    Invariant: every edge's endpoints are in ``sizes`` and ``universes``; ``n`` is the
    number of sampled pages (N of the node rules), mapped or not.
    """

    sizes: Mapping[str, int]
    universes: Mapping[str, int]
    edges: Mapping[EdgeKey, Edge]
    n: int

    @property
    def nodes(self) -> list[str]:
        return sorted(self.sizes)

    def incoming(self) -> dict[str, list[Edge]]:
        """Every node's incoming edges, self-loops included, in source order."""
        into: dict[str, list[Edge]] = {node: [] for node in self.sizes}
        for key in sorted(self.edges):
            into[key[1]].append(self.edges[key])
        return into


class _Universe:
    """Numbers each cluster's URLs in first-seen order (the bit positions of the destination sets)."""

    def __init__(self) -> None:
        self.index: dict[str, dict[str, int]] = {}

    def position(self, cluster: str, url: str) -> int:
        members = self.index.setdefault(cluster, {})
        return members.setdefault(url, len(members))

    def size(self, cluster: str) -> int:
        return len(self.index.get(cluster, ()))


def build_graph(
    pages: Iterable[tuple[str, Iterable[str]]],
    cluster_of: Callable[[str], str | None],
    *,
    sampled_only: bool = False,
) -> ClusterGraph:
    """E0 from the sampled pages (URL, outlinks) and ``cluster_of`` (a URL's cluster, or None).

    A page given twice is one page whose outlinks are the union of both. ``cluster_of`` is
    called once per distinct URL. The statistics do not depend on the order of ``pages``.
    """
    outlinks: dict[str, set[str]] = {}
    for url, links in pages:
        outlinks.setdefault(url, set()).update(links)
    clusters: dict[str, str | None] = {}

    def cluster(url: str) -> str | None:
        if url not in clusters:
            clusters[url] = cluster_of(url)
        return clusters[url]

    universe = _Universe()
    sizes: dict[str, int] = {}
    for url in outlinks:
        home = cluster(url)
        if home is not None:
            sizes[home] = sizes.get(home, 0) + 1
            universe.position(home, url)
    sources: dict[EdgeKey, set[str]] = {}
    targets: dict[EdgeKey, set[int]] = {}
    instances: dict[EdgeKey, int] = {}
    for url, links in outlinks.items():
        src = cluster(url)
        for link in links:
            dst = None if sampled_only and link not in outlinks else cluster(link)
            if dst is None:
                continue
            position = universe.position(dst, link)  # discovered from any page, mapped or not
            if src is None or link == url:
                continue
            key = (src, dst)
            sources.setdefault(key, set()).add(url)
            targets.setdefault(key, set()).add(position)
            instances[key] = instances.get(key, 0) + 1
    for discovered in universe.index:
        sizes.setdefault(discovered, 0)
    universes = {node: universe.size(node) for node in sizes}
    edges = {
        key: Edge.of(key[0], key[1], targets[key], universes[key[1]], len(sources[key]), instances[key])
        for key in sorted(sources)
    }
    return ClusterGraph(sizes=dict(sorted(sizes.items())), universes=dict(sorted(universes.items())),
                        edges=edges, n=len(outlinks))
