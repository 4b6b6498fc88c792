"""The trained model (digest §2.0 artefact) and the crawl-time filter built from it (§2.12).

Reads and writes only its own files: ``model.json`` (the model, deterministic JSON: sorted
keys, floats rounded to 6 places, so the same sample and parameters give the same bytes),
``report.md`` and ``graph.svg`` (rendered by :mod:`frontier.clustergraph.report`). It never
touches the network or a clock; :mod:`frontier.clustergraph.train` builds models.

What a model holds: the parameters (:class:`Params`, every parameter of §2.14 with its
default), the final itemsets, every cluster that a sampled URL produced (its sampled size,
its universe, sample URLs and its status: ``kept`` or why it was deleted, ``small_pattern``
for δ), every edge of E0 with its statistics, ``kept`` flag and reason, the seed clusters,
the surviving clusters unreachable from them, the warnings and the training measures (§2.13).

:class:`ClusterFilter` maps a URL with the *training* mapping: the mapper knows every
cluster of E0 (those node pruning deleted included), so a URL lands exactly where training
put it, and is then rejected when that cluster was deleted. A URL whose derived pattern was
deleted is therefore rejected without fallback (§2.8, step 1), and one whose fallback lands
on a deleted cluster is rejected too, instead of leaking back in through a more general one.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from frontier.clustergraph import report
from frontier.clustergraph.patterns import Itemsets, Mapper
from frontier.clustergraph.pruning import SMALL_PATTERN
from frontier.clustergraph.urls import normalise
from frontier.learned_params import LearnedParams, rounded

FORMAT = "crawl-clustergraph-model/1"
KEPT = report.KEPT


@dataclass(frozen=True)
class Params(LearnedParams):
    """Every training parameter (digest §2.14); ``crawl learn clustergraph --set key=value`` sets them."""

    bins: int = 6
    """M: contiguous bins of the sampling order; an itemset must be frequent in each."""
    min_support: int = 5
    """S: absolute minimum support of an itemset within one bin."""
    delta: float = 0.03
    """δ: the share of sampled URLs small-pattern removal may leave uncovered."""
    tau: float = 0.6
    """τ: the coverage the kept incoming edges of a cluster must exceed (strictly)."""
    header_guard: float = 0.05
    """Rule H also needs Σw_dst / Σw_src ≤ this over the incoming edges (not in literal mode)."""
    literal: bool = False
    """The paper's rules as written: rule H without the guard."""
    strict_nesting: bool = False
    """A query node only under a matched path (the paper's pseudo-code); off: an empty-path node is allowed."""
    listing_cov: float = 0.3
    """Rule D deletes a listing only if the pruned edge to the content covered at least this share of it
    (ours; 0 and literal mode: the paper's rule). On the lab, every deletion by D over edges of cov
    0.13–0.15 removed a valuable cluster (comments, journal pages, tag lists, thread pages); real
    listings cover more (the blog's tag listings cover 0.38 of the posts; the digest's toy 0.7)."""
    listing_fan_out: float = 3.0
    """…and only if that edge had at least this many links per listing page (ours; 0: the paper): a listing
    lists several items; one template link per page (fan-out 1) made D delete the blog's profiles."""
    views: bool = True
    """Rule V (not the paper's; off in literal mode): delete clusters whose URLs are another cluster's pages
    with word parameters added (sort orders, views, tracking, actions): ``frontier/clustergraph/variants.py``."""
    thin_words: float = 10.0
    """Rule T (not the paper's; off in literal mode and at 0): delete clusters whose sampled pages have
    a median of fewer than this many words of their own (forms and action pages):
    ``frontier/clustergraph/thin.py``."""
    thin_pages: int = 4
    """…judging only clusters with at least this many sampled pages whose text was read."""
    feeds: bool = True
    """Rule F (not the paper's; off in literal mode): delete clusters whose sampled pages are mostly
    syndication feeds (RSS, Atom), alternates of the HTML listings they repeat: ``frontier/clustergraph/feeds.py``."""
    paginations: bool = True
    """Further pages of a cluster (its URLs with a number parameter added: ``?skip=20``) lead where its first
    pages' kept edges lead (ours; off in literal mode): ``variants.paginations``."""
    detours: bool = True
    """Rule R (not the paper's; off in literal mode): delete a listing entered only from the clusters it leads
    back to, each of which links more than τ of itself (tag listings and calendar days of posts that link
    their neighbours): ``pruning.detours``."""
    numbers_apart: bool = True
    """δ keeps a small pattern with a number in its query (``/?*=$``) that would otherwise fold into a retained
    one with a word there (``/?*=*``): a number selects other content, a word repeats a page (ours; off in
    literal mode): ``patterns.numbers_apart``."""
    names_apart: bool = True
    """A query parameter name hidden by ``*`` stays literal when, under one pattern, names whose values identify
    (``?before=104622``, each value once) sit beside names whose values count (``?offset=10`` on many hosts):
    the same listing served twice (ours; off in literal mode): ``patterns.names_apart``."""
    literal_numbers: bool = False
    """A frequent all-digit token may stay literal (the paper: ``?page=2`` is then a cluster of its own);
    off: numbers are data, always ``$``. Literal mode implies it."""
    edge_universe: Literal["all", "sampled"] = "all"
    """Link targets: every mapped outlink of a sampled page ("all"), or sampled pages only."""
    combination_budget: int = 200_000
    """Edge deletion's exact search tries at most this many combinations per (target, m), then greedy."""
    u_sigmas: float = 2.0
    """Rule U deletes leaves smaller than mean − u_sigmas·std of the cluster sizes."""
    max_itemset: int = 12
    """The longest itemset mined (a safety cap, not in the paper)."""
    xi: float = 0.0
    """ξ of the sampler; 0 means estimated from the pilot (ξ = 1/K̄ + (1 − 1/K̄)/α)."""
    alpha: int = 0
    """α in ξ's formula; 0 means round(K̄) − 1 (ξ = 2/K̄)."""
    pilot_pages: int = 200
    """Pages of the pilot breadth-first crawl that estimates K̄."""
    batch: int = 1
    """URLs the sampler draws per round (fetched concurrently; > 1 approximates Alg. 1)."""
    seed: int = 0
    """The sampler's random seed."""

    def __post_init__(self) -> None:
        checks = {
            "bins": self.bins >= 1, "min_support": self.min_support >= 1, "delta": 0 <= self.delta < 1,
            "tau": 0 <= self.tau < 1, "header_guard": self.header_guard >= 0,
            "edge_universe": self.edge_universe in ("all", "sampled"), "combination_budget": self.combination_budget >= 0,
            "max_itemset": self.max_itemset >= 1,
            "thin_words": self.thin_words >= 0, "thin_pages": self.thin_pages >= 1, "xi": 0 <= self.xi <= 1, "alpha": self.alpha >= 0,
            "pilot_pages": self.pilot_pages >= 0, "batch": 1 <= self.batch <= 8,
        }
        self.require(checks)


