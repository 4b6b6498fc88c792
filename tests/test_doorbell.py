"""The doorbell: rings wake a waiting receiver, and every failure of a ring is harmless."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from engine.doorbell import Bells, Doorbell, bell_path
from engine.link_exchange import Inbox, Outbox

WAIT = 5.0  # seconds: a wake that does not come fails the test, it never hangs it


async def test_a_ring_before_the_receiver_listens_is_dropped_and_a_later_one_wakes_it(tmp_path: Path) -> None:
    bells = Bells(tmp_path)
    bells.ring(0)  # no pipe yet: nothing happens, the receiver reads its spools once it listens
    bell = Doorbell(bell_path(tmp_path, 0))
    waiting = asyncio.create_task(bell.wait())
    await asyncio.sleep(0)
    assert not waiting.done()
    bells.ring(0)
    await asyncio.wait_for(waiting, WAIT)
    bell.close()
    bells.close()


async def test_rings_while_nobody_waits_are_kept_until_the_next_wait_and_a_clear_forgets_them(tmp_path: Path) -> None:
    bell = Doorbell(bell_path(tmp_path, 1))
    bells = Bells(tmp_path)
    for _ in range(100_000):  # far more than a pipe holds: a full pipe is not an error
        bells.ring(1)
    await asyncio.wait_for(bell.wait(), WAIT)
    bells.ring(1)
    await asyncio.sleep(0.05)  # let the loop see the pipe readable (what is asserted is that clear forgets it)
    bell.clear()
    waiting = asyncio.create_task(bell.wait())
    await asyncio.sleep(0.05)
    assert not waiting.done()
    bell.poke()
    await asyncio.wait_for(waiting, WAIT)
    bell.close()
    bells.close()


async def test_a_sender_outlives_a_restarted_receiver(tmp_path: Path) -> None:
    path = bell_path(tmp_path, 2)
    bells = Bells(tmp_path)
    first = Doorbell(path)
    bells.ring(2)
    await asyncio.wait_for(first.wait(), WAIT)
    first.close()
    bells.ring(2)  # no reader: a broken pipe, dropped
    second = Doorbell(path)
    bells.ring(2)
    await asyncio.wait_for(second.wait(), WAIT)
    second.close()
    bells.close()


async def test_an_outbox_write_rings_its_receiver_who_then_reads_the_links(tmp_path: Path) -> None:
    bell = Doorbell(bell_path(tmp_path, 1))
    inbox = Inbox(tmp_path, 1, [0])
    outbox = Outbox(tmp_path, 0, 2, bells=tmp_path)
    outbox.add(1, "http://a.test/", ["http://b.test/x"])
    waiting = asyncio.create_task(bell.wait())
    await asyncio.sleep(0.05)
    assert not waiting.done()  # buffered, not written: no ring yet
    outbox.flush()
    await asyncio.wait_for(waiting, WAIT)
    assert inbox.poll() == [("http://a.test/", ["http://b.test/x"], None)]
    outbox.close()
    bell.close()


def test_a_bell_path_taken_by_a_file_is_an_error(tmp_path: Path) -> None:
    path = bell_path(tmp_path, 3)
    path.write_bytes(b"")

    async def listen() -> None:
        Doorbell(path)

    with pytest.raises(RuntimeError, match="not a named pipe"):
        asyncio.run(listen())
    assert os.path.getsize(path) == 0


async def test_a_closed_bell_leaves_no_pipe_behind(tmp_path: Path) -> None:
    bell = Doorbell(bell_path(tmp_path, 4))
    bell.close()
    assert list(tmp_path.iterdir()) == []
    Bells(tmp_path).ring(4)  # nobody listens any more: dropped
