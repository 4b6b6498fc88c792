"""What ``crawl report`` reads from a crawl's output folder, finished or still running (the report's facts).

Every source is optional, and a missing one leaves its fields empty (``None``), never an error:

* the CDXJ indexes beside the WARC files (``OUT/warc/*.cdxj``, and ``*.cdxj.open`` while a WARC
  file is written: :mod:`store.cdxj`): one line per response and revisit record, robots.txt and
  ``dns:`` answers included. They give the timeline, the status, MIME and size mix, the hosts,
  robots.txt outcomes and revisits, at about ten microseconds a line, without opening the WARC files.
  An open index of a running (or crashed) crawl may end in a torn line: a line that does not
  parse, or lacks its newline, is skipped and counted; the file is never changed
  (:func:`store.cdxj.complete_lines` cuts it: that is for the crawl's own recovery, not a reader);
* the WARC files, only for the robots.txt files answered 2xx (one record per host, read at its
  offset: :mod:`tools.report_robots`);
* ``OUT/stats.json``: written when the crawl ends (absent while it runs): counters the archive
  does not hold (URLs robots.txt disallowed, fetch errors by kind, duplicates the store caught,
  the politeness-wait histogram);
* ``OUT/crawl.json``: the manifest, written at the start, so a running crawl has it too: the
  seeds (each shown with the status of its first capture, as Heritrix's seeds report does) and
  the configuration (politeness delays, the policy and its model);
* ``OUT/rank-host.csv``: ``crawl rank``'s host ranking (:mod:`engine.rank_cli`), when it was run;
* the policy's model folder (``policy.model``): the ``report.md`` and ``graph.svg`` that
  ``crawl learn`` wrote there.

Our choices: a host is the URL's authority without user info (``host:port``, as the crawl's
politeness sees it); a *page* is a record that is neither a robots.txt answer nor a ``dns:`` one;
an *error* is a page with a status of 400 or more (fetch failures leave no record: stats.json
counts them by kind). Sizes are the records' compressed lengths in the WARC file (the index's
``length``), the bytes the archive spends on them.
"""

from __future__ import annotations

import calendar
import csv
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from frontier.urls import canonicalize
from store.cdxj import CDXJ_SUFFIX, OPEN_SUFFIX, IndexEntry, parse_line
from tools.report_robots import RecordRef, RobotsFiles, census

# upper bounds of the size classes, in bytes; the last class is "more"
SIZE_BOUNDS = (1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20)
REVISIT_MIME = "warc/revisit"


def host_of(url: str) -> str:
    """``http://u@a.example:8080/x`` → ``a.example:8080``; ``dns:a.example`` → ``a.example``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url.partition(":")[2].lower()
    authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return authority.rpartition("@")[2].lower()


def robots_outcome(status: int | None) -> str:
    """What a robots.txt answer means to the crawl (RFC 9309 §2.3.1, as ``engine/robots.py`` reads it)."""
    if status is None or not 200 <= status < 500 or status == 429:
        return "unreachable: disallow all"
    if status < 300:
        return "parsed"
    if status < 400:
        return "redirected"
    return "unavailable: allow all"


@dataclass
class HostRow:
    """One host's captures: every record, its pages, the pages in error, and their bytes."""

    records: int = 0
    pages: int = 0
    errors: int = 0
    bytes: int = 0


