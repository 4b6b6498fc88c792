"""The pieces several agents share: host ownership, link spools, the machine-wide IP table, sd_notify."""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.ip_table import BUSY, LOCK_FILES, PROBE_EVERY, SharedIpTable
from engine.link_exchange import Inbox, Outbox, spool_dir
from engine.ownership import HashRing
from engine.routing import HANDED, LinkRouter
from engine.sdnotify import Notifier
from frontier.page import LinkContext
from frontier.policy import CrawlPolicy

# -- ownership ------------------------------------------------------------------------------------


def test_hosts_spread_evenly_and_move_little_when_an_agent_is_added() -> None:
    hosts = [f"h{i}.example.org" for i in range(20_000)]
    four, five = HashRing(4), HashRing(5)
    shares = Counter(four.owner(h) for h in hosts)
    assert set(shares) == {0, 1, 2, 3}
    assert max(shares.values()) / min(shares.values()) < 1.4
    moved = sum(four.owner(h) != five.owner(h) for h in hosts)
    assert moved / len(hosts) < 0.3  # about 1/5 would move; a modulo hash would move 4/5
    assert all(HashRing(1).owner(h) == 0 for h in hosts[:100])


# -- link spools -------------------------------------------------------------------------------------

batches = st.lists(
    st.tuples(st.integers(1, 2), st.lists(st.from_regex(r"http://h[0-9]{1,3}\.test/[a-z]{0,8}", fullmatch=True),
                                          min_size=1, max_size=5)),
    min_size=1, max_size=40,
)


@settings(max_examples=40, deadline=None)
@given(batches=batches, cut_at=st.integers(0, 39), torn=st.integers(1, 30))
def test_every_link_written_is_read_once_across_a_torn_write_and_restarts(tmp_path_factory, batches, cut_at,  # type: ignore[no-untyped-def]
                                                                          torn) -> None:
    root = tmp_path_factory.mktemp("spool")
    outbox = Outbox(root, 0, 3, segment_bytes=256)  # tiny segments: rotation on most writes
    inboxes = {r: Inbox(root, r, 3) for r in (1, 2)}
    received: dict[int, list[str]] = {1: [], 2: []}
    sent: dict[int, list[str]] = {1: [], 2: []}
    for i, (receiver, links) in enumerate(batches):
        outbox.add(receiver, f"http://p{i}.test/", links)
        sent[receiver] += links
        if i == cut_at:
            outbox.flush()
            # a crash in the middle of a write: half a frame at the end of each spool
            for r in (1, 2):
                folder = spool_dir(root, 0, r)
                last = max(folder.iterdir(), key=lambda p: int(p.name))
                with open(last, "ab") as f:
                    f.write(b"\x10\x00\x00\x00garbage"[:torn])
            for r, inbox in inboxes.items():
                received[r] += [u for _, links, _ in inbox.poll() for u in links]
            outbox.close()
            outbox = Outbox(root, 0, 3, segment_bytes=256)  # the sender restarts and cuts the torn tails
            positions = {r: inbox.positions() for r, inbox in inboxes.items()}
            inboxes = {r: Inbox(root, r, 3, positions[r]) for r in (1, 2)}  # receivers restart too
        elif i % 7 == 3:
            outbox.flush()
            for r, inbox in inboxes.items():
                received[r] += [u for _, links, _ in inbox.poll() for u in links]
    outbox.flush()
    for r, inbox in inboxes.items():
        received[r] += [u for _, links, _ in inbox.poll() for u in links]
        assert received[r] == sent[r]
        assert inbox.positions()[0] == outbox.positions()[r], "read and write positions agree at the end"
        inbox.committed(inbox.positions())
        assert len(list(spool_dir(root, 0, r).iterdir())) == 1, "consumed segments are deleted"


def test_a_receiver_resumes_from_its_checkpointed_position(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path, 1, 2)
    outbox.add(0, "http://a.test/", ["http://b.test/1"])
    outbox.flush()
    inbox = Inbox(tmp_path, 0, 2)
    assert inbox.poll() == [("http://a.test/", ["http://b.test/1"], None)]
    checkpoint = inbox.positions()
    outbox.add(0, "http://a.test/", ["http://b.test/2"])
    outbox.flush()
    assert inbox.poll() == [("http://a.test/", ["http://b.test/2"], None)]
    # killed before its next checkpoint: what it read since comes back, nothing before
    assert Inbox(tmp_path, 0, 2, checkpoint).poll() == [("http://a.test/", ["http://b.test/2"], None)]


