"""``crawl stats OUT...``: the crawl-wide summary of a crawl over several machines, each machine's
``OUT/stats.json`` (``engine/supervisor.py``) added up, with one row per machine.

It reads the files rather than the crawl's bucket (``engine/cluster.py``): an entry carries only a
machine's page count, the bucket's entries vanish with their heartbeats, and no machine knows
when it is the last to write its ``stats.json``; the files hold every counter, outlive the broker,
and are added up by the same rule as the agents of one machine (``engine/status.py: add_up``).
Copied beside each other from the machines (or on shared storage), they give the same sum
whenever it is run.

The counters (pages, bytes, stored, status and error mixes, CPU, memory, messages) are added;
``elapsed_seconds`` is the longest machine's (they run side by side), and the rates are taken
again from the sums. ``ips`` is per machine only: two machines can hold hosts of one IP.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from engine.stats import NOT_ADDED, write_json
from engine.status import add_up

PER_MACHINE = frozenset(("cluster", "agents", "startup_seconds", "ips"))  # meaningful for one machine, not summed
ROW = ("pages", "bytes", "stored", "statuses", "stop_reason", "elapsed_seconds", "cpu_seconds", "pages_per_cpu_second",
       "ips", "restarts")


def add_parser(commands: Any) -> None:
    """``crawl stats``, under ``crawl``'s subcommands."""
    stats = commands.add_parser("stats", help="the crawl-wide summary of several machines' output folders")
    stats.add_argument("outs", nargs="+", type=Path, metavar="OUT", help="a machine's output folder (its stats.json)")
    stats.add_argument("--out", type=Path, metavar="FILE.json", help="write the summary there (default: stdout)")


def machine_row(name: str, summary: Mapping[str, Any]) -> dict[str, Any]:
    cluster = summary.get("cluster", {})
    return {"node": cluster.get("node", name), **{k: summary[k] for k in ROW if k in summary},
            "messages_sent": cluster.get("messages_sent", 0), "messages_received": cluster.get("messages_received", 0)}


def crawl_wide(named: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """The summaries of several machines as one; each with a name for one that has no ``cluster.node``."""
    rows = [machine_row(name, s) for name, s in named]
    summaries = [s for _, s in named]
    nodes = [row["node"] for row in rows]
    if len(set(nodes)) < len(nodes):
        raise ValueError(f"a machine given twice: {sorted(nodes)} (its figures would count twice)")
    total = add_up([{k: v for k, v in s.items() if k not in NOT_ADDED | PER_MACHINE} for s in summaries])
    total["messages_sent"] = sum(row["messages_sent"] for row in rows)
    total["messages_received"] = sum(row["messages_received"] for row in rows)
    elapsed = max((float(s.get("elapsed_seconds", 0.0)) for s in summaries), default=0.0)
    pages, cpu = total.get("pages", 0), total.get("cpu_seconds", 0.0)
    return {**total, "elapsed_seconds": elapsed,
            "pages_per_second": pages / elapsed if elapsed else 0.0,
            "pages_per_cpu_second": pages / cpu if cpu else 0.0,
            "stop_reasons": sorted({str(s.get("stop_reason", "")) for s in summaries} - {""}),
            "machines": sorted(rows, key=lambda row: str(row["node"]))}


def stats(args: argparse.Namespace) -> int:
    summaries = []
    for out in args.outs:
        path = out / "stats.json"
        try:
            summaries.append((str(out), orjson.loads(path.read_bytes())))
        except (OSError, orjson.JSONDecodeError) as e:
            sys.stderr.write(f"crawl stats: cannot read {path}: {e}\n")
            return 1
    try:
        summary = crawl_wide(summaries)
    except ValueError as e:
        sys.stderr.write(f"crawl stats: {e}\n")
        return 2
    if args.out:
        write_json(args.out, summary)
    else:
        sys.stdout.buffer.write(orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n")
    return 0
