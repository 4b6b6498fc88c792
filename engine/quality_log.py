"""Where a crawl keeps its host quality scores: ``agent-I/quality.csv`` and one WARC metadata record per host.

The quality filter (``frontier/quality.py``) scores each host once; the pipeline hands the
:class:`~frontier.quality.Verdict` here. stats.json holds only counts (``quality``), since the
scores grow with the hosts crawled: the CSV (``host,score,action,pages,hosts_per_ip``, one line per
scored host, flushed as written) is the full list, and the WARC metadata record (about
``scheme://authority/``: ``hostQualityScore``, ``hostQualityAction``, ``hostQualityPages``,
``hostsPerIp``, ``hostQualityModel``) keeps each score with the pages it judged.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from frontier.quality import Verdict
from store.archive import Archive

CSV_HEADER = "host,score,action,pages,hosts_per_ip\n"


class QualityLog:
    """Appends each verdict to the CSV file and the archive."""

    def __init__(self, path: Path, archive: Archive, model: str) -> None:
        new = not path.exists() or path.stat().st_size == 0
        self.file = path.open("a", encoding="utf-8")
        if new:
            self.file.write(CSV_HEADER)
        self.archive = archive
        self.model = model

    def record(self, verdict: Verdict, when: float) -> None:
        """Write ``verdict``, reached with a page fetched at wall-clock ``when``."""
        self.file.write(f"{verdict.host},{verdict.score:.6f},{verdict.action},{verdict.pages},{verdict.hosts_per_ip}\n")
        self.file.flush()
        self.archive.store_metadata(verdict.host + "/", [
            ("hostQualityScore", f"{verdict.score:.6f}"),
            ("hostQualityAction", verdict.action),
            ("hostQualityPages", str(verdict.pages)),
            ("hostsPerIp", str(verdict.hosts_per_ip)),
            ("hostQualityModel", self.model),
        ], when)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.file.close()
