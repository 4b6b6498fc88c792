"""Large ordinary HTML is neither cut by the default body limit nor loses the links past its first megabytes.

A 2.5 MB documentation page was cut at the old 2 MiB default and the links after the cut were
lost; the default is now 16 MiB, and the parser must find a link at the very end of such a page.
"""

from __future__ import annotations

import pytest

from engine.config import Config
from engine.parse import extract_links


def page(size: int) -> bytes:
    paragraph = b"<p>" + b"a long manual page, ordinary text " * 30 + b'<a href="/mid.html">mid</a></p>\n'
    body = b"<html><body>" + paragraph * (size // len(paragraph))
    return body + b'<a href="/last.html">the last link</a></body></html>'


def test_the_default_body_limit_keeps_ordinary_large_pages() -> None:
    assert Config().network.max_body_bytes >= 16 * 2**20


@pytest.mark.parametrize("size", [2_500_000, 15 * 2**20])
def test_a_link_at_the_end_of_a_large_page_is_found(size: int) -> None:
    body = page(size)
    assert len(body) <= Config().network.max_body_bytes
    links = extract_links(body, "http://docs.test/manual.html", content_type="text/html").links
    assert links[-1] == "http://docs.test/last.html" and "http://docs.test/mid.html" in links
