"""SOUrCe's view of one parsed page: its bag of Xpaths and its link groups (digest §2.2–2.4).

Pure: it reads the lxml root element the crawler hands a policy as ``page.document`` (the
tree ``engine/parse.py`` builds with ``lxml.etree.HTMLParser``, which inserts no ``tbody``)
and returns plain strings. No network, no clock, no files.

* :func:`xpath_bag` — the clustering features (§2.2): one index-free, lower-case tag path
  from the root per leaf element (an element with no element children; text does not
  matter), counted. Comments and processing instructions are nodes of lxml's tree but
  not elements (their ``tag`` is no string): the walk skips them, so they are neither
  leaves nor children; the doctype is not in the tree. ``body_only`` keeps the leaves
  under ``<body>`` (A5). ``classes`` (ours, off in the paper's form) names each element of a
  path by its tag and first class token (``div.entry-text``), as Apaths already carry classes.
* :func:`apath` — the tag path to an anchor plus ``[class]`` (§2.3, A6): the class
  string with whitespace collapsed, tokens in source order, ``[]`` without a class; no
  ``id`` fallback.
* :func:`link_groups` — per Apath, the intra-site URLs of its ``<a href>`` in document
  order, duplicates kept (§2.3–2.4). URLs are resolved and canonicalised by the crawler's
  own :class:`frontier.urls.BaseURL`, so they equal the URLs the crawler queues (query
  parameters sorted unless ``sort_query=False``, as the crawl's ``urls.sort_query``).

Choices the digest leaves open:

* ``site`` is a host name (``"forum.test"`` or ``"www.forum.test"``); a URL is intra-site
  when its host, once a leading ``www.`` is dropped from both, equals it or is a subdomain of
  it. The digest (A8) says "the same host"; a site with a host per user (LiveJournal's
  ``bob.livejournal.com``, the lab's ``bob.blog.test``) or a mobile mirror
  (``m.micro.test``) would then be cut to its front page, and ``crawl learn`` scopes a run to
  the registrable domain of its seeds anyway. The port is not compared.
* Every fragment-only href (``#``, ``#top``) is dropped, not only the bare ``#``: it points
  into the page itself, and counting it would add a self-link to the navigation table for
  every in-page anchor. A fragment after a path is stripped by the canonicaliser.
* ``<base href>``: the first ``<base>`` that has an ``href``, resolved against the page URL,
  as ``engine/parse.py`` does; one that does not resolve leaves the page URL as the base.
* ``rel=nofollow`` anchors are kept: the paper counts every ``<a href>`` of the site.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING

from lxml import etree

from frontier.urls import BaseURL, host_of, split

if TYPE_CHECKING:
    from lxml.etree import _Element

__all__ = ["NON_HTML_EXTENSIONS", "apath", "link_groups", "xpath_bag"]

# The last path segment's extension of links that cannot be an HTML page (§2.4): images,
# style sheets, scripts, PDF and archives.
NON_HTML_EXTENSIONS = frozenset(
    ("png", "jpg", "jpeg", "gif", "bmp", "webp", "svg", "ico", "tif", "tiff", "avif",
     "css", "js", "mjs", "pdf",
     "zip", "gz", "tgz", "tar", "bz2", "xz", "7z", "rar")
)  # fmt: skip


def _tag(element: _Element) -> str:
    return str(element.tag).lower()


def _name(element: _Element) -> str:
    """The tag and first class token of an element, ``div.entry-text`` (just ``div`` without a class)."""
    tokens = (element.get("class") or "").split()
    return f"{_tag(element)}.{tokens[0]}" if tokens else _tag(element)


def _leaf_paths(top: _Element, above: str, classes: bool) -> Iterator[str]:
    """The Xpath of every leaf element under ``top`` (itself included); ``above`` is the path of its parent.

    One pass of lxml's ``iterwalk``, not recursion (pathological pages nest deeper than
    Python's limit): a leaf is an element whose end follows its own start with no element in
    between. The ``tag`` filter keeps comments and processing instructions out of both events.
    """
    name = _name if classes else _tag
    paths = [above]
    leaf = False
    for event, element in etree.iterwalk(top, events=("start", "end"), tag=etree.Element):
        if event == "start":
            paths.append(f"{paths[-1]}/{name(element)}")
            leaf = True
        else:
            path = paths.pop()
            if leaf:
                yield path
            leaf = False


def xpath_bag(root: _Element, body_only: bool = False, classes: bool = False) -> Counter[str]:
    """tf of every Xpath of the document whose root element is ``root`` (AT-01)."""
    if not body_only:
        return Counter(_leaf_paths(root, "", classes))
    root_path = "/" + (_name(root) if classes else _tag(root))
    return Counter(path for body in root.iterchildren("body") for path in _leaf_paths(body, root_path, classes))


def _path(element: _Element, known: dict[_Element, str]) -> str:
    """The element's index-free tag path; ``known`` memoises it for its ancestors (shared by a page's anchors)."""
    chain: list[_Element] = []
    node: _Element | None = element
    while node is not None and node not in known:
        chain.append(node)
        node = node.getparent()
    path = "" if node is None else known[node]
    for unknown in reversed(chain):
        path = known[unknown] = f"{path}/{_tag(unknown)}"
    return path


def _apath(anchor: _Element, known: dict[_Element, str]) -> str:
    classes = " ".join((anchor.get("class") or "").split())
    return f"{_path(anchor, known)}[{classes}]"


def apath(element: _Element) -> str:
    """``/html/body/…/a[class tokens]``: the element's index-free tag path and its normalised class (AT-02)."""
    return _apath(element, {})


def _without_www(host: str) -> str:
    return host.lower().removeprefix("www.")


def _within(host: str, home: str) -> bool:
    host = _without_www(host)
    return host == home or host.endswith("." + home)


def in_site(host: str, site: str) -> bool:
    """Whether ``host`` is ``site`` or one of its subdomains (``www.`` aside on both)."""
    return _within(host, _without_www(site))


def _is_page(url: str) -> bool:
    """False for a link whose last path segment has an extension of :data:`NON_HTML_EXTENSIONS`."""
    segment = split(url)[1].partition("?")[0].rpartition("/")[2]
    stem, dot, extension = segment.rpartition(".")
    return not (dot and stem and extension.lower() in NON_HTML_EXTENSIONS)


def _base(root: _Element, page: BaseURL) -> BaseURL:
    for element in root.iter("base"):
        href = element.get("href")
        if href is not None:
            resolved = page.resolve(href)
            return page if resolved is None else BaseURL(resolved, sort_query=page.sort_query)
    return page


def link_groups(root: _Element, page_url: str, site: str, *, sort_query: bool = True) -> dict[str, list[str]]:
    """Apath → the page's intra-site links at that Apath, in document order, duplicates kept (AT-02, AT-03).

    Groups appear in the order of their first anchor; a group whose links were all dropped is
    absent. Raises ValueError when ``page_url`` is not a valid http(s) URL.
    """
    base = _base(root, BaseURL(page_url, sort_query=sort_query))
    home = _without_www(site)
    known: dict[_Element, str] = {}
    groups: dict[str, list[str]] = {}
    for anchor in root.iter("a"):
        href = anchor.get("href")
        if href is None or href.strip().startswith("#"):
            continue
        url = base.resolve(href)  # None for javascript:, mailto:, tel:, data: and invalid URLs
        if url is None or not _within(host_of(split(url)[0]), home) or not _is_page(url):
            continue
        groups.setdefault(_apath(anchor, known), []).append(url)
    return groups