def test_link_contexts_travel_with_their_links(tmp_path: Path) -> None:
    contexts = [LinkContext("a", "html/body/div.nav/a.next", "next page"), LinkContext("link", "html/head/link", "")]
    outbox = Outbox(tmp_path, 1, 2)
    outbox.add(0, "http://a.test/", ["http://b.test/1", "http://b.test/2"], contexts)
    outbox.flush()
    assert Inbox(tmp_path, 0, 2).poll() == [("http://a.test/", ["http://b.test/1", "http://b.test/2"], contexts)]


def test_links_held_for_hosts_not_owned_yet_outlive_a_checkpoint(tmp_path: Path) -> None:
    """Links that came for a host this agent does not own yet (from an agent on a newer ring: a newcomer not
    yet handed its share) are held; the checkpoint commits the inbox positions past them, so it keeps them
    too, or a restart (the newcomer killed, or adopted and handed back) would never see them again."""
    def router() -> LinkRouter:
        crew = SimpleNamespace(config=SimpleNamespace(cluster=SimpleNamespace(departure="adopt"), credentials=[]),
                               frontier=SimpleNamespace(policy=CrawlPolicy(None, None),
                                                        distributor=SimpleNamespace(handed_off=set())))
        return LinkRouter(crew, tmp_path / "links", 0, 1)  # type: ignore[arg-type]

    held = [(f"{HANDED}a,b,c ", ["http://h1.test/queued"], None),
            ("http://h2.test/", ["http://h3.test/"], [LinkContext("a", "html/body/a", "three")])]
    before = router()
    for parent, links, contexts in held:
        before._hold(parent, links, contexts)
    restarted = router()
    restarted.restore_handed(orjson.loads(orjson.dumps(before.handed_state())))  # as the checkpoint stores it
    assert restarted.held == held


def test_a_host_given_up_and_taken_back_within_its_delay_waits_for_it(tmp_path: Path) -> None:
    """A host this agent gives up (a machine joined and owns it now) and takes back at once (handed back by
    its IP, or that machine left again) gets a new visit state: its first fetch waits for the host delay
    since this agent's last fetch of it, which the purged visit state knew, not only for the IP delay."""
    from tests.test_frontier import HOST_DELAY, IP_DELAY, FrontierHarness

    harness = FrontierHarness(tmp_path / "frontier")
    frontier = harness.frontier
    crew = SimpleNamespace(config=SimpleNamespace(cluster=SimpleNamespace(departure="take_over"), credentials=[]),
                           frontier=frontier)
    router = LinkRouter(crew, tmp_path / "links", 0, 1)  # type: ignore[arg-type]
    frontier.discover(["http://h0.test/p0", "http://h0.test/p1"])
    while not harness.fetched:
        harness.step()
    fetched_at = harness.now  # released 0.01 s later: the host's next fetch HOST_DELAY after that
    vs = frontier.distributor.host_to_visit_state["http://h0.test"]
    router.give(vs)  # paused with no fetch in flight: purged, its queued URL kept
    router._take(["http://h0.test/p1"])  # handed back: a new visit state, the URL queued past the sieve
    harness.run()
    assert [u for _, u, _ in harness.fetched] == ["http://h0.test/p0", "http://h0.test/p1"]
    again = harness.fetched[1][0]
    assert again >= fetched_at + 0.01 + HOST_DELAY > fetched_at + 0.01 + IP_DELAY, (fetched_at, again)


# -- the IP table ----------------------------------------------------------------------------------------

HOLDER = """
import sys, time
from pathlib import Path
from engine.ip_table import BUSY, LOCK_FILES, PROBE_EVERY, SharedIpTable
table = SharedIpTable(Path(sys.argv[1]))
assert table.try_acquire("10.0.0.1", time.monotonic(), 0.5) is None
print("held", flush=True)
sys.stdin.read()
"""


def test_an_ip_is_busy_while_another_process_fetches_and_free_after_it_dies(tmp_path: Path) -> None:
    path = tmp_path / "ip-table"
    SharedIpTable.create(path)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              cwd=Path(__file__).parent.parent)
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    table = SharedIpTable(path)
    now = time.monotonic()
    assert table.try_acquire("10.0.0.1", now, 0.5) is not None, "another process holds the IP"
    assert table.try_acquire("10.0.0.2", now, 0.5) is None, "another IP is free"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    died = time.monotonic()
    assert table.try_acquire("10.0.0.1", died, 0.5) == BUSY, "the slot's pid is believed for a while"
    noticed = died + PROBE_EVERY
    retry = table.try_acquire("10.0.0.1", noticed, 0.5)
    assert retry is not None and retry >= noticed + 0.5, "a fetch cut by a crash still gets its delay"
    assert table.try_acquire("10.0.0.1", retry, 0.5) is None
    table.release("10.0.0.1", retry + 0.5)
    assert table.try_acquire("10.0.0.1", retry + 0.2, 0.5) == retry + 0.5
    table.close()


