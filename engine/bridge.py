"""The bridge: one machine's links to and from the agents of the other machines (issue 17).

A task pair in the supervisor (``engine/supervisor.py``), so agents keep writing and reading
files only (``engine/link_exchange.py``), whatever the broker does:

* **Out.** An agent writes the links of another machine's agent ``G`` (its place in the global
  ring; a machine joining adds places, :meth:`Bridge.widen`) to the spool ``OUT/remote/III-GGG``, like any spool. The bridge reads those spools,
  cuts what it read into messages of at most :data:`MESSAGE_BYTES` (the same frames, CRC and
  all) and publishes each to ``G``'s subject, awaiting the stream's acknowledgement. Only then
  are its read positions saved (``OUT/remote/positions.json``, replaced whole) and the segments
  before them deleted: a crash re-publishes at most what it had not saved, and the receiver's
  sieve drops the duplicates.
* **In.** For each local agent, a durable pull consumer on its subject; a message's frames are
  appended to the agent's inbox spool from sender :data:`~engine.link_exchange.BRIDGE`
  (``OUT/links/999-III``) and fsynced, and only then acknowledged: a crash before that gets the
  message again (at once: the next run makes the consumer anew, :meth:`Bridge.take`), one after
  finds it on disk, where the agent's checkpointed read position covers it.

For the end check (``engine/cluster.py``) the bridge reports positions, not counts, so that a
crash repeats nothing that matters: for each remote spool, where it has been published to
(``published``, key ``NODE.I>G``), and for each spool of another machine whose links it took in,
the position the sender said its last message ended at (``received``, kept as a maximum in
``OUT/remote/received.json``, written before the acknowledgement). A repeated message moves no
position; a sender that lost its saved positions publishes again up to where it was.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import nats.errors
import nats.js.errors
import orjson
from nats.js import JetStreamContext

from engine.cluster import stop_tasks, stream_name, subject
from engine.link_exchange import BRIDGE, Inbox, Outbox, Position, frame, frames
from engine.ownership import GlobalRing
from store.durable import replace_file

END = "Crawl-Spool-End"  # header of a spool's last message of a round: "NODE.I>G SEGMENT OFFSET"
MESSAGE_BYTES = 512 << 10  # well under the server's default max_payload (1 MiB)
FETCH = 64  # messages per pull
PERIOD = 0.05  # seconds between two looks at empty spools, as the agents' exchange


def spool_key(node: str, sender: int, receiver: int) -> str:
    """A spool between machines: local agent ``sender`` of ``node`` to global agent ``receiver``."""
    return f"{node}.{sender}>{receiver}"


def messages(payloads: Sequence[bytes]) -> Iterator[bytes]:
    """The frames of ``payloads``, cut into message bodies of about ``MESSAGE_BYTES`` at most."""
    body: list[bytes] = []
    size = 0
    for payload in payloads:
        framed = frame(payload)
        if body and size + len(framed) > MESSAGE_BYTES:
            yield b"".join(body)
            body, size = [], 0
        body.append(framed)
        size += len(framed)
    if body:
        yield b"".join(body)


class Bridge:
    def __init__(self, js: JetStreamContext, out: Path, crawl_id: str, node: str, agents: int,
                 ring: GlobalRing) -> None:
        self.js, self.crawl_id, self.node, self.agents = js, crawl_id, node, agents
        self.root = out / "remote"
        self.root.mkdir(parents=True, exist_ok=True)
        self.positions_file = self.root / "positions.json"
        saved = orjson.loads(self.positions_file.read_bytes()) if self.positions_file.exists() else {}
        self.received_file = self.root / "received.json"
        self.subjects: dict[int, str] = {}
        self.readers: dict[int, Inbox] = {}
        self.widen(ring, saved.get("read", {}))
        self.writer = Outbox(out / "links", BRIDGE, range(agents), bells=out / "links")
        # for the end check: where each remote spool is published to, and where the spools of other
        # machines' agents have been taken in to, both by spool_key
        self.published: dict[str, list[int]] = {
            spool_key(node, int(i), int(g)): list(p) for g, senders in saved.get("read", {}).items()
            for i, p in senders.items() if tuple(p) > (1, 0)}
        self.received: dict[str, list[int]] = (orjson.loads(self.received_file.read_bytes())
                                               if self.received_file.exists() else {})
        self.messages_sent = self.messages_received = 0

    def widen(self, ring: GlobalRing, read: Mapping[str, Mapping[str, Sequence[int]]] | None = None) -> None:
        """Publish to the agents of every other machine of ``ring``, those that joined since included (the
        places of the others do not change); ``read``: the saved read positions of the spools to them."""
        for g, (n, i) in enumerate(ring.agents_list):
            if n != self.node and g not in self.subjects:
                self.subjects[g] = subject(self.crawl_id, n, i)
                self.readers[g] = Inbox(self.root, g, range(self.agents),
                                        {int(s): (p[0], p[1]) for s, p in (read or {}).get(str(g), {}).items()})

    async def run(self) -> None:
        """Send and take in links until cancelled."""
        tasks = [asyncio.create_task(self.send()), *(asyncio.create_task(self.take(i)) for i in range(self.agents))]
        try:
            await asyncio.gather(*tasks)
        finally:
            await stop_tasks(tasks)
            self.writer.close()

    async def send(self) -> None:
        while True:
            if not await self.send_once():
                await asyncio.sleep(PERIOD)  # the spools are files: nothing to wait on

    async def send_once(self) -> bool:
        """Publish what the agents wrote for other machines; True if there was any."""
        published = False
        for g, reader in list(self.readers.items()):  # a machine joining adds readers meanwhile
            by_sender: dict[int, list[bytes]] = {}
            for sender, payload in reader.payloads():
                by_sender.setdefault(sender, []).append(payload)
            for sender, payloads in by_sender.items():
                key, end = spool_key(self.node, sender, g), list(reader.positions()[sender])
                bodies = list(messages(payloads))
                for n, body in enumerate(bodies, 1):  # the last one says where the spool has been read to
                    headers = {END: f"{key} {end[0]} {end[1]}"} if n == len(bodies) else None
                    await self.js.publish(self.subjects[g], body, stream=stream_name(self.crawl_id), headers=headers)
                    self.messages_sent += 1
                self.published[key] = end
                published = True
        if published:
            read = {str(g): {str(s): list(p) for s, p in r.positions().items()} for g, r in self.readers.items()}
            replace_file(self.positions_file, orjson.dumps({"read": read}))
            for reader in self.readers.values():
                reader.committed(reader.positions())
        return published

    async def take(self, agent: int) -> None:
        """Append the links sent to local agent ``agent`` to its inbox spool, then acknowledge them. The durable
        consumer is made anew first: messages it delivered to a supervisor of this machine before this one
        (killed, or stopped with a pull outstanding) that never acknowledged them would come again only
        after the consumer's ack wait (30 s), maybe after the end check saw their spools taken in (a later
        message of the same spool moves ``received`` past them): links lost, a host handed on with its
        queued URLs among them. A new consumer delivers at once what the work queue still holds, those
        included; only the supervisor that holds this machine's folder reads its subjects."""
        durable, stream = f"{self.node}-{agent}", stream_name(self.crawl_id)
        with contextlib.suppress(nats.js.errors.NotFoundError):  # the first run of this machine: none yet
            await self.js.delete_consumer(stream, durable)
        sub = await self.js.pull_subscribe(subject(self.crawl_id, self.node, agent), durable=durable, stream=stream)
        while True:
            try:
                batch = await sub.fetch(FETCH, timeout=1.0)
            except (nats.errors.TimeoutError, TimeoutError):  # nothing came (the client raises either)
                continue
            for message in batch:
                payloads, used = frames(message.data)
                if used != len(message.data):
                    raise ValueError(f"a torn message on {message.subject}: {used} of {len(message.data)} bytes whole")
                for payload in payloads:
                    self.writer.send(agent, payload)
                if message.headers and END in message.headers:
                    key, segment, offset = message.headers[END].split()
                    self.received[key] = max(self.received.get(key, [0, 0]), [int(segment), int(offset)])
            self.writer.flush()
            self.writer.sync()
            replace_file(self.received_file, orjson.dumps(self.received))
            for message in batch:
                await message.ack()
            self.messages_received += len(batch)

    def drained(self, links_in: Mapping[int, Mapping[str, Sequence[int]]]) -> bool:
        """Nothing left to publish, and every local agent (``links_in``: its read positions) has read
        all that was taken in for it."""
        if not all(reader.drained() for reader in self.readers.values()):
            return False
        written: dict[int, Position] = self.writer.positions()
        return all(tuple(links_in.get(i, {}).get(str(BRIDGE), (0, 0))) >= written[i] for i in range(self.agents))
