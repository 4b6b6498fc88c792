"""Training: from the sampler's records to a :class:`~frontier.clustergraph.model.Model` (digest §2.0, §2.13).

Reads sample records (in memory, or a JSON-lines file written by ``crawl learn clustergraph``
with :func:`write_sample`); returns a model and never writes one (``Model.save`` does). No
network, no clock, no randomness: the records are put in ``seq`` order first and every step
iterates in sorted or sampling order, so the same records and parameters give the same
model bytes, whatever the order of the file.

The pipeline (one function per step below):

1. the sampled pages: successful records (2xx, or 3xx whose outlink is the redirect
   target), each URL normalised (:func:`~frontier.clustergraph.urls.normalise`: no scheme,
   port or fragment), in ``seq`` order, a page met twice being one page;
2. itemise → stable itemsets per part (M bins, support S) → each page's pattern;
3. δ removal of the smallest patterns, except those with a number in the query that would fold
   into a pattern with a word there (ours: :func:`~frontier.clustergraph.patterns.numbers_apart`);
   a retained pattern whose ``*`` hides identifier and position parameters is split by their
   names (ours: :func:`~frontier.clustergraph.patterns.names_apart`); the survivors form V0;
4. every page and outlink re-mapped with the runtime :class:`~frontier.clustergraph.patterns.Mapper`,
   so training and crawling agree, and E0 built (:mod:`~frontier.clustergraph.graph`);
5. edge deletion, node deletion H → T/F → R → U → D (:mod:`~frontier.clustergraph.pruning`);
6. reachability of the survivors from the seed clusters (a warning per run, no repair).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from frontier.clustergraph.graph import ClusterGraph, build_graph
from frontier.clustergraph.model import KEPT, ClusterInfo, EdgeInfo, Model, Params
from frontier.clustergraph.fpgrowth import contiguous_bins
from frontier.clustergraph.patterns import (Itemsets, Mapper, names_apart, numbers_apart, pattern_of, query_keys,
                                          remove_small)
from frontier.clustergraph.pruning import SMALL_PATTERN, Pruning, prune, reachable
from frontier.clustergraph.feeds import FEED, feed_clusters
from frontier.clustergraph.thin import THIN_CONTENT, Blocks, thin_clusters
from frontier.clustergraph.urls import normalise
from frontier.clustergraph.variants import paginations, parameter_variants

SAMPLES_PER_CLUSTER = 5


@dataclass(frozen=True, slots=True)
class SampleRecord:
    """One page the sampler fetched, as the crawler saw it.

    URLs are canonical absolute URLs; ``outlinks`` are in scope, de-duplicated and without
    fragments (for a redirect: its target). ``status`` 0 means no response at all.
    """

    seq: int
    """The order in which the sampler fetched the page (the bins follow it)."""
    url: str
    final_url: str
    status: int
    outlinks: tuple[str, ...]
    blocks: Blocks | None = None
    """The page's text (:func:`~frontier.clustergraph.thin.text_blocks`; empty for a redirect), None
    where it was not read (not HTML, or a sample from before rule T)."""
    media_type: str | None = None
    """The response's media type, lower case without parameters (rule F); None if unknown."""

    @property
    def failed(self) -> bool:
        """No page: an error status or no response (left out of the sample, §2.2)."""
        return not 200 <= self.status < 400

    @property
    def page(self) -> str:
        """The URL of what was fetched: the final URL of a 2xx, the requested URL of a redirect."""
        return self.final_url if 200 <= self.status < 300 else self.url

    def to_json(self) -> str:
        data: dict[str, object] = {"seq": self.seq, "url": self.url, "final_url": self.final_url,
                                   "status": self.status, "outlinks": list(self.outlinks)}
        if self.blocks is not None:
            data["blocks"] = [list(block) for block in self.blocks]
        if self.media_type is not None:
            data["media_type"] = self.media_type
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> SampleRecord:
        data = json.loads(line)
        blocks = data.get("blocks")
        return cls(int(data["seq"]), str(data["url"]), str(data["final_url"]), int(data["status"]),
                   tuple(str(link) for link in data["outlinks"]),
                   None if blocks is None else tuple((int(h), int(words)) for h, words in blocks),
                   None if (media_type := data.get("media_type")) is None else str(media_type))


def write_sample(path: str | Path, records: Iterable[SampleRecord]) -> None:
    """Records as JSON lines, one per line, in the order given."""
    with open(path, "w", encoding="utf-8") as out:
        out.writelines(record.to_json() + "\n" for record in records)


def read_sample(path: str | Path) -> list[SampleRecord]:
    """The records of a JSON-lines file, blank lines skipped."""
    with open(path, encoding="utf-8") as lines:
        return [SampleRecord.from_json(line) for line in lines if line.strip()]


