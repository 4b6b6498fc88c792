"""The users of a live recrawl shared out over agents (``frontier/freshness/sharing.py``, ``central.py``):
the position split, the spare shares, the move messages, the freshness policy's ownership of URLs
and its centralized dispatch."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier.freshness.central import Dispatch, Report
from frontier.freshness.central import decode as decode_central
from frontier.freshness.central import encode as encode_central
from frontier.freshness.routing import RoutingParams
from frontier.freshness.sharing import (
    Handover,
    Load,
    Move,
    Sharing,
    decode,
    encode,
    position_split,
    spare_shares,
)
from frontier.page import FetchedPage
from frontier.policies.freshness import FreshnessPolicy, Options
from frontier.policy import Revisit

DAY = 86_400.0
END = 1_700_000_000.0


def posting(per_day: float, days: int = 14) -> list[float]:
    """Posts spread evenly over the ``days`` before ``END``."""
    n = round(per_day * days)
    return [END - days * DAY + (i + 0.5) * days * DAY / n for i in range(n)]


def test_the_position_split_puts_poisson_users_round_robin_and_balances_hash_users() -> None:
    users = [f"p{i}" for i in range(6)] + ["h20", "h12", "h10"]
    history = {f"p{i}": posting(0.1 * (i + 1)) for i in range(6)} | {
        "h20": posting(20), "h12": posting(12), "h10": posting(10)}
    owners = position_split(users, history, 2, RoutingParams(), threshold=2.0)
    assert sorted(owners[f"p{i}"] for i in range(6)) == [0, 0, 0, 1, 1, 1], "RR over the organ pipe: 3 each"
    assert owners["h20"] != owners["h12"] and owners["h12"] == owners["h10"], "20 against 12 + 10"
    # every agent computes it alone: the same input gives the same split
    assert owners == position_split(users, {u: list(t) for u, t in history.items()}, 2, RoutingParams(), 2.0)
    everyone_hash = position_split(users, history, 3, RoutingParams(mode="hash_all"), 2.0)
    assert set(everyone_hash.values()) == {0, 1, 2}


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 100), st.floats(0, 100)), min_size=1, max_size=8))
def test_spare_shares_give_no_more_than_the_excess_nor_the_spare(figures: list[tuple[float, float]]) -> None:
    loads, quotas = [f[0] for f in figures], [f[1] for f in figures]
    shares = spare_shares(loads, quotas)
    for s, row in enumerate(shares):
        assert sum(row) <= max(0.0, loads[s] - quotas[s]) + 1e-9
        assert row[s] == 0 or loads[s] <= quotas[s]
    for a in range(len(loads)):
        assert sum(row[a] for row in shares) <= max(0.0, quotas[a] - loads[a]) + 1e-9
    if sum(max(0.0, q - x) for x, q in zip(loads, quotas)) > 0:  # spare calls go to the overloaded agents
        assert sum(map(sum, shares)) == pytest.approx(min(sum(max(0.0, x - q) for x, q in zip(loads, quotas)),
                                                          sum(max(0.0, q - x) for x, q in zip(loads, quotas))))


def test_messages_read_back_as_sent() -> None:
    handover = Handover("http://api.test/timeline?user=u", 12.5, [10.0, 12.5], 13.0, True, -7.0)
    for message in (Load(3, 41.5), Move("u", 1, 2), Move("u", 0, 5, handover), Move("v", 0, 1, Handover("x", None, [], 1, False, 0))):
        assert decode(encode(message)) == message
    with pytest.raises(ValueError, match="not a sharing message"):
        decode(b'{"move": [1]}')


def exchange(agents: list[Sharing]) -> None:
    """Deliver every message sent, in order, until none is left."""
    while any(a.outbox for a in agents):
        for sender in agents:
            for receiver, data in sender.take_messages():
                agents[receiver].receive(sender.me, data)


def state(user: str) -> Handover:
    return Handover(f"http://api.test/timeline?user={user}", 5.0, [4.0, 5.0], 6.0, False, 0.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 4), st.lists(st.floats(0.1, 30), min_size=2, max_size=30), st.data())
def test_a_round_moves_users_from_overloaded_agents_and_every_user_keeps_one_owner(
        agents: int, calls: list[float], data: st.DataObject) -> None:
    users = [f"u{i}" for i in range(len(calls))]
    first = {u: data.draw(st.integers(0, agents - 1)) for u in users}
    due = dict(zip(users, calls))
    shares = [Sharing(a, agents, dict(first)) for a in range(agents)]
    for sharing in shares:
        sharing.start_round(7, {u: due[u] for u in sharing.mine()})
    exchange(shares)
    loads = [sum(due[u] for u in users if first[u] == a) for a in range(agents)]
    mean = sum(loads) / agents
    leaving = {u: (s.me, t) for s in shares for u, t in s.leaving.items()}
    for user, (source, target) in leaving.items():
        assert loads[source] > mean and source != target and first[user] == source
    for target in range(agents):  # a receiver never goes over the mean
        received = sum(due[u] for u, (_, t) in leaving.items() if t == target)
        assert not received or loads[target] + received <= mean + 1e-9
    # each leaving user is handed over at its next crawl; until the message is read it has no planner
    for user, (source, target) in leaving.items():
        assert shares[source].hand_over(user, state(user))
        assert not shares[source].owns(user) and not shares[target].owns(user)
        exchange(shares)
        assert shares[target].owns(user) and shares[target].epoch[user] == 1
    for user in users:
        owners = {s.owner[user] for s in shares}
        assert len(owners) == 1, "every agent names the same owner"


def test_a_move_read_twice_does_nothing_and_only_the_target_gets_the_state() -> None:
    a, b, c = (Sharing(i, 3, {"u": 0, "v": 1}) for i in range(3))
    a.leaving["u"] = 1
    assert not a.hand_over("v", state("v")), "only a leaving user of this agent is handed over"
    assert a.hand_over("u", state("u"))
    messages = dict(a.take_messages())
    move = b.receive(0, messages[1])
    assert move is not None and move.handover == state("u") and b.owns("u") and b.moved_in == 1
    assert c.receive(0, messages[2]) is None and c.owner["u"] == 1
    assert b.receive(0, messages[1]) is None and b.moved_in == 1, "a resume reads the spool again: ignored"
    b.leaving["u"] = 0
    assert b.hand_over("u", state("u"))  # back again: a newer epoch
    assert a.receive(1, dict(b.take_messages())[0]) is not None and a.owns("u") and a.epoch["u"] == 2


def test_an_agent_behind_joins_the_round_another_started() -> None:
    a, b = Sharing(0, 2, {"u": 0, "v": 0, "w": 1}), Sharing(1, 2, {"u": 0, "v": 0, "w": 1})
    a.start_round(5, {"u": 10.0, "v": 8.0})
    for receiver, data in a.take_messages():
        b.receive(0, data)
    assert b.asked == 5 and b.round == -1
    b.start_round(b.asked, {"w": 0.0})
    for receiver, data in b.take_messages():
        a.receive(1, data)
    assert a.leaving == {"v": 1}, "18 calls against 0: the user that fits in the 9 spare moves"


def policy(tmp_path: Path, architecture: str = "distributed") -> FreshnessPolicy:
    model = tmp_path / "model"
    model.mkdir(parents=True)
    (model / "users.csv").write_text("user_id,url\n" + "".join(
        f"u{i},http://api.test/timeline?user=u{i}\n" for i in range(8)))
    (model / "history.csv").write_text("user_id,unix_ts\n" + "".join(
        f"u{i},{t!r}\n" for i in range(8) for t in posting(i + 1)))
    return FreshnessPolicy(Options(planner="hash", architecture=architecture), model)


def test_the_policy_owns_each_users_listing_by_the_split(tmp_path: Path) -> None:
    alone = policy(tmp_path)
    alone.join(0, 1)
    assert alone.owner("http://api.test/timeline?user=u3") is None, "one agent: routed by host"
    shared = [policy(tmp_path / str(i)) for i in range(2)]
    for i, p in enumerate(shared):
        p.join(i, 2)
    owners = [shared[0].owner(f"http://api.test/timeline?user=u{i}") for i in range(8)]
    assert owners == [shared[1].owner(f"http://api.test/timeline?user=u{i}") for i in range(8)]
    assert sorted(o if o is not None else -1 for o in owners) == [0, 0, 0, 0, 1, 1, 1, 1]
    assert shared[0].owner("http://api.test/") is None, "not a listing: routed by host"
    assert not shared[0].messages(0.0), "no clock yet: no round"


def answer(user: str, now: float, posts: list[float]) -> FetchedPage:
    body = orjson.dumps({"user": user, "now": now, "posts": [{"id": int(t * 1000), "time": t} for t in posts]})
    return FetchedPage(f"http://api.test/timeline?user={user}", 200, {}, body, 0.0)


def test_central_messages_read_back_as_sent() -> None:
    for message in (Dispatch("u", "http://api.test/timeline?user=u"), Report("u", "x", 5.0, [1.0, 2.5], "ok", -3.0)):
        assert decode_central(encode_central(message)) == message
    with pytest.raises(ValueError, match="not a centralized"):
        decode_central(b'{"report": []}')


def test_centralized_the_server_plans_and_the_other_agent_only_fetches(tmp_path: Path) -> None:
    server, client = (policy(tmp_path / str(i), 'centralized') for i in range(2))
    for i, p in enumerate((server, client)):
        p.join(i, 2)
    assert server.central is not None and client.central is not None
    mine = [u for u, a in client.central.first.items() if a == 1]
    site = END + 3600
    # the client's first crawl of one of its users: the answer goes to the server, the client plans nothing
    assert client.on_fetched(answer(mine[0], site, posting(3)[-5:]), 100.0) == []
    [(to, report)] = client.messages(100.0)
    assert to == 0 and not client.planner.names
    revisits = list(server.on_message(1, report, 100.0))
    assert server.planner.statistics().crawls == 1 and server.newest[mine[0]] == posting(3)[-1]
    # once due, each crawl goes to the shorter to-do list: the server's own as a revisit, or a message
    later = 100.0 + 31 * DAY  # the span: 3 posts a day never reach the threshold, 100 (per_crawl)
    revisits += list(server.tick(later))
    sent = [decode_central(data) for _, data in server.messages(later)]
    url = f"http://api.test/timeline?user={mine[0]}"
    assert [r.url for r in revisits] + [m.url for m in sent if isinstance(m, Dispatch)] == [url], "sent once"
    assert server.central.dispatched.total() == 1 and server.central.dispatcher is not None
    assert sum(server.central.dispatcher.queues) == 1
    for m in sent:
        assert isinstance(m, Dispatch)
        assert list(client.on_message(0, encode_central(m), later)) == [Revisit(m.url, later)]


def test_one_agent_plans_no_further_than_its_next_midnight_and_ticks_on_after_it(tmp_path: Path) -> None:
    alone = policy(tmp_path)
    alone.join(0, 1)
    site = END + 3600
    revisits = [r for i in range(8) for r in alone.on_fetched(answer(f"u{i}", site, posting(i + 1)[-5:]), 100.0)]
    planner = alone.planner
    event = min(planner.next_midnight, planner.next_period)
    assert site < event < site + DAY, "the planner's clock has not run past the site's next midnight"
    assert all(r.at - 100.0 < event - site for r in revisits)
    assert alone.busy(), "users are still to plan: the crawl must not end"
    seen = {r.url for r in revisits}
    later = 100.0 + 40 * DAY  # past the span guard (30 d): every user falls due, one midnight at a time
    for step in range(41):
        seen |= {r.url for r in alone.tick(100.0 + step * DAY)}
    seen |= {r.url for r in alone.tick(later)}
    assert len(seen) == 8 and min(planner.next_midnight, planner.next_period) > END + 30 * DAY
