"""The crawl-time host quality filter, pure: a host's first pages → a feature vector → a score → stop or slow it.

The spec is the NADINE report's web-quality paper (``shared/papers/bubing-nadine.md`` §1.B): a
small content-only feature set computed on a sample of a new site's pages plus a BM25 vector of
the site's *virtual document* (the union of its pages) over a vocabulary learnt from a crawl,
plus the number of hosts its IP serves; and, ours, link features of the same pages (the
report's wider feature set has link-based ones: link farms link their own machine's hosts). The
engine reads each page (``engine/quality_text.py``: HTML → :class:`PageText`, with the links its
parser already found); everything after that is here and in ``frontier/quality_model.py`` (the
learnt model: a host's sums → its vector → a score, with numpy), so ``crawl learn quality``
(``engine/learn_quality.py``, ``frontier/quality_train.py``) and the crawl build a host's vector
with the same code. This module holds what every crawl imports, numpy not among it (its
configuration names :data:`ACTIONS` and :data:`MODEL_FILE`): the feature names, the page and
host records, and :class:`QualityFilter`: per host, pages until ``n``, then one score and a
verdict; the accumulator is freed once the host is scored, so memory per host in progress is
bounded by the vocabulary (its term counts) and :data:`LINKED_HOSTS`, and a judged host costs one
set entry.

Of a host's first ``n`` pages the filter reads ``read`` (:func:`reads_page`: evenly spread, the
``n``-th always; ``crawl learn quality --read``, default 20), so a host costs at most ``read``
page readings whatever ``n`` is. The features are means over pages (and counts over the pages
read, learnt the same way), so a spread sample estimates them; reading every page of the first
100 cost a crawl whose hosts are all that small 17-22 % of its pages per CPU-second
(``bench/RESULTS.md``, issue 16), reading 20 of them is inside the 5 % the issue allows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

TRIGRAM_WORDS = 64  # the n-gram statistics read a page's first words only: their cost per page is bounded
LINKED_HOSTS = 1024  # distinct hosts a sample counts links to: memory per host in progress stays bounded
ACTIONS = ("stop", "deprioritize")
DEPRIORITIZED_DELAY = 60.0  # seconds at least between two fetches of a deprioritized host
MODEL_FILE = "model.json"

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


def ratio(a: float, b: float) -> float:
    """``a / b``, 0 when ``b`` is 0: a feature of a host with nothing to count."""
    return a / b if b else 0.0


# -- the crawl-time filter ------------------------------------------------------------------------


class HostModel(Protocol):
    """What the filter asks of a learnt model: ``frontier/quality_model.py: Model``, which a crawl imports
    (with numpy) only when ``quality.model`` names one."""

    def add_page(self, sample: HostSample, text: PageText) -> None: ...

    def vector(self, sample: HostSample, hosts_per_ip: int, ip: str | None = None,
               ip_of: IpOf = ..., known_hosts: int = 0) -> Any: ...

    def score(self, vector: Any) -> float: ...


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

    def __init__(self, model: HostModel, *, threshold: float, pages: int, read: int, action: str) -> None:
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
