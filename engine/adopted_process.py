"""The supervisor of a machine that left, run by the survivor that adopted it (``engine/adoption.py``):
``python -m engine.adopted_process FOLDER ADOPTER``, started by that survivor's supervisor, never by hand.

It resumes the machine from ``FOLDER`` (named after its node) as ``crawl run --resume`` of that machine
would: its configuration and seeds from its manifest, but for what is the adopter's to say (the folder
as the adopter sees the shared storage, ``cluster.machines_root`` its parent, no control API, no
progress display), and beats its entry ``adopted_by = ADOPTER``. It exits 1 if it cannot take the
folder (the machine came back first), else as ``crawl run`` does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from engine.cluster import ClusterError
from engine.config import Config, apply, validate
from engine.channel import MANIFEST
from engine.supervisor import CrawlFolderError, prepare_folder, supervise


def adopted_config(folder: Path) -> tuple[Config, list[str]]:
    """Machine ``folder.name``'s configuration and seeds, from its manifest, to run it from ``folder``."""
    manifest = orjson.loads((folder / MANIFEST).read_bytes())
    config = Config()
    apply(config, manifest["config"], str(folder / MANIFEST))
    config.store.dir = str(folder)
    config.cluster.machines_root = str(folder.parent)
    config.control.listen = ""
    config.engine.progress = "off"
    validate(config)
    return config, list(manifest["seeds"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.adopted_process", description="started by a survivor, never by hand")
    parser.add_argument("folder", type=Path, help="the output folder of the machine adopted")
    parser.add_argument("adopter", help="the node adopting it")
    args = parser.parse_args(argv)
    folder = args.folder.resolve()
    try:
        config, seeds = adopted_config(folder)
        agents, _ = prepare_folder(folder, 0, resume=True)
        _, status = supervise(config, seeds, agents, resuming=True, adopted_by=args.adopter)
    except (ClusterError, CrawlFolderError) as e:
        print(f"crawl: machine {args.adopter} cannot adopt {folder.name}: {e}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
