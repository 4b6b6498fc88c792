"""The crawl-time host quality filter, pure: a host's first pages → a feature vector → a score → stop or slow it.

The spec is the NADINE report's web-quality paper (``shared/papers/bubing-nadine.md`` §1.B): a
small content-only feature set computed on a sample of a new site's pages plus a BM25 vector of
the site's *virtual document* (the union of its pages) over a vocabulary learnt from a crawl,
plus the number of hosts its IP serves; and, ours, link features of the same pages (the
report's wider feature set has link-based ones: link farms link their own machine's hosts). The
engine reads each page (``engine/quality_text.py``: HTML → :class:`PageText`, with the links its
parser already found); everything after that is here, so ``crawl learn quality``
(``engine/learn_quality.py``, ``frontier/quality_train.py``) and the crawl build a host's vector
with the same code.

* :meth:`Model.add_page` adds one page's :class:`PageText` to a :class:`HostSample`, the sums of
  a host's first ``n`` pages' features, its term counts over the vocabulary and its links per
  other host;
* :meth:`Model.vector`: the host vector, :data:`CONTENT_FEATURES` (ratios of the sums: a mean
  per page, or per word for the word-level ones), :data:`LINK_FEATURES` (links per page, the
  share to other hosts, how many other hosts and how often each, and the share of links to the
  host's own IP over the share chance would give it: the addresses are the crawl's at scoring
  time, a linked host not resolved yet counts in neither part of the share) then BM25 weights of the virtual document,
  ``IDF·(k1+1)·tf/(K + tf)``, ``K = k1·((1−b) + b·dl/avdl)``, ``IDF = log((N − n + 0.5)/(n + 0.5))``
  with **k1 = 1.2, b = 0.75** (the report gives none; these are Robertson's usual values), N, n
  and avdl from the training hosts;
* :meth:`Model.score`: the classifier, a standardised ridge logistic regression or a random
  forest evaluated from its node arrays with numpy (:class:`FlatForest`; no pickle is loaded
  and scikit-learn is not imported by a crawl);
* :class:`QualityFilter`: per host, pages until ``n``, then one score and a verdict; the
  accumulator is freed once the host is scored, so memory per host in progress is bounded by
  the vocabulary (its term counts) and :data:`LINKED_HOSTS`, and a judged host costs one set entry.

Of a host's first ``n`` pages the filter reads ``read`` (:func:`reads_page`: evenly spread, the
``n``-th always; ``crawl learn quality --read``, default 20), so a host costs at most ``read``
page readings whatever ``n`` is. The features are means over pages (and counts over the pages
read, learnt the same way), so a spread sample estimates them; reading every page of the first
100 cost a crawl whose hosts are all that small 17-22 % of its pages per CPU-second
(``bench/RESULTS.md``, issue 16), reading 20 of them is inside the 5 % the issue allows.

A model folder holds ``model.json`` (vocabulary, IDF, popular words, trigram table, scaler,
classifier) and, for a forest, ``forest.npz``; ``report.md`` is for people.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import orjson

K1 = 1.2
B = 0.75
TRIGRAM_WORDS = 64  # the n-gram statistics read a page's first words only: their cost per page is bounded
LINKED_HOSTS = 1024  # distinct hosts a sample counts links to: memory per host in progress stays bounded
ACTIONS = ("stop", "deprioritize")
DEPRIORITIZED_DELAY = 60.0  # seconds at least between two fetches of a deprioritized host
MODEL_FILE = "model.json"
VERSION = 3  # 2: the link features; 3: the same-IP share as a lift over chance
FOREST_FILE = "forest.npz"

CONTENT_FEATURES = (
    "words_per_page",
    "title_words_per_page",
    "mean_word_length",
    "anchor_text_fraction",
    "visible_text_fraction",
    "compression_ratio",
    "popular_word_fraction",  # the page's words that are popular words
    "popular_words_found",  # the popular words that occur on the page (mean over pages)
    "trigram_likelihood",  # −mean log P of the page's word trigrams under the training corpus
    "trigram_seen_fraction",  # the page's trigrams the training corpus holds
    "hosts_per_ip",
)
LINK_FEATURES = (
    "links_per_page",
    "external_link_fraction",  # the links that go to other hosts
    "linked_hosts_per_page",  # distinct other hosts linked, per page
    "links_per_linked_host",  # how often the same other hosts are linked again (a farm links its few mates)
    # of the links to other hosts whose address the crawl knows, the share to the host's IP, over the share
    # the IP's other hosts have among all the hosts the crawl knows: shared hosting links its neighbours
    # about as often as chance has it, a link farm its mates many times more often
    "same_ip_link_lift",
)
FEATURES = (*CONTENT_FEATURES, *LINK_FEATURES)

IpOf = Callable[[str], "str | None"]
"""scheme://authority → the IP the crawl resolved it to, None if not (yet) known"""


