"""The demo crawl: ``crawl run`` with no seeds crawls the in-vitro web on loopback.

Part of the composition root, with ``engine/cli.py``: besides it, the one module of the
crawler that may import ``bench.invitro``, the in-vitro benchmark's web
(``tests/test_layering.py`` checks it), and the only one that knows the
``python -m bench.invitro`` command that ``crawl invitro`` runs. ``engine/cli.py`` imports it
only for a demo crawl or ``crawl invitro``, so other commands never load the in-vitro web.

Reads the run's :class:`~engine.config.Config` and changes three things in it before the
supervisor starts: ``dns.servers`` (the web's loopback DNS server),
``network.allow_networks`` (plus 127.0.0.0/8, said on stderr) and, when no limit is set,
``engine.max_seconds`` (:data:`DEMO_SECONDS`). Writes only the child's folder
``OUT/invitro/`` (its ready file and request log); never touches the crawl's own files.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import orjson

from bench.invitro.process import spawn
from engine.config import Config

DEMO_SECONDS = 30.0
DEMO_HOSTS = 400
LOOPBACK = "127.0.0.0/8"


@contextmanager
def in_vitro_web(config: Config) -> Iterator[list[str]]:
    """Serve the in-vitro web in a child process, aim ``config`` at it and yield its seeds.

    The child is stopped with SIGTERM on the way out, which flushes its request log.
    """
    folder = config.out_dir / "invitro"
    args = ["--hosts", str(DEMO_HOSTS), "--seeds", str(DEMO_HOSTS), "--log", str(folder / "requests.jsonl")]
    try:
        child, web = spawn(folder, args + ["--port", str(previous_port(folder))])
    except RuntimeError:
        try:  # the port the crawl's URLs name is taken now: those URLs fail to connect, the rest of the web is there
            child, web = spawn(folder, args)
        except RuntimeError as e:
            raise SystemExit(f"crawl: error: {e}") from None
    try:
        aim_at(config, web)
        print(
            f"no seeds given: crawling the in-vitro web ({web['hosts']} hosts on {len(web['ips'])} loopback IPs, "
            f"DNS {web['dns']}) for {config.engine.max_seconds or '-'} s; network.allow_networks += {LOOPBACK}",
            file=sys.stderr,
        )
        yield list(web["seeds"])
    finally:
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=30)


def previous_port(folder: Path) -> int:
    """The port the web of an earlier run in this folder served on, or 0 (any free one).

    A resumed demo crawl serves the same web on the same port: its queued URLs name that port.
    """
    try:
        return int(orjson.loads((folder / "ready.json").read_bytes())["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def aim_at(config: Config, web: Mapping[str, Any]) -> None:
    """Point ``config`` at the web whose ready info is ``web``: its DNS, loopback allowed, a time limit."""
    config.dns.servers = [web["dns"]]
    config.network.allow_networks = [*config.network.allow_networks, LOOPBACK]
    if not config.engine.max_seconds and not config.engine.max_pages:
        config.engine.max_seconds = DEMO_SECONDS


def serve(argv: list[str]) -> NoReturn:
    """``crawl invitro ARGS``: become ``python -m bench.invitro ARGS`` (its own options and help)."""
    os.execv(sys.executable, [sys.executable, "-m", "bench.invitro", *argv])
