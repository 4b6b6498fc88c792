"""The supervisor's channel: an agent's status lines out, the control API's commands in.

Over the socket the supervisor gave the agent process (``engine/agent_process.py``): twice a
second while anything but its CPU and memory figures changes or it is idle (the supervisor ends
the crawl on two looks in a row at idle agents), every ``QUIET_PERIOD`` seconds otherwise (an
agent waiting for politeness), and after each command, one JSON line ``{"status": AgentStatus as a dict}``; at the
end ``{"summary": ...}``, or ``{"store_full": ...}`` the moment the disk has no room. The
supervisor sends one JSON line per command: ``stop``, or one for ``obey`` (pause, resume,
seeds, config; ``engine/steering.py``) which it waits to see applied (``command_seq``).
Reads and writes nothing else. The rest of what passes between the two is named here too, so
that an agent process need not import the supervisor: the manifest it starts from
(:data:`MANIFEST`) and its exit status after a full disk (:data:`EXIT_STORE_FULL`).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from typing import Any

import orjson

from engine.status import AgentStatus

MANIFEST = "crawl.json"  # OUT/crawl.json: agents, configuration, seeds (engine/supervisor.py writes it)
EXIT_STORE_FULL = 3  # exit status of an agent, and of ``crawl run``, stopped by a full disk (1: failed, 2: usage)
STATUS_PERIOD = 0.5  # seconds between two status lines
# a waiting agent's status (nothing changed but its CPU and memory) is sent this often: building and
# parsing it twice a second was a third of the CPU of an agent waiting for politeness
QUIET_PERIOD = 5.0
VOLATILE = ("cpu_seconds", "rss_bytes")


async def sleep_on_grid(period: float, offset: float = 0.0) -> None:
    """Sleep to the next instant ``k * period + offset`` on the loop's clock, at least about half a period away.

    The clock is the monotonic one, which every process of a machine shares: the periodic tasks of the agents
    (status lines, progress samples) and the supervisor's look at them wake at the same instants, so that a
    process wakes once for all of them rather than once for each, and a wake-up after a sleep costs more than
    the work it does (``bench/RESULTS.md``, issue 18, "a page after a wait is dearer").
    """
    loop = asyncio.get_running_loop()
    now = loop.time() - offset
    await asyncio.sleep((round(now / period) + 1) * period - now)  # round: a timer may fire a millisecond early


class SupervisorChannel:
    """Status out, commands in; ``obey`` applies a command, ``stop`` ends the agent."""

    def __init__(self, sock: socket.socket, status: Callable[[], AgentStatus],
                 obey: Callable[[dict[str, Any]], None], stop: Callable[[str], None]) -> None:
        self.sock = sock
        self.status = status
        self.obey = obey
        self.stop = stop
        self.command_seq = 0
        self._writer: asyncio.StreamWriter | None = None

    async def run(self) -> None:
        reader, writer = await asyncio.open_connection(sock=self.sock)
        self._writer = writer

        async def send_status() -> None:
            loop = asyncio.get_running_loop()
            last: dict[str, Any] = {}
            sent_at = 0.0
            while True:
                status = self.status().as_dict()
                steady = {k: v for k, v in status.items() if k not in VOLATILE}
                if steady != last or status["idle"] or loop.time() - sent_at >= QUIET_PERIOD:
                    self.tell({"status": status})
                    last, sent_at = steady, loop.time()
                    await self.drain()  # a reset is the reader's to notice
                await sleep_on_grid(STATUS_PERIOD)  # a reporting period

        sender = asyncio.create_task(send_status())
        try:
            # a supervisor killed with status lines of ours unread resets the socket rather than closing it:
            # gone all the same, or the agent would crawl on with nobody to stop it
            with contextlib.suppress(ConnectionError):
                while line := await reader.readline():
                    command = orjson.loads(line)
                    if command["cmd"] == "stop":
                        self.stop(command.get("reason", "stopped"))
                        continue
                    self.obey(command)
                    self.command_seq = command["seq"]
                    self.send_status()  # the supervisor waits for it
            self.stop("supervisor gone")
        except Exception:  # nobody would stop this agent any more: it must not crawl on, unsupervised
            self.stop("supervisor channel failed")
            raise
        finally:
            sender.cancel()

    def send_status(self) -> None:
        self.tell({"status": self.status().as_dict()})

    def tell(self, message: dict[str, Any]) -> None:
        if self._writer is not None and not self._writer.is_closing():
            self._writer.write(orjson.dumps(message) + b"\n")

    async def drain(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(ConnectionError):
                await self._writer.drain()
