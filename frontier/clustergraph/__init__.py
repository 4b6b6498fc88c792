"""Cluster-graph crawling of social websites (Jiang & Lv, 2009; spec: the paper digest ``clustergraph.md``).

A crawl learns, from URLs and links alone, which kinds of page lead to which, prunes the
duplicate links, duplicate-content listings and action pages, and then follows only links
along the kept edges. Everything here is pure computation, like the rest of
:mod:`frontier`: no network, no clock; the only files are the model's own (``model.py``).

Offline, ``crawl learn clustergraph`` (``engine/learn.py``) fetches and this package decides:

1. :mod:`~frontier.clustergraph.sampler` — Alg. 1, the random sampler: which page to
   fetch next (ξ from the pilot's mean out-degree, :func:`~frontier.clustergraph.sampler.xi_for`).
   Each fetched page becomes a :class:`~frontier.clustergraph.train.SampleRecord`.
2. :mod:`~frontier.clustergraph.urls` — normalisation (no scheme, port or fragment) and the
   three item sets of a URL (authority, path, query).
3. :mod:`~frontier.clustergraph.fpgrowth` — FP-growth itemsets frequent in every bin.
4. :mod:`~frontier.clustergraph.patterns` — the largest matched itemsets name each URL's
   pattern (``*.blog.test/$.html``): a cluster; δ removes the smallest; the
   :class:`~frontier.clustergraph.patterns.Mapper` maps any URL, seen or not.
5. :mod:`~frontier.clustergraph.graph` — E0: clusters and the links between them, with
   w_src, w_dst, destination sets and coverage.
6. :mod:`~frontier.clustergraph.pruning` — edge deletion (the fewest incoming edges that
   cover more than τ), then node deletion H → T/F → R → U → D, then reachability from the seeds.

Where we go past the paper (each a ``Params`` field; ``literal=True`` restores the paper):
a number is never a literal token (``literal_numbers``: ``?page=2`` and ``?page=3`` are one
cluster); rule V deletes clusters that are parameter views of another cluster's pages (sort
orders, print views, tracking and session tags, actions: :mod:`~frontier.clustergraph.variants`,
``views``) before edge deletion; rule T deletes clusters whose sampled pages have almost no
text of their own (forms and action pages: :mod:`~frontier.clustergraph.thin`, ``thin_words``)
and rule F clusters mostly of syndication feeds (:mod:`~frontier.clustergraph.feeds`, ``feeds``),
unless one is the only kept way into another; rule R deletes a listing entered only from the clusters it
leads back to when those link most of themselves (tag listings and calendar days of posts: ``detours``);
δ keeps a rare pattern with a number for another query parameter apart from one with a word there
(``?skip=20`` from ``?ref=friends``: ``numbers_apart``), and such further pages lead where their first
pages' kept edges lead (``paginations``);
rule D needs the pruned listing edge to have covered at least
``listing_cov`` of the content with ``listing_fan_out`` links per page (a template link is no
listing); rule H has the digest's guard.
7. :mod:`~frontier.clustergraph.train` runs 2–6 on a sample;
   :mod:`~frontier.clustergraph.model` holds the result (deterministic ``model.json``) and
   :mod:`~frontier.clustergraph.report` renders ``report.md`` and ``graph.svg``.

Online, :class:`~frontier.clustergraph.model.ClusterFilter` (used by the ``clustergraph``
crawl policy) maps each link to its cluster and keeps it only if that cluster survived and
the edge from the source page's cluster was kept.
"""
