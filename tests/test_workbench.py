"""Politeness invariants of the workbench under random operation sequences (hypothesis), hosts moving
between IPs (an expired DNS answer re-resolved to another address) included; ranked, the host an IP
hands out is the best-ranked of its hosts polite now, ranks changing as the crawl goes."""

from __future__ import annotations

from collections import deque

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from frontier.visit_state import IllegalTransition, PathQueue, Phase, VisitState
from frontier.workbench import Workbench

IP_DELAY = 0.5
HOST_DELAY = 2.0


class WorkbenchMachine(RuleBasedStateMachine):
    ranked = False

    def __init__(self) -> None:
        super().__init__()
        self.rank: dict[int, float] = {}
        self.wb = Workbench(IP_DELAY, (lambda vs: self.rank[vs.id]) if self.ranked else None)
        self.now = 0.0
        self.hosts: list[VisitState] = []
        self.expected: dict[int, deque[bytes]] = {}
        self.due: dict[int, deque[bytes]] = {}  # revisits that came due: ahead of the backlog
        self.acquired: list[VisitState] = []
        self.resolving: list[VisitState] = []  # handed back by readdress, waiting for move
        self.ip_next: dict[str, float] = {}  # each IP's next_fetch as last seen: it never goes back
        self.last_end_host: dict[int, float] = {}
        self.last_end_ip: dict[str, float] = {}
        self.counter = 0

    @rule(ip=st.integers(0, 3))
    def add_host(self, ip: int) -> None:
        vs = VisitState(len(self.hosts) + 1, f"http://h{len(self.hosts)}.test", HOST_DELAY, ranked=self.ranked)
        vs.transition("resolve")
        self.hosts.append(vs)
        self.rank[vs.id] = 0.0
        self.expected[vs.id] = deque()
        self.due[vs.id] = deque()
        self.wb.attach(vs, f"10.0.0.{ip}")

    @precondition(lambda self: self.hosts)
    @rule(data=st.data())
    def push(self, data: st.DataObject) -> None:
        self._push(data.draw(st.sampled_from(self.hosts)))

    def _push(self, vs: VisitState) -> None:
        self.counter += 1
        item = f"/p{self.counter}".encode()
        if self.ranked:
            self.wb.push_lane(vs, item, 0)
        else:
            self.wb.push_url(vs, item)
        self.expected[vs.id].append(item)

    @precondition(lambda self: self.hosts)
    @rule(data=st.data())
    def push_due(self, data: st.DataObject) -> None:
        vs = data.draw(st.sampled_from(self.hosts))
        self.counter += 1
        item = f"/again{self.counter}".encode()
        self.wb.push_due(vs, item)
        self.due[vs.id].append(item)

    @rule(dt=st.floats(0, 3))
    def advance(self, dt: float) -> None:
        self.now += dt

    @rule()
    def acquire(self) -> None:
        ready = [
            h for h in self.hosts
            if h.phase is Phase.READY and h.has_work and not h.entry.acquired
            and h.next_fetch <= self.now and h.entry.next_fetch <= self.now
        ]
        vs = self.wb.acquire(self.now)
        if vs is None:
            assert not ready, "a host was fetchable but acquire returned nothing"
            return
        if self.ranked:
            best = min(self.rank[h.id] for h in ready if h.ip == vs.ip)
            assert self.rank[vs.id] == best, "not the best-ranked host polite now on its IP"
        assert vs.phase is Phase.ACQUIRED
        assert self.now >= self.last_end_host.get(vs.id, -1e9) + HOST_DELAY - 1e-9
        assert self.now >= self.last_end_ip.get(vs.ip, -1e9) + IP_DELAY - 1e-9
        assert all(other.ip != vs.ip for other in self.acquired), "two fetches in flight on one IP"
        if vs.due is not None:
            assert self.wb.pop_due(vs) == self.due[vs.id].popleft(), "due revisits are not first, in order"
        else:
            assert not self.due[vs.id]
            item = self.wb.pop_lane(vs, 0) if self.ranked else self.wb.pop_url(vs)
            assert item == self.expected[vs.id].popleft(), "per-host order is not FIFO"
        self.acquired.append(vs)

    @precondition(lambda self: self.acquired)
    @rule(data=st.data())
    def readdress(self, data: st.DataObject) -> None:
        """The host's address expired: the token comes back unfetched, and nothing is charged."""
        vs = data.draw(st.sampled_from(self.acquired))
        self.acquired.remove(vs)
        entry, host_next, ip_next = vs.entry, vs.next_fetch, vs.entry.next_fetch
        self.wb.readdress(vs)
        assert vs.phase is Phase.RESOLVING and not vs.in_entry and vs.entry is entry
        assert (vs.next_fetch, entry.next_fetch) == (host_next, ip_next)
        self.resolving.append(vs)

    @precondition(lambda self: self.resolving)
    @rule(data=st.data(), ip=st.integers(0, 5))
    def move(self, data: st.DataObject, ip: int) -> None:
        """The new answer arrives: maybe the same IP, maybe one with hosts of its own, maybe a new one."""
        vs = data.draw(st.sampled_from(self.resolving))
        self.resolving.remove(vs)
        host_next = vs.next_fetch
        self.wb.move(vs, f"10.0.0.{ip}")
        assert vs.phase is Phase.READY and vs.ip == f"10.0.0.{ip}" and vs.entry.ip == vs.ip
        assert vs.next_fetch == host_next, "the host's own delay is kept across the move"

    @precondition(lambda self: self.acquired)
    @rule(data=st.data(), duration=st.floats(0, 2))
    def release(self, data: st.DataObject, duration: float) -> None:
        vs = data.draw(st.sampled_from(self.acquired))
        self.acquired.remove(vs)
        self.now += duration
        self.wb.release(vs, self.now)
        self.last_end_host[vs.id] = self.now
        self.last_end_ip[vs.ip] = self.now

    @invariant()
    def deadline_is_the_earliest_polite_time(self) -> None:
        candidates = [
            max(h.next_fetch, h.entry.next_fetch) for h in self.hosts
            if h.phase is Phase.READY and h.has_work and not h.entry.acquired
        ]
        deadline = self.wb.next_deadline()
        if self.ranked and candidates and min(candidates) <= self.now:
            # hosts polite already wait by rank: the deadline only says "now"
            assert deadline is not None and deadline <= self.now
        else:
            assert deadline == (min(candidates) if candidates else None)

    @invariant()
    def statistics_agree_with_a_recount(self) -> None:
        s = self.wb.statistics()
        assert s.urls == sum(len(q) for q in self.expected.values()) + sum(len(q) for q in self.due.values())
        assert s.acquired == len(self.acquired)
        ips_with_work = {h.ip for h in self.hosts if h.has_work and h.phase is Phase.READY} | {h.ip for h in self.acquired}
        assert s.entries_with_work == len(ips_with_work)
        assert s.visit_states == len(self.hosts)

    @invariant()
    def every_host_is_on_the_entry_of_its_ip(self) -> None:
        entries = self.wb.address_to_entry
        for h in self.hosts:
            assert h.entry is entries[h.ip]
            assert h.in_entry == (h.phase is Phase.READY and h.has_work)
        for ip, entry in entries.items():
            assert entry.hosts == sum(1 for h in self.hosts if h.ip == ip)

    @invariant()
    def no_ip_forgets_its_last_fetch(self) -> None:
        for ip, entry in self.wb.address_to_entry.items():
            assert entry.next_fetch >= self.ip_next.get(ip, 0.0)
            self.ip_next[ip] = entry.next_fetch


