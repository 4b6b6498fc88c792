"""store/deflate.py: the small records' gzip members, written with one Huffman code, read back by zlib.

zlib is the oracle: a member must inflate to the bytes given, its CRC and size checked, and a head
written for a stored tail must leave zlib mid-stream on a byte boundary, as ISA-L's sync flush does.
"""

from __future__ import annotations

import gzip
import zlib
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from isal import isal_zlib

from store import _deflate, deflate
from store.warc import WarcStore, _compressor, _head_deflater, stored_tail_member

# bytes a record is made of, with repeats at every distance a record has
TEXT = st.lists(st.sampled_from([b"WARC-Type: ", b"request", b"\r\n", b"http://h1.example:8000/", b"p/", b"7", b"?a=1&b=2",
                                 b"outlink: ", b" ", b"\t", b"~", b"a" * 300, b"xyz" * 90]), max_size=120).map(b"".join)
ASCII = st.binary(max_size=3000).map(lambda b: bytes(32 + x % 95 for x in b))


@given(st.one_of(TEXT, ASCII))
@example(b"")
@example(b"a")
@example(b"abcd" * 70)  # one match longer than 258
def test_a_member_of_coded_bytes_inflates_to_them(data: bytes) -> None:
    member = deflate.gzip_member(data)
    assert member is not None
    assert gzip.decompress(member) == data
    head = deflate.deflate_head(data)
    assert head is not None
    inflater = zlib.decompressobj(-15)
    assert inflater.decompress(head) == data
    assert not inflater.eof  # a sync flush: the stream goes on


def test_the_encoder_matches_only_within_the_window() -> None:
    """Past 32 KiB a match's earlier copy is out of reach: the encoder finds it again within the window."""
    data = b"0123456789" * 3300 + bytes(range(32, 127)) * 400
    assert zlib.decompress(_deflate.deflate(data, True) or b"", -15) == data


def test_records_past_the_small_limit_are_left_to_isal() -> None:
    big = b"x" * (deflate.SMALL + 1)
    assert deflate.gzip_member(big) is None and deflate.deflate_head(big) is None
    assert deflate.gzip_member(big[:-1]) is not None


@given(st.binary(min_size=1, max_size=300))
def test_a_byte_without_a_code_is_refused_not_miswritten(data: bytes) -> None:
    uncoded = any(b not in (9, 10, 13) and not 32 <= b < 127 for b in data)
    member = deflate.gzip_member(data)
    assert (member is None) == uncoded
    if member is not None:
        assert gzip.decompress(member) == data


@given(st.binary(max_size=2000))
def test_level_one_writes_every_record_as_a_member_that_reads_back(data: bytes) -> None:
    assert gzip.decompress(_compressor(1)(data)) == data
    member = stored_tail_member(_head_deflater(1), data[:100], (data[100:], b"\r\n\r\n"))
    assert gzip.decompress(member) == data + b"\r\n\r\n"


def test_records_past_the_small_limit_go_to_isal() -> None:
    big = b"outlink: http://h.example/" * (deflate.SMALL // 20)
    assert len(big) > deflate.SMALL
    assert _compressor(1)(big) == isal_zlib.compress(big, 1, 31)


def _records_of(path: Path) -> list[bytes]:
    """The uncompressed records of a WARC file, one per gzip member."""
    data, records = path.read_bytes(), []
    while data:
        inflater = zlib.decompressobj(31)
        records.append(inflater.decompress(data))
        data = inflater.unused_data
    return records


@pytest.mark.parametrize("kind", [b"request", b"response", b"metadata"])
def test_the_fixed_code_costs_a_tenth_more_bytes_at_most_on_the_records_of_in_vitro_pages(kind: bytes,
                                                                                       tmp_path: Path) -> None:
    """The price of not choosing a code per record, on records it was not chosen from (a response's
    fields and HTTP head: its body is gzip-coded, so stored as it is)."""
    from bench.store_bench import pages

    with WarcStore(tmp_path, info={"software": "test"}, gzip_level=0) as warc:
        for exchange, links in pages(40):
            body = gzip.compress(exchange.body)
            warc.store_exchange(replace(exchange, body=body, compressed=True),
                                metadata=[("ip", "127.0.0.1")] + [("outlink", link) for link in links])
    records = [r for path in tmp_path.glob("*.warc.gz") for r in _records_of(path) if r.startswith(b"WARC/1.1\r\nWARC-Type: " + kind)]
    if kind == b"response":
        records = [r[: r.index(b"\r\n\r\n", r.index(b"\r\n\r\n") + 4) + 4] for r in records]
    assert len(records) == 40
    fixed = sum(len(deflate.gzip_member(r) or b"") for r in records)
    isal = sum(len(isal_zlib.compress(r, 1, 31)) for r in records)
    assert isal < fixed < 1.1 * isal
