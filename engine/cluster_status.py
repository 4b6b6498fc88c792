"""``crawl status --cluster nats://HOST:PORT``: every live machine of a crawl over machines, from its
entry in the crawl's bucket (``engine/cluster.py``), read without joining the crawl.

One line per machine: its node, agents, pages stored, state (``crawling``; ``quiet``: idle, with
nothing unsent or unread; ``stopped: REASON``; ``, adopted by NODE`` while a survivor runs a machine
that left, ``engine/adoption.py``) and heartbeat count; then the totals. ``--json``
prints the entries as they are. A machine whose heartbeat stopped for the bucket's TTL is gone.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson

from engine import config as configuration
from engine.cluster import ClusterError, Entry, crawl_status
from engine.config import ClusterConfig, ConfigError


def add_parser(commands: Any) -> None:
    """``crawl status``, under ``crawl``'s subcommands."""
    status = commands.add_parser("status", help="every machine of a crawl over machines (NATS JetStream)")
    status.add_argument("-c", "--config", type=Path, help="a machine's crawl.toml: its cluster.url and cluster.crawl_id")
    status.add_argument("--cluster", metavar="nats://HOST:PORT", help="the crawl's NATS server (cluster.url)")
    status.add_argument("--crawl-id", metavar="ID", help="the crawl's name on the server (cluster.crawl_id; default crawl)")
    status.add_argument("--json", action="store_true", help="print the entries as JSON")


def table(entries: dict[str, Entry]) -> str:
    rows = [("node", "agents", "pages", "state", "beat")]
    rows += [(e.node, str(e.agents), str(e.pages), e.state, str(e.beat)) for _, e in sorted(entries.items())]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    values = entries.values()
    lines.append(f"{len(entries)} machines, {sum(e.agents for e in values)} agents, {sum(e.pages for e in values)} pages")
    return "\n".join(lines) + "\n"


def status(args: argparse.Namespace) -> int:
    try:
        cluster = configuration.load(args.config).cluster if args.config else ClusterConfig()
    except ConfigError as e:
        sys.stderr.write(f"crawl: config error: {e}\n")
        return 2
    cluster.url = args.cluster or cluster.url
    cluster.crawl_id = args.crawl_id or cluster.crawl_id
    if not cluster.url:
        sys.stderr.write("crawl status: which crawl? give --cluster nats://HOST:PORT (or -c crawl.toml)\n")
        return 2
    try:
        entries = asyncio.run(crawl_status(cluster))
    except ClusterError as e:
        sys.stderr.write(f"crawl status: {e}\n")
        return 1
    if args.json:
        sys.stdout.buffer.write(orjson.dumps({node: asdict(e) for node, e in sorted(entries.items())},
                                             option=orjson.OPT_INDENT_2) + b"\n")
    else:
        sys.stdout.write(table(entries))
    return 0
