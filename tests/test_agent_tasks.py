"""The agent's small parts on their own: the todo ring (first in first out, or best rank first) and the typed status."""

from __future__ import annotations

import asyncio

import orjson

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
