"""Rule F, ours and not the paper's: clusters mostly of syndication feeds.

An RSS or Atom feed is, by the format's own account, an alternate of an HTML page: the latest
entries of a stream, a journal or a board, which the site also shows as pages (it links the
feed with ``rel="alternate"``). A feed has no link a page crawler follows, and the paper's rules
keep it: one per user is as many as the users' pages (on the lab's microblog the filtered crawl
fetched more feeds than the breadth-first one, 237–415 of 5,000 pages). The sampler has seen the
media type of every page it downloaded; rule F reads it. A cluster with at least ``min_pages``
sampled pages of a known media type, of which more than ``min_share`` (half) are feeds, is a
feed cluster: a cluster is of its majority's type, as the evaluation labels clusters. δ's
removal of small patterns can leave feeds in one cluster with a few pages of another kind (the
microblog's 51 feeds with 5 channel pages, 41 with 6 on its held-out variant), which then link
onward; the cluster is deleted after rule H all the same, unless it is the only kept way into a
cluster it links to (``pruning.delete_nodes``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

FEED = "feed"

FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml", "application/feed+json",
                        "application/rdf+xml"})
"""The syndication formats' registered media types (generic ``text/xml`` is no evidence of a feed)."""


def feed_clusters(
    media_types: Mapping[str, str],
    cluster_of: Callable[[str], str | None],
    min_pages: int = 4,
    min_share: float = 0.5,
) -> dict[str, str]:
    """The feed clusters among the pages of ``media_types`` (normalised page URL → media type), each with a note."""
    counts: dict[str, list[int]] = {}
    for page, media_type in media_types.items():
        if (cluster := cluster_of(page)) is not None:
            seen = counts.setdefault(cluster, [0, 0])
            seen[0] += 1
            seen[1] += media_type in FEED_TYPES
    return {
        cluster: f"{feeds} of {pages} sampled pages are syndication feeds"
        for cluster, (pages, feeds) in sorted(counts.items())
        if pages >= min_pages and feeds > min_share * pages
    }
