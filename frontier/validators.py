"""A revisit's validators: what its last fetch said (ETag, Last-Modified), carried with the revisit.

A conditional GET (RFC 9110 §13.1) sends back ``If-None-Match: ETAG`` and
``If-Modified-Since: DATE`` from the validators of the URL's last fetch. Rather than a table of
every URL's validators, which would grow with the crawl, they travel with the revisit itself:
an item of the revisit schedule (memory, disk, checkpoint) and of a host's queue of due
revisits is ``URL-or-path NUL ETAG NUL LAST-MODIFIED``, or the bare URL or path when its last
fetch gave none. A canonical URL holds no NUL (``frontier/urls.py`` percent-encodes control
characters) and a header value holds none either (RFC 9110 §5.5), so the split is exact.

Pure: bytes in, bytes out.
"""

from __future__ import annotations

from collections.abc import Mapping

_NUL = b"\x00"


def encode(etag: str | None, last_modified: str | None) -> bytes:
    """The validators of a response, b"" when it has none."""
    if not etag and not last_modified:
        return b""
    return (etag or "").encode("latin-1", "replace") + _NUL + (last_modified or "").encode("latin-1", "replace")


def of_response(headers: Mapping[str, str], sent: bytes = b"") -> bytes:
    """The validators to send next time: the response's (lower-case header names), each one it
    lacks taken from those ``sent`` (a 304 need not repeat them)."""
    etag, last_modified = headers.get("etag"), headers.get("last-modified")
    if sent and not (etag and last_modified):
        old_etag, old_modified = sent.split(_NUL, 1)
        etag = etag or old_etag.decode("latin-1") or None
        last_modified = last_modified or old_modified.decode("latin-1") or None
    return encode(etag, last_modified)


def request_headers(validators: bytes) -> list[tuple[str, str]]:
    """The conditional request's headers for ``validators`` (none for b"")."""
    if not validators:
        return []
    etag, last_modified = validators.split(_NUL, 1)
    headers = [("If-None-Match", etag.decode("latin-1"))] if etag else []
    if last_modified:
        headers.append(("If-Modified-Since", last_modified.decode("latin-1")))
    return headers


def attach(item: bytes, validators: bytes) -> bytes:
    """A URL or path with its validators (the item itself when there are none)."""
    return item + _NUL + validators if validators else item


def detach(item: bytes) -> tuple[bytes, bytes]:
    """(URL or path, validators) of an item :func:`attach` made."""
    bare, _, validators = item.partition(_NUL)
    return bare, validators
