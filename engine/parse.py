"""Links out of an HTML page, with lxml (step 7 of ARCHITECTURE.md).

:func:`extract_links` turns a fetched body into canonical absolute URLs (via
:class:`frontier.urls.BaseURL`) in document order, without duplicates, minus those the
page asks crawlers not to follow and the ``<link>`` elements that do not name a page (see
:data:`PAGE_RELS`). It is pure: bytes in, a :class:`ParsedPage` out, and it never raises on
what a server sends (broken markup, wrong or unknown encodings, empty or binary bodies).
What is followed and how links are written comes from the config as one :class:`LinkRules`.

How the body is decoded: the ``encoding`` argument, else a byte-order mark, else the
``charset`` of the Content-Type, else a ``<meta charset>`` in the first 4 KB, else UTF-8
if the bytes are valid UTF-8 and windows-1252 if not (as browsers do). libxml2 only ever
sees UTF-8: its iconv decoders stop at the first invalid byte and drop the rest of the
page, so other encodings are decoded by Python with replacement characters first.
Non-ASCII in links is always percent-encoded as UTF-8 (browsers use the page's encoding
for the query of a link on a non-UTF-8 page; servers of such pages are rare and lenient).

Two ways through the page, chosen per call:

* the default (no contexts, no document) reads only the start tags that can carry a link, with
  ``engine/_start_tags.c``: the HTML tokenizer's rules in C, building Python objects for the
  ~45 wanted tags of a page and not for the other ~300. On the ~15 KB, ~350-element, ~40-link
  pages of ``bench/parse_bench.py`` lxml cost ~170 µs a page for the same start tags (libxml2's
  tokenizing ~90, its Python call and attribute dict per start tag ~80; the fastest of the lxml
  ways measured, see bench/RESULTS.md); the C scan ~30 (~14 on the in-vitro web's pages). libxml2 2.14 tokenizes by the same
  rules, so lxml is the oracle of ``tests/test_start_tags.py``, which compares the two on generated
  markup; character references in attribute values are decoded here (:func:`unescape_attribute`);
* with ``want_context`` or ``want_document`` lxml builds the tree and its link elements are
  visited with ``iter(tags)``; contexts need ancestors and anchor text.

Both feed the same :class:`_Collector`, so they find the same links.
"""

from __future__ import annotations

import codecs
import html
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from html.entities import html5 as _NAMED_REFERENCES
from typing import Any

from lxml import etree

from engine._start_tags import start_tags
from frontier.page import LinkContext
from frontier.urls import BaseURL, canonicalize


__all__ = ["HTML_TYPES", "PAGE_RELS", "LinkRules", "ParsedPage", "extract_links", "parse_location"]

HTML_TYPES = ("text/html", "application/xhtml+xml")

