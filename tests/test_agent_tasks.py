"""The agent's small parts on their own: the todo ring (first in first out, or best rank first, behind the
rank gate) and the typed status."""

from __future__ import annotations

import asyncio

import orjson
from hypothesis import given
from hypothesis import strategies as st

from engine.stats import Counters
from engine.status import AgentStatus
from engine.todo import TodoRing
from frontier.visit_state import VisitState


def host(n: int) -> VisitState:
    return VisitState(n, f"http://h{n}.test", 0.0)


async def test_the_todo_ring_is_first_in_first_out_by_default() -> None:
    ring = TodoRing()
    for n in (3, 1, 2):
        ring.put(host(n))
    assert [ring.get_nowait().id for _ in range(3)] == [3, 1, 2]  # type: ignore[union-attr]
    assert ring.get_nowait() is None


async def test_a_ranked_todo_ring_hands_out_the_best_ranked_host_first_ties_in_order() -> None:
    ranks = {1: 5.0, 2: 0.5, 3: 5.0, 4: 2.0}
    ring = TodoRing(lambda vs: ranks[vs.id])
    for n in (1, 2, 3, 4):
        ring.put(host(n))
    assert len(ring) == 4
    assert [ring.get_nowait().id for _ in range(4)] == [2, 4, 1, 3]  # type: ignore[union-attr]


async def test_a_waiting_fetcher_gets_the_next_host_and_close_hands_back_the_rest() -> None:
    ring = TodoRing(lambda vs: float(vs.id))
    waiting = asyncio.create_task(ring.wait_get())
    await asyncio.sleep(0)  # let it start waiting
    ring.put(host(7))
    assert (await asyncio.wait_for(waiting, 5)).id == 7  # type: ignore[union-attr]
    ring.put(host(9))
    ring.put(host(8))
    assert [vs.id for vs in ring.close()] == [8, 9]
    assert await asyncio.wait_for(ring.wait_get(), 5) is None


def test_the_rank_gate_holds_a_host_while_a_better_one_of_its_site_is_fetched() -> None:
    ranks = {1: 1.0, 2: 3.0, 3: 1.0, 4: 2.0, 5: 9.0}
    sites = {1: "s.test", 2: "s.test", 3: "s.test", 4: "s.test", 5: None}
    ring = TodoRing(lambda vs: ranks[vs.id], lambda vs: sites[vs.id])
    one = host(1)
    ring.put(one)
    assert ring.get_nowait() is one  # flying at rank 1
    for n in (2, 3, 4, 5):
        ring.put(host(n))
    # 3 ties with the flight; 5 is of no site; 2 and 4 are held while rank 1 flies
    assert [ring.get_nowait().id for _ in range(2)] == [3, 5]  # type: ignore[union-attr]
    assert ring.get_nowait() is None
    assert len(ring) == 2
    ring.landed(one)
    ring.reopen()
    assert ring.get_nowait() is None  # host 3 (rank 1) still flies
    three = host(3)
    ring.put(three)  # the host fetched before comes back at rank 1 and flies beside the other
    assert ring.get_nowait() is three


def test_the_gate_lets_the_best_held_host_go_once_its_site_is_grounded_ranked_anew() -> None:
    ranks = {1: 0.0, 2: 3.0, 3: 4.0, 4: 4.5}
    ring = TodoRing(lambda vs: ranks[vs.id], lambda vs: "s.test")
    one = host(1)
    ring.put(one)
    assert ring.get_nowait() is one
    for n in (2, 3, 4):
        ring.put(host(n))
    ranks[2] = 5.0  # host 2's best URL lost score while it was held (Balance): 3 and 4 now come first
    ring.landed(one)
    ring.reopen()
    first = ring.get_nowait()
    assert first is not None and first.id == 3  # the best one goes, alone
    assert ring.get_nowait() is None
    ring.landed(first)
    ring.reopen()
    second = ring.get_nowait()
    assert second is not None and second.id == 4
    assert ring.get_nowait() is None
    assert [vs.id for vs in ring.close()] == [2]


OPERATIONS = st.lists(st.one_of(
    st.tuples(st.just("put"), st.integers(0, 3), st.sampled_from(["a.test", "b.test", None])),
    st.tuples(st.just("get"), st.just(0), st.just(None)),
    st.tuples(st.just("land"), st.integers(0, 10), st.just(None)),
), max_size=40)


@given(OPERATIONS)
def test_no_host_flies_while_a_better_one_of_its_site_does_and_none_is_lost(operations: list[tuple[str, int, str | None]]) -> None:
    """Hosts become ready, are taken and land in any order: a host handed out never ranks worse
    than a host of its site in flight, and once everything has landed every host has come out once."""
    ranks: dict[int, float] = {}
    sites: dict[int, str | None] = {}
    ring = TodoRing(lambda vs: ranks[vs.id], lambda vs: sites[vs.id])
    flying: list[VisitState] = []
    out: list[int] = []

    def take(vs: VisitState | None) -> None:
        if vs is None:
            return
        site = sites[vs.id]
        if site is not None:
            assert all(ranks[vs.id] <= ranks[f.id] for f in flying if sites[f.id] == site), "the gate let a worse host by"
        flying.append(vs)
        out.append(vs.id)

    for op, value, site in operations:
        if op == "put":
            n = len(ranks)
            ranks[n], sites[n] = float(value), site
            ring.put(host(n))
        elif op == "get":
            take(ring.get_nowait())
        elif flying:
            ring.landed(flying.pop(value % len(flying)))
            ring.reopen()
    for _ in range(2 * len(ranks) + 1):  # each round lands a host or takes one: a stuck ring ends the loop
        if flying:
            ring.landed(flying.pop())
            ring.reopen()
        take(ring.get_nowait())
    assert sorted(out) == sorted(ranks), "a host was held and never let through"
    assert not flying and len(ring) == 0


def test_a_status_survives_the_channel_and_adds_up() -> None:
    counters = Counters(pages=10, bytes=1000)
    counters.statuses[200] = 10
    one = AgentStatus(agent=0, pid=11, idle=True, stats=counters.as_dict(), cpu_seconds=1.5, in_flight=2, front=3,
                      histograms={"fetch_latency_seconds": {"counts": {"0.1": 4, "+Inf": 1}, "sum": 2.0}},
                      links_out={"1": [1, 40]})
    wire = AgentStatus.from_dict(orjson.loads(orjson.dumps(one.as_dict())))
    assert wire.pages == 10 and wire.links_out == {"1": [1, 40]} and wire.idle
    total = AgentStatus.add_up([wire, wire], paused=True)
    assert total.pages == 20 and total.stats["statuses"] == {"200": 20}
    assert total.cpu_seconds == 3.0 and total.in_flight == 4 and total.front == 6
    assert total.histograms["fetch_latency_seconds"]["counts"] == {"0.1": 8, "+Inf": 2}
    assert total.paused and not total.idle and total.links_out == {} and total.pid == 0
