"""Gzip members for the small records of a fetch, written with one Huffman code chosen once.

Why: a page's request record, its response's WARC fields and HTTP head (the body follows in
stored blocks when it is compressed already: ``store.warc.stored_tail_member``) and its metadata
record are 0.4–3 KB each. ISA-L at level 1 spends most of its ~10 µs on each in choosing a
Huffman code for that one record (``create_hufftables_icf``, ``heapify1``, ``rl_encode``: most of
the 4.7% of an agent's CPU a ``perf`` profile put in ISA-L's deflate). These records are alike
from one to the next, WARC field names, HTTP headers and URLs, so one code chosen from sample
records (:data:`SAMPLE`) serves them: ``store/_deflate.c`` writes each record as one dynamic
block that carries the code in its header, as any deflate block does, so every inflater reads
it; only the choosing is saved.

:func:`gzip_member` and :func:`deflate_head` write records up to :data:`SMALL` bytes made of
coded bytes, and return None for the others (an uncompressed body), which ``store.warc`` gives to
ISA-L, whose code fits them. ``bench/RESULTS.md`` ("The small records' deflate") has the sizes
and costs against ISA-L.
"""

from __future__ import annotations

import heapq
import struct

from isal import isal_zlib

from store import _deflate

SMALL = 16 * 1024
"""Records up to this many bytes are written with the fixed code."""

GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # deflate, no name nor time, OS unknown (as ISA-L writes it)
_CODE_LENGTH_ORDER = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)
_EXTRA_BITS = {16: 2, 17: 3, 18: 7}
# Bytes with a code: printable ASCII, tab, CR and LF (the WARC fields and HTTP heads of nearly every
# fetch). A record holding another byte goes to ISA-L: every code given to a byte that is rare costs
# every record the header's bits that describe it.
_CODED_BYTES = frozenset((9, 10, 13, *range(32, 127)))

