"""A page's text for the host quality filter: HTML bytes → :class:`frontier.quality.PageText`.

Pure and cheap on purpose: it runs on each of a host's first ``quality.pages`` pages, on the
crawl's hot path (``engine/pipeline.py``), and in ``crawl learn quality`` on the pages of a
finished crawl, so both see the same words. Regular expressions over the bytes, no tree: the
page's ``<head>`` is skipped (from ``<body``, if there is one), then a body longer than
:data:`SAMPLE` bytes is read at both ends, its first and its last ``SAMPLE/2`` bytes (cut at tag
boundaries): the start (header, navigation, the text's beginning) and the end (where footers,
link lists and comment sections sit), a couple of hundred words at most, so the cost per page is
bounded. ``<script>``, ``<style>`` and comments are removed, tags turned to spaces.
Words are runs of ASCII letters and digits and of non-ASCII bytes (UTF-8 letters stay whole),
lower-cased; no stemming, no stop words (the vocabulary's document-frequency band leaves the
commonest words out of BM25, and they are what the popular-word features count).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from isal import isal_zlib

from frontier.quality import PageText

SAMPLE = 3072  # bytes of a page's body read at most: half from its start, half from its end

_BODY = re.compile(rb"<body\b", re.I)
_HIDDEN = re.compile(rb"<(script|style)\b.*?</\1\s*>|<!--.*?-->", re.S | re.I)
_ANCHOR = re.compile(rb"<a\b[^>]*>(.*?)</a\s*>", re.S | re.I)
_TAG = re.compile(rb"<[^>]*>")
_TITLE = re.compile(rb"<title[^>]*>([^<]*)", re.I)
# bytes → lower case, and everything that is no word byte → a space: one C-level translate, then split
_WORD_BYTES = bytes(
    c + 32 if 65 <= c <= 90 else c if (48 <= c <= 57 or 97 <= c <= 122 or c >= 128) else 32 for c in range(256)
)


def words_of(text: bytes) -> list[bytes]:
    return text.translate(_WORD_BYTES).split()


def page_text(html: bytes, links: Sequence[str] = ()) -> PageText:
    """The visible words and sizes of an HTML page (see the module docstring), with its ``links`` as the
    engine's parser found them (``engine/parse.py``: the page is not parsed twice)."""
    title = _TITLE.search(html, 0, 4096)
    title_words = len(words_of(title.group(1))) if title is not None else 0
    body = _BODY.search(html)
    raw = html[body.start() :] if body is not None else html
    if len(raw) > SAMPLE:
        head, tail = raw[: SAMPLE // 2], raw[-(SAMPLE // 2) :]
        open_tag = head.rfind(b"<")
        if open_tag > head.rfind(b">"):  # the head ends inside a tag
            head = head[:open_tag]
        raw = head + b" " + tail[tail.find(b">") + 1 :]  # the tail starts after the tag it may cut
    chunk = _HIDDEN.sub(b" ", raw)
    anchors = b" ".join(_ANCHOR.findall(chunk))
    words = words_of(_TAG.sub(b" ", chunk))
    text = b" ".join(words)  # the visible text, as its words: markup's whitespace would flatter compression
    return PageText(
        html_bytes=len(raw),
        text_bytes=len(text),
        compressed_bytes=len(isal_zlib.compress(text, 1)) if text else 0,
        title_words=title_words,
        anchor_words=len(words_of(_TAG.sub(b" ", anchors))) if anchors else 0,
        words=words,
        links=links,
    )
