"""Hostile resources of the in-vitro web: decompression bombs, an oversized page, broken encodings and markup.

Role: what an archival crawler must survive without stopping or running out of memory
(issue 5). A host chosen by ``WebParams.hostile_share`` links them from its home page:

- ``/hostile/bomb-gzip.html``, ``-deflate``, ``-br``: ``bomb_bytes`` of HTML (mostly spaces)
  sent with that Content-Encoding: about a thousandth of the size on the wire for gzip and
  deflate, a few hundred bytes for brotli;
- ``/hostile/big.html``: ``big_bytes`` of HTML, never gzipped by the server;
- ``/hostile/bad-gzip.html``: ``Content-Encoding: gzip`` over bytes that are not gzip;
- ``/hostile/bad-charset.html``: an unknown charset and bytes that are not UTF-8;
- ``/hostile/broken.html``: unclosed and misnested tags, NULs, an unterminated comment,
  10,000 nested ``<div>``s.

Pure and deterministic like the model; the bombs are compressed once per process (``lru_cache``),
which costs about 0.4 s for 64 MiB.
"""

from __future__ import annotations

import functools
import zlib

import brotli

PREFIX = "/hostile/"
TARGETS = tuple(
    PREFIX + name
    for name in ("bomb-gzip.html", "bomb-deflate.html", "bomb-br.html", "big.html", "bad-gzip.html",
                 "bad-charset.html", "broken.html")
)
_CHUNK = 1 << 20
_HEAD = b"<!DOCTYPE html><html><head><title>bomb</title></head><body><p>"
_TAIL = b"</p></body></html>"


@functools.lru_cache(maxsize=8)
def bomb(coding: str, size: int) -> bytes:
    """``size`` bytes of HTML compressed with ``coding`` (gzip, deflate or br), built chunk by chunk."""
    filler = b" " * _CHUNK
    if coding == "br":
        compressor = brotli.Compressor(quality=5)
        compress, finish = compressor.process, compressor.finish
    else:
        z = zlib.compressobj(9, zlib.DEFLATED, 31 if coding == "gzip" else 15)
        compress, finish = z.compress, z.flush
    out = [compress(_HEAD)]
    left = max(0, size - len(_HEAD) - len(_TAIL))
    while left:
        n = min(left, _CHUNK)
        out.append(compress(filler[:n]))
        left -= n
    out += [compress(_TAIL), finish()]
    return b"".join(out)


def big_page(size: int) -> bytes:
    paragraph = b"<p>" + b"An oversized page: the crawler stores the first bytes and marks the rest as cut. " * 12 + b"</p>\n"
    body = _HEAD + paragraph * (size // len(paragraph) + 1)
    return body[: max(0, size - len(_TAIL))] + _TAIL


BROKEN = (  # its one link, home, comes first: what follows may end a parser's reading
    b"<!DOCTYPE html><html><head><title>broken</title></head><body><p><b><i>misnested</b></i>"
    b"<a href='/'>home</p>\x00" + b"<div>" * 10_000 + b"\x00\xff\xfe<table><tr><td>"
    b"<!-- an unterminated comment <a href='/never'>"
)


def respond(target: str, bomb_bytes: int, big_bytes: int) -> tuple[list[tuple[str, str]], bytes] | None:
    """(headers, body) of a hostile resource, or None if ``target`` is not one."""
    html = ("Content-Type", "text/html; charset=utf-8")
    name = target.removeprefix(PREFIX)
    if name.startswith("bomb-") and target in TARGETS:
        coding = name[5:].removesuffix(".html")
        return [html, ("Content-Encoding", coding)], bomb(coding, bomb_bytes)
    if name == "big.html":
        return [html], big_page(big_bytes)
    if name == "bad-gzip.html":
        return [html, ("Content-Encoding", "gzip")], b"\x1f\x8b this is not gzip at all " * 40
    if name == "bad-charset.html":
        return [("Content-Type", "text/html; charset=x-no-such-charset")], b"<html><body><p>\xff\xfe\xc3( caf\xe9 \xed\xa0\x80</p></body></html>"
    if name == "broken.html":
        return [html], BROKEN
    return None