@dataclass(frozen=True)
class ClusterInfo:
    """One cluster (a pattern string): sampled size, universe (None when δ removed it), samples, fate."""

    size: int
    universe: int | None
    samples: tuple[str, ...]
    status: str
    """``kept``, or the deletion reason: small_pattern, header_footer, uninformative, duplicate_content,
    parameter_variant, thin_content, feed, detour."""
    note: str = ""


@dataclass(frozen=True)
class EdgeInfo:
    """One edge of E0 with its statistics, whether it is in E_final, and why (pruning's reasons)."""

    src: str
    dst: str
    w_src: int
    w_dst: int
    instances: int
    cov: float
    kept: bool
    reason: str


@dataclass(frozen=True, eq=False)
class Model:
    """A trained cluster-graph model. Compare models by :meth:`to_bytes`."""

    params: Params
    n: int
    """Sampled pages (N)."""
    itemsets: Itemsets
    clusters: Mapping[str, ClusterInfo]
    edges: tuple[EdgeInfo, ...]
    seed_clusters: tuple[str, ...] = ()
    unreachable: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    measures: Mapping[str, int] = field(default_factory=dict)

    def settings(self) -> dict[str, object]:
        return self.params.to_data()

    @property
    def nodes(self) -> list[str]:
        """V0: the clusters of the graph (all but those δ removed)."""
        return sorted(c for c, info in self.clusters.items() if info.status != SMALL_PATTERN)

    @property
    def survivors(self) -> list[str]:
        return sorted(c for c, info in self.clusters.items() if info.status == KEPT)

    @property
    def deleted(self) -> dict[str, str]:
        """The clusters node pruning deleted, with the reason."""
        return {c: info.status for c, info in sorted(self.clusters.items()) if info.status not in (KEPT, SMALL_PATTERN)}

    def to_data(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "params": self.params.to_data(),
            "n": self.n,
            "itemsets": self.itemsets.to_data(),
            "clusters": {c: {**dataclasses.asdict(info), "samples": list(info.samples)}
                         for c, info in sorted(self.clusters.items())},
            "edges": [{**dataclasses.asdict(e), "cov": rounded(e.cov)} for e in sorted(self.edges, key=_edge_key)],
            "seed_clusters": sorted(self.seed_clusters),
            "unreachable": sorted(self.unreachable),
            "warnings": list(self.warnings),
            "measures": dict(sorted(self.measures.items())),
        }

    def to_bytes(self) -> bytes:
        return (json.dumps(self.to_data(), sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode()

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Model:
        if data.get("format") != FORMAT:
            raise ValueError(f"not a cluster-graph model (format {data.get('format')!r}, expected {FORMAT!r})")
        return cls(
            params=Params.from_data(data["params"]),
            n=int(data["n"]),
            itemsets=Itemsets.from_data(data["itemsets"]),
            clusters={c: ClusterInfo(**{**info, "samples": tuple(info["samples"])}) for c, info in data["clusters"].items()},
            edges=tuple(EdgeInfo(**edge) for edge in data["edges"]),
            seed_clusters=tuple(data["seed_clusters"]),
            unreachable=tuple(data["unreachable"]),
            warnings=tuple(data["warnings"]),
            measures=dict(data["measures"]),
        )

    @classmethod
    def from_bytes(cls, raw: bytes) -> Model:
        return cls.from_data(json.loads(raw))

    def save(self, folder: str | Path) -> Path:
        """Write ``model.json``, ``report.md`` and ``graph.svg`` into ``folder``; the model file's path."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "report.md").write_text(report.markdown(self), encoding="utf-8")
        (folder / "graph.svg").write_text(report.svg(self), encoding="utf-8")
        path = folder / "model.json"
        path.write_bytes(self.to_bytes())
        return path

    @classmethod
    def load(cls, path: str | Path) -> Model:
        """A model from its ``model.json`` or from the folder holding it."""
        path = Path(path)
        return cls.from_bytes((path / "model.json" if path.is_dir() else path).read_bytes())


def _edge_key(edge: EdgeInfo) -> tuple[str, str]:
    return (edge.src, edge.dst)


class ClusterFilter:
    """Links along kept edges only (digest §2.12): rule 1, a surviving cluster; rule 2, a kept edge.

    Invariant: ``kept_edges`` has one entry per surviving cluster (possibly empty), and every
    destination in it survives. Cost per call: one normalisation and one mapping, flat in
    the number of URLs and clusters.
    """

    def __init__(self, mapper: Mapper, deleted: frozenset[str], kept_edges: Mapping[str, frozenset[str]]) -> None:
        self._mapper = mapper
        self._deleted = deleted
        self.kept_edges: dict[str, frozenset[str]] = dict(kept_edges)

    @classmethod
    def from_model(cls, model: Model) -> ClusterFilter:
        survivors = model.survivors
        targets: dict[str, set[str]] = {cluster: set() for cluster in survivors}
        for edge in model.edges:
            if edge.kept:
                targets[edge.src].add(edge.dst)
        mapper = Mapper(model.itemsets, model.nodes, (), model.params.strict_nesting)
        return cls(mapper, frozenset(model.deleted), {c: frozenset(d) for c, d in targets.items()})

    def __repr__(self) -> str:
        edges = sum(len(d) for d in self.kept_edges.values())
        return f"<ClusterFilter clusters={len(self.kept_edges)} deleted={len(self._deleted)} kept_edges={edges}>"

    def _classify(self, url: str) -> tuple[str | None, str | None]:
        cluster, _ = self._mapper.classify(normalise(url))
        if cluster is None:
            return None, "cg_unmapped"
        if cluster in self._deleted:
            return None, "cg_deleted"
        return cluster, None

    def cluster(self, url: str) -> str | None:
        """The surviving cluster of a canonical absolute URL, or None."""
        return self._classify(url)[0]

    def judge(self, url: str, source: str | None) -> tuple[str | None, str | None]:
        """(the link's surviving cluster or None, the drop reason or None) for a link of a page in ``source``.

        ``source`` is the *cluster* of the page the link was found on (:meth:`cluster` of its
        URL, stored with it when it was queued); None for a seed, a redirect or a page that maps
        to no surviving cluster: such sources are unrestricted (rule 2 is skipped).
        """
        cluster, reason = self._classify(url)
        if cluster is None or source is None:
            return cluster, reason
        allowed = self.kept_edges.get(source)
        if allowed is None:
            raise ValueError(f"{source!r} is not a surviving cluster: pass cluster(source_url), or None")
        return (cluster, None) if cluster in allowed else (cluster, "cg_no_edge")