@dataclass
class IndexFacts:
    """The CDXJ indexes of a crawl, added up line by line (the module docstring says what counts as what)."""

    files: int = 0
    open_files: int = 0
    records: int = 0
    torn_lines: int = 0
    statuses: Counter[str] = field(default_factory=Counter)  # "200", …; "none" for dns: records
    mimes: Counter[str] = field(default_factory=Counter)
    sizes: Counter[int] = field(default_factory=Counter)  # index into SIZE_BOUNDS (len: larger)
    pages_per_second: Counter[int] = field(default_factory=Counter)  # unix second → pages
    bytes_per_second: Counter[int] = field(default_factory=Counter)  # unix second → bytes of every record
    hosts: dict[str, HostRow] = field(default_factory=dict)
    robots: Counter[str] = field(default_factory=Counter)  # outcome → robots.txt answers
    seeds: dict[str, tuple[str, str]] = field(default_factory=dict)  # canonical seed → (timestamp, status) first seen
    robots_parsed: list[RecordRef] = field(default_factory=list)  # the robots.txt answers whose rules were read
    revisit_records: int = 0
    recaptures: int = 0  # captures of a URL captured before
    # hashes of the URLs captured, and of those captured again: a set of ints costs a third of a dict of URLs
    _seen: set[int] = field(default_factory=set, repr=False)
    _again: set[int] = field(default_factory=set, repr=False)
    _seconds: dict[str, int] = field(default_factory=dict, repr=False)  # 14-digit timestamp → unix second

    def add(self, entry: IndexEntry) -> None:
        self.records += 1
        self.statuses[str(entry.status) if entry.status is not None else "none"] += 1
        self.mimes[entry.mime] += 1
        self.sizes[_size_class(entry.length)] += 1
        second = self._second(entry.timestamp)
        self.bytes_per_second[second] += entry.length
        row = self.hosts.setdefault(host_of(entry.url), HostRow())
        row.records += 1
        row.bytes += entry.length
        if entry.mime == REVISIT_MIME:
            self.revisit_records += 1
        first = self.seeds.get(entry.url)
        if first is not None and (not first[0] or entry.timestamp < first[0]):
            self.seeds[entry.url] = (entry.timestamp, str(entry.status) if entry.status is not None else "none")
        key = hash(entry.url)
        if key in self._seen:
            self.recaptures += 1
            self._again.add(key)
        else:
            self._seen.add(key)
        if entry.url.startswith("dns:"):
            return
        if entry.url.partition("://")[2].partition("/")[2] == "robots.txt":
            outcome = robots_outcome(entry.status)
            self.robots[outcome] += 1
            if outcome == "parsed":
                self.robots_parsed.append(RecordRef(entry.filename, entry.offset, entry.length))
            return
        row.pages += 1
        self.pages_per_second[second] += 1
        if entry.status is not None and entry.status >= 400:
            row.errors += 1

    @property
    def recaptured_urls(self) -> int:
        """URLs captured more than once."""
        return len(self._again)

    def _second(self, timestamp: str) -> int:
        second = self._seconds.get(timestamp)
        if second is None:  # a crawl has few distinct seconds: each is parsed once
            try:
                second = calendar.timegm(time.strptime(timestamp, "%Y%m%d%H%M%S"))
            except ValueError:
                second = 0
            self._seconds[timestamp] = second
        return second


def _size_class(length: int) -> int:
    return next((i for i, bound in enumerate(SIZE_BOUNDS) if length <= bound), len(SIZE_BOUNDS))


def _read_index(path: Path) -> bytes | None:
    """The bytes of an index; an open one finished since the folder was listed is read from its sorted twin."""
    for candidate in (path, path.with_name(path.name.removesuffix(OPEN_SUFFIX))):
        try:
            return candidate.read_bytes()
        except OSError:
            continue
    return None


def read_indexes(folder: Path, seeds: Sequence[str] = ()) -> IndexFacts:
    """Every finished and open index in ``folder`` (``OUT/warc``), torn lines skipped and counted;
    ``seeds`` (as given to the crawl) are looked for under their canonical form."""
    facts = IndexFacts()
    for seed in seeds:
        facts.seeds.setdefault(canonicalize(seed) or seed, ("", ""))
    if not folder.is_dir():
        return facts
    names = {path.name for path in folder.iterdir()}
    for name in sorted(names):
        is_open = name.endswith(CDXJ_SUFFIX + OPEN_SUFFIX)
        if not (is_open or name.endswith(CDXJ_SUFFIX)) or (is_open and name.removesuffix(OPEN_SUFFIX) in names):
            continue  # an open index whose sorted twin is written already is about to be removed
        data = _read_index(folder / name)
        if data is None:
            continue
        facts.files += 1
        facts.open_files += is_open
        for line in data.split(b"\n"):
            if not line:
                continue
            try:
                facts.add(parse_line(line))
            except ValueError:
                facts.torn_lines += 1
    return facts


