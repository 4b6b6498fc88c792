"""An agent's heap: glibc's allocator told not to sit on freed memory, Python's collector told to look less often.

An agent's heap holds long-lived small objects (visit states, queued URLs, robots.txt rules)
with large short-lived buffers coming and going among them: a checkpoint (tens of MB built
and written every ``engine.checkpoint_interval``), a WARC file's index sorted at rotation,
bodies. glibc keeps what such buffers free. Its mmap threshold grows to the size of the largest
block freed (up to 32 MiB), so later buffers of that size come from the heap instead of fresh
mappings, and it trims the heap's top only beyond twice that threshold; freed pages inside the
heap it never returns by itself. The soak benchmark (``bench/soak.py``) saw an agent's memory
climb by steps at checkpoints; ``malloc_trim(0)`` called from outside on that agent took its
resident memory from 500 to 410 MB at once: 90 MB it held and did not use.

So each agent, at start, fixes the mmap threshold (:func:`keep_buffers_out_of_the_heap`: large
buffers always get mappings of their own, which go back to the system when freed), and after
each checkpoint calls ``malloc_trim(0)`` (:func:`give_back`: free pages anywhere in the heap
are returned). With another C library (musl) both do nothing.

The threshold sits above what the work of every page allocates and frees: ISA-L's deflate state
(~260 KiB, three records a page). At 256 KiB that buffer was a fresh mapping each time, an
``mmap``, page faults and an ``munmap`` whose TLB shootdown interrupts the other cores: ~15 µs
more for each record, 11% of the engine's CPU per page, 3–4% of the whole crawl's
(``bench/RESULTS.md``). Fixing one threshold also fixes the other, the trim threshold, at glibc's
128 KiB: the heap's top was then given back and taken again around such buffers, so it is fixed
too, at a few MiB (what :func:`give_back` returns anyway at each checkpoint).

**The cyclic garbage collector** (:func:`collect_less_often`). CPython collects its youngest
generation every 700 container objects allocated (net of those freed), and the oldest, which
holds everything long-lived, every hundred young collections once it has grown by a quarter since
its last full pass. An agent allocates tens of container objects per page (the fetch's task and
futures, the parser's lists, records, events), and objects that happen to be alive at a young
collection (a fetch in flight lives for milliseconds) are promoted and count towards the next full
pass; and every new host adds long-lived objects (its visit state, the parsed robots.txt rules,
some fifteen of protego's objects). So on a web of many hosts the full passes come often and grow
with the heap: measured with ``gc.callbacks`` in each agent of a 25-s crawl of the 20,000-host
in-vitro web (two agents, ~4,200 hosts each), the collector took 1.5–1.7 CPU-s of an agent's
16–17 (ten full passes over ~150,000 objects), against 0.1 s on the 2,000-host web. The crawler
makes little cyclic garbage (tasks, futures and records are freed by their reference counts), so
the young generation is collected every :data:`YOUNG_THRESHOLD` allocations instead: far fewer
short-lived objects are caught alive and promoted, and the full passes become rare. What it
costs is what a young generation of that many objects can hold until it is collected: a few MB.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers in glibc's malloc.h
MMAP_THRESHOLD = 1024 * 1024  # glibc's starting value is 128 KiB; fixed, it no longer grows
TRIM_THRESHOLD = 4 * MMAP_THRESHOLD  # free memory the heap's top keeps (glibc's dynamic rule: twice the above)
YOUNG_THRESHOLD = 20_000  # CPython's default is 700: allocations between two young collections

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
_mallopt = getattr(_libc, "mallopt", None)
_malloc_trim = getattr(_libc, "malloc_trim", None)


def keep_buffers_out_of_the_heap() -> bool:
    """Fix glibc's mmap and trim thresholds; True if the allocator took them."""
    return _mallopt is not None and all([_mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD),
                                         _mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)])


def give_back() -> bool:
    """Return the heap's free pages to the system; True if any were."""
    return _malloc_trim is not None and bool(_malloc_trim(0))


def collect_less_often() -> None:
    """Collect the young generation every :data:`YOUNG_THRESHOLD` allocations (the older generations'
    thresholds, counted in young collections, are kept)."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


def collections() -> dict[str, dict[str, int]]:
    """The collector's work so far, per generation (``gen0`` the youngest): collections, objects
    collected, uncollectable (``stats.json``'s ``gc``)."""
    return {f"gen{i}": counts for i, counts in enumerate(gc.get_stats())}
