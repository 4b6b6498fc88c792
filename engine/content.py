"""Undoing Content-Encoding for parsing, within a size limit (so a gzip bomb costs nothing).

The WARC keeps the body as transferred; parsers and policies see the decoded payload.
"""

from __future__ import annotations

import zlib


def decode_body(body: bytes, content_encoding: str | None, limit: int) -> bytes:
    """The payload with gzip/deflate removed, cut at ``limit`` bytes; undecodable data gives b""."""
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("", "identity"):
        return body[:limit]
    if encoding in ("gzip", "x-gzip", "deflate"):
        for wbits in (47, -15):  # 47: gzip or zlib header, auto-detected; -15: raw deflate
            try:
                return zlib.decompressobj(wbits).decompress(body, limit)
            except zlib.error:
                continue
    return b""
