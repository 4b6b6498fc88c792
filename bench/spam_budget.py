"""The share of a crawl's budget spent on spam hosts: its WARC responses joined with a labels CSV.

Role: the measuring half of the spam lab (issue 16): ``python -m bench.invitro labels`` writes the
truth (``host,label,kind``), a crawl of the same web writes WARC files, and this counts the crawl's
page responses (robots.txt excluded) per kind.

    python -m bench.spam_budget OUT_DIR hosts.csv     # prints pages per kind and the spam share, JSON
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import orjson
from warcio.archiveiterator import ArchiveIterator


def read_labels(path: Path) -> dict[str, str]:
    """Host → its kind ("good" for label 0) from a ``host,label,kind`` CSV."""
    with path.open(newline="") as f:
        return {row["host"]: (row["kind"] or "spam") if row["label"] == "1" else "good" for row in csv.DictReader(f)}


def pages_by_kind(out_dir: Path, labels: dict[str, str]) -> Counter[str]:
    """Page responses of the crawl in ``out_dir/warc`` per kind of their host ("other" for unlabelled hosts)."""
    counts: Counter[str] = Counter()
    for path in sorted((out_dir / "warc").glob("*.warc*")):
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type != "response":
                    continue
                url = urlsplit(record.rec_headers.get_header("WARC-Target-URI"))
                if url.path != "/robots.txt":
                    counts[labels.get(url.hostname or "", "other")] += 1
    return counts


def spam_share(counts: Counter[str]) -> float:
    total = sum(counts.values())
    return (total - counts["good"] - counts["other"]) / total if total else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.spam_budget", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", type=Path, help="the crawl's output folder (its warc/ is read)")
    parser.add_argument("labels", type=Path, help="the web's labels CSV (python -m bench.invitro labels)")
    args = parser.parse_args(argv)
    counts = pages_by_kind(args.out_dir, read_labels(args.labels))
    print(orjson.dumps({"pages": dict(counts), "total": sum(counts.values()), "spam_share": spam_share(counts)}).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
