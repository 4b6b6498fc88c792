"""The URL cache: a fixed-memory set of recently seen URL fingerprints (ARCHITECTURE.md step 1).

It sits in front of the sieve so that URLs found again and again (navigation links, a
site's header and footer) do not reach the sieve, whose flushes cost I/O in proportion to
the known URLs (BUbiNG §2.4 "URL cache"; the paper leaves size and policy open, §4 item 12).
A "new" answer is only a hint, never a promise: the sieve still decides exactly.

Policy: FIFO over the last ``capacity`` distinct fingerprints. A ring remembers insertion
order; inserting into a full cache forgets the oldest. A fingerprint seen again is not
refreshed, so a hot URL reaches the sieve once per ``capacity`` insertions (acceptance test
T10: "at most once per cache eviction").

Memory, counted honestly from ``max_bytes``: the fingerprints are Python ints in a Python
``set`` (speed: one hash probe per lookup, no per-call numpy overhead), so each entry costs

* 40 B for the int object (a 64-bit int is 36 B, rounded to pymalloc's 8-byte classes),
* 8 B for its slot in the FIFO ring (a list of references to the same ints),
* 16 B per set-table slot. CPython keeps the table at 2–4 slots per entry (the smallest
  power of two above 2 × entries, or 4 × below 50,000 entries) and rebuilds it aside when
  deletions fill it with dummies, so two tables exist for a moment: 32 B × table slots.

:func:`capacity_for` solves that for the largest capacity within the budget: 64 MiB gives
524,287 entries (about 128 B each, counting the rebuild peak). A numpy table would hold 5×
more, but every add would pay several numpy scalar operations from Python. An add costs a
few CPU-cache misses in the table: on the shared 2-core benchmark VM, CPU time per add
(``python -m bench.sieve_bench`` prints it) was about 0.3 µs per hit and 0.5 µs per miss at
4 MiB, and 0.45–0.55 µs per hit and 0.7 µs per miss at 64 MiB.
"""

from __future__ import annotations

from dataclasses import dataclass

INT_BYTES = 40  # a Python int of 61 to 64 bits, as pymalloc allocates it
RING_BYTES = 8  # one list slot
TABLE_SLOT_BYTES = 16  # one set-table entry (hash, key)
FIXED_BYTES = 512  # the set, list and cache objects themselves


def table_slots(entries: int) -> int:
    """Slots of a CPython set table holding ``entries`` keys after its last rebuild."""
    wanted = entries * 2 if entries > 50_000 else entries * 4
    slots = 8
    while slots <= wanted:
        slots <<= 1
    return slots


def cache_bytes(capacity: int) -> int:
    """Peak bytes of a cache of ``capacity`` entries, including a table rebuild."""
    return FIXED_BYTES + capacity * (INT_BYTES + RING_BYTES) + 2 * TABLE_SLOT_BYTES * table_slots(capacity)


def capacity_for(max_bytes: int) -> int:
    """The largest capacity whose peak memory fits in ``max_bytes`` (0 if none does)."""
    low, high = 0, max(0, max_bytes // (INT_BYTES + RING_BYTES))
    while low < high:  # cache_bytes is increasing in capacity
        middle = (low + high + 1) // 2
        if cache_bytes(middle) <= max_bytes:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True, slots=True)
class UrlCacheStatistics:
    hits: int  # adds answered "recently seen"
    misses: int  # adds answered "new" (and inserted)
    size: int  # fingerprints held
    capacity: int
    max_bytes: int


class UrlCache:
    """The last ``capacity`` distinct fingerprints added, forgotten first in, first out.

    Invariant: ``_seen`` holds exactly the non-None entries of ``_ring``, which are distinct;
    ``_ring[_position]`` is the oldest once the ring has wrapped.
    """

    __slots__ = ("capacity", "max_bytes", "_seen", "_ring", "_position", "_wraps", "_hits")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.capacity = capacity_for(max_bytes)
        if self.capacity < 1:
            raise ValueError(f"url cache of {max_bytes} bytes holds no fingerprint; give it at least {cache_bytes(1)}")
        self._seen: set[int] = set()
        self._ring: list[int | None] = [None] * self.capacity
        self._position = 0
        self._wraps = 0
        self._hits = 0

    def add(self, fp: int) -> bool:
        """True if ``fp`` was not in the cache (it is now), False if it was recently seen."""
        seen = self._seen
        if fp in seen:
            self._hits += 1
            return False
        ring = self._ring
        position = self._position
        seen.discard(ring[position])  # None (a slot not yet filled) is in no set of ints
        seen.add(fp)
        ring[position] = fp
        position += 1
        if position == self.capacity:
            position = 0
            self._wraps += 1
        self._position = position
        return True

    def hit(self, fp: int) -> bool:
        """Whether ``fp`` was recently seen, counted as a hit if so; a miss inserts nothing (:meth:`add` does)."""
        if fp in self._seen:
            self._hits += 1
            return True
        return False

    def __contains__(self, fp: int) -> bool:
        return fp in self._seen

    def __len__(self) -> int:
        return len(self._seen)

    def statistics(self) -> UrlCacheStatistics:
        return UrlCacheStatistics(
            hits=self._hits,
            misses=self._wraps * self.capacity + self._position,
            size=len(self._seen),
            capacity=self.capacity,
            max_bytes=self.max_bytes,
        )

    def __repr__(self) -> str:
        s = self.statistics()
        return f"<UrlCache size={s.size:,}/{s.capacity:,} hits={s.hits:,} misses={s.misses:,}>"
