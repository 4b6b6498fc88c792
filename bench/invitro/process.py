"""The in-vitro web as a child process: start it, wait for its ready file, read its CPU time.

Used by ``crawl run`` (the demo crawl), the benchmarks and the load test, so that the server's
CPU is measured apart from the crawler's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson


def spawn(folder: Path, args: list[str], timeout: float = 60) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """Start ``python -m bench.invitro ARGS --ready-file folder/ready.json``; return it and its ready info.

    The child's stdin is a pipe this process holds open: it stops when this process ends, however.
    """
    folder.mkdir(parents=True, exist_ok=True)
    ready = folder / "ready.json"
    ready.unlink(missing_ok=True)
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.invitro", *args, "--ready-file", str(ready), "--stop-at-stdin-end"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    while not ready.exists():
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            raise RuntimeError(f"the in-vitro web did not start (exit status {child.poll()})")
        time.sleep(0.05)  # a child's ready file: there is no event to wait on across processes
    return child, orjson.loads(ready.read_bytes())


def cpu_of(pid: int) -> float:
    """User+system CPU seconds of a live process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
