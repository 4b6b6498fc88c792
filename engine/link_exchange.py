"""Links between agents: an append-only spool file per (sender, receiver) pair.

A parsed link whose host another agent owns goes into this agent's :class:`Outbox`, which
buffers it and, every few tens of milliseconds or when the buffer is full, appends the batch
to the spool ``links/SSS-RRR/NNNNNNNN`` with one ``write`` and rings the receiver's doorbell
(``engine/doorbell.py``). The receiver's :class:`Inbox` then reads the complete frames past its
position. Why files, not sockets:

* **Parsing never blocks and memory stays bounded.** A write to the page cache costs
  microseconds whatever the receiver is doing; a receiver that is slow, restarting or dead
  (BUbiNG #12: a blocking exchange stalled whole crawls) only lets its spool grow on disk.
* **Nothing is lost across crashes.** What a sender wrote survives its death. A receiver
  checkpoints its read positions with its frontier and, after a restart, reads again from
  there; links it had read but not yet made durable come back, and its sieve drops the
  ones it already knew. Links still in a sender's buffer when it dies come from pages
  stored after its last checkpoint (it flushes before each), and the sender's resume
  re-discovers those pages' links from its WARC files.
* **Termination is checkable.** The sender's write position and the receiver's read position
  of each spool are plain numbers; when they are equal everywhere and every agent is idle,
  the crawl is over.

The crawl policy's messages to other agents (``CrawlPolicy.messages``: the freshness policy's
user moves) travel the same way in spools of their own, ``policy/SSS-RRR/``, one frame per
message (:meth:`Outbox.send`, :meth:`Inbox.payloads`).

A frame is ``u32 length | u32 crc32 | payload``, a link frame's payload ``orjson([parent, [links]])``, or
``orjson([parent, [links], [[tag, tag path, anchor text], ...]])`` when the crawl policy wants
link contexts (``frontier/page.py: LinkContext``): a policy on the receiving agent judges the
link as one on the sending agent would.
A spool is cut into segments of ``segment_bytes``; a receiver deletes the segments before its
checkpointed position. A sender that restarts cuts its last segment after the last complete
frame (a torn frame is never read, since its CRC fails or it is short) before writing again.
A write that finds the disk full is cut back at once (``store.errors.StoreFull``), so a spool
never holds a torn frame before whole ones.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import orjson

from engine.doorbell import Bells
from frontier.page import LinkContext
from store.errors import append_whole, full_when_no_room

FRAME = struct.Struct("<II")
SEGMENT_BYTES = 64 << 20
READ_CHUNK = 1 << 20

BRIDGE = 999  # the sender number, in an agent's inbox, of its machine's bridge to the others (engine/bridge.py)

Position = tuple[int, int]  # (segment, byte offset)
Batch = tuple[str, list[str], list[LinkContext] | None]  # parent, links, their contexts


def peers(me: int, agents: int | Iterable[int]) -> list[int]:
    """The other ends of ``me``'s spools: every agent of ``range(agents)`` but ``me``, or the ones listed
    (a crawl over several machines adds the machine's bridge, and spools to other machines' agents)."""
    return [a for a in range(agents) if a != me] if isinstance(agents, int) else list(agents)


def spool_dir(root: Path, sender: int, receiver: int) -> Path:
    return root / f"{sender:03d}-{receiver:03d}"


def _segments(folder: Path) -> list[int]:
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.exists() else []


def frame(payload: bytes) -> bytes:
    return FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def frames(data: bytes) -> tuple[list[bytes], int]:
    """The payloads of the complete, intact frames at the start of ``data``, and the bytes they span."""
    records: list[bytes] = []
    pos, end = 0, len(data)
    while pos + FRAME.size <= end:
        length, crc = FRAME.unpack_from(data, pos)
        stop = pos + FRAME.size + length
        if stop > end:
            break
        payload = data[pos + FRAME.size : stop]
        if zlib.crc32(payload) != crc:
            break  # a torn tail its sender will cut when it restarts
        records.append(payload)
        pos = stop
    return records, pos


def encode_batch(parent: str, links: Sequence[str], contexts: Sequence[LinkContext] | None) -> bytes:
    """A batch as a frame's payload: JSON, the contexts (when there are) as tuples."""
    if contexts is None:
        return orjson.dumps((parent, links))
    return orjson.dumps((parent, links, [(c.tag, c.tag_path, c.anchor_text) for c in contexts]))


def decode_batch(payload: bytes) -> Batch:
    parent, links, *contexts = orjson.loads(payload)
    return parent, links, [LinkContext(*c) for c in contexts[0]] if contexts else None


