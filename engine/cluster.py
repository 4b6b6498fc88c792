"""A crawl over several machines (issue 17): who takes part, and when the whole crawl is over.

Each machine's supervisor (``engine/supervisor.py``) joins the crawl named ``cluster.crawl_id``
on a NATS JetStream server. Its members live in the key-value bucket ``crawl-ID``, one key per
machine (its node name) holding an :class:`Entry`, put again every :data:`HEARTBEAT` seconds;
the bucket's TTL (``cluster.ttl``) lets the entry of a machine that stopped beating vanish. The live
view of the crawl is the bucket's keys. A machine waits until ``cluster.size`` members are there,
then builds the ring (``engine/ownership.py: GlobalRing``) from the sorted member list and writes
it into its manifest.

**A machine joining** (issue 17, item 1): the member list only grows, in join order, and every
entry carries it. A machine not among the members that finds entries naming them (:func:`running`)
joins the crawl under way: it waits for the join turn (the key :data:`TURN`, held by one newcomer
at a time, so all machines append the newcomers in one order), then puts its entry ``joining``
with the others' list and itself appended; each other machine that sees it (:func:`newcomer`)
hands its hosts over as to a machine rejoining (``engine/machines.py``).

**A machine leaving** (issue 17, item 4): when a member's entry expires (no beat for
``cluster.ttl`` seconds: it died, or lost the server), every other machine sees its key gone
from the same bucket (a key missing from a view is checked with a get: ``Cluster.gone``). By default
one survivor adopts it: the first to create the key :func:`adopt_key` (as the join turn) runs its
supervisor (``engine/adoption.py``), which beats its entry again with ``adopted_by``; the ring does
not change; the machine, come back, asks for its agents with :func:`back_key`. With
``cluster.departure = "take_over"`` every survivor builds the same ring over the members still live:
the machine that left owns no host any more; its places in the ring, which name spools and
subjects, stay; the survivors' agents take its hosts over (``engine/takeover.py``); each entry says
the live set its machine crawls by (``live``). A machine that finds itself left out of another's
``live`` rejoins (``joining``, ``engine/machines.py``: the others hand its hosts back before it
crawls them); one that was not coming back stops. A machine that cannot put its entry for half the
TTL stops too, so that by the time another adopts it or takes its hosts it fetches nothing.

Links between machines travel in the stream ``crawl-ID-links`` (``engine/bridge.py``), subject
``crawl.ID.links.NODE.I`` per receiving agent, work-queue retention: a message is gone once its
receiver acknowledged it.

**The end** is a distributed termination check on the entries alone. A machine says ``quiet``
when its agents are idle, its own spools are read to their ends and its bridge has published
everything its agents wrote for other machines and its agents have read everything it received;
it also says, for each of its spools to another machine's agent, where it has published it to,
and for each such spool of the others, where it has taken it in to (``engine/bridge.py``). The
crawl is over when two views in a row show every member quiet, with a newer beat and the same
positions, and every spool taken in where it was published to: the four-counter method with
positions for counters, since a quiet machine wakes up only on a message, which would move a
position (:func:`crawl_over`, pure). Positions, unlike message counts, are not changed by a
message repeated after a crash. The first machine to see it puts ``stop = "done"``; the others
stop on seeing that.

**A stop** of one machine for any other reason (``max_pages`` or ``max_seconds`` on its own
count and clock, a signal, the control API) is put in its entry too, and stops the others: the
crawl stops as one and resumes as one (``--resume`` on every machine). Only a machine that dies
says nothing; a survivor adopts it (or the others take over its hosts) once its entry expires; one
handing its agents back to the machine it ran, adopted, says nothing either: the crawl goes on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

from typing import TYPE_CHECKING

import orjson

from engine.config import ClusterConfig
from engine.ownership import GlobalRing, Member

if TYPE_CHECKING:  # nats is imported when a machine joins: a crawl on one machine never pays for it
    from nats.aio.client import Client
    from nats.js import JetStreamContext
    from nats.js.kv import KeyValue

HEARTBEAT = 0.5  # seconds between two puts of a machine's entry
TURN = "join.turn"  # the key of the bucket held by the one machine joining a running crawl, its name the value


def adopt_key(node: str) -> str:
    """The key held by the machine adopting ``node`` (its name the value): one adopter per machine gone."""
    return f"adopt.{node}"


def back_key(node: str) -> str:
    """The key ``node``, come back, puts while another machine runs its agents: it asks for them back."""
    return f"back.{node}"


RECONNECTS = 10  # attempts a second apart, at the first connect and after losing the server


async def _quiet(error: Exception) -> None:
    """The client's error callback: its errors reach us as exceptions, not as log noise."""


