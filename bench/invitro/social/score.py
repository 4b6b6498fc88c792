"""A crawl's quality on one lab site, from the in-vitro server's request log and the ground truth.

Role: the judge of the cluster-graph benchmark (digest §3.3 and §4.3). It reads request-log
records (:func:`bench.invitro.read_log`), the lab's ground truth (:meth:`SocialWeb.truth`) and
optionally a :class:`~bench.invitro.social.census.Census`; it writes nothing.

Definitions, exactly:

- *downloads*: the log's GET requests to hosts of the site, not aborted, robots.txt excluded,
  in log order. Each has the truth of its (host, target). A download *carries* its content key
  when its status is 200 (a redirect names the key of its target but does not hold it).
- *valuable-new*: a download of category valuable whose content key no earlier download
  carried. ``valuable_share`` = valuable-new ÷ downloads; ``fp`` = 1 − valuable_share.
- ``duplicate``: downloads of category duplicate, and valuable downloads whose key an earlier
  download carried. ``uninformative`` and ``error``: downloads of those categories. These
  three and ``valuable_new`` add up to the downloads.
- ``fn`` (with ``baseline``, the log of a breadth-first crawl of the same budget): the share of
  the baseline's valuable-new content keys that no download of this crawl carried.
- ``ucc_valid_ratio``: downloads that show user-created content with a content key no earlier
  download carried, ÷ downloads. ``ucc_recall`` (with ``census``): the census's UCC content keys
  carried by some download ÷ all of them.
- ``curve[i]``: valuable-new downloads among the first i + 1 downloads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from bench.invitro.requestlog import LogRecord
from bench.invitro.social.census import Census
from bench.invitro.social.site import DUPLICATE, ERROR, UNINFORMATIVE, VALUABLE, Truth
from bench.invitro.social.web import SocialWeb


@dataclass(frozen=True)
class Score:
    """One crawl of one site, judged (the module docstring defines every field)."""

    site: str
    downloads: int
    valuable_new: int
    duplicate: int
    uninformative: int
    error: int
    valuable_share: float
    fp: float
    fn: float | None
    """None without a baseline"""
    baseline_keys: int
    """valuable-new content keys of the baseline (0 without one)"""
    missed_keys: int
    """how many of those this crawl never carried"""
    ucc_valid: int
    ucc_valid_ratio: float
    ucc_recall: float | None
    """None without a census"""
    by_type: dict[str, int]
    """downloads per page type"""
    curve: tuple[int, ...]

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["curve"] = list(self.curve)
        return data


def downloads(records: Iterable[LogRecord], web: SocialWeb, site_name: str) -> list[tuple[LogRecord, Truth]]:
    """The downloads of ``site_name`` in ``records`` (module docstring), each with its truth."""
    site = web.site_named(site_name)
    return [
        (r, web.truth(r.host, r.target))
        for r in records
        if r.method == "GET" and not r.aborted and r.target != "/robots.txt" and web.site_of(r.host) is site
    ]


def valuable_new_keys(records: Iterable[LogRecord], web: SocialWeb, site_name: str) -> set[str]:
    """The content keys of the valuable-new downloads of a crawl (what FN is measured against)."""
    carried: set[str] = set()
    new: set[str] = set()
    for record, truth in downloads(records, web, site_name):
        if truth.category == VALUABLE and truth.content_key not in carried:
            new.add(truth.content_key)
        if record.status == 200 and truth.content_key:
            carried.add(truth.content_key)
    return new


def score(
    records: Iterable[LogRecord],
    web: SocialWeb,
    site_name: str,
    *,
    baseline: Iterable[LogRecord] | None = None,
    census: Census | None = None,
) -> Score:
    """Judge one crawl of ``site_name`` from its request-log ``records`` (module docstring)."""
    counts: Counter[str] = Counter()
    by_type: Counter[str] = Counter()
    carried: set[str] = set()
    ucc_carried: set[str] = set()
    curve: list[int] = []
    ucc_valid = 0
    for record, truth in downloads(records, web, site_name):
        key = truth.content_key
        fresh = bool(key) and key not in carried
        if truth.category == VALUABLE:
            counts[VALUABLE if fresh else DUPLICATE] += 1
        else:
            counts[truth.category] += 1
        ucc_valid += truth.ucc and fresh
        by_type[truth.type] += 1
        curve.append(counts[VALUABLE])
        if record.status == 200 and key:
            carried.add(key)
            if truth.ucc:
                ucc_carried.add(key)
    total = len(curve)
    share = counts[VALUABLE] / total if total else 0.0
    fn, baseline_keys, missed = None, 0, 0
    if baseline is not None:
        wanted = valuable_new_keys(baseline, web, site_name)
        baseline_keys, missed = len(wanted), len(wanted - carried)
        fn = missed / baseline_keys if baseline_keys else 0.0
    recall = None
    if census is not None:
        recall = len(census.ucc_keys & ucc_carried) / len(census.ucc_keys) if census.ucc_keys else 0.0
    return Score(
        site_name, total, counts[VALUABLE], counts[DUPLICATE], counts[UNINFORMATIVE], counts[ERROR], share,
        1.0 - share if total else 0.0, fn, baseline_keys, missed, ucc_valid, ucc_valid / total if total else 0.0,
        recall, dict(sorted(by_type.items())), tuple(curve),
    )
