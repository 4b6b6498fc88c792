"""The ring over the agents of several machines (engine/ownership.py: GlobalRing) is a pure
function of the member list: who owns a host is the same whatever order members joined in, the
places follow the list's order (a machine appended keeps the others' places), and a
machine joining takes about its share of the hosts, all from the others, and moves none between them;
a machine leaving gives its hosts to the live machines and moves no other host, and keeps its places
(the names of the spools and subjects)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.ownership import GlobalRing, HashRing

HOSTS = [f"h{i}.example" for i in range(3000)]
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=8)
members = st.dictionaries(names, st.integers(1, 4), min_size=1, max_size=5)


@given(members, st.randoms())
def test_the_ring_depends_on_the_members_only(machines: dict[str, int], rnd) -> None:  # type: ignore[no-untyped-def]
    listed = list(machines.items())
    shuffled = listed[:]
    rnd.shuffle(shuffled)
    a, b = GlobalRing(listed), GlobalRing(shuffled)
    assert sorted(a.agents_list) == sorted(b.agents_list)
    assert [a.agents_list[a.owner(h)] for h in HOSTS[:300]] == [b.agents_list[b.owner(h)] for h in HOSTS[:300]]


@given(members, names, st.integers(1, 4))
def test_a_machine_appended_keeps_the_places_of_the_others(machines: dict[str, int], newcomer: str, agents: int) -> None:
    if newcomer in machines:
        return
    before = GlobalRing(sorted(machines.items()))
    after = GlobalRing([*sorted(machines.items()), (newcomer, agents)])
    assert after.agents_list[:len(before.agents_list)] == before.agents_list
    assert after.agents_list[len(before.agents_list):] == [(newcomer, i) for i in range(agents)]


@settings(max_examples=25, deadline=None)
@given(members, names, st.integers(1, 4))
def test_a_join_moves_only_the_newcomers_share(machines: dict[str, int], newcomer: str, agents: int) -> None:
    if newcomer in machines:
        return
    before = GlobalRing(list(machines.items()))
    after = GlobalRing([*machines.items(), (newcomer, agents)])
    moved = 0
    for host in HOSTS:
        old, new = before.agents_list[before.owner(host)], after.agents_list[after.owner(host)]
        if old != new:
            moved += 1
            assert new[0] == newcomer, f"{host} moved from {old} to {new}, not to the newcomer"
    share = agents / len(after.agents_list)  # 1/(N+1) with one agent per machine
    assert moved / len(HOSTS) <= share * 1.5 + 0.02
    assert moved / len(HOSTS) >= share * 0.5 - 0.02


@settings(max_examples=25, deadline=None)
@given(members, st.data())
def test_a_leave_moves_only_the_leavers_hosts_to_the_live_machines(machines: dict[str, int], data) -> None:  # type: ignore[no-untyped-def]
    if len(machines) < 2:
        return
    listed = list(machines.items())
    gone = set(data.draw(st.lists(st.sampled_from(sorted(machines)), min_size=1, max_size=len(machines) - 1, unique=True)))
    live = [node for node in machines if node not in gone]
    before, after = GlobalRing(listed), GlobalRing(listed, live)
    assert after.agents_list == before.agents_list and after.live == tuple(sorted(live))
    assert GlobalRing(listed[::-1], live[::-1]).live == after.live
    for host in HOSTS[:600]:
        old, new = before.agents_list[before.owner(host)], after.agents_list[after.owner(host)]
        assert new[0] in live, f"{host} owned by {new}, a machine that left"
        if old[0] not in gone:
            assert new == old, f"{host} of a live machine moved from {old} to {new}"


def test_one_machine_keeps_the_one_machine_ring() -> None:
    assert [HashRing(3).owner(h) for h in HOSTS[:200]] == [HashRing(3, ["0", "1", "2"]).owner(h) for h in HOSTS[:200]]
    ring = GlobalRing([("a", 1)])
    assert {ring.owner(h) for h in HOSTS[:50]} == {0}


@pytest.mark.parametrize("bad", [[("a", 1), ("a", 2)], [("a.b", 1)], [("a", 0)], [("", 1)]])
def test_bad_members_are_refused(bad: list[tuple[str, int]]) -> None:
    with pytest.raises(ValueError):
        GlobalRing(bad)


@pytest.mark.parametrize("live", [[], ["c"]])
def test_live_machines_must_be_members(live: list[str]) -> None:
    with pytest.raises(ValueError):
        GlobalRing([("a", 1), ("b", 1)], live)
