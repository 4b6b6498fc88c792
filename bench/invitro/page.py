"""One HTML page of the in-vitro web: its links and its markup, generated in one pass.

Role: the hot path of the server. :class:`~bench.invitro.model.WebModel` decides where a page
is (host, path, status); this module decides its links and writes them, between text blocks
from :mod:`bench.invitro.html`, into about ``size`` bytes of realistic HTML.

The links, in document order:

- head: the stylesheet, and on 30 % of pages a canonical link to the page itself;
- nav: a "skip to content" ``#main`` link, then home, parent and children in the host's tree;
- body, in paragraphs of 1–3 links and "related" lists of 2–5: pages of the same host (3 % as
  ``utm_source`` variants), ``external_share`` to other hosts, ``frac_binary`` to files,
  ``missing_share`` to ``/missing/…`` (404); 5 % repeat an earlier link, 8 % carry a
  ``#fragment``, 2 % are ``<area>``, 1 % ``<iframe>``, ``nofollow_share`` have rel=nofollow.

Hrefs are written absolute (25 %), root-relative (35 %), relative (35 %, some with ``./``) or
protocol-relative (5 %); relative ones are computed against the page's directory, or against
its ``<base href>`` (a section, on 5 % of pages).

Speed (0.7 M instructions, 0.1–0.2 ms here, for 15 KB and 40 links): a page is a
``b"".join`` of prebuilt byte strings and encoded hrefs; each link is chosen and written in the
same step (a plan-then-render design cost more), one uniform draw picks its kind, and the
common kind, a plain link to a page of the same host, takes its URL and written forms from a
per-host table.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from bench.invitro import html

if TYPE_CHECKING:
    from bench.invitro.model import HostInfo, WebModel, WebParams

STYLESHEET = "/static/site.css"
UTM_SOURCES = ("feed", "newsletter", "social")
_FRAGMENTS = ("#top", "#comments", "#section-2", "#")


@dataclass(frozen=True, slots=True)
class Page:
    """A page's bytes and its links: parallel lists, absolute URLs without fragments."""

    body: bytes
    urls: list[str]
    nofollow: list[bool]
    tags: list[str]  # "link", "a", "area" or "iframe"


Link = tuple[str, bytes, str, bool]
"""A link as written: (absolute URL without fragment, escaped href, tag, nofollow)."""


def _add(links: list[Link], url: str, written: bytes, tag: str = "a") -> bytes:
    links.append((url, written, tag, False))
    return written


def directory(target: str) -> str:
    """The directory part of a request target: ``/a/b.html?x`` → ``/a/``."""
    return target.split("?", 1)[0].rpartition("/")[0] + "/"


def write_page(web: WebModel, info: HostInfo, i: int, rng: random.Random, size: int) -> Page:
    """Page ``i`` of a host, about ``size`` bytes, every choice drawn from ``rng``."""
    r, bits = rng.random, rng.getrandbits
    table = host_table(web, info)
    paths = table.paths
    origin = info.origin
    url = origin + paths[i]
    base_dir = directory(paths[i])
    base_href = None
    if info.pages > 1 and r() < 0.05:  # <base href> to a section: relative hrefs follow it
        base_dir = f"/section{1 + int(r() * min(web.params.branching, info.pages - 1))}/"
        base_href = origin + base_dir
    links: list[Link] = []
    title = f"{html.TITLES[bits(9)]} {i}"
    out = [html.HEAD_START, f"<title>{title} | {info.name}</title>\n".encode()]
    out.append(f'<meta name="description" content="{html.SENTENCES[bits(10)]}">\n'.encode())
    if base_href is not None:
        out.append(b'<base href="%s">\n' % html.escape(base_href))
    css = _add(links, origin + STYLESHEET, html.escape(href(origin, STYLESHEET, base_dir, r())), "link")
    out.append(b'<link rel="stylesheet" href="%s">\n' % css)
    if r() < 0.3:
        out.append(b'<link rel="canonical" href="%s">\n' % _add(links, url, html.escape(url), "link"))
    out.append(html.HEAD_END)
    out.append(f'<header class="site">\n<p class="brand">{info.name}</p>\n</header>\n'.encode())
    out.append(b'<nav aria-label="site">\n<ul>\n')
    head = len(links)
    write_nav(web, table, info, i, base_dir, base_href or url, links, rng, out)
    out.append(f'</ul>\n</nav>\n<main id="main">\n<article>\n<h1>{title}</h1>\n'.encode())
    count = round(info.degree * math.exp(0.4 * rng.gauss(0.0, 1.0) - 0.08))  # the page's <a> links, nav included
    count = min(count, int(4 * web.params.mean_links) + 1) - (len(links) - head)
    _write_body(web, info, base_dir, links, rng, max(0, count), out)
    length = sum(map(len, out))
    end = html.footer(info.name)
    while length + len(end) < size:  # pad with text: paragraphs, now and then a heading or a list
        block = html.PADDING[bits(11)]
        out.append(block)
        length += len(block)
    out.append(end)
    return Page(b"".join(out), [k[0] for k in links], [k[3] for k in links], [k[2] for k in links])