class Outbox:
    """The sending side of one agent: a buffer and a spool per other agent.

    After each write it rings the receiver's bell in the folder ``bells`` (``engine/doorbell.py``),
    where the receiving agents listen; without it the receiver must poll."""

    def __init__(self, root: Path, me: int, agents: int | Iterable[int], *, segment_bytes: int = SEGMENT_BYTES,
                 buffer_bytes: int = 1 << 20, bells: Path | None = None) -> None:
        self.me = me
        self._bells = Bells(bells) if bells is not None else None
        self.segment_bytes = segment_bytes
        self.buffer_bytes = buffer_bytes
        self._buffers: dict[int, list[bytes]] = {}
        self._buffered: dict[int, int] = {}
        self._files: dict[int, tuple[int, int, int]] = {}  # receiver -> (segment, fd, size)
        self.root = root
        self._folders: dict[int, Path] = {}
        self.links_sent = 0
        self.open_to(peers(me, agents))

    def open_to(self, receivers: Iterable[int]) -> None:
        """Open the spools to ``receivers`` it has none to yet (a machine joined a crawl over several)."""
        for receiver in receivers:
            if receiver in self._folders:
                continue
            folder = self._folders[receiver] = spool_dir(self.root, self.me, receiver)
            folder.mkdir(parents=True, exist_ok=True)
            segments = _segments(folder)
            self._open(receiver, segments[-1] if segments else 1, repair=bool(segments))

    def _open(self, receiver: int, segment: int, *, repair: bool) -> None:
        path = self._folders[receiver] / f"{segment:08d}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        size = os.fstat(fd).st_size
        if repair and size:
            good = frames(os.pread(fd, size, 0))[1]
            if good < size:
                os.ftruncate(fd, good)
                size = good
        self._files[receiver] = (segment, fd, size)

    def add(self, receiver: int, parent: str, links: Sequence[str],
            contexts: Sequence[LinkContext] | None = None) -> None:
        self.links_sent += len(links)
        self.send(receiver, encode_batch(parent, links, contexts))

    def send(self, receiver: int, payload: bytes) -> None:
        """Buffer one frame of any ``payload`` for ``receiver`` (the policy's messages use this)."""
        self._buffers.setdefault(receiver, []).append(frame(payload))
        self._buffered[receiver] = self._buffered.get(receiver, 0) + FRAME.size + len(payload)
        if self._buffered[receiver] >= self.buffer_bytes:
            self._write(receiver)

    def flush(self) -> None:
        """Write every buffered frame (every few tens of ms while links flow, and before a checkpoint)."""
        for receiver in list(self._buffers):
            self._write(receiver)

    def _write(self, receiver: int) -> None:
        buffered = self._buffers.get(receiver)
        if not buffered:
            return
        segment, fd, size = self._files[receiver]
        # a full disk raises StoreFull with the frames still buffered and the spool cut back to
        # whole frames (a torn one would hide every later frame from the receiver)
        if size >= self.segment_bytes:
            with full_when_no_room(self._folders[receiver]):
                self._open(receiver, segment + 1, repair=False)
            os.close(fd)
            segment, fd, size = self._files[receiver]
        data = b"".join(buffered)
        append_whole(fd, data, self._folders[receiver] / f"{segment:08d}")
        del self._buffers[receiver], self._buffered[receiver]
        self._files[receiver] = (segment, fd, size + len(data))
        if self._bells is not None:
            self._bells.ring(receiver)

    def sync(self) -> None:
        """Make what was written durable (a bridge acknowledges to the broker only after this)."""
        for _, fd, _ in self._files.values():
            os.fsync(fd)

    def positions(self) -> dict[int, Position]:
        """Where each spool ends, as written (for the supervisor's end-of-crawl check)."""
        return {r: (segment, size) for r, (segment, _, size) in self._files.items()}

    @property
    def pending(self) -> bool:
        return bool(self._buffers)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            for _, fd, _ in self._files.values():
                os.close(fd)
            self._files.clear()
            if self._bells is not None:
                self._bells.close()


class Inbox:
    """The receiving side of one agent: a read position per sender."""

    def __init__(self, root: Path, me: int, agents: int | Iterable[int],
                 positions: dict[int, Position] | None = None) -> None:
        self._folders = {s: spool_dir(root, s, me) for s in peers(me, agents)}
        self._positions: dict[int, Position] = {}
        for sender, folder in self._folders.items():
            folder.mkdir(parents=True, exist_ok=True)
            segments = _segments(folder)
            start = (segments[0] if segments else 1, 0)
            self._positions[sender] = (positions or {}).get(sender, start)
        self.links_received = 0

    def poll(self, max_bytes: int = READ_CHUNK) -> list[Batch]:
        """Every complete batch of links past the read positions (up to about ``max_bytes`` per sender)."""
        out = [decode_batch(payload) for _, payload in self.payloads(max_bytes)]
        self.links_received += sum(len(links) for _, links, _ in out)
        return out

    def payloads(self, max_bytes: int = READ_CHUNK) -> list[tuple[int, bytes]]:
        """(sender, payload) of every complete frame past the read positions (about ``max_bytes`` per sender)."""
        out: list[tuple[int, bytes]] = []
        for sender, folder in self._folders.items():
            segment, offset = self._positions[sender]
            while True:
                path = folder / f"{segment:08d}"
                try:
                    with open(path, "rb") as f:
                        f.seek(offset)
                        data = f.read(max_bytes)
                except FileNotFoundError:
                    data = b""
                records, used = frames(data)
                out += [(sender, r) for r in records]
                offset += used
                if used < len(data) or used == max_bytes:
                    break  # a partial frame being written, or more to read next time
                if not (folder / f"{segment + 1:08d}").exists():
                    break
                # the sender moved on, so this segment is complete: finish it, then go on
                with open(path, "rb") as f:
                    f.seek(offset)
                    records, used = frames(f.read())
                out += [(sender, r) for r in records]
                segment, offset = segment + 1, 0
            self._positions[sender] = (segment, offset)
        return out

    def positions(self) -> dict[int, Position]:
        return dict(self._positions)

    def drained(self) -> bool:
        """Every spool read to its end as it is on disk now."""
        for sender, folder in self._folders.items():
            segments = _segments(folder)
            if segments and self._positions[sender] < (segments[-1], (folder / f"{segments[-1]:08d}").stat().st_size):
                return False
        return True

    def committed(self, positions: dict[int, Position]) -> None:
        """``positions`` are durable (in a checkpoint): delete the segments wholly before them."""
        for sender, (segment, _) in positions.items():
            for number in _segments(self._folders[sender]):
                if number < segment:
                    (self._folders[sender] / f"{number:08d}").unlink(missing_ok=True)
