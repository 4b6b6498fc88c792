"""What remembering a capture costs the dedup table as it grows, in its two layouts (issue 18).

Role: the figure behind ``store/dedup.py: _SCHEMA``. Every page stored in full is remembered
under two keys (its payload key and its near-duplicate signature), each a row of the SQLite
table, inserted in batches of 256. Two layouts, each through ``SignatureIndex`` itself:

* ``appended`` (shipped): rows in the order they come, an index on the key;
* ``keyed`` (the layout before, which the index still reads and writes when it finds it): the
  table keyed by the signature, so each row of a batch lands on a random page.

For each ``--rows`` it inserts that many rows of random 16-byte keys (with a URL, date, record
id and digest as long as a crawl's) into a fresh table, and prints the CPU µs per row of this
process over the last tenth of them (the table then as large as ``--rows`` says) and overall.

    python -m bench.dedup_table_bench --rows 50000 200000 1000000
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
from pathlib import Path

from store.dedup import Original, SignatureIndex

KEYED = """CREATE TABLE signatures (key INTEGER PRIMARY KEY, tail INTEGER NOT NULL, uri TEXT NOT NULL,
    date TEXT NOT NULL, record_id TEXT NOT NULL, digest TEXT NOT NULL)"""
ORIGINAL = Original("http://h12345.example.test:8000/a/path/page-123.html?id=77", "2026-11-25T15:00:00.123456Z",
                    "<urn:uuid:12345678-1234-4234-8234-123456789012>", "sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")


def per_row(layout: str, rows: int) -> tuple[float, float]:
    """(µs per row over the last tenth, µs per row overall) of ``rows`` rows remembered."""
    with tempfile.TemporaryDirectory(prefix="dedup-table-") as tmp:
        if layout == "keyed":
            with sqlite3.connect(Path(tmp) / "t-signatures.sqlite") as db:
                db.execute(KEYED)
        index = SignatureIndex(Path(tmp), "t", capacity=max(rows, 1000), error_rate=0.001)
        keys = [os.urandom(16) for _ in range(rows)]
        last = rows - rows // 10
        started = time.process_time()
        for key in keys[:last]:
            index.remember(key, ORIGINAL)
        late = time.process_time()
        for key in keys[last:]:
            index.remember(key, ORIGINAL)
        index.close()
        ended = time.process_time()
    return (ended - late) / (rows - last) * 1e6, (ended - started) / rows * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[50_000, 200_000, 1_000_000])
    args = parser.parse_args()
    print(f"{'rows':>10} {'appended: last tenth':>22} {'overall':>8} {'keyed: last tenth':>19} {'overall':>8}   (CPU µs per row)")
    for rows in args.rows:
        appended, keyed = per_row("appended", rows), per_row("keyed", rows)
        print(f"{rows:>10} {appended[0]:>22.1f} {appended[1]:>8.1f} {keyed[0]:>19.1f} {keyed[1]:>8.1f}")


if __name__ == "__main__":
    main()
