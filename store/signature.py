"""Content signatures: what makes two responses "the same page" for deduplication (pure, no I/O).

BUbiNG hashes a *simplified* HTML page so that near-identical pages collide (peers.md §1.8,
bubing-nadine.md §2.4 "parsing threads"): tags keep their names but lose their attributes
(except the ``src`` of frames and iframes, without which a frameset has no content), digits
are dropped, runs of whitespace collapse. Pages that differ only in a counter, a date, a
session id in their links or a class name then share a signature. Here the page is also
lower-cased (ASCII only, so any encoding survives), which costs less than lower-casing tag
names alone and merges pages that differ only in case; whitespace is removed rather than
collapsed, which orders the same pages together at lower cost.

Other content (and every payload in ``exact`` mode) is hashed as it is. Signatures are 128-bit
xxh3 digests: the cost is the normalisation, not the hash.

Why C: the normalisation was one ``re.split`` returning text and tag names in one pass, then a
``translate``; on the in-vitro web's 16 KB pages it cost ~80 µs a page (a ``re.sub`` with a group
in its template five times that, a parser ten times), about a tenth of the crawler's CPU per page.
``store/_signature.c`` does the same in one pass with byte tables and ``memchr``: ~15 µs, and the
same bytes out (``tests/test_signature.py`` keeps the regular expressions as its oracle), so
signatures stored before it still match.
"""

from __future__ import annotations

import re

import xxhash

from store._signature import simplify_html

_FRAME_SRC = re.compile(rb"""<i?frame\b[^>]*?\bsrc\s*=\s*["']?([^"'\s>]*)""")


def html_signature(payload: bytes) -> bytes:
    """BUbiNG's near-duplicate signature of an HTML page (16 bytes)."""
    simplified, has_frame = simplify_html(payload)
    if has_frame:  # frames carry their content in src: keep it, digits and all
        simplified += b"\0" + b"\0".join(_FRAME_SRC.findall(payload.lower()))
    return xxhash.xxh3_128_digest(simplified)


def exact_signature(payload: bytes) -> bytes:
    """The signature of content compared byte for byte (16 bytes)."""
    return xxhash.xxh3_128_digest(payload)