# The rel values of a <link> that name a page a reader could go to (scope.link_rels): HTML's
# hyperlink types for <link> (alternate, canonical, help, license, next, prev) and HTML 4's
# navigation types (start, contents, index, glossary, chapter, section, subsection, appendix,
# with up, first, last, home and previous in common use). Not followed: what a browser loads
# with the page (stylesheet, icon, preload, prefetch, modulepreload, manifest; dns-prefetch and
# preconnect name hosts), endpoints that are no page (pingback, webmention, and search, which
# is an OpenSearch description in XML), author (mostly mailto: or a profile elsewhere). `rev`
# is never a reason to follow. Heritrix fetches every <link> as an embed: ["*"] does that.
PAGE_RELS = (
    "alternate", "canonical", "next", "prev", "previous", "first", "last", "up", "start", "home",
    "index", "contents", "chapter", "section", "subsection", "appendix", "glossary", "help", "license",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class LinkRules:
    """Which of a page's links are followed and how they are written: one per crawl, from its config.

    ``link_rels`` holds lower-case rel values; None follows every ``<link href>``, whatever
    its rel and type (``scope.link_rels = ["*"]``).
    """

    follow_nofollow: bool = False
    link_rels: frozenset[str] | None = frozenset(PAGE_RELS)
    sort_query: bool = True


@dataclass(slots=True)
class ParsedPage:
    """What a page links to.

    ``links`` are canonical, in document order, each once (first occurrence kept);
    ``contexts`` is parallel to ``links`` when asked for; ``nofollow`` counts the distinct
    links left out because of ``rel=nofollow`` or ``<meta name=robots content=nofollow>``;
    ``base`` is the URL links were resolved against; ``meta_refresh`` the canonical target
    of a ``<meta http-equiv=refresh>`` (also in ``links`` unless the page is nofollow;
    its context has tag ``meta``). An ``area``'s anchor text is its ``alt``.
    """

    links: list[str]
    nofollow: int = 0
    contexts: list[LinkContext] | None = None
    document: Any = None
    base: str = ""
    title: str | None = None
    meta_refresh: str | None = None


# -- what to collect -----------------------------------------------------------------------------

_LINK_ATTRIBUTE = {"a": "href", "area": "href", "link": "href", "frame": "src", "iframe": "src"}
_TAGS = (*_LINK_ATTRIBUTE, "base", "meta", "title")
_TOKENS = re.compile(r"[\s,]+")
_REFRESH = re.compile(r"\s*[0-9.]*\s*[;,]?\s*(?:url\s*=\s*)?(.*)", re.I | re.S)


def _refresh_target(content: str) -> str | None:
    """The URL of a refresh ``content`` such as ``0; url='/next'`` (WHATWG, simplified)."""
    match = _REFRESH.match(content)
    target = match.group(1).strip() if match else ""
    if target[:1] in ("'", '"'):
        target = target[1:].partition(target[0])[0]
    return target or None


# What a browser loads with the page: next to one of these, `alternate` names no page but an
# alternative stylesheet or icon ("alternate stylesheet", "alternate icon").
_LOADED_WITH_PAGE = frozenset(
    ("stylesheet", "icon", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon", "preload", "prefetch",
     "modulepreload", "manifest")
)  # fmt: skip


def _names_page(link_rels: frozenset[str], rel: str | None, kind: str | None) -> bool:
    """A ``<link>`` is followed for a rel in ``link_rels``, none loaded with the page that is
    not in ``link_rels`` too, and a type, if any, that is HTML.

    The type rule is about ``alternate``: language and mobile versions are pages, but feeds
    (RSS, Atom), oEmbed and JSON alternates are not. Feeds would be worth archiving (Heritrix
    fetches them), but links are extracted from HTML only, so a feed costs a polite fetch and
    leads nowhere, and WordPress puts two or three such alternates on every page.
    ``scope.link_rels = ["*"]`` fetches them all.
    """
    if rel is None:
        return False
    tokens = _TOKENS.split(rel.lower())
    if not any(token in link_rels for token in tokens):
        return False
    if any(token in _LOADED_WITH_PAGE and token not in link_rels for token in tokens):
        return False
    return not kind or kind.partition(";")[0].strip().lower() in HTML_TYPES


class _Collector:
    """What the link-bearing elements of one page say, fed their start tags in document order.

    :meth:`start` sees the tags in ``_TAGS`` only (the start tags the scan returns, the
    elements the tree walk visits). A ``<link>`` counts only if it names a page (``link_rels``; None: any).
    ``hrefs`` keeps raw attribute values in document order; resolution waits until the end
    because the first ``<base href>`` applies even to links before it.
    """

    __slots__ = ("hrefs", "nofollow_at", "refresh_at", "base_href", "robots_nofollow", "title_seen", "link_rels")

    def __init__(self) -> None:
        self.reset(None)

    def reset(self, link_rels: frozenset[str] | None) -> None:
        self.link_rels = link_rels
        self.hrefs: list[str] = []
        self.nofollow_at: set[int] = set()
        self.refresh_at = -1
        self.base_href: str | None = None
        self.robots_nofollow = False
        self.title_seen = False

    def start(self, tag: str, attrib: Any) -> None:
        name = _LINK_ATTRIBUTE.get(tag)
        if name is not None:
            value = attrib.get(name)
            if value is not None:
                rel = attrib.get("rel")
                rels = self.link_rels
                if tag == "link" and rels is not None and not _names_page(rels, rel, attrib.get("type")):
                    return
                if rel is not None and "nofollow" in rel.lower() and "nofollow" in _TOKENS.split(rel.lower()):
                    self.nofollow_at.add(len(self.hrefs))
                self.hrefs.append(value)
        elif tag == "base":
            if self.base_href is None:
                self.base_href = attrib.get("href")
        elif tag == "meta":
            self._meta(attrib)
        elif tag == "title":
            self.title_seen = True

    def _meta(self, attrib: Any) -> None:
        content = attrib.get("content")
        if content is None:
            return
        name = attrib.get("name")
        if name is not None and name.strip().lower() == "robots":
            tokens = _TOKENS.split(content.lower())
            if "nofollow" in tokens or "none" in tokens:
                self.robots_nofollow = True
        equiv = attrib.get("http-equiv")
        if equiv is not None and equiv.strip().lower() == "refresh" and self.refresh_at < 0:
            target = _refresh_target(content)
            if target is not None:
                self.refresh_at = len(self.hrefs)
                self.hrefs.append(target)


class _Parsers(threading.local):
    """lxml parsers are not thread-safe: one per thread, reused for every page, with its collector."""

    def __init__(self) -> None:
        self.collector = _Collector()
        self.tree = etree.HTMLParser(encoding="utf-8", no_network=True, collect_ids=False)


_parsers = _Parsers()


# -- encodings -----------------------------------------------------------------------------------

# Labels that browsers read as a superset encoding (WHATWG Encoding Standard), by Python name.
_SUPERSET = {
    "ascii": "cp1252",
    "iso8859-1": "cp1252",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "tis-620": "cp874",
    "gb2312": "gbk",
    "shift_jis": "cp932",
    "euc_kr": "cp949",
    "big5": "big5hkscs",
    "utf-8-sig": "utf-8",
}
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.I).search


