"""The agent's side of the supervisor's channel (``engine/channel.py``) over a real socket pair: a supervisor
that goes away, closed or killed with the agent's status lines unread, stops the agent."""

from __future__ import annotations

import asyncio
import socket

import orjson
import pytest

from engine.channel import SupervisorChannel
from engine.status import AgentStatus


@pytest.mark.parametrize("unread", [False, True], ids=["closed", "reset"])
async def test_a_supervisor_gone_stops_the_agent(unread: bool) -> None:
    """``reset``: the kernel resets, rather than closes, a Unix socket closed with bytes unread in it, the
    way a supervisor killed with SIGKILL leaves it; the agent's read then fails instead of ending."""
    supervisor, agent = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    stopped: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    channel = SupervisorChannel(agent, AgentStatus, lambda command: None,
                                lambda reason: stopped.done() or stopped.set_result(reason))
    running = asyncio.create_task(channel.run())
    try:
        supervisor.setblocking(False)
        line = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(supervisor, 1 << 16), 10)
        assert "status" in orjson.loads(line.splitlines()[0]), "the agent's first status line"
        if unread:
            channel.send_status()
            await channel.drain()
            assert supervisor.recv(1, socket.MSG_PEEK), "a line left unread"
        supervisor.close()
        assert await asyncio.wait_for(stopped, 10) == "supervisor gone"
        await asyncio.wait_for(running, 10)
    finally:
        running.cancel()
        agent.close()