# Sample records to choose the code from: the fields a crawl's request, response and metadata
# records carry, with URLs of several shapes (not the in-vitro web's alone), digests in base32 and
# identifiers in hex. Only their byte and match statistics matter.
SAMPLE = b"".join((
    b"WARC/1.1\r\nWARC-Type: request\r\nWARC-Record-ID: <urn:uuid:3f2a9c1e-7b4d-4e8a-9c2f-1a6b5d7e8f90>\r\n"
    b"WARC-Date: 2026-11-23T10:41:07.512093Z\r\nWARC-Target-URI: https://www.example.org/news/2026/11/city-council-votes-budget.html\r\n"
    b"WARC-IP-Address: 93.184.216.34\r\nWARC-Warcinfo-ID: <urn:uuid:0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f>\r\n"
    b"WARC-Concurrent-To: <urn:uuid:a1b2c3d4-e5f6-4789-abcd-ef0123456789>\r\nContent-Type: application/http;msgtype=request\r\n"
    b"WARC-Block-Digest: sha1:QX7KZ2M4RT6VW3YB5NCP8DLHJ1GF0ASE\r\nContent-Length: 231\r\n\r\n"
    b"GET /news/2026/11/city-council-votes-budget.html HTTP/1.1\r\nHost: www.example.org\r\n"
    b"User-Agent: crawl/0.1 (+https://crawler.example.net/about)\r\nAccept: text/html,application/xhtml+xml;q=0.9,*/*;q=0.8\r\n"
    b"Accept-Encoding: gzip, deflate, br\r\nConnection: close\r\n\r\n\r\n\r\n",
    b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:a1b2c3d4-e5f6-4789-abcd-ef0123456789>\r\n"
    b"WARC-Date: 2026-11-23T10:41:07.512093Z\r\nWARC-Target-URI: https://www.example.org/news/2026/11/city-council-votes-budget.html\r\n"
    b"WARC-IP-Address: 93.184.216.34\r\nWARC-Warcinfo-ID: <urn:uuid:0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f>\r\n"
    b"WARC-Concurrent-To: <urn:uuid:3f2a9c1e-7b4d-4e8a-9c2f-1a6b5d7e8f90>\r\nContent-Type: application/http;msgtype=response\r\n"
    b"WARC-Block-Digest: sha1:7HN2WQ5ZK3XR4MBT6YVC9PJD8LSG2AFE\r\nWARC-Payload-Digest: sha1:UJ4E3KX6T2ZQ7R5WNYB8MVC9PDAL3HGS\r\n"
    b"Content-Length: 48213\r\n\r\nHTTP/1.1 200 OK\r\nDate: Mon, 23 Nov 2026 10:41:07 GMT\r\nServer: nginx/1.24.0\r\n"
    b"Content-Type: text/html; charset=utf-8\r\nContent-Length: 47812\r\nConnection: close\r\nVary: Accept-Encoding\r\n"
    b"Last-Modified: Sun, 22 Nov 2026 18:03:55 GMT\r\nETag: \"5f3a-62c1d9e8b7a40\"\r\nCache-Control: max-age=600, public\r\n"
    b"Content-Encoding: gzip\r\nX-Frame-Options: SAMEORIGIN\r\nStrict-Transport-Security: max-age=31536000\r\n"
    b"Set-Cookie: session=b7e1c0f94a2d; Path=/; HttpOnly; Secure\r\n\r\n",
    b"WARC/1.1\r\nWARC-Type: metadata\r\nWARC-Record-ID: <urn:uuid:9e8d7c6b-5a49-4382-b1c0-d9e8f7a6b5c4>\r\n"
    b"WARC-Date: 2026-11-23T10:41:07.512093Z\r\nWARC-Target-URI: http://blog.example.com:8080/2025/03/notes-on-crawling/\r\n"
    b"WARC-Concurrent-To: <urn:uuid:a1b2c3d4-e5f6-4789-abcd-ef0123456789>\r\nContent-Type: application/warc-fields\r\n"
    b"WARC-Block-Digest: sha1:M3QW8ZR5KX2TB7YN4VC6PJ9DHL1SGAFE\r\nContent-Length: 1024\r\n\r\n"
    b"fetchTimeMs: 142\r\nip: 203.0.113.57\r\n"
    b"outlink: http://blog.example.com:8080/2025/03/\r\noutlink: http://blog.example.com:8080/about\r\n"
    b"outlink: http://blog.example.com:8080/tag/web-archives?page=2&sort=new\r\noutlink: https://github.com/search?q=warc+crawler&type=repositories\r\n"
    b"outlink: https://en.wikipedia.org/wiki/Web_crawler\r\noutlink: https://shop.example.net/p/18374?ref=blog&utm_source=feed\r\n"
    b"outlink: http://h1042.example:8000/p/7/3/q91.html\r\noutlink: http://h1042.example:8000/p/7/4\r\n"
    b"outlink: http://h88.example:8000/index.html\r\noutlink: https://cdn.example.com/static/css/site.min.css?v=20261101\r\n"
    b"outlink: https://www.youtube.com/watch?v=dQw4w9WgXcQ\r\noutlink: https://twitter.com/example/status/1859270431290871808\r\n"
    b"redirect: https://www.example.org/news/\r\n\r\n\r\n",
))  # fmt: skip