@lru_cache(maxsize=256)
def _codec(label: str) -> str | None:
    """The Python codec for a charset label, or None if unknown or not a text encoding."""
    try:
        info = codecs.lookup(label.strip().strip("\"'"))
    except (LookupError, ValueError, TypeError):
        return None
    if not getattr(info, "_is_text_encoding", True):  # base64, rot13, ...
        return None
    return _SUPERSET.get(info.name, info.name)


def _charset_parameter(content_type: str) -> str | None:
    at = content_type.lower().find("charset=")
    if at < 0:
        return None
    return content_type[at + 8 :].partition(";")[0].strip().strip("\"'")


def _is_utf8(body: bytes) -> bool:
    if body.isascii():
        return True
    try:  # not final: a body cut short in the middle of a character is still UTF-8
        codecs.getincrementaldecoder("utf-8")().decode(body, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _choose_codec(body: bytes, encoding: str | None, content_type: str | None) -> str:
    codec = _codec(encoding) if encoding else None
    if codec is None:
        codec = next((name for bom, name in _BOMS if body.startswith(bom)), None)
    if codec is None and content_type:
        label = _charset_parameter(content_type)
        codec = _codec(label) if label else None
    if codec is None:
        match = _META_CHARSET(body, 0, 4096)
        if match is not None:
            codec = _codec(match.group(1).decode("ascii"))
            if codec is not None and codec.startswith("utf-16"):  # a readable <meta> is not UTF-16
                codec = "utf-8"
    if codec is None:
        codec = "utf-8" if _is_utf8(body) else "cp1252"
    return codec


def _as_utf8(body: bytes, encoding: str | None, content_type: str | None) -> bytes:
    """The body in UTF-8 (invalid UTF-8 bytes are left for libxml2 to replace)."""
    codec = _choose_codec(body, encoding, content_type)
    if codec == "utf-8":
        return body
    try:
        text = body.decode(codec, "replace")
    except Exception:  # codecs such as "undefined" or "idna" fail even with "replace"
        text = body.decode("cp1252", "replace")
    return text.encode("utf-8", "replace")


# -- character references in attribute values ---------------------------------------------------

_REFERENCE = re.compile(r"&(?:#[xX]([0-9A-Fa-f]+);?|#([0-9]+);?|([0-9A-Za-z]+;?))")
# Numeric references to C1 controls name the windows-1252 characters at those bytes (WHATWG); the five bytes
# windows-1252 leaves undefined stay as they are.
_C1 = {n: bytes([n]).decode("cp1252", "ignore") or chr(n) for n in range(0x80, 0xA0)}
_LONGEST_NAME = max(map(len, _NAMED_REFERENCES))


def _reference(match: re.Match[str]) -> str:
    hexadecimal, decimal, name = match.groups()
    if name is None:
        number = int(hexadecimal, 16) if hexadecimal is not None else int(decimal)
        if number == 0 or number > 0x10FFFF or 0xD800 <= number <= 0xDFFF:
            return "\ufffd"
        return _C1.get(number) or chr(number)
    # the longest name in the table that the text starts with
    for length in range(min(len(name), _LONGEST_NAME), 1, -1):
        value = _NAMED_REFERENCES.get(name[:length])
        if value is not None:
            break
    else:
        return match.group()
    if name[length - 1] != ";":  # a legacy name without ';' is text before '=' or a letter or digit
        after = name[length : length + 1] or match.string[match.end() : match.end() + 1]
        if after == "=" or after.isascii() and after.isalnum():
            return match.group()
    return value + name[length:]


def unescape_attribute(value: str) -> str:
    """An attribute value with its character references decoded, as the HTML tokenizer does in an
    attribute (WHATWG 13.2.5.72–80): ``&amp;`` and ``&#38;`` are ``&``, but ``&copy=2`` and ``&ampx``
    are text, so query strings keep their parameters."""
    return _REFERENCE.sub(_reference, value)


# -- extraction ----------------------------------------------------------------------------------

_TITLE = re.compile(rb"<title[^>]*>([^<]*)", re.I).search


def title_of(body: bytes) -> str | None:
    """The text of the first ``<title>`` in ``body``, entities undone and whitespace folded (also for WACZ page lists)."""
    match = _TITLE(body)
    if match is None:
        return None
    return " ".join(html.unescape(match.group(1).decode("utf-8", "replace")).split()) or None


def _walk(root: Any, collector: _Collector) -> list[Any]:
    """Visit the tree's elements of interest; returns the element of each entry of hrefs."""
    elements: list[Any] = []
    for element in root.iter(_TAGS):
        before = len(collector.hrefs)
        collector.start(element.tag, element.attrib)
        if len(collector.hrefs) > before:
            elements.append(element)
    return elements


def _name(element: Any) -> str:
    classes = element.get("class")
    return ".".join([element.tag, *classes.split()]) if classes else element.tag


def _text(element: Any) -> str:
    """The element's text, comments left out, whitespace collapsed."""
    if len(element):  # tostring(method="text") is ~4x faster than joining itertext()
        text = etree.tostring(element, method="text", encoding=str, with_tail=False)
    else:
        text = element.text or ""
    return " ".join(text.split())


def _context(element: Any, paths: dict[Any, str]) -> LinkContext:
    """The element's :class:`LinkContext`; `paths` memoizes the tag paths of ancestors."""
    chain: list[Any] = []
    parent = element.getparent()
    while parent is not None and parent not in paths:
        chain.append(parent)
        parent = parent.getparent()
    path = paths[parent] if parent is not None else ""
    for ancestor in reversed(chain):
        path = f"{path}/{_name(ancestor)}" if path else _name(ancestor)
        paths[ancestor] = path
    tag = element.tag
    if tag == "a":
        text = _text(element)
    elif tag == "area":
        text = " ".join((element.get("alt") or "").split())
    else:
        text = ""
    return LinkContext(tag=tag, tag_path=f"{path}/{_name(element)}" if path else _name(element), anchor_text=text)


def _parse(data: bytes, tree: bool, link_rels: frozenset[str] | None) -> tuple[_Collector, Any, list[Any] | None]:
    """The page's link-bearing start tags into the collector, by the C scan or (``tree``) lxml's tree:
    (collector, root or None, elements or None). Never raises."""
    collector = _parsers.collector
    collector.reset(link_rels)
    if not tree:
        start, hrefs = collector.start, collector.hrefs
        for tag, attributes in start_tags(data, unescape_attribute):
            if tag == "a" and "rel" not in attributes:  # most of a page's tags: what start does for them, inline
                href = attributes.get("href")
                if href is not None:
                    hrefs.append(href)
            else:
                start(tag, attributes)
        return collector, None, None
    try:
        root = etree.fromstring(data, _parsers.tree)
    except (etree.LxmlError, ValueError):
        collector.reset(link_rels)
        return collector, None, None
    if root is None:
        return collector, None, []
    return collector, root, _walk(root, collector)


def extract_links(
    body: bytes,
    url: str,
    *,
    content_type: str | None = None,
    encoding: str | None = None,
    rules: LinkRules = LinkRules(),
    want_context: bool = False,
    want_document: bool = False,
) -> ParsedPage:
    """The links of the HTML page `body` fetched from `url` (see :class:`ParsedPage`)."""
    try:
        page = BaseURL(url, sort_query=rules.sort_query)
    except ValueError:
        return ParsedPage([], base=url, contexts=[] if want_context else None)
    data = _as_utf8(body, encoding, content_type) if body else b""
    if not data or data.isspace() or b"\x00" in data[:1024]:  # empty, or binary (as WHATWG sniffs)
        return ParsedPage([], base=page.url, contexts=[] if want_context else None)
    collector, root, elements = _parse(data, want_context or want_document, rules.link_rels)
    base = page
    if collector.base_href is not None:
        base_url = page.resolve(collector.base_href)
        if base_url is not None and base_url != page.url:
            base = BaseURL(base_url, sort_query=rules.sort_query)
    parsed = _select(collector, base, elements if want_context else None, rules.follow_nofollow)
    parsed.document = root if want_document else None
    parsed.title = title_of(data) if collector.title_seen else None
    return parsed


def _select(collector: _Collector, base: BaseURL, elements: list[Any] | None, follow_nofollow: bool) -> ParsedPage:
    """Resolve the collected hrefs; keep each followable link once, in document order."""
    skip_all = collector.robots_nofollow and not follow_nofollow
    nofollow_at = set() if follow_nofollow else collector.nofollow_at
    links: list[str] = []
    kept_at: list[int] = []
    seen: set[str] = set()
    dropped: set[str] = set()
    refresh = None
    for i, link in enumerate(base.resolve_all(collector.hrefs)):
        if link is None:
            continue
        if i == collector.refresh_at:
            refresh = link
        if skip_all or i in nofollow_at:
            dropped.add(link)
        elif link not in seen:
            seen.add(link)
            links.append(link)
            kept_at.append(i)
    contexts = None
    if elements is not None:
        paths: dict[Any, str] = {}
        contexts = [_context(elements[i], paths) for i in kept_at]
    return ParsedPage(links, len(dropped - seen), contexts, base=base.url, meta_refresh=refresh)


def parse_location(location: str, url: str, *, sort_query: bool = True) -> str | None:
    """The canonical target of a redirect's Location header, resolved against `url`."""
    try:
        return BaseURL(url, sort_query=sort_query).resolve(location)
    except ValueError:  # the request URL itself is not valid: only an absolute target works
        return canonicalize(location, sort_query=sort_query)
