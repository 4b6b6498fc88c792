"""``crawl report OUT_DIR``: one self-contained HTML page about a crawl, finished or still running.

Reads only the output folder's files (:mod:`tools.report_data`: the CDXJ indexes, stats.json,
crawl.json, ``crawl rank``'s CSV, the policy's model folder) and writes the page that
:mod:`tools.report_html` renders, to ``OUT_DIR/report.html`` or ``--out FILE``. A running crawl
is read as it stands: the torn last line of an index is skipped, and the sections that need
stats.json (written at the end) say so.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any


def add_parser(commands: Any) -> None:
    """``crawl report``, under ``crawl``'s subcommands."""
    report = commands.add_parser("report", help="an HTML report of a crawl's output folder (finished or running)")
    report.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="a crawl's output folder")
    report.add_argument("--out", type=Path, metavar="FILE.html", help="where the page goes (default OUT_DIR/report.html)")
    report.add_argument("--top", type=int, default=25, metavar="N", help="rows of the top-N tables (default 25)")


def report(args: argparse.Namespace) -> int:
    if not args.out_dir.is_dir():
        sys.stderr.write(f"crawl: error: OUT_DIR {args.out_dir}: no such folder\n")
        return 2
    if args.top < 1:
        sys.stderr.write(f"crawl: error: --top {args.top}: must be 1 or more\n")
        return 2
    from tools.report_data import read_crawl  # here: the other commands never load the report's modules
    from tools.report_html import render

    started = time.perf_counter()
    facts = read_crawl(args.out_dir)
    page = render(facts, time.time(), args.top)
    out = args.out if args.out is not None else args.out_dir / "report.html"
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as e:
        sys.stderr.write(f"crawl: error: cannot write {out}: {e.strerror}\n")
        return 2
    print(f"report: {out} ({facts.index.records:,} records of {len(facts.index.hosts):,} hosts, "
          f"{time.perf_counter() - started:.2f} s)", file=sys.stderr)
    return 0
