"""Content keys seen so far, and the capture that first had each: what makes a revisit or a near-duplicate.

BUbiNG keeps page signatures in a Bloom filter (bubing-nadine.md §2.4, peers.md §1.8): a page
whose signature is in the filter is a duplicate. A filter alone cannot say *which* capture
had the content first, and a revisit record must name it (``WARC-Refers-To-Target-URI``,
``-Date``), so here the filter stands in front of a table on disk:

* **Bloom filter** (pybloomfiltermmap3, a file mapped in memory, ``X-signatures.bloom``),
  sized for ``capacity`` signatures at ``error_rate``. It answers "never seen" for most
  pages in about 2 µs, without touching the table.
* **SQLite table** (``X-signatures.sqlite``): signature → the original's URI, date, record id
  and payload digest, rows in the order they came, found through an index on the signature.
  It is asked only when the filter says "seen", so a false positive of the filter costs one
  lookup and is counted, never a lost page. New rows are inserted in batches (one
  transaction per ``batch`` rows, 8–19 µs a row as the table grows to a million:
  ``bench/dedup_table_bench.py``).

Persistence: both files outlive the process. A kill -9 loses at most the last batch of rows
(the filter, a file mapping, keeps its bits); such a signature then reads as a filter false
positive and the page is stored in full: nothing is lost. If the filter file is missing or
was sized differently, it is rebuilt from the table. A full disk raises ``StoreFull``.

Keys: a capture stored in full is remembered under up to two 16-byte keys, its *payload key*
(:func:`payload_key`, from the payload digest: what an identical-payload revisit needs) and, in
``near`` mode, its near-duplicate signature (``store.signature``). Both share the filter and the
table; the payload key is hashed with a seed of its own, so the two kinds never meet. A key
keeps the capture that had it first: a later capture with the same key never replaces it.

The filter's false-positive rate is reported two ways: the rate its fill implies now,
``(1 - e^(-k·n/m))^k``, and the share of "seen" answers the table did not confirm.
"""

from __future__ import annotations

import math
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pybloomfilter  # pybloomfiltermmap3 has no stubs: pyproject.toml lets it be Any
import xxhash

from store.errors import StoreFull, is_no_room, preallocate

# Rows are appended in the order they come (``id``), and found through an index on ``key``:
# keyed by ``key`` itself, the table's rows went to random pages, and a batch of 256 rows dirtied
# some 256 pages of ~200-byte rows, each written whole to the WAL: 23.6 µs a row on a table of
# 200,000, against 14.0 with the rows appended and the 16-byte index entries in random pages
# (``bench/dedup_table_bench.py``, the last tenth of the rows).
# A table made before (``key INTEGER PRIMARY KEY``, no ``id``) is read and written as it is.
_SCHEMA = """CREATE TABLE IF NOT EXISTS signatures (
    id INTEGER PRIMARY KEY,
    key INTEGER NOT NULL,      -- the first 8 bytes of the signature, as a signed integer
    tail INTEGER NOT NULL,     -- the last 8 bytes
    uri TEXT NOT NULL, date TEXT NOT NULL, record_id TEXT NOT NULL, digest TEXT NOT NULL)"""
_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS signatures_key ON signatures (key)"
_COLUMNS = "key, tail, uri, date, record_id, digest"


_FULL_CODES = frozenset((sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR_SHMSIZE))


@dataclass(frozen=True, slots=True)
class Original:
    """The first capture of some content."""

    uri: str
    date: str  # WARC-Date
    record_id: str
    payload_digest: str


@dataclass(frozen=True)
class DedupStatistics:
    signatures: int  # distinct signatures remembered (this run and earlier ones)
    bloom_capacity: int
    bloom_error_rate: float  # configured, at capacity
    bloom_fill_false_positive_rate: float  # what the filter's fill implies now
    bloom_hits: int  # "seen" answers of the filter
    bloom_false_positives: int  # of those, not confirmed by the table


def _allocate(path: Path) -> None:
    """Give the filter's file its blocks: pybloomfiltermmap3 makes it sparse and sets bits through a
    mapping, where a full disk is SIGBUS at some page's first bit; this makes it ``StoreFull`` now."""
    fd = os.open(path, os.O_RDWR)
    try:
        preallocate(fd, os.fstat(fd).st_size, path)
    finally:
        os.close(fd)


_PAYLOAD_SEED = 0x7061796C6F6164  # "payload": keeps payload keys apart from near-duplicate signatures


def payload_key(digest: str) -> bytes:
    """The index key of a payload digest (``sha1:…``): 16 bytes hashed from all of its 160 bits,
    at 0.1 µs (decoding the base32 would cost 5 µs)."""
    return xxhash.xxh3_128_digest(digest.encode(), seed=_PAYLOAD_SEED)


