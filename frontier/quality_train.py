"""Labelled hosts' pages → a host quality model (``crawl learn quality``; the crawl-side core is ``frontier/quality.py``).

Pure but for scikit-learn: the engine (``engine/learn_quality.py``) reads a finished crawl's
WARC files and hands over, per labelled host, the :class:`~frontier.quality.PageText` of the
pages read of its first ``n`` HTML pages (``frontier.quality.reads_page``), its hosts-per-IP count and its label (1 = spam). Training:

1. corpus statistics over the hosts' *virtual documents* (the union of a host's pages):
   the vocabulary is the words found in at least 10% and at most 50% of the virtual documents,
   the 10,000 most frequent of them (the report's band); IDF and the mean document length
   over the same hosts; the 200 most frequent words are the popular words; the word trigrams
   of the pages' first :data:`~frontier.quality.TRIGRAM_WORDS` words seen at least twice (the
   50,000 most frequent) give the trigram table, log P = log(count / all trigrams);
2. each host's vector, built with the crawl's code (:meth:`Model.vector`); the addresses of the
   hosts it links to are the crawl's (every host the crawl reached);
3. two classifiers, scikit-learn's ``RandomForestClassifier(n_estimators=250)`` and a ridge
   (L2) ``LogisticRegression`` on standardised features, compared by the mean AUC of a
   stratified 5-fold cross-validation; the better one (a tie goes to the logistic regression,
   the cheaper to score) is fitted on every host and kept, unless ``classifier`` names one
   (``crawl learn quality --classifier``).
   Both often tie at an AUC of 1.0 on the in-vitro webs, and then which one holds up on an
   unseen web depends on the web (``bench/RESULTS.md``, issue 16): hence the choice.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from frontier.markdown_table import markdown_table
from frontier.quality import CONTENT_FEATURES, LINK_FEATURES, TRIGRAM_WORDS, HostSample, PageText, encode_word
from frontier.quality_model import B, K1, Model, forest_arrays

DF_BAND = (0.10, 0.50)
MAX_VOCABULARY = 10_000
POPULAR_WORDS = 200
MAX_TRIGRAMS = 50_000
TREES = 250
FOLDS = 5
SEED = 0


@dataclass(frozen=True, slots=True)
class LabelledHost:
    host: str
    pages: list[PageText]
    hosts_per_ip: int
    label: int  # 1 spam, 0 good


@dataclass
class Trained:
    """The model, and what its report says: each classifier's cross-validated AUC, the top features."""

    model: Model
    auc: dict[str, float]  # classifier → mean AUC over the folds
    folds: dict[str, list[float]]
    chosen: str
    importances: list[tuple[str, float]]  # the chosen classifier's, largest first
    hosts: int
    spam: int


def corpus_model(hosts: Sequence[LabelledHost], pages: int, read: int) -> Model:
    """Step 1: a model with the corpus statistics and no classifier yet."""
    df: Counter[bytes] = Counter()
    frequency: Counter[bytes] = Counter()
    trigrams: Counter[tuple[bytes, ...]] = Counter()
    lengths = []
    for host in hosts:
        words: Counter[bytes] = Counter()
        for page in host.pages:
            words.update(page.words)
            head = page.words[:TRIGRAM_WORDS]
            trigrams.update(zip(head, head[1:], head[2:]))
        df.update(words.keys())
        frequency.update(words)
        lengths.append(sum(words.values()))
    n = len(hosts)
    low, high = DF_BAND[0] * n, DF_BAND[1] * n
    band = [w for w, d in df.items() if low <= d <= high]
    vocabulary = sorted(band, key=lambda w: (-frequency[w], w))[:MAX_VOCABULARY]
    total = sum(trigrams.values())
    table = {b" ".join(t): math.log(c / total) for t, c in trigrams.most_common(MAX_TRIGRAMS) if c >= 2}
    return Model(
        pages=pages,
        read=read,
        vocabulary=[encode_word(w) for w in vocabulary],
        idf=[math.log((n - df[w] + 0.5) / (df[w] + 0.5)) for w in vocabulary],
        avdl=sum(lengths) / n if n else 0.0,
        popular=[encode_word(w) for w, _ in frequency.most_common(POPULAR_WORDS)],
        trigrams={encode_word(k): v for k, v in table.items()},
        trigram_floor=math.log(0.5 / max(1, total)),
        mean=[], scale=[], classifier={"kind": "none"},
    )