def reads_page(seen: int, pages: int, read: int) -> bool:
    """Whether the ``seen``-th page of a host (from 1) is one of the ``read`` pages read of its first
    ``pages``: evenly spread, the ``pages``-th always one of them, every page when ``read >= pages``."""
    return seen * read // pages > (seen - 1) * read // pages


def encode_word(word: bytes) -> str:
    """A token (bytes, UTF-8 as served) as model.json keeps it: latin-1 maps each byte to one character."""
    return word.decode("latin-1")


@dataclass(slots=True)
class PageText:
    """What the engine reads off one HTML page (``engine/quality_text.py``)."""

    html_bytes: int  # the HTML looked at
    text_bytes: int  # its visible text: its words joined by single spaces
    compressed_bytes: int  # the visible text compressed (ISA-L zlib, level 1: deflate as zlib -1 at 2x its speed)
    title_words: int
    anchor_words: int  # words inside <a> elements
    words: list[bytes]  # the visible words, lower-case, in order
    links: Sequence[str] = ()  # the page's links as the engine's parser found them: canonical, each once


@dataclass(slots=True)
class HostSample:
    """The running sums of a host's pages: each feature's, the virtual document's vocabulary term counts,
    and the links to other hosts per linked host."""

    host: str = ""  # scheme://authority: its links to other hosts are the external ones
    pages: int = 0
    words: int = 0
    letters: int = 0
    title_words: int = 0
    anchor_words: int = 0
    text_bytes: int = 0
    html_bytes: int = 0
    compressed_bytes: int = 0
    popular_words: int = 0  # words that are popular words
    popular_found: int = 0  # distinct popular words, summed over the pages
    trigram_logp: float = 0.0
    trigrams: int = 0
    trigrams_seen: int = 0
    terms: Counter[bytes] = field(default_factory=Counter)  # vocabulary words only: bounded by the vocabulary
    links: int = 0
    external_links: int = 0
    linked: Counter[str] = field(default_factory=Counter)  # other host → links to it; at most LINKED_HOSTS hosts


def _sample_state(sample: HostSample) -> dict[str, Any]:
    """A sample as JSON can hold it (its terms are bytes: latin-1 keeps each byte as one character)."""
    state = {f.name: getattr(sample, f.name) for f in fields(sample)}  # not asdict: it rebuilds a Counter from pairs
    state["terms"] = {encode_word(w): n for w, n in sample.terms.items()}
    state["linked"] = dict(sample.linked)
    return state