@dataclass(frozen=True)
class RankRow:
    """A line of ``crawl rank``'s CSV: the host and its three ranks (1 is the best)."""

    host: str
    k: int
    k_star: int
    k2: int


@dataclass(frozen=True)
class PolicyFacts:
    """The crawl policy: its name, its counters (stats.json), its model folder's report and picture."""

    name: str
    model: Path | None
    counters: dict[str, dict[str, int]]
    graph_svg: str | None
    report_md: Path | None
    report_text: str | None
    model_files: list[str]


@dataclass(frozen=True)
class CrawlFacts:
    """Everything the report shows, read from one output folder."""

    out: Path
    index: IndexFacts
    stats: dict[str, Any] | None  # None: the crawl has not ended (or its stats.json is unreadable)
    config: dict[str, Any] | None
    warc_files: list[tuple[str, int]]  # name, bytes
    robots_files: RobotsFiles  # what the parsed robots.txt files asked of the crawl
    ranking: list[RankRow] | None
    policy: PolicyFacts | None


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from ``path``, or None when it is missing, being replaced or not an object."""
    try:
        value = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def read_ranking(path: Path) -> list[RankRow] | None:
    """The rows of ``rank-host.csv``, or None without one (a malformed row ends the reading there)."""
    try:
        with open(path, newline="") as f:
            rows = []
            for row in csv.DictReader(f):
                try:
                    rows.append(RankRow(row["host"], int(row["k"]), int(row["k_star"]), int(row["k2"])))
                except (KeyError, TypeError, ValueError):
                    break
            return rows
    except OSError:
        return None


def read_policy(config: dict[str, Any] | None, stats: dict[str, Any] | None, out: Path) -> PolicyFacts | None:
    """The policy's facts, or None when the crawl ran none but the default (breadth-first, no model)."""
    table = (config or {}).get("policy", {})
    name = str(table.get("name", "")) or "breadth-first"
    counters = (stats or {}).get("policy") or {}
    model = Path(table["model"]) if table.get("model") else None
    if name == "breadth-first" and model is None and not counters:
        return None
    if model is not None and not model.is_absolute():
        model = out / model if (out / model).exists() else model
    folder = model.parent if model is not None and model.is_file() else model
    graph = text = None
    files: list[str] = []
    if folder is not None and folder.is_dir():
        files = sorted(p.name for p in folder.iterdir())
        graph, text = _read_text(folder / "graph.svg"), _read_text(folder / "report.md")
    return PolicyFacts(name, model, {k: dict(v) for k, v in counters.items() if isinstance(v, dict)},
                       graph, folder / "report.md" if folder is not None and text is not None else None, text, files)


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def read_crawl(out: Path) -> CrawlFacts:
    """The facts of the crawl in ``out`` (its output folder, or a folder of WARC files and indexes)."""
    folder = out / "warc" if (out / "warc").is_dir() else out
    stats = read_json(out / "stats.json")
    manifest = read_json(out / "crawl.json")
    config = (stats or {}).get("config") or (manifest or {}).get("config")
    warcs = []
    for path in sorted(folder.glob("*.warc.gz*")) if folder.is_dir() else []:
        try:
            warcs.append((path.name, path.stat().st_size))
        except OSError:
            continue
    seeds = [s for s in (manifest or {}).get("seeds", []) if isinstance(s, str)]
    index = read_indexes(folder, seeds)
    user_agent = str(((config or {}).get("engine") or {}).get("user_agent", ""))
    max_delay = float(((config or {}).get("politeness") or {}).get("max_crawl_delay", 30.0))
    return CrawlFacts(out, index, stats, config, warcs, census(folder, index.robots_parsed, user_agent, max_delay),
                      read_ranking(out / "rank-host.csv"), read_policy(config, stats, out))