def host_vectors(model: Model, hosts: Sequence[LabelledHost], addresses: Mapping[str, str]) -> np.ndarray:
    """Step 2: one row per host, as the crawl computes it; ``addresses``: scheme://authority → IP."""
    rows = []
    for host in hosts:
        sample = HostSample(host.host)
        for page in host.pages:
            model.add_page(sample, page)
        rows.append(model.vector(sample, host.hosts_per_ip, addresses.get(host.host), addresses.get, len(addresses)))
    return np.vstack(rows)


def train(hosts: Sequence[LabelledHost], pages: int, read: int, addresses: Mapping[str, str],
          classifier: str = "auto") -> Trained:
    """Steps 1–3 (``classifier``: "auto", "forest" or "logistic"); ValueError if the labels leave fewer
    than :data:`FOLDS` hosts of a class."""
    from sklearn.ensemble import RandomForestClassifier  # here: a crawl never imports scikit-learn
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    y = np.asarray([h.label for h in hosts])
    spam = int(y.sum())
    if min(spam, len(y) - spam) < FOLDS:
        raise ValueError(f"{FOLDS}-fold cross-validation needs at least {FOLDS} spam and {FOLDS} good hosts "
                         f"with pages in the crawl; got {spam} spam and {len(y) - spam} good")
    model = corpus_model(hosts, pages, read)
    x = host_vectors(model, hosts, addresses)
    candidates = {
        "logistic": make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=5000)),
        "forest": RandomForestClassifier(n_estimators=TREES, random_state=SEED, n_jobs=1),
    }
    folds = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=SEED)
    scores = {name: [float(s) for s in cross_val_score(c, x, y, cv=folds, scoring="roc_auc")]
              for name, c in candidates.items()}
    auc = {name: float(np.mean(s)) for name, s in scores.items()}
    if classifier == "auto":
        classifier = "forest" if auc["forest"] > auc["logistic"] else "logistic"
    chosen = classifier
    fitted = candidates[chosen].fit(x, y)
    names = model.feature_names
    scaler = candidates["logistic"].steps[0][1] if chosen == "logistic" else StandardScaler().fit(x)
    model.mean, model.scale = [float(v) for v in scaler.mean_], [float(v) for v in scaler.scale_]
    if chosen == "logistic":
        regression = fitted.steps[1][1]
        coef = regression.coef_[0]
        model.classifier = {"kind": "logistic", "coef": [float(c) for c in coef],
                            "intercept": float(regression.intercept_[0])}
        weights = np.abs(coef)
    else:
        model.classifier = {"kind": "forest", "trees": TREES}
        model.forest = forest_arrays(tree.tree_ for tree in fitted.estimators_)
        weights = fitted.feature_importances_
    order = np.argsort(-weights, kind="stable")[:20]
    importances = [(names[i], float(weights[i])) for i in order]
    model.__post_init__()
    return Trained(model, auc, scores, chosen, importances, len(hosts), spam)


def report(trained: Trained, source: str) -> str:
    """report.md: the data, each classifier's cross-validated AUC, the choice, the top features."""
    m = trained.model
    rows = [[name, f"{trained.auc[name]:.4f}", " ".join(f"{s:.3f}" for s in trained.folds[name]),
             "chosen" if name == trained.chosen else ""] for name in ("logistic", "forest")]
    what = "|coefficient| (standardised features)" if trained.chosen == "logistic" else "impurity importance"
    return "\n".join([
        "# Host quality model",
        "",
        f"Trained by `crawl learn quality` on {source}: {trained.hosts} labelled hosts "
        f"({trained.spam} spam), {m.read} pages read of the first {m.pages} HTML pages of each.",
        f"Vocabulary: {len(m.vocabulary)} words (document frequency 10–50% of the hosts' virtual documents, "
        f"at most {MAX_VOCABULARY}); BM25 k1 = {K1}, b = {B}, avdl = {m.avdl:.1f}; "
        f"{len(m.popular)} popular words; {len(m.trigrams)} trigrams.",
        f"Features: {len(CONTENT_FEATURES)} content features, {len(LINK_FEATURES)} link features "
        f"and {len(m.vocabulary)} BM25 weights.",
        "",
        "## Classifiers (stratified 5-fold cross-validation, AUC)",
        "",
        *markdown_table(["classifier", "mean AUC", "folds", ""], rows),
        "logistic: ridge (L2, C = 1) logistic regression on standardised features; "
        f"forest: random forest of {TREES} trees. The better mean AUC is kept (a tie: logistic), "
        "unless `--classifier` names one.",
        "",
        f"## Top features of the chosen classifier ({what})",
        "",
        *markdown_table(["feature", "weight"], [[name, f"{w:.4f}"] for name, w in trained.importances]),
    ])
