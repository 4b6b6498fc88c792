"""The clustergraph policy: follow only the links along the kept edges of a learned cluster graph.

Jiang & Lv's online filter (digest ``/work/shared/papers/clustergraph.md`` §2.12). The model is
written offline by ``crawl learn clustergraph`` (``frontier/clustergraph/``); this module reads
it once, in ``__init__``, and never writes it. Each link ``u_j`` of a page ``u_i`` is dropped
when ``u_j`` maps to no surviving cluster (``cg_unmapped``, ``cg_deleted``: rule 1) or when
there is no kept edge from ``u_i``'s cluster to ``u_j``'s (``cg_no_edge``: rule 2). A redirect
target and a link of a page that maps to no cluster have an unrestricted source: rule 1 only
(§5 #20). A seed (``parent=None``) is always accepted: the user asked for it, and a crawl
whose seed maps to a deleted cluster would otherwise fetch nothing. The crawl stays FIFO
breadth-first: the graph filters, it never ranks.

``order`` chooses where the filter sits (§2.12's modes): ``gd`` (default) judges every link,
then the URL cache looks up those that pass; ``dg`` sets ``judges_new_links_only``, so the
frontier looks each link up first, without inserting, and asks the filter only about those
it has not seen (mode ``d``, no filter at all, is the ``breadth-first`` policy). Both enqueue
the same URLs; they differ in how many filter calls and duplicate lookups they make
(``filter_calls`` here, ``dup_lookups`` in the frontier's statistics).

Costs: the links of one page arrive together, right after the page's ``on_fetched``, so the
page is mapped to its cluster once (``on_fetched`` caches it) and each link costs one
``ClusterFilter.judge``: O(#tokens), whatever the number of clusters or URLs.

Counters (``counters()``, in stats.json under ``policy`` and on ``/metrics``; kept in
``state()`` so that they survive a resume): ``cluster_pages`` (responses, any status, per
cluster of the fetched URL; ``(unmapped)`` for none), ``cluster_links_kept`` (accepted links
per cluster), ``links_dropped`` (per reason) and ``filter_calls`` (labelled by ``order``).

A redirect target is recognised by the ``on_fetched`` of its redirect just before it. With
several agents, a target owned by another agent reaches it as an ordinary link of the
redirecting URL, judged under rule 2.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from frontier.page import FetchedPage, LinkContext
from frontier.policy import CrawlPolicy, PolicyError, Revisit

if TYPE_CHECKING:  # imported when a model is loaded: looking up any policy imports this module
    from frontier.clustergraph.model import ClusterFilter

ORDERS = ("gd", "dg")
UNMAPPED = "(unmapped)"  # the cluster_pages label of a page that maps to no surviving cluster


class ClusterGraph(CrawlPolicy):
    """Keep a link only if its cluster survives and a kept edge leads to it from its page's cluster.

    Invariant: ``_source`` is the surviving cluster of ``_parent`` (None when it maps to none), and
    ``_redirect`` the (redirecting URL, target) of the last response shown, if it was a redirect.
    """

    name = "clustergraph"
    needs_model = True

    @dataclass(frozen=True, slots=True)
    class Options:
        order: str = "gd"  # gd: graph filter, then duplicate check; dg: duplicate check, then graph filter

        def __post_init__(self) -> None:
            if self.order not in ORDERS:
                raise PolicyError("order", f"expected one of {', '.join(ORDERS)}, got {self.order!r}")

    def __init__(self, options: ClusterGraph.Options, model: Path | None) -> None:
        super().__init__(options, model)
        self.filter = load_filter(model)
        self.order = options.order
        self.judges_new_links_only = options.order == "dg"
        self._parent: str | None = None
        self._source: str | None = None
        self._redirect: tuple[str, str] | None = None
        self.pages: Counter[str] = Counter()
        self.kept: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self.filter_calls = 0

    def _source_of(self, parent: str) -> str | None:
        if parent != self._parent:
            self._parent, self._source = parent, self.filter.cluster(parent)
        return self._source

    def on_fetched(self, page: FetchedPage, now: float) -> Iterable[Revisit]:
        cluster = self._source_of(page.url)
        self.pages[UNMAPPED if cluster is None else cluster] += 1
        self._redirect = (page.url, page.redirect) if page.redirect is not None else None
        return ()

    def accept_link(self, url: str, parent: str | None, context: LinkContext | None) -> str | None:
        if parent is None:
            return None
        self.filter_calls += 1
        source = None if self._redirect == (parent, url) else self._source_of(parent)
        cluster, reason = self.filter.judge(url, source)
        if reason is not None:
            self.dropped[reason] += 1
            return reason
        self.kept[cluster or UNMAPPED] += 1  # an accepted link has a cluster: rule 1
        return None

    def counters(self) -> Mapping[str, Mapping[str, int]]:
        return {
            "cluster_pages": self.pages,
            "cluster_links_kept": self.kept,
            "links_dropped": self.dropped,
            "filter_calls": {self.order: self.filter_calls},
        }

    def state(self) -> bytes:
        return orjson.dumps(self.counters(), option=orjson.OPT_SORT_KEYS)

    def restore(self, state: bytes) -> None:
        if not state:
            return
        saved = orjson.loads(state)
        self.pages = Counter(saved["cluster_pages"])
        self.kept = Counter(saved["cluster_links_kept"])
        self.dropped = Counter(saved["links_dropped"])
        self.filter_calls = sum(saved["filter_calls"].values())


def load_filter(model: Path | None) -> ClusterFilter:
    """The runtime filter of the model at ``model`` (a folder or its model.json); PolicyError naming ``model``."""
    if model is None:
        raise PolicyError("model", "the clustergraph policy needs policy.model (--model): the folder or "
                                   "model.json that `crawl learn clustergraph` wrote")
    from frontier.clustergraph.model import ClusterFilter, Model

    try:
        return ClusterFilter.from_model(Model.load(model))
    except FileNotFoundError:
        raise PolicyError("model", f"{model} does not exist") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise PolicyError("model", f"cannot read the cluster-graph model {model}: {e}") from None
