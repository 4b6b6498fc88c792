"""engine/content.py: content-codings undone within the body limit; bombs cut, bad data refused, never raised."""

from __future__ import annotations

import zlib

import brotli
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.content import decode, decode_body

LIMIT = 64 * 1024
PAGE = b"<html><body>" + b"<p>Hello, crawler.</p>" * 300 + b"</body></html>"


def gzip(data: bytes) -> bytes:
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    return z.compress(data) + z.flush()


def zlib_deflate(data: bytes) -> bytes:
    return zlib.compress(data)


def raw_deflate(data: bytes) -> bytes:
    z = zlib.compressobj(6, zlib.DEFLATED, -15)
    return z.compress(data) + z.flush()


CODINGS = {"gzip": gzip, "x-gzip": gzip, "deflate": zlib_deflate, "deflate (raw)": raw_deflate, "br": brotli.compress}


@pytest.mark.parametrize("name", sorted(CODINGS))
def test_each_coding_decodes_whole(name: str) -> None:
    coding = name.split()[0]
    decoded = decode(CODINGS[name](PAGE), coding, LIMIT)
    assert (decoded.payload, decoded.cut) == (PAGE, False)


@pytest.mark.parametrize("name", sorted(CODINGS))
def test_a_bomb_is_cut_at_the_limit(name: str) -> None:
    bomb = CODINGS[name](b" " * (64 << 20))  # 64 MiB of spaces: about 64 KB of gzip, a few bytes of brotli
    decoded = decode(bomb, name.split()[0], LIMIT)
    assert decoded.cut and decoded.payload == b" " * LIMIT


@pytest.mark.parametrize("name", sorted(CODINGS))
def test_a_truncated_stream_decodes_as_far_as_it_goes(name: str) -> None:
    wire = CODINGS[name](PAGE)
    decoded = decode(wire[: len(wire) * 2 // 3], name.split()[0], LIMIT)
    assert decoded.payload is not None and PAGE.startswith(decoded.payload) and not decoded.cut


def test_identity_and_absent_codings_cut_only_at_the_limit() -> None:
    assert decode(PAGE, None, LIMIT) == decode(PAGE, "identity", LIMIT)
    assert decode(PAGE, " ", LIMIT).payload is PAGE  # no copy of the body
    big = decode(PAGE, None, 100)
    assert big.payload == PAGE[:100] and big.cut


def test_stacked_codings_are_undone_last_first() -> None:
    assert decode(brotli.compress(gzip(PAGE)), "gzip, br", LIMIT).payload == PAGE


def test_gzip_of_several_members_decodes_all_of_them() -> None:
    assert decode(gzip(PAGE) + gzip(PAGE), "gzip", LIMIT).payload == PAGE + PAGE


@pytest.mark.parametrize(
    ("body", "coding"),
    [(b"\x1f\x8b not gzip", "gzip"), (b"plain text", "deflate"), (b"\xff" * 50, "br"), (PAGE, "compress"), (PAGE, "zstd")],
)
def test_what_does_not_decode_gives_none_and_b_empty(body: bytes, coding: str) -> None:
    assert decode(body, coding, LIMIT).payload is None
    assert decode_body(body, coding, LIMIT) == b""


@given(st.binary(max_size=2000), st.sampled_from(["gzip", "deflate", "br", "gzip, br", "identity"]))
def test_any_bytes_under_any_coding_never_raise_and_stay_within_the_limit(body: bytes, coding: str) -> None:
    decoded = decode(body, coding, 100)
    assert decoded.payload is None or len(decoded.payload) <= 100
