"""The metrics of SOUrCe's evaluation (digest §4.4): valid ratio, harvest rate, recall and F of a
crawl; purity and micro-F of a clustering against the page types.

Crawling-for-UCC is judged by VR = #(crawled UCC) / #(all crawled) and crawling-for-target by
HR = #(crawled target) / #(all crawled); recall divides the same count by the number of such
pages in the corpus, and F is the harmonic mean of the ratio and the recall. The paper's
"Average" rows (Tables 3–4) average each column over the sites, F included: an average F is
the mean of the per-site F, not the F of the mean ratio and recall.

Our choice: an empty denominator (nothing crawled, no relevant page in the corpus) gives 0,
and so does F when both of its inputs are 0, so that a benchmark over a failed or empty
crawl reports zeros instead of raising.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def _share(part: int, whole: int) -> float:
    if not 0 <= part <= whole:
        raise ValueError(f"a count of {part} out of {whole} is not a share")
    return part / whole if whole else 0.0


def valid_ratio(crawled_ucc: int, crawled: int) -> float:
    """VR: the share of crawled pages that are user-created content."""
    return _share(crawled_ucc, crawled)


def harvest_rate(crawled_target: int, crawled: int) -> float:
    """HR: the share of crawled pages that are of the target type."""
    return _share(crawled_target, crawled)


def recall(found: int, total: int) -> float:
    """The share of the corpus's relevant pages (UCC or target) that the crawl fetched."""
    return _share(found, total)


def f_measure(ratio: float, recall: float) -> float:
    """F = 2·ratio·recall / (ratio + recall), the ratio being VR or HR."""
    if ratio < 0 or recall < 0:
        raise ValueError(f"F of a negative ratio ({ratio}) or recall ({recall})")
    return 2 * ratio * recall / (ratio + recall) if ratio + recall else 0.0


def clustering_quality(clusters: Sequence[int], types: Sequence[str], min_pts: int = 4) -> dict[str, float]:
    """Purity and micro-F of ``clusters`` (one label per page, −1 an outlier) against the pages'
    ``types`` (§4.4, ST-01): pages of a type with fewer than ``min_pts`` pages (annotation
    outliers) are left out; each outlier page is a singleton cluster of its own (A20). Micro-F
    weighs each type's best F over the clusters by the type's size (A21)."""
    sizes = Counter(types)
    kept = [(c if c >= 0 else -1 - i, t) for i, (c, t) in enumerate(zip(clusters, types)) if sizes[t] >= min_pts]
    if not kept:
        return {"purity": 0.0, "micro_f": 0.0}
    pairs = Counter(kept)
    cluster_size = Counter(c for c, _ in kept)
    type_size = Counter(t for _, t in kept)
    best_per_cluster: dict[int, int] = {}
    best_f: dict[str, float] = dict.fromkeys(type_size, 0.0)
    for (c, t), n in pairs.items():
        best_per_cluster[c] = max(best_per_cluster.get(c, 0), n)
        precision, found = n / cluster_size[c], n / type_size[t]
        best_f[t] = max(best_f[t], 2 * precision * found / (precision + found))
    total = len(kept)
    return {"purity": sum(best_per_cluster.values()) / total,
            "micro_f": sum(type_size[t] / total * f for t, f in best_f.items())}