def sampled_pages(sample: Iterable[SampleRecord]) -> dict[str, set[str]]:
    """Step 1: normalised page → its normalised outlinks (without itself), in sampling order."""
    keys: dict[str, str] = {}

    def key(url: str) -> str:
        if url not in keys:
            keys[url] = normalise(url)
        return keys[url]

    pages: dict[str, set[str]] = {}
    for record in sorted(sample, key=lambda r: (r.seq, r.url)):
        if record.failed:
            continue
        page = key(record.page)
        links = pages.setdefault(page, set())
        links.update(key(link) for link in record.outlinks)
        links.discard(page)
    return pages


def train(sample: Sequence[SampleRecord], params: Params, seeds: Sequence[str]) -> Model:
    """The model of a sample: clusters, E0 and its pruning (see the module docstring)."""
    pages = sampled_pages(sample)
    order = list(pages)
    itemsets = Itemsets.mine(order, params.bins, params.min_support, params.max_itemset,
                             numbers=params.literal or params.literal_numbers)
    derived = {page: pattern_of(page, itemsets, params.strict_nesting) for page in order}
    retained = remove_small(Counter(derived.values()), len(order), params.delta)
    if params.numbers_apart and not params.literal:
        by_pattern: dict[str, list[str]] = {}
        for page, pattern in derived.items():
            by_pattern.setdefault(pattern, []).append(page)
        retained |= numbers_apart(set(by_pattern) - retained, retained, by_pattern)
    if params.names_apart and not params.literal:
        itemsets, derived, retained = _names_apart(pages, itemsets, derived, retained, params)
    mapper = Mapper(itemsets, retained, (), params.strict_nesting)

    known: dict[str, str | None] = {}

    def cluster_of(url: str) -> str | None:  # asked several times per URL of the universe: remembered
        if url not in known:
            known[url] = mapper.classify(url)[0]
        return known[url]

    graph = build_graph(pages.items(), cluster_of, sampled_only=params.edge_universe == "sampled")
    members = _members(pages, cluster_of)
    views = parameter_variants(members, cluster_of) if params.views and not params.literal else {}
    pages_of = paginations(members, cluster_of) if params.paginations and not params.literal else {}
    by_content = {} if params.literal else _by_content(sample, params, cluster_of)
    pruning = prune(graph, tau=params.tau, budget=params.combination_budget,
                    guard=None if params.literal else params.header_guard, sigmas=params.u_sigmas, views=views, by_content=by_content,
                    listing_cov=0.0 if params.literal else params.listing_cov,
                    listing_fan_out=0.0 if params.literal else params.listing_fan_out,
                    detour_tau=params.tau if params.detours and not params.literal else None,
                    starts={c for seed in seeds if (c := cluster_of(normalise(seed))) is not None},
                    paginations=pages_of)
    seed_clusters, unreachable = _reachability(seeds, pages, cluster_of, pruning)
    warnings = list(pruning.warnings)
    if unreachable:
        shown = ", ".join(unreachable[:10]) + (", …" if len(unreachable) > 10 else "")
        warnings.append(f"{len(unreachable)} surviving clusters are unreachable from the seeds: {shown}")
    return Model(
        params=params,
        n=len(order),
        itemsets=itemsets,
        clusters=_clusters(order, derived, graph, pruning, cluster_of),
        edges=_edges(graph, pruning),
        seed_clusters=tuple(seed_clusters),
        unreachable=tuple(unreachable),
        warnings=tuple(warnings),
        measures={"clusters": len(graph.sizes), "edges": len(graph.edges),
                  "surviving_clusters": len(pruning.survivors), "surviving_edges": len(pruning.final_edges)},
    )


def _names_apart(pages: Mapping[str, set[str]], itemsets: Itemsets, derived: dict[str, str], retained: set[str],
                 params: Params) -> tuple[Itemsets, dict[str, str], set[str]]:
    """Step 3's split: the names :func:`names_apart` finds become query itemsets, and a retained
    pattern's pages that now derive a pattern with such a name literal retain it instead."""
    urls: dict[str, set[str]] = {}
    for page, links in pages.items():
        for url in (page, *links):
            if "?" in url:
                urls.setdefault(pattern_of(url, itemsets, params.strict_nesting), set()).add(url)
    names = names_apart({p: u for p, u in urls.items() if p in retained}, set(pages), params.min_support)
    if not names:
        return itemsets, derived, retained
    order = list(pages)
    bins = contiguous_bins(len(order), params.bins)
    extra = {frozenset({name}): tuple(sum(1 for i in chunk if name in query_keys(order[i])) for chunk in bins)
             for name in sorted(names)}
    itemsets = itemsets.adding("query", extra)
    split = {page: pattern_of(page, itemsets, params.strict_nesting) for page in order}
    moved = {split[page] for page in order if derived[page] in retained and split[page] != derived[page]}
    return itemsets, split, (retained & set(split.values())) | moved


