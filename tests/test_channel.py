"""The agent's side of the supervisor's channel (``engine/channel.py``) over a real socket pair: whatever ends
it (a supervisor closed, or killed with the agent's status lines unread; a line it cannot read), the agent
stops. A supervised agent leaves its time limit to the supervisor: with the channel gone, it would crawl on."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

import orjson
import pytest

from engine.channel import SupervisorChannel
from engine.status import AgentStatus


@dataclass
class Channel:
    supervisor: socket.socket  # the supervisor's end
    channel: SupervisorChannel
    stopped: asyncio.Future[str]  # the reason the agent was told to stop
    running: asyncio.Task[None]


@contextlib.asynccontextmanager
async def channel() -> AsyncIterator[Channel]:
    supervisor, agent = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    stopped: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    channel = SupervisorChannel(agent, AgentStatus, lambda command: None,
                                lambda reason: stopped.done() or stopped.set_result(reason))
    running = asyncio.create_task(channel.run())
    try:
        yield Channel(supervisor, channel, stopped, running)
    finally:
        running.cancel()
        agent.close()
        supervisor.close()


@pytest.mark.parametrize("unread", [False, True], ids=["closed", "reset"])
async def test_a_supervisor_gone_stops_the_agent(unread: bool) -> None:
    """``reset``: the kernel resets, rather than closes, a Unix socket closed with bytes unread in it, the
    way a supervisor killed with SIGKILL leaves it; the agent's read then fails instead of ending."""
    async with channel() as c:
        c.supervisor.setblocking(False)
        line = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(c.supervisor, 1 << 16), 10)
        assert "status" in orjson.loads(line.splitlines()[0]), "the agent's first status line"
        if unread:
            c.channel.send_status()
            await c.channel.drain()
            assert c.supervisor.recv(1, socket.MSG_PEEK), "a line left unread"
        c.supervisor.close()
        assert await asyncio.wait_for(c.stopped, 10) == "supervisor gone"
        await asyncio.wait_for(c.running, 10)


async def test_a_line_the_agent_cannot_read_stops_it_too() -> None:
    async with channel() as c:
        c.supervisor.sendall(b"not json\n")
        assert await asyncio.wait_for(c.stopped, 10) == "supervisor channel failed"
        with pytest.raises(orjson.JSONDecodeError):
            await asyncio.wait_for(c.running, 10)
