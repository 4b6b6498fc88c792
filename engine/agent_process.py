"""One agent process: ``python -m engine.agent_process OUT INDEX FD [--count-restored-pages]``.

Started by the supervisor (``engine/supervisor.py``), never by hand. It reads the crawl's
manifest (``OUT/crawl.json``: agents, configuration, seeds, and in a crawl over several
machines the members its ring is made of), runs agent ``INDEX`` on uvloop,
and talks to the supervisor over the socket inherited as file descriptor ``FD``. It exits 0
after a clean stop, and :data:`~engine.channel.EXIT_STORE_FULL` (3) when it stopped because
the disk has no room (in the crawl, or already while recovering its files): the supervisor
then stops the crawl rather than restart it into a full disk. Anything else makes the
supervisor restart it, and the restarted agent resumes from its checkpoint.
"""

from __future__ import annotations

from engine import heap

heap.collect_less_often()  # before the imports below: loading the crawler's modules allocates ~100,000 objects

import argparse  # noqa: E402
import contextlib  # noqa: E402
import socket  # noqa: E402
from pathlib import Path  # noqa: E402

import orjson  # noqa: E402

from engine.agent import run_agent  # noqa: E402
from engine.config import Config, apply, validate  # noqa: E402
from engine.channel import EXIT_STORE_FULL, MANIFEST  # noqa: E402
from store.errors import StoreFull  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.agent_process")
    parser.add_argument("out", type=Path)
    parser.add_argument("index", type=int)
    parser.add_argument("fd", type=int)
    parser.add_argument("--count-restored-pages", action="store_true",
                        help="add the pages of a resumed checkpoint to the crawl's shared page count")
    args = parser.parse_args(argv)
    heap.keep_buffers_out_of_the_heap()
    manifest = orjson.loads((args.out / MANIFEST).read_bytes())
    config = Config()
    apply(config, manifest["config"], str(args.out / MANIFEST))
    validate(config)
    channel = socket.socket(fileno=args.fd)
    try:
        members = [(node, agents) for node, agents in manifest["members"]] if "members" in manifest else None
        summary = run_agent(config, manifest["seeds"], index=args.index, agents=manifest["agents"], channel=channel,
                            count_restored_pages=args.count_restored_pages, members=members, live=manifest.get("live"))
    except StoreFull as e:  # before the crawl began: repairing the files or opening the frontier
        with contextlib.suppress(OSError):
            channel.sendall(orjson.dumps({"store_full": {"message": str(e), "path": str(e.path)}}) + b"\n")
        return EXIT_STORE_FULL
    return EXIT_STORE_FULL if "store_full" in summary else 0


if __name__ == "__main__":
    raise SystemExit(main())
