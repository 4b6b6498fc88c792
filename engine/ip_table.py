"""IP politeness across the agent processes of one machine: a shared table of IP slots.

Hosts have one owner, so each agent keeps the host delay on its own; but hosts that share an
IP may belong to different agents, and the IP delay must hold for the whole machine. Each IP
hashes to a 16-byte slot of a shared file (``next`` allowed fetch start on the monotonic clock,
which all processes of a boot share, and the ``pid`` of the agent fetching from it now). An
agent fetches from an IP only while it holds an ``fcntl`` lock on that slot's byte, taken with
``try_acquire`` and given back by ``release`` with the next allowed instant.

Why these choices:

* **fcntl record locks** are released by the kernel when a process dies, so a ``kill -9`` in
  the middle of a fetch never leaves an IP locked. The ``pid`` field tells the next taker that
  the previous holder died mid-fetch; it then waits the IP delay from that moment, since the
  dead fetch ended at the latest when it was noticed.
* **Allocated, not sparse**: the file is written through a memory mapping, and a store into a
  page the file system cannot allocate (a full disk) is SIGBUS, which no handler survives;
  so every block is allocated when the table is created, and a full disk is ``StoreFull`` then.
* **Hash collisions** make two IPs share a slot; that only makes politeness stricter. With
  2^20 slots and 100,000 IPs the cost is a few thousand IP pairs waiting on each other.
* **fcntl locks belong to the process**, not to a coroutine: a slot already held by this
  process (two colliding IPs) is reported busy, never taken twice.
* **The locks are spread over** :data:`LOCK_FILES` **files**, a slot's byte in file ``slot % LOCK_FILES``:
  the kernel keeps one list of record locks per file and walks it at every lock and unlock, and an
  agent holds a lock for every host on its todo ring or in flight. With all of them on one file a
  lease taken and given back cost 30 µs with 1,000 held by each of two agents and 159 µs with
  3,000 (3.5 µs with none held); spread over 64 files, 4.1 and 5.5 µs (``bench/ip_lock_bench.py``).
  A profile of a two-agent crawl of the 20,000-host web had put 3.7% of an agent's CPU in that
  walk (``posix_lock_inode``).
* **A busy slot is mostly seen, not locked**: the pid in the slot says another agent is
  fetching, which costs no system call; the lock is tried again once a second in case that
  agent died (profiling showed ``lockf`` polls at 5% of an agent's CPU otherwise). Nor is a
  slot whose next allowed start is still ahead: that instant only grows, so what the map shows
  without the lock is a lower bound of the answer the lock would give.

Slot 0 holds the crawl's page counter, so that ``engine.max_pages`` is exact across agents.

After the slots, one 4-byte counter per slot holds the hosts the agents' workbenches hold on
the slot's IP (``add_host``, under a lock on the byte after the slot's fetch lock), so that the
quality filter's hosts-per-IP feature counts the hosts of every agent, as ``crawl learn quality``
counts them in the WARC files, not the 1/N an agent owns.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
from pathlib import Path

import xxhash

from store.errors import preallocate

SLOT = struct.Struct("<dq")  # next allowed start (monotonic seconds), pid fetching now (0: none)
HOSTS = struct.Struct("<i")  # hosts on the slot's IP, in every agent's workbench
SLOTS = 1 << 20
BUSY = -1.0  # what ``try_acquire`` says while another agent is fetching from the IP
PROBE_EVERY = 1.0  # seconds a busy slot's pid is believed before the lock is tried again (a dead holder)
LOCK_FILES = 64  # files the slots' locks are spread over (see above); each agent holds one descriptor per file


class SharedIpTable:
    """One per agent process, all opened on the same file (the supervisor creates it)."""

    def __init__(self, path: Path, *, slots: int = SLOTS) -> None:
        self.slots = slots
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        size = _size(slots)
        if os.fstat(self._fd).st_size < size:  # not made by ``create`` (which allocated it): allocate it now
            try:
                preallocate(self._fd, size, path)
            except BaseException:
                os.close(self._fd)
                raise
        try:
            self._locks = _open_lock_files(path)
        except BaseException:
            os.close(self._fd)
            raise
        self._map = mmap.mmap(self._fd, size)
        self._pid = os.getpid()
        self._held: set[int] = set()
        self._probed: dict[int, float] = {}

    @staticmethod
    def create(path: Path, *, slots: int = SLOTS) -> None:
        """A fresh table: monotonic instants from an earlier boot or crawl mean nothing.

        Every block is allocated now (20 MiB): a store through the mapping into a sparse page
        of a full disk would kill the agent with SIGBUS; this raises ``StoreFull`` at the start.
        """
        try:
            with open(path, "wb") as f:
                preallocate(f.fileno(), _size(slots), path)
            for fd in _open_lock_files(path):
                os.close(fd)
        except BaseException:  # no table rather than a short one
            path.unlink(missing_ok=True)
            raise

    def _slot(self, ip: str) -> int:
        return 1 + xxhash.xxh3_64_intdigest(ip.encode()) % self.slots

    def _lock(self, slot: int, blocking: bool, hosts: bool = False) -> bool:
        """Lock the slot's fetch byte, or (``hosts``) the byte of its host counter."""
        flags = fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB
        try:
            fcntl.lockf(self._locks[slot % LOCK_FILES], flags, 1, 2 * (slot // LOCK_FILES) + hosts)
        except (BlockingIOError, PermissionError):
            return False
        return True

    def _unlock(self, slot: int, hosts: bool = False) -> None:
        fcntl.lockf(self._locks[slot % LOCK_FILES], fcntl.LOCK_UN, 1, 2 * (slot // LOCK_FILES) + hosts)

    def try_acquire(self, ip: str, now: float, delay: float) -> float | None:
        """Take ``ip`` for one fetch (None); or say when it may be taken (a monotonic instant);
        or :data:`BUSY` while another fetch holds it, which ends when nobody knows: ask again soon."""
        slot = self._slot(ip)
        offset = slot * SLOT.size
        if slot in self._held:
            return BUSY
        seen: float
        seen, holder = SLOT.unpack_from(self._map, offset)
        if holder and now < self._probed.get(slot, now):
            return BUSY  # another agent's fetch, as the slot says: no system call needed to know
        if not holder and seen > now:
            # Read without the lock, and enough: the next allowed start only ever grows, so the
            # real one is at least this one, and the lock would only say "not before" a later instant.
            return seen
        if not self._lock(slot, blocking=False):
            self._probed[slot] = now + PROBE_EVERY  # until then, trust the slot's pid
            return BUSY
        self._probed.pop(slot, None)
        next_allowed: float
        next_allowed, pid = SLOT.unpack_from(self._map, offset)
        if pid:  # its holder died in the middle of a fetch, which ended by now at the latest
            next_allowed = max(next_allowed, now + delay)
            SLOT.pack_into(self._map, offset, next_allowed, 0)
        if next_allowed > now:
            self._unlock(slot)
            return next_allowed
        SLOT.pack_into(self._map, offset, next_allowed, self._pid)
        self._held.add(slot)
        return None

    def release(self, ip: str, next_allowed: float) -> None:
        """The fetch from ``ip`` is over: nobody may start one before ``next_allowed``."""
        slot = self._slot(ip)
        if slot not in self._held:
            return
        offset = slot * SLOT.size
        SLOT.pack_into(self._map, offset, max(next_allowed, SLOT.unpack_from(self._map, offset)[0]), 0)
        self._held.discard(slot)
        self._unlock(slot)

    def reserve_page(self, limit: int) -> bool:
        """Count one more page towards ``limit`` for the whole crawl; False once it is reached."""
        self._lock(0, blocking=True)  # a few instructions inside; its holder never waits
        try:
            pages = SLOT.unpack_from(self._map, 0)[1]
            if pages >= limit:
                return False
            SLOT.pack_into(self._map, 0, 0.0, pages + 1)
            return True
        finally:
            self._unlock(0)

    def unreserve_page(self) -> None:
        """A reserved page was not fetched after all."""
        self.add_pages(-1)

    def add_pages(self, n: int) -> None:
        """Count ``n`` pages (a resumed agent's earlier ones), or take back ``-n``."""
        self._lock(0, blocking=True)
        try:
            pages = SLOT.unpack_from(self._map, 0)[1]
            SLOT.pack_into(self._map, 0, 0.0, max(0, pages + n))
        finally:
            self._unlock(0)

    def add_host(self, ip: str, delta: int) -> None:
        """A workbench took a host onto ``ip`` (+1) or let one go (-1)."""
        slot = self._slot(ip)
        offset = SLOT.size * (self.slots + 1) + HOSTS.size * slot
        self._lock(slot, True, hosts=True)  # a few instructions inside; its holder never waits
        try:
            HOSTS.pack_into(self._map, offset, max(0, HOSTS.unpack_from(self._map, offset)[0] + delta))
        finally:
            self._unlock(slot, hosts=True)

    def hosts(self, ip: str) -> int:
        """The hosts every agent's workbench holds on ``ip`` (with those of colliding IPs)."""
        hosts: int = HOSTS.unpack_from(self._map, SLOT.size * (self.slots + 1) + HOSTS.size * self._slot(ip))[0]
        return hosts

    @staticmethod
    def count_ips(path: Path, *, slots: int = SLOTS) -> int:
        """IPs fetched from so far: slots whose next allowed start was ever set (a collision counts two as one)."""
        import numpy as np  # here, not at the top: the supervisor reads the table once, at the end (15 MiB less)

        with open(path, "rb") as f, mmap.mmap(f.fileno(), SLOT.size * (slots + 1), access=mmap.ACCESS_READ) as table:
            starts = np.frombuffer(table, dtype="<f8", count=2 * (slots + 1))[2::2]  # slot 0 is the page count
            used = int(np.count_nonzero(starts))
            del starts  # a view of the map, which cannot close while it lives
            return used

    def pages(self) -> int:
        pages: int = SLOT.unpack_from(self._map, 0)[1]
        return pages

    def close(self) -> None:
        self._map.close()
        os.close(self._fd)
        for fd in self._locks:
            os.close(fd)  # releases every lock this process still holds


def _open_lock_files(path: Path) -> list[int]:
    """The descriptors of the lock files beside the table (``ip-table.locks/00`` ...), made if missing."""
    directory = path.with_name(path.name + ".locks")
    directory.mkdir(exist_ok=True)
    fds: list[int] = []
    try:
        for k in range(LOCK_FILES):
            fds.append(os.open(directory / f"{k:02d}", os.O_RDWR | os.O_CREAT, 0o644))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds


def _size(slots: int) -> int:
    """The table's bytes: the page counter, the slots, a host counter per slot."""
    return (SLOT.size + HOSTS.size) * (slots + 1)
