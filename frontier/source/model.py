"""A SOUrCe site model (digest §2.13): what learning keeps, on disk and in memory.

Files of a model folder, the only files this module touches:

* ``model.json``: the format tag, the parameters, the site, D's URLs with their cluster
  labels and redirects, the vocabulary (Xpath → df), eps and how it was chosen, the
  navigation table, per-cluster summaries (size, DSim, samples, signature) and warnings;
* ``matrix.npy``: the training matrix X (|D| × |V|, float64), which the kNN classifier of a
  new page needs;
* ``report.md`` and ``graph.svg``, rendered by :mod:`frontier.source.report`.

A is not stored: it is a function of the table (eq. 6), and HITS of A (§3.2, §3.3) is
computed when a crawl policy starts, for its own α and mode.

At harvest time :meth:`Model.classify` puts a parsed page in a cluster (kNN over D, −1 for
an outlier, §2.9) and :meth:`Model.label_of` gives the cluster of a page of D by its URL (the
target example of crawling-for-target, A27).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import orjson

from frontier.learned_params import LearnedParams, rounded
from frontier.source import report
from frontier.source.clustering import OUTLIER, KnnClassifier
from frontier.source.features import xpath_bag
from frontier.source.navigation import NavigationTable
from frontier.source.weights import Vocabulary

if TYPE_CHECKING:
    from lxml.etree import _Element

FORMAT = "crawl-source-model/1"
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Params(LearnedParams):
    """Every learning parameter (digest §0); ``crawl learn source --set key=value`` sets them."""

    min_pts: int = 4
    """DBSCAN's minPts (the point itself counts); kNN uses k = min_pts − 1 neighbours."""
    k: int = 3
    """K of the K-dist histogram: the K-th nearest *other* page (A2)."""
    min_df: int = 4
    """θ: an Xpath is a feature when at least this many pages of D have it."""
    bin_factor: float = 0.0
    """w in NumBins = |V| / w (A1); 0: 16, 12, 6.0, 4.8 at |D| = 100, 200, 500, 1,000, log-linear between."""
    eps: float = 0.0
    """DBSCAN's eps; 0: estimated from the K-dist histogram (§2.7)."""
    body_only: bool = False
    """Only the leaves under ``<body>`` are features (A5); off: every leaf element, as [C]."""
    classes: bool = True
    """Each element of an Xpath is named by its tag and first class token (``div.entry-text``), not its
    tag alone (ours; off: the paper's tag paths). Sites whose users pick among layouts that differ in
    their outer elements cluster by layout on tag paths, page types mixed; the classes of the content
    blocks name the page type (the lab's microblog: purity 0.48 → 0.95, see bench/RESULTS.md)."""
    sampler: str = "source"
    """``source``: one random unseen link per Apath and page (§2.5); ``bfs``: every link (the ablation)."""
    seed: int = 0
    """The sampler's random seed."""
    redirects_as_final: bool = False
    """A link whose URL answered with a redirect leads, in the navigation table, to the cluster of the
    page the redirect ends on (the digest's §2.4 mapping); off (ours): to O, whose score is 0. A
    redirect is a download that holds no page, and the page it ends on is linked directly too (an
    old URL scheme, a short link); the digest's mapping ranked such links as their target, and on
    the lab's forum 225 of 5,000 downloads of a crawl for UCC were old-scheme redirects."""

    def __post_init__(self) -> None:
        checks = {"min_pts": self.min_pts >= 2, "k": self.k >= 1, "min_df": self.min_df >= 1,
                  "bin_factor": self.bin_factor >= 0, "eps": self.eps >= 0,
                  "sampler": self.sampler in ("source", "bfs")}
        self.require(checks)


@dataclass(frozen=True)
class EpsChoice:
    """eps as used, the histogram estimate, its bins and w, and whether the estimate fell back to 0.10."""

    eps: float
    estimated: float
    bins: int
    w: float
    fallback: bool


