"""store/signature.py: near-identical pages (attributes, digits, case, whitespace) share a signature; others do not."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from store.signature import exact_signature, html_signature

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
