"""The host quality model ``crawl learn quality`` learns and a crawl loads: a host's pages → its vector → a score.

Part of the host quality filter (``frontier/quality.py`` holds the crawl-time filter, the page and
host records and the feature names; this module the learnt model, with numpy, which a crawl without
a model never imports). Pure: files are read and written only by :meth:`Model.load` and :meth:`Model.save`.

* :meth:`Model.add_page` adds one page's :class:`~frontier.quality.PageText` to a
  :class:`~frontier.quality.HostSample`, the sums of a host's first ``n`` pages' features, its term
  counts over the vocabulary and its links per other host;
* :meth:`Model.vector`: the host vector, :data:`~frontier.quality.CONTENT_FEATURES` (ratios of the
  sums: a mean per page, or per word for the word-level ones), :data:`~frontier.quality.LINK_FEATURES`
  (links per page, the share to other hosts, how many other hosts and how often each, and the share
  of links to the host's own IP over the share chance would give it: the addresses are the crawl's
  at scoring time, a linked host not resolved yet counts in neither part of the share) then BM25
  weights of the virtual document, ``IDF·(k1+1)·tf/(K + tf)``, ``K = k1·((1−b) + b·dl/avdl)``,
  ``IDF = log((N − n + 0.5)/(n + 0.5))`` with **k1 = 1.2, b = 0.75** (the report gives none; these
  are Robertson's usual values), N, n and avdl from the training hosts;
* :meth:`Model.score`: the classifier, a standardised ridge logistic regression or a random forest
  evaluated from its node arrays with numpy (:class:`FlatForest`; no pickle is loaded and
  scikit-learn is not imported by a crawl).

A model folder holds ``model.json`` (vocabulary, IDF, popular words, trigram table, scaler,
classifier) and, for a forest, ``forest.npz``; ``report.md`` is for people.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from frontier.quality import (
    FEATURES,
    LINKED_HOSTS,
    MODEL_FILE,
    TRIGRAM_WORDS,
    HostSample,
    IpOf,
    PageText,
    ratio,
)

K1 = 1.2
B = 0.75
VERSION = 3  # 2: the link features; 3: the same-IP share as a lift over chance
FOREST_FILE = "forest.npz"


@dataclass
class Model:
    """What ``crawl learn quality`` learnt: the vocabulary and corpus statistics, and the classifier."""

    pages: int  # n: pages per host the model was trained on, and the default the crawl samples
    read: int  # pages read of a host's first n (reads_page)
    vocabulary: list[str]
    idf: list[float]
    avdl: float  # mean words of a training host's virtual document
    popular: list[str]
    trigrams: dict[str, float]  # "a b c" → log P
    trigram_floor: float  # log P of a trigram the table lacks
    mean: list[float]  # standardisation of the whole vector (the logistic regression's input)
    scale: list[float]
    classifier: dict[str, Any]  # {"kind": "logistic", "coef": [...], "intercept": x} or {"kind": "forest"}
    forest: dict[str, np.ndarray] | None = None  # the forest's node arrays (forest.npz)

    def __post_init__(self) -> None:
        self._index = {word.encode("latin-1"): i for i, word in enumerate(self.vocabulary)}
        self._popular = frozenset(word.encode("latin-1") for word in self.popular)
        self._trigrams = {tuple(k.encode("latin-1").split(b" ")): v for k, v in self.trigrams.items()}
        self._idf = np.asarray(self.idf, dtype=np.float64)
        self._forest = FlatForest(self.forest) if self.forest is not None else None

    @property
    def feature_names(self) -> list[str]:
        return [*FEATURES, *(f"bm25:{word}" for word in self.vocabulary)]

    # -- a page, a host ------------------------------------------------------------------------

    def add_page(self, sample: HostSample, text: PageText) -> None:
        """Add a page to a host's sums. Every per-word step is a C-level pass (set, map, filter,
        Counter.update over an iterator): this runs on the crawl's hot path."""
        words = text.words
        popular = self._popular
        sample.pages += 1
        sample.words += len(words)
        sample.letters += text.text_bytes - max(0, len(words) - 1)  # the text is the words joined by single spaces
        sample.title_words += text.title_words
        sample.anchor_words += text.anchor_words
        sample.text_bytes += text.text_bytes
        sample.html_bytes += text.html_bytes
        sample.compressed_bytes += text.compressed_bytes
        hits = list(filter(popular.__contains__, words))
        sample.popular_words += len(hits)
        sample.popular_found += len(set(hits))
        sample.terms.update(filter(self._index.__contains__, words))
        head = words[:TRIGRAM_WORDS]
        found = [p for p in map(self._trigrams.get, zip(head, head[1:], head[2:])) if p is not None]
        n = max(0, len(head) - 2)
        sample.trigram_logp += sum(found) + (n - len(found)) * self.trigram_floor
        sample.trigrams += n
        sample.trigrams_seen += len(found)
        own = sample.host
        # scheme://authority: a canonical URL always has a path (frontier/urls.py), so its first "/" after
        # the scheme ends the authority; frontier.urls.split inlined, as this runs once per link
        external = [h for h in [url[: url.find("/", 8)] for url in text.links] if h != own]
        sample.links += len(text.links)
        sample.external_links += len(external)
        linked = sample.linked
        if len(linked) + len(external) <= LINKED_HOSTS:
            linked.update(external)
            return
        for h in external:  # nearly full: new hosts while there is room, then links to the hosts it holds only
            if h in linked or len(linked) < LINKED_HOSTS:
                linked[h] += 1

    def content(self, sample: HostSample, hosts_per_ip: int) -> list[float]:
        """The host's :data:`CONTENT_FEATURES`."""
        s = sample
        return [
            ratio(s.words, s.pages),
            ratio(s.title_words, s.pages),
            ratio(s.letters, s.words),
            ratio(s.anchor_words, s.words),
            ratio(s.text_bytes, s.html_bytes),
            ratio(s.text_bytes, s.compressed_bytes),
            ratio(s.popular_words, s.words),
            ratio(s.popular_found, s.pages * max(1, len(self.popular))),
            -ratio(s.trigram_logp, s.trigrams),
            ratio(s.trigrams_seen, s.trigrams),
            float(hosts_per_ip),
        ]

    @staticmethod
    def link_features(sample: HostSample, ip: str | None, ip_of: IpOf, hosts_per_ip: int,
                      known_hosts: int) -> list[float]:
        """The host's :data:`LINK_FEATURES`; ``ip`` is its address, ``ip_of`` the crawl's (None: unknown),
        ``known_hosts`` how many hosts the crawl knows."""
        s = sample
        known = same = 0
        if ip is not None:
            for other, links in s.linked.items():
                other_ip = ip_of(other)
                if other_ip is not None:
                    known += links
                    if other_ip == ip:
                        same += links
        chance = ratio(hosts_per_ip - 1, known_hosts - 1)
        return [
            ratio(s.links, s.pages),
            ratio(s.external_links, s.links),
            ratio(len(s.linked), s.pages),
            ratio(sum(s.linked.values()), len(s.linked)),
            ratio(ratio(same, known), chance),
        ]

    def bm25(self, sample: HostSample) -> np.ndarray:
        """The BM25 weights of the host's virtual document over the vocabulary."""
        weights = np.zeros(len(self.vocabulary))
        terms = sample.terms
        if not terms:
            return weights
        index = self._index
        at = np.fromiter((index[w] for w in terms), dtype=np.int64, count=len(terms))
        tf = np.fromiter(terms.values(), dtype=np.float64, count=len(terms))
        k = K1 * ((1 - B) + B * ratio(sample.words, self.avdl))
        weights[at] = self._idf[at] * (K1 + 1) * tf / (k + tf)
        return weights

    def vector(self, sample: HostSample, hosts_per_ip: int, ip: str | None = None,
               ip_of: IpOf = lambda host: None, known_hosts: int = 0) -> np.ndarray:
        """The host's :data:`FEATURES` then its BM25 weights: what the classifier reads."""
        features = [*self.content(sample, hosts_per_ip),
                    *self.link_features(sample, ip, ip_of, hosts_per_ip, known_hosts)]
        return np.concatenate((np.asarray(features), self.bm25(sample)))

    # -- the classifier --------------------------------------------------------------------------

    def score(self, vector: np.ndarray) -> float:
        """The probability that the host is spam (low quality), in [0, 1]."""
        c = self.classifier
        if c["kind"] == "logistic":
            z = (vector - np.asarray(self.mean)) / np.asarray(self.scale)
            return 1.0 / (1.0 + math.exp(-(float(np.dot(c["coef"], z)) + c["intercept"])))
        assert self._forest is not None
        return self._forest.probability(vector)

    # -- files -----------------------------------------------------------------------------------

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        data = {name: getattr(self, name) for name in (
            "pages", "read", "vocabulary", "idf", "avdl", "popular", "trigrams", "trigram_floor", "mean", "scale",
            "classifier")}
        data = {"version": VERSION, "k1": K1, "b": B, "features": list(FEATURES), **data}
        (folder / MODEL_FILE).write_bytes(orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY))
        if self.forest is not None:
            np.savez_compressed(folder / FOREST_FILE, **self.forest)  # type: ignore[arg-type]  # numpy stubs read the names as allow_pickle

    @classmethod
    def load(cls, folder: Path) -> Model:
        """The model of ``folder``; ValueError naming what is wrong with it."""
        try:
            data = orjson.loads((folder / MODEL_FILE).read_bytes())
        except (OSError, orjson.JSONDecodeError) as e:
            raise ValueError(f"{folder} holds no quality model ({MODEL_FILE}): {e}") from None
        if data.get("version") != VERSION or data.get("features") != list(FEATURES):
            raise ValueError(f"{folder}/{MODEL_FILE} is not a quality model of this version (crawl learn quality)")
        forest = None
        if data["classifier"]["kind"] == "forest":
            with np.load(folder / FOREST_FILE) as arrays:
                forest = {name: arrays[name] for name in arrays.files}
        fields = ("pages", "vocabulary", "idf", "avdl", "popular", "trigrams", "trigram_floor", "mean", "scale",
                  "classifier")
        # a model learnt before --read read every page of the first n
        return cls(**{name: data[name] for name in fields}, read=data.get("read", data["pages"]), forest=forest)


