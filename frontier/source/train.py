"""SOUrCe's learning phase on a saved sample (digest §2.5–2.11): pages in, a :class:`~frontier.source.model.Model` out.

Pure: the sampling crawl (``crawl learn source``, ``engine/learn_source.py``) fetches, parses
and writes ``sample.jsonl``, one :class:`SamplePage` per page of D in fetch order; this module
reads those records and nothing else. The steps, each in its own module:

1. :class:`~frontier.source.weights.Vocabulary`: Xpaths with df ≥ θ, log-tf·idf, L1 (§2.6);
2. :mod:`~frontier.source.clustering`: K-dist to the K-th nearest other page, the histogram
   eps estimator with NumBins = |V| / w (§2.7; ``eps`` fixes it instead), DBSCAN (§2.8);
3. :mod:`~frontier.source.navigation`: the (cluster, Apath) navigation table with the
   destinations of the links whose page is in D (§2.10), and A (§2.11); a link whose URL
   redirected leads to O unless ``redirects_as_final`` maps it to the page it ended on (§2.4);
4. per cluster: DSim (eq. 10), its training URLs and its tag-path signature (the Xpaths of
   largest mean weight), for the crawl policies and the report.

The same sample and parameters give the same model (DBSCAN, kNN and every tie are deterministic).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

from frontier.source import clustering, navigation
from frontier.source.model import ClusterSummary, EpsChoice, Model, Params
from frontier.source.weights import Vocabulary

SAMPLES_PER_CLUSTER = 5
SIGNATURE_PATHS = 5


@dataclass(frozen=True)
class SamplePage:
    """One page of D as the sampling crawl saw it: requested and final URL, Xpath bag, link groups.

    A ``redirect_only`` record says only that ``url`` redirected to ``final_url``, a page of D
    recorded earlier (its bag and groups are empty): D holds each page once."""

    seq: int
    url: str
    final_url: str
    bag: Mapping[str, int]
    groups: Mapping[str, Sequence[str]]
    redirect_only: bool = False

    def to_json(self) -> str:
        data = {"seq": self.seq, "url": self.url, "final_url": self.final_url, "bag": dict(self.bag),
                "groups": {x: list(u) for x, u in self.groups.items()}}
        return orjson.dumps(data | {"redirect_only": True} if self.redirect_only else data).decode()

    @classmethod
    def from_json(cls, line: str | bytes) -> SamplePage:
        data = orjson.loads(line)
        return cls(int(data["seq"]), data["url"], data["final_url"], {str(k): int(v) for k, v in data["bag"].items()},
                   {str(k): tuple(v) for k, v in data["groups"].items()}, bool(data.get("redirect_only", False)))


def read_sample(path: str | Path) -> list[SamplePage]:
    """The pages of a ``sample.jsonl`` in fetch order; ValueError or KeyError when it is not one."""
    return [SamplePage.from_json(line) for line in Path(path).read_bytes().splitlines() if line.strip()]


def train(records: Sequence[SamplePage], params: Params, site: str) -> Model:
    """The site model of the sample ``records`` (module docstring); ValueError with fewer than min_pts pages."""
    pages = [page for page in records if not page.redirect_only]
    if len(pages) < params.min_pts:
        raise ValueError(f"a sample of {len(pages)} pages is too small to cluster (min_pts = {params.min_pts})")
    vocabulary = Vocabulary.fit((page.bag for page in pages), params.min_df)
    matrix = vocabulary.matrix([page.bag for page in pages])
    eps = choose_eps(matrix, len(vocabulary), params)
    labels = clustering.dbscan(matrix, eps.eps, params.min_pts)
    n_clusters = int(labels.max()) + 1 if labels.size else 0
    final_labels = {page.final_url: int(label) for page, label in zip(pages, labels)}
    redirects = {page.url: page.final_url for page in records if page.url != page.final_url}
    if not params.redirects_as_final:  # a link answered by a redirect leads to no template: O
        final_labels |= dict.fromkeys(redirects, clustering.OUTLIER)
    table = navigation.build(((int(label), page.groups) for page, label in zip(pages, labels)),
                             final_labels, n_clusters, redirects if params.redirects_as_final else None)
    dsim = clustering.dsim(matrix, labels)
    warnings = ["eps: no sparse K-dist bin past the median, the fallback 0.10 is used"] if eps.fallback else []
    if n_clusters == 0:
        warnings.append("DBSCAN found no cluster: every page is an outlier")
    return Model(
        params=params, site=site, pages=tuple(page.final_url for page in pages), redirects=redirects,
        labels=labels, vocabulary=vocabulary, matrix=matrix, eps=eps, table=table,
        clusters=tuple(summaries(pages, matrix, labels, vocabulary, dsim)), warnings=tuple(warnings),
    )


def choose_eps(matrix: np.ndarray, features: int, params: Params) -> EpsChoice:
    """The K-dist histogram estimate (§2.7), or ``params.eps`` when it is set."""
    k = min(params.k, len(matrix) - 1)
    kdists = clustering.k_dist(matrix, k)
    w = params.bin_factor or clustering.bin_factor(len(matrix))
    bins = clustering.n_bins(features, w)
    estimate = clustering.estimate_eps(kdists, bins, params.min_pts)
    if params.eps > 0:
        return EpsChoice(params.eps, estimate.eps, bins, w, fallback=False)
    return EpsChoice(estimate.eps, estimate.eps, bins, w, estimate.fallback)


def summaries(pages: Sequence[SamplePage], matrix: np.ndarray, labels: np.ndarray, vocabulary: Vocabulary,
              dsim: Mapping[int, float]) -> Iterable[ClusterSummary]:
    """Per cluster (outliers last): size, DSim, sample URLs and the Xpaths of largest mean weight."""
    for label in sorted(set(labels.tolist()), key=lambda label: (label == clustering.OUTLIER, label)):
        members = np.flatnonzero(labels == label)
        mean = matrix[members].mean(axis=0)
        top = sorted(range(len(vocabulary)), key=lambda column: (-mean[column], vocabulary.paths[column]))
        yield ClusterSummary(
            label=int(label), size=len(members), dsim=float(dsim.get(int(label), 0.0)),
            samples=tuple(pages[i].final_url for i in members[:SAMPLES_PER_CLUSTER]),
            signature=tuple(vocabulary.paths[c] for c in top[:SIGNATURE_PATHS] if mean[c] > 0),
        )
