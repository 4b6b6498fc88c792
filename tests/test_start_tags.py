"""engine/_start_tags.c, the scan behind link extraction: lxml (libxml2 2.14, an HTML5 tokenizer) is the oracle.

Each test feeds the same bytes to the scan and to an lxml parser whose target notes the start tags in ``TAGS``
with their attributes, and asserts the two lists are equal: names lowered, the first of two attributes of one
name, character references in values decoded by ``unescape_attribute``, nothing inside comments, doctypes,
script, style, title, textarea and the other raw text elements.
"""

from __future__ import annotations

import tracemalloc
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from engine import parse
from engine._start_tags import TAGS, start_tags
from engine.parse import unescape_attribute


class _Notes:
    """An lxml parser target that keeps the start tags the scan is meant to find."""

    def __init__(self) -> None:
        self.tags: list[tuple[str, dict[str, str]]] = []

    def start(self, tag: str, attributes: Any) -> None:
        if tag in TAGS:
            self.tags.append((tag, dict(attributes)))

    def close(self) -> list[tuple[str, dict[str, str]]]:
        tags, self.tags = self.tags, []
        return tags


_ORACLE = etree.HTMLParser(encoding="utf-8", no_network=True, collect_ids=False, target=_Notes())  # type: ignore[arg-type]


def by_lxml(data: bytes) -> list[tuple[str, dict[str, str]]]:
    try:  # the target's close() is what fromstring returns
        return cast(list[tuple[str, dict[str, str]]], etree.fromstring(data, _ORACLE))
    except etree.LxmlError:  # lxml raises on a document with no element at all
        return []


def test_the_scan_wants_the_tags_the_collector_reads() -> None:
    assert set(TAGS) == set(parse._TAGS)


CASES = [
    # names, attributes, values
    "<a href=x>", "<A HREF='x'>", "<LINK REL=next HREF=a>", "<a HREF=1 href=2>", "<a/href=x>", "<a href = '20' >",
    "<a =x href=10>", "<a href='11'x href=12>", "<a<b href=13>", "<a hréf=x>", "<a href='é'>", "<a\x00 href=8>",
    "<a href='\x00'>", "<a href=a\rb>", "<a href='a\r\nb'>", "<a href='a\rb'>", '<a href="x""><a href=31>',
    "<a href=9 / >", "<a href=x/>", "<a href>", "<a href=>", "<a href= >", "<a href x>", "<meta name=robots\tcontent=none>",
    # input that ends inside a tag
    "<a href=14<", "<a href=15", "<a href='16", "<a href", "<a", "<a href=x /",
    # character references in values
    "<a href='?a=1&copy=2&amp;b&lt;c&notin;&not;x&#x41;&#65;&#0;&#x80;'>", "<a href=&quot;x>", "<a href=x&amp>",
    "<a href='x&ampy'>", "<a href='&AMP;&Amp;&AMP'>", "<a href=&lt>", "<a href='&lt=x'>", "<a href='&ltx'>",
    "<a href='&#x110000;&#xD800;&#9999999999;'>", "<a href='&#128;&#150;&#x9F;&#x81;'>", '<a href="&#1;&#xFFFF;&#x7F;&#13;">',
    '<a href="&notit;&notin&NotEqualTilde;&Aacute&Aacutex">', '<a href="&#x41x&#65x&#xZ&#;&#">', "<a href='&;&&a;'>",
    # what holds no tags
    "<!--><a href=1>", "<!---><a href=2>", "<!-- --!><a href=3>", "<!--x--!x--><a href=4>", "<!--!><a href=4>-->",
    "<!---!><a href=5>-->", "<!----!><a href=6>", "<?x <a href=5>", "<!DOCTYPE <a href=6>", "<![CDATA[<a href=7>]]>",
    "</a href=y><a href=z>", '</x y=">"><a href=7>', "</><a href=1>", "</ a href=2>", "<1 href=17><a href=18>",
    "< a href=19>", "<!<a href=1>", "<!-",
    # raw text elements
    *(f"<{tag}><a href=/x></{tag}><a href=/y>" for tag in (
        "script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "title", "textarea", "plaintext", "svg",
        "math", "template", "select")),
    "<title>x<a href=28></title><a href=29>", "<textarea><a href=30>", "<TITLE>x</Title\n><a href=1>",
    "<title>x</titles><a href=1></title x='>'><a href=2>", "<svg><title><a href=24></title></svg>",
    "<title/><a href=1>", "<style/><a href=1>", "<textarea/><a href=2>", "<plaintext/><a href=3>",
    "<iframe src=x/><a href=4></iframe><a href=5>", "<script x=1 /><a href=6>", "<script/ ><a href=7></script><a href=8>",
    # script data
    "<script>a</script ><a href=33>", "<script>a</script\t><a href=34>", "<script>a</scripts><a href=35></script><a href=36>",
    "<script><!--<script></script><a href=22></script><a href=23>", "<script><!--></script><a href=1>",
    "<script><!--<script>--></script><a href=2>", "<script><!--<scriptx></script><a href=3>",
    "<script><!--<script></script >--></script><a href=4>", "<script>x<!-x</script><a href=5>",
    "<script><!--<script>x</scripty>--></script><a href=6></script><a href=7>", "<script>x</script/><a href=10>",
    # pages of the in-vitro kind
    "<!DOCTYPE html><html><head><title>T</title><base href=/b><link rel=next href=n><meta name=robots content=nofollow>"
    "</head><body><map><area href=/area alt=x></map><frame src=f><iframe src=i></iframe><a rel=nofollow href=/n>x</a>",
]  # fmt: skip