def _sample_from(state: dict[str, Any]) -> HostSample:
    sample = HostSample(**state)
    sample.terms = Counter({w.encode("latin-1"): n for w, n in state["terms"].items()})
    sample.linked = Counter(state["linked"])
    return sample


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


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
            _ratio(s.words, s.pages),
            _ratio(s.title_words, s.pages),
            _ratio(s.letters, s.words),
            _ratio(s.anchor_words, s.words),
            _ratio(s.text_bytes, s.html_bytes),
            _ratio(s.text_bytes, s.compressed_bytes),
            _ratio(s.popular_words, s.words),
            _ratio(s.popular_found, s.pages * max(1, len(self.popular))),
            -_ratio(s.trigram_logp, s.trigrams),
            _ratio(s.trigrams_seen, s.trigrams),
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
        chance = _ratio(hosts_per_ip - 1, known_hosts - 1)
        return [
            _ratio(s.links, s.pages),
            _ratio(s.external_links, s.links),
            _ratio(len(s.linked), s.pages),
            _ratio(sum(s.linked.values()), len(s.linked)),
            _ratio(_ratio(same, known), chance),
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
        k = K1 * ((1 - B) + B * _ratio(sample.words, self.avdl))
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


# -- the crawl-time filter ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verdict:
    """A host scored once its ``pages`` pages were in: ``action`` is "stop", "deprioritize" or "keep"."""

    host: str  # scheme://authority
    score: float
    action: str
    pages: int
    hosts_per_ip: int


class QualityFilter:
    """Per host: page features until ``pages`` pages, then a score and a verdict (see the module docstring).

    The frontier calls :meth:`wants` before it gives a page to :meth:`add`, which counts it and
    reads its text (``read()``) if it is one of the ``read`` pages read (:func:`reads_page`); the
    verdict's action is "keep" below ``threshold``, else ``action``.
    """

    def __init__(self, model: Model, *, threshold: float, pages: int, read: int, action: str) -> None:
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
        self.model = model
        self.threshold = threshold
        self.pages = pages
        self.read = read
        self.action = action
        self.seen: Counter[str] = Counter()  # pages counted, per host in progress
        # with several agents, the hosts every agent took onto an IP (engine/ip_table.py; stopped ones too),
        # instead of this workbench's hosts and the hosts stopped here
        self.hosts_on: Callable[[str], int] | None = None
        self.samples: dict[str, HostSample] = {}
        self.judged: set[str] = set()
        self.stopped: set[str] = set()  # hosts whose later links are dropped
        self.deprioritized: set[str] = set()  # hosts fetched slowly
        self.stopped_on_ip: Counter[str] = Counter()  # a stopped host leaves its IP's entry but still counts
        self.counts: Counter[str] = Counter()

    def wants(self, host: str) -> bool:
        """The host is not scored yet: its next page is read."""
        return host not in self.judged

    def add(self, host: str, read: Callable[[], PageText], ip: str | None, hosts_on_ip: int,
            ip_of: IpOf = lambda host: None, known_hosts: int = 0) -> Verdict | None:
        """Count a page of ``host`` (at ``ip``, whose workbench entry holds ``hosts_on_ip`` hosts) and
        read it if it is one of those read; the verdict once it is the host's ``pages``-th page, with the
        addresses of the hosts it links to as ``ip_of`` knows them then, among the ``known_hosts`` hosts
        the crawl knows."""
        seen = self.seen[host] = self.seen[host] + 1
        if not reads_page(seen, self.pages, self.read):
            return None
        sample = self.samples.get(host)
        if sample is None:
            sample = self.samples[host] = HostSample(host)
        self.model.add_page(sample, read())
        self.counts["pages_read"] += 1
        if seen < self.pages:
            return None
        del self.samples[host], self.seen[host]
        self.judged.add(host)
        if ip is None:
            hosts_per_ip = hosts_on_ip
        elif self.hosts_on is not None:
            hosts_per_ip = self.hosts_on(ip)
        else:
            hosts_per_ip = hosts_on_ip + self.stopped_on_ip[ip]
        score = self.model.score(self.model.vector(sample, hosts_per_ip, ip, ip_of, known_hosts))
        action = self.action if score >= self.threshold else "keep"
        self.counts["hosts_scored"] += 1
        if action == "stop":
            self.stopped.add(host)
            if ip is not None:
                self.stopped_on_ip[ip] += 1
            self.counts["hosts_stopped"] += 1
        elif action == "deprioritize":
            self.deprioritized.add(host)
            self.counts["hosts_deprioritized"] += 1
        return Verdict(host, score, action, sample.pages, hosts_per_ip)

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps (``Frontier.checkpoint``, JSON): the pages counted and the samples of hosts
        in progress, the hosts judged, stopped and deprioritized, the stopped hosts per IP, the counts."""
        return {
            "seen": dict(self.seen),
            "samples": {host: _sample_state(sample) for host, sample in self.samples.items()},
            "judged": sorted(self.judged),
            "stopped": sorted(self.stopped),
            "deprioritized": sorted(self.deprioritized),
            "stopped_on_ip": dict(self.stopped_on_ip),
            "counts": dict(self.counts),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Take back a :meth:`state`: a host half-sampled when the checkpoint was taken is scored on its
        first ``pages`` pages still, the pages before the checkpoint included."""
        self.samples = {host: _sample_from(sample) for host, sample in state["samples"].items()}
        # a checkpoint taken before pages were counted had read every page it counted
        self.seen = Counter(state.get("seen") or {host: sample.pages for host, sample in self.samples.items()})
        self.judged = set(state["judged"])
        self.stopped = set(state["stopped"])
        self.deprioritized = set(state["deprioritized"])
        self.stopped_on_ip = Counter(state["stopped_on_ip"])
        self.counts = Counter(state["counts"])

    def statistics(self) -> dict[str, int]:
        """Counts for stats.json: pages read, hosts scored, stopped, deprioritized, and hosts in progress."""
        return {"pages_read": 0, "hosts_scored": 0, "hosts_stopped": 0, "hosts_deprioritized": 0,
                **self.counts, "hosts_sampling": len(self.seen)}
