"""This machine's part in a crawl over several (issue 17): the supervisor's side of ``engine/cluster.py``.

The supervisor (``engine/supervisor.py``) makes one :class:`Machines` when ``cluster.url`` is set. It

* **joins** the crawl: takes its folder (``OUT/lock``; from the survivor that adopted it, below) and
  waits for ``cluster.size`` machines (a resumed machine keeps the members and the live machines of
  its manifest) and makes the bridge (``engine/bridge.py``);
* **beats** its entry every heartbeat (quiet, spool positions, pages, the live machines it crawls
  by) and reads everyone's: it stops the crawl when the view shows it over or another live
  machine stopped; and it **fences** itself: unable to put its entry for half the TTL, it stops
  (``cut off``), before the others could take its hosts;
* **follows the machines that leave**: a machine whose entry expired has left. By default
  (``cluster.departure = "adopt"``) one survivor adopts it (the first to claim ``adopt.NODE``): it runs
  that machine's supervisor, resumed from its folder, in its own process tree (``engine/adoption.py``),
  and the ring does not change. The machine, come back with ``--resume``, finds its folder held and
  asks for its agents back (``back.NODE``); the adopted supervisor stops (its agents checkpoint) and
  the machine goes on beating the same entry, which never expired: nobody else reacts. With
  ``take_over``, the ring over the others goes into the manifest and to every agent (``ring``),
  which takes its share of the hosts over (``engine/takeover.py``): a survivor then runs no second
  machine's agents, at the price of reading archives;
* **rejoins**, or lets a machine rejoin (after a takeover). A machine that left and comes back with ``--resume``
  finds itself left out of the others' ``live``; it puts its entry with ``joining`` and the ring
  of the others plus itself, and keeps its agents paused. Each other machine, seeing it, pauses
  its agents until their fetches in flight are over, gives them the larger ring (they purge the
  hosts they lose: no fetch of them starts again), resumes them, and only then names the machine
  in its ``live``: its handoff is done. Once every live machine names it, the machine's agents take
  the ring with the others' archives as sources (the pages those stored of its hosts go into their
  skip sets, the links they own into their sieves), and it resumes them. So no host is fetched by
  two machines at once, and no page stored is fetched again;
* **joins a crawl under way**, or lets a machine join: one that was never a member finds the others'
  entries naming the members (``engine/cluster.py: running``), waits for the join turn, appends itself
  to their list and goes through the same handoff as a machine rejoining; the others take the longer
  list (their bridge and agents get the newcomer's places) with the larger ring. A newcomer stopped
  before it joined (its manifest names it a member, not live) and resumed joins so again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import orjson

from engine.adoption import Adopted
from engine.bridge import Bridge
from engine.cluster import (HEARTBEAT, TURN, Beats, Cluster, ClusterError, Entry, adopt_key, back_key, crawl_over,
                            left_out, newcomer, note_beats, rejoining, stop_tasks)
from engine.config import Config
from engine.folder_lock import lock_folder
from engine.ownership import GlobalRing, Member
from engine.status import AgentStatus

ADOPTION_TRIES = 3  # adoptions of one machine that fail (its supervisor exits with an error) before the crawl stops


class Machine(Protocol):
    """What of the supervisor (``engine/supervisor.py``) this machine's part in the crawl uses."""

    config: Config
    out: Path
    resuming: bool
    paused: bool
    stopping: bool
    stop_reason: str
    failed: bool
    folder_lock: int

    def stop_crawl(self, reason: str) -> None: ...
    def total(self) -> AgentStatus: ...
    def update_manifest(self) -> None: ...
    def tell(self, command: dict[str, Any]) -> None: ...
    async def pause(self) -> None: ...
    async def resume(self) -> None: ...
    async def command(self, command: dict[str, Any], until: Callable[[AgentStatus], bool] | None = None,
                      timeout: float = 30.0) -> None: ...


