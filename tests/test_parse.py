"""engine/parse.py: link extraction from one table of pages, fed whole, truncated and with trailing data; link rules."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from bench.invitro import WebParams
from bench.invitro.page import STYLESHEET
from engine import config as configuration
from engine.parse import PAGE_RELS, LinkRules, ParsedPage, extract_links, parse_location
from frontier.page import LinkContext
from frontier.urls import canonicalize
from tests.invitro_harness import WebThread, page_requests, run_crawl, url_of

URL = "http://a.test/dir/page.html"


@dataclass
class Case:
    name: str
    body: bytes
    links: list[str]
    nofollow: int = 0
    kwargs: dict[str, Any] = field(default_factory=dict)
    base: str = URL
    title: str | None = None
    meta_refresh: str | None = None


def html(body: str, head: str = "") -> bytes:
    return f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>".encode()


CASES = [
    Case(
        "relative forms",
        html(
            '<a href="x.html">1</a><a href="../up.html">2</a><a href="/root">3</a>'
            '<a href="//other.test/w">4</a><a href="?q=1">5</a><a href="HTTP://B.TEST:80/v">6</a>'
            '<a href="./sub/./y/../z">7</a><a href="https://c.test/">8</a>'
        ),
        [
            "http://a.test/dir/x.html",
            "http://a.test/up.html",
            "http://a.test/root",
            "http://other.test/w",
            "http://a.test/dir/page.html?q=1",
            "http://b.test/v",
            "http://a.test/dir/sub/z",
            "https://c.test/",
        ],
    ),
    Case(
        "base href, absolute",
        html('<a href="x">x</a><a href="/y">y</a><a href="">self</a>', '<base href="http://b.test/base/">'),
        ["http://b.test/base/x", "http://b.test/y", "http://b.test/base/"],
        base="http://b.test/base/",
    ),
    Case(
        "base href, relative to the page, first one wins, applies to links before it",
        html('<a href="early">e</a><base href="../other/"><base href="/ignored/"><a href="late">l</a>'),
        ["http://a.test/other/early", "http://a.test/other/late"],
        base="http://a.test/other/",
    ),
    Case(
        "base without href is skipped; an invalid base href is ignored",
        html('<base target="_blank"><base href="javascript:x"><a href="x">x</a>'),
        ["http://a.test/dir/x"],
    ),
    Case(
        "rel=nofollow per link",
        html(
            '<a href="/a" rel="nofollow">a</a><a href="/b" rel="external NoFollow">b</a>'
            '<a href="/c" rel="nofollowing">c</a><a href="/d">d</a><a href="/a">a again</a>'
        ),
        ["http://a.test/c", "http://a.test/d", "http://a.test/a"],
        nofollow=1,  # /b; /a is kept through its second, followable link
    ),
    Case(
        "rel=nofollow followed when asked",
        html('<a href="/a" rel="nofollow">a</a><a href="/b">b</a>'),
        ["http://a.test/a", "http://a.test/b"],
        kwargs={"rules": LinkRules(follow_nofollow=True)},
    ),
    Case(
        "meta robots nofollow drops every link",
        html('<a href="/a">a</a><a href="/b">b</a><a href="/a">a</a><a href="mailto:x@y">m</a>',
             '<meta name="ROBOTS" content="noindex, NOFOLLOW">'),
        [],
        nofollow=2,
    ),
    Case(
        "meta robots none means nofollow",
        html('<a href="/a">a</a>', '<meta name="robots" content="none">'),
        [],
        nofollow=1,
    ),
    Case(
        "meta robots noindex alone does not",
        html('<a href="/a">a</a>', '<meta name="robots" content="noindex"><meta name="description" content="nofollow">'),
        ["http://a.test/a"],
    ),
    Case(
        "meta robots nofollow followed when asked",
        html('<a href="/a">a</a>', '<meta name="robots" content="nofollow">'),
        ["http://a.test/a"],
        kwargs={"rules": LinkRules(follow_nofollow=True)},
    ),
    Case(
        "frames",
        b'<html><head><link rel="stylesheet" href="/s.css"></head><frameset><frame src="f1.html">'
        b'<frameset><frame src="f2.html"><frame></frameset></frameset></html>',
        ["http://a.test/dir/f1.html", "http://a.test/dir/f2.html"],
    ),
    Case(
        "iframes, area, link elements that name pages",
        html(
            '<iframe src="//i.test/x"></iframe><map><area href="/m" alt="m"><area nohref></map>',
            '<link rel="stylesheet" href="/s.css"><link rel="alternate" hreflang="de" href="/de/">'
            '<link rel="icon" href="/favicon.ico">',
        ),
        ["http://a.test/de/", "http://i.test/x", "http://a.test/m"],
    ),
    Case(
        "link elements: navigation is followed, whatever the case and spacing of rel",
        html(
            "",
            '<link rel="next" href="p3"><link rel=" Prev " href="p1"><link rel="canonical" href="/c">'
            '<link rel="up start" href="/"><link rel="alternate" media="print" href="/print">'
            '<link rel="ALTERNATE" type="Text/HTML; charset=utf-8" href="/m/"><link rel="alternate" type="" href="/e">'
            '<link rel="alternate" type="application/xhtml+xml" href="/x"><link rel="help license" href="/help">'
            '<link rel="first" href="p0"><link rel="last" href="p9"><link rel="index" href="/i">'
            '<link rel="next nofollow" href="/n">',
        ),
        [
            "http://a.test/dir/p3", "http://a.test/dir/p1", "http://a.test/c", "http://a.test/",
            "http://a.test/print", "http://a.test/m/", "http://a.test/e", "http://a.test/x", "http://a.test/help",
            "http://a.test/dir/p0", "http://a.test/dir/p9", "http://a.test/i",
        ],
        nofollow=1,
    ),
    Case(
        "link elements: resources, endpoints, feeds, rev and no rel are not followed",
        html(
            '<a href="/a">a</a>',
            '<link rel="stylesheet" href="/s.css"><link rel="alternate stylesheet" title="big" href="/big.css">'
            '<link rel="icon" href="/i.ico"><link rel="shortcut icon" href="/f.ico"><link rel="alternate icon" href="/a.ico">'
            '<link rel="apple-touch-icon" href="/t.png"><link rel="preload" as="font" href="/f.woff2">'
            '<link rel="prefetch" href="/next-page"><link rel="modulepreload" href="/m.js">'
            '<link rel="dns-prefetch" href="//cdn.test"><link rel="preconnect" href="//fonts.test">'
            '<link rel="manifest" href="/site.webmanifest"><link rel="pingback" href="/xmlrpc.php">'
            '<link rel="webmention" href="/wm"><link rel="author" href="/humans.txt">'
            '<link rel="search" type="application/opensearchdescription+xml" href="/opensearch.xml">'
            '<link rel="alternate" type="application/rss+xml" href="/feed/">'
            '<link rel="alternate" type="application/atom+xml" href="/atom.xml">'
            '<link rel="alternate" type="application/json+oembed" href="/oembed?url=x">'
            '<link rel="alternate" type="application/json" href="/wp-json/wp/v2/pages/7">'
            '<link rev="made" href="/made"><link rev="next" href="/rev"><link href="/no-rel"><link rel="" href="/empty">',
        ),
        ["http://a.test/a"],
    ),
    Case(
        "link elements: other schemes are never followed, whatever the rel",
        html(
            "",
            '<link rel="author" href="mailto:me@a.test"><link rev="made" href="mailto:me@a.test">'
            '<link rel="alternate" href="mailto:me@a.test"><link rel="help" href="javascript:help()">'
            '<link rel="next" href="ftp://f.test/2"><link rel="alternate" href="tel:+1"><link rel="next" href="/2">',
        ),
        ["http://a.test/2"],
    ),
    Case(
        "link elements: every one when asked (rel *), yet no other scheme",
        html(
            "",
            '<link rel="stylesheet" href="/s.css"><link rel="alternate" type="application/rss+xml" href="/feed/">'
            '<link rev="made" href="mailto:me@a.test"><link href="/no-rel"><link rel="icon nofollow" href="/i.ico">'
            '<link rel="next" href="/2">',
        ),
        ["http://a.test/s.css", "http://a.test/feed/", "http://a.test/no-rel", "http://a.test/2"],
        nofollow=1,
        kwargs={"rules": LinkRules(link_rels=None)},
    ),
    Case(
        "link elements: a chosen list (stylesheets and feeds too, when listed)",
        html(
            "",
            '<link rel="stylesheet" href="/s.css"><link rel="alternate stylesheet" href="/b.css">'
            '<link rel="next" href="/2"><link rel="alternate" hreflang="de" href="/de/">',
        ),
        ["http://a.test/s.css", "http://a.test/b.css"],
        kwargs={"rules": LinkRules(link_rels=frozenset({"stylesheet"}))},
    ),
    Case(
        "query parameters sorted by name, in links, the base and a meta refresh",
        html(
            '<a href="?b=2&a=1">q</a><a href="/s?z=%26&y=1+2&z=0">s</a><a href="http://b.test/x?b&a">x</a>',
            '<base href="/base?d=4&c=3"><meta http-equiv="refresh" content="5; url=/r?y=1&x=2">',
        ),
        [
            "http://a.test/r?x=2&y=1", "http://a.test/base?a=1&b=2", "http://a.test/s?y=1+2&z=%26&z=0",
            "http://b.test/x?a&b",
        ],
        base="http://a.test/base?c=3&d=4",
        meta_refresh="http://a.test/r?x=2&y=1",
    ),
    Case(
        "query parameters in their order when sort_query is off",
        html(
            '<a href="?b=2&a=1">q</a><a href="/s?z=%26&y=1+2&z=0">s</a><a href="http://b.test/x?b&a">x</a>',
            '<base href="/base?d=4&c=3"><meta http-equiv="refresh" content="5; url=/r?y=1&x=2">',
        ),
        [
            "http://a.test/r?y=1&x=2", "http://a.test/base?b=2&a=1", "http://a.test/s?z=%26&y=1+2&z=0",
            "http://b.test/x?b&a",
        ],
        base="http://a.test/base?d=4&c=3",
        meta_refresh="http://a.test/r?y=1&x=2",
        kwargs={"rules": LinkRules(sort_query=False)},
    ),
    Case(
        "backslashes are slashes before the link is joined (WHATWG)",
        html('<a href="\\">root</a><a href="\\x.html">x</a><a href="\\\\evil.test\\y">y</a><a href="s\\t">t</a>'),
        ["http://a.test/", "http://a.test/x.html", "http://evil.test/y", "http://a.test/dir/s/t"],
    ),
    Case(
        "duplicates and fragments: first occurrence kept, the page itself kept",
        html(
            '<a href="x#1">x</a><a href="#top">top</a><a href="x#2">x</a><a href="x">x</a>'
            '<a href="page.html">self</a><a href="">self</a>'
        ),
        ["http://a.test/dir/x", URL],
    ),
    Case(
        "other schemes and garbage are skipped",
        html(
            '<a href="javascript:void(0)">j</a><a href=" JavaScript:x">j</a><a href="mailto:a@b.test">m</a>'
            '<a href="tel:+1">t</a><a href="data:text/html,x">d</a><a href="ftp://f.test/">f</a>'
            '<a href="http://">empty</a><a href="http://a.test:99999/">port</a><a>no href</a>'
            '<a href="//bad host/">b</a><a href="/ok">ok</a>'
        ),
        ["http://a.test/ok"],
    ),
    Case(
        "whitespace, case and entities in attributes",
        b'<A HREF="  /x  ">x</A><a href="/a\nb\tc">a</a><a href="/q?a=1&amp;b=2">q</a><a href="/caf&eacute;">c</a>',
        ["http://a.test/x", "http://a.test/abc", "http://a.test/q?a=1&b=2", "http://a.test/caf%C3%A9"],
    ),
    Case(
        "broken HTML",
        b'<div><p><a href=/a>a<a href=/b>b</div></div></span><table><tr><td><a href="/c">c</table>'
        b'<a href=\'/d\' class=x>d<a href="/e"title="t">e<!-- <a href="/hidden"> -->'
        b'<script>document.write("<a href=\\"/scripted\\">")</script><a href="/f',
        ["http://a.test/a", "http://a.test/b", "http://a.test/c", "http://a.test/d", "http://a.test/e"],
    ),
    Case(
        "meta refresh is a link",
        html('<a href="/a">a</a>', "<meta http-equiv=\"Refresh\" content=\"0; URL='../next page'\">"),
        ["http://a.test/next%20page", "http://a.test/a"],
        meta_refresh="http://a.test/next%20page",
    ),
    Case(
        "meta refresh without a URL reloads: no link",
        html('<a href="/a">a</a>', '<meta http-equiv="refresh" content="30">'),
        ["http://a.test/a"],
    ),
    Case(
        "meta refresh on a nofollow page is reported, not followed",
        html("", '<meta name="robots" content="nofollow"><meta http-equiv="refresh" content="0;url=/n">'),
        [],
        nofollow=1,
        meta_refresh="http://a.test/n",
    ),
    Case(
        "title",
        html('<a href="/a">a</a>', "<title>\n  Caf\u00e9 &amp;\n Bar </title>"),
        ["http://a.test/a"],
        title="Caf\u00e9 & Bar",
    ),
    # encodings
    Case(
        "charset from Content-Type",
        b'<a href="/caf\xe9">caf\xe9</a>',
        ["http://a.test/caf%C3%A9"],
        kwargs={"content_type": 'text/html; charset="ISO-8859-1"'},
    ),
    Case(
        "encoding argument wins over Content-Type",
        '<a href="/\u0430">x</a>'.encode("koi8-r"),
        ["http://a.test/%D0%B0"],
        kwargs={"content_type": "text/html; charset=utf-8", "encoding": "KOI8-R"},
    ),
    Case(
        "meta charset",
        b'<html><head><meta charset="windows-1251"></head><a href="/\xe0">x</a></html>',
        ["http://a.test/%D0%B0"],
    ),
    Case(
        "meta http-equiv Content-Type, Shift_JIS",
        b'<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">'
        + '<a href="/日本?q=語">x</a>'.encode("shift_jis"),
        ["http://a.test/%E6%97%A5%E6%9C%AC?q=%E8%AA%9E"],
    ),
    Case(
        "a readable meta charset=utf-16 means UTF-8",
        b'<meta charset="utf-16"><a href="/caf\xc3\xa9">x</a>',
        ["http://a.test/caf%C3%A9"],
    ),
    Case(
        "UTF-16 with a byte-order mark",
        '<a href="/caf\u00e9">x</a><a href="/b">b</a>'.encode("utf-16"),
        ["http://a.test/caf%C3%A9", "http://a.test/b"],
        kwargs={"content_type": "text/html"},
    ),
    Case(
        "UTF-8 byte-order mark wins over a wrong Content-Type",
        b'\xef\xbb\xbf<a href="/caf\xc3\xa9">x</a>',
        ["http://a.test/caf%C3%A9"],
        kwargs={"content_type": "text/html; charset=iso-8859-1"},
    ),
    Case(
        "invalid UTF-8 does not stop the parser",
        b'<a href="/a">\xff\xfe\xc3</a> \x80\x80 <a href="/b\xff">b</a><a href="/c">c</a>',
        ["http://a.test/a", "http://a.test/b%EF%BF%BD", "http://a.test/c"],
        kwargs={"content_type": "text/html; charset=utf-8"},
    ),
    Case(
        "invalid bytes in a declared single-byte or multibyte encoding",
        b'<a href="/a">\x81\x8d</a><a href="/b">\xff\xff\x81</a><a href="/c">c</a>',
        ["http://a.test/a", "http://a.test/b", "http://a.test/c"],
        kwargs={"content_type": "text/html; charset=shift_jis"},
    ),
    Case(
        "unknown charset label: sniffed as UTF-8",
        b'<a href="/caf\xc3\xa9">x</a>',
        ["http://a.test/caf%C3%A9"],
        kwargs={"content_type": "text/html; charset=x-bogus", "encoding": "base64"},
    ),
    Case(
        "no declaration, not UTF-8: windows-1252",
        b'<a href="/caf\xe9\x80">x</a>',
        ["http://a.test/caf%C3%A9%E2%82%AC"],
    ),
    Case(
        "an XML declaration does not override the encoding",
        b'<?xml version="1.0" encoding="iso-8859-1"?><html><a href="/caf\xc3\xa9">x</a></html>',
        ["http://a.test/caf%C3%A9"],
        kwargs={"content_type": "application/xhtml+xml; charset=utf-8"},
    ),
    # nothing to parse
    Case("empty body", b"", []),
    Case("blank body", b" \r\n\t ", []),
    Case("comment only", b"<!-- nothing -->", []),
    Case("binary", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00<a href=/x>", []),
    Case("text", b"just some text, no markup at all", []),
]


def check(case: Case, parsed: ParsedPage) -> None:
    assert parsed.links == case.links
    assert parsed.nofollow == case.nofollow
    assert parsed.base == case.base
    assert parsed.meta_refresh == case.meta_refresh
    if case.title is not None:
        assert parsed.title == case.title


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_whole_body(case: Case) -> None:
    check(case, extract_links(case.body, URL, **case.kwargs))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_tree_walk_finds_the_same_links(case: Case) -> None:
    parsed = extract_links(case.body, URL, want_context=True, want_document=True, **case.kwargs)
    check(case, parsed)
    assert parsed.contexts is not None and len(parsed.contexts) == len(parsed.links)


def all_canonical(case: Case, links: list[str]) -> bool:
    sort_query = case.kwargs.get("rules", LinkRules()).sort_query
    return all(canonicalize(link, sort_query=sort_query) == link for link in links)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_truncated_body_never_raises(case: Case) -> None:
    for cut in range(len(case.body)):
        for want in (False, True):
            parsed = extract_links(case.body[:cut], URL, want_context=want, **case.kwargs)
            assert all_canonical(case, parsed.links)
            assert len(parsed.links) <= len(case.links) + 1  # at most a cut-short last link


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_trailing_garbage_never_raises(case: Case) -> None:
    rng = random.Random(case.name)
    for garbage in (b"\xff\xfe\xfd garbage <<<>>> \x80", b"</html></body>", bytes(rng.randrange(256) for _ in range(300))):
        for want in (False, True):
            parsed = extract_links(case.body + garbage, URL, want_context=want, **case.kwargs)
            assert all_canonical(case, parsed.links)
    if case.body.endswith(b"</html>"):  # links of a complete page come first, whatever follows
        parsed = extract_links(case.body + b"\xff\xfe garbage <<>> \x80", URL, **case.kwargs)
        assert parsed.links[: len(case.links)] == case.links


CONTEXT_PAGE = b"""<!DOCTYPE html>
<html><head><title>Known</title><link rel="stylesheet" href="/s.css"><link rel="next" href="/next"></head>
<body class="home">
  <div class="main  wide">
    <ul class="list">
      <li><a class="item" href="/one">  First
         <b>link</b>  </a></li>
      <li><a href="/two"><img src="/i.png" alt="pic"></a></li>
      <li><a class="item" href="/one">duplicate</a></li>
    </ul>
    <map name="m"><area href="/area" alt=" Area  text "></map>
    <iframe src="/frame"></iframe>
  </div>
  <p><a href="/three">Third <!-- not text --> one</a></p>
