"""One process at a time writes a crawl's output folder: ``OUT/lock``, held with ``flock`` by its supervisor.

Two supervisors writing one folder would break it: a machine resumed while the survivor that adopted
it still runs it (``engine/adoption.py``), or a second ``crawl run --resume`` by mistake. An ``flock``
goes with the process however it ends (kill -9 included), so a stale lock cannot outlive a crash.
The supervisor passes its descriptor to every agent it starts: the lock is the open file's, shared by
every process holding it, so the folder is free only once the supervisor *and* its agents are gone.
An agent outlives a supervisor killed alone by the moments of its clean stop (its last checkpoint);
another supervisor taking the folder then would resume from a checkpoint being rewritten.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK = "lock"


def lock_folder(out: Path) -> int | None:
    """Hold ``OUT/lock`` for this process's life; its descriptor, or None if another process holds it."""
    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
