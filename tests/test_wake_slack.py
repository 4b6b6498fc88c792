"""The todo filler's wake-ups: deadlines close together end in one wake-up, never before the deadline.

``engine/crew.py: Alarm`` on a real event loop and its clock; ``engine/todo.py: wake_slack``
(how late a deadline may be met, from the politeness delays).
"""

from __future__ import annotations

import asyncio
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.crew import Alarm
from engine.todo import BUSY_POLL, MAX_WAKE_SLACK, WAKE_SLACK_SHARE, busy_poll, wake_slack

SLACK = 0.05


async def woken_at(alarm: Alarm, deadline: float, slack: float) -> float:
    await alarm.wait(deadline, slack)
    return asyncio.get_running_loop().time()


def test_deadlines_within_one_slack_end_in_one_wake_up_at_its_end() -> None:
    async def main() -> tuple[list[float], list[float]]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        # three deadlines inside one slot of the slack grid, so all three are met at its end
        slot_end = (int(start / SLACK) + 3) * SLACK
        deadlines = [slot_end - 0.9 * SLACK, slot_end - 0.5 * SLACK, slot_end - 0.1 * SLACK]
        woken = await asyncio.gather(*(woken_at(Alarm(), d, SLACK) for d in deadlines))
        return deadlines, list(woken)

    deadlines, woken = asyncio.run(main())
    resolution = time.get_clock_info("monotonic").resolution  # the loop may run a timer this early
    for deadline, at in zip(deadlines, woken, strict=True):
        assert at >= deadline - resolution, "woken before its deadline: politeness would break"
    assert max(woken) - min(woken) < SLACK / 2, f"three deadlines in one slot woke apart: {woken}"
    assert min(woken) >= deadlines[-1] - resolution


def test_without_slack_a_deadline_is_met_on_time() -> None:
    async def main() -> tuple[float, float]:
        deadline = asyncio.get_running_loop().time() + 0.02
        return deadline, await woken_at(Alarm(), deadline, 0.0)

    deadline, at = asyncio.run(main())
    assert deadline - 0.002 <= at < deadline + 0.1  # loose above: a loaded machine runs timers late


def test_a_fire_wakes_at_once_whatever_the_slack() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        alarm = Alarm()
        start = loop.time()
        waiting = asyncio.create_task(alarm.wait(start + 10.0, 5.0))
        await asyncio.sleep(0)  # let the waiter start waiting
        alarm.fire()
        await asyncio.wait_for(waiting, timeout=2.0)
        return loop.time() - start

    assert asyncio.run(main()) < 1.0


def test_a_fire_while_nobody_waits_ends_the_next_wait_only() -> None:
    """Work announced while the waiter was busy is not slept through, and is not announced twice."""
    async def main() -> tuple[float, bool]:
        loop = asyncio.get_running_loop()
        alarm = Alarm()
        alarm.fire()
        alarm.fire()
        start = loop.time()
        await asyncio.wait_for(alarm.wait(start + 10.0), timeout=2.0)
        first = loop.time() - start
        second = asyncio.create_task(alarm.wait(None))
        await asyncio.sleep(0.05)
        slept = not second.done()
        second.cancel()
        return first, slept

    first, slept = asyncio.run(main())
    assert first < 1.0 and slept


@pytest.mark.parametrize(("host_delay", "ip_delay", "expected"), [
    (0.0, 0.0, 0.0),  # an unbound crawl waits for no deadline late
    (0.2, 0.05, 0.05 * WAKE_SLACK_SHARE),  # the smaller delay sets it
    (0.0, 0.5, 0.5 * WAKE_SLACK_SHARE),  # a zero delay binds nothing
    (20.0, 5.0, MAX_WAKE_SLACK),
])
def test_the_slack_is_a_small_share_of_the_smallest_delay(host_delay: float, ip_delay: float, expected: float) -> None:
    assert wake_slack(host_delay, ip_delay) == pytest.approx(expected)


@given(st.floats(0, 100), st.floats(0, 100))
def test_the_slack_never_exceeds_its_share_of_any_delay(host_delay: float, ip_delay: float) -> None:
    slack = wake_slack(host_delay, ip_delay)
    assert 0 <= slack <= MAX_WAKE_SLACK
    for delay in (host_delay, ip_delay):
        if delay > 0:
            assert slack <= WAKE_SLACK_SHARE * delay


@given(st.floats(0.0, 1e4), st.floats(0.02, 1e4))
def test_an_ip_another_agent_held_is_seen_free_before_its_delay_runs_out(host_delay: float, ip_delay: float) -> None:
    """A host waiting on an IP another agent fetches from is looked at again at most half the IP delay
    (and the wake slack) after that fetch ends: before the IP is free again, so no fetch is delayed."""
    assert busy_poll(ip_delay) + wake_slack(host_delay, ip_delay) < ip_delay


def test_without_an_ip_delay_a_busy_ip_is_looked_at_every_10_ms() -> None:
    assert busy_poll(0.0) == BUSY_POLL == 0.01 and busy_poll(1.0) == 0.5


def test_periodic_tasks_wake_together_on_the_grid() -> None:
    """The status lines (every 0.5 s) and the progress samples (every 1 s) of an agent, and the supervisor's
    look just after them, fall on one grid of the shared monotonic clock: one wake-up, not one each."""
    from engine.channel import sleep_on_grid

    async def main() -> list[tuple[float, float, float]]:
        loop = asyncio.get_running_loop()
        woken = []
        for period, offset in ((0.5, 0.0), (1.0, 0.0), (0.5, 0.05), (0.2, 0.0)):
            start = loop.time()
            await sleep_on_grid(period, offset)
            at = loop.time()
            assert period * 0.4 <= at - start <= period * 1.5 + 0.1, (period, start, at)
            woken.append((period, offset, at))
        return woken

    for period, offset, at in asyncio.run(main()):
        phase = (at - offset) / period
        assert abs(phase - round(phase)) * period < 0.05, (period, offset, at)  # on the grid, a loaded machine late