@pytest.mark.parametrize("text", CASES)
def test_the_scan_finds_what_lxml_finds(text: str) -> None:
    data = text.encode()
    assert start_tags(data, unescape_attribute) == by_lxml(data)


def test_an_attribute_value_keeps_query_parameters_that_look_like_references() -> None:
    assert unescape_attribute("?a=1&copy=2&lang=en&amp;x&not;y") == "?a=1&copy=2&lang=en&x¬y"
    assert unescape_attribute("&amp&ampx&amp=") == "&&ampx&amp="
    assert unescape_attribute("&#x26;&#38;&#0;&#x80;&#x81;") == "&&\ufffd€\x81"


PIECES = [
    "<a", "<A", "<area", "<link", "<frame", "<iframe", "<base", "<meta", "<title", "</title", "<script", "</script",
    "</SCRIPT", "<style", "</style", "<textarea", "</textarea", "<xmp", "</xmp", "<plaintext", "<noscript", "<svg",
    " href=", " HREF=", " src=", " rel=", " name=", " content=", "=", "'", '"', "/", ">", "/>", "<", "</", "</a>",
    "<!--", "-->", "--!>", "-", "!", "<!", "<?", "<!DOCTYPE", "<![CDATA[", "&amp;", "&amp", "&", "&lt", "&#38;",
    "&#x26", "&copy=", "&#", "x", "/y", "?q=1&b=2", "é", "\x00", "\r", "\r\n", "\n", "\t", " ", "\f", "<p>", "</p>",
]  # fmt: skip


@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
@settings(max_examples=1500, deadline=None)
def test_on_any_markup_the_scan_finds_what_lxml_finds(text: str) -> None:
    data = text.encode()
    assert start_tags(data, unescape_attribute) == by_lxml(data)


@given(st.binary(max_size=3000))
@settings(max_examples=300, deadline=None)
def test_any_bytes_are_scanned_without_error(data: bytes) -> None:
    for tag, attributes in start_tags(data, unescape_attribute):
        assert tag in TAGS and all(isinstance(value, str) for value in attributes.values())


def test_scanning_and_resolving_leave_no_objects_behind() -> None:
    """Every object the two C modules make is handed over or released: a leak of one per tag or link would show."""
    from frontier.urls import BaseURL

    page = (
        b"<title>t</title><base href=/b/><meta name=robots content=x><link rel=next href='n?b=2&amp;a=1'>"
        b"<a href='x&copy=1' HREF=2 a=1 A=2>x</a><a href=a\xe2\x82\r\n>y</a><script>x</script><a href=\x00>" * 20
    )
    hrefs = ["/a/b?x=1&b=2&a=3", "http://h.test/p?q", "//x.test/", "../x", "?q", "", "#f", "javascript:x", "a b", "%41"] * 10
    base = BaseURL("http://a.test/d/p.html")

    def work() -> None:
        for _ in range(20):
            start_tags(page, unescape_attribute)
            base.resolve_all(hrefs)

    work()
    tracemalloc.start()
    try:
        for _ in range(5):  # what the interpreter keeps for reuse (free lists, caches) is taken here, ~10 KB
            work()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(10):
            work()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 20_000  # 200 scans of 120 tags and 20,000 links: a leaked object each would be 200 KB or more
