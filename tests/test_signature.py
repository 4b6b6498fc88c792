"""store/signature.py: near-identical pages (attributes, digits, case, whitespace) share a signature; others do not.

The normalisation is C (store/_signature.c); the regular expressions it replaced are the oracle here, so
signatures stored before it still match.
"""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from store._signature import simplify_html
from store.signature import exact_signature, html_signature

_TAG = re.compile(rb"<(/?[a-z0-9]*)[^>]*>")


def simplified_by_regex(payload: bytes) -> tuple[bytes, bool]:
    """What store.signature computed before the C: tags to their names, digits and whitespace dropped."""
    lowered = payload.lower()
    return b"<".join(_TAG.split(lowered)).translate(None, b"0123456789 \t\n\r\f\v"), b"frame" in lowered


# markup's bytes, in both cases, with those that matter to the normalisation over-represented
MARKUP = st.lists(st.sampled_from([b"<", b">", b"/", b"<!--", b"-->", b"a", b"B", b"h1", b"0", b"9", b" ", b"\t",
                                   b"\n", b"\x0b", b"=", b'"', b"'", b"frame", b"FrAmE", b"fram", b"f", b"\xe9", b"\x00",
                                   b"<iframe src=", b"<P CLASS=x>", b"</DIV>"]), max_size=40).map(b"".join)


@given(st.one_of(MARKUP, st.binary(max_size=200)))
@example(b"")
@example(b"a<b")
@example(b"</>")
@example(b"<//x>")
@example(b"<a <b>c>d<e")
@example(b"xxFRAMe")
@example(b"<H1 id=3>T 1</H1>")
def test_the_c_normalisation_writes_what_the_regular_expressions_did(payload: bytes) -> None:
    assert simplify_html(payload) == simplified_by_regex(payload)


def test_the_c_normalisation_of_in_vitro_pages() -> None:
    from bench.store_bench import pages

    bodies = [exchange.body for exchange, _ in pages(200)]
    assert sum(map(len, bodies)) > 200 * 10_000
    assert [simplify_html(b) for b in bodies] == [simplified_by_regex(b) for b in bodies]

TAGS = st.sampled_from(["p", "div", "a", "span", "h1", "li", "td"])
WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzé", min_size=1, max_size=12)
ATTRS = st.lists(st.tuples(st.sampled_from(["class", "href", "id", "style", "data-x"]),
                           st.text(alphabet="abc123/._-", max_size=10)), max_size=3)
DOCUMENT = st.lists(st.tuples(TAGS, st.lists(WORDS, min_size=1, max_size=5)), min_size=1, max_size=12)


def render(document: list[tuple[str, list[str]]], attrs: list[list[tuple[str, str]]], digits: list[str], upper: bool) -> bytes:
    parts = ["<!DOCTYPE html><html><body>\n"]
    for k, (tag, words) in enumerate(document):
        a = "".join(f' {n}="{v}"' for n, v in attrs[k % len(attrs)]) if attrs else ""
        name = tag.upper() if upper else tag
        text = f" {digits[k % len(digits)]} ".join(words) if digits else " ".join(words)
        parts.append(f"<{name}{a}>{text}</{name}>\n")
    return "".join(parts).encode()


@given(DOCUMENT, st.lists(ATTRS, min_size=1, max_size=4), st.lists(ATTRS, min_size=1, max_size=4),
       st.lists(st.from_regex(r"[0-9]{1,6}", fullmatch=True), max_size=4), st.booleans())
def test_pages_that_differ_in_attributes_digits_case_and_whitespace_collide(
    document: list, attrs1: list, attrs2: list, digits: list, upper: bool
) -> None:
    plain = render(document, [], [], False)
    variant = render(document, attrs2, digits, upper).replace(b"\n", b"\r\n  ")
    assert html_signature(render(document, attrs1, [], False)) == html_signature(plain) == html_signature(variant)


@given(DOCUMENT, DOCUMENT)
def test_pages_with_other_words_or_other_tags_do_not(first: list, second: list) -> None:
    a, b = render(first, [], [], False), render(second, [], [], False)
    normal = lambda d: b"".join(b.lower() for b in d.split())  # noqa: E731
    if normal(a) != normal(b):
        assert html_signature(a) != html_signature(b)


def test_frames_keep_their_source() -> None:
    page = b'<html><frameset><frame src="/left{}.html"><iframe class="x" src="/right.html"></frameset></html>'
    assert html_signature(page.replace(b"{}", b"1")) != html_signature(page.replace(b"{}", b"2"))
    assert html_signature(page.replace(b"{}", b"1")) == html_signature(page.replace(b"{}", b"1").replace(b'class="x" ', b""))


def test_exact_signature_sees_every_byte() -> None:
    assert exact_signature(b"page 1") != exact_signature(b"page 2")
    assert len(exact_signature(b"")) == len(html_signature(b"")) == 16