def _huffman_lengths(counts: list[int], limit: int) -> list[int]:
    """Code lengths of a Huffman code for ``counts``, none longer than ``limit``, 0 for a symbol of
    count 0 (no code); counts are halved (keeping them positive) until the longest code fits."""
    while True:
        heap: list[tuple[int, int, list[int]]] = [(c, s, [s]) for s, c in enumerate(counts) if c > 0]
        heapq.heapify(heap)
        lengths = [0] * len(counts)
        order = len(counts)
        while len(heap) > 1:
            a, _, xs = heapq.heappop(heap)
            b, _, ys = heapq.heappop(heap)
            for s in xs + ys:
                lengths[s] += 1
            heapq.heappush(heap, (a + b, order, xs + ys))
            order += 1
        if max(lengths) <= limit:
            return lengths
        counts = [(c + 1) // 2 for c in counts]


def _reversed_codes(lengths: list[int]) -> list[int]:
    """Canonical codes (RFC 1951 §3.2.2), bits reversed for a stream read from the low bit."""
    per_length = [0] * 16
    for bits in lengths:
        per_length[bits] += 1
    per_length[0] = 0
    next_code, code = [0] * 16, 0
    for bits in range(1, 16):
        code = (code + per_length[bits - 1]) << 1
        next_code[bits] = code
    codes = []
    for bits in lengths:
        codes.append(int(f"{next_code[bits]:0{bits}b}"[::-1], 2) if bits else 0)
        next_code[bits] += 1
    return codes


class _Bits:
    def __init__(self) -> None:
        self.value = self.count = 0

    def put(self, value: int, count: int) -> None:
        self.value |= value << self.count
        self.count += count

    def packed(self) -> bytes:
        return self.value.to_bytes((self.count + 7) // 8, "little")


def _header(litlen: list[int], dist: list[int]) -> tuple[bytes, int]:
    """A dynamic block's header after BFINAL and BTYPE (RFC 1951 §3.2.7) for these code lengths."""
    lengths = litlen + dist
    runs: list[tuple[int, int]] = []  # (code length symbol, its extra bits' value)
    i = 0
    while i < len(lengths):
        value, run = lengths[i], 1
        while i + run < len(lengths) and lengths[i + run] == value:
            run += 1
        i += run
        if value == 0:  # 18: 11-138 zeros, 17: 3-10
            while run >= 11:
                runs.append((18, min(run, 138) - 11))
                run -= min(run, 138)
            if run >= 3:
                runs.append((17, run - 3))
                run = 0
        else:  # the length, then 16: 3-6 more of it
            runs.append((value, 0))
            run -= 1
            while run >= 3:
                runs.append((16, min(run, 6) - 3))
                run -= min(run, 6)
        runs.extend((value, 0) for _ in range(run))
    cl_counts = [1 + sum(1 for s, _ in runs if s == symbol) for symbol in range(19)]
    cl_lengths = _huffman_lengths(cl_counts, 7)
    cl_codes = _reversed_codes(cl_lengths)
    bits = _Bits()
    bits.put(len(litlen) - 257, 5)
    bits.put(len(dist) - 1, 5)
    bits.put(len(_CODE_LENGTH_ORDER) - 4, 4)  # every code length code has a length
    for symbol in _CODE_LENGTH_ORDER:
        bits.put(cl_lengths[symbol], 3)
    for symbol, extra in runs:
        bits.put(cl_codes[symbol], cl_lengths[symbol])
        if symbol >= 16:
            bits.put(extra, _EXTRA_BITS[symbol])
    return bits.packed(), bits.count


def _configure(sample: bytes) -> None:
    """Choose the code from ``sample``'s symbols: every byte of :data:`_CODED_BYTES`, length and
    distance counted at least once, other bytes left without a code."""
    litlen, dist = _deflate.counts(sample)
    litlen = [c + 1 if s in _CODED_BYTES or s >= 256 else 0 for s, c in enumerate(litlen)]
    litlen_lengths = _huffman_lengths(litlen, 15)
    dist_lengths = _huffman_lengths([c + 1 for c in dist], 15)
    header, nbits = _header(litlen_lengths, dist_lengths)
    _deflate.configure(bytes(litlen_lengths), bytes(dist_lengths), header, nbits)


_configure(SAMPLE)


def gzip_member(data: bytes) -> bytes | None:
    """``data`` as one gzip member (RFC 1952) of one deflate block written with the fixed code; None
    if ``data`` is longer than :data:`SMALL` or holds a byte the code leaves out."""
    block = _deflate.deflate(data, True) if len(data) <= SMALL else None
    if block is None:
        return None
    return b"".join((GZIP_HEADER, block, struct.pack("<II", isal_zlib.crc32(data), len(data) & 0xFFFFFFFF)))


def deflate_head(data: bytes) -> bytes | None:
    """``data`` as raw deflate that ends on a byte boundary in a block that is not the last (a sync
    flush), for a member whose rest is stored blocks; None as for :func:`gzip_member`."""
    return _deflate.deflate(data, False) if len(data) <= SMALL else None
