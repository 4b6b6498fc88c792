"""A doorbell per agent: a named pipe that senders write a byte to after appending to its spools.

The link spools (``engine/link_exchange.py``) are files, and a file cannot be waited on; reading
them every few tens of milliseconds cost an idle agent ~6 ms of CPU a second, most of what a
politeness-bound crawl spends while it waits. So a sender that has appended frames rings the
receiver's bell (``OUT/links/bell-RRR``, a FIFO), and the receiver's exchange sleeps until its bell
rings instead of polling.

Why a FIFO: it lives beside the spools under any path length (a Unix socket's path may not exceed
108 bytes) and costs one ``write`` per flush. A ring is a hint, never data, so every failure is
harmless: no reader yet (``ENXIO``: the receiver reads its spools once after opening its bell),
a full pipe (``EAGAIN``: rings are already waiting), a reader gone (``EPIPE``: the sender opens
the bell afresh next time).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import stat
from pathlib import Path


def bell_path(folder: Path, agent: int) -> Path:
    return folder / f"bell-{agent:03d}"


class Doorbell:
    """The receiving end: :meth:`wait` returns once the bell has rung since the last wait."""

    def __init__(self, path: Path) -> None:
        with contextlib.suppress(FileExistsError):
            os.mkfifo(path, 0o600)
        if not stat.S_ISFIFO(os.stat(path).st_mode):
            raise RuntimeError(f"{path} is not a named pipe")
        # read and write: the pipe then never reads as closed while no sender has it open
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        self._rung = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._fd, self._on_ring)

    def _on_ring(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._fd, 4096):
                pass
        self._rung.set()

    async def wait(self) -> None:
        """Until the bell rings (or was rung since the last wait or :meth:`clear`)."""
        await self._rung.wait()
        self._rung.clear()

    def clear(self) -> None:
        """Forget the rings so far: the caller is about to read everything they announced."""
        self._rung.clear()

    def poke(self) -> None:
        """Ring from within this agent (it has links of its own to write)."""
        self._rung.set()

    def close(self) -> None:
        """Stop listening, and take the pipe away: a crawl's folder holds only files once it has ended
        (a copy of it must not trip over a pipe). A killed agent leaves its pipe, which it takes up again."""
        self._loop.remove_reader(self._fd)
        os.close(self._fd)
        self.path.unlink(missing_ok=True)


class Bells:
    """The sending end: rings the bells of the receivers in ``folder``, keeping each pipe open."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._fds: dict[int, int] = {}

    def ring(self, receiver: int) -> None:
        fd = self._fds.get(receiver)
        if fd is None:
            try:
                fd = self._fds[receiver] = os.open(bell_path(self.folder, receiver), os.O_WRONLY | os.O_NONBLOCK)
            except OSError as e:
                if e.errno in (errno.ENXIO, errno.ENOENT):
                    return  # no reader yet: it reads its spools once it has opened its bell
                raise
        try:
            os.write(fd, b"\0")
        except BlockingIOError:
            pass  # the pipe is full of rings not read yet: one more would say nothing new
        except BrokenPipeError:
            os.close(self._fds.pop(receiver))  # the reader is gone; a restarted one has a new pipe open

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
