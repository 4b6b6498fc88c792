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
xxh3 digests: the cost is the normalisation (about 85 µs for a 16 KB page, measured by
``bench/store_bench.py``), not the hash.

Why regular expressions: the normalisation is one ``re.split`` that returns text and tag
names in one C-level pass; a ``re.sub`` with a group in its template costs five times as
much (Python expands the template per tag), and a parser (lxml) ten times.
"""

from __future__ import annotations

import re

import xxhash

# A tag, a closing tag, a comment or a declaration: only the name (group 1) survives the split.
_TAG = re.compile(rb"<(/?[a-z0-9]*)[^>]*>")
_FRAME_SRC = re.compile(rb"""<i?frame\b[^>]*?\bsrc\s*=\s*["']?([^"'\s>]*)""")
_DROPPED = b"0123456789 \t\n\r\f\v"


def html_signature(payload: bytes) -> bytes:
    """BUbiNG's near-duplicate signature of an HTML page (16 bytes)."""
    lowered = payload.lower()
    simplified = b"<".join(_TAG.split(lowered)).translate(None, _DROPPED)
    if b"frame" in lowered:  # frames carry their content in src: keep it, digits and all
        simplified += b"\0" + b"\0".join(_FRAME_SRC.findall(lowered))
    return xxhash.xxh3_128_digest(simplified)


def exact_signature(payload: bytes) -> bytes:
    """The signature of content compared byte for byte (16 bytes)."""
    return xxhash.xxh3_128_digest(payload)