def test_an_ip_not_yet_allowed_is_answered_without_a_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two agents sharing IPs ask about an IP the other fetched from a moment ago about once a page;
    the answer is in the map, and the lock (two system calls) would not change it."""
    path = tmp_path / "ip-table"
    SharedIpTable.create(path)
    a, b = SharedIpTable(path), SharedIpTable(path)
    assert a.try_acquire("10.0.0.1", 100.0, 0.5) is None
    a.release("10.0.0.1", 100.5)
    locks: list[tuple[int, int, int, int]] = []
    real = fcntl.lockf

    def counted(fd: int, cmd: int, length: int = 0, start: int = 0) -> None:
        locks.append((fd, cmd, length, start))
        real(fd, cmd, length, start)

    monkeypatch.setattr(fcntl, "lockf", counted)
    assert b.try_acquire("10.0.0.1", 100.2, 0.5) == 100.5
    assert not locks
    assert b.try_acquire("10.0.0.1", 100.5, 0.5) is None and len(locks) == 1, "a free IP is locked as before"
    b.release("10.0.0.1", 101.0)
    a.close()
    b.close()


def my_record_locks() -> Counter[str]:
    """This process's record locks, per file (device:inode), as the kernel lists them."""
    rows = (line.split() for line in Path("/proc/locks").read_text().splitlines())
    return Counter(row[5] for row in rows if row[1] == "POSIX" and row[4] == str(os.getpid()))


def test_the_leases_locks_are_spread_over_files(tmp_path: Path) -> None:
    """The kernel walks one list of record locks per file at every lock: an agent holding a lease for
    every host on its todo ring must not put them all on one list (``bench/ip_lock_bench.py``)."""
    SharedIpTable.create(tmp_path / "ip-table")
    table = SharedIpTable(tmp_path / "ip-table")
    held = [ip for k in range(640) if table.try_acquire(ip := f"10.0.{k // 256}.{k % 256}", 0.0, 0.0) is None]
    per_file = my_record_locks()
    assert sum(per_file.values()) == len(held) >= 630
    assert len(per_file) == LOCK_FILES and max(per_file.values()) < 30
    for ip in held:
        table.release(ip, 0.0)
    assert not my_record_locks()
    table.close()


def test_the_page_budget_is_shared(tmp_path: Path) -> None:
    path = tmp_path / "ip-table"
    SharedIpTable.create(path)
    a, b = SharedIpTable(path), SharedIpTable(path)
    assert [a.reserve_page(3), b.reserve_page(3), a.reserve_page(3), b.reserve_page(3)] == [True, True, True, False]
    a.unreserve_page()
    assert b.reserve_page(3) and b.pages() == 3


ADDER = """
import sys
from pathlib import Path
from engine.ip_table import SharedIpTable
table = SharedIpTable(Path(sys.argv[1]))
print("ready", flush=True)
sys.stdin.readline()
for _ in range(int(sys.argv[2])):
    table.add_host("10.0.0.1", 1)
"""


def test_hosts_per_ip_are_counted_by_every_process_without_losing_one(tmp_path: Path) -> None:
    path = tmp_path / "ip-table"
    SharedIpTable.create(path)
    table = SharedIpTable(path)
    assert table.try_acquire("10.0.0.1", time.monotonic(), 0.5) is None  # a fetch lock held meanwhile blocks no count
    adders = [subprocess.Popen([sys.executable, "-c", ADDER, str(path), "3000"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, cwd=Path(__file__).parent.parent) for _ in range(2)]
    for adder in adders:
        assert adder.stdout is not None and adder.stdout.readline() == b"ready\n"
    for adder in adders:  # both start together: their read-modify-writes race unless the lock holds
        assert adder.stdin is not None
        adder.stdin.write(b"go\n")
        adder.stdin.flush()
    assert [adder.wait(timeout=60) for adder in adders] == [0, 0]
    table.add_host("10.0.0.1", -1)
    assert table.hosts("10.0.0.1") == 5999 and table.hosts("10.0.0.2") == 0
    table.release("10.0.0.1", 5.0)
    assert SharedIpTable.count_ips(path) == 1  # the page counter and host counters are no IP
    table.close()


# -- sd_notify --------------------------------------------------------------------------------------------


def test_notify_sends_datagrams_and_computes_the_watchdog_period(tmp_path: Path) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(str(tmp_path / "notify"))
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "notify"), "WATCHDOG_USEC": "3000000"})
    notifier.notify("READY=1", "STATUS=crawling")
    assert server.recv(100) == b"READY=1\nSTATUS=crawling"
    assert notifier.watchdog_interval == 1.5
    assert not Notifier({}).enabled and Notifier({}).watchdog_interval is None
    assert Notifier({"WATCHDOG_USEC": "1000", "WATCHDOG_PID": "1"}).watchdog_interval is None  # not ours
    notifier.close()
    server.close()