def forest_arrays(trees: Iterable[Any]) -> dict[str, np.ndarray]:
    """A fitted forest's trees (scikit-learn ``tree_`` objects) as padded node arrays, one row per tree."""
    trees = list(trees)
    width = max(t.node_count for t in trees)
    left = np.full((len(trees), width), -1, dtype=np.int32)
    right = np.full((len(trees), width), -1, dtype=np.int32)
    feature = np.zeros((len(trees), width), dtype=np.int32)
    threshold = np.zeros((len(trees), width))
    spam = np.zeros((len(trees), width))
    for i, t in enumerate(trees):
        n = t.node_count
        left[i, :n], right[i, :n] = t.children_left, t.children_right
        feature[i, :n] = np.maximum(t.feature, 0)
        threshold[i, :n] = t.threshold
        value = t.value[:, 0, :]
        spam[i, :n] = value[:, 1] / value.sum(axis=1)
    depth = max(t.max_depth for t in trees)
    return {"left": left, "right": right, "feature": feature, "threshold": threshold, "spam": spam,
            "depth": np.asarray(depth)}


class FlatForest:
    """A forest's node arrays flattened for scoring: every node's test is evaluated in one vectorised
    comparison, which gives each node its next node; then the trees are walked together, one
    gather per level (a leaf's next node is itself). About 5x cheaper than testing only the nodes
    on the paths level by level, for trees of a few dozen nodes."""

    def __init__(self, forest: dict[str, np.ndarray]) -> None:
        left, right = forest["left"], forest["right"]
        trees, width = left.shape
        base = (np.arange(trees, dtype=np.int64) * width)[:, None]
        itself = base + np.arange(width)[None, :]
        leaf = left < 0
        self.left = np.where(leaf, itself, base + left).ravel()
        self.right = np.where(leaf, itself, base + right).ravel()
        self.feature = forest["feature"].ravel()
        self.threshold = forest["threshold"].ravel()
        self.spam = forest["spam"].ravel()
        self.roots = base.ravel()
        self.depth = int(forest["depth"])

    def probability(self, vector: np.ndarray) -> float:
        """The mean over the trees of the spam share of the leaf ``vector`` reaches."""
        following = np.where(vector[self.feature] <= self.threshold, self.left, self.right)
        node = self.roots
        for _ in range(self.depth):
            node = following[node]
        return float(self.spam[node].mean())


def forest_probability(forest: dict[str, np.ndarray], vector: np.ndarray) -> float:
    """The forest's mean leaf probability of spam for one vector (see :class:`FlatForest`)."""
    return FlatForest(forest).probability(vector)