def bucket_name(crawl_id: str) -> str:
    return f"crawl-{crawl_id}"


def stream_name(crawl_id: str) -> str:
    return f"crawl-{crawl_id}-links"


def subject(crawl_id: str, node: str, agent: int) -> str:
    """The subject of the links for agent ``agent`` of machine ``node``."""
    return f"crawl.{crawl_id}.links.{node}.{agent}"


@dataclass(frozen=True)
class Entry:
    """One machine's entry in the crawl's bucket."""

    node: str
    agents: int
    beat: int = 0
    quiet: bool = False  # nothing to do here, nothing unsent, nothing unread
    published: dict[str, list[int]] = field(default_factory=dict)  # spool to another machine -> published to
    received: dict[str, list[int]] = field(default_factory=dict)  # another machine's spool -> taken in to
    stop: str = ""  # why this machine stopped the crawl: "done" (it saw the whole crawl over), or its own reason
    pages: int = 0  # pages its agents have stored, for ``crawl status --cluster``
    live: list[str] = field(default_factory=list)  # the machines whose agents its ring is made of
    joining: bool = False  # it left and came back, or joins anew: it waits for the others to hand its hosts over
    members: list[Member] = field(default_factory=list)  # its ring's places, in join order (a newcomer learns them here)
    adopted_by: str = ""  # the machine whose process tree runs this one's agents since it left (engine/adoption.py)

    @property
    def state(self) -> str:
        """``crawling``; ``quiet``: idle, nothing unsent or unread; ``rejoining``: waiting for its hosts
        to be handed back; ``stopped: REASON``; any of the first three ``, adopted by NODE``."""
        state = (f"stopped: {self.stop}" if self.stop else "rejoining" if self.joining
                 else "quiet" if self.quiet else "crawling")
        return f"{state}, adopted by {self.adopted_by}" if self.adopted_by and not self.stop else state

    def encode(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def decode(cls, data: bytes) -> Entry:
        fields = orjson.loads(data)
        fields["members"] = [(node, agents) for node, agents in fields.get("members", [])]
        return cls(**fields)


def rejoining(ring: GlobalRing, view: Mapping[str, Entry]) -> list[str]:
    """The members out of ``ring`` that came back asking to rejoin: a machine gone does not come back
    by beating again, but by saying it rejoins, so every machine goes through the same rings."""
    members = {node for node, _ in ring.agents_list}
    return sorted(n for n, e in view.items() if n in members and n not in ring.live and e.joining and not e.stop)


def newcomer(members: Sequence[Member], view: Mapping[str, Entry]) -> Member | None:
    """The machine, not among ``members``, that asks to join: its entry says ``joining`` with ``members`` and
    itself appended. One asks at a time (it holds the crawl's :data:`TURN`); should two ask, the first by name."""
    known = {node for node, _ in members}
    asking = sorted(n for n, e in view.items() if n not in known and e.joining and not e.stop
                    and e.members == [*members, (n, e.agents)])
    return (asking[0], view[asking[0]].agents) if asking else None


def running(node: str, view: Mapping[str, Entry]) -> bool:
    """Whether the view shows a crawl under way without ``node``: another machine's entry names its members,
    and ``node`` is not among them (a machine of the start may see another's members before its own)."""
    return any(e.members and node not in dict(e.members) and not e.stop for e in view.values())


def left_out(node: str, view: Mapping[str, Entry]) -> list[str]:
    """The live machines whose ring has left ``node`` out (they took its hosts over)."""
    return sorted(e.node for e in view.values() if e.live and node not in e.live and e.node != node and not e.stop)


def crawl_over(before: Mapping[str, Entry], now: Mapping[str, Entry], ring: GlobalRing) -> bool:
    """Whether two successive views of the entries show a finished crawl (see the module's docstring):
    the machines that count are ``ring.live``, the spools those that lead to one of their agents."""
    nodes = set(ring.live)
    if any(e.stop == "done" for node, e in now.items() if node in nodes):
        return True
    if any(e.joining and not e.stop for e in now.values()):
        return False  # a machine rejoining: the hosts handed back to it are nobody's work until it takes them
    if not nodes <= set(before) or not nodes <= set(now):
        return False  # a member missing (not joined, or its entry expired): not over
    for node in nodes:
        a, b = before[node], now[node]
        if not (a.quiet and b.quiet) or b.beat <= a.beat or (a.published, a.received) != (b.published, b.received):
            return False
    received = {key: position for node in nodes for key, position in now[node].received.items()}
    places = ring.agents_list  # a spool to a machine this one never took in (it joined, then died) is not counted
    return all(received.get(key) == position for node in nodes for key, position in now[node].published.items()
               if (g := int(key.rsplit(">", 1)[1])) < len(places) and places[g][0] in nodes)


Beats = dict[str, tuple[int, float]]  # node -> (its beat number, monotonic time this machine first saw it)


def note_beats(before: Beats, view: Mapping[str, Entry], now: float) -> Beats:
    """When each live machine's latest beat was first seen here. An entry carries no clock (the
    machines' clocks need not agree), so a beat's age is measured on this machine's clock."""
    return {node: before[node] if node in before and before[node][0] == e.beat else (e.beat, now)
            for node, e in view.items()}


def machines(view: Mapping[str, Entry], beats: Beats, now: float) -> list[dict[str, object]]:
    """Every live machine of a view, for the control API's ``GET /status``: its node, agents, pages,
    state, beat number and seconds since that beat was seen."""
    return [{"node": e.node, "agents": e.agents, "pages": e.pages, "state": e.state, "beat": e.beat,
             "beat_age_seconds": round(now - beats[node][1], 3) if node in beats else None}
            for node, e in sorted(view.items())]


async def read_entries(js: JetStreamContext, kv: KeyValue, crawl_id: str) -> dict[str, Entry]:
    """The live members' entries in the crawl's bucket, by node.

    The keys come from the bucket's stream info (its subjects with a message), not from
    ``KeyValue.keys()``: that opens a watcher, a consumer on the server which its stop leaves
    there for five minutes, and a view every heartbeat by every machine would pile them up until
    the server refuses more consumers (a crawl over three machines stopped so after six minutes)."""
    from nats.js.errors import KeyNotFoundError

    bucket = bucket_name(crawl_id)
    prefix = f"$KV.{bucket}."
    info = await js.stream_info(f"KV_{bucket}", subjects_filter=f"{prefix}>")
    entries = {}
    for subject in info.state.subjects or {}:
        key = subject[len(prefix):]
        if "." in key:  # not a node (a node's name has no dot): the join turn, an adoption
            continue
        try:
            item = await kv.get(key)
        except KeyNotFoundError:  # its TTL ran out since the keys were listed, or deleted: that machine is gone
            continue
        if item.value:
            entries[item.key] = Entry.decode(item.value)
    return entries


async def crawl_status(config: ClusterConfig) -> dict[str, Entry]:
    """Every live machine's entry of the crawl ``config.crawl_id``, read without joining it (nothing
    is created on the server: a crawl it does not know is a :class:`ClusterError`)."""
    import nats
    import nats.errors
    from nats.js.errors import BucketNotFoundError

    try:
        nc = await nats.connect(config.url, connect_timeout=5, max_reconnect_attempts=1, error_cb=_quiet)
    except (OSError, nats.errors.Error) as e:
        raise ClusterError(f"cannot reach the NATS server at {config.url}: {e!r}") from None
    try:
        js = nc.jetstream()
        kv = await js.key_value(bucket_name(config.crawl_id))
        return await read_entries(js, kv, config.crawl_id)
    except BucketNotFoundError:
        raise ClusterError(f"no crawl {config.crawl_id!r} on {config.url}") from None
    finally:
        await nc.close()


RECANCEL = 0.5  # seconds between two cancellations of a task that has not ended


async def stop_tasks(tasks: Sequence[asyncio.Task[object]]) -> None:
    """Cancel ``tasks`` and wait until each has ended, cancelling again every :data:`RECANCEL` seconds.

    The tasks of a machine await the NATS client, whose ``next_msg`` and ``request`` wrap their wait in
    ``asyncio.wait_for``; before Python 3.12 that returns a reply arriving as the cancellation does and
    loses the cancellation (CPython #86296), and the task's loop (a heartbeat, a pull of links) then goes
    on, keeping the supervisor from exiting: a supervisor was seen waiting on one for minutes after its
    crawl. Asked again, it ends at its next wait. Cancelled itself meanwhile (a task stopping the tasks
    it runs, stopped in turn), it still waits for them, then passes the cancellation on.
    """
    pending, cancelled = set(tasks), False
    while pending:
        for task in pending:
            task.cancel()
        try:
            _, pending = await asyncio.wait(pending, timeout=RECANCEL)
        except asyncio.CancelledError:
            cancelled = True
    for task in tasks:  # their failures are the caller's to report, as gather(return_exceptions=True) leaves them
        if not task.cancelled():
            task.exception()
    if cancelled:
        raise asyncio.CancelledError


class ClusterError(Exception):
    """The crawl's members are not as this machine expects (too many, a name taken, none in time)."""


class Cluster:
    """This machine's connection to the crawl: its entry, the view of the others, the link stream."""

    def __init__(self, config: ClusterConfig, agents: int) -> None:
        self.config = config
        self.entry = Entry(config.node, agents)
        self.nc: Client | None = None
        self._js: JetStreamContext | None = None
        self._kv: KeyValue | None = None

    @property
    def js(self) -> JetStreamContext:
        assert self._js is not None, "connect() first"
        return self._js

    async def connect(self) -> None:
        """Connect, and create the bucket and the stream if this machine is the first."""
        import nats
        import nats.errors
        from nats.js.api import RetentionPolicy, StorageType

        try:
            self.nc = await nats.connect(self.config.url, connect_timeout=5, max_reconnect_attempts=RECONNECTS,
                                         reconnect_time_wait=1, error_cb=_quiet, name=self.config.node)
        except (OSError, nats.errors.Error) as e:
            raise ClusterError(f"cannot reach the NATS server at {self.config.url}: {e!r}") from None
        self._js = self.nc.jetstream()
        crawl = self.config.crawl_id
        self._kv = await self._js.create_key_value(bucket=bucket_name(crawl), ttl=self.config.ttl, history=1)
        await self._js.add_stream(name=stream_name(crawl), subjects=[f"crawl.{crawl}.links.>"],
                                  retention=RetentionPolicy.WORK_QUEUE, storage=StorageType.FILE)

    async def beat(self, **state: object) -> None:
        """Put this machine's entry again, with ``state`` (quiet, published, received, stop) changed."""
        assert self._kv is not None
        fields = {**asdict(self.entry), **state, "beat": self.entry.beat + 1}
        self.entry = Entry(**fields)
        await self._kv.put(self.entry.node, self.entry.encode())

    async def renew(self) -> bool:
        """Put this machine's entry, as a run of it before this one left it, again, on the condition that it
        is still there (the put names its revision): whether it was. Either the entry never went, and no
        machine can have seen this one leave (they look with a get of the key, :meth:`gone`), or it expired."""
        from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError

        assert self._kv is not None
        try:
            item = await self._kv.get(self.config.node)
        except KeyNotFoundError:
            return False
        if not item.value or item.revision is None:
            return False
        old = Entry.decode(item.value)
        entry = replace(old, beat=old.beat + 1, quiet=False)  # quiet: that run's, not yet this one's
        try:
            await self._kv.update(entry.node, entry.encode(), last=item.revision)
        except KeyWrongLastSequenceError:
            return False
        self.entry = entry
        return True

    async def view(self) -> dict[str, Entry]:
        """The live members' entries, by node."""
        assert self._kv is not None
        return await read_entries(self.js, self._kv, self.config.crawl_id)

    async def gone(self, nodes: Sequence[str]) -> list[str]:
        """Which of ``nodes``, missing from a view, have no entry indeed. A listing of the bucket's keys can
        miss one being put again (the old revision gone, the new one after the listing's end); a get of
        the key cannot."""
        from nats.js.errors import KeyNotFoundError

        assert self._kv is not None
        out = []
        for node in nodes:
            try:
                await self._kv.get(node)
            except KeyNotFoundError:  # expired (or deleted)
                out.append(node)
        return out

    async def wait_members(self) -> list[Member]:
        """Beat until ``cluster.size`` machines have joined; their sorted (node, agents) list. Empty if the
        crawl is under way already: the machine joins it (``engine/machines.py``)."""
        size, deadline = self.config.size, time.monotonic() + self.config.join_timeout
        while True:
            if running(self.config.node, await self.view()):
                return []
            await self.beat()
            view = await self.view()
            if len(view) > size:
                raise ClusterError(f"{len(view)} machines joined crawl {self.config.crawl_id!r} "
                                   f"({', '.join(sorted(view))}), more than cluster.size = {size}")
            if len(view) == size:
                return sorted((e.node, e.agents) for e in view.values())
            if time.monotonic() > deadline:
                raise ClusterError(f"only {len(view)} of {size} machines joined crawl {self.config.crawl_id!r} "
                                   f"within {self.config.join_timeout:.0f} s: {', '.join(sorted(view))}")
            await asyncio.sleep(HEARTBEAT)  # a heartbeat period: the others put their entries at this pace

    async def claim(self, key: str) -> bool:
        """Create ``key`` (this machine's name its value) if no machine holds it; whether it did. The holder
        puts it again with each beat (:meth:`keep`) and deletes it when done (:meth:`release`); a holder
        that dies loses it with the TTL."""
        from nats.js.errors import KeyWrongLastSequenceError

        assert self._kv is not None
        try:
            await self._kv.create(key, self.config.node.encode())
        except KeyWrongLastSequenceError:
            return False
        return True

    async def holder(self, key: str) -> str | None:
        """The machine holding ``key``, if any."""
        from nats.js.errors import KeyNotFoundError

        assert self._kv is not None
        try:
            item = await self._kv.get(key)
        except KeyNotFoundError:
            return None
        return item.value.decode() if item.value else None

    async def keep(self, key: str) -> None:
        assert self._kv is not None
        await self._kv.put(key, self.config.node.encode())

    async def release(self, key: str) -> None:
        assert self._kv is not None
        await self._kv.delete(key)

    async def take_turn(self, give_up: Callable[[dict[str, Entry]], bool]) -> None:
        """Wait for this machine's turn to join the running crawl: the key :data:`TURN`, claimed, kept with
        each beat while it joins and released once joined.
        A :class:`ClusterError` if ``give_up`` says so of a view meanwhile (the crawl stopped)."""
        while not await self.claim(TURN):  # another machine is joining
            if give_up(await self.view()):
                raise ClusterError(f"crawl {self.config.crawl_id!r} stopped before machine "
                                   f"{self.config.node} could join it")
            await asyncio.sleep(HEARTBEAT)  # the holder joins within a few beats

    async def close(self) -> None:
        if self.nc is not None:
            await self.nc.close()
