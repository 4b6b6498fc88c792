"""Crawl counters: one mutable record per process, the single source for progress, stats.json and tests."""

from __future__ import annotations

import dataclasses
import os
import resource
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from store.durable import replace_file

# keys of a stats.json that are no quantity to add up over agents (engine/supervisor.py) or machines
# (engine/cluster_stats.py): rates, clocks, reasons, settings
NOT_ADDED = frozenset(("stop_reason", "elapsed_seconds", "pages_per_second", "pages_per_cpu_second", "config",
                       "timeline", "agent", "resumed", "started", "store_full"))


@dataclass
class Counters:
    started: float = 0.0  # monotonic
    pages: int = 0  # responses to page requests (robots.txt excluded), any status
    robots: int = 0  # robots.txt responses
    bytes: int = 0  # body bytes received, as transferred
    stored: int = 0  # response records written
    statuses: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    robots_disallowed: int = 0
    links: int = 0  # links extracted from pages
    redirects: int = 0
    deferred: int = 0  # 429 answers: their URL is fetched again after the Retry-After
    # bodies cut, by kind: "length" (the transfer stopped at network.max_body_bytes), "decoded" (the decoded
    # payload went past it): either way the links past the cut are lost, so a user must be able to see it
    truncated: Counter[str] = field(default_factory=Counter)
    store_filtered: int = 0  # pages the store filter kept out of the WARC files
    refused_addresses: int = 0
    todo_waits: int = 0  # times a fetcher found the todo ring empty
    todo_wait_seconds: float = 0.0  # fetcher-seconds spent waiting on an empty todo ring
    stop_reason: str = ""

    def restore(self, saved: dict[str, Any]) -> None:
        """Continue the totals of a checkpoint (``as_dict`` output); times and stop reason restart."""
        for f in dataclasses.fields(self):
            if f.name in ("started", "stop_reason", "todo_wait_seconds", "todo_waits") or f.name not in saved:
                continue
            if f.name == "statuses":
                self.statuses.update({int(k): v for k, v in saved["statuses"].items()})
            elif f.name in ("errors", "truncated"):
                getattr(self, f.name).update(saved[f.name] if isinstance(saved[f.name], dict) else {})
            else:
                setattr(self, f.name, saved[f.name])

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["statuses"] = {str(k): v for k, v in sorted(self.statuses.items())}
        d["errors"] = dict(self.errors)
        d["truncated"] = dict(self.truncated)
        return d


def cpu_seconds(who: int = resource.RUSAGE_SELF) -> float:
    """User+system CPU of this process since it started (or, with RUSAGE_CHILDREN, of its reaped children)."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (``path.tmp``, then a rename), so a reader never sees half a file.

    A write that finds no room raises :class:`store.errors.StoreFull` and leaves the previous
    file as it was (the temporary is deleted). Not fsynced: it survives a killed process, not
    necessarily a power loss.
    """
    content = orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SORT_KEYS)
    replace_file(path, content, fsync=False, suffix=".tmp")