TestWorkbench = WorkbenchMachine.TestCase
TestWorkbench.settings = settings(max_examples=200, stateful_step_count=60, deadline=None)


class RankedWorkbenchMachine(WorkbenchMachine):
    """Ranks only get worse while a host waits (Balance lowers the score of what was harvested);
    the workbench ranks a host when it becomes polite and again as it leaves."""

    ranked = True

    @precondition(lambda self: self.hosts)
    @rule(data=st.data(), by=st.sampled_from([0.0, 0.5, 1.0, 3.0]))
    def worsen(self, data: st.DataObject, by: float) -> None:
        vs = data.draw(st.sampled_from(self.hosts))
        self.rank[vs.id] += by

    @precondition(lambda self: self.hosts)
    @rule(data=st.data(), by=st.sampled_from([0.5, 2.0, 10.0]))
    def better_url(self, data: st.DataObject, by: float) -> None:
        """A URL better than any the host holds arrives (or a revisit comes due): it moves up at once."""
        vs = data.draw(st.sampled_from(self.hosts))
        self.rank[vs.id] -= by
        self._push(vs)


TestRankedWorkbench = RankedWorkbenchMachine.TestCase
TestRankedWorkbench.settings = settings(max_examples=200, stateful_step_count=60, deadline=None)


def test_path_queue_round_trips_items_of_every_length() -> None:
    q = PathQueue()
    items = [b"x" * n for n in (0, 1, 127, 128, 300, 20000)] * 50
    for item in items:
        q.append(item)
    assert list(q) == items
    assert [q.popleft() for _ in items] == items
    assert len(q) == 0 and q.nbytes == 0


def test_illegal_transition_raises() -> None:
    vs = VisitState(1, "http://a.test", 1.0)
    try:
        vs.transition("acquire")
    except IllegalTransition as e:
        assert "acquire" in str(e)
    else:
        raise AssertionError("NEW → acquire must be illegal")


def test_ranked_an_ip_hands_out_its_best_polite_host_ranked_again_as_it_leaves() -> None:
    rank = {1: 1.0, 2: 2.0, 3: 3.0}
    wb = Workbench(0.0, lambda vs: rank[vs.id])
    hosts = [VisitState(n, f"http://h{n}.test", 0.0) for n in (3, 1, 2)]
    for vs in hosts:
        vs.transition("resolve")
        wb.attach(vs, "10.0.0.1")
        wb.push_url(vs, b"/")
        wb.push_url(vs, b"/more")
    first = wb.acquire(0.0)
    assert first is not None and first.id == 1  # not h3, polite as early and attached first
    wb.pop_url(first)
    wb.release(first, 1.0)
    rank[1], rank[2] = 10.0, 5.0  # h2 got worse while it waited behind h1: h3 goes before it
    assert [vs.id for vs in hosts if vs.in_entry] == [3, 1, 2]
    second = wb.acquire(1.0)
    assert second is not None and second.id == 3