class Machines:
    """This machine in the crawl: its entry, the view of the others, the ring over the live machines.
    The ring changes only here: at once when machines are gone (their entries expired) and the
    departure is ``take_over`` (adopted, they keep their places), after a handoff when one rejoins or
    joins; the manifest and the agents follow it."""

    def __init__(self, supervisor: Machine, agents: int, adopted_by: str = "") -> None:
        self.supervisor = supervisor
        self.config = supervisor.config.cluster
        self.cluster = Cluster(self.config, agents)
        self.adopted_by = adopted_by  # this machine left, and runs in that machine's process tree (engine/adoption.py)
        self.cluster.entry = Entry(self.config.node, agents, adopted_by=adopted_by)
        self.adopted: dict[str, Adopted] = {}  # the machines gone that this one runs, adopted
        self.adoptions: list[dict[str, Any]] = []  # for stats.json
        self.failed_adoptions: dict[str, int] = {}
        self.adopted_cpu = 0.0  # CPU-s of the adopted supervisors that exited, counted in their own stats.json
        self.handed_back = False  # adopted, it stops because its machine came back: not a stop of the crawl
        self.agents = agents
        self.members: list[Member] = []
        self.ring: GlobalRing | None = None  # over the live machines
        self.bridge: Bridge | None = None
        self.departures: list[dict[str, Any]] = []  # machines that left, for stats.json
        self.rejoins: list[str] = []  # machines that came back, this one included
        self.joins: list[str] = []  # machines that joined the crawl under way, this one included
        self.quiet = False  # this machine has nothing to do, send or read (Supervisor.check_end)
        self.view: dict[str, Entry] = {}  # the entries as the heartbeat last read them, for GET /status
        self.beats: Beats = {}
        self.joining = False  # this machine is rejoining: its agents wait for the others' handoff
        self.newcomer = False  # this machine was not a member: it joins the crawl under way (and holds the turn)
        self.switching: asyncio.Task[None] | None = None  # a handoff under way

    @property
    def live(self) -> list[str]:
        assert self.ring is not None
        return list(self.ring.live)

    def manifest(self) -> dict[str, Any]:
        return {"members": self.members, "live": self.live} if self.ring is not None else {}

    async def connect(self) -> None:
        """Connect to the crawl and take this machine's folder (``OUT/lock``). Held by the supervisor of a
        survivor that adopted this machine (it holds the key ``adopt.NODE``), ask for it back (``back.NODE``);
        once that one stopped, put the entry on before it could expire (so no machine reacts). Its fetches
        ended before it let the folder go, so the agents' resume keeps them polite: a resumed agent fetches
        no host before its delay (a Crawl-delay included) and no IP before the IP delay. An adopted
        supervisor that finds the folder held (the machine came back meanwhile) gives up within the TTL."""
        cluster, node, out = self.cluster, self.config.node, self.supervisor.out
        await cluster.connect()
        deadline = time.monotonic() + (self.config.ttl if self.adopted_by else self.config.join_timeout)
        asked = False
        while (lock := lock_folder(out)) is None:
            if time.monotonic() > deadline:
                raise ClusterError(f"another process runs the crawl in {out}")
            if not self.adopted_by and await cluster.holder(adopt_key(node)) is not None:
                if not asked:
                    print(f"crawl: machine {node} was adopted; asking for its agents back", file=sys.stderr, flush=True)
                await cluster.keep(back_key(node))
                asked = True
            await asyncio.sleep(HEARTBEAT)
        self.supervisor.folder_lock = lock
        if asked:
            await cluster.release(back_key(node))
            entry = (await cluster.view()).get(node)
            if entry is not None:
                cluster.entry = dataclasses.replace(entry, adopted_by="")
                await cluster.beat()

    async def join(self) -> None:
        """Join the crawl (a resumed machine keeps its manifest's members; one left out rejoins),
        and make the bridge over the ring."""
        cluster, node, out = self.cluster, self.config.node, self.supervisor.out
        manifest = out / "crawl.json"
        saved = orjson.loads(manifest.read_bytes()) if self.supervisor.resuming and manifest.exists() else {}
        if "members" in saved and node not in (saved.get("live") or [node]):
            # a newcomer stopped or killed before it joined: it joins again, as a newcomer (the turn; its agents
            # own no host until they read every member's archive), whether or not the others named it
            await self.join_running()
        elif "members" in saved:
            self.members = [(n, agents) for n, agents in saved["members"]]
            live = saved.get("live")
            if left_out(node, await self.settled_view()):
                members, others = await self.agreed()
                if members[:len(self.members)] == self.members:  # machines joined while it was away
                    self.members = members
                live = sorted({*others, node})
                self.joining = self.supervisor.paused = True  # its agents start paused
                print(f"crawl: machine {node} rejoins crawl {self.config.crawl_id!r}: {', '.join(live)}",
                      file=sys.stderr, flush=True)
            self.ring = GlobalRing(self.members, live)
            await cluster.beat(live=self.live, joining=self.joining, members=self.members)
        else:
            self.members = await cluster.wait_members()
            if self.members:
                self.ring = GlobalRing(self.members)
            else:
                await self.join_running()
        assert self.ring is not None
        self.bridge = Bridge(cluster.js, out, self.config.crawl_id, node, self.agents, self.ring)

    async def join_running(self) -> None:
        """Join the crawl under way as a new member: once it is this machine's turn (one newcomer at a time,
        so that every machine appends the same ones in the same order), put its entry ``joining`` with
        the others' member list and itself appended, its agents paused; the others hand its hosts over
        (:meth:`follow`), as to a machine rejoining. A newcomer stopped before it joined and resumed joins
        so again: the others may have appended it already, and may still name it live."""
        cluster, node = self.cluster, self.config.node
        print(f"crawl: machine {node} joins crawl {self.config.crawl_id!r} under way; waiting for its turn",
              file=sys.stderr, flush=True)
        await cluster.take_turn(lambda view: not any(e.members and not e.stop for n, e in view.items() if n != node))
        self.newcomer = self.joining = self.supervisor.paused = True  # its agents start paused
        members, live = await self.agreed()
        # one joining again may be among the others' members already, even live (its entry not expired yet)
        self.members = members if node in dict(members) else [*members, (node, self.agents)]
        # not live on its own ring yet: its agents own no host (no seed, no link, no lookup) until they
        # have read the others' archives, once all handed its share over (:meth:`rejoin`)
        self.ring = GlobalRing(self.members, [n for n in live if n != node])
        await cluster.beat(live=self.live, joining=True, members=self.members)
        others = ", ".join(n for n, _ in self.members if n != node)
        print(f"crawl: machine {node} joins crawl {self.config.crawl_id!r} after {others}", file=sys.stderr, flush=True)

    async def agreed(self) -> tuple[list[Member], list[str]]:
        """The members and the live machines the others agree on (waited for while they change, up to the
        join timeout). A machine they name live whose entry has expired has left, and they have not seen
        it yet (they look once a heartbeat): waited for too, or the newcomer would join with it live, see
        it leave, and take its share over a second time."""
        deadline = time.monotonic() + self.config.join_timeout
        while True:
            view = await self.settled_view()
            agreed = {(tuple(e.members), tuple(e.live)) for n, e in view.items()
                      if n != self.config.node and e.live and not e.stop}
            if len(agreed) == 1:
                members, live = agreed.pop()
                if all(n in view for n in live if n != self.config.node):
                    return list(members), list(live)
            if time.monotonic() > deadline:
                raise ClusterError(f"the machines of crawl {self.config.crawl_id!r} do not agree on who is live")
            await asyncio.sleep(HEARTBEAT)  # they change their rings at this pace

    async def settled_view(self) -> dict[str, Entry]:
        """The entries, once the others no longer name this machine live on the word of a run of it before
        this one (killed, and resumed at once): its entry is put again if it has not expired yet, and they
        rightly go on naming it live; expired, they are about to see it leave and take its hosts over, and
        they are waited for (up to the join timeout). Read at once, a resumed newcomer would take their
        stale word for its handoff, and a resumed member for its place, then find itself left out a
        heartbeat later. Machines that adopt those gone leave none out: their word holds."""
        node, deadline = self.config.node, time.monotonic() + self.config.join_timeout
        while True:
            view = await self.cluster.view()
            named = any(node in e.live for n, e in view.items() if n != node and not e.stop)
            if (not named or self.config.departure == "adopt" or self.cluster.entry.beat
                    or await self.cluster.renew()):
                return view
            if time.monotonic() > deadline:
                raise ClusterError(f"the machines of crawl {self.config.crawl_id!r} name machine {node} live, "
                                   "but it has no entry")
            await asyncio.sleep(HEARTBEAT)  # they look at the entries at this pace

    async def run(self) -> None:
        """The bridge and the heartbeat, until cancelled; either failing stops the crawl, failed."""
        assert self.bridge is not None
        tasks = [asyncio.create_task(self.bridge.run()), asyncio.create_task(self.beat_loop())]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if not self.supervisor.stopping:
                error = next(iter(done)).exception()
                where = "".join(traceback.format_exception(error)) if error is not None else "it ended"
                print(f"crawl: the link exchange with the other machines failed; stopping: {where}", file=sys.stderr)
                self.supervisor.failed = True
                self.supervisor.stop_crawl("cluster failing")
        finally:
            if self.switching:
                self.switching.cancel()
            await stop_tasks(tasks)

    async def close(self, reason: str) -> None:
        with contextlib.suppress(Exception):  # the last word, in case no beat carried it (the server may be gone)
            await self.cluster.beat(stop=self.said(reason))
            if self.newcomer and self.joining:  # stopped before it joined: the next newcomer's turn
                await self.cluster.release(TURN)
        for node, adopted in self.adopted.items():  # they stop with the crawl, as this machine did
            await adopted.wait()
            self.adopted_cpu += adopted.cpu_seconds()
            with contextlib.suppress(Exception):
                await self.cluster.release(adopt_key(node))
        await self.cluster.close()

    def said(self, reason: str) -> str:
        """What this machine's entry says of its stop: nothing when it hands its agents back (the crawl goes on)."""
        return "" if self.handed_back else reason

    async def beat(self) -> None:
        assert self.bridge is not None
        s = self.supervisor
        await self.cluster.beat(quiet=self.quiet, published=dict(self.bridge.published), received=dict(self.bridge.received),
                                stop=self.said(s.stop_reason), pages=s.total().pages, live=self.live,
                                joining=self.joining, members=self.members)
        if self.newcomer and self.joining:
            await self.cluster.keep(TURN)
        await self.keep_adopted()
        if self.adopted_by and not s.stopping and await self.cluster.holder(back_key(self.config.node)) is not None:
            self.handed_back = True
            print(f"crawl: machine {self.config.node} came back; {self.adopted_by} hands its agents back",
                  file=sys.stderr, flush=True)
            s.stop_crawl("handed back")

    async def keep_adopted(self) -> None:
        """Hold the adoption of each machine this one runs; let it go once its supervisor exited (handed back,
        or the crawl stopped). A machine whose adoption keeps failing stops the crawl: it would never end."""
        for node, adopted in list(self.adopted.items()):
            if adopted.exited is None:
                await self.cluster.keep(adopt_key(node))
                continue
            del self.adopted[node]
            self.adopted_cpu += adopted.cpu_seconds()
            await self.cluster.release(adopt_key(node))
            print(f"crawl: machine {node}, adopted by {self.config.node}, exited (status {adopted.exited})",
                  file=sys.stderr, flush=True)
            if adopted.exited != 0:
                self.failed_adoptions[node] = self.failed_adoptions.get(node, 0) + 1
                if self.failed_adoptions[node] >= ADOPTION_TRIES and not self.supervisor.stopping:
                    self.supervisor.failed = True
                    self.supervisor.stop_crawl(f"cannot adopt machine {node}")

    async def beat_loop(self) -> None:
        """Put this machine's entry every heartbeat; follow the machines that leave and rejoin; stop the crawl
        once every live machine's entry shows it over, or another stopped (a crawl over machines stops as one)."""
        assert self.ring is not None
        s, node, fence = self.supervisor, self.config.node, self.config.ttl / 2
        before: dict[str, Entry] = {}
        while True:
            # fenced: past half the TTL without a beat, the others may soon take this machine's hosts. Not
            # asyncio.wait_for: before 3.12 it loses a cancellation that comes as its awaitable ends (CPython #86296), and
            # this loop, cancelled at the crawl's end, then beat on and kept the supervisor from exiting (the NATS
            # client's own wait_for can still lose one: run() asks again, cluster.stop_tasks)
            try:
                async with asyncio.timeout(fence):
                    await self.beat()
                async with asyncio.timeout(fence):
                    view = await self.cluster.view()
            except TimeoutError:
                if not s.stopping:  # a crawl stopping anyway (its agents finishing) is not cut off
                    s.failed = True
                    s.stop_crawl(f"cut off: no beat put for {fence:g} s")
                return
            if not s.stopping and node in view:  # a view without this machine's own entry is not to act on
                await self.follow(view)
            self.view, self.beats = view, note_beats(self.beats, view, time.monotonic())
            if not s.stopping:
                others = [] if self.joining else left_out(node, view)
                other = next((e for n, e in view.items() if e.stop and n != node and n in self.ring.live), None)
                if others:
                    s.failed = True
                    s.stop_crawl(f"left out of the crawl by {', '.join(others)}")
                elif crawl_over(before, view, self.ring):
                    s.stop_crawl("done")
                elif other is not None:
                    s.stop_crawl(f"machine {other.node}: {other.stop}")
                if s.stopping:
                    await self.cluster.beat(stop=self.said(s.stop_reason))
            before = view
            await asyncio.sleep(HEARTBEAT)

    async def follow(self, view: dict[str, Entry]) -> None:
        """Machines gone, or coming back: change the ring (at once for those gone, by a handoff for the others)."""
        assert self.ring is not None
        if self.switching is not None and not self.switching.done():
            return
        if self.joining:
            node = self.config.node
            if all(node in view[n].live for n in self.ring.live if n != node and n in view):
                self.switching = asyncio.create_task(self.rejoin())
            return
        gone = await self.cluster.gone([n for n in self.ring.live if n not in view])
        back = rejoining(self.ring, view)
        new = newcomer(self.members, view)
        if gone and self.config.departure == "adopt":
            await self.adopt(gone)
        elif gone:
            self.leave(tuple(n for n in self.ring.live if n not in gone))
        elif back:
            self.switching = asyncio.create_task(self.hand_over(tuple(sorted({*self.ring.live, *back}))))
        elif new is not None:
            self.switching = asyncio.create_task(self.hand_over(tuple(sorted({*self.ring.live, new[0]})), new))

    async def adopt(self, gone: list[str]) -> None:
        """Machines left (entries expired): adopt each one no other survivor adopts (the first to claim
        ``adopt.NODE``): run its supervisor, resumed from its folder on the shared storage, in this
        machine's process tree (``engine/adoption.py``). The ring does not change. An adopted machine
        adopts none: the machine whose tree runs it does."""
        if self.adopted_by:
            return
        for node in gone:
            if node in self.adopted or not await self.cluster.claim(adopt_key(node)):
                continue
            self.adopted[node] = await Adopted.start(self.supervisor.config.machines_root / node, self.config.node)
            seen = round(time.monotonic() - self.beats[node][1], 3) if node in self.beats else None
            self.adoptions.append({"node": node, "seconds_since_last_beat": seen})
            print(f"crawl: machine {node} left (no beat for {self.config.ttl:g} s); {self.config.node} adopts it",
                  file=sys.stderr, flush=True)

    def leave(self, live: tuple[str, ...]) -> None:
        """Machines left (entries expired): the ring over ``live``, in the manifest, then to every agent."""
        assert self.ring is not None
        gone = sorted(set(self.ring.live) - set(live))
        seen = {n: round(time.monotonic() - self.beats[n][1], 3) for n in gone if n in self.beats}
        self.ring = GlobalRing(self.members, live)
        self.supervisor.update_manifest()
        self.supervisor.tell({"cmd": "ring", "live": list(live)})
        self.departures.append({"gone": gone, "live": list(live), "seconds_since_last_beat": seen})
        print(f"crawl: machine {', '.join(gone)} left (no beat for {self.config.ttl:g} s); "
              f"its hosts go to {', '.join(live)}", file=sys.stderr, flush=True)

    async def hand_over(self, live: tuple[str, ...], new: Member | None = None) -> None:
        """Machines rejoin, or ``new`` joins: this one's agents stop fetching the hosts they lose (paused until
        no fetch is in flight, then the larger ring, which purges those hosts; for a newcomer, the member
        list with it appended, which gives its agents places), and only then its entry names them."""
        assert self.ring is not None and self.bridge is not None
        s, joined = self.supervisor, sorted(set(live) - set(self.ring.live))
        print(f"crawl: machine {', '.join(joined)} {'joins' if new else 'rejoins'}; handing its hosts over",
              file=sys.stderr, flush=True)
        paused = s.paused
        await s.pause()
        ring: dict[str, Any] = {"cmd": "ring", "live": list(live)}
        if new is not None:
            self.members = [*self.members, new]
            self.bridge.widen(GlobalRing(self.members))
            ring["members"] = self.members
        await s.command(ring)
        self.ring = GlobalRing(self.members, live)
        s.update_manifest()
        if not paused:
            await s.resume()
        if new is not None:
            self.joins += joined
        else:
            self.rejoins += joined

    async def rejoin(self) -> None:
        """Every live machine handed this one's hosts over: its agents read what the others stored of them,
        then crawl."""
        assert self.ring is not None
        node, live = self.config.node, self.live
        others = [n for n in self.ring.live if n != node]
        if self.newcomer:  # every member's archive, those gone included: they stored pages of its hosts too
            others, live = [n for n, _ in self.members if n != node], sorted({*live, node})
        politeness = self.supervisor.config.politeness  # another's last fetch of a host or IP may just have ended
        await asyncio.sleep(max(politeness.host_delay, politeness.ip_delay))
        await self.supervisor.command({"cmd": "ring", "live": live, "sources": others})
        if self.newcomer:  # the manifest after the agents: one starting meanwhile must find itself not live yet
            self.ring = GlobalRing(self.members, live)
            self.supervisor.update_manifest()
        self.joining = False
        (self.joins if self.newcomer else self.rejoins).append(self.config.node)
        await self.supervisor.resume()
        if self.newcomer:
            await self.cluster.release(TURN)

    def report(self) -> dict[str, Any]:
        """``stats.json``'s ``cluster``: this machine, the members, the live ones, who left and who came back,
        the messages of links it exchanged."""
        assert self.bridge is not None
        return {"node": self.config.node, "members": self.members, "live": self.live, "departures": self.departures,
                "adoptions": self.adoptions, "adopted_by": self.adopted_by, "rejoins": self.rejoins, "joins": self.joins,
                "messages_sent": self.bridge.messages_sent, "messages_received": self.bridge.messages_received}

    def commands(self) -> list[dict[str, Any]]:
        """What an agent (re)started is told: the live machines (its checkpoint has the ring it routed by;
        it takes over what that had not, or hands over what it should not have)."""
        return [{"cmd": "ring", "live": self.live, "members": self.members}] if self.ring is not None else []
