"""engine/parse.py: link extraction from one table of pages, fed whole, truncated and with trailing data."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.parse import ParsedPage, extract_links, parse_location
from frontier.page import LinkContext
from frontier.urls import canonicalize

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
        kwargs={"follow_nofollow": True},
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
        kwargs={"follow_nofollow": True},
    ),
    Case(
        "frames",
        b'<html><head><link rel="stylesheet" href="/s.css"></head><frameset><frame src="f1.html">'
        b'<frameset><frame src="f2.html"><frame></frameset></frameset></html>',
        ["http://a.test/s.css", "http://a.test/dir/f1.html", "http://a.test/dir/f2.html"],
    ),
    Case(
        "iframes, area, link elements of every rel",
        html(
            '<iframe src="//i.test/x"></iframe><map><area href="/m" alt="m"><area nohref></map>',
            '<link rel="stylesheet" href="/s.css"><link rel="alternate" hreflang="de" href="/de/">'
            '<link rel="icon" href="/favicon.ico">',
        ),
        ["http://a.test/s.css", "http://a.test/de/", "http://a.test/favicon.ico", "http://i.test/x", "http://a.test/m"],
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


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_truncated_body_never_raises(case: Case) -> None:
    for cut in range(len(case.body)):
        for want in (False, True):
            parsed = extract_links(case.body[:cut], URL, want_context=want, **case.kwargs)
            assert all(canonicalize(link) == link for link in parsed.links)
            assert len(parsed.links) <= len(case.links) + 1  # at most a cut-short last link


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_trailing_garbage_never_raises(case: Case) -> None:
    rng = random.Random(case.name)
    for garbage in (b"\xff\xfe\xfd garbage <<<>>> \x80", b"</html></body>", bytes(rng.randrange(256) for _ in range(300))):
        for want in (False, True):
            parsed = extract_links(case.body + garbage, URL, want_context=want, **case.kwargs)
            assert all(canonicalize(link) == link for link in parsed.links)
    if case.body.endswith(b"</html>"):  # links of a complete page come first, whatever follows
        parsed = extract_links(case.body + b"\xff\xfe garbage <<>> \x80", URL, **case.kwargs)
        assert parsed.links[: len(case.links)] == case.links


CONTEXT_PAGE = b"""<!DOCTYPE html>
<html><head><title>Known</title><link rel="stylesheet" href="/s.css"></head>
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
        "http://a.test/s.css",
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
    ],
)
def test_parse_location(location: str, url: str, expected: str | None) -> None:
    assert parse_location(location, url) == expected


# -- properties ----------------------------------------------------------------------------------

PIECES = [
    "<a href='", "<a href=", "<A HREF=\"", "<area href=", "<link href=", "<frame src=", "<iframe src=",
    "<base href=", "<meta name=robots content=nofollow>", "<meta http-equiv=refresh content='0;url=",
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