@dataclass(frozen=True)
class ClusterSummary:
    """One cluster of D (label −1: the outliers, O): size, DSim, sample URLs, tag-path signature."""

    label: int
    size: int
    dsim: float
    samples: tuple[str, ...]
    signature: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class Model:
    """A trained SOUrCe site model (module docstring)."""

    params: Params
    site: str
    """The registrable domain the sample was taken in (``blog.test``): link groups keep its hosts."""
    pages: tuple[str, ...]
    """D: the final URL of each training page, in fetch order."""
    redirects: Mapping[str, str]
    """Requested URL → final URL, for the training fetches that were redirected."""
    labels: IntArray
    """The DBSCAN label of each page of D (−1: outlier)."""
    vocabulary: Vocabulary
    matrix: FloatArray
    eps: EpsChoice
    table: NavigationTable
    clusters: tuple[ClusterSummary, ...]
    warnings: tuple[str, ...] = ()

    @property
    def n_clusters(self) -> int:
        return self.table.n_clusters

    @cached_property
    def dsim(self) -> FloatArray:
        """DSim per real cluster, in label order (O has none)."""
        values = {c.label: c.dsim for c in self.clusters}
        return np.array([values.get(label, 0.0) for label in range(self.n_clusters)])

    @cached_property
    def _knn(self) -> KnnClassifier:
        return KnnClassifier(self.matrix, self.labels, k=self.params.min_pts - 1)

    @cached_property
    def _label_of_url(self) -> dict[str, int]:
        found = {url: int(label) for url, label in zip(self.pages, self.labels)}
        return found | {url: found[final] for url, final in self.redirects.items() if final in found}

    def classify(self, root: _Element) -> int:
        """The cluster of a parsed page: kNN over D (§2.9), −1 for an outlier."""
        return self._knn.classify(self.vocabulary.vector(xpath_bag(root, self.params.body_only, self.params.classes)))

    def label_of(self, url: str, *, outliers: bool = True) -> int | None:
        """The cluster of the page of D at ``url`` (requested or final), None if it is not in D.

        Without ``outliers``, an outlier page is classified by kNN over the clustered pages only
        (A27: a target example must name a cluster)."""
        label = self._label_of_url.get(url)
        if label is None or label != OUTLIER or outliers:
            return label
        index = self.pages.index(self.redirects.get(url, url))
        clustered = self.labels != OUTLIER
        if not clustered.any():
            return None
        knn = KnnClassifier(self.matrix[clustered], self.labels[clustered], k=self.params.min_pts - 1)
        return knn.classify(self.matrix[index])

    # -- files --------------------------------------------------------------------------------

    def to_data(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "params": self.params.to_data(),
            "site": self.site,
            "pages": [{"url": url, "label": int(label)} for url, label in zip(self.pages, self.labels)],
            "redirects": dict(sorted(self.redirects.items())),
            "vocabulary": self.vocabulary.to_data(),
            "eps": {k: rounded(v) for k, v in dataclasses.asdict(self.eps).items()},
            "table": self.table.to_data(),
            "clusters": [{**dataclasses.asdict(c), "dsim": rounded(c.dsim)} for c in self.clusters],
            "warnings": list(self.warnings),
        }

    def save(self, folder: str | Path) -> None:
        """Write ``model.json``, ``matrix.npy``, ``report.md`` and ``graph.svg`` into ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "model.json").write_bytes(orjson.dumps(self.to_data(), option=orjson.OPT_INDENT_2 |
                                                         orjson.OPT_SORT_KEYS) + b"\n")
        with (folder / "matrix.npy").open("wb") as out:
            np.save(out, self.matrix, allow_pickle=False)
        (folder / "report.md").write_text(report.markdown(self), encoding="utf-8")
        (folder / "graph.svg").write_text(report.svg(self), encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path) -> Model:
        """The model in ``folder`` (or whose ``model.json`` is named); ValueError when it is not one."""
        folder = Path(folder)
        if folder.name == "model.json":
            folder = folder.parent
        data = orjson.loads((folder / "model.json").read_bytes())
        if data.get("format") != FORMAT:
            raise ValueError(f"{folder / 'model.json'} is not a SOUrCe model (format {data.get('format')!r})")
        matrix = np.load(folder / "matrix.npy", allow_pickle=False)
        vocabulary = Vocabulary.from_data(data["vocabulary"])
        if matrix.shape != (len(data["pages"]), len(vocabulary)):
            raise ValueError(f"{folder / 'matrix.npy'} has shape {matrix.shape}, the model needs "
                             f"{(len(data['pages']), len(vocabulary))}")
        return cls(
            params=Params.from_data(data["params"]), site=data["site"],
            pages=tuple(page["url"] for page in data["pages"]), redirects=dict(data["redirects"]),
            labels=np.array([page["label"] for page in data["pages"]], dtype=np.int64), vocabulary=vocabulary,
            matrix=matrix, eps=EpsChoice(**data["eps"]), table=NavigationTable.from_data(data["table"]),
            clusters=tuple(ClusterSummary(c["label"], c["size"], c["dsim"], tuple(c["samples"]),
                                          tuple(c["signature"])) for c in data["clusters"]),
            warnings=tuple(data["warnings"]),
        )
