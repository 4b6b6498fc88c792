"""The social lab: deterministic synthetic social websites for the cluster-graph crawler (issue 13).

Role: what ``crawl learn clustergraph`` samples and ``--policy clustergraph`` crawls, and what
the benchmark scores (digest ``clustergraph.md`` §4.3). Each site is a pure function of the URL
and serves, besides its pages, a ground truth per URL that no crawler reads.

Modules, by role:

- :mod:`~bench.invitro.social.site`: the contract (``Site``, ``Answer``, ``Truth``, categories);
- :mod:`~bench.invitro.social.kit`: hashed randomness, names, page and layout templates;
- the sites: :mod:`~bench.invitro.social.blog` (LiveJournal-like, ``blog.test``), ``forum``
  (``forum.test``), ``books`` (Shelfari-like, ``books.test``), ``microblog`` (Jaiku-like with a
  mobile mirror, ``micro.test``);
- :mod:`~bench.invitro.social.web`: ``SocialWeb``, the sites served by the in-vitro server and
  DNS (``start_invitro(social=SocialParams(...))``, ``python -m bench.invitro --social blog``);
- :mod:`~bench.invitro.social.census`: what a site holds, by an in-process breadth-first walk;
- :mod:`~bench.invitro.social.score`: a crawl's quality from the server's request log.

The registry below imports a site's module only when the site is asked for, so a lab with only
some sites written still runs.
"""

from __future__ import annotations

import importlib

from bench.invitro.social.site import Site

_CLASSES = {
    "blog": ("bench.invitro.social.blog", "BlogSite"),
    "forum": ("bench.invitro.social.forum", "ForumSite"),
    "books": ("bench.invitro.social.books", "BooksSite"),
    "microblog": ("bench.invitro.social.microblog", "MicroblogSite"),
}
SITE_NAMES: tuple[str, ...] = tuple(_CLASSES)
"""Every site name the lab knows, in the order ``SocialParams.sites`` uses by default."""


def site_class(name: str) -> type[Site]:
    """The class of the site called ``name`` (its module imported now); KeyError for an unknown name."""
    if name not in _CLASSES:
        raise KeyError(f"no social lab site {name!r}; known: {', '.join(SITE_NAMES)}")
    module_name, class_name = _CLASSES[name]
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, Site)):
        raise TypeError(f"{module_name}.{class_name} is not a Site")
    return cls
