"""The link graph of the crawl, page to page and host to host, on disk for the analytics to come.

Written as the crawl goes, one segment per WARC file (``X.graph``, ``X.graph.open`` while its
WARC file is written), so two agents never share a file and a crash can tear only the tail
of the segment being written.

Node ids are 64-bit xxh3 hashes: of the URL for pages, of the authority (``host[:port]``) for
hosts. Hashes need no dictionary, so memory does not grow with the graph, and every agent
gives a URL the same id; :func:`read_graph` turns them into dense numbers. Names are known
for the pages that were stored (their URL is in their record), and so for their hosts; a
link to a page never fetched is a node without a name.

A segment is a sequence of records of little-endian 64-bit words, one record per stored page:

    offset  src  src_host  n_links | n_hosts << 32  url_bytes | MAGIC << 32
    dst × n_links   dst_host × n_hosts   the URL in UTF-8, zero-padded to 8 bytes

``offset`` is the WARC offset of the page's response (or revisit) record, which lets
:mod:`store.recovery` find the pages a torn segment lost; ``dst`` are the page's distinct
links in document order, ``dst_host`` the distinct hosts they lead to (the page's own
included). A redirect is a page with one link, its target. A duplicate page whose links were
not followed has none. The records of a segment are whole up to a tail that
:func:`repair` cuts (a record must fit in the file, and its MAGIC must be there, so a
zero-filled tail is not taken for a record).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import xxhash

from store._graph import encode_record as _encode_record_c
from store.durable import fsync_directory
from store.errors import full_when_no_room

GRAPH_SUFFIX = ".graph"
OPEN_SUFFIX = ".open"
MAGIC = 0x534B4E4C  # "LNKS"
_HEADER_WORDS = 5
_hash = xxhash.xxh3_64_intdigest


def node_id(name: str) -> int:
    """The id of a page (its URL) or of a host (its authority)."""
    return _hash(name.encode("utf-8", "surrogateescape"))


def host_of(url: str) -> str:
    """The authority of an absolute URL (``http://h:8080/x`` → ``h:8080``)."""
    return url.split("/", 3)[2] if "://" in url else url


def graph_name(warc_name: str) -> str:
    """``X.warc.gz`` → ``X.graph``."""
    return warc_name.removesuffix(".warc.gz") + GRAPH_SUFFIX


def encode_record(offset: int, url: str, links: Sequence[str]) -> bytes:
    """One page's record (see the module docstring), written by ``store/_graph.c``; strings that are
    not valid UTF-8 as they stand (a lone surrogate) by :func:`encode_record_python`."""
    record = _encode_record_c(offset, url, links)
    return encode_record_python(offset, url, links) if record is None else record


def encode_record_python(offset: int, url: str, links: Sequence[str]) -> bytes:
    """What ``store/_graph.c`` writes, in Python: its oracle in ``tests/test_graph_record.py``."""
    targets = list(dict.fromkeys(links))
    hosts = list(dict.fromkeys(map(host_of, targets)))
    name = url.encode("utf-8", "replace")
    words = array("Q", (offset, node_id(url), node_id(host_of(url)), len(targets) | len(hosts) << 32, len(name) | MAGIC << 32))
    words.extend(map(node_id, targets))
    words.extend(map(node_id, hosts))
    return words.tobytes() + name + b"\0" * (-len(name) % 8)


@dataclass(frozen=True, slots=True)
class GraphRecord:
    offset: int
    src: int
    src_host: int
    links: np.ndarray  # uint64 page ids
    hosts: np.ndarray  # uint64 host ids
    url: str


def _walk(data: bytes) -> Iterator[tuple[int, GraphRecord]]:
    """(end offset in bytes, record) for each whole record at the start of ``data``."""
    words = np.frombuffer(data, dtype="<u8", count=len(data) // 8)
    at = 0
    while at + _HEADER_WORDS <= len(words):
        offset, src, src_host, counts, name = (int(w) for w in words[at : at + _HEADER_WORDS])
        n_links, n_hosts, name_bytes = counts & 0xFFFFFFFF, counts >> 32, name & 0xFFFFFFFF
        if name >> 32 != MAGIC or name_bytes == 0:
            return
        body = at + _HEADER_WORDS
        end = body + n_links + n_hosts + (name_bytes + 7) // 8
        if end > len(words):
            return
        name_at = (body + n_links + n_hosts) * 8
        url = data[name_at : name_at + name_bytes].decode("utf-8", "replace")  # bytes slices copy: only the name
        record = GraphRecord(offset, src, src_host, words[body : body + n_links], words[body + n_links : body + n_links + n_hosts], url)
        yield end * 8, record
        at = end


def records(path: Path) -> Iterator[GraphRecord]:
    """The whole records of a segment, in order."""
    for _, record in _walk(path.read_bytes()):
        yield record


def repair(path: Path, warc_size: int) -> tuple[int, int | None]:
    """Cut a segment after its last whole record of a page inside the WARC's first ``warc_size`` bytes.

    Returns (bytes dropped, WARC offset of the last page kept).
    """
    data = path.read_bytes()
    end, last = 0, None
    for record_end, record in _walk(data):
        if record.offset >= warc_size:
            break  # a page whose record the WARC repair cut (a power loss can reorder what reaches the disk)
        end, last = record_end, record.offset
    if end < len(data):
        with open(path, "r+b") as f:
            f.truncate(end)
    return len(data) - end, last


class GraphWriter:
    """Appends page records to ``X.graph.open``; ``finish`` makes it durable and names it ``X.graph``."""

    def __init__(self, directory: Path, warc_name: str) -> None:
        self.final = directory / graph_name(warc_name)
        self.path = self.final.with_name(self.final.name + OPEN_SUFFIX)
        self.pages = self.edges = 0
        self._file: IO[bytes] | None = None

    def add(self, offset: int, url: str, links: Sequence[str]) -> None:
        record = encode_record(offset, url, links)
        with full_when_no_room(self.path):
            if self._file is None:
                self._file = open(self.path, "ab", buffering=1 << 16)
            self._file.write(record)
        self.pages += 1
        self.edges += len(set(links))

    def finish(self) -> None:
        try:
            with full_when_no_room(self.path):
                if self._file is None:
                    self.path.touch()
                else:
                    self._file.flush()
                    os.fsync(self._file.fileno())
                    self._file.close()
                os.replace(self.path, self.final)
        finally:
            self._file = None
        fsync_directory(self.final.parent)

    def abandon(self) -> None:
        """Close without finishing: the ``.open`` segment stays, marked, for the next open to repair."""
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass  # what the buffer held is rebuilt from the WARC's metadata records
            self._file = None


@dataclass(frozen=True)
class Graph:
    """A graph with dense node numbers: node ``i`` has id ``ids[i]``; ``edges[k]`` = (from, to)."""

    ids: np.ndarray  # uint64, sorted
    names: dict[int, str]  # id → URL or host, for the nodes that were stored
    edges: np.ndarray  # int64, shape (E, 2), distinct pairs
    weights: np.ndarray  # int64, shape (E,): pages that gave the edge

    def index(self, node_id: int) -> int:
        """The dense number of ``node_id`` (``KeyError`` if it is not a node)."""
        i = int(np.searchsorted(self.ids, np.uint64(node_id)))
        if i == len(self.ids) or int(self.ids[i]) != node_id:
            raise KeyError(node_id)
        return i


def _graph(src: list[np.ndarray], dst: list[np.ndarray], names: dict[int, str]) -> Graph:
    s = np.concatenate(src) if src else np.empty(0, np.uint64)
    d = np.concatenate(dst) if dst else np.empty(0, np.uint64)
    named = np.fromiter(names, dtype=np.uint64, count=len(names))
    ids, inverse = np.unique(np.concatenate((s, d, named)), return_inverse=True)
    # (from, to) packed into one int64 key: a plain sort, 10x faster than np.unique(axis=0)'s sort of rows
    n = max(len(ids), 1)
    keys = np.sort(inverse[: len(s)].astype(np.int64) * n + inverse[len(s) : len(s) + len(d)])
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if len(keys) else np.empty(0, np.int64)
    distinct = keys[starts]
    weights = np.diff(np.append(starts, len(keys)))
    return Graph(ids, names, np.stack((distinct // n, distinct % n), axis=1), weights.astype(np.int64))


def read_graph(directory: Path, *, pages: bool = True) -> tuple[Graph, Graph]:
    """The page graph and the host graph of every segment in ``directory`` (finished or open).

    With ``pages=False`` the page graph is left empty: the host graph alone costs a fraction of
    the memory and time (a page has tens of links; a host graph's edges are per page and host).
    """
    page_src: list[np.ndarray] = []
    page_dst: list[np.ndarray] = []
    host_src: list[np.ndarray] = []
    host_dst: list[np.ndarray] = []
    page_names: dict[int, str] = {}
    hosts: dict[int, str] = {}
    for path in sorted(directory.glob(f"*{GRAPH_SUFFIX}")) + sorted(directory.glob(f"*{GRAPH_SUFFIX}{OPEN_SUFFIX}")):
        for r in records(path):
            if pages:
                page_names[r.src] = r.url
                page_src.append(np.full(len(r.links), r.src, np.uint64))
                page_dst.append(r.links)
            hosts[r.src_host] = host_of(r.url)
            host_src.append(np.full(len(r.hosts), r.src_host, np.uint64))
            host_dst.append(r.hosts)
    return _graph(page_src, page_dst, page_names), _graph(host_src, host_dst, hosts)