def _by_content(sample: Iterable[SampleRecord], params: Params,
                cluster_of: Callable[[str], str | None]) -> dict[str, tuple[str, str]]:
    """Rules T and F: the clusters their sampled pages' text and media types condemn, with reason and note."""
    texts: dict[str, Blocks] = {}
    media_types: dict[str, str] = {}
    for record in sorted(sample, key=lambda r: (r.seq, r.url)):  # a page's first record
        if not record.failed:
            if record.blocks is not None:
                texts.setdefault(normalise(record.page), record.blocks)
            if record.media_type is not None:
                media_types.setdefault(normalise(record.page), record.media_type)
    found: dict[str, tuple[str, str]] = {}
    if params.feeds:
        found |= {cluster: (FEED, note) for cluster, note in feed_clusters(media_types, cluster_of).items()}
    if params.thin_words > 0:
        thin = thin_clusters(texts, cluster_of, params.thin_pages, params.thin_words)
        found |= {cluster: (THIN_CONTENT, note) for cluster, note in thin.items() if cluster not in found}
    return found


def _members(pages: Mapping[str, set[str]], cluster_of: Callable[[str], str | None]) -> dict[str, set[str]]:
    """Each cluster's URLs among the sampled pages and their links (rule V reads them)."""
    members: dict[str, set[str]] = {}
    for page, links in pages.items():
        for url in (page, *links):
            if (cluster := cluster_of(url)) is not None:
                members.setdefault(cluster, set()).add(url)
    return members


def _clusters(order: list[str], derived: dict[str, str], graph: ClusterGraph, pruning: Pruning,
              cluster_of: Callable[[str], str | None]) -> dict[str, ClusterInfo]:
    """Every pattern a page produced: the graph's nodes with their fate, and those δ removed."""
    samples: dict[str, list[str]] = {}
    for page in order:
        home = cluster_of(page)
        for name in sorted({derived[page]} if home is None else {derived[page], home}):
            if len(chosen := samples.setdefault(name, [])) < SAMPLES_PER_CLUSTER:
                chosen.append(page)
    derived_sizes = Counter(derived.values())
    clusters = {
        name: ClusterInfo(derived_sizes[name], None, tuple(samples[name]), SMALL_PATTERN)
        for name in derived_sizes if name not in graph.sizes
    }
    for name in graph.sizes:
        status = pruning.nodes.reasons.get(name, KEPT)
        clusters[name] = ClusterInfo(graph.sizes[name], graph.universes[name], tuple(samples.get(name, ())),
                                     status, pruning.nodes.notes.get(name, ""))
    return dict(sorted(clusters.items()))


def _edges(graph: ClusterGraph, pruning: Pruning) -> tuple[EdgeInfo, ...]:
    return tuple(
        EdgeInfo(edge.src, edge.dst, edge.w_src, edge.w_dst, edge.instances, edge.cov,
                 key in pruning.final_edges, pruning.edge_reason(key))
        for key, edge in sorted(graph.edges.items())
    )


def _reachability(seeds: Sequence[str], pages: dict[str, set[str]], cluster_of: Callable[[str], str | None],
                  pruning: Pruning) -> tuple[list[str], list[str]]:
    """The seeds' clusters, and the survivors no path of E_final reaches from them.

    A seed that maps to no surviving cluster is an unrestricted source (§2.12): the
    surviving clusters of its sampled outlinks are where the crawl starts instead.
    """
    seed_clusters: set[str] = set()
    starts: set[str] = set()
    for seed in seeds:
        key = normalise(seed)
        home = cluster_of(key)
        if home is not None:
            seed_clusters.add(home)
        if home in pruning.survivors:
            starts.add(home)
        else:
            starts.update(c for link in pages.get(key, ()) if (c := cluster_of(link)) in pruning.survivors)
    found = reachable(pruning.final_edges, starts)
    return sorted(seed_clusters), sorted(pruning.survivors - found)


def _prefix(records: list[SampleRecord], pages: int) -> list[SampleRecord] | None:
    """The records up to the ``pages``-th successful one (in ``seq`` order); None if there are fewer."""
    count = 0
    for index, record in enumerate(records):
        count += not record.failed
        if count == pages:
            return records[: index + 1]
    return None


def measures(
    sample: Sequence[SampleRecord], params: Params, seeds: Sequence[str], sizes: Sequence[int] | None = None
) -> list[dict[str, int]]:
    """The four training measures of §2.13 on prefixes of one sampler run (2K, 3K, … pages by default)."""
    records = sorted(sample, key=lambda r: (r.seq, r.url))
    total = sum(not record.failed for record in records)
    rows = []
    for size in sizes if sizes is not None else range(2000, total + 1, 1000):
        prefix = _prefix(records, size)
        if prefix is None:
            break
        rows.append({"pages": size, **train(prefix, params, seeds).measures})
    return rows


def stable_size(rows: Sequence[dict[str, int]], tolerance: float = 0.05) -> int | None:
    """The sample size at which every measure has changed by ≤ ``tolerance`` over two increments in a row."""
    def steady(before: dict[str, int], after: dict[str, int]) -> bool:
        return all(abs(after[k] - before[k]) <= tolerance * max(before[k], 1) for k in before if k != "pages")

    for index in range(2, len(rows)):
        if steady(rows[index - 2], rows[index - 1]) and steady(rows[index - 1], rows[index]):
            return rows[index]["pages"]
    return None
