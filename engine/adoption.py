"""A machine that left, adopted by a survivor (issue 17, item 4; ``cluster.departure = "adopt"``).

When machine X's entry expires, one survivor A (the one that claims the key ``adopt.X``,
``engine/cluster.py``) runs X's supervisor as a child process of its own, in its own process
tree, so that a kill -9 of A's tree kills it too (:class:`Adopted`). It resumes X from X's
folder on the shared storage (``cluster.machines_root/X``, on one box X's ``--out``;
``engine/adopted_process.py``) exactly as ``crawl run --resume`` of X would: X's configuration
and seeds from X's manifest, its agents from their checkpoints and the replay of their archives
since (``engine/resume.py``). So no host moves, nothing is re-derived, X's subjects and durable
consumers still hold what was sent to X meanwhile, and the cost is that of one checkpoint
interval of X's archive, whatever the crawl's length. X's supervisor finds the ring still naming
X live, beats X's entry with ``adopted_by = A`` and crawls on.

It stops as any machine does (the crawl done or stopped), or when X comes back: X's
``crawl run --resume`` finds the folder locked (``OUT/lock``, ``engine/folder_lock.py``) and the
adoption claimed, and puts ``back.X``; the adopted supervisor, seeing it, stops its agents (they
checkpoint), says nothing in its entry (``handed back`` is no stop of the crawl), and exits; X
takes the folder and beats the entry on before it expires (``engine/machines.py: Machines.connect``).
A leaves the key ``adopt.X`` once its child exited; should X still be gone, a survivor adopts it
again. A adopts no one while adopted itself: the machine whose tree runs it does.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import orjson

SETTLE = 60.0  # seconds an adopted supervisor has to stop after its adopter's crawl stopped, before a kill


class Adopted:
    """One machine this one adopted: its supervisor, a child process."""

    def __init__(self, process: asyncio.subprocess.Process, folder: Path) -> None:
        self.process, self.folder, self.started = process, folder, time.time()
        self.ended = asyncio.ensure_future(process.wait())

    @classmethod
    async def start(cls, folder: Path, adopter: str) -> Adopted:
        """``adopter`` runs the machine of ``folder`` (its node the folder's name)."""
        return cls(await asyncio.create_subprocess_exec(sys.executable, "-m", "engine.adopted_process", str(folder),
                                                        adopter), folder)

    def cpu_seconds(self) -> float:
        """The CPU its process tree spent, from the ``stats.json`` it wrote at its end (none if it died first):
        the adopter's own count leaves it out, or ``crawl stats`` would add it twice."""
        stats = self.folder / "stats.json"
        if not stats.exists() or stats.stat().st_mtime < self.started:
            return 0.0
        return float(orjson.loads(stats.read_bytes()).get("cpu_seconds", 0.0))

    @property
    def exited(self) -> int | None:
        """Its exit status, once it exited."""
        return self.ended.result() if self.ended.done() else None

    async def wait(self) -> int:
        """Its exit status, once it stopped (killed after :data:`SETTLE` seconds: its adopter is leaving)."""
        try:
            return await asyncio.wait_for(asyncio.shield(self.ended), SETTLE)
        except TimeoutError:
            self.process.kill()
            return await self.ended