</body></html>"""


def test_contexts_of_a_known_page() -> None:
    parsed = extract_links(CONTEXT_PAGE, URL, want_context=True)
    assert parsed.links == [
        "http://a.test/next",
        "http://a.test/one",
        "http://a.test/two",
        "http://a.test/area",
        "http://a.test/frame",
        "http://a.test/three",
    ]
    assert parsed.contexts == [
        LinkContext("link", "html/head/link", ""),
        LinkContext("a", "html/body.home/div.main.wide/ul.list/li/a.item", "First link"),
        LinkContext("a", "html/body.home/div.main.wide/ul.list/li/a", ""),
        LinkContext("area", "html/body.home/div.main.wide/map/area", "Area text"),
        LinkContext("iframe", "html/body.home/div.main.wide/iframe", ""),
        LinkContext("a", "html/body.home/p/a", "Third one"),
    ]
    assert parsed.title == "Known"
    assert parsed.document is None


def test_document_when_asked() -> None:
    parsed = extract_links(CONTEXT_PAGE, URL, want_document=True)
    assert parsed.contexts is None
    assert parsed.document is not None and parsed.document.tag == "html"
    assert parsed.document.findtext(".//title") == "Known"
    assert extract_links(b"", URL, want_document=True).document is None


def test_default_has_no_contexts_nor_document() -> None:
    parsed = extract_links(CONTEXT_PAGE, URL)
    assert parsed.contexts is None and parsed.document is None


def test_invalid_page_url() -> None:
    assert extract_links(b'<a href="/x">x</a>', "mailto:x@y").links == []


@pytest.mark.parametrize(
    ("location", "url", "expected"),
    [
        ("/next", "http://a.test/x/y", "http://a.test/next"),
        ("next?a=1#f", "http://a.test/x/y", "http://a.test/x/next?a=1"),
        ("https://B.test:443/", "http://a.test/", "https://b.test/"),
        ("//c.test", "https://a.test/", "https://c.test/"),
        ("  /sp ace ", "http://a.test/", "http://a.test/sp%20ace"),
        ("javascript:x", "http://a.test/", None),
        ("http://[bad/", "http://a.test/", None),
        ("http://d.test/", "not a url", "http://d.test/"),
        ("/relative", "not a url", None),
        ("\\\\evil.test\\x", "http://a.test/", "http://evil.test/x"),
        ("/s?b=2&a=1", "http://a.test/", "http://a.test/s?a=1&b=2"),
        ("http://d.test/?b=2&a=1", "not a url", "http://d.test/?a=1&b=2"),
    ],
)
def test_parse_location(location: str, url: str, expected: str | None) -> None:
    assert parse_location(location, url) == expected


def test_parse_location_keeps_the_query_order_when_asked() -> None:
    assert parse_location("/s?b=2&a=1", "http://a.test/?y&x", sort_query=False) == "http://a.test/s?b=2&a=1"
    assert parse_location("?b=2&a=1", "http://a.test/p", sort_query=False) == "http://a.test/p?b=2&a=1"
    assert parse_location("http://d.test/?b=2&a=1", "not a url", sort_query=False) == "http://d.test/?b=2&a=1"


def test_link_rules_from_the_config() -> None:
    default = configuration.link_rules(configuration.load(None))
    assert default == LinkRules() and default.link_rels == frozenset(PAGE_RELS)
    assert "stylesheet" not in PAGE_RELS and "search" not in PAGE_RELS and "author" not in PAGE_RELS
    assert configuration.link_rules(
        configuration.load(None, ['scope.link_rels=["*"]', "urls.sort_query=false", "scope.follow_nofollow=true"])
    ) == LinkRules(follow_nofollow=True, link_rels=None, sort_query=False)
    assert configuration.link_rules(configuration.load(None, ['scope.link_rels=["Next", "STYLESHEET"]'])).link_rels == {
        "next", "stylesheet"
    }
    assert configuration.link_rules(configuration.load(None, ["scope.link_rels=[]"])).link_rels == frozenset()


# -- properties ----------------------------------------------------------------------------------

PIECES = [
    "<a href='", "<a href=", "<A HREF=\"", "<area href=", "<link href=", "<frame src=", "<iframe src=",
    "<base href=", "<link rel=next href=", "<link rel='alternate stylesheet' href=", "type=application/rss+xml ",
    "rel=alternate ", "?b=2&a=1", "\\", "<meta name=robots content=nofollow>", "<meta http-equiv=refresh content='0;url=",
    "<meta charset=", "rel=nofollow ", "'>", '">', ">", "</a>", "<div class='x y'>", "</div>", "<p>",
    "<!--", "-->", "<script>", "</script>", "<title>", "</title>", "/x", "../y", "?q", "#f", "//h.test/",
    "javascript:", "é", "\x00", "\xff", " ", "\n", "&amp;", "&", "<", "utf-16", "latin1", "<![CDATA[",
]  # fmt: skip
documents = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


@given(documents, st.sampled_from(["utf-8", "latin-1", "utf-16"]), st.sampled_from([None, "text/html; charset=utf-8"]))
@settings(max_examples=300, deadline=None)
def test_any_markup_never_raises_and_both_walks_agree(text: str, codec: str, content_type: str | None) -> None:
    body = text.encode(codec, "replace")
    fast = extract_links(body, URL, content_type=content_type)
    tree = extract_links(body, URL, content_type=content_type, want_context=True, want_document=True)
    assert fast.links == tree.links
    assert fast.nofollow == tree.nofollow
    assert fast.meta_refresh == tree.meta_refresh
    assert tree.contexts is not None and len(tree.contexts) == len(tree.links)
    assert all(canonicalize(link) == link for link in fast.links)
    assert len(set(fast.links)) == len(fast.links)


@given(st.binary(max_size=2000), st.sampled_from([None, "text/html; charset=utf-8", "text/html; charset=gbk"]))
@settings(max_examples=300, deadline=None)
def test_binary_never_raises(body: bytes, content_type: str | None) -> None:
    for want in (False, True):
        parsed = extract_links(body, URL, content_type=content_type, want_context=want, want_document=want)
        assert all(canonicalize(link) == link for link in parsed.links)


# -- end to end: what `crawl run` fetches from the in-vitro web ----------------------------------


@pytest.mark.parametrize(
    ("settings", "sorted_query"),
    [([], True), (["urls.sort_query=false", 'scope.link_rels=["*"]'], False)],
    ids=["defaults", "unsorted, every link"],
)
def test_the_crawler_fetches_one_url_per_parameter_set_and_no_stylesheet(
    tmp_path: Path, settings: list[str], sorted_query: bool
) -> None:
    web = WebThread(WebParams(hosts=3, hosts_per_ip=3, mean_pages=6, max_pages=10), tmp_path / "requests.jsonl")
    home = web.web.seeds[0]
    seeds = [home, home + "?id=8&cat=x", home + "?cat=x&id=8", home + "?b=%26&a=1&b=2"]
    try:
        result = run_crawl(tmp_path / "out", seeds, dns=web.web.dns_address,
                           settings=["politeness.host_delay=0.01", "politeness.ip_delay=0", *settings])
    finally:
        log = web.stop()
    requested = [url_of(r, web.model.port) for r in page_requests(log)]
    assert len(requested) == len(set(requested)) > 10

    def seed_queries(urls: set[str]) -> set[str]:  # the in-vitro web links utm_source variants of `/` too
        return {u.removeprefix(home) for u in urls if u.startswith(home + "?") and "utm_source" not in u}

    stylesheets = {u for u in requested if u.endswith(STYLESHEET)}
    if sorted_query:
        assert seed_queries(set(requested)) == {"?a=1&b=%26&b=2", "?cat=x&id=8"}
        assert not stylesheets, "a <link rel=stylesheet> is not a page"
    else:
        assert seed_queries(set(requested)) == {"?b=%26&a=1&b=2", "?cat=x&id=8", "?id=8&cat=x"}
        assert len(stylesheets) == 3, "link_rels = ['*'] follows every <link>"
    stored = set()
    for path in (result.out / "warc").glob("*.warc.gz"):
        with path.open("rb") as f:
            stored |= {r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(f) if r.rec_type == "response"}
    assert seed_queries(stored) == seed_queries(set(requested))