def write_nav(
    web: WebModel,
    table: HostTable,
    info: HostInfo,
    i: int,
    base_dir: str,
    base_url: str,
    links: list[Link],
    rng: random.Random,
    out: list[bytes],
) -> None:
    """The skip link, then home, parent and children: the tree that makes every page reachable."""
    _add(links, base_url, b"#main")
    out.append(b'<li><a href="#main">Skip to content</a></li>\n')
    b = web.params.branching
    family = [0] if i else []  # home
    if i > b:
        family.append((i - 1) // b)  # parent (for a section, the parent is home)
    family += range(i * b + 1, min(i * b + b + 1, info.pages))  # children
    for j in family:
        written = _add(links, table.urls[j], html.escape(href(info.origin, table.paths[j], base_dir, rng.random())))
        out += (html.ITEM_START, written, html.ITEM_CLOSES[rng.getrandbits(9)])


def _write_body(
    web: WebModel, info: HostInfo, base_dir: str, links: list[Link], rng: random.Random, count: int, out: list[bytes]
) -> None:
    """``count`` text links in paragraphs and lists: chosen and written in one loop (the hot one).

    One uniform draw ``u`` per link picks its kind from consecutive ranges: repeat (5 %),
    external, binary, missing, other internal (utm variant, fragment, <area>, <iframe>), then
    the common case, a plain ``<a>`` to a page of the host, whose top ``nofollow_share`` has
    rel=nofollow. The common case takes its URL and written forms from the host's table; the
    others go through :func:`_other_link`.
    """
    p = web.params
    r, bits = rng.random, rng.getrandbits
    add = links.append
    table = host_table(web, info)
    table_urls, absolute, rooted, paths, pages = table.urls, table.absolute, table.rooted, table.paths, info.pages
    leads, closes, item_closes = html.LEADS, html.CLOSES, html.ITEM_CLOSES
    relative_cache = _relative_href_cache
    repeat_below = 0.05
    plain_from = repeat_below + (1 - repeat_below) * (_other_share(p) + (p.frac_binary if info.files else 0.0))
    nofollow_from = 1 - (1 - plain_from) * p.nofollow_share
    first = len(links)
    left = 0  # links still to write in the current paragraph or list
    as_list = False
    for n in range(count):
        if left == 0:  # close the paragraph or list, open the next
            if n:
                out.append(b"</ul>\n" if as_list else html.PARAGRAPH_ENDS[bits(10)])
            as_list = r() < 0.15
            left = 2 + int(r() * 4) if as_list else 1 + int(r() * 3)
            out.append(html.LIST_STARTS[bits(9)] if as_list else b"<p>")
        left -= 1
        u = r()
        if u >= plain_from:  # the common case: a plain link to a page of this host
            j = int(r() * pages)
            url, tag, rel = table_urls[j], "a", u >= nofollow_from
            form = r()
            if form < 0.25:
                written = absolute[j]
            elif form < 0.6:
                written = rooted[j]
            elif form < 0.95:
                written = relative_cache.get((base_dir, paths[j])) or relative_href(base_dir, paths[j])
                if form > 0.9 and written[0] != 46:  # 46 is "."
                    written = b"./" + written
            else:
                written = absolute[j][5:]  # //host:port/…
        elif u < repeat_below and len(links) > first:  # an earlier link again, as pages do
            url, written, tag, rel = links[first + int(r() * (len(links) - first))]
        else:
            url, written, tag, rel = _other_link(web, info, base_dir, r)
        add((url, written, tag, rel))
        if tag != "a":
            element = html.element(tag, written, html.ANCHORS[bits(9)])
            out.append(b"<li>%s</li>\n" % element if as_list else leads[bits(10)][:-9] + element)
        elif rel:
            closing = (html.ITEM_CLOSES_NOFOLLOW if as_list else html.CLOSES_NOFOLLOW)[bits(9)]
            out += (html.ITEM_START if as_list else leads[bits(10)], written, closing)
        elif as_list:
            out += (html.ITEM_START, written, item_closes[bits(9)])
        else:
            out += (leads[bits(10)], written, closes[bits(9)])
    if count:
        out.append(b"</ul>\n" if as_list else html.PARAGRAPH_ENDS[bits(10)])


_UTM_SHARE, _FRAGMENT_SHARE, _AREA_SHARE, _IFRAME_SHARE = 0.03, 0.08, 0.02, 0.01


def _other_share(p: WebParams) -> float:
    """The share of non-repeated links that are not plain links to a page of the same host (less binary)."""
    internal = 1 - p.external_share - p.missing_share
    return p.external_share + p.missing_share + internal * (_UTM_SHARE + _FRAGMENT_SHARE + _AREA_SHARE + _IFRAME_SHARE)


def _other_link(web: WebModel, info: HostInfo, base_dir: str, r: Callable[[], float]) -> tuple[str, bytes, str, bool]:
    """(URL, written href, tag, nofollow) of an external, binary, missing or unusual internal link."""
    p = web.params
    u = r() * (_other_share(p) + (p.frac_binary if info.files else 0.0))
    nofollow = r() < p.nofollow_share
    if u < p.external_share:
        url, text = web.external_link(r)
        return url, html.escape(text), "a", nofollow
    u -= p.external_share
    tag, fragment = "a", False
    if u < p.missing_share:
        target = f"/missing/page{int(r() * 1000)}.html"
    elif info.files and u - p.missing_share < p.frac_binary:
        target = web.file_path(info, int(r() * info.files))
    else:
        target = host_table(web, info).paths[int(r() * info.pages)]
        kind = r() * (_UTM_SHARE + _FRAGMENT_SHARE + _AREA_SHARE + _IFRAME_SHARE)
        if kind < _UTM_SHARE:  # a utm_source variant: a distinct URL of the same page
            target += f"{'&' if '?' in target else '?'}utm_source={UTM_SOURCES[int(r() * 3)]}"
        elif kind < _UTM_SHARE + _FRAGMENT_SHARE:
            fragment = True
        else:
            tag = "area" if kind < _UTM_SHARE + _FRAGMENT_SHARE + _AREA_SHARE else "iframe"
    text = href(info.origin, target, base_dir, r())
    if fragment or (tag == "a" and r() < 0.1):  # a fragment, which a crawler must drop
        text += _FRAGMENTS[int(r() * 4)]
    return info.origin + target, html.escape(text), tag, tag == "a" and nofollow


class HostTable(NamedTuple):
    """A host's pages as links are written: index ``j`` is page ``j``."""

    paths: tuple[str, ...]
    urls: tuple[str, ...]  # origin + path
    absolute: tuple[bytes, ...]  # escaped origin + path
    rooted: tuple[bytes, ...]  # escaped path


def host_table(web: WebModel, info: HostInfo) -> HostTable:
    """The table of a host, kept in ``web.host_tables`` for a few thousand hosts (rebuilding is cheap)."""
    table = web.host_tables.get(info.name)
    if table is None:
        paths = web.host_paths(info)
        urls = tuple(info.origin + path for path in paths)
        table = HostTable(paths, urls, tuple(map(html.escape, urls)), tuple(map(html.escape, paths)))
        if len(web.host_tables) >= 4096:
            web.host_tables.clear()
        web.host_tables[info.name] = table
    return table


def href(origin: str, target: str, base_dir: str, form: float) -> str:
    """How a page writes a link to ``target`` on its own host (``form`` uniform in [0, 1))."""
    if form < 0.25:
        return origin + target
    if form < 0.6:
        return target
    if form < 0.95:
        ref = relative_ref(base_dir, target)
        return "./" + ref if form > 0.9 and ref[0] != "." else ref
    return origin[5:] + target  # //host:port/…


_relative_cache: dict[tuple[str, str], str] = {}
_relative_href_cache: dict[tuple[str, str], bytes] = {}


def relative_href(base_dir: str, target: str) -> bytes:
    """:func:`relative_ref` as escaped bytes (kept in a bounded cache that callers may read)."""
    written = _relative_href_cache.get((base_dir, target))
    if written is None:
        if len(_relative_href_cache) > 1 << 16:
            _relative_href_cache.clear()
        written = _relative_href_cache[base_dir, target] = html.escape(relative_ref(base_dir, target))
    return written


def relative_ref(base_dir: str, target: str) -> str:
    """The shortest relative reference from directory ``base_dir`` (ending in '/') to ``target``."""
    key = (base_dir, target)
    ref = _relative_cache.get(key)
    if ref is None:
        path, mark, query = target.partition("?")
        base_segments = base_dir.split("/")[1:-1]
        folder, _, name = path.rpartition("/")
        segments = folder.split("/")[1:]
        common = 0
        while common < min(len(base_segments), len(segments)) and base_segments[common] == segments[common]:
            common += 1
        ref = "../" * (len(base_segments) - common) + "".join(s + "/" for s in segments[common:]) + name
        ref = (ref or "./") + mark + query
        if len(_relative_cache) > 1 << 16:
            _relative_cache.clear()  # bounded; refilling costs little
        _relative_cache[key] = ref
    return ref