def _split(signature: bytes) -> tuple[int, int]:
    return int.from_bytes(signature[:8], "big", signed=True), int.from_bytes(signature[8:16], "big", signed=True)


class SignatureIndex:
    """Signatures → first captures, for one store instance (``prefix``) in ``directory``."""

    def __init__(self, directory: Path, prefix: str, *, capacity: int, error_rate: float, batch: int = 256) -> None:
        self.bloom_path = directory / f"{prefix}-signatures.bloom"
        self.table_path = directory / f"{prefix}-signatures.sqlite"
        self.capacity, self.error_rate, self.batch = capacity, error_rate, batch
        self._pending: dict[int, tuple[int, int, str, str, str, str]] = {}
        self._hits = self._false = 0
        self._final: DedupStatistics | None = None
        try:
            self._db = sqlite3.connect(self.table_path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
            if any(column[1] == "id" for column in self._db.execute("PRAGMA table_info(signatures)")):
                self._db.execute(_INDEX)
            self._count = self._db.execute("SELECT count(*) FROM signatures").fetchone()[0]
            self._bloom = self._open_bloom()
        except (sqlite3.OperationalError, OSError) as e:
            raise self._error(e) from e

    def _open_bloom(self) -> pybloomfilter.BloomFilter:
        if self.bloom_path.exists():
            bloom = pybloomfilter.BloomFilter.open(str(self.bloom_path), "rw")
            if bloom.capacity == self.capacity and math.isclose(bloom.error_rate, self.error_rate):
                _allocate(self.bloom_path)
                return bloom
            bloom.close()
            self.bloom_path.unlink()
        bloom = pybloomfilter.BloomFilter(self.capacity, self.error_rate, str(self.bloom_path))
        _allocate(self.bloom_path)
        for key, tail in self._db.execute("SELECT key, tail FROM signatures"):
            bloom.add(key.to_bytes(8, "big", signed=True) + tail.to_bytes(8, "big", signed=True))
        return bloom

    def original(self, signature: bytes) -> Original | None:
        """The first capture with this signature, if one was remembered."""
        if signature not in self._bloom:
            return None
        self._hits += 1
        key, tail = _split(signature)
        row = self._pending.get(key)
        if row is None:
            row = self._db.execute(f"SELECT {_COLUMNS} FROM signatures WHERE key = ?", (key,)).fetchone()
        if row is None or row[1] != tail:
            self._false += 1
            return None
        return Original(*row[2:])

    def remember(self, signature: bytes, original: Original) -> None:
        """Record ``original`` as the first capture of ``signature`` (a key already taken keeps its capture)."""
        key, tail = _split(signature)
        self._bloom.add(signature)
        self._pending.setdefault(key, (key, tail, original.uri, original.date, original.record_id, original.payload_digest))
        if len(self._pending) >= self.batch:
            self.flush()

    def flush(self) -> None:
        """Insert the pending rows in one transaction."""
        if not self._pending:
            return
        before = self._db.total_changes
        try:
            with self._db:
                self._db.execute("BEGIN")
                self._db.executemany(f"INSERT OR IGNORE INTO signatures ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)", self._pending.values())
        except sqlite3.OperationalError as e:
            raise self._error(e) from e
        self._count += self._db.total_changes - before  # rows ignored as already there are not counted
        self._pending.clear()

    def _error(self, e: BaseException) -> BaseException:
        # SHMSIZE: the WAL index (``-shm``) could not grow, which is how SQLite meets a full disk at open
        full = isinstance(e, sqlite3.OperationalError) and getattr(e, "sqlite_errorcode", None) in _FULL_CODES
        return StoreFull(self.table_path, e) if full or is_no_room(e) else e

    def close(self) -> None:
        """Flush the pending rows and close both files (idempotent; statistics stay readable)."""
        if self._final is not None:
            return
        try:
            self.flush()
        finally:
            self._final = self.statistics()
            self._db.close()
            self._bloom.close()

    def statistics(self) -> DedupStatistics:
        if self._final is not None:
            return self._final
        bloom = self._bloom
        n = self._count + len(self._pending)
        k, m = bloom.num_hashes, bloom.num_bits
        return DedupStatistics(
            signatures=n,
            bloom_capacity=self.capacity,
            bloom_error_rate=self.error_rate,
            bloom_fill_false_positive_rate=(1.0 - math.exp(-k * n / m)) ** k,
            bloom_hits=self._hits,
            bloom_false_positives=self._false,
        )
