"""Membership, the end check, the bridge and ``crawl status`` of a crawl over several machines
(engine/cluster.py, engine/bridge.py, engine/cluster_status.py), against a real nats-server started
by the test on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest

from engine.bridge import Bridge
from engine.cluster import (TURN, Cluster, ClusterError, Entry, adopt_key, crawl_over, left_out, machines, newcomer,
                            note_beats, rejoining, running, stop_tasks, stream_name, subject)
from engine.config import ClusterConfig
from engine.link_exchange import BRIDGE, Inbox, Outbox
from engine.machines import Machines
from engine.ownership import GlobalRing
from engine.routing import HANDED
from tests.nats_server import nats_server

MEMBERS = [("a", 1), ("b", 1)]
RING = GlobalRing(MEMBERS)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with nats_server(tmp_path / "nats") as running:
        yield running.url


def config(url: str, node: str, size: int = 2, timeout: float = 20.0) -> ClusterConfig:
    # entries outlive the slowest step of a test on a loaded machine (two `crawl status` processes in a row)
    return ClusterConfig(url=url, node=node, size=size, crawl_id="t1", join_timeout=timeout, ttl=60.0)


async def test_machines_wait_for_each_other_and_see_the_same_members(server: str) -> None:
    a, b = Cluster(config(server, "a"), 1), Cluster(config(server, "b"), 2)
    await a.connect()
    await b.connect()
    try:
        first = asyncio.create_task(a.wait_members())
        deadline = time.monotonic() + 20
        while "a" not in await b.view():  # a has joined, alone: it must be waiting for b
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        assert not first.done()
        members = await b.wait_members()
        assert members == await first == [("a", 1), ("b", 2)]
        assert set(await a.view()) == {"a", "b"}
    finally:
        await a.close()
        await b.close()


async def test_the_heartbeat_loop_ends_when_cancelled_as_a_beat_is_put(server: str) -> None:
    """The supervisor cancels the heartbeat loop at the crawl's end; cancelled just as a beat is put, the loop
    ends. With ``asyncio.wait_for`` around the beat it did not before Python 3.12 (CPython #86296): the beat's
    result came back, the cancellation was lost, and a supervisor beat on for 16 minutes after its crawl."""
    supervisor = SimpleNamespace(config=SimpleNamespace(cluster=config(server, "a")), stopping=True)
    machines = Machines(supervisor, 1)  # type: ignore[arg-type]
    machines.ring = GlobalRing([("a", 1)])
    await machines.cluster.connect()
    beats = 0

    async def beat_then_cancelled() -> None:
        nonlocal beats
        await machines.cluster.beat()
        beats += 1
        heartbeat.cancel()  # the crawl ends as the entry is put

    machines.beat = beat_then_cancelled  # type: ignore[method-assign]
    heartbeat = asyncio.create_task(machines.beat_loop())
    try:
        done, _ = await asyncio.wait({heartbeat}, timeout=10)
        assert heartbeat in done and heartbeat.cancelled()
        assert beats == 1
    finally:
        heartbeat.cancel()
        await machines.cluster.close()


async def pulls(queue: asyncio.Queue[str]) -> None:
    """A loop as the NATS client's pulls are: a wait_for around a get (``Subscription.next_msg``)."""
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(queue.get(), 5.0)


async def test_a_loop_whose_wait_for_lost_the_cancellation_is_stopped_all_the_same() -> None:
    """A message that arrives as its task is cancelled: before Python 3.12, wait_for returns it and the
    cancellation is lost, the loop goes on; stop_tasks asks again until the task has ended."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    task = asyncio.create_task(pulls(queue))
    await asyncio.sleep(0)  # waiting on the queue
    queue.put_nowait("links")
    task.cancel()
    for _ in range(5):
        await asyncio.sleep(0)
    if sys.version_info < (3, 12):
        assert not task.done()  # the cancellation was lost
    await asyncio.wait_for(stop_tasks([task]), 5.0)
    assert task.cancelled()


async def test_stopping_tasks_cancelled_itself_still_waits_for_them() -> None:
    """The bridge stops its pulls while the machine stops the bridge: its tasks end first, then the
    cancellation goes on."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    inner = asyncio.create_task(pulls(queue))

    async def bridge() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            queue.put_nowait("links")  # as the pull is cancelled: the first cancellation lost, before 3.12
            await stop_tasks([inner])

    outer = asyncio.create_task(bridge())
    await asyncio.sleep(0)
    await asyncio.wait_for(stop_tasks([outer]), 5.0)
    assert outer.cancelled() and inner.cancelled()


async def test_views_leave_no_consumer_on_the_server(server: str) -> None:
    """A machine reads the view every heartbeat for as long as the crawl runs: each read must leave nothing
    behind on the server, or the server refuses the machines' reads after a few minutes."""
    a, b = Cluster(config(server, "a"), 1), Cluster(config(server, "b"), 1)
    await a.connect()
    await b.connect()
    try:
        await a.beat()
        await b.beat()
        for _ in range(40):  # 20 s of heartbeats of one machine
            assert set(await a.view()) == {"a", "b"}
        info = await a.js.stream_info("KV_crawl-t1")
        assert info.state.consumer_count == 0
    finally:
        await a.close()
        await b.close()


async def test_a_machine_too_many_is_refused(server: str) -> None:
    machines = [Cluster(config(server, n, size=1), 1) for n in "ab"]
    for m in machines:
        await m.connect()
        await m.beat()
    try:
        with pytest.raises(ClusterError, match="more than cluster.size"):
            await machines[0].wait_members()
    finally:
        for m in machines:
            await m.close()


def crawl_status(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine.cli", "status", *args], capture_output=True, text=True,
                          timeout=60)


async def test_crawl_status_shows_every_machine_of_the_crawl_without_joining_it(server: str, tmp_path: Path) -> None:
    a, b, c = Cluster(config(server, "a"), 1), Cluster(config(server, "b"), 2), Cluster(config(server, "c"), 1)
    for m in (a, b, c):
        await m.connect()
    try:
        await a.beat(pages=120, quiet=True)
        await b.beat(pages=7)
        await b.beat(stop="max_pages")
        assert await a.claim(adopt_key("c")), "c left: a adopts it"  # a key of the bucket, no machine's entry
        c.entry = Entry("c", 1, adopted_by="a")  # as c's supervisor, run by a, beats it
        await c.beat()
        shown = await asyncio.to_thread(crawl_status, "--cluster", server, "--crawl-id", "t1")
        assert shown.returncode == 0, shown.stderr
        assert [line.split() for line in shown.stdout.splitlines()] == [
            ["node", "agents", "pages", "state", "beat"],
            ["a", "1", "120", "quiet", "1"],
            ["b", "2", "7", "stopped:", "max_pages", "2"],
            ["c", "1", "0", "crawling,", "adopted", "by", "a", "1"],
            ["3", "machines,", "4", "agents,", "127", "pages"],
        ]
        (tmp_path / "crawl.toml").write_text(f'[cluster]\nurl = "{server}"\nnode = "z"\nsize = 2\ncrawl_id = "t1"\n')
        shown = await asyncio.to_thread(crawl_status, "-c", str(tmp_path / "crawl.toml"), "--json")
        entries = orjson.loads(shown.stdout)
        assert [Entry(**e) for e in entries.values()] == [Entry("a", 1, 1, True, pages=120),
                                                          Entry("b", 2, 2, stop="max_pages", pages=7),
                                                          Entry("c", 1, 1, adopted_by="a")]
        for _ in range(2):  # a crawl the server does not know is not created by asking
            shown = await asyncio.to_thread(crawl_status, "--cluster", server, "--crawl-id", "nope")
            assert shown.returncode == 1 and "no crawl 'nope'" in shown.stderr
        assert set(await a.view()) == {"a", "b", "c"}, "asking joined nothing"
    finally:
        for m in (a, b, c):
            await m.close()


AB, BA = "a.0>1", "b.0>0"  # the spools between the two machines' agents


def entries(**state: tuple[int, bool, dict[str, list[int]], dict[str, list[int]]]) -> dict[str, Entry]:
    return {n: Entry(n, 1, beat, quiet, published, received)
            for n, (beat, quiet, published, received) in state.items()}


def test_the_crawl_is_over_only_on_two_quiet_views_whose_spools_are_taken_in_to_where_published() -> None:
    a, b = {AB: [1, 300]}, {BA: [1, 200]}
    before = entries(a=(1, True, a, b), b=(1, True, b, a))
    assert crawl_over(before, entries(a=(2, True, a, b), b=(2, True, b, a)), RING)
    assert not crawl_over(before, entries(a=(2, True, a, b), b=(1, True, b, a)), RING)  # b did not beat again
    moved = {AB: [1, 400]}
    assert not crawl_over(before, entries(a=(2, True, a, b), b=(2, True, b, moved)), RING)  # b took in more since
    assert not crawl_over(before, entries(a=(2, True, a, b), b=(2, False, b, a)), RING)
    assert not crawl_over(before, entries(a=(2, True, a, b)), RING)  # b's entry expired
    behind = {AB: [1, 100]}  # a's last message to b is still in the stream
    stuck = entries(a=(1, True, a, b), b=(1, True, b, behind))
    assert not crawl_over(stuck, entries(a=(2, True, a, b), b=(2, True, b, behind)), RING)
    done = {**entries(a=(2, False, {}, {})), "b": Entry("b", 1, 3, stop="done")}
    assert crawl_over({}, done, RING)


def test_after_a_machine_left_the_end_needs_only_the_live_ones_and_their_spools_between_them() -> None:
    three = [("a", 1), ("b", 1), ("c", 1)]
    a, c = {"a.0>2": [1, 300], "a.0>1": [1, 50]}, {"c.0>0": [1, 200], "c.0>1": [1, 70]}  # to b: never taken in
    from_c, from_a = {"c.0>0": [1, 200]}, {"a.0>2": [1, 300]}
    view = lambda beat: {"a": Entry("a", 1, beat, True, a, from_c), "c": Entry("c", 1, beat, True, c, from_a)}  # noqa: E731
    assert not crawl_over(view(1), view(2), GlobalRing(three)), "b's entry expired: the ring with b is not over"
    left = GlobalRing(three, ["a", "c"])
    assert crawl_over(view(1), view(2), left), "the spools to b, the machine gone, do not count"
    behind = {"a": Entry("a", 1, 2, True, a, from_c), "c": Entry("c", 1, 2, True, c, {"a.0>2": [1, 100]})}
    assert not crawl_over(view(1), behind, left)
    # b comes back: beating again does not bring it back, asking to rejoin does; b sees it was left out
    back = {**view(3), "b": Entry("b", 1, 1, live=["a", "b", "c"])}
    back["a"] = Entry("a", 1, 3, True, a, from_c, live=["a", "c"])
    assert rejoining(left, back) == []
    assert rejoining(left, {**back, "b": Entry("b", 1, 2, live=["a", "b", "c"], joining=True)}) == ["b"]
    assert rejoining(left, {**back, "b": Entry("b", 1, 2, joining=True, stop="x")}) == []
    assert left_out("b", back) == ["a"] and left_out("a", back) == []
    assert not crawl_over({}, {**view(2), "b": Entry("b", 1, 1, stop="done")}, left), "b's word counts no more"
    assert not crawl_over(view(1), {**view(2), "b": Entry("b", 1, 1, joining=True)}, left), "b is taking its hosts back"


def test_a_newcomer_asks_with_the_members_and_itself_appended_and_the_first_by_name_goes_first() -> None:
    members = [("b", 1), ("a", 2)]  # join order, not sorted
    view = {"a": Entry("a", 2, members=members), "b": Entry("b", 1, members=members)}
    assert not running("a", view) and running("c", view), "c, not among the members, finds a crawl under way"
    assert not running("c", {"a": Entry("a", 2)}), "no member list yet: the machines of the start gather"
    assert newcomer(members, view) is None
    asking = {**view, "d": Entry("d", 3, joining=True, members=[*members, ("d", 3)]),
              "c": Entry("c", 1, joining=True, members=[*members, ("c", 1)])}
    assert newcomer(members, asking) == ("c", 1)
    assert newcomer(members, {**asking, "c": Entry("c", 1, joining=True, stop="x", members=[*members, ("c", 1)])}) \
        == ("d", 3), "a newcomer that stopped asks no more"
    stale = {**view, "c": Entry("c", 1, joining=True, members=[("b", 1), ("c", 1)])}
    assert newcomer(members, stale) is None, "it asked with another member list: it asks again with ours"
    assert newcomer([*members, ("c", 1)], asking) is None, "d asked before c joined: it asks again with c's list"
    assert rejoining(GlobalRing(members, ["a"]), asking) == [], "a newcomer is not a member rejoining"
    assert Entry.decode(asking["c"].encode()) == asking["c"]


async def test_one_machine_at_a_time_holds_the_join_turn(server: str) -> None:
    c, d = Cluster(config(server, "c"), 1), Cluster(config(server, "d"), 1)
    member = Cluster(config(server, "a"), 1)
    for m in (c, d, member):
        await m.connect()
    try:
        await member.beat(members=[("a", 1)])
        await c.take_turn(lambda view: not running("c", view))
        with pytest.raises(TimeoutError):  # three beats: d waits while c holds the turn
            await asyncio.wait_for(d.take_turn(lambda view: not running("d", view)), 1.5)
        assert set(await member.view()) == {"a"}, "the turn is no machine's entry"
        await c.keep(TURN)
        assert await c.holder(TURN) == "c" and await c.holder(adopt_key("b")) is None
        assert not await d.claim(TURN), "held by c"
        await c.release(TURN)
        await asyncio.wait_for(d.take_turn(lambda view: not running("d", view)), 10)
        await member.beat(stop="done")
        with pytest.raises(ClusterError, match="stopped before machine c could join"):
            await c.take_turn(lambda view: not running("c", view))
    finally:
        for m in (c, d, member):
            await m.close()


async def test_a_run_after_a_kill_puts_its_entry_again_only_if_it_never_expired(server: str) -> None:
    """The entry a killed run left is put again by the next run if it is still there (the others rightly
    name that machine live), with its state and the next beat number; once it is gone (expired: deleted
    here), it is not: the others are about to see it leave."""
    killed, resumed, other = (Cluster(config(server, "c"), 1), Cluster(config(server, "c"), 1),
                              Cluster(config(server, "a"), 1))
    for m in (killed, resumed, other):
        await m.connect()
    try:
        await killed.beat(joining=True, members=[("a", 1), ("c", 1)], quiet=True)
        assert await resumed.renew()
        entry = (await other.view())["c"]
        assert (entry.beat, entry.joining, entry.members, entry.quiet) == (2, True, [("a", 1), ("c", 1)], False)
        assert resumed.entry == entry
        await other.release("c")  # as the TTL would
        assert not await resumed.renew(), "expired: not put again"
        assert "c" not in await other.view()
    finally:
        for m in (killed, resumed, other):
            await m.close()


async def wait_for(predicate, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_links_cross_machines_through_the_stream_and_are_acknowledged_once_on_disk(server: str,
                                                                                         tmp_path: Path) -> None:
    ring = GlobalRing(MEMBERS)
    to_b = ring.index(("b", 0))
    machines = {n: Cluster(config(server, n), 1) for n in "ab"}
    for m in machines.values():
        await m.connect()
    out = {n: tmp_path / n for n in "ab"}
    bridges = {n: Bridge(machines[n].js, out[n], "t1", n, 1, ring) for n in "ab"}
    receiving = asyncio.create_task(bridges["b"].run())
    try:
        outbox = Outbox(out["a"] / "remote", 0, [to_b])  # agent 0 of a, writing for agent 0 of b
        links = [f"http://h{i}.test/{'x' * 300}" for i in range(3000)]  # several messages' worth
        for i in range(0, len(links), 10):
            outbox.add(to_b, "http://a.test/", links[i:i + 10])
        outbox.flush()
        assert await bridges["a"].send_once()
        assert bridges["a"].messages_sent >= 2  # cut into messages under the payload limit
        assert bridges["a"].drained({0: {str(BRIDGE): [1, 0]}})  # all published, and a took in nothing
        inbox = Inbox(out["b"] / "links", 0, [BRIDGE])
        got: list[str] = []
        await wait_for(lambda: got.extend(u for _, batch, _ in inbox.poll() for u in batch) or len(got) >= len(links))
        assert got == links
        await wait_for(lambda: bridges["b"].received == bridges["a"].published == {"a.0>1": [1, outbox.positions()[to_b][1]]})
        deadline = time.monotonic() + 20
        while (await machines["a"].js.stream_info(stream_name("t1"))).state.messages:  # acks are asynchronous
            assert time.monotonic() < deadline, "the messages were never acknowledged"
            await asyncio.sleep(0.02)
        assert bridges["b"].drained({0: {str(BRIDGE): list(inbox.positions()[BRIDGE])}})
        assert not bridges["b"].drained({0: {}})
        # the sender's read positions are saved: a restarted bridge publishes nothing again
        again = Bridge(machines["a"].js, out["a"], "t1", "a", 1, ring)
        assert not await again.send_once()
        assert again.published == bridges["a"].published  # the end check's positions outlive a restart
        restarted = Bridge(machines["b"].js, out["b"], "t1", "b", 1, ring)
        assert restarted.received == bridges["b"].received
        restarted.writer.close()
        again.writer.close()
        outbox.close()
    finally:
        receiving.cancel()
        await asyncio.gather(receiving, return_exceptions=True)
        for m in machines.values():
            await m.close()


async def test_a_restarted_bridge_gets_at_once_what_its_killed_run_was_delivered_and_never_wrote(server: str,
                                                                                                  tmp_path: Path) -> None:
    """b's supervisor was killed with a message delivered (its consumer waits for the acknowledgement) and not
    yet on disk; its next run takes it in at once, not after the consumer's ack wait (30 s): the crawl could
    be over by then, since a later message of the same spool shows it taken in."""
    ring = GlobalRing(MEMBERS)
    to_b = ring.index(("b", 0))
    a, b, killed = Cluster(config(server, "a"), 1), Cluster(config(server, "b"), 1), Cluster(config(server, "b"), 1)
    for m in (a, b, killed):
        await m.connect()
    out = {n: tmp_path / n for n in "ab"}
    sender = Bridge(a.js, out["a"], "t1", "a", 1, ring)
    outbox = Outbox(out["a"] / "remote", 0, [to_b])
    outbox.add(to_b, f"{HANDED}a,b ", ["http://h1.test/queued"])
    outbox.flush()
    assert await sender.send_once()
    sub = await killed.js.pull_subscribe(subject("t1", "b", 0), durable="b-0", stream=stream_name("t1"))
    assert len(await sub.fetch(1, timeout=5.0)) == 1  # delivered, never acknowledged: then the kill
    await killed.close()
    receiver = Bridge(b.js, out["b"], "t1", "b", 1, ring)
    receiving = asyncio.create_task(receiver.run())
    try:
        inbox = Inbox(out["b"] / "links", 0, [BRIDGE])
        got: list[str] = []
        await wait_for(lambda: got.extend(u for _, batch, _ in inbox.poll() for u in batch) or bool(got), timeout=10.0)
        assert got == ["http://h1.test/queued"]
    finally:
        receiving.cancel()
        await asyncio.gather(receiving, return_exceptions=True)
        sender.writer.close()
        outbox.close()
        for m in (a, b):
            await m.close()


def test_a_beat_is_aged_from_when_this_machine_first_saw_it() -> None:
    view = {"a": Entry("a", 2, beat=5, pages=7), "b": Entry("b", 1, beat=3, quiet=True)}
    beats = note_beats({}, view, now=100.0)
    later = {"a": Entry("a", 2, beat=5, pages=7), "b": Entry("b", 1, beat=4, stop="done")}
    beats = note_beats(beats, later, now=101.5)  # a has not beaten since: its age goes on
    assert machines(later, beats, now=102.0) == [
        {"node": "a", "agents": 2, "pages": 7, "state": "crawling", "beat": 5, "beat_age_seconds": 2.0},
        {"node": "b", "agents": 1, "pages": 0, "state": "stopped: done", "beat": 4, "beat_age_seconds": 0.5},
    ]
    assert note_beats(beats, {"b": later["b"]}, now=103.0) == {"b": (4, 101.5)}  # a's entry expired: gone
